"""The registry of served resources: one entry per kind, the single source for routing,
discovery, storage keys, OpenAPI and printing.

Pure data; no I/O. Scopes, short names and categories follow upstream
(`../shared/reference/kubectl-compat.md` §2).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import msgspec

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUB_VERBS = ("get", "patch", "update")


# Subresources whose writes change part of the object they belong to (the rest comes from the stored
# object): `status`, a CertificateSigningRequest's `approval` conditions, a Pod's
# `ephemeralcontainers` and the container resources a Pod's `resize` changes.
PARTIAL_WRITES = ("status", "approval", "ephemeralcontainers", "resize")


class Subresource(msgspec.Struct, frozen=True, kw_only=True):
    name: str  # "status" | "scale" | "binding" | "approval" | "ephemeralcontainers" | "resize" ...
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
    # Whether the kind tracks metadata.generation (set to 1 on create, bumped when the spec changes), as
    # kinds with a spec/status split do. Kinds without (ConfigMap, Secret, Event...) have no generation.
    has_spec: bool = True
    # False for resources that are not objects in the event log: create-only reviews (TokenReview,
    # SubjectAccessReview...), `bindings`, the computed `componentstatuses`.
    stored: bool = True
    # (group, plural) of the resource this kind is another version of: its objects are that
    # resource's, converted on the way in and out (`cp.conversions`), as kube-apiserver serves one
    # stored resource in several versions (events.k8s.io/v1 Events are core Events).
    storage_of: tuple[str, ...] = ()
    # What a CustomResourceDefinition says of this served version (`cp.crd.custom.CustomVersion`): its
    # schema, printer columns, subresource paths. None for built-in kinds.
    custom: Any = None
    # Whether a server serves it without `--runtime-config` (`cp.runtimeconfig`): the built-in beta and
    # alpha versions upstream leaves off (`OPTIONAL`) are not.
    enabled_by_default: bool = True
    # Upstream's prerelease lifecycle of the version (`zz_generated.prerelease-lifecycle.go`): the
    # release (major, minor) it is deprecated in and the one it is removed in; () when it has none.
    deprecated: tuple[int, ...] = ()
    removed: tuple[int, ...] = ()
    # The group/version and kind upstream's lifecycle names in its place (`APILifecycleReplacement`),
    # `admissionregistration.k8s.io/v1 MutatingAdmissionPolicy`; "" when it names none.
    replacement: str = ""
    # The feature gate an optional version also needs (`cp.features`), as upstream's storage serves
    # scheduling.k8s.io/v1alpha3 only with GenericWorkload on; "" for none.
    gate: str = ""

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        return self.group_version

    @property
    def list_kind(self) -> str:
        if self.custom is not None and self.custom.list_kind:  # a definition may name its own
            return str(self.custom.list_kind)
        return self.kind + "List"

    @property
    def protobuf(self) -> bool:
        """Whether its objects are served and read as Kubernetes protobuf: built-in kinds are (cp.protobuf
        has their messages); the sandbox's own kinds are not, as custom resources upstream."""
        return self.group != SIM_GROUP and self.custom is None

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

