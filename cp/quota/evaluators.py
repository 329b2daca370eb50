"""Quota evaluators: what an object of each resource counts against a ResourceQuota
(kubernetes `pkg/quota/v1/evaluator/core` and apiserver `pkg/quota/v1/generic`). Pure.

An evaluator says which writes can change usage (`handles`), which quota resource names it can
count (`matching_resources`), whether an object falls in a quota scope (`matches_scope`), what the
object must declare when a quota covers it (`constraints`) and what it uses (`usage`):

- pods: `count/pods` always; while the pod is not terminal (and not stuck past its deletion grace
  period) `pods`, `cpu`/`requests.cpu`, `limits.cpu`, the same for memory and ephemeral-storage,
  hugepages and `requests.<extended resource>` (DRA-backed ones included), from the pod's total
  requests and limits (`cp.podresources`); scopes Terminating, NotTerminating, BestEffort,
  NotBestEffort, PriorityClass (a selector over the class name) and CrossNamespacePodAffinity;
- services: `count/services`, `services`, `services.nodeports` (ports of NodePort and LoadBalancer
  services) and `services.loadbalancers`;
- persistentvolumeclaims: `count/persistentvolumeclaims`, `persistentvolumeclaims`,
  `requests.storage` (rounded up to whole bytes, or the larger allocated size) and both per storage
  class (`<class>.storageclass.storage.k8s.io/...`); the VolumeAttributesClass scope;
- resourceclaims (resource.k8s.io): `count/resourceclaims.resource.k8s.io` and, per device class,
  `<class>.deviceclass.resource.k8s.io/devices` — an ExactCount request its count, an All request
  the most an allocation can hold (32), a firstAvailable request the largest of its alternatives per
  class (admin-access requests count like any other, as KEP-5018 says); for extended resources
  backed by DRA also `requests.deviceclass.resource.kubernetes.io/<class>` and
  `requests.<extendedResourceName>`, less what the owning pod already counts for its special claim;
- everything else: `count/<resource>.<group>` on create, with the legacy names `configmaps`,
  `secrets`, `replicationcontrollers` and `resourcequotas` for those four.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec

from cp import clock, errors, podresources, selectors
from cp import resourcelists as rl
from cp.quantity import Quantity
from cp.resourcelists import ResourceList
from cp.strategies import core as strategies_core

ONE = Quantity.from_int(1)

# Resources quota never counts: not stored, or never counted (apiserver's DefaultIgnoredResources).
IGNORED = frozenset({
    ("", "bindings"), ("", "componentstatuses"), ("", "events"), ("events.k8s.io", "events"),
    ("authentication.k8s.io", "tokenreviews"), ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"), ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"), ("authorization.k8s.io", "selfsubjectrulesreviews"),
})

# Object counts that predate `count/...` (pkg/quota/v1/evaluator/core/registry.go).
LEGACY_COUNT_ALIASES = {
    ("", "configmaps"): "configmaps",
    ("", "resourcequotas"): "resourcequotas",
    ("", "replicationcontrollers"): "replicationcontrollers",
    ("", "secrets"): "secrets",
}

REQUESTS_PREFIX = "requests."
LIMITS_PREFIX = "limits."
HUGEPAGES_PREFIX = "hugepages-"
CLAIMS_PER_CLASS_SUFFIX = ".deviceclass.resource.k8s.io/devices"
STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"
# cp.dra's constants, repeated so that quota loads the DRA package only for DRA names (a test keeps
# them equal): implicit extended resource names, the most devices an "All" request can get, and
# the annotation of the scheduler's special claim for a pod's extended resources.
DEVICE_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"
ALLOCATION_RESULTS_MAX_SIZE = 32
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"

# Scope names and selector operators (core/v1 ResourceQuotaScope, ScopeSelectorOperator).
TERMINATING, NOT_TERMINATING = "Terminating", "NotTerminating"
BEST_EFFORT, NOT_BEST_EFFORT = "BestEffort", "NotBestEffort"
PRIORITY_CLASS = "PriorityClass"
CROSS_NAMESPACE_POD_AFFINITY = "CrossNamespacePodAffinity"
VOLUME_ATTRIBUTES_CLASS = "VolumeAttributesClass"
OP_IN, OP_NOT_IN, OP_EXISTS, OP_DOES_NOT_EXIST = "In", "NotIn", "Exists", "DoesNotExist"


class ScopeError(Exception):
    """A quota scope selector that cannot be evaluated (not a valid label requirement)."""


class Scope(msgspec.Struct, frozen=True, kw_only=True):
    """One `ScopedResourceSelectorRequirement`; `spec.scopes` entries are `Exists` requirements."""

    scope_name: str
    operator: str = OP_EXISTS
    values: tuple[str, ...] = ()

    def matches_values(self, present: Iterable[str]) -> bool:
        """The requirement as a label selector with the scope name as key, true when one of the
        present values (or, with none, the empty label set) satisfies it."""
        op = {OP_IN: selectors.OP_IN, OP_NOT_IN: selectors.OP_NOT_IN, OP_EXISTS: selectors.OP_EXISTS,
              OP_DOES_NOT_EXIST: selectors.OP_DOES_NOT_EXIST}.get(self.operator)
        if op is None:
            raise ScopeError(f'failed to parse and convert selector: "{self.operator}" is not a valid '
                             "scope selector operator")
        try:
            req = selectors.make_requirement(key=self.scope_name, operator=op, values=list(self.values))
        except errors.StatusError as exc:
            raise ScopeError(f"failed to parse and convert selector: {exc.message}") from None
        names = [v for v in present if v]
        if not names:
            return req.match({})
        return any(req.match({self.scope_name: v}) for v in names)


def scopes_of(quota: Mapping[str, Any]) -> list[Scope]:
    """`spec.scopes` as Exists requirements, then `spec.scopeSelector.matchExpressions`."""
    spec = quota.get("spec") if isinstance(quota.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    out = [Scope(scope_name=str(s)) for s in spec.get("scopes") or [] if isinstance(s, str)]
    selector = spec.get("scopeSelector")
    if isinstance(selector, Mapping):
        for expr in selector.get("matchExpressions") or []:
            if isinstance(expr, Mapping):
                values = expr.get("values")
                out.append(Scope(scope_name=str(expr.get("scopeName") or ""),
                                 operator=str(expr.get("operator") or ""),
                                 values=tuple(str(v) for v in values) if isinstance(values, list) else ()))
    return out


def object_count_name(group: str, resource: str) -> str:
    """`count/<resource>` for the core group, `count/<resource>.<group>` otherwise."""
    return f"count/{resource}.{group}" if group else f"count/{resource}"


def is_native_resource(name: str) -> bool:
    """In the kubernetes.io namespace: unprefixed, or prefixed with `*kubernetes.io/`."""
    return "/" not in name or "kubernetes.io/" in name


def is_extended_resource_name_for_quota(name: str) -> bool:
    """`requests.<name>` of an extended resource (or an implicit DRA one) — the only form quota accepts
    for extended resources, since they cannot be overcommitted."""
    return name.startswith(REQUESTS_PREFIX) and (
        not is_native_resource(name) or name.startswith(REQUESTS_PREFIX + DEVICE_CLASS_RESOURCE_PREFIX))


def is_dra_extended_resource_name(name: str) -> bool:
    """An extended resource name, or an implicit one of a device class (`schedutil`'s rule, kept in
    `cp.dra.extended`; the DRA package loads only for names that can be one)."""
    if is_native_resource(name) and not name.startswith(DEVICE_CLASS_RESOURCE_PREFIX):
        return False
    from cp.dra import extended

    return extended.is_dra_extended_resource_name(name)


# ---------------------------------------------------------------- what usage depends on besides the object

class UsageContext(msgspec.Struct, kw_only=True):
    """Facts usage depends on beyond the object itself. `class_extended_names`: device class →
    its `spec.extendedResourceName`; `extended_resource_classes`: extended resource name (explicit
    winner or implicit `deviceclass.resource.kubernetes.io/<class>`) → class; `pod` (namespace, name)
    and `owned_claims` (namespace, pod uid) answer from what the caller has read."""

    now: float
    class_extended_names: dict[str, str] = msgspec.field(default_factory=dict)
    extended_resource_classes: dict[str, str] = msgspec.field(default_factory=dict)
    pod: Callable[[str, str], Mapping[str, Any] | None] = lambda _ns, _name: None
    owned_claims: Callable[[str, str], Sequence[Mapping[str, Any]]] = lambda _ns, _uid: ()


def device_class_context(classes: Iterable[Mapping[str, Any]]) -> tuple[dict[str, str], dict[str, str]]:
    """(class → extendedResourceName, extended resource name → class) from the DeviceClasses, with
    the arbitration of the scheduler's extended resource cache (`cp.dra.extended`)."""
    items = list(classes)
    by_class: dict[str, str] = {}
    for cls in items:
        name = str(_meta(cls).get("name") or "")
        ext = _dict(cls.get("spec")).get("extendedResourceName")
        if name and isinstance(ext, str) and ext:
            by_class[name] = ext
    if not items:
        return by_class, {}
    from cp.dra import extended

    return by_class, extended.extended_resource_class_mapping(items)


