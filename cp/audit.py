"""kube-apiserver's audit log format (audit.k8s.io/v1): the `Policy` that decides at which level each
request is recorded, its checker, and the `Event` written for each stage of a request.

A policy is read as kube-apiserver reads `--audit-policy-file` (`load_policy`): YAML or JSON, an
`audit.k8s.io/v1` `Policy` with at least one rule, each rule's level known, its non-resource URLs
starting with `/` with `*` only last, its groups DNS subdomains, its `resourceNames` beside resources,
its stages known. A request's level and omitted stages are those of the FIRST rule that matches it
(`Checker.evaluate`): every field a rule sets must match (users, userGroups (any), verbs, namespaces,
resources as `pods`, `pods/log`, `*`, `pods/*`, `*/scale`, resourceNames, nonResourceURLs with a
trailing `*`); no match is level None. Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from cp import rbac

API_VERSION = "audit.k8s.io/v1"

NONE, METADATA, REQUEST, REQUEST_RESPONSE = "None", "Metadata", "Request", "RequestResponse"
LEVELS = (NONE, METADATA, REQUEST, REQUEST_RESPONSE)
RANK = {level: i for i, level in enumerate(LEVELS)}

REQUEST_RECEIVED, RESPONSE_STARTED, RESPONSE_COMPLETE, PANIC = (
    "RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")
STAGES = (REQUEST_RECEIVED, RESPONSE_STARTED, RESPONSE_COMPLETE, PANIC)

# The annotations the authorizer adds (endpoints/filters/authorization.go).
DECISION_ANNOTATION = "authorization.k8s.io/decision"
REASON_ANNOTATION = "authorization.k8s.io/reason"


class PolicyError(ValueError):
    """A policy that cannot be used; the message says why, as kube-apiserver's does."""


# ------------------------------------------------------------------------------------------- the policy


class GroupResources(msgspec.Struct, kw_only=True, omit_defaults=True):
    group: str = ""
    resources: list[str] = []
    resourceNames: list[str] = []


class PolicyRule(msgspec.Struct, kw_only=True, omit_defaults=True):
    level: str = ""
    users: list[str] = []
    userGroups: list[str] = []
    verbs: list[str] = []
    resources: list[GroupResources] = []
    namespaces: list[str] = []
    nonResourceURLs: list[str] = []
    omitStages: list[str] = []
    omitManagedFields: bool | None = None


class Policy(msgspec.Struct, kw_only=True, omit_defaults=True):
    apiVersion: str = ""
    kind: str = ""
    metadata: dict[str, Any] = {}
    rules: list[PolicyRule] = []
    omitStages: list[str] = []
    omitManagedFields: bool = False


