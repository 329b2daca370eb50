"""SelfSubjectAccessReview, SelfSubjectRulesReview and SelfSubjectReview (`kubectl auth can-i`,
`kubectl auth whoami`)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from api import codec
from api.auth.chain import USER_INFO
from api.auth.config import AUTH
from cp import errors, rbac


async def _review_body(request: web.Request) -> dict[str, Any]:
    body = await codec.read_body(request)
    obj = await codec.decode_body(body, codec.media_type(request.headers.get("Content-Type")))
    return obj


def _created(request: web.Request, review: dict[str, Any]) -> web.Response:
    """The answered review, 201, in the media type the client accepts (protobuf for kubectl's typed
    clients)."""
    negotiated = codec.negotiate(request.headers.get("Accept", ""))
    return codec.object_response(negotiated, obj=review, status=201)


def _review_user(request: web.Request) -> rbac.UserInfo:
    return request.get(USER_INFO) or rbac.UserInfo(name="system:admin", groups=(rbac.MASTERS,))


async def self_subject_access_review(request: web.Request) -> web.StreamResponse:
    obj = await _review_body(request)
    raw_spec = obj.get("spec")
    spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    ra, nra = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if (ra is None) == (nra is None) or not isinstance(ra or nra, dict):
        raise errors.Invalid(kind="SelfSubjectAccessReview", group="authorization.k8s.io", name="", causes=[
            errors.Cause("Invalid", "spec.resourceAttributes", "exactly one of nonResourceAttributes or "
                         "resourceAttributes must be specified", "null" if ra is None else "{...}")])
    user = _review_user(request)
    if ra is not None:
        attrs = rbac.Attributes(user=user, verb=str(ra.get("verb") or ""), namespace=str(ra.get("namespace") or ""),
                                api_group=str(ra.get("group") or ""), api_version=str(ra.get("version") or ""),
                                resource=str(ra.get("resource") or ""),
                                subresource=str(ra.get("subresource") or ""), name=str(ra.get("name") or ""))
    else:
        assert nra is not None  # exactly one of the two (checked above)
        attrs = rbac.Attributes(user=user, verb=str(nra.get("verb") or ""), resource_request=False,
                                path=str(nra.get("path") or ""))
    decision = request.app[AUTH].authorize(attrs)
    status: dict[str, Any] = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    meta = dict(obj.get("metadata") or {}) if isinstance(obj.get("metadata"), dict) else {}
    meta.setdefault("creationTimestamp", None)
    out = {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1", "metadata": meta,
           "spec": spec, "status": status}
    return _created(request, out)


async def self_subject_rules_review(request: web.Request) -> web.StreamResponse:
    obj = await _review_body(request)
    raw_spec = obj.get("spec")
    spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    namespace = str(spec.get("namespace") or "")
    user = _review_user(request)
    rules, errs = request.app[AUTH].cache.policy.rules_for(user, namespace)
    resource_rules: list[dict[str, Any]] = []
    url_rules: list[dict[str, Any]] = []
    if rbac.MASTERS in user.groups:
        resource_rules.append({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})
        url_rules.append({"verbs": ["*"], "nonResourceURLs": ["*"]})
    for r in rules:
        if r.get("resources"):
            resource_rules.append({k: r[k] for k in ("verbs", "apiGroups", "resources", "resourceNames") if r.get(k)})
        if r.get("nonResourceURLs"):
            url_rules.append({"verbs": r.get("verbs") or [], "nonResourceURLs": r["nonResourceURLs"]})
    status: dict[str, Any] = {"resourceRules": resource_rules, "nonResourceRules": url_rules, "incomplete": False}
    if errs:
        status["evaluationError"] = "; ".join(errs)
    out = {"kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1",
           "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}
    return _created(request, out)


async def self_subject_review(request: web.Request) -> web.StreamResponse:
    obj = await _review_body(request)
    user = _review_user(request)
    version = request.match_info.get("version", "v1")
    raw_meta = obj.get("metadata")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    out = {"kind": "SelfSubjectReview", "apiVersion": f"authentication.k8s.io/{version}",
           "metadata": {**meta, "creationTimestamp": None},
           "status": {"userInfo": user.to_status()}}
    return _created(request, out)


def routes() -> list[web.RouteDef]:
    return [
        web.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", self_subject_access_review),
        web.post("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", self_subject_rules_review),
        web.post("/apis/authentication.k8s.io/{version:v1|v1beta1}/selfsubjectreviews", self_subject_review),
    ]