# ---------------------------------------------------------------- evaluators

class Evaluator:
    """The object-count evaluator; the kinds with more to count override it."""

    def __init__(self, group: str, resource: str, *, alias: str = "") -> None:
        self.group = group
        self.resource = resource
        self.count_name = object_count_name(group, resource)
        self.names = (self.count_name, alias) if alias else (self.count_name,)

    def handles(self, *, operation: str, subresource: str, obj: Mapping[str, Any] | None,
                old: Mapping[str, Any] | None) -> bool:
        return not subresource and operation == "CREATE"

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return sorted({n for n in names if n in self.names})

    def matches_scope(self, scope: Scope, obj: Mapping[str, Any]) -> bool:
        return False

    def constraints(self, required: Sequence[str], obj: Mapping[str, Any]) -> str:
        """What the object lacks for these quota resources ("" when nothing)."""
        return ""

    def usage(self, obj: Mapping[str, Any], ctx: UsageContext) -> ResourceList:
        return dict.fromkeys(self.names, ONE)

    def matches(self, hard_names: Iterable[str], scopes: Sequence[Scope], obj: Mapping[str, Any]) -> bool:
        """`generic.Matches`: the quota constrains a resource this evaluator counts and every scope
        matches the object."""
        if not self.matching_resources(hard_names):
            return False
        return all(self.matches_scope(scope, obj) for scope in scopes)

    def matching_scopes(self, obj: Mapping[str, Any], scopes: Sequence[Scope]) -> list[Scope]:
        return [s for s in scopes if self.matches_scope(s, obj)]