SERVED: tuple[ResourceKind, ...] = (
    # The resources a default 1.37 kube-apiserver serves (docs/api.md), in its discovery order (groups
    # by APIService priority, resources by name). `stored=False`: computed or create-only reviews.
    # v1
    ResourceKind(group="", version="v1", kind="Binding", plural="bindings", singular="binding", namespaced=True, verbs=("create",), has_spec=False, stored=False),
    ResourceKind(group="", version="v1", kind="ComponentStatus", plural="componentstatuses", singular="componentstatus", namespaced=False, short_names=("cs",), verbs=("get", "list"), has_spec=False, stored=False),
    ResourceKind(group="", version="v1", kind="ConfigMap", plural="configmaps", singular="configmap", namespaced=True, short_names=("cm",), has_spec=False),
    ResourceKind(group="", version="v1", kind="Endpoints", plural="endpoints", singular="endpoints", namespaced=True, short_names=("ep",), has_spec=False),
    ResourceKind(group="", version="v1", kind="Event", plural="events", singular="event", namespaced=True, short_names=("ev",), has_spec=False),
    ResourceKind(group="", version="v1", kind="LimitRange", plural="limitranges", singular="limitrange", namespaced=True, short_names=("limits",), has_spec=False),
    ResourceKind(group="", version="v1", kind="Namespace", plural="namespaces", singular="namespace", namespaced=False, short_names=("ns",), subresources=(Subresource(name="finalize", kind="Namespace", verbs=("update",)), _status("Namespace"),), verbs=("create", "delete", "get", "list", "patch", "update", "watch")),
    ResourceKind(group="", version="v1", kind="Node", plural="nodes", singular="node", namespaced=False, short_names=("no",), subresources=(_status("Node"),)),
    ResourceKind(group="", version="v1", kind="PersistentVolumeClaim", plural="persistentvolumeclaims", singular="persistentvolumeclaim", namespaced=True, short_names=("pvc",), subresources=(_status("PersistentVolumeClaim"),), has_spec=False),
    ResourceKind(group="", version="v1", kind="PersistentVolume", plural="persistentvolumes", singular="persistentvolume", namespaced=False, short_names=("pv",), subresources=(_status("PersistentVolume"),), has_spec=False),
    ResourceKind(group="", version="v1", kind="Pod", plural="pods", singular="pod", namespaced=True, short_names=("po",), categories=("all",), subresources=(Subresource(name="binding", kind="Binding", verbs=("create",)), Subresource(name="attach", kind="PodAttachOptions", verbs=("create", "get")), Subresource(name="ephemeralcontainers", kind="Pod"), Subresource(name="eviction", kind="Eviction", group="policy", version="v1", verbs=("create",)), Subresource(name="exec", kind="PodExecOptions", verbs=("create", "get")), Subresource(name="log", kind="Pod", verbs=("get",)), Subresource(name="portforward", kind="PodPortForwardOptions", verbs=("create", "get")), Subresource(name="resize", kind="Pod"), _status("Pod"),)),
    ResourceKind(group="", version="v1", kind="PodTemplate", plural="podtemplates", singular="podtemplate", namespaced=True, has_spec=False),
    ResourceKind(group="", version="v1", kind="ReplicationController", plural="replicationcontrollers", singular="replicationcontroller", namespaced=True, short_names=("rc",), categories=("all",), subresources=(_scale(), _status("ReplicationController"),)),
    ResourceKind(group="", version="v1", kind="ResourceQuota", plural="resourcequotas", singular="resourcequota", namespaced=True, short_names=("quota",), subresources=(_status("ResourceQuota"),), has_spec=False),
    ResourceKind(group="", version="v1", kind="Secret", plural="secrets", singular="secret", namespaced=True, has_spec=False),
    ResourceKind(group="", version="v1", kind="ServiceAccount", plural="serviceaccounts", singular="serviceaccount", namespaced=True, short_names=("sa",), subresources=(Subresource(name="token", kind="TokenRequest", group="authentication.k8s.io", version="v1", verbs=("create",)),), has_spec=False),
    ResourceKind(group="", version="v1", kind="Service", plural="services", singular="service", namespaced=True, short_names=("svc",), categories=("all",), subresources=(_status("Service"),)),
    # apiregistration.k8s.io/v1
    ResourceKind(group="apiregistration.k8s.io", version="v1", kind="APIService", plural="apiservices", singular="apiservice", namespaced=False, categories=("api-extensions",), subresources=(_status("APIService"),), has_spec=False),
    # apps/v1
    ResourceKind(group="apps", version="v1", kind="ControllerRevision", plural="controllerrevisions", singular="controllerrevision", namespaced=True, has_spec=False),
    ResourceKind(group="apps", version="v1", kind="DaemonSet", plural="daemonsets", singular="daemonset", namespaced=True, short_names=("ds",), categories=("all",), subresources=(_status("DaemonSet"),)),
    ResourceKind(group="apps", version="v1", kind="Deployment", plural="deployments", singular="deployment", namespaced=True, short_names=("deploy",), categories=("all",), subresources=(_scale(), _status("Deployment"),)),
    ResourceKind(group="apps", version="v1", kind="ReplicaSet", plural="replicasets", singular="replicaset", namespaced=True, short_names=("rs",), categories=("all",), subresources=(_scale(), _status("ReplicaSet"),)),
    ResourceKind(group="apps", version="v1", kind="StatefulSet", plural="statefulsets", singular="statefulset", namespaced=True, short_names=("sts",), categories=("all",), subresources=(_scale(), _status("StatefulSet"),)),
    # events.k8s.io/v1: core Events in their newer shape
    ResourceKind(group="events.k8s.io", version="v1", kind="Event", plural="events", singular="event", namespaced=True, short_names=("ev",), has_spec=False, storage_of=("", "events")),
    # authentication.k8s.io/v1
    ResourceKind(group="authentication.k8s.io", version="v1", kind="SelfSubjectReview", plural="selfsubjectreviews", singular="selfsubjectreview", namespaced=False, verbs=("create",), has_spec=False, stored=False),
    ResourceKind(group="authentication.k8s.io", version="v1", kind="TokenReview", plural="tokenreviews", singular="tokenreview", namespaced=False, verbs=("create",), has_spec=False, stored=False),
    # authorization.k8s.io/v1
    ResourceKind(group="authorization.k8s.io", version="v1", kind="LocalSubjectAccessReview", plural="localsubjectaccessreviews", singular="localsubjectaccessreview", namespaced=True, verbs=("create",), has_spec=False, stored=False),
    ResourceKind(group="authorization.k8s.io", version="v1", kind="SelfSubjectAccessReview", plural="selfsubjectaccessreviews", singular="selfsubjectaccessreview", namespaced=False, verbs=("create",), has_spec=False, stored=False),
    ResourceKind(group="authorization.k8s.io", version="v1", kind="SelfSubjectRulesReview", plural="selfsubjectrulesreviews", singular="selfsubjectrulesreview", namespaced=False, verbs=("create",), has_spec=False, stored=False),
    ResourceKind(group="authorization.k8s.io", version="v1", kind="SubjectAccessReview", plural="subjectaccessreviews", singular="subjectaccessreview", namespaced=False, verbs=("create",), has_spec=False, stored=False),
    # autoscaling/v2
    ResourceKind(group="autoscaling", version="v2", kind="HorizontalPodAutoscaler", plural="horizontalpodautoscalers", singular="horizontalpodautoscaler", namespaced=True, short_names=("hpa",), categories=("all",), subresources=(_status("HorizontalPodAutoscaler"),)),
    # autoscaling/v1: the v2 objects (v2 stays the preferred version), CPU utilization only
    ResourceKind(group="autoscaling", version="v1", kind="HorizontalPodAutoscaler", plural="horizontalpodautoscalers", singular="horizontalpodautoscaler", namespaced=True, short_names=("hpa",), categories=("all",), subresources=(_status("HorizontalPodAutoscaler"),), storage_of=("autoscaling", "horizontalpodautoscalers")),
    # batch/v1
    ResourceKind(group="batch", version="v1", kind="CronJob", plural="cronjobs", singular="cronjob", namespaced=True, short_names=("cj",), categories=("all",), subresources=(_status("CronJob"),)),
    ResourceKind(group="batch", version="v1", kind="Job", plural="jobs", singular="job", namespaced=True, categories=("all",), subresources=(_status("Job"),)),
    # certificates.k8s.io/v1
    ResourceKind(group="certificates.k8s.io", version="v1", kind="CertificateSigningRequest", plural="certificatesigningrequests", singular="certificatesigningrequest", namespaced=False, short_names=("csr",), subresources=(Subresource(name="approval", kind="CertificateSigningRequest"), _status("CertificateSigningRequest")), has_spec=False),
    ResourceKind(group="certificates.k8s.io", version="v1", kind="ClusterTrustBundle", plural="clustertrustbundles", singular="clustertrustbundle", namespaced=False, has_spec=False),
    ResourceKind(group="certificates.k8s.io", version="v1", kind="PodCertificateRequest", plural="podcertificaterequests", singular="podcertificaterequest", namespaced=True, subresources=(_status("PodCertificateRequest"),)),
    # networking.k8s.io/v1
    ResourceKind(group="networking.k8s.io", version="v1", kind="IngressClass", plural="ingressclasses", singular="ingressclass", namespaced=False),
    ResourceKind(group="networking.k8s.io", version="v1", kind="Ingress", plural="ingresses", singular="ingress", namespaced=True, short_names=("ing",), subresources=(_status("Ingress"),)),
    ResourceKind(group="networking.k8s.io", version="v1", kind="IPAddress", plural="ipaddresses", singular="ipaddress", namespaced=False, short_names=("ip",), has_spec=False),
    ResourceKind(group="networking.k8s.io", version="v1", kind="NetworkPolicy", plural="networkpolicies", singular="networkpolicy", namespaced=True, short_names=("netpol",)),
    ResourceKind(group="networking.k8s.io", version="v1", kind="ServiceCIDR", plural="servicecidrs", singular="servicecidr", namespaced=False, subresources=(_status("ServiceCIDR"),), has_spec=False),
    # policy/v1
    ResourceKind(group="policy", version="v1", kind="PodDisruptionBudget", plural="poddisruptionbudgets", singular="poddisruptionbudget", namespaced=True, short_names=("pdb",), subresources=(_status("PodDisruptionBudget"),)),
    # rbac.authorization.k8s.io/v1
    ResourceKind(group=RBAC_GROUP, version="v1", kind="ClusterRoleBinding", plural="clusterrolebindings", singular="clusterrolebinding", namespaced=False, has_spec=False),
    ResourceKind(group=RBAC_GROUP, version="v1", kind="ClusterRole", plural="clusterroles", singular="clusterrole", namespaced=False, has_spec=False),
    ResourceKind(group=RBAC_GROUP, version="v1", kind="RoleBinding", plural="rolebindings", singular="rolebinding", namespaced=True, has_spec=False),
    ResourceKind(group=RBAC_GROUP, version="v1", kind="Role", plural="roles", singular="role", namespaced=True, has_spec=False),
    # storage.k8s.io/v1
    ResourceKind(group="storage.k8s.io", version="v1", kind="CSIDriver", plural="csidrivers", singular="csidriver", namespaced=False),
    ResourceKind(group="storage.k8s.io", version="v1", kind="CSINode", plural="csinodes", singular="csinode", namespaced=False, subresources=(_status("CSINode"),), has_spec=False),
    ResourceKind(group="storage.k8s.io", version="v1", kind="CSIStorageCapacity", plural="csistoragecapacities", singular="csistoragecapacity", namespaced=True, has_spec=False),
    ResourceKind(group="storage.k8s.io", version="v1", kind="StorageClass", plural="storageclasses", singular="storageclass", namespaced=False, short_names=("sc",), has_spec=False),
    ResourceKind(group="storage.k8s.io", version="v1", kind="VolumeAttachment", plural="volumeattachments", singular="volumeattachment", namespaced=False, subresources=(_status("VolumeAttachment"),), has_spec=False),
    ResourceKind(group="storage.k8s.io", version="v1", kind="VolumeAttributesClass", plural="volumeattributesclasses", singular="volumeattributesclass", namespaced=False, short_names=("vac",), has_spec=False),
    # admissionregistration.k8s.io/v1
    ResourceKind(group="admissionregistration.k8s.io", version="v1", kind="MutatingAdmissionPolicy", plural="mutatingadmissionpolicies", singular="mutatingadmissionpolicy", namespaced=False, categories=("api-extensions",)),
    ResourceKind(group="admissionregistration.k8s.io", version="v1", kind="MutatingAdmissionPolicyBinding", plural="mutatingadmissionpolicybindings", singular="mutatingadmissionpolicybinding", namespaced=False, categories=("api-extensions",)),
    ResourceKind(group="admissionregistration.k8s.io", version="v1", kind="MutatingWebhookConfiguration", plural="mutatingwebhookconfigurations", singular="mutatingwebhookconfiguration", namespaced=False, categories=("api-extensions",)),
    ResourceKind(group="admissionregistration.k8s.io", version="v1", kind="ValidatingAdmissionPolicy", plural="validatingadmissionpolicies", singular="validatingadmissionpolicy", namespaced=False, categories=("api-extensions",), subresources=(_status("ValidatingAdmissionPolicy"),)),
    ResourceKind(group="admissionregistration.k8s.io", version="v1", kind="ValidatingAdmissionPolicyBinding", plural="validatingadmissionpolicybindings", singular="validatingadmissionpolicybinding", namespaced=False, categories=("api-extensions",)),
    ResourceKind(group="admissionregistration.k8s.io", version="v1", kind="ValidatingWebhookConfiguration", plural="validatingwebhookconfigurations", singular="validatingwebhookconfiguration", namespaced=False, categories=("api-extensions",)),
    # apiextensions.k8s.io/v1
    ResourceKind(group="apiextensions.k8s.io", version="v1", kind="CustomResourceDefinition", plural="customresourcedefinitions", singular="customresourcedefinition", namespaced=False, short_names=("crd", "crds"), categories=("api-extensions",), subresources=(_status("CustomResourceDefinition"),)),
    # scheduling.k8s.io/v1
    ResourceKind(group="scheduling.k8s.io", version="v1", kind="PriorityClass", plural="priorityclasses", singular="priorityclass", namespaced=False, short_names=("pc",), has_spec=False),
    # coordination.k8s.io/v1
    ResourceKind(group="coordination.k8s.io", version="v1", kind="Lease", plural="leases", singular="lease", namespaced=True, has_spec=False),
    # node.k8s.io/v1
    ResourceKind(group="node.k8s.io", version="v1", kind="RuntimeClass", plural="runtimeclasses", singular="runtimeclass", namespaced=False, has_spec=False),
    # discovery.k8s.io/v1
    ResourceKind(group="discovery.k8s.io", version="v1", kind="EndpointSlice", plural="endpointslices", singular="endpointslice", namespaced=True),
    # resource.k8s.io/v1
    ResourceKind(group="resource.k8s.io", version="v1", kind="DeviceClass", plural="deviceclasses", singular="deviceclass", namespaced=False),
    ResourceKind(group="resource.k8s.io", version="v1", kind="DeviceTaintRule", plural="devicetaintrules", singular="devicetaintrule", namespaced=False, subresources=(_status("DeviceTaintRule"),)),
    ResourceKind(group="resource.k8s.io", version="v1", kind="ResourceClaim", plural="resourceclaims", singular="resourceclaim", namespaced=True, subresources=(_status("ResourceClaim"),)),
    ResourceKind(group="resource.k8s.io", version="v1", kind="ResourceClaimTemplate", plural="resourceclaimtemplates", singular="resourceclaimtemplate", namespaced=True),
    ResourceKind(group="resource.k8s.io", version="v1", kind="ResourceSlice", plural="resourceslices", singular="resourceslice", namespaced=False),
    # flowcontrol.apiserver.k8s.io/v1
    ResourceKind(group="flowcontrol.apiserver.k8s.io", version="v1", kind="FlowSchema", plural="flowschemas", singular="flowschema", namespaced=False, subresources=(_status("FlowSchema"),)),
    ResourceKind(group="flowcontrol.apiserver.k8s.io", version="v1", kind="PriorityLevelConfiguration", plural="prioritylevelconfigurations", singular="prioritylevelconfiguration", namespaced=False, subresources=(_status("PriorityLevelConfiguration"),)),
    # storagemigration.k8s.io/v1
    ResourceKind(group="storagemigration.k8s.io", version="v1", kind="StorageVersionMigration", plural="storageversionmigrations", singular="storageversionmigration", namespaced=False, subresources=(_status("StorageVersionMigration"),)),
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

# The kinds whose objects the event log holds, one per resource; the versions served from another's
# storage are only in `SERVED` (routing and discovery: `lookup`, `group_versions`, `kinds_in`).
KINDS: tuple[ResourceKind, ...] = tuple(k for k in SERVED if not k.storage_of)

# Built-in kinds served only while a feature gate is on (`cp.features`), as kube-apiserver serves a
# beta or alpha API version only when enabled: (gate, kind). A `Registry(features=...)` serves them
# beside `SERVED`; the module-level lookups never do.
GATED: tuple[tuple[str, ResourceKind], ...] = (
    # scheduling.k8s.io/v1beta1 (new in 1.37; GenericWorkload)
    ("GenericWorkload", ResourceKind(group="scheduling.k8s.io", version="v1beta1", kind="PodGroup",
                                     plural="podgroups", singular="podgroup", namespaced=True,
                                     subresources=(_status("PodGroup"),))),
    ("GenericWorkload", ResourceKind(group="scheduling.k8s.io", version="v1beta1", kind="Workload",
                                     plural="workloads", singular="workload", namespaced=True)),
    # resource.k8s.io/v1alpha3 (alpha; KEP-5677): a stored kind of its own (no v1 version), served only
    # while DRAResourcePoolStatus is on and `--runtime-config` enables the version, as upstream's storage
    # needs both (`enabled_by_default=False`).
    ("DRAResourcePoolStatus", ResourceKind(group="resource.k8s.io", version="v1alpha3",
                                           kind="ResourcePoolStatusRequest", plural="resourcepoolstatusrequests",
                                           singular="resourcepoolstatusrequest", namespaced=False,
                                           subresources=(_status("ResourcePoolStatusRequest"),),
                                           # its strategy sets no metadata.generation
                                           has_spec=False,
                                           enabled_by_default=False, deprecated=(1, 39), removed=(1, 42))),
)


def _dra(version: str, kind: str, plural: str, *, namespaced: bool, status: bool = False,
         deprecated: tuple[int, ...], removed: tuple[int, ...], default: bool = False) -> ResourceKind:
    return ResourceKind(group="resource.k8s.io", version=version, kind=kind, plural=plural,
                        singular=kind.lower(), namespaced=namespaced,
                        subresources=(_status(kind),) if status else (),
                        storage_of=("resource.k8s.io", plural), enabled_by_default=default,
                        deprecated=deprecated, removed=removed)


def _other(group: str, version: str, kind: str, plural: str, *, namespaced: bool = False, status: bool = False,
           deprecated: tuple[int, ...] = (), removed: tuple[int, ...] = (), replaced: bool = False,
           categories: tuple[str, ...] = (), has_spec: bool = True, gate: str = "") -> ResourceKind:
    """An optional version of the stored `group`/`plural`; `replaced`: upstream names the group's v1
    kind as its replacement."""
    return ResourceKind(group=group, version=version, kind=kind, plural=plural, singular=kind.lower(),
                        namespaced=namespaced, categories=categories,
                        subresources=(_status(kind),) if status else (), has_spec=has_spec,
                        storage_of=(group, plural), enabled_by_default=False, deprecated=deprecated,
                        removed=removed, replacement=f"{group}/v1 {kind}" if replaced else "", gate=gate)


# The built-in versions a 1.37 kube-apiserver has compiled in but does not serve by default (beta and
# alpha APIs are off upstream), each served from its stored version's objects by conversion
# (`cp.conversions`); `--runtime-config` switches them on (`Registry(runtime=...)`). In each group's
# version priority (a beta before an alpha, higher numbers first): discovery lists them in this order
# after the group's default versions.
OPTIONAL: tuple[ResourceKind, ...] = (
    # resource.k8s.io/v1beta2 (deprecated in 1.36, DeviceTaintRule new in 1.36)
    _dra("v1beta2", "DeviceClass", "deviceclasses", namespaced=False, deprecated=(1, 36), removed=(1, 39)),
    _dra("v1beta2", "DeviceTaintRule", "devicetaintrules", namespaced=False, status=True,
         deprecated=(1, 39), removed=(1, 42)),
    _dra("v1beta2", "ResourceClaim", "resourceclaims", namespaced=True, status=True,
         deprecated=(1, 36), removed=(1, 39)),
    _dra("v1beta2", "ResourceClaimTemplate", "resourceclaimtemplates", namespaced=True,
         deprecated=(1, 36), removed=(1, 39)),
    _dra("v1beta2", "ResourceSlice", "resourceslices", namespaced=False, deprecated=(1, 36), removed=(1, 39)),
    # resource.k8s.io/v1beta1 (deprecated in 1.35): flat requests and `basic` devices
    _dra("v1beta1", "DeviceClass", "deviceclasses", namespaced=False, deprecated=(1, 35), removed=(1, 38)),
    _dra("v1beta1", "ResourceClaim", "resourceclaims", namespaced=True, status=True,
         deprecated=(1, 35), removed=(1, 38)),
    _dra("v1beta1", "ResourceClaimTemplate", "resourceclaimtemplates", namespaced=True,
         deprecated=(1, 35), removed=(1, 38)),
    _dra("v1beta1", "ResourceSlice", "resourceslices", namespaced=False, deprecated=(1, 35), removed=(1, 38)),
    # resource.k8s.io/v1alpha3 (alpha): DeviceTaintRule
    _dra("v1alpha3", "DeviceTaintRule", "devicetaintrules", namespaced=False, status=True,
         deprecated=(1, 36), removed=(1, 39)),
    # admissionregistration.k8s.io/v1beta1 and v1alpha1: MutatingAdmissionPolicy(Binding), v1's shape
    _other("admissionregistration.k8s.io", "v1beta1", "MutatingAdmissionPolicy", "mutatingadmissionpolicies",
           deprecated=(1, 37), removed=(1, 40), replaced=True, categories=("api-extensions",)),
    _other("admissionregistration.k8s.io", "v1beta1", "MutatingAdmissionPolicyBinding",
           "mutatingadmissionpolicybindings", deprecated=(1, 37), removed=(1, 40), replaced=True,
           categories=("api-extensions",)),
    _other("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicy", "mutatingadmissionpolicies",
           deprecated=(1, 35), removed=(1, 38), categories=("api-extensions",)),
    _other("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicyBinding",
           "mutatingadmissionpolicybindings", deprecated=(1, 35), removed=(1, 38), categories=("api-extensions",)),
    # certificates.k8s.io/v1beta1: ClusterTrustBundle and PodCertificateRequest
    _other("certificates.k8s.io", "v1beta1", "ClusterTrustBundle", "clustertrustbundles", deprecated=(1, 37),
           removed=(1, 40), replaced=True, has_spec=False),
    _other("certificates.k8s.io", "v1beta1", "PodCertificateRequest", "podcertificaterequests", namespaced=True,
           status=True, deprecated=(1, 37), removed=(1, 40), replaced=True),
    # scheduling.k8s.io/v1alpha3: Workload and PodGroup in v1beta1's shape (also needs GenericWorkload;
    # no prerelease lifecycle upstream, so no warning)
    _other("scheduling.k8s.io", "v1alpha3", "PodGroup", "podgroups", namespaced=True, status=True,
           gate="GenericWorkload"),
    _other("scheduling.k8s.io", "v1alpha3", "Workload", "workloads", namespaced=True, gate="GenericWorkload"),
    # storagemigration.k8s.io/v1beta1: StorageVersionMigration
    _other("storagemigration.k8s.io", "v1beta1", "StorageVersionMigration", "storageversionmigrations",
           status=True, deprecated=(1, 37), removed=(1, 40), replaced=True),
)

# The release whose API this is (deprecation warnings: `ResourceKind.deprecated`).
RELEASE = (1, 37)


def deprecation_warning(kind: ResourceKind) -> str:
    """Upstream's warning for a request of a deprecated version (`deprecation.WarningMessage`), or ""
    while `kind` is not deprecated in this release."""
    if not kind.deprecated or tuple(kind.deprecated) > RELEASE:
        return ""
    text = f"{kind.group_version} {kind.kind} is deprecated in v{kind.deprecated[0]}.{kind.deprecated[1]}+"
    if kind.removed:
        text += f", unavailable in v{kind.removed[0]}.{kind.removed[1]}+"
    if kind.replacement:
        text += f"; use {kind.replacement}"
    return text


def builtin_group_versions() -> list[tuple[str, str]]:
    """Every built-in group/version a server has, served by default or not (`--runtime-config`'s keys)."""
    return list(dict.fromkeys([*group_versions(), *((k.group, k.version) for _g, k in GATED),
                               *((k.group, k.version) for k in OPTIONAL)]))


_BY_PATH: dict[tuple[str, str, str], ResourceKind] = {(k.group, k.version, k.plural): k for k in SERVED}
_BY_GR: dict[tuple[str, str], ResourceKind] = {(k.group, k.plural): k for k in KINDS}
_BY_KIND: dict[tuple[str, str], ResourceKind] = {(k.group, k.kind): k for k in KINDS}


def gated_kind(group: str, plural: str) -> ResourceKind:
    """The `GATED` kind of `group`/`plural` (for clients of a server that serves it). Raises KeyError."""
    for _gate, kind in GATED:
        if kind.group == group and kind.plural == plural:
            return kind
    raise KeyError(f"{plural}.{group}")


def lookup(group: str, version: str, plural: str) -> ResourceKind | None:
    return _BY_PATH.get((group, version, plural))


def by_group_resource(group: str, plural: str) -> ResourceKind | None:
    return _BY_GR.get((group, plural))


def by_kind(group: str, kind: str) -> ResourceKind | None:
    return _BY_KIND.get((group, kind))


def storage_kind(kind: ResourceKind) -> ResourceKind:
    """The kind whose stored objects `kind` serves: itself, or the one `storage_of` names."""
    if not kind.storage_of:
        return kind
    group, plural = kind.storage_of
    return _BY_GR[(group, plural)]


def group_versions() -> list[tuple[str, str]]:
    """Served (group, version) pairs in a stable order, core first; a group's preferred version
    first."""
    seen: list[tuple[str, str]] = []
    for k in SERVED:
        gv = (k.group, k.version)
        if gv not in seen:
            seen.append(gv)
    return seen


def kinds_in(group: str, version: str) -> list[ResourceKind]:
    return [k for k in SERVED if k.group == group and k.version == version]


class Registry:
    """The resources one server serves: the built-in ones above and the custom resources its
    CustomResourceDefinitions define (`set_custom`), as kube-apiserver's handler chain consults the
    built-in REST storage and then apiextensions-apiserver's CRD handler.

    Built-in lookups cost one dict probe, as the module functions; `revision` moves on every change of
    the custom resources, so documents built from the registry (discovery, OpenAPI) can be cached per
    revision (`cached`)."""

    def __init__(self, *, features: Any = None, runtime: Any = None) -> None:
        from cp import features as gates
        from cp import runtimeconfig

        # The feature gates the server runs with (`cp.features.FeatureGates`; None: the defaults).
        self.features: gates.FeatureGates = features if features is not None else gates.DEFAULT
        # The API versions `--runtime-config` switches on or off (`cp.runtimeconfig`; None: the defaults).
        self.runtime: runtimeconfig.RuntimeConfig = runtime if runtime is not None else runtimeconfig.DEFAULT
        # The built-in kinds served beside `SERVED`: the gated ones (`GATED`) whose gate is on, and the
        # versions off by default (`OPTIONAL`) the runtime config switches on.
        # A gated kind of a version off by default (`enabled_by_default=False`) needs both.
        gated = tuple(k for gate, k in GATED if self.features.enabled(gate))
        self._gated: tuple[ResourceKind, ...] = tuple(k for k in gated if k.enabled_by_default)
        # The (group, version, plural) of default kinds the runtime config switches off (not routed,
        # discovered or documented); empty without one, so a default server does no work per kind.
        self._off: frozenset[tuple[str, str, str]] = frozenset()
        if not self.runtime.empty:
            # A group's versions are discovered in the order their kinds come here (kube's version
            # priority): the gated default versions, the optional ones, then gated optional ones.
            ordered = (*(k for k in gated if k.enabled_by_default), *OPTIONAL,
                       *(k for k in gated if not k.enabled_by_default))
            self._gated = tuple(k for k in ordered if self._runtime_enabled(k)
                                and (not k.gate or self.features.enabled(k.gate)))
            self._off = frozenset((k.group, k.version, k.plural) for k in SERVED if not self._runtime_enabled(k))
        self._custom: dict[str, tuple[ResourceKind, ...]] = {}  # CRD name -> its served versions
        self._path: dict[tuple[str, str, str], ResourceKind] = {}
        self._gr: dict[tuple[str, str], ResourceKind] = {}
        self._kind: dict[tuple[str, str], ResourceKind] = {}
        self.revision = 0
        self._cache: dict[Any, Any] = {}
        self._index()

    def _runtime_enabled(self, kind: ResourceKind) -> bool:
        return bool(self.runtime.enabled(group=kind.group, version=kind.version, plural=kind.plural,
                                         default=kind.enabled_by_default))

    def _index(self) -> None:
        extra = [*self._gated, *(k for ks in self._custom.values() for k in ks)]
        self._path = {(k.group, k.version, k.plural): k for k in extra}
        self._gr = {(k.group, k.plural): k for k in extra if not k.storage_of}
        self._kind = {(k.group, k.kind): k for k in self._gr.values()}

    # -------------------------------------------------------------- custom resources

    def set_custom(self, name: str, kinds: tuple[ResourceKind, ...]) -> None:
        """Serve `kinds` (a CRD's served versions, its storage version the one without `storage_of`)
        for the CRD `name`, replacing what it served before; an empty tuple stops serving them."""
        if self._custom.get(name, ()) == kinds:
            return
        if kinds:
            self._custom[name] = kinds
        else:
            self._custom.pop(name, None)
        self._index()
        self.revision += 1
        self._cache.clear()

    def custom(self, name: str) -> tuple[ResourceKind, ...]:
        return self._custom.get(name, ())

    def custom_kinds(self) -> list[ResourceKind]:
        """The served versions of every custom resource."""
        return [k for ks in self._custom.values() for k in ks]

    def cached(self, key: Any, build: Any) -> Any:
        """`build()` once per registry revision and `key` (documents built from the registry)."""
        try:
            return self._cache[key]
        except KeyError:
            value = self._cache[key] = build()
            return value

    # -------------------------------------------------------------- lookups

    def lookup(self, group: str, version: str, plural: str) -> ResourceKind | None:
        if self._off and (group, version, plural) in self._off:
            return None
        return _BY_PATH.get((group, version, plural)) or (self._path.get((group, version, plural))
                                                          if self._path else None)

    def by_group_resource(self, group: str, plural: str) -> ResourceKind | None:
        return _BY_GR.get((group, plural)) or self._gr.get((group, plural))

    def by_kind(self, group: str, kind: str) -> ResourceKind | None:
        return _BY_KIND.get((group, kind)) or self._kind.get((group, kind))

    def storage_kind(self, kind: ResourceKind) -> ResourceKind:
        if not kind.storage_of:
            return kind
        group, plural = kind.storage_of
        found = self.by_group_resource(group, plural)
        if found is None:  # the CRD stopped serving it meanwhile
            return kind
        return found

    def equivalents(self, kind: ResourceKind) -> tuple[ResourceKind, ...]:
        """`kind` and the other served versions of its stored resource (upstream's
        EquivalentResourceMapper, for admission's `matchPolicy: Equivalent`)."""
        def build() -> tuple[ResourceKind, ...]:
            storage = self.storage_kind(kind)
            return (kind, *(k for k in self.served() if k is not kind and k != kind
                            and self.storage_kind(k) == storage))

        found: tuple[ResourceKind, ...] = self.cached(("equivalents", kind.group, kind.version, kind.plural), build)
        return found

    def gated_kinds(self) -> tuple[ResourceKind, ...]:
        """The built-in kinds served because their feature gate is on (`GATED`)."""
        return self._gated

    def off_kinds(self) -> tuple[ResourceKind, ...]:
        """The default kinds the runtime config switches off."""
        return tuple(k for k in SERVED if (k.group, k.version, k.plural) in self._off) if self._off else ()

    def off_group_versions(self) -> set[tuple[str, str]]:
        """The default group/versions the runtime config switches some or all kinds of off."""
        return {(g, v) for g, v, _p in self._off}

    def served(self) -> list[ResourceKind]:
        builtin = [k for k in SERVED if (k.group, k.version, k.plural) not in self._off] if self._off else SERVED
        return [*builtin, *self._gated, *self.custom_kinds()] if self._path else list(builtin)

    def kinds(self) -> list[ResourceKind]:
        """The kinds whose objects the event log holds, one per resource."""
        return [*KINDS, *self._gr.values()] if self._path else list(KINDS)

    def group_versions(self) -> list[tuple[str, str]]:
        """As `group_versions()`, custom groups after the built-in ones with each CRD's versions in
        kube's version priority (a GA version before a beta before an alpha, higher numbers first)."""
        if not self._path and not self._off:
            return group_versions()
        found: list[tuple[str, str]] = self.cached("group_versions", self._group_versions)
        return found

    def _group_versions(self) -> list[tuple[str, str]]:
        seen = group_versions()
        if self._off:  # a version whose every kind is switched off is not served
            seen = [gv for gv in seen if kinds_in(*gv) and any(
                (k.group, k.version, k.plural) not in self._off for k in kinds_in(*gv))]
        for k in self._gated:  # a built-in group's other versions after its preferred one
            gv = (k.group, k.version)
            if gv not in seen:
                last = max((i for i, (g, _v) in enumerate(seen) if g == k.group), default=len(seen) - 1)
                seen.insert(last + 1, gv)
        extra: dict[str, set[str]] = {}
        for k in self.custom_kinds():
            if (k.group, k.version) not in seen:
                extra.setdefault(k.group, set()).add(k.version)
        for group in sorted(extra):
            seen.extend((group, v) for v in sorted(extra[group], key=version_priority))
        return seen

    def kinds_in(self, group: str, version: str) -> list[ResourceKind]:
        builtin = kinds_in(group, version)
        if self._off:
            builtin = [k for k in builtin if (k.group, k.version, k.plural) not in self._off]
        if not self._path:
            return builtin
        builtin += sorted((k for k in self._gated if k.group == group and k.version == version),
                          key=lambda k: k.plural)
        return builtin + sorted((k for k in self.custom_kinds() if k.group == group and k.version == version),
                                key=lambda k: k.plural)


_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key of kube's version priority (`version.CompareKubeAwareVersionStrings`): GA before beta
    before alpha, higher numbers first, then versions that do not look like kube versions by name."""
    m = _VERSION_RE.match(version)
    if m is None:
        return (3, 0, 0, version)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    return ({None: 0, "beta": 1, "alpha": 2}[stage], -major, -minor, "")


# ---------------------------------------------------------------- names as users write them
# An object is written `RESOURCE/NAMESPACE/NAME` (namespaced) or `RESOURCE/NAME` (cluster-scoped), where
# RESOURCE is the plural, group-qualified outside the core group: `pods/default/web`,
# `deployments.apps/default/web`, `namespaces/kube-system`, `resourceclaims.resource.k8s.io/ml/gpu`.


def resolve_resource(text: str, *, kinds: Sequence[ResourceKind] | None = None) -> ResourceKind:
    """A served kind from how kubectl users name it: plural, singular, short name or kind, optionally
    group-qualified (`pods`, `po`, `Pod`, `deployments.apps`, `resourceclaim.resource.k8s.io`,
    `widgets.example.com`). `kinds`: the stored kinds to choose from (default the built-in ones; a
    server's or a log's `Registry.kinds()` adds its custom resources). Raises ValueError naming the
    known resources."""
    candidates = KINDS if kinds is None else kinds
    word, _, group = text.strip().partition(".")
    low = word.lower()
    found = [k for k in candidates
             if (not group or k.group == group)
             and low in (k.plural, k.singular, k.kind.lower(), *k.short_names)]
    if len(found) > 1:  # the same word in several groups: core wins, as kubectl's preference order
        found = [k for k in found if k.group == ""] or [k for k in found if k.custom is None] or found[:1]
    if not found:
        known = ", ".join(sorted(resource_name(k) for k in candidates))
        raise ValueError(f'unknown resource "{text}" (known: {known})')
    return found[0]


def resource_name(kind: ResourceKind) -> str:
    """`pods`, `deployments.apps`: the plural, group-qualified outside the core group."""
    return kind.group_resource


def _gr(group: str, resource: str) -> str:
    return f"{resource}.{group}" if group else resource


def ref(group: str, resource: str, namespace: str, name: str) -> str:
    """`pods/default/web`, `namespaces/kube-system`."""
    gr = _gr(group, resource)
    return f"{gr}/{namespace}/{name}" if namespace else f"{gr}/{name}"


def parse_ref(text: str, *, namespace: str | None = None,
              kinds: Sequence[ResourceKind] | None = None) -> tuple[ResourceKind, str, str]:
    """(kind, namespace, name) of `RESOURCE/NAME` (namespace from `namespace`, default "default") or
    `RESOURCE/NAMESPACE/NAME`; RESOURCE as `resolve_resource` reads it among `kinds`. Raises
    ValueError."""
    parts = text.strip().split("/")
    if len(parts) not in (2, 3) or not all(parts):
        raise ValueError(f'"{text}" is not RESOURCE/NAME or RESOURCE/NAMESPACE/NAME (e.g. pods/default/web)')
    kind = resolve_resource(parts[0], kinds=kinds)
    if len(parts) == 3:
        if not kind.namespaced:
            raise ValueError(f"{resource_name(kind)} are cluster-scoped: write {parts[0]}/{parts[2]}")
        if namespace and namespace != parts[1]:
            raise ValueError(f'"{text}" names namespace {parts[1]}, but -n says {namespace}')
        return kind, parts[1], parts[2]
    return kind, (namespace or "default") if kind.namespaced else "", parts[1]


def kind_prefix(kind: ResourceKind) -> str:
    """kubectl's `TYPE/` name prefix when several types are printed: `pod`, `deployment.apps`."""
    return f"{kind.singular}.{kind.group}" if kind.group else kind.singular
