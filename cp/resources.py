"""The registry of served resources: one entry per kind, the single source for routing,
discovery, storage keys, OpenAPI and printing.

Pure data; no I/O. Scopes, short names and categories follow upstream
(`../shared/reference/kubectl-compat.md` §2).
"""

from __future__ import annotations

import msgspec

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUB_VERBS = ("get", "patch", "update")


class Subresource(msgspec.Struct, frozen=True, kw_only=True):
    name: str  # "status" | "scale" | "binding"
    kind: str  # the kind its body carries
    group: str = ""  # group of that kind ("" = same as the parent)
    version: str = ""
    verbs: tuple[str, ...] = SUB_VERBS


class ResourceKind(msgspec.Struct, frozen=True, kw_only=True):
    group: str  # "" for core
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[Subresource, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    # Whether writes to the main resource ignore .status (true when a status subresource exists).
    # Kinds without spec/status split (ConfigMap, Event, Lease...) have no generation bumps.
    has_spec: bool = True

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        return self.group_version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def group_resource(self) -> str:
        """`deployments.apps`, `pods` — as upstream names a resource in messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def subresource(self, name: str) -> Subresource | None:
        for sub in self.subresources:
            if sub.name == name:
                return sub
        return None

    def path_prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"


def _status(kind: str) -> Subresource:
    return Subresource(name="status", kind=kind)


def _scale() -> Subresource:
    return Subresource(name="scale", kind="Scale", group="autoscaling", version="v1")


SIM_GROUP = "sim.cplane.dev"
RBAC_GROUP = "rbac.authorization.k8s.io"
SIM_VERSION = "v1alpha1"

KINDS: tuple[ResourceKind, ...] = (
    # core/v1
    ResourceKind(group="", version="v1", kind="Namespace", plural="namespaces", singular="namespace",
                 namespaced=False, short_names=("ns",), subresources=(_status("Namespace"),),
                 verbs=("create", "delete", "get", "list", "patch", "update", "watch")),
    ResourceKind(group="", version="v1", kind="Node", plural="nodes", singular="node", namespaced=False,
                 short_names=("no",), subresources=(_status("Node"),)),
    ResourceKind(group="", version="v1", kind="Pod", plural="pods", singular="pod", namespaced=True,
                 short_names=("po",), categories=("all",),
                 subresources=(_status("Pod"),
                               Subresource(name="binding", kind="Binding", verbs=("create",)))),
    ResourceKind(group="", version="v1", kind="Event", plural="events", singular="event", namespaced=True,
                 short_names=("ev",), has_spec=False),
    ResourceKind(group="", version="v1", kind="ConfigMap", plural="configmaps", singular="configmap",
                 namespaced=True, short_names=("cm",), has_spec=False),
    # apps/v1
    ResourceKind(group="apps", version="v1", kind="Deployment", plural="deployments", singular="deployment",
                 namespaced=True, short_names=("deploy",), categories=("all",),
                 subresources=(_status("Deployment"), _scale())),
    ResourceKind(group="apps", version="v1", kind="ReplicaSet", plural="replicasets", singular="replicaset",
                 namespaced=True, short_names=("rs",), categories=("all",),
                 subresources=(_status("ReplicaSet"), _scale())),
    # autoscaling/v2
    ResourceKind(group="autoscaling", version="v2", kind="HorizontalPodAutoscaler",
                 plural="horizontalpodautoscalers", singular="horizontalpodautoscaler", namespaced=True,
                 short_names=("hpa",), categories=("all",),
                 subresources=(_status("HorizontalPodAutoscaler"),)),
    # coordination.k8s.io/v1
    ResourceKind(group="coordination.k8s.io", version="v1", kind="Lease", plural="leases", singular="lease",
                 namespaced=True),
    # resource.k8s.io/v1
    ResourceKind(group="resource.k8s.io", version="v1", kind="DeviceClass", plural="deviceclasses",
                 singular="deviceclass", namespaced=False),
    ResourceKind(group="resource.k8s.io", version="v1", kind="ResourceClaim", plural="resourceclaims",
                 singular="resourceclaim", namespaced=True, subresources=(_status("ResourceClaim"),)),
    ResourceKind(group="resource.k8s.io", version="v1", kind="ResourceClaimTemplate",
                 plural="resourceclaimtemplates", singular="resourceclaimtemplate", namespaced=True),
    ResourceKind(group="resource.k8s.io", version="v1", kind="ResourceSlice", plural="resourceslices",
                 singular="resourceslice", namespaced=False),
    ResourceKind(group="resource.k8s.io", version="v1", kind="DeviceTaintRule", plural="devicetaintrules",
                 singular="devicetaintrule", namespaced=False, subresources=(_status("DeviceTaintRule"),)),
    # rbac.authorization.k8s.io/v1 (issue #10: authorization; evaluated by cp/rbac.py, enforced by api/auth/)
    ResourceKind(group=RBAC_GROUP, version="v1", kind="ClusterRole", plural="clusterroles",
                 singular="clusterrole", namespaced=False, has_spec=False),
    ResourceKind(group=RBAC_GROUP, version="v1", kind="ClusterRoleBinding", plural="clusterrolebindings",
                 singular="clusterrolebinding", namespaced=False, has_spec=False),
    ResourceKind(group=RBAC_GROUP, version="v1", kind="Role", plural="roles", singular="role",
                 namespaced=True, has_spec=False),
    ResourceKind(group=RBAC_GROUP, version="v1", kind="RoleBinding", plural="rolebindings",
                 singular="rolebinding", namespaced=True, has_spec=False),
    # sim.cplane.dev/v1alpha1: the sandbox's own kinds (no upstream schema)
    ResourceKind(group=SIM_GROUP, version=SIM_VERSION, kind="Clock", plural="clocks", singular="clock",
                 namespaced=False, has_spec=True),
    ResourceKind(group=SIM_GROUP, version=SIM_VERSION, kind="DeviceHealth", plural="devicehealths",
                 singular="devicehealth", namespaced=False, has_spec=True),
    # Metric sources of the metrics APIs (api/metrics_apis.py; HPA, issue #7).
    ResourceKind(group=SIM_GROUP, version=SIM_VERSION, kind="ExternalMetric", plural="externalmetrics",
                 singular="externalmetric", namespaced=True, has_spec=True),
    ResourceKind(group=SIM_GROUP, version=SIM_VERSION, kind="ObjectMetric", plural="objectmetrics",
                 singular="objectmetric", namespaced=True, has_spec=True),
    ResourceKind(group=SIM_GROUP, version=SIM_VERSION, kind="PodLoad", plural="podloads",
                 singular="podload", namespaced=True, has_spec=True),
)

_BY_PATH: dict[tuple[str, str, str], ResourceKind] = {(k.group, k.version, k.plural): k for k in KINDS}
_BY_GR: dict[tuple[str, str], ResourceKind] = {(k.group, k.plural): k for k in KINDS}
_BY_KIND: dict[tuple[str, str], ResourceKind] = {(k.group, k.kind): k for k in KINDS}


def lookup(group: str, version: str, plural: str) -> ResourceKind | None:
    return _BY_PATH.get((group, version, plural))


def by_group_resource(group: str, plural: str) -> ResourceKind | None:
    return _BY_GR.get((group, plural))


def by_kind(group: str, kind: str) -> ResourceKind | None:
    return _BY_KIND.get((group, kind))


def group_versions() -> list[tuple[str, str]]:
    """Served (group, version) pairs in a stable order, core first."""
    seen: list[tuple[str, str]] = []
    for k in KINDS:
        gv = (k.group, k.version)
        if gv not in seen:
            seen.append(gv)
    return seen


def kinds_in(group: str, version: str) -> list[ResourceKind]:
    return [k for k in KINDS if k.group == group and k.version == version]