# ---------------------------------------------------------------- pods

POD_RESOURCES = frozenset({
    "count/pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods",
})
POD_RESOURCE_PREFIXES = (HUGEPAGES_PREFIX, REQUESTS_PREFIX + HUGEPAGES_PREFIX)
# Quotas on these force every container to declare them (a historical rule kept for compatibility).
CONTAINER_REQUIRED = ("cpu", "limits.cpu", "limits.memory", "memory", "requests.cpu", "requests.memory")


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _dict(obj.get("metadata"))


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def compute_usage(requests: Mapping[str, Quantity], limits: Mapping[str, Quantity]) -> ResourceList:
    """`podComputeUsageHelper`: quota names of one container's (or a pod's) requests and limits."""
    out: ResourceList = {"pods": ONE}
    for res_name in ("cpu", "memory", "ephemeral-storage"):
        if res_name in requests:
            out[res_name] = requests[res_name]
            out[REQUESTS_PREFIX + res_name] = requests[res_name]
        if res_name in limits:
            out[LIMITS_PREFIX + res_name] = limits[res_name]
    for name, q in requests.items():
        if name.startswith(HUGEPAGES_PREFIX):
            out[name] = q
            out[REQUESTS_PREFIX + name] = q
        if is_dra_extended_resource_name(name):
            out[REQUESTS_PREFIX + name] = q
    return out


