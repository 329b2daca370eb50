"""Extended resources backed by DRA (KEP-5004): the special claim the scheduler builds for a pod.

Follows the kube-scheduler DRA plugin (`extendeddynamicresources.go`) and the device-class
extended-resource cache:

- a DeviceClass is reachable as extended resource `spec.extendedResourceName` and always as
  `deviceclass.resource.kubernetes.io/<class>`; when several classes claim the same explicit
  name, the most recently created one wins, ties going to the smallest name;
- for a node, a DRA-backed resource the node does not advertise in `status.allocatable` (or
  advertises as 0) is allocated through DRA; a resource that is neither DRA-backed nor
  allocatable on the node makes the pod not fit that node;
- one request per (container, resource): name `container-<i>-request-<j>` where `i` indexes
  `initContainers + containers` and `j` is the resource's position in the container's sorted
  request names; `exactly: {deviceClassName, allocationMode: ExactCount, count}`. Regular
  containers and restartable (sidecar) init containers each get their own devices; a plain init
  container first reuses the devices of long-lived containers at or after its position and only
  requests the rest, and of all plain init containers only the largest request is kept (they run
  one at a time); requests are sorted by name;
- the claim: `generateName: <pod>-extended-resources-`, annotation
  `resource.kubernetes.io/extended-resource-claim: "true"`, owned by the pod (controller).
  `mappings` is what goes into `pod.status.extendedResourceClaimStatus.requestMappings`.
Pure; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from cp.quantity import Quantity, QuantityError

__all__ = [
    "DEVICE_CLASS_RESOURCE_PREFIX",
    "EXTENDED_RESOURCE_CLAIM_ANNOTATION",
    "ExtendedResourceClaim",
    "ExtendedResourceUnfit",
    "build_extended_resource_claim",
    "extended_resource_class_mapping",
    "find_extended_resource_claim",
    "is_dra_extended_resource_name",
    "pod_extended_resource_claim_status",
]

EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
DEVICE_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"

_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)\Z")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


class ExtendedResourceClaim(msgspec.Struct, kw_only=True):
    """The claim to create (and allocate together with the pod's other claims) and the
    container → request mappings for the pod status."""

    claim: dict[str, Any]
    mappings: list[dict[str, str]]


class ExtendedResourceUnfit(Exception):
    """The pod requests an extended resource this node neither advertises nor backs with DRA."""

    def __init__(self, resource: str) -> None:
        super().__init__(f"cannot fit resource {resource}")
        self.resource = resource


def _is_qualified_name(name: str) -> bool:
    parts = name.split("/")
    if len(parts) > 2:
        return False
    local = parts[-1]
    if not local or len(local) > 63 or not _QUALIFIED_NAME.match(local):
        return False
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
            return False
    return True


def _is_extended_resource_name(name: str) -> bool:
    """`v1helper.IsExtendedResourceName`: prefixed, not in the kubernetes.io namespace, and
    valid as `requests.<name>` quota key."""
    if "/" not in name or "kubernetes.io/" in name:
        return False
    if name.startswith("requests."):
        return False
    return _is_qualified_name("requests." + name)


def is_dra_extended_resource_name(name: str) -> bool:
    return _is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_RESOURCE_PREFIX)


def extended_resource_class_mapping(classes: Mapping[str, Mapping[str, Any]] | Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Extended resource name → DeviceClass name."""
    items = list(classes.values()) if isinstance(classes, Mapping) else list(classes)
    explicit: dict[str, tuple[str, str]] = {}  # resource -> (creationTimestamp, class name)
    mapping: dict[str, str] = {}
    for cls in items:
        meta = cls.get("metadata") or {}
        name = meta.get("name") or ""
        ext = (cls.get("spec") or {}).get("extendedResourceName")
        if ext:
            created = meta.get("creationTimestamp") or ""
            cur = explicit.get(ext)
            # Newer wins; on equal timestamps the smaller name wins. RFC 3339 strings in UTC
            # ("Z") order like the instants they denote.
            if cur is None or created > cur[0] or (created == cur[0] and name < cur[1]):
                explicit[ext] = (created, name)
    for ext, (_, name) in explicit.items():
        mapping[ext] = name
    for cls in items:
        name = (cls.get("metadata") or {}).get("name") or ""
        mapping[DEVICE_CLASS_RESOURCE_PREFIX + name] = name
    return mapping


def _int_quantity(value: Any) -> int | None:
    """`Quantity.AsInt64`, or None when fractional / unparsable."""
    try:
        q = Quantity.parse(value) if isinstance(value, str) else Quantity.parse(str(value))
    except QuantityError:
        return None
    return q.as_int64()


def _positive(value: Any) -> bool:
    try:
        q = Quantity.parse(value) if isinstance(value, str) else Quantity.parse(str(value))
    except QuantityError:
        return False
    return q.nanos > 0


def find_extended_resource_claim(pod: Mapping[str, Any], claims: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The special claim an earlier scheduling attempt created for this pod, if any."""
    meta = pod.get("metadata") or {}
    for c in claims:
        cm = c.get("metadata") or {}
        if (cm.get("annotations") or {}).get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
            continue
        for ref in cm.get("ownerReferences") or []:
            if ref.get("name") == meta.get("name") and ref.get("controller") and ref.get("uid") == meta.get("uid"):
                return c
    return None


def build_extended_resource_claim(
    pod: Mapping[str, Any],
    classes: Mapping[str, Mapping[str, Any]] | Sequence[Mapping[str, Any]],
    *,
    node: Mapping[str, Any] | None = None,
) -> ExtendedResourceClaim | None:
    """The extended-resource claim for this pod on this node, or None when nothing needs DRA.

    Without a node, every DRA-backed extended resource is allocated through DRA. Raises
    `ExtendedResourceUnfit` when a requested extended resource is neither advertised by the node
    nor backed by a DeviceClass.
    """
    mapping = extended_resource_class_mapping(classes)
    spec = pod.get("spec") or {}
    init = list(spec.get("initContainers") or [])
    regular = list(spec.get("containers") or [])
    containers = init + regular

    requested: set[str] = set()
    for c in containers:
        for name, value in (((c.get("resources") or {}).get("requests")) or {}).items():
            if _positive(value):
                requested.add(name)
    for name, value in (spec.get("overhead") or {}).items():
        if _positive(value):
            requested.add(name)
    if not any(is_dra_extended_resource_name(r) and r in mapping for r in requested):
        return None

    allocatable = ((node or {}).get("status") or {}).get("allocatable") or {}
    via_dra: list[str] = []
    for name in sorted(requested):
        if not is_dra_extended_resource_name(name):
            continue
        have = name in allocatable
        amount = _int_quantity(allocatable[name]) if have else 0
        if name in mapping and not amount:
            via_dra.append(name)
        elif not have:
            raise ExtendedResourceUnfit(name)
    if not via_dra:
        return None

    long_lived: list[int] = []
    short_lived: list[int] = []
    for i, c in enumerate(containers):
        sidecar = c.get("restartPolicy") == "Always"
        if i < len(init) and not sidecar:
            short_lived.append(i)
        else:
            long_lived.append(i)

    requests: list[dict[str, Any]] = []
    mappings: list[dict[str, str]] = []
    for resource in via_dra:
        class_name = mapping[resource]
        long_requests: list[dict[str, Any] | None] = [None] * len(containers)
        long_mappings: list[dict[str, str]] = []
        for i in long_lived:
            r, m = _container_request(i, containers[i], resource, class_name, [])
            long_requests[i] = r
            long_mappings.extend(m)
        biggest: dict[str, Any] | None = None
        short_names: list[str] = []
        short_mappings: list[dict[str, str]] = []
        for i in short_lived:
            r, m = _container_request(i, containers[i], resource, class_name, long_requests[i:])
            if r is not None:
                short_names.append(r["name"])
                if biggest is None or biggest["exactly"]["count"] < r["exactly"]["count"]:
                    biggest = r
            short_mappings.extend(m)
        if biggest is not None and len(set(short_names)) > 1:
            replace = set(short_names) - {biggest["name"]}
            for mapping_entry in short_mappings:
                if mapping_entry["requestName"] in replace:
                    mapping_entry["requestName"] = biggest["name"]
        if biggest is not None:
            requests.append(biggest)
        requests.extend(r for r in long_requests if r is not None)
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    requests.sort(key=lambda r: r["name"])

    meta = pod.get("metadata") or {}
    claim: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "namespace": meta.get("namespace") or "",
            "generateName": f"{meta.get('name', '')}-extended-resources-",
            "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta.get("name", ""),
                                 "uid": meta.get("uid", ""), "controller": True}],
        },
        "spec": {"devices": {"requests": requests}},
    }
    return ExtendedResourceClaim(claim=claim, mappings=mappings)


def _container_request(index: int, container: Mapping[str, Any], resource: str, class_name: str,
                       reusable: Sequence[dict[str, Any] | None]) -> tuple[dict[str, Any] | None, list[dict[str, str]]]:
    """One container's request for one resource (None when reusable devices suffice) and its mappings."""
    creqs = (container.get("resources") or {}).get("requests") or {}
    if resource not in creqs:
        return None, []
    wanted = _int_quantity(creqs[resource])
    if not wanted:
        return None, []
    cname = container.get("name", "")
    mappings: list[dict[str, str]] = []
    total = 0
    for r in reusable:
        if r is None:
            continue
        total += r["exactly"]["count"]
        mappings.append({"containerName": cname, "resourceName": resource, "requestName": r["name"]})
        if total >= wanted:
            return None, mappings
    keys = sorted(creqs)
    name = f"container-{index}-request-{keys.index(resource)}"
    request = {"name": name, "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount",
                                         "count": wanted - total}}
    mappings.append({"containerName": cname, "resourceName": resource, "requestName": name})
    return request, mappings


def pod_extended_resource_claim_status(claim_name: str, mappings: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """The value for `pod.status.extendedResourceClaimStatus`."""
    return {"requestMappings": [dict(m) for m in mappings], "resourceClaimName": claim_name}
