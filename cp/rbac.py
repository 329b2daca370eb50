"""Role-based access control: pure evaluation over RBAC objects, and the default roles.

Behaviour follows kube-apiserver's RBAC authorizer (`plugin/pkg/auth/authorizer/rbac`): permissions
are purely additive; cluster role bindings are visited first, then the role bindings of the request's
namespace; a rule matches when its verbs, API groups, resources (`*`, `res`, `res/sub`, `*/sub`),
resource names and non-resource URLs (`*`, exact, or `prefix*`) all match. Escalation prevention
(`covers`) follows `component-helpers/auth/rbac/validation`.

The default roles are written out in full, without aggregation rules: `admin` ⊃ `edit` ⊃ `view`, as
the upstream aggregated roles resolve to, plus the `system:` roles of the built-in components, each
with the least privilege its controller here needs (docs/security.md lists them).

No I/O: callers hand in plain dicts (the objects as stored) and get decisions back.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import msgspec

GROUP = "rbac.authorization.k8s.io"
API_VERSION = f"{GROUP}/v1"

# Well-known users and groups (k8s.io/apiserver/pkg/authentication/user).
MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
SERVICE_ACCOUNTS = "system:serviceaccounts"
SA_PREFIX = "system:serviceaccount:"
NODES = "system:nodes"
NODE_PREFIX = "system:node:"
KUBE_CONTROLLER_MANAGER = "system:kube-controller-manager"
KUBE_SCHEDULER = "system:kube-scheduler"
APISERVER = "system:apiserver"

BOOTSTRAP_LABEL = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"

READ = ("get", "list", "watch")
WRITE = ("create", "delete", "deletecollection", "patch", "update")
READ_WRITE = (*READ, *WRITE)


class UserInfo(msgspec.Struct, frozen=True, kw_only=True):
    """An authenticated identity (k8s.io/apiserver user.Info)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, tuple[str, ...]] = msgspec.field(default_factory=dict)

    def to_status(self) -> dict[str, Any]:
        """As `authentication.k8s.io/v1` UserInfo."""
        out: dict[str, Any] = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


class Attributes(msgspec.Struct, frozen=True, kw_only=True):
    """What a request asks to do (authorizer.Attributes)."""

    user: UserInfo
    verb: str
    resource_request: bool = True
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""


class Decision(msgspec.Struct, frozen=True):
    allowed: bool
    reason: str = ""


def service_account_user(namespace: str, name: str) -> str:
    return f"{SA_PREFIX}{namespace}:{name}"


def service_account_groups(namespace: str) -> tuple[str, ...]:
    return (SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{namespace}")


def split_service_account(username: str) -> tuple[str, str] | None:
    """(namespace, name) of `system:serviceaccount:NS:NAME`, else None."""
    if not username.startswith(SA_PREFIX):
        return None
    ns, sep, name = username[len(SA_PREFIX):].partition(":")
    if not sep or not ns or not name or ":" in name:
        return None
    return ns, name


# ------------------------------------------------------------------------------------------- rules


def _strs(rule: Mapping[str, Any], key: str) -> list[str]:
    value = rule.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def verb_matches(rule: Mapping[str, Any], verb: str) -> bool:
    return any(v == "*" or v == verb for v in _strs(rule, "verbs"))


def group_matches(rule: Mapping[str, Any], group: str) -> bool:
    return any(g == "*" or g == group for g in _strs(rule, "apiGroups"))


def resource_matches(rule: Mapping[str, Any], combined: str, subresource: str) -> bool:
    for r in _strs(rule, "resources"):
        if r == "*" or r == combined:
            return True
        if subresource and r == "*/" + subresource:
            return True
    return False


def name_matches(rule: Mapping[str, Any], name: str) -> bool:
    names = _strs(rule, "resourceNames")
    return not names or name in names


def url_matches(rule: Mapping[str, Any], path: str) -> bool:
    for u in _strs(rule, "nonResourceURLs"):
        if u == "*" or u == path or (u.endswith("*") and path.startswith(u.rstrip("*"))):
            return True
    return False


def rule_allows(attrs: Attributes, rule: Mapping[str, Any]) -> bool:
    if attrs.resource_request:
        combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        return (verb_matches(rule, attrs.verb) and group_matches(rule, attrs.api_group)
                and resource_matches(rule, combined, attrs.subresource) and name_matches(rule, attrs.name))
    return verb_matches(rule, attrs.verb) and url_matches(rule, attrs.path)


def rule(verbs: Iterable[str], *, groups: Iterable[str] = (), resources: Iterable[str] = (),
         names: Iterable[str] = (), urls: Iterable[str] = ()) -> dict[str, Any]:
    """A PolicyRule dict (fields in upstream's JSON order, empty lists left out)."""
    out: dict[str, Any] = {"verbs": list(verbs)}
    for key, values in (("apiGroups", groups), ("resources", resources), ("resourceNames", names),
                        ("nonResourceURLs", urls)):
        values = list(values)
        if values or (key == "apiGroups" and resources):
            out[key] = values
    return out


# ------------------------------------------------------------------------------------------- subjects


def applies_to(user: UserInfo, subject: Mapping[str, Any], binding_namespace: str) -> bool:
    kind = subject.get("kind")
    name = subject.get("name")
    if not isinstance(name, str):
        return False
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_namespace
        if not ns:
            return False
        return user.name == service_account_user(str(ns), name)
    return False


def describe_subject(subject: Mapping[str, Any], binding_namespace: str) -> str:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or binding_namespace}"'
    return f'{kind} "{name}"'