def is_terminating(pod: Mapping[str, Any]) -> bool:
    deadline = _dict(pod.get("spec")).get("activeDeadlineSeconds")
    return isinstance(deadline, int) and not isinstance(deadline, bool) and deadline >= 0


def qos_class(pod: Mapping[str, Any]) -> str:
    """`qos.GetPodQOS`: the class the pod's status records (set on create), else computed."""
    recorded = _dict(pod.get("status")).get("qosClass")
    if isinstance(recorded, str) and recorded:
        return recorded
    return strategies_core.qos_class(dict(_dict(pod.get("spec"))))


def _cross_namespace(terms: Any, weighted: bool) -> bool:
    for term in _dicts(terms):
        t = _dict(term.get("podAffinityTerm")) if weighted else term
        if t.get("namespaces") or t.get("namespaceSelector") is not None:
            return True
    return False


def uses_cross_namespace_pod_affinity(pod: Mapping[str, Any]) -> bool:
    affinity = _dict(_dict(pod.get("spec")).get("affinity"))
    for key in ("podAffinity", "podAntiAffinity"):
        a = _dict(affinity.get(key))
        if _cross_namespace(a.get("requiredDuringSchedulingIgnoredDuringExecution"), False) or \
                _cross_namespace(a.get("preferredDuringSchedulingIgnoredDuringExecution"), True):
            return True
    return False


def _parse_time(value: Any) -> float | None:
    try:
        return clock.parse_time(str(value))
    except ValueError:
        return None


def pod_is_charged(pod: Mapping[str, Any], *, now: float) -> bool:
    """`QuotaV1Pod`: not terminal, and not stuck terminating past its grace period (a lost node must
    not keep its pods' quota)."""
    if _dict(pod.get("status")).get("phase") in ("Failed", "Succeeded"):
        return False
    meta = _meta(pod)
    grace = meta.get("deletionGracePeriodSeconds")
    if meta.get("deletionTimestamp") and isinstance(grace, int):
        deleted = _parse_time(meta["deletionTimestamp"])
        if deleted is not None and now > deleted + grace:
            return False
    return True


def pod_usage(pod: Mapping[str, Any], *, now: float) -> ResourceList:
    """`PodUsageFunc`: what a pod counts (always its object count; compute resources while charged)."""
    out: ResourceList = {"count/pods": ONE}
    if not pod_is_charged(pod, now=now):
        return out
    requests = podresources.pod_requests(pod, use_status=True)
    limits = podresources.pod_limits(pod, use_status=True)
    return rl.add(out, compute_usage(requests, limits))


class PodEvaluator(Evaluator):
    def __init__(self) -> None:
        super().__init__("", "pods")

    def handles(self, *, operation: str, subresource: str, obj: Mapping[str, Any] | None,
                old: Mapping[str, Any] | None) -> bool:
        if subresource:
            return subresource == "resize" and operation == "UPDATE"  # a resize charges what grew
        if operation == "UPDATE" and obj is not None and old is not None:
            return is_terminating(old) != is_terminating(obj)
        return operation == "CREATE"

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        out: set[str] = set()
        for name in names:
            if name in POD_RESOURCES or name.startswith(POD_RESOURCE_PREFIXES) \
                    or is_extended_resource_name_for_quota(name):
                out.add(name)
        return sorted(out)

    def matches_scope(self, scope: Scope, obj: Mapping[str, Any]) -> bool:
        name = scope.scope_name
        if name == TERMINATING:
            return is_terminating(obj)
        if name == NOT_TERMINATING:
            return not is_terminating(obj)
        if name == BEST_EFFORT:
            return qos_class(obj) == "BestEffort"
        if name == NOT_BEST_EFFORT:
            return qos_class(obj) != "BestEffort"
        if name == PRIORITY_CLASS:
            pc = str(_dict(obj.get("spec")).get("priorityClassName") or "")
            if scope.operator == OP_EXISTS:
                return bool(pc)
            return scope.matches_values([pc])
        if name == CROSS_NAMESPACE_POD_AFFINITY:
            return uses_cross_namespace_pod_affinity(obj)
        return False

    def constraints(self, required: Sequence[str], obj: Mapping[str, Any]) -> str:
        """With cpu or memory quota, every container must state it (unless pod-level resources do)."""
        if podresources.is_pod_level_resources_set(obj):
            return ""
        wanted = set(required) & set(CONTAINER_REQUIRED)
        if not wanted:
            return ""
        missing: dict[str, set[str]] = {}
        spec = _dict(obj.get("spec"))
        for c in _dicts(spec.get("containers")) + _dicts(spec.get("initContainers")):
            res = _dict(c.get("resources"))
            have = compute_usage(rl.parse(res.get("requests")), rl.parse(res.get("limits")))
            for name in wanted - have.keys():
                missing.setdefault(name, set()).add(str(c.get("name") or ""))
        if not missing:
            return ""
        parts = [f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing)]
        return "must specify " + "; ".join(parts)

    def usage(self, obj: Mapping[str, Any], ctx: UsageContext) -> ResourceList:
        return pod_usage(obj, now=ctx.now)


