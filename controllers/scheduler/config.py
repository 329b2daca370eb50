"""The scheduler's names, defaults (upstream's KubeSchedulerConfiguration and DynamicResourcesArgs
defaults) and the kinds it watches."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from cp.dra.allocator import allocator_features
from cp.features import DEFAULT

NAME = "scheduler"
COMPONENT = "default-scheduler"  # Event source, field manager and the schedulerName we serve
SCHEDULER_NAME = "default-scheduler"
FINALIZER = "resource.kubernetes.io/delete-protection"
RESERVED_FOR_MAX = 256  # ResourceClaimReservedForMaxSize
FILTER_TIMEOUT = 10.0  # DynamicResourcesArgs.filterTimeout default (seconds, per node)
BINDING_TIMEOUT = 600.0  # DynamicResourcesArgs.bindingTimeout default (seconds, binding conditions)
ON_LOOP_SLICE = 0.05  # longest an allocation runs on the event loop before moving to a thread
YIELD_EVERY = 0.02  # a scheduling cycle gives the event loop a turn at least this often
INITIAL_BACKOFF = 1.0  # podInitialBackoffSeconds
MAX_BACKOFF = 10.0  # podMaxBackoffSeconds
UNSCHEDULABLE_MAX = 300.0  # podMaxInUnschedulablePodsDuration
DEFAULT_WORKERS = 16
EVENT_REPEAT_INTERVAL = 60.0  # seconds: an identical FailedScheduling Event is written at most this often
CONFLICT_RETRIES = 5  # retry.DefaultRetry steps
FEATURES = allocator_features(gates=DEFAULT)  # a default 1.37 cluster's: its alpha features are off
TERMINAL = ("Succeeded", "Failed")
DRA_PLUGIN = "DynamicResources"
NODE_ALLOCATABLE_STATUSES = "nodeAllocatableResourceClaimStatuses"  # pod status (DRANodeAllocatableResources)
EXTENDED_CLAIM_PLACEHOLDER = "<extended-resources>"  # the extended-resource claim's name until it exists

PODS = clients.resolve("pods")
NODES = clients.resolve("nodes")
NAMESPACES = clients.resolve("namespaces")
CLAIMS = clients.resolve("resourceclaims.resource.k8s.io")
SLICES = clients.resolve("resourceslices.resource.k8s.io")
CLASSES = clients.resolve("deviceclasses.resource.k8s.io")
RULES = clients.resolve("devicetaintrules.resource.k8s.io")
# PodTopologySpread's default selector (`helper.DefaultSelector`): who selects a pod.
SERVICES = clients.resolve("services")
REPLICATION_CONTROLLERS = clients.resolve("replicationcontrollers")
REPLICA_SETS = clients.resolve("replicasets.apps")
STATEFUL_SETS = clients.resolve("statefulsets.apps")
PVCS = clients.resolve("persistentvolumeclaims")
PVS = clients.resolve("persistentvolumes")
STORAGE_CLASSES = clients.resolve("storageclasses.storage.k8s.io")
POD_GROUP_INDEX = "pod-group"


def by_pod_group(obj: Mapping[str, Any]) -> list[str]:
    """Index pods by `namespace/spec.schedulingGroup.podGroupName` (gang scheduling)."""
    spec = obj.get("spec")
    group = spec.get("schedulingGroup") if isinstance(spec, Mapping) else None
    name = group.get("podGroupName") if isinstance(group, Mapping) else None
    if not name:
        return []
    meta = obj.get("metadata")
    return [f"{meta.get('namespace') if isinstance(meta, Mapping) else ''}/{name}"]


POD_INDEXERS = {caches.CLAIM_NAME: caches.by_claim_name, POD_GROUP_INDEX: by_pod_group}
CLAIM_INDEXERS = {caches.OWNER_UID: caches.by_owner_uid}