# ------------------------------------------------------------------------------------------- policy


class Policy:
    """A snapshot of the RBAC objects, indexed for evaluation. Objects are plain dicts as stored;
    malformed ones are skipped (validation keeps them out of the store anyway)."""

    def __init__(self) -> None:
        self.roles: dict[tuple[str, str], dict[str, Any]] = {}
        self.cluster_roles: dict[str, dict[str, Any]] = {}
        self.role_bindings: dict[str, dict[str, dict[str, Any]]] = {}  # namespace -> name -> binding
        self.cluster_role_bindings: dict[str, dict[str, Any]] = {}

    # -- building

    @classmethod
    def of(cls, objects: Iterable[Mapping[str, Any]]) -> Policy:
        policy = cls()
        for obj in objects:
            policy.put(obj)
        return policy

    def put(self, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        ns = str(meta.get("namespace") or "")
        kind = obj.get("kind")
        if kind == "Role":
            self.roles[(ns, name)] = dict(obj)
        elif kind == "ClusterRole":
            self.cluster_roles[name] = dict(obj)
        elif kind == "RoleBinding":
            self.role_bindings.setdefault(ns, {})[name] = dict(obj)
        elif kind == "ClusterRoleBinding":
            self.cluster_role_bindings[name] = dict(obj)

    def remove(self, kind: str, namespace: str, name: str) -> None:
        if kind == "Role":
            self.roles.pop((namespace, name), None)
        elif kind == "ClusterRole":
            self.cluster_roles.pop(name, None)
        elif kind == "RoleBinding":
            self.role_bindings.get(namespace, {}).pop(name, None)
        elif kind == "ClusterRoleBinding":
            self.cluster_role_bindings.pop(name, None)

    # -- resolution

    def role_ref_rules(self, role_ref: Mapping[str, Any], binding_namespace: str) -> list[dict[str, Any]]:
        """The rules a roleRef points at; KeyError(message) when it does not resolve."""
        kind, name = role_ref.get("kind"), str(role_ref.get("name") or "")
        if kind == "Role":
            role = self.roles.get((binding_namespace, name))
            if role is None:
                raise KeyError(f'role.{GROUP} "{name}" not found')
        elif kind == "ClusterRole":
            role = self.cluster_roles.get(name)
            if role is None:
                raise KeyError(f'clusterrole.{GROUP} "{name}" not found')
        else:
            raise KeyError(f'unsupported role reference kind: "{kind}"')
        rules = role.get("rules")
        return [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []

    def visit(self, user: UserInfo, namespace: str) -> Iterator[tuple[str, dict[str, Any] | None, str]]:
        """(source, rule, error) for every rule that applies to `user` in `namespace`, cluster
        role bindings first (upstream `VisitRulesFor`)."""
        sources: list[tuple[str, dict[str, Any]]] = [("", b) for b in self.cluster_role_bindings.values()]
        if namespace:
            sources.extend((namespace, b) for b in self.role_bindings.get(namespace, {}).values())
        for ns, binding in sources:
            subjects = binding.get("subjects")
            if not isinstance(subjects, list):
                continue
            subject = next((s for s in subjects if isinstance(s, dict) and applies_to(user, s, ns)), None)
            if subject is None:
                continue
            ref = binding.get("roleRef") or {}
            try:
                rules = self.role_ref_rules(ref, ns)
            except KeyError as exc:
                yield "", None, str(exc.args[0])
                continue
            bname = (binding.get("metadata") or {}).get("name")
            if ns:
                source = (f'RoleBinding "{bname}/{ns}" of {ref.get("kind")} "{ref.get("name")}" to '
                          f"{describe_subject(subject, ns)}")
            else:
                source = (f'ClusterRoleBinding "{bname}" of {ref.get("kind")} "{ref.get("name")}" to '
                          f"{describe_subject(subject, '')}")
            for r in rules:
                yield source, r, ""

    def authorize(self, attrs: Attributes) -> Decision:
        errors: list[str] = []
        for source, r, err in self.visit(attrs.user, attrs.namespace):
            if r is not None and rule_allows(attrs, r):
                return Decision(True, f"RBAC: allowed by {source}")
            if err:
                errors.append(err)
        if not errors:
            return Decision(False, "")
        return Decision(False, "RBAC: " + (errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"))

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[dict[str, Any]], list[str]]:
        rules: list[dict[str, Any]] = []
        errors: list[str] = []
        for _source, r, err in self.visit(user, namespace):
            if r is not None:
                rules.append(r)
            if err:
                errors.append(err)
        return rules, errors


# ------------------------------------------------------------------------------------------- escalation


def _breakdown(r: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Split a rule into rules of one verb x group x resource x name (or one verb x URL)."""
    out: list[dict[str, Any]] = []
    verbs = _strs(r, "verbs")
    for group in _strs(r, "apiGroups"):
        for resource in _strs(r, "resources"):
            for verb in verbs:
                names = _strs(r, "resourceNames")
                if names:
                    out.extend(rule([verb], groups=[group], resources=[resource], names=[n]) for n in names)
                else:
                    out.append(rule([verb], groups=[group], resources=[resource]))
    for url in _strs(r, "nonResourceURLs"):
        out.extend(rule([verb], urls=[url]) for verb in verbs)
    return out


def _resource_covers(owner: list[str], wanted: str) -> bool:
    if "*" in owner or wanted in owner:
        return True
    _res, sep, sub = wanted.partition("/")
    return bool(sep) and f"*/{sub}" in owner


def _url_covers(owner: list[str], wanted: str) -> bool:
    for u in owner:
        if u == "*" or u == wanted:
            return True
        if u.endswith("*") and wanted.startswith(u.rstrip("*")):
            return True
    return False


def _rule_covers(owner: Mapping[str, Any], sub: Mapping[str, Any]) -> bool:
    ov, og, orr, on, ou = (_strs(owner, k) for k in ("verbs", "apiGroups", "resources", "resourceNames",
                                                     "nonResourceURLs"))
    sv, sg, sr, sn, su = (_strs(sub, k) for k in ("verbs", "apiGroups", "resources", "resourceNames",
                                                  "nonResourceURLs"))
    return (("*" in ov or all(v in ov for v in sv))
            and ("*" in og or all(g in og for g in sg))
            and all(_resource_covers(orr, r) for r in sr)
            and all(_url_covers(ou, u) for u in su)
            and (not on if not sn else (not on or all(n in on for n in sn))))


def covers(owner_rules: Sequence[Mapping[str, Any]], rules: Sequence[Mapping[str, Any]]) -> tuple[bool, list[dict[str, Any]]]:
    """Whether `owner_rules` grant everything `rules` do; the uncovered simple rules otherwise."""
    missing: list[dict[str, Any]] = []
    for r in rules:
        for simple in _breakdown(r):
            if not any(_rule_covers(o, simple) for o in owner_rules):
                missing.append(simple)
    return not missing, missing


def compact_string(r: Mapping[str, Any]) -> str:
    """`{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}` as upstream prints rules."""
    parts = []
    for key, label in (("apiGroups", "APIGroups"), ("resources", "Resources"),
                       ("nonResourceURLs", "NonResourceURLs"), ("resourceNames", "ResourceNames"),
                       ("verbs", "Verbs")):
        values = _strs(r, key)
        if values:
            parts.append(f"{label}:[" + " ".join(f'"{v}"' for v in values) + "]")
    return "{" + ", ".join(parts) + "}"


def escalation_message(user: UserInfo, missing: Sequence[Mapping[str, Any]]) -> str:
    groups = "[" + " ".join(f'"{g}"' for g in user.groups) + "]"
    lines = sorted({compact_string(m) for m in missing})
    return (f'user "{user.name}" (groups={groups}) is attempting to grant RBAC permissions not currently '
            "held:\n" + "\n".join(lines))


# ------------------------------------------------------------------------------------------- messages


def forbidden(attrs: Attributes, reason: str = "") -> tuple[str, dict[str, Any]]:
    """The message and details of upstream's 403 (endpoints/handlers/responsewriters.Forbidden)."""
    who = attrs.user.name
    if not attrs.resource_request:
        msg = f'User "{who}" cannot {attrs.verb} path "{attrs.path}"'
    else:
        res = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        scope = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
        msg = f'User "{who}" cannot {attrs.verb} resource "{res}" in API group "{attrs.api_group}" {scope}'
    msg = msg.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if reason:
        msg = f"{msg}: {reason}"
    details: dict[str, Any] = {}
    if attrs.resource_request and attrs.resource:
        gr = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
        full = f'{gr} "{attrs.name}" is forbidden: {msg}' if attrs.name else f"{gr} is forbidden: {msg}"
        if attrs.name:
            details["name"] = attrs.name
        if attrs.api_group:
            details["group"] = attrs.api_group
        details["kind"] = attrs.resource
    else:
        full = f"forbidden: {msg}"
    return full, details


# ------------------------------------------------------------------------------------------- validation


def validate(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[tuple[str, str, str, Any]]:
    """Field errors (type, field, detail, value) of a Role, ClusterRole, RoleBinding or
    ClusterRoleBinding (upstream `pkg/apis/rbac/validation`)."""
    errs: list[tuple[str, str, str, Any]] = []
    kind = obj.get("kind")
    if kind in ("Role", "ClusterRole"):
        rules = obj.get("rules")
        for i, r in enumerate(rules if isinstance(rules, list) else []):
            path = f"rules[{i}]"
            if not isinstance(r, dict):
                continue
            if not _strs(r, "verbs"):
                errs.append(("Required", f"{path}.verbs", "verbs must contain at least one value", None))
            urls = _strs(r, "nonResourceURLs")
            if urls:
                if kind == "Role":
                    errs.append(("Invalid", f"{path}.nonResourceURLs", "namespaced rules cannot apply to "
                                 "non-resource URLs", urls))
                if _strs(r, "apiGroups") or _strs(r, "resources") or _strs(r, "resourceNames"):
                    errs.append(("Invalid", f"{path}.nonResourceURLs", "rules cannot apply to both regular "
                                 "resources and non-resource URLs", urls))
                continue
            if not _strs(r, "resources"):
                errs.append(("Required", f"{path}.resources", "resource rules must supply at least one "
                             "resource", None))
            if not _strs(r, "apiGroups"):
                errs.append(("Required", f"{path}.apiGroups", "resource rules must supply at least one api "
                             "group", None))
        return errs
    if kind in ("RoleBinding", "ClusterRoleBinding"):
        ref = obj.get("roleRef")
        if not isinstance(ref, dict):
            errs.append(("Required", "roleRef", "", None))
            return errs
        if ref.get("apiGroup") != GROUP:
            errs.append(("NotSupported", "roleRef.apiGroup", f'supported values: "{GROUP}"', ref.get("apiGroup")))
        allowed = ("Role", "ClusterRole") if kind == "RoleBinding" else ("ClusterRole",)
        if ref.get("kind") not in allowed:
            errs.append(("NotSupported", "roleRef.kind", "supported values: " +
                         ", ".join(f'"{k}"' for k in allowed), ref.get("kind")))
        if not ref.get("name"):
            errs.append(("Required", "roleRef.name", "", None))
        if old is not None and old.get("roleRef") != ref:
            errs.append(("Invalid", "roleRef", "cannot change roleRef", ref))
        subjects = obj.get("subjects")
        for i, s in enumerate(subjects if isinstance(subjects, list) else []):
            path = f"subjects[{i}]"
            if not isinstance(s, dict):
                continue
            if not s.get("name"):
                errs.append(("Required", f"{path}.name", "", None))
            sk = s.get("kind")
            if sk == "ServiceAccount":
                if s.get("apiGroup"):
                    errs.append(("NotSupported", f"{path}.apiGroup", 'supported values: ""', s.get("apiGroup")))
                if kind == "ClusterRoleBinding" and not s.get("namespace"):
                    errs.append(("Required", f"{path}.namespace", "", None))
            elif sk in ("User", "Group"):
                if s.get("apiGroup") != GROUP:
                    errs.append(("NotSupported", f"{path}.apiGroup", f'supported values: "{GROUP}"',
                                 s.get("apiGroup")))
            else:
                errs.append(("NotSupported", f"{path}.kind",
                             'supported values: "ServiceAccount", "User", "Group"', sk))
    return errs


def default_subjects(obj: dict[str, Any]) -> None:
    """Upstream defaulting: User and Group subjects get apiGroup rbac.authorization.k8s.io."""
    subjects = obj.get("subjects")
    for s in subjects if isinstance(subjects, list) else []:
        if isinstance(s, dict) and s.get("kind") in ("User", "Group") and not s.get("apiGroup"):
            s["apiGroup"] = GROUP
        if isinstance(s, dict) and s.get("kind") == "ServiceAccount" and "apiGroup" not in s:
            s["apiGroup"] = ""


# ------------------------------------------------------------------------------------------- defaults


def _view() -> list[dict[str, Any]]:
    return [
        rule(READ, groups=[""], resources=["configmaps", "endpoints", "persistentvolumeclaims",
                                           "persistentvolumeclaims/status", "pods", "replicationcontrollers",
                                           "replicationcontrollers/scale", "serviceaccounts", "services",
                                           "services/status"]),
        rule(READ, groups=[""], resources=["bindings", "events", "limitranges", "namespaces/status", "pods/log",
                                           "pods/status", "replicationcontrollers/status", "resourcequotas",
                                           "resourcequotas/status"]),
        rule(READ, groups=[""], resources=["namespaces"]),
        rule(READ, groups=["discovery.k8s.io"], resources=["endpointslices"]),
        rule(READ, groups=["apps"], resources=["controllerrevisions", "daemonsets", "daemonsets/status",
                                               "deployments", "deployments/scale", "deployments/status",
                                               "replicasets", "replicasets/scale", "replicasets/status",
                                               "statefulsets", "statefulsets/scale", "statefulsets/status"]),
        rule(READ, groups=["autoscaling"], resources=["horizontalpodautoscalers",
                                                      "horizontalpodautoscalers/status"]),
        rule(READ, groups=["batch"], resources=["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
        rule(READ, groups=["policy"], resources=["poddisruptionbudgets", "poddisruptionbudgets/status"]),
        rule(READ, groups=["networking.k8s.io"], resources=["ingresses", "ingresses/status", "networkpolicies"]),
        rule(READ, groups=["resource.k8s.io"], resources=["resourceclaims", "resourceclaims/status",
                                                          "resourceclaimtemplates"]),
        rule(READ, groups=["metrics.k8s.io"], resources=["pods", "nodes"]),
        # the web UI's reads of the event log (api/eventlog.py), filtered by the user's own permissions
        rule(["get", "list", "watch"], groups=["sim.cplane.dev"], resources=["eventlog"]),
    ]


def _edit_only() -> list[dict[str, Any]]:
    return [
        rule(READ, groups=[""], resources=["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets",
                                           "services/proxy"]),
        rule(["impersonate"], groups=[""], resources=["serviceaccounts"]),
        rule(WRITE, groups=[""], resources=["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"]),
        rule(["create"], groups=[""], resources=["pods/eviction"]),
        rule(WRITE, groups=[""], resources=["configmaps", "events", "persistentvolumeclaims",
                                            "replicationcontrollers", "replicationcontrollers/scale", "secrets",
                                            "serviceaccounts", "services", "services/proxy"]),
        rule(["create"], groups=[""], resources=["serviceaccounts/token"]),
        rule(WRITE, groups=["apps"], resources=["daemonsets", "deployments", "deployments/rollback",
                                                "deployments/scale", "replicasets", "replicasets/scale",
                                                "statefulsets", "statefulsets/scale"]),
        rule(WRITE, groups=["autoscaling"], resources=["horizontalpodautoscalers"]),
        rule(WRITE, groups=["batch"], resources=["cronjobs", "jobs"]),
        rule(WRITE, groups=["policy"], resources=["poddisruptionbudgets"]),
        rule(WRITE, groups=["networking.k8s.io"], resources=["ingresses", "networkpolicies"]),
        rule(WRITE, groups=["resource.k8s.io"], resources=["resourceclaims", "resourceclaimtemplates"]),
    ]


def _admin_only() -> list[dict[str, Any]]:
    return [
        rule(["create"], groups=["authorization.k8s.io"], resources=["localsubjectaccessreviews"]),
        rule(READ_WRITE, groups=[GROUP], resources=["rolebindings", "roles"]),
    ]


def _events() -> dict[str, Any]:
    return rule(["create", "patch", "update"], groups=["", "events.k8s.io"], resources=["events"])


# Controllers of this sandbox (controllers/registry.py) -> the ServiceAccount each runs as in
# kube-system, as kube-controller-manager's `--use-service-account-credentials` does. The
# scheduler runs as `system:kube-scheduler`; the shared informers and leader election as
# `system:kube-controller-manager`.
CONTROLLER_ACCOUNTS: dict[str, str] = {
    "garbage-collector": "generic-garbage-collector",
    "namespace": "namespace-controller",
    "device-taint-eviction": "device-taint-eviction-controller",
    "device-health": "device-health-controller",
    "node-lifecycle": "node-controller",
    "taint-eviction": "taint-eviction-controller",
    "persistentvolume-binder": "persistent-volume-binder",
    "replicaset": "replicaset-controller",
    "deployment": "deployment-controller",
    "daemonset": "daemon-set-controller",
    "statefulset": "statefulset-controller",
    "job": "job-controller",
    "ttl-after-finished": "ttl-after-finished-controller",
    "cronjob": "cronjob-controller",
    "disruption": "disruption-controller",
    "endpoints": "endpoint-controller",
    "resourceclaim": "resource-claim-controller",
    "resourcequota": "resourcequota-controller",
    "resourcepoolstatusrequest": "resourcepoolstatusrequest-controller",
    "fleet": "fleet-simulator",
    "horizontal-pod-autoscaler": "horizontal-pod-autoscaler",
    "serviceaccount": "service-account-controller",
    "root-ca-cert-publisher": "root-ca-cert-publisher",
}


def _controller_roles() -> dict[str, list[dict[str, Any]]]:
    """ClusterRole `system:controller:<account>` per controller (upstream controller_policy.go,
    reduced to the resources served here, plus the DRA synthetic subresources)."""
    r = "resource.k8s.io"
    return {
        "generic-garbage-collector": [
            rule(["delete", "get", "list", "patch", "update", "watch"], groups=["*"], resources=["*"]),
            _events()],
        "service-account-controller": [
            rule(["create"], groups=[""], resources=["serviceaccounts"]),
            _events()],
        "root-ca-cert-publisher": [
            rule(["create", "update"], groups=[""], resources=["configmaps"]),
            _events()],
        "namespace-controller": [
            rule(["delete", "get", "list", "watch"], groups=[""], resources=["namespaces"]),
            rule(["update"], groups=[""], resources=["namespaces/finalize", "namespaces/status"]),
            rule(["delete", "deletecollection", "get", "list"], groups=["*"], resources=["*"]),
            _events()],
        "device-taint-eviction-controller": [
            rule(["delete", "get", "list", "watch"], groups=[""], resources=["pods"]),
            rule(["patch", "update"], groups=[""], resources=["pods/status"]),
            rule(READ, groups=[r], resources=["resourceclaims", "resourceslices", "deviceclasses",
                                              "devicetaintrules"]),
            rule(["get", "patch", "update"], groups=[r], resources=["devicetaintrules/status"]),
            _events()],
        "node-controller": [
            rule(["get", "list", "patch", "update", "watch"], groups=[""], resources=["nodes"]),
            rule(["patch", "update"], groups=[""], resources=["nodes/status"]),
            rule(["get", "list", "watch"], groups=[""], resources=["pods"]),
            rule(["patch", "update"], groups=[""], resources=["pods/status"]),
            rule(["get", "list", "watch"], groups=["coordination.k8s.io"], resources=["leases"]),
            _events()],
        "taint-eviction-controller": [
            rule(["delete", "get", "list", "watch"], groups=[""], resources=["pods"]),
            rule(["patch", "update"], groups=[""], resources=["pods/status"]),
            rule(["get", "list", "watch"], groups=[""], resources=["nodes"]),
            _events()],
        "persistent-volume-binder": [
            rule(["create", "delete", "get", "list", "update", "watch"], groups=[""], resources=["persistentvolumes"]),
            rule(["update"], groups=[""], resources=["persistentvolumes/status"]),
            rule(["get", "list", "patch", "update", "watch"], groups=[""], resources=["persistentvolumeclaims"]),
            rule(["update"], groups=[""], resources=["persistentvolumeclaims/status"]),
            rule(["get", "list", "watch"], groups=[""], resources=["pods"]),
            rule(["get", "list", "watch"], groups=["storage.k8s.io"], resources=["storageclasses"]),
            _events()],
        "device-health-controller": [
            rule(READ, groups=[""], resources=["pods"]),
            rule(READ, groups=[r], resources=["resourceclaims", "resourceslices"]),
            # the kubelet's part: allocatedResourcesStatus in pod status, and the claims' device
            # conditions a driver would write (status.devices of every driver, on any node)
            rule(["update"], groups=[""], resources=["pods/status"]),
            rule(["update"], groups=[r], resources=["resourceclaims/status"]),
            rule(["arbitrary-node:update"], groups=[r], resources=["resourceclaims/driver"]),
            rule(["create", "delete", "get", "list", "watch"], groups=[r], resources=["devicetaintrules"]),
            rule(["create", "get", "list", "patch", "update", "watch"], groups=["sim.cplane.dev"],
                 resources=["devicehealths"]),
            rule(["get", "list", "watch"], groups=["sim.cplane.dev"], resources=["clocks"]),
            _events()],
        "replicaset-controller": [
            rule(["get", "list", "update", "watch"], groups=["apps"], resources=["replicasets"]),
            rule(["update"], groups=["apps"], resources=["replicasets/status"]),
            rule(["update"], groups=["apps"], resources=["replicasets/finalizers"]),
            rule(["create", "delete", "get", "list", "patch", "watch"], groups=[""], resources=["pods"]),
            _events()],
        "deployment-controller": [
            rule(["get", "list", "patch", "update", "watch"], groups=["apps"], resources=["deployments"]),
            rule(["update"], groups=["apps"], resources=["deployments/status"]),
            rule(["update"], groups=["apps"], resources=["deployments/finalizers"]),
            rule(["create", "delete", "get", "list", "patch", "update", "watch"], groups=["apps"],
                 resources=["replicasets"]),
            rule(["get", "list", "update", "watch"], groups=[""], resources=["pods"]),
            _events()],
        "daemon-set-controller": [
            rule(["get", "list", "watch"], groups=["apps"], resources=["daemonsets"]),
            rule(["update"], groups=["apps"], resources=["daemonsets/status"]),
            rule(["update"], groups=["apps"], resources=["daemonsets/finalizers"]),
            rule(["list", "watch"], groups=[""], resources=["nodes"]),
            rule(["create", "delete", "list", "patch", "watch"], groups=[""], resources=["pods"]),
            rule(["create"], groups=[""], resources=["pods/binding"]),
            rule(["create", "delete", "get", "list", "patch", "update", "watch"], groups=["apps"],
                 resources=["controllerrevisions"]),
            _events()],
        "statefulset-controller": [
            rule(["list", "watch"], groups=[""], resources=["pods"]),
            rule(["get", "list", "watch"], groups=["apps"], resources=["statefulsets"]),
            rule(["update"], groups=["apps"], resources=["statefulsets/status"]),
            rule(["update"], groups=["apps"], resources=["statefulsets/finalizers"]),
            rule(["create", "delete", "get", "patch", "update"], groups=[""], resources=["pods"]),
            rule(["create", "delete", "get", "list", "patch", "update", "watch"], groups=["apps"],
                 resources=["controllerrevisions"]),
            rule(["create", "get", "list", "patch", "update", "watch"], groups=[""],
                 resources=["persistentvolumeclaims"]),
            _events()],
        "job-controller": [
            rule(["get", "list", "patch", "update", "watch"], groups=["batch"], resources=["jobs"]),
            rule(["update"], groups=["batch"], resources=["jobs/status"]),
            rule(["update"], groups=["batch"], resources=["jobs/finalizers"]),
            rule(["create", "delete", "get", "list", "patch", "watch"], groups=[""], resources=["pods"]),
            _events()],
        # Upstream installs this one with DRAResourcePoolStatus only; granting it while the API is not
        # served changes nothing.
        "resourcepoolstatusrequest-controller": [
            rule(["delete", "get", "list", "watch"], groups=[r], resources=["resourcepoolstatusrequests"]),
            rule(["patch", "update"], groups=[r], resources=["resourcepoolstatusrequests/status"]),
            rule(["get", "list", "watch"], groups=[r], resources=["devicetaintrules", "resourceclaims",
                                                                 "resourceslices"]),
            _events()],
        "ttl-after-finished-controller": [
            rule(["delete", "get", "list", "watch"], groups=["batch"], resources=["jobs"]),
            _events()],
        "cronjob-controller": [
            rule(["get", "list", "update", "watch"], groups=["batch"], resources=["cronjobs"]),
            rule(["create", "delete", "get", "list", "patch", "update", "watch"], groups=["batch"], resources=["jobs"]),
            rule(["update"], groups=["batch"], resources=["cronjobs/status"]),
            rule(["update"], groups=["batch"], resources=["cronjobs/finalizers"]),
            rule(["delete", "list"], groups=[""], resources=["pods"]),
            _events()],
        "disruption-controller": [
            rule(READ, groups=["apps"], resources=["deployments", "replicasets", "statefulsets"]),
            rule(READ, groups=[""], resources=["pods", "replicationcontrollers"]),
            rule(["patch", "update"], groups=[""], resources=["pods/status"]),
            rule(READ, groups=["policy"], resources=["poddisruptionbudgets"]),
            rule(["update"], groups=["policy"], resources=["poddisruptionbudgets/status"]),
            rule(["get"], groups=["*"], resources=["*/scale"]),
            _events()],
        "endpointslice-controller": [
            rule(["get", "list", "watch"], groups=[""], resources=["services", "pods", "nodes"]),
            rule(["update"], groups=[""], resources=["services/finalizers"]),
            rule(["create", "delete", "get", "list", "update"], groups=["discovery.k8s.io"],
                 resources=["endpointslices"]),
            _events()],
        "endpoint-controller": [
            rule(["get", "list", "watch"], groups=[""], resources=["services", "pods"]),
            rule(["create", "delete", "get", "list", "update"], groups=[""], resources=["endpoints"]),
            rule(["create"], groups=[""], resources=["endpoints/restricted"]),
            _events()],
        "resource-claim-controller": [
            rule(["get", "list", "watch"], groups=[""], resources=["pods"]),
            rule(["update"], groups=[""], resources=["pods/finalizers"]),
            rule(["patch", "update"], groups=[""], resources=["pods/status"]),
            rule(["create", "delete", "get", "list", "update", "watch"], groups=[r], resources=["resourceclaims"]),
            rule(["get", "list", "patch", "update", "watch"], groups=[r], resources=["resourceclaims/status"]),
            rule(["patch", "update"], groups=[r], resources=["resourceclaims/binding"]),
            rule(READ, groups=[r], resources=["resourceclaimtemplates"]),
            _events()],
        "resourcequota-controller": [
            rule(["list", "watch"], groups=["*"], resources=["*"]),
            rule(["update"], groups=[""], resources=["resourcequotas/status"]),
            _events()],
        "horizontal-pod-autoscaler": [
            rule(READ, groups=["autoscaling"], resources=["horizontalpodautoscalers"]),
            rule(["update"], groups=["autoscaling"], resources=["horizontalpodautoscalers/status"]),
            rule(["get", "update"], groups=["*"], resources=["*/scale"]),
            rule(["list", "watch"], groups=[""], resources=["pods"]),
            rule(["list"], groups=["metrics.k8s.io"], resources=["pods"]),
            rule(["get", "list"], groups=["custom.metrics.k8s.io", "external.metrics.k8s.io"], resources=["*"]),
            rule(["get", "list", "patch", "update", "create"], groups=["", "events.k8s.io"], resources=["events"])],
        # The fleet simulator stands in for kubelets and node-local DRA drivers: nodes and their
        # leases, pod status, ResourceSlices, and status.devices of claims for any driver/node; the
        # kubelets of real plugins wipe a dead driver's slices (deletecollection) and turn health
        # streams into DeviceHealth reports.
        "fleet-simulator": [
            rule(["create", "get", "list", "patch", "update", "watch"], groups=[""], resources=["nodes"]),
            rule(["patch", "update"], groups=[""], resources=["nodes/status"]),
            rule(["delete", "get", "list", "watch"], groups=[""], resources=["pods"]),
            rule(["patch", "update"], groups=[""], resources=["pods/status"]),
            rule(["create", "get", "patch", "update"], groups=["coordination.k8s.io"], resources=["leases"]),
            rule(["create", "delete", "deletecollection", "get", "list", "update", "watch"], groups=[r],
                 resources=["resourceslices"]),
            rule(["create", "get", "patch"], groups=["sim.cplane.dev"], resources=["devicehealths"]),
            rule(["create", "get", "list", "watch"], groups=[r], resources=["deviceclasses"]),
            rule(["create", "get"], groups=["storage.k8s.io"], resources=["storageclasses"]),
            rule(["get", "list", "watch"], groups=[r], resources=["resourceclaims"]),
            rule(["get", "patch", "update"], groups=[r], resources=["resourceclaims/status"]),
            rule(["arbitrary-node:patch", "arbitrary-node:update"], groups=[r], resources=["resourceclaims/driver"]),
            # The simulated kubelets' API: reviews of its callers (webhook mode), and the
            # ConfigMaps, Secrets and Services a container's environment reads (system:node's reads).
            rule(["create"], groups=["authentication.k8s.io"], resources=["tokenreviews"]),
            rule(["create"], groups=["authorization.k8s.io"], resources=["subjectaccessreviews"]),
            rule(["get"], groups=[""], resources=["configmaps", "secrets"]),
            rule(["list"], groups=[""], resources=["services"]),
            # Node-bound tokens of the DRA kubelet plugins' account (cp.kubeletplugins.ACCOUNT), as a
            # kubelet asks for its pods' tokens: the credentials it writes into each node's kubeconfig.
            rule(["create"], groups=[""], resources=["serviceaccounts/token"], names=["dra-kubelet-plugin"]),
            _events()],
    }


def _scheduler_rules() -> list[dict[str, Any]]:
    r = "resource.k8s.io"
    return [
        _events(),
        rule(["create"], groups=["coordination.k8s.io"], resources=["leases"]),
        rule(["get", "update"], groups=["coordination.k8s.io"], resources=["leases"], names=["kube-scheduler"]),
        rule(READ, groups=[""], resources=["nodes", "namespaces"]),
        # system:volume-scheduler: VolumeBinding reads claims, volumes and classes, pre-binds volumes
        # and annotates claims with the selected node
        rule([*READ, "patch", "update"], groups=[""], resources=["persistentvolumeclaims", "persistentvolumes"]),
        rule(READ, groups=["storage.k8s.io"], resources=["storageclasses"]),
        rule(["delete", "get", "list", "watch"], groups=[""], resources=["pods"]),
        rule(READ, groups=["policy"], resources=["poddisruptionbudgets"]),
        # PodTopologySpread's system default constraints: who selects a pod (helper.DefaultSelector)
        rule(READ, groups=[""], resources=["services", "replicationcontrollers"]),
        rule(READ, groups=["apps"], resources=["replicasets", "statefulsets"]),
        rule(["create"], groups=[""], resources=["bindings", "pods/binding"]),
        rule(["patch", "update"], groups=[""], resources=["pods/status"]),
        rule(["create", "delete", "get", "list", "patch", "update", "watch"], groups=[r],
             resources=["resourceclaims"]),
        rule(["get", "patch", "update"], groups=[r], resources=["resourceclaims/status"]),
        rule(["patch", "update"], groups=[r], resources=["resourceclaims/binding"]),
        rule(READ, groups=[r], resources=["deviceclasses", "resourceslices", "devicetaintrules"]),
        # Workload-aware scheduling (upstream adds these with GenericWorkload; granting them while the
        # API is not served changes nothing).
        rule(READ, groups=["scheduling.k8s.io"], resources=["podgroups", "workloads"]),
        rule(["patch", "update"], groups=["scheduling.k8s.io"], resources=["podgroups/status"]),
        rule(["create"], groups=["authentication.k8s.io"], resources=["tokenreviews"]),
        rule(["create"], groups=["authorization.k8s.io"], resources=["subjectaccessreviews"]),
    ]


def _kcm_rules() -> list[dict[str, Any]]:
    return [
        _events(),
        rule(["create"], groups=["coordination.k8s.io"], resources=["leases"]),
        rule(["get", "update"], groups=["coordination.k8s.io"], resources=["leases"],
             names=["kube-controller-manager", "cplane-controller-manager"]),
        rule(["get"], groups=[""], resources=["namespaces"]),
        # Needed for all shared informers.
        rule(["list", "watch"], groups=["*"], resources=["*"]),
        rule(["get"], groups=["sim.cplane.dev"], resources=["clocks"]),
        rule(["create"], groups=["authentication.k8s.io"], resources=["tokenreviews"]),
        rule(["create"], groups=["authorization.k8s.io"], resources=["subjectaccessreviews"]),
    ]


def _cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "ClusterRole",
            "metadata": {"name": name, "labels": dict(BOOTSTRAP_LABEL), "annotations": {AUTOUPDATE: "true"}},
            "rules": rules}


def _subject(kind: str, name: str) -> dict[str, Any]:
    if kind == "ServiceAccount":
        ns, sa = split_service_account(name) or ("", name)
        return {"kind": "ServiceAccount", "name": sa, "namespace": ns}
    return {"kind": kind, "apiGroup": GROUP, "name": name}


def _cluster_binding(name: str, role: str, subjects: list[tuple[str, str]]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": dict(BOOTSTRAP_LABEL), "annotations": {AUTOUPDATE: "true"}},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
            "subjects": [_subject(k, n) for k, n in subjects]}


def default_cluster_roles() -> list[dict[str, Any]]:
    view = _view()
    edit = _edit_only() + view
    admin = _admin_only() + edit
    roles = [
        _cluster_role("cluster-admin", [rule(["*"], groups=["*"], resources=["*"]), rule(["*"], urls=["*"])]),
        _cluster_role("admin", admin),
        _cluster_role("edit", edit),
        _cluster_role("view", view),
        _cluster_role("system:discovery", [rule(["get"], urls=[
            "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz",
            "/version", "/version/"])]),
        _cluster_role("system:public-info-viewer", [rule(["get"], urls=[
            "/healthz", "/livez", "/readyz", "/version", "/version/"])]),
        _cluster_role("system:basic-user", [
            rule(["create"], groups=["authorization.k8s.io"],
                 resources=["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
            rule(["create"], groups=["authentication.k8s.io"], resources=["selfsubjectreviews"])]),
        _cluster_role("system:service-account-issuer-discovery", [rule(["get"], urls=[
            "/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks",
            "/openid/v1/jwks/"])]),
        _cluster_role("system:auth-delegator", [
            rule(["create"], groups=["authentication.k8s.io"], resources=["tokenreviews"]),
            rule(["create"], groups=["authorization.k8s.io"], resources=["subjectaccessreviews"])]),
        _cluster_role("system:monitoring", [rule(["get"], urls=[
            "/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"])]),
        # What the API server may do on a kubelet (kubeadm binds its kubelet client to it).
        _cluster_role("system:kubelet-api-admin", [
            rule(["get", "list", "watch"], groups=[""], resources=["nodes"]),
            rule(["proxy"], groups=[""], resources=["nodes"]),
            rule(["*"], groups=[""], resources=["nodes/log", "nodes/metrics", "nodes/proxy", "nodes/stats"])]),
        _cluster_role(KUBE_CONTROLLER_MANAGER, _kcm_rules()),
        _cluster_role(KUBE_SCHEDULER, _scheduler_rules()),
    ]
    roles.extend(_cluster_role(f"system:controller:{account}", rules)
                 for account, rules in _controller_roles().items())
    return roles


# The user of the API server's calls to kubelets (`api/kubelet_proxy.py`).
KUBELET_API_CLIENT = "kube-apiserver-kubelet-client"


def default_cluster_role_bindings() -> list[dict[str, Any]]:
    out = [
        _cluster_binding("cluster-admin", "cluster-admin", [("Group", MASTERS)]),
        _cluster_binding("system:discovery", "system:discovery", [("Group", AUTHENTICATED)]),
        _cluster_binding("system:basic-user", "system:basic-user", [("Group", AUTHENTICATED)]),
        _cluster_binding("system:public-info-viewer", "system:public-info-viewer",
                         [("Group", AUTHENTICATED), ("Group", UNAUTHENTICATED)]),
        _cluster_binding("system:service-account-issuer-discovery", "system:service-account-issuer-discovery",
                         [("Group", SERVICE_ACCOUNTS)]),
        _cluster_binding(KUBE_CONTROLLER_MANAGER, KUBE_CONTROLLER_MANAGER, [("User", KUBE_CONTROLLER_MANAGER)]),
        _cluster_binding(KUBELET_API_CLIENT, "system:kubelet-api-admin", [("User", KUBELET_API_CLIENT)]),
        _cluster_binding(KUBE_SCHEDULER, KUBE_SCHEDULER, [("User", KUBE_SCHEDULER)]),
    ]
    out.extend(_cluster_binding(f"system:controller:{account}", f"system:controller:{account}",
                                [("ServiceAccount", service_account_user("kube-system", account))])
               for account in _controller_roles())
    return out


def default_policy() -> Policy:
    return Policy.of([*default_cluster_roles(), *default_cluster_role_bindings()])