# ---------------------------------------------------------------- services

SERVICE_RESOURCES = frozenset({"count/services", "services", "services.nodeports", "services.loadbalancers"})


def quota_service_type(svc: Mapping[str, Any]) -> str:
    """The service type when quota counts it specially (NodePort, LoadBalancer), else ""."""
    t = _dict(svc.get("spec")).get("type")
    return t if t in ("NodePort", "LoadBalancer") else ""


class ServiceEvaluator(Evaluator):
    def __init__(self) -> None:
        super().__init__("", "services")

    def handles(self, *, operation: str, subresource: str, obj: Mapping[str, Any] | None,
                old: Mapping[str, Any] | None) -> bool:
        return operation in ("CREATE", "UPDATE")  # a service's type can change

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return sorted({n for n in names if n in SERVICE_RESOURCES})

    def usage(self, obj: Mapping[str, Any], ctx: UsageContext) -> ResourceList:
        spec = _dict(obj.get("spec"))
        ports = len(spec.get("ports") or []) if isinstance(spec.get("ports"), list) else 0
        kind = quota_service_type(obj)
        return {
            "count/services": ONE, "services": ONE,
            "services.loadbalancers": ONE if kind == "LoadBalancer" else Quantity(0),
            "services.nodeports": Quantity.from_int(ports) if kind else Quantity(0),
        }


# ---------------------------------------------------------------- persistent volume claims

PVC_RESOURCES = ("persistentvolumeclaims", "requests.storage")
STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def storage_class_of(pvc: Mapping[str, Any]) -> str:
    """`GetPersistentVolumeClaimClass`: the beta annotation wins over `spec.storageClassName`."""
    annotations = _dict(_meta(pvc).get("annotations"))
    if STORAGE_CLASS_ANNOTATION in annotations:
        return str(annotations[STORAGE_CLASS_ANNOTATION])
    name = _dict(pvc.get("spec")).get("storageClassName")
    return name if isinstance(name, str) else ""


def volume_attributes_classes(pvc: Mapping[str, Any]) -> list[str]:
    """The VolumeAttributesClasses a claim asks for, has, or is being modified to."""
    status = _dict(pvc.get("status"))
    names = [_dict(pvc.get("spec")).get("volumeAttributesClassName"),
             status.get("currentVolumeAttributesClassName"),
             _dict(status.get("modifyVolumeStatus")).get("targetVolumeAttributesClassName")]
    return sorted({n for n in names if isinstance(n, str) and n})


def _round_up_bytes(q: Quantity) -> Quantity:
    whole = math.ceil(q.nanos / 1_000_000_000)
    return q if whole * 1_000_000_000 == q.nanos else Quantity.from_int(whole, q.format)


def pvc_storage(pvc: Mapping[str, Any]) -> Quantity | None:
    """The storage a claim counts: its request, or the larger size already allocated to it."""
    requested = rl.parse(_dict(_dict(pvc.get("spec")).get("resources")).get("requests")).get("storage")
    if requested is None:
        return None
    result = _round_up_bytes(requested)
    allocated = rl.parse(_dict(pvc.get("status")).get("allocatedResources")).get("storage")
    if allocated is not None and allocated > result:
        result = _round_up_bytes(allocated)
    return result


