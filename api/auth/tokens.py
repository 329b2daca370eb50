"""ServiceAccount tokens: the `serviceaccounts/token` subresource (TokenRequest, as upstream's
`pkg/registry/core/serviceaccount/storage/token.go`) and the issuer's discovery documents
(`/.well-known/openid-configuration`, `/openid/v1/jwks`, as `pkg/serviceaccount/openidmetadata.go`).

Tokens are signed with the server's `sa.key` (ES256) for its issuer; `Authenticator.review` accepts
them. A token is never logged nor stored."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from api import codec, reads
from api import state as st
from api.auth.authentication import Authenticator
from api.auth.config import AUTH
from cp import clock, errors
from cp import resources as res

DEFAULT_EXPIRATION = 3600
MIN_EXPIRATION = 600
MAX_EXPIRATION = 1 << 32
_BINDABLE = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}


def _authenticator(request: web.Request) -> Authenticator:
    config = request.app.get(AUTH)
    if config is None or config.signer is None or not config.signer.can_sign:
        raise errors.NotFound("the server could not find the requested resource")
    return config.signer


def _invalid(name: str, field: str, value: Any, detail: str) -> errors.Invalid:
    return errors.Invalid(kind="TokenRequest", group="authentication.k8s.io", name=name,
                          causes=[errors.Cause("Invalid", field, detail, value)])


async def _get(request: web.Request, plural: str, namespace: str, name: str) -> dict[str, Any]:
    kind = res.by_group_resource("", plural)
    assert kind is not None
    return await request.app[st.STORE].get_object(kind, namespace, name)


async def token_request(request: web.Request, target: reads.Target) -> web.StreamResponse:
    """POST .../serviceaccounts/{name}/token: a signed token for the ServiceAccount, optionally bound
    to a Pod, Secret or Node of its namespace (the token is valid while that object exists)."""
    signer = _authenticator(request)
    body = await codec.read_body(request)
    obj = await codec.decode_body(body, codec.media_type(request.headers.get("Content-Type")))
    ns, name = target.namespace, target.name
    raw_spec = obj.get("spec")
    spec: dict[str, Any] = dict(raw_spec) if isinstance(raw_spec, dict) else {}
    raw_meta = obj.get("metadata")
    meta: dict[str, Any] = dict(raw_meta) if isinstance(raw_meta, dict) else {}
    for field, want in (("name", name), ("namespace", ns)):
        if meta.get(field) and meta[field] != want:
            raise _invalid(name, f"metadata.{field}", meta[field],
                           f"must match the service account {field} if specified")
    seconds = spec.get("expirationSeconds")
    if seconds is None:
        seconds = DEFAULT_EXPIRATION
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        raise errors.BadRequest("TokenRequest in version \"v1\" cannot be handled as a TokenRequest: json: cannot "
                                "unmarshal into Go struct field TokenRequestSpec.spec.expirationSeconds of type int64")
    if seconds < MIN_EXPIRATION:
        raise _invalid(name, "spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes")
    if seconds > MAX_EXPIRATION:
        raise _invalid(name, "spec.expirationSeconds", seconds, "may not specify a duration larger than 2^32 seconds")
    sa = await _get(request, "serviceaccounts", ns, name)
    raw_auds = spec.get("audiences")
    audiences = tuple(str(a) for a in raw_auds) if isinstance(raw_auds, list) and raw_auds else signer.api_audiences
    pod: tuple[str, str] | None = None
    secret: tuple[str, str] | None = None
    node, node_uid = "", ""
    ref = spec.get("boundObjectRef")
    if isinstance(ref, dict) and ref:
        ref_kind, ref_name, ref_uid = str(ref.get("kind") or ""), str(ref.get("name") or ""), str(ref.get("uid") or "")
        plural = _BINDABLE.get(ref_kind)
        api_version = str(ref.get("apiVersion") or "")
        if plural is None or api_version != "v1":
            group, _, version = api_version.rpartition("/")
            raise errors.BadRequest(f"cannot bind token to object of type {group}/{version}, Kind={ref_kind}")
        bound = await _get(request, plural, "" if ref_kind == "Node" else ns, ref_name)
        uid = str((bound.get("metadata") or {}).get("uid") or "")
        if ref_uid and ref_uid != uid:
            raise errors.Conflict(
                f'Operation cannot be fulfilled on {ref_kind} "{ref_name}": the UID in the bound object reference '
                f"({ref_uid}) does not match the UID in record ({uid}). The object might have been deleted and "
                "then recreated", details={"name": ref_name, "kind": ref_kind})
        if ref_kind == "Pod":
            running_as = str((bound.get("spec") or {}).get("serviceAccountName") or "")
            if running_as != name:
                raise errors.BadRequest(f'cannot bind token for serviceaccount "{name}" to pod running with '
                                        f'serviceaccount "{running_as}"')
            pod = (ref_name, uid)
            node = str((bound.get("spec") or {}).get("nodeName") or "")
            if node:
                try:
                    node_uid = str(((await _get(request, "nodes", "", node)).get("metadata") or {}).get("uid") or "")
                except errors.NotFound:
                    node_uid = ""
        elif ref_kind == "Secret":
            secret = (ref_name, uid)
        else:
            node, node_uid = ref_name, uid
        spec["boundObjectRef"] = {**ref, "uid": uid, "apiVersion": "v1"}
    sa_uid = str((sa.get("metadata") or {}).get("uid") or "")
    now = signer.now()
    token = signer.mint(ns, name, uid=sa_uid, ttl=seconds, audiences=audiences, pod=pod, secret=secret,
                        node=node, node_uid=node_uid)
    spec["audiences"] = list(audiences)
    spec["expirationSeconds"] = seconds
    out_meta = {**meta, "name": name, "namespace": ns, "creationTimestamp": None}
    out = {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1", "metadata": out_meta, "spec": spec,
           "status": {"token": token, "expirationTimestamp": clock.rfc3339(int(now) + seconds)}}
    return codec.object_response(request[st.NEGOTIATED], obj=out, status=201)


async def openid_configuration(request: web.Request) -> web.StreamResponse:
    signer = _authenticator(request)
    issuer = signer.issuer
    body = {"issuer": issuer, "jwks_uri": f"{issuer}/openid/v1/jwks", "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"], "id_token_signing_alg_values_supported": ["ES256"]}
    return _json(body)


async def jwks(request: web.Request) -> web.StreamResponse:
    return _json(_authenticator(request).public_jwks(), content_type="application/jwk-set+json")


def _json(body: dict[str, Any], *, content_type: str = "application/json") -> web.Response:
    import json

    resp = web.Response(body=json.dumps(body, separators=(",", ":")).encode(), content_type=content_type)
    resp.headers["Cache-Control"] = "public, max-age=3600"
    return resp


def routes() -> list[web.RouteDef]:
    return [web.get("/.well-known/openid-configuration", openid_configuration),
            web.get("/openid/v1/jwks", jwks)]
