"""SelfSubjectAccessReview, SelfSubjectRulesReview and SelfSubjectReview (`kubectl auth can-i`,
`kubectl auth whoami`); TokenReview (the server's token authenticators), SubjectAccessReview and
LocalSubjectAccessReview (its authorizer, for a user named in the spec), as upstream's
`pkg/registry/authentication/tokenreview` and `pkg/registry/authorization/*subjectaccessreview`."""

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
    out = _access_review(request, "SelfSubjectAccessReview", obj, spec, user)
    return _created(request, out)


def _access_review(request: web.Request, kind: str, obj: dict[str, Any], spec: dict[str, Any],
                   user: rbac.UserInfo) -> dict[str, Any]:
    """The review answered by the server's authorizer for `user` (spec already validated)."""
    ra, nra = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if ra is not None:
        attrs = rbac.Attributes(user=user, verb=str(ra.get("verb") or ""), namespace=str(ra.get("namespace") or ""),
                                api_group=str(ra.get("group") or ""), api_version=str(ra.get("version") or ""),
                                resource=str(ra.get("resource") or ""),
                                subresource=str(ra.get("subresource") or ""), name=str(ra.get("name") or ""))
    else:
        assert nra is not None  # exactly one of the two (checked above)
        attrs = rbac.Attributes(user=user, verb=str(nra.get("verb") or ""), resource_request=False,
                                path=str(nra.get("path") or ""))
    config = request.app.get(AUTH)
    status: dict[str, Any] = {"allowed": True}  # no authorizer (--insecure): everything, as AlwaysAllow
    if config is not None:
        decision = config.authorize(attrs)
        status["allowed"] = decision.allowed
        if decision.reason:
            status["reason"] = decision.reason
    meta = dict(obj.get("metadata") or {}) if isinstance(obj.get("metadata"), dict) else {}
    meta.setdefault("creationTimestamp", None)
    return {"kind": kind, "apiVersion": "authorization.k8s.io/v1", "metadata": meta, "spec": spec,
            "status": status}


def _subject_spec(kind: str, obj: dict[str, Any]) -> tuple[dict[str, Any], rbac.UserInfo]:
    """ValidateSubjectAccessReviewSpec, and the user the spec names."""
    raw_spec = obj.get("spec")
    spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    ra, nra = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    causes: list[errors.Cause] = []
    if (ra is None) == (nra is None) or not isinstance(ra or nra, dict):
        causes.append(errors.Cause("Invalid", "spec.resourceAttributes", "exactly one of nonResourceAttributes or "
                                   "resourceAttributes must be specified", "null" if ra is None else "{...}"))
    name = str(spec.get("user") or "")
    raw_groups = spec.get("groups")
    groups = tuple(str(g) for g in raw_groups) if isinstance(raw_groups, list) else ()
    if not name and not groups:
        causes.append(errors.Cause("Invalid", "spec.user", "at least one of user or group must be specified", ""))
    if causes:
        raise errors.Invalid(kind=kind, group="authorization.k8s.io", name="", causes=causes)
    raw_extra = spec.get("extra")
    extra = {str(k): tuple(str(x) for x in v) for k, v in raw_extra.items() if isinstance(v, list)} \
        if isinstance(raw_extra, dict) else {}
    return spec, rbac.UserInfo(name=name, uid=str(spec.get("uid") or ""), groups=groups, extra=extra)


async def subject_access_review(request: web.Request) -> web.StreamResponse:
    obj = await _review_body(request)
    spec, user = _subject_spec("SubjectAccessReview", obj)
    return _created(request, _access_review(request, "SubjectAccessReview", obj, spec, user))


async def local_subject_access_review(request: web.Request) -> web.StreamResponse:
    namespace = request.match_info["namespace"]
    obj = await _review_body(request)
    raw_meta = obj.get("metadata")
    meta_ns = str(raw_meta.get("namespace") or "") if isinstance(raw_meta, dict) else ""
    if meta_ns and meta_ns != namespace:
        raise errors.BadRequest("the namespace of the provided object does not match the namespace sent on the "
                                "request")
    raw_spec = obj.get("spec")
    if isinstance(raw_spec, dict) and raw_spec.get("nonResourceAttributes") is not None:
        raise errors.Invalid(kind="LocalSubjectAccessReview", group="authorization.k8s.io", name="", causes=[
            errors.Cause("Invalid", "spec.nonResourceAttributes", "disallowed on this kind of request",
                         "{...}")])
    spec, user = _subject_spec("LocalSubjectAccessReview", obj)
    ra = spec.get("resourceAttributes")
    if isinstance(ra, dict) and str(ra.get("namespace") or "") != namespace:
        raise errors.BadRequest(f"spec.resourceAttributes.namespace must match namespace: {namespace}")
    out = _access_review(request, "LocalSubjectAccessReview", obj, spec, user)
    out["metadata"]["namespace"] = namespace
    return _created(request, out)


async def token_review(request: web.Request) -> web.StreamResponse:
    obj = await _review_body(request)
    raw_spec = obj.get("spec")
    spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    token = str(spec.get("token") or "")
    if not token:
        raise errors.BadRequest("token is required for TokenReview in authentication.k8s.io")
    authenticator = request.app[AUTH].signer
    if authenticator is None:  # a server without any token authenticator: nothing to review against
        raise errors.NotFound("the server could not find the requested resource")
    raw_auds = spec.get("audiences")
    audiences = tuple(str(a) for a in raw_auds) if isinstance(raw_auds, list) else ()
    result = await authenticator.review(token, audiences)
    status: dict[str, Any] = {}
    if result.user is not None:
        status["authenticated"] = True
    status["user"] = result.user.to_status() if result.user is not None else {}
    if result.user is not None and result.audiences:
        status["audiences"] = list(result.audiences)
    if result.error:
        status["error"] = result.error
    raw_meta = obj.get("metadata")
    meta: dict[str, Any] = dict(raw_meta) if isinstance(raw_meta, dict) else {}
    out = {"kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1",
           "metadata": {**meta, "creationTimestamp": None}, "spec": spec, "status": status}
    return _created(request, out)


async def self_subject_rules_review(request: web.Request) -> web.StreamResponse:
    obj = await _review_body(request)
    raw_spec = obj.get("spec")
    spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    namespace = str(spec.get("namespace") or "")
    user = _review_user(request)
    config = request.app.get(AUTH)
    rules, errs = config.cache.policy.rules_for(user, namespace) if config is not None else ([], [])
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


def routes(*, secure: bool = True) -> list[web.RouteDef]:
    """The reviews' routes. A server with no authentication set up (`secure=False`: a plain `cplane
    replay`, an in-process sandbox) serves everyone as the admin and allows everything, as
    kube-apiserver's AlwaysAllow: the access and rules reviews say so (`kubectl auth can-i`, the web
    UI's write controls); it has no token signer, so no TokenReview."""
    out = [
        web.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", self_subject_access_review),
        web.post("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", self_subject_rules_review),
        web.post("/apis/authentication.k8s.io/{version:v1|v1beta1}/selfsubjectreviews", self_subject_review),
        web.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", subject_access_review),
        web.post("/apis/authorization.k8s.io/v1/namespaces/{namespace}/localsubjectaccessreviews",
                 local_subject_access_review),
    ]
    if secure:
        out.append(web.post("/apis/authentication.k8s.io/v1/tokenreviews", token_review))
    return out