class PersistentVolumeClaimEvaluator(Evaluator):
    def __init__(self) -> None:
        super().__init__("", "persistentvolumeclaims")

    def handles(self, *, operation: str, subresource: str, obj: Mapping[str, Any] | None,
                old: Mapping[str, Any] | None) -> bool:
        return operation in ("CREATE", "UPDATE")  # claims can be resized

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        out: set[str] = set()
        for name in names:
            if name == self.count_name or name in PVC_RESOURCES or \
                    any(name.endswith(STORAGE_CLASS_SUFFIX + r) for r in PVC_RESOURCES):
                out.add(name)
        return sorted(out)

    def matches_scope(self, scope: Scope, obj: Mapping[str, Any]) -> bool:
        if scope.scope_name != VOLUME_ATTRIBUTES_CLASS:
            return False
        classes = volume_attributes_classes(obj)
        if scope.operator == OP_EXISTS:
            return bool(classes)
        return scope.matches_values(classes)

    def usage(self, obj: Mapping[str, Any], ctx: UsageContext) -> ResourceList:
        out: ResourceList = {"persistentvolumeclaims": ONE, self.count_name: ONE}
        sc = storage_class_of(obj)
        if sc:
            out[sc + STORAGE_CLASS_SUFFIX + "persistentvolumeclaims"] = ONE
        storage = pvc_storage(obj)
        if storage is not None:
            out["requests.storage"] = storage
            if sc:
                out[sc + STORAGE_CLASS_SUFFIX + "requests.storage"] = storage
        return out


# ---------------------------------------------------------------- resource claims

def claim_devices_by_class(claim: Mapping[str, Any]) -> ResourceList:
    """`<class>.deviceclass.resource.k8s.io/devices` for each device class a claim may take devices
    of, at most: ExactCount its count, All the allocation maximum, firstAvailable the largest
    alternative per class. Unknown allocation modes count nothing."""
    out: ResourceList = {}

    def devices(request: Mapping[str, Any]) -> tuple[str, Quantity]:
        name = str(request.get("deviceClassName") or "") + CLAIMS_PER_CLASS_SUFFIX
        mode = request.get("allocationMode")
        count = request.get("count")
        if mode == "ExactCount":
            n = count if isinstance(count, int) and not isinstance(count, bool) else 0
        elif mode == "All":
            n = ALLOCATION_RESULTS_MAX_SIZE
        else:
            n = 0
        return name, Quantity.from_int(n)

    for request in _dicts(_dict(_dict(claim.get("spec")).get("devices")).get("requests")):
        alternatives = _dicts(request.get("firstAvailable"))
        if alternatives:
            largest: ResourceList = {}
            for sub in alternatives:
                name, q = devices(sub)
                if name not in largest or q > largest[name]:
                    largest[name] = q
            rl.add_into(out, largest)
        elif isinstance(request.get("exactly"), Mapping):
            name, q = devices(request["exactly"])
            rl.add_into(out, {name: q})
    return out