_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _quoted(values: tuple[str, ...]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def _stage_errors(stages: list[str], path: str) -> list[str]:
    return [f'{path}[{i}]: Invalid value: "{s}": allowed stages are {",".join(STAGES)}'
            for i, s in enumerate(stages) if s not in STAGES]


def validate(policy: Policy) -> list[str]:
    """The policy's field errors, in kube-apiserver's words (`ValidatePolicy`)."""
    errs: list[str] = []
    for i, rule in enumerate(policy.rules):
        at = f"rules[{i}]"
        if rule.level == "":
            errs.append(f"{at}.level: Required value")
        elif rule.level not in LEVELS:
            errs.append(f'{at}.level: Unsupported value: "{rule.level}": supported values: {_quoted(LEVELS)}')
        for j, url in enumerate(rule.nonResourceURLs):
            if url == "*":
                continue
            if not url.startswith("/"):
                errs.append(f'{at}.nonResourceURLs[{j}]: Invalid value: "{url}": non-resource URL rules must '
                            "begin with a '/' character")
            if url and "*" in url[:-1]:
                errs.append(f'{at}.nonResourceURLs[{j}]: Invalid value: "{url}": non-resource URL wildcards '
                            "'*' must be the final character of the rule")
        for gr in rule.resources:
            if gr.group and (len(gr.group) > 253 or not _DNS_SUBDOMAIN.match(gr.group)):
                errs.append(f'{at}.resources.group: Invalid value: "{gr.group}": a lowercase RFC 1123 subdomain '
                            "must consist of lower case alphanumeric characters, '-' or '.', and must start "
                            "and end with an alphanumeric character")
            if gr.resourceNames and not gr.resources:
                errs.append(f"{at}.resources.resourceNames: Invalid value: {gr.resourceNames}: using "
                            "resourceNames requires at least one resource")
        errs.extend(_stage_errors(rule.omitStages, f"{at}.omitStages"))
        if rule.nonResourceURLs and (rule.resources or rule.namespaces):
            errs.append(f"{at}.nonResourceURLs: Invalid value: {rule.nonResourceURLs}: rules cannot apply to "
                        "both regular resources and non-resource URLs")
    errs.extend(_stage_errors(policy.omitStages, "omitStages"))
    return errs


def load_policy(data: bytes) -> Policy:
    """An `audit.k8s.io/v1` Policy from YAML or JSON bytes, validated; `PolicyError` otherwise."""
    from cp import bodies, errors

    try:
        raw = bodies.decode_yaml(data, error_prefix="")
    except errors.StatusError as exc:
        raise PolicyError(f"failed decoding: {exc.message}") from None
    if not isinstance(raw, dict):
        raise PolicyError("failed decoding: the policy is not an object")
    kind, api_version = raw.get("kind"), raw.get("apiVersion")
    if not kind:
        raise PolicyError("failed decoding: Object 'Kind' is missing")
    if not api_version:
        raise PolicyError("failed decoding: Object 'apiVersion' is missing")
    if api_version != API_VERSION or kind != "Policy":
        raise PolicyError(f'failed decoding: no kind "{kind}" is registered for version "{api_version}"')
    try:
        policy = msgspec.convert(raw, Policy)
    except msgspec.ValidationError as exc:
        raise PolicyError(f"failed decoding: {exc}") from None
    errs = validate(policy)
    if errs:
        raise PolicyError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
    if not policy.rules:
        raise PolicyError("loaded illegal policy with 0 rules")
    return policy


# ------------------------------------------------------------------------------------------- the checker


class RequestConfig(msgspec.Struct, frozen=True, kw_only=True):
    """How one request is audited (upstream's RequestAuditConfig)."""

    level: str
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False

    def at_least(self, level: str) -> bool:
        return RANK[self.level] >= RANK[level]


def _path_matches(path: str, spec: str) -> bool:
    if spec in ("*", path):
        return True
    return spec.endswith("*") and path.startswith(spec.rstrip("*"))


def _matches_resource(rule: PolicyRule, attrs: rbac.Attributes) -> bool:
    if not attrs.resource_request:
        return False
    if rule.namespaces and attrs.namespace not in rule.namespaces:
        return False
    if not rule.resources:
        return True
    sub = attrs.subresource
    combined = f"{attrs.resource}/{sub}" if sub else attrs.resource
    for gr in rule.resources:
        if gr.group != attrs.api_group:
            continue
        if not gr.resources:
            return True
        if gr.resourceNames and attrs.name not in gr.resourceNames:
            continue
        for res in gr.resources:
            if res in (combined, "*"):
                return True
            if sub and res.startswith("*/") and res[2:] == sub:
                return True
            if res.endswith("/*") and res[:-2] == attrs.resource:
                return True
    return False


def rule_matches(rule: PolicyRule, attrs: rbac.Attributes) -> bool:
    user = attrs.user
    if rule.users and user.name not in rule.users:
        return False
    if rule.userGroups and not any(g in rule.userGroups for g in user.groups):
        return False
    if rule.verbs and attrs.verb not in rule.verbs:
        return False
    if rule.namespaces or rule.resources:
        return _matches_resource(rule, attrs)
    if rule.nonResourceURLs:
        return not attrs.resource_request and any(_path_matches(attrs.path, s) for s in rule.nonResourceURLs)
    return True


class Checker:
    """A loaded policy's rules, each with the policy's omitted stages added to its own."""

    def __init__(self, policy: Policy) -> None:
        self._rules = [(rule, RequestConfig(
            level=rule.level, omit_stages=frozenset(policy.omitStages) | frozenset(rule.omitStages),
            omit_managed_fields=policy.omitManagedFields if rule.omitManagedFields is None
            else rule.omitManagedFields)) for rule in policy.rules]
        self._default = RequestConfig(level=NONE, omit_stages=frozenset(policy.omitStages),
                                      omit_managed_fields=policy.omitManagedFields)

    def evaluate(self, attrs: rbac.Attributes) -> RequestConfig:
        for rule, config in self._rules:
            if rule_matches(rule, attrs):
                return config
        return self._default


# ------------------------------------------------------------------------------------------- the event


class UserInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """authentication.k8s.io/v1 UserInfo."""

    username: str = ""
    uid: str = ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}

    @classmethod
    def of(cls, user: rbac.UserInfo) -> UserInfo:
        return cls(username=user.name, uid=user.uid, groups=list(user.groups),
                   extra={k: list(user.extra[k]) for k in sorted(user.extra)})  # a Go map: keys sorted


class ObjectReference(msgspec.Struct, kw_only=True, omit_defaults=True):
    resource: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    apiGroup: str = ""
    apiVersion: str = ""
    resourceVersion: str = ""
    subresource: str = ""


class ResponseStatus(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The bounded fields of a metav1.Status (`metadata` is always written, as Go writes it)."""

    metadata: dict[str, Any]
    status: str = ""
    message: str = ""
    reason: str = ""
    code: int = 0


class Event(msgspec.Struct, kw_only=True, omit_defaults=True):
    """audit.k8s.io/v1 Event, its fields in upstream's order; the optional ones left out when empty."""

    kind: str
    apiVersion: str
    level: str
    auditID: str
    stage: str
    requestURI: str
    verb: str
    user: UserInfo
    impersonatedUser: UserInfo | None = None
    sourceIPs: list[str] = []
    userAgent: str = ""
    objectRef: ObjectReference | None = None
    responseStatus: ResponseStatus | None = None
    requestObject: Any = None
    responseObject: Any = None
    requestReceivedTimestamp: str
    stageTimestamp: str
    annotations: dict[str, str] = {}


def response_status(code: int, status: dict[str, Any] | None = None) -> ResponseStatus:
    """The event's responseStatus: the code, and a Status response's status, message and reason."""
    if not status:
        return ResponseStatus(metadata={}, code=code)
    return ResponseStatus(metadata={}, status=str(status.get("status") or ""),
                          message=str(status.get("message") or ""), reason=str(status.get("reason") or ""),
                          code=code)


def without_managed_fields(obj: Any) -> Any:
    """`obj` (an object, a list of them, or a Table) with no `metadata.managedFields` (a copy where
    something was dropped)."""
    if not isinstance(obj, dict):
        return obj
    out = obj
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    items = obj.get("items")
    if isinstance(items, list):
        out = {**out, "items": [without_managed_fields(i) for i in items]}
    rows = obj.get("rows")
    if isinstance(rows, list) and obj.get("kind") == "Table":
        out = {**out, "rows": [{**r, "object": without_managed_fields(r.get("object"))}
                               if isinstance(r, dict) and "object" in r else r for r in rows]}
    return out