class ResourceClaimEvaluator(Evaluator):
    def __init__(self, *, extended_resource_classes: Mapping[str, str] | None = None,
                 class_extended_names: Mapping[str, str] | None = None) -> None:
        super().__init__("resource.k8s.io", "resourceclaims")
        # Which requests.* names claims count depends on the DeviceClasses (extended resources).
        self.extended_resource_classes = dict(extended_resource_classes or {})
        self.class_extended_names = dict(class_extended_names or {})

    def handles(self, *, operation: str, subresource: str, obj: Mapping[str, Any] | None,
                old: Mapping[str, Any] | None) -> bool:
        return not subresource and operation in ("CREATE", "UPDATE")

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        out: set[str] = set()
        implicit = REQUESTS_PREFIX + DEVICE_CLASS_RESOURCE_PREFIX
        for name in names:
            if name == self.count_name or name.endswith(CLAIMS_PER_CLASS_SUFFIX):
                out.add(name)
                continue
            if name.startswith(implicit) and self.class_extended_names.get(name[len(implicit):]):
                out.add(name)
                continue
            if is_extended_resource_name_for_quota(name) and \
                    name[len(REQUESTS_PREFIX):] in self.extended_resource_classes:
                out.add(name)
        return sorted(out)

    def usage(self, obj: Mapping[str, Any], ctx: UsageContext) -> ResourceList:
        out: ResourceList = {self.count_name: ONE}
        rl.add_into(out, claim_devices_by_class(obj))
        self._add_extended(out, obj, ctx)
        return out

    @staticmethod
    def _add_extended(out: ResourceList, claim: Mapping[str, Any], ctx: UsageContext) -> None:
        """`requests.deviceclass.resource.kubernetes.io/<class>` and `requests.<extended name>` for
        the devices by class, less what the owning pod already counts (its special claim)."""
        pod_counts = _verified_pod_usage(claim, ctx)
        extended: ResourceList = {}
        for name, q in list(out.items()):
            if not name.endswith(CLAIMS_PER_CLASS_SUFFIX):
                continue
            cls = name[:-len(CLAIMS_PER_CLASS_SUFFIX)]
            if not cls:
                continue
            extended[REQUESTS_PREFIX + DEVICE_CLASS_RESOURCE_PREFIX + cls] = q
            ext = ctx.class_extended_names.get(cls)
            if ext:
                extended[REQUESTS_PREFIX + ext] = q
        for name, q in extended.items():
            counted = pod_counts.get(name)
            left = q if counted is None else rl.minus(q, counted)
            if left.sign() > 0:
                out[name] = left


def _verified_pod_usage(claim: Mapping[str, Any], ctx: UsageContext) -> ResourceList:
    """The usage of the pod a special extended-resource claim belongs to, when that pod (same uid)
    names this claim in its status, or names none and this is its first such claim."""
    meta = _meta(claim)
    if _dict(meta.get("annotations")).get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
        return {}
    ref = next((r for r in _dicts(meta.get("ownerReferences")) if r.get("controller") is True), None)
    if ref is None or ref.get("kind") != "Pod" or ref.get("apiVersion") != "v1":
        return {}
    namespace = str(meta.get("namespace") or "")
    pod = ctx.pod(namespace, str(ref.get("name") or ""))
    if pod is None or _meta(pod).get("uid") != ref.get("uid"):
        return {}
    status = _dict(pod.get("status")).get("extendedResourceClaimStatus")
    if isinstance(status, Mapping):
        if status.get("resourceClaimName") != meta.get("name"):
            return {}
    else:
        created = _parse_time(meta.get("creationTimestamp")) or 0.0
        for other in ctx.owned_claims(namespace, str(ref.get("uid") or "")):
            om = _meta(other)
            if om.get("name") == meta.get("name"):
                continue
            when = _parse_time(om.get("creationTimestamp")) or 0.0
            if when < created or (when == created and str(om.get("name") or "") < str(meta.get("name") or "")):
                return {}
    return pod_usage(pod, now=ctx.now)


# ---------------------------------------------------------------- registry

_FIXED: dict[tuple[str, str], Evaluator] = {}


def evaluator_for(group: str, resource: str, *, ctx: UsageContext | None = None) -> Evaluator:
    """The evaluator of a resource; object counting for those without one of their own. The
    resource-claim evaluator depends on the DeviceClasses in `ctx`."""
    if (group, resource) == ("resource.k8s.io", "resourceclaims"):
        return ResourceClaimEvaluator(
            extended_resource_classes=ctx.extended_resource_classes if ctx else None,
            class_extended_names=ctx.class_extended_names if ctx else None)
    if not _FIXED:
        for ev in (PodEvaluator(), ServiceEvaluator(), PersistentVolumeClaimEvaluator()):
            _FIXED[(ev.group, ev.resource)] = ev
    found = _FIXED.get((group, resource))
    if found is None:
        found = Evaluator(group, resource, alias=LEGACY_COUNT_ALIASES.get((group, resource), ""))
        _FIXED[(group, resource)] = found
    return found


def is_ignored(group: str, resource: str) -> bool:
    return (group, resource) in IGNORED
