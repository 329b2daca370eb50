"""The node side of the fleet's fake DRA drivers, and what a container gets from its claims (issue #23).

**Fake drivers write CDI specs** as the upstream example driver (`kubernetes-sigs/dra-example-driver`)
does, into the node's CDI directory (`ROOT/<node>/cdi`, `controllers.fleet.nodedirs`):

- vendor `k8s.<driver>`, class `gpu`, `nic` or `device` (the driver's device groups' type; `device`
  when they differ), so GPUs of `gpu.example.com` are kind `k8s.gpu.example.com/gpu`;
- one spec per driver and node with device `common`: `KUBERNETES_NODE_NAME=<node>` and
  `DRA_RESOURCE_DRIVER_NAME=<driver>` (file `k8s.<driver>-<class>_common.json`);
- one spec per prepared claim (`k8s.<driver>-<class>_<claim uid>.json`), one CDI device per allocated
  device named `<claim uid>-<device>` (`-<shareID>` appended for a share of a shareable device), with
  `<CLASS>_DEVICE_<DEVICE>_RESOURCE_CLAIM=<claim uid>` and `DRA_ADMIN_ACCESS=<true|false>`, and for a
  GPU (or partition) `GPU_DEVICE_<n>=<device>` (`<n>`: the name after `<prefix>-`, upper case, `-` as
  `_`), `GPU_DEVICE_<n>_SHARING_STRATEGY`, `GPU_DEVICE_<n>_TIMESLICE_INTERVAL` or
  `GPU_DEVICE_<n>_PARTITION_COUNT`, and `GPU_DEVICE_<n>_MEMORY` / `_COMPUTE` for consumed capacity.
  The sharing comes from the claim's opaque `GpuConfig` for the driver (`gpu.resource.example.com`,
  class configs first, then the claim's, the last one naming the request winning), by default
  TimeSlicing with interval Default — as the example driver's default config.
- Each prepared device's CDI ids are `[<kind>=common, <kind>=<claim uid>-<device>]`, recorded with
  the device in the node's checkpoint (`NodeDir.record`). Unprepare removes the claim's spec and
  its checkpoint entry.

**What a container gets** (`container_edits`, `resolve`): as the kubelet's DRA manager does, the claims
named in the container's `resources.claims` (a `request` there keeps only the devices prepared for
that request), then the pod's extended-resource claim for the requests mapped to the container; the
CDI ids of their prepared devices come from the node's checkpoint and are resolved against its CDI
directory (`cp.cdi.Registry`; each id once, in order: every device repeats its driver's `common`). A
claim that is not prepared on the node (devices of drivers outside the fleet, which do not block a
simulated pod) contributes nothing and is marked so; a CDI id that does not resolve is a
`DevicesError` that says which, with why the spec files that did not load did not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import structlog

from controllers.fleet import nodedirs
from controllers.fleet import objects as objs
from controllers.fleet.model import Driver, group_prefix
from cp import cdi, quantity
from cp.dra import nodeops
from cp.objects import meta_of, spec_of, status_of

COMMON = "common"
GPU_CONFIG_GROUP = "gpu.resource.example.com"
GPU_CONFIG_KIND = "GpuConfig"
TIME_SLICING = "TimeSlicing"
SPACE_PARTITIONING = "SpacePartitioning"
_NON_WORD = re.compile(r"[^a-zA-Z0-9]+")

logger = structlog.get_logger("cplane.controllers.fleet.devices")


class DevicesError(ValueError):
    """What a container should get cannot be worked out (claim not prepared, CDI id unresolved)."""


# ---------------------------------------------------------------------- the fake drivers' CDI specs


def driver_class(driver: Driver) -> str:
    types = {g.type for g in driver.devices}
    if types == {"gpu"}:
        return "gpu"
    if types == {"nic"}:
        return "nic"
    return "device"


def vendor_of(driver: str) -> str:
    return f"k8s.{driver}"


def base_request(request: str) -> str:
    """A subrequest's result names `<request>/<subrequest>`; what the kubelet records is `<request>`."""
    return request.split("/", 1)[0]


def _gpu_env_id(driver: Driver, device: str) -> str | None:
    """`<n>` of GPU_DEVICE_<n> for a GPU (or partition) of the driver; None for other devices."""
    for g in driver.devices:
        prefix = group_prefix(g) + "-"
        if g.type == "gpu" and device.startswith(prefix):
            rest = device[len(prefix):]
            index = rest.split("-", 1)[0]
            if index.isdigit() and int(index) < g.count:
                return rest.replace("-", "_").upper()
    return None


class _Sharing(msgspec.Struct, kw_only=True):
    strategy: str = TIME_SLICING
    interval: str | None = None
    partition_count: int | None = None


def _sharing(config: Mapping[str, Any] | None) -> _Sharing:
    """The sharing of an opaque GpuConfig (normalized as the example driver does); the default
    config (TimeSlicing, Default) when there is none or it is not a GpuConfig we can read."""
    sharing = config.get("sharing") if isinstance(config, Mapping) else None
    if not isinstance(sharing, Mapping):
        return _Sharing(interval="Default")
    strategy = str(sharing.get("strategy") or TIME_SLICING)
    if strategy == SPACE_PARTITIONING:
        sp = sharing.get("spacePartitioningConfig")
        count = sp.get("partitionCount") if isinstance(sp, Mapping) else None
        return _Sharing(strategy=strategy, partition_count=count if isinstance(count, int) else 1)
    ts = sharing.get("timeSlicingConfig")
    interval = ts.get("interval") if isinstance(ts, Mapping) else None
    return _Sharing(strategy=strategy, interval=str(interval or "Default"))


def _gpu_config(claim: Mapping[str, Any], driver: str, request: str) -> Mapping[str, Any] | None:
    """The opaque GpuConfig that applies to a result of `request`: class configs, then the claim's,
    the last one for the driver naming the request (or no request) winning."""
    configs = ((status_of(claim).get("allocation") or {}).get("devices") or {}).get("config") or []
    ordered = ([c for c in configs if isinstance(c, Mapping) and c.get("source") == "FromClass"] +
               [c for c in configs if isinstance(c, Mapping) and c.get("source") != "FromClass"])
    chosen: Mapping[str, Any] | None = None
    for c in ordered:
        opaque = c.get("opaque")
        if not isinstance(opaque, Mapping) or opaque.get("driver") != driver:
            continue
        requests = c.get("requests") or []
        if requests and request not in requests and base_request(request) not in requests:
            continue
        params = opaque.get("parameters")
        if (isinstance(params, Mapping) and params.get("kind") == GPU_CONFIG_KIND
                and str(params.get("apiVersion") or "").split("/")[0] == GPU_CONFIG_GROUP):
            chosen = params
    return chosen


def _device_edits(*, claim: Mapping[str, Any], driver: Driver, class_: str, result: Mapping[str, Any]
                  ) -> cdi.ContainerEdits:
    uid = str(meta_of(claim).get("uid") or "")
    device = str(result.get("device") or "")
    key = _NON_WORD.sub("_", device).upper()
    env = [f"{class_.upper()}_DEVICE_{key}_RESOURCE_CLAIM={uid}",
           f"DRA_ADMIN_ACCESS={'true' if result.get('adminAccess') else 'false'}"]
    env_id = _gpu_env_id(driver, device)
    if env_id is not None:
        sharing = _sharing(_gpu_config(claim, driver.name, str(result.get("request") or "")))
        env.append(f"GPU_DEVICE_{env_id}={device}")
        env.append(f"GPU_DEVICE_{env_id}_SHARING_STRATEGY={sharing.strategy}")
        if sharing.strategy == TIME_SLICING:
            env.append(f"GPU_DEVICE_{env_id}_TIMESLICE_INTERVAL={sharing.interval}")
        elif sharing.strategy == SPACE_PARTITIONING:
            env.append(f"GPU_DEVICE_{env_id}_PARTITION_COUNT={sharing.partition_count}")
        consumed = result.get("consumedCapacity") or {}
        for name in ("memory", "compute"):
            if name in consumed:
                env.append(f"GPU_DEVICE_{env_id}_{name.upper()}={consumed[name]}")
    return cdi.ContainerEdits(env=env)


def _cdi_device_name(uid: str, result: Mapping[str, Any]) -> str:
    share = str(result.get("shareID") or "")
    device = str(result.get("device") or "")
    return f"{uid}-{device}-{share}" if share else f"{uid}-{device}"


def _spec(kind: str, devices: list[cdi.Device]) -> cdi.Spec:
    spec = cdi.Spec(kind=kind, devices=devices)
    spec.cdi_version = cdi.minimum_required_version(spec)
    return spec


def common_spec(*, node: str, driver: Driver) -> tuple[str, cdi.Spec]:
    """The driver's spec of device `common` on `node`: (file name, spec)."""
    class_ = driver_class(driver)
    spec = _spec(f"{vendor_of(driver.name)}/{class_}", [cdi.Device(name=COMMON, container_edits=cdi.ContainerEdits(
        env=[f"KUBERNETES_NODE_NAME={node}", f"DRA_RESOURCE_DRIVER_NAME={driver.name}"]))])
    return cdi.transient_spec_name(vendor_of(driver.name), class_, COMMON) + ".json", spec


def claim_spec(*, claim: Mapping[str, Any], driver: Driver, results: Sequence[Mapping[str, Any]]
               ) -> tuple[str, cdi.Spec, list[nodedirs.PreparedDevice]]:
    """The spec of one claim's devices of `driver` (file name, spec) and the devices as the
    kubelet records them (with their CDI ids)."""
    uid = str(meta_of(claim).get("uid") or "")
    class_ = driver_class(driver)
    vendor = vendor_of(driver.name)
    devices: list[cdi.Device] = []
    prepared: list[nodedirs.PreparedDevice] = []
    for r in results:
        name = _cdi_device_name(uid, r)
        devices.append(cdi.Device(name=name, container_edits=_device_edits(
            claim=claim, driver=driver, class_=class_, result=r)))
        prepared.append(nodedirs.PreparedDevice(
            request_names=(base_request(str(r.get("request") or "")),), pool_name=str(r.get("pool") or ""),
            device_name=str(r.get("device") or ""), share_id=str(r.get("shareID") or ""),
            cdi_device_ids=(cdi.qualified_name(vendor, class_, COMMON), cdi.qualified_name(vendor, class_, name))))
    spec = _spec(f"{vendor}/{class_}", devices)
    return cdi.transient_spec_name(vendor, class_, uid) + ".json", spec, prepared


class FakeDevices:
    """The fleet's fake drivers on the node side: CDI specs and the kubelet checkpoint per node."""

    def __init__(self, *, root: Path, plan: objs.Plan) -> None:
        self.root = root
        self.plan = plan
        # claim (namespace, name) -> the (node, uid, driver, spec file) it was prepared with
        self._prepared: dict[tuple[str, str], set[tuple[str, str, str, str]]] = {}

    def node_dir(self, node: str) -> nodedirs.NodeDir:
        return nodedirs.NodeDir(root=self.root, node=node)

    def prepare(self, *, claim: Mapping[str, Any], node: str, skip: Collection[str] = ()) -> None:
        """Write the specs of the claim's devices of the node's fake drivers and record them in the
        node's checkpoint (nothing is written when the checkpoint already has them). Drivers in
        `skip` are left to the real kubelet plugins registered on the node."""
        planned = self.plan.node(node)
        if planned is None:
            return
        meta = meta_of(claim)
        uid, ns, name = str(meta.get("uid") or ""), str(meta.get("namespace") or ""), str(meta.get("name") or "")
        results = [r for r in ((status_of(claim).get("allocation") or {}).get("devices") or {}).get("results") or []
                   if isinstance(r, Mapping) and r.get("pool") == node]
        nd = self.node_dir(node)
        have = nd.prepared().get(uid)
        no_prepare = nodeops.skipped(results, nodeops.PREPARE)  # DRAOptionalNodeOperations
        for driver in planned.pool.drivers:
            mine = [r for r in results if r.get("driver") == driver.name]
            if not mine or driver.name in skip or driver.name in no_prepare:
                continue
            file_name, spec, prepared = claim_spec(claim=claim, driver=driver, results=mine)
            self._prepared.setdefault((ns, name), set()).add((node, uid, driver.name, file_name))
            if have is not None and have.drivers.get(driver.name) == prepared and (nd.cdi / file_name).exists():
                continue
            common_name, common = common_spec(node=node, driver=driver)
            nodedirs.write_json_atomic(nd.cdi / common_name, cdi.encode_spec(common))
            nodedirs.write_json_atomic(nd.cdi / file_name, cdi.encode_spec(spec))
            nd.record(uid=uid, namespace=ns, name=name, driver=driver.name, devices=prepared)
            logger.debug("cdi_spec_written", node=node, namespace=ns, name=name, driver=driver.name,
                         file=file_name, devices=len(prepared))

    def unprepare(self, *, namespace: str, name: str, claim: Mapping[str, Any] | None = None,
                  aside: Callable[[str], Collection[str]] | None = None) -> None:
        """Remove what `prepare` wrote for the claim (from memory, or else from the claim's allocation,
        except for the drivers `aside(node)` names: a real plugin's, whose entries are its own)."""
        done = self._prepared.pop((namespace, name), set())
        if not done and claim is not None:
            uid = str(meta_of(claim).get("uid") or "")
            for r in ((status_of(claim).get("allocation") or {}).get("devices") or {}).get("results") or []:
                planned = self.plan.node(str(r.get("pool") or ""))
                if planned is None or not isinstance(r, Mapping):
                    continue
                for driver in planned.pool.drivers:
                    if driver.name == r.get("driver") and (aside is None or driver.name not in aside(planned.name)):
                        file_name = cdi.transient_spec_name(vendor_of(driver.name), driver_class(driver), uid) + ".json"
                        done.add((planned.name, uid, driver.name, file_name))
        for node, uid, driver_name, file_name in sorted(done):
            nd = self.node_dir(node)
            (nd.cdi / file_name).unlink(missing_ok=True)
            if uid in nd.prepared():
                nd.forget(uid=uid, driver=driver_name)
            logger.debug("cdi_spec_removed", node=node, namespace=namespace, name=name, driver=driver_name,
                         file=file_name)

    def sweep(self, *, node: str, live: Callable[[str, str, str], bool], aside: Collection[str] = ()) -> int:
        """At a kubelet's start: drop the fake drivers' specs and checkpoint entries of claims that are
        gone (`live(namespace, name, uid)` is False) — deleted while no kubelet ran. Returns how many."""
        planned = self.plan.node(node)
        if planned is None:
            return 0
        drivers = {d.name: d for d in planned.pool.drivers if d.name not in aside}
        nd = self.node_dir(node)
        swept = 0
        for uid, prepared in sorted(nd.prepared().items()):
            if live(prepared.namespace, prepared.name, uid):
                continue
            for driver_name in sorted(set(prepared.drivers) & set(drivers)):
                driver = drivers[driver_name]
                file_name = cdi.transient_spec_name(vendor_of(driver_name), driver_class(driver), uid) + ".json"
                (nd.cdi / file_name).unlink(missing_ok=True)
                nd.forget(uid=uid, driver=driver_name)
                swept += 1
                logger.debug("cdi_spec_swept", node=node, namespace=prepared.namespace, name=prepared.name,
                             driver=driver_name, file=file_name)
        return swept

    def prepared_claims(self) -> list[tuple[str, str]]:
        return sorted(self._prepared)


# ---------------------------------------------------------------------- what a container gets


class PreparedClaimDevice(msgspec.Struct, kw_only=True, rename="camel"):
    driver: str
    pool: str
    device: str
    share_id: str = ""
    cdi_device_ids: list[str] = msgspec.field(default_factory=list)


class ContainerClaim(msgspec.Struct, kw_only=True, rename="camel"):
    """One claim reference of a container: the pod's claim name, the request it is limited to (if
    any), the ResourceClaim it resolved to, and the prepared devices it contributes. `prepared` is
    false when the node's checkpoint has no entry for the claim: no driver on the node prepared it
    (its devices belong to drivers outside the fleet), so it contributes nothing."""

    name: str
    request: str = ""
    claim: str
    prepared: bool = True
    devices: list[PreparedClaimDevice] = msgspec.field(default_factory=list)


class ContainerDevices(msgspec.Struct, kw_only=True, rename="camel"):
    container: str
    claims: list[ContainerClaim] = msgspec.field(default_factory=list)
    cdi_device_ids: list[str] = msgspec.field(default_factory=list)
    spec_files: dict[str, str] = msgspec.field(default_factory=dict)  # CDI id -> the spec file it resolved in
    edits: cdi.ContainerEdits = msgspec.field(default_factory=cdi.ContainerEdits)


def _container(pod: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    spec = spec_of(pod)
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, Mapping) and c.get("name") == name:
                return c
    raise DevicesError(f"pod {meta_of(pod).get('name')} has no container {name!r}")


def _claim_name(pod: Mapping[str, Any], pod_claim: Mapping[str, Any]) -> str | None:
    """The ResourceClaim a pod claim names (as `resourceclaim.Name`): None when none was generated."""
    if pod_claim.get("resourceClaimName"):
        return str(pod_claim["resourceClaimName"])
    if pod_claim.get("resourceClaimTemplateName"):
        for s in status_of(pod).get("resourceClaimStatuses") or []:
            if isinstance(s, Mapping) and s.get("name") == pod_claim.get("name"):
                return str(s["resourceClaimName"]) if s.get("resourceClaimName") else None
        raise DevicesError(f"pod {meta_of(pod).get('name')}: claim for {pod_claim.get('name')!r} "
                           "has not been created yet")
    raise DevicesError(f"pod {meta_of(pod).get('name')}: claim {pod_claim.get('name')!r} names neither "
                       "a claim nor a template")


def _prepared_devices(claim: nodedirs.PreparedClaim, request: str) -> list[PreparedClaimDevice]:
    out: list[PreparedClaimDevice] = []
    for driver, devices in claim.drivers.items():
        for d in devices:
            if request and d.request_names and request not in d.request_names:
                continue
            out.append(PreparedClaimDevice(driver=driver, pool=d.pool_name, device=d.device_name,
                                           share_id=d.share_id, cdi_device_ids=list(d.cdi_device_ids)))
    return out


def _container_claim(prepared: nodedirs.PreparedClaim | None, *, name: str, request: str, claim: str
                     ) -> ContainerClaim:
    if prepared is None:
        return ContainerClaim(name=name, request=request, claim=claim, prepared=False)
    return ContainerClaim(name=name, request=request, claim=claim, devices=_prepared_devices(prepared, request))


def _nonzero(value: Any) -> bool:
    try:
        return quantity.parse(value) != 0
    except (ValueError, TypeError):
        return False


def resolve(*, node_dir: nodedirs.NodeDir, pod: Mapping[str, Any], container: str) -> ContainerDevices:
    """The claims, prepared devices, CDI ids and merged container edits of one container of `pod`
    on the node of `node_dir`. A claim the node's checkpoint does not have contributes nothing
    (`ContainerClaim.prepared` false); DevicesError when a CDI id does not resolve or the pod does
    not say which claim a template made."""
    c = _container(pod, container)
    ns = str(meta_of(pod).get("namespace") or "")
    by_name: dict[tuple[str, str], nodedirs.PreparedClaim] = {
        (p.namespace, p.name): p for p in node_dir.prepared().values()}
    out = ContainerDevices(container=container)
    refs = [r for r in (c.get("resources") or {}).get("claims") or [] if isinstance(r, Mapping)]
    for pod_claim in spec_of(pod).get("resourceClaims") or []:
        if not isinstance(pod_claim, Mapping):
            continue
        wanted = [r for r in refs if r.get("name") == pod_claim.get("name")]
        if not wanted:
            continue
        claim_name = _claim_name(pod, pod_claim)
        if claim_name is None:
            continue
        for ref in wanted:
            out.claims.append(_container_claim(by_name.get((ns, claim_name)), name=str(ref.get("name")),
                                               request=str(ref.get("request") or ""), claim=claim_name))
    extended = status_of(pod).get("extendedResourceClaimStatus")
    if isinstance(extended, Mapping) and extended.get("resourceClaimName"):
        claim_name = str(extended["resourceClaimName"])
        requests = (c.get("resources") or {}).get("requests") or {}
        for rm in extended.get("requestMappings") or []:
            if not isinstance(rm, Mapping) or rm.get("containerName") != container:
                continue
            if not _nonzero(requests.get(str(rm.get("resourceName") or ""), "0")):
                continue
            out.claims.append(_container_claim(by_name.get((ns, claim_name)), name=str(rm.get("resourceName")),
                                               request=str(rm.get("requestName") or ""), claim=claim_name))
    out.cdi_device_ids = list(dict.fromkeys(i for cc in out.claims for d in cc.devices for i in d.cdi_device_ids))
    if out.cdi_device_ids:
        registry = cdi.Registry.load([node_dir.cdi])
        try:
            out.edits = registry.container_edits(out.cdi_device_ids)
        except cdi.CDIError as exc:
            raise DevicesError(f"container {container} of pod {ns}/{meta_of(pod).get('name')} on node "
                               f"{node_dir.node}: {exc}") from None
        for device_id in out.cdi_device_ids:
            found = registry.device(device_id)
            if found is not None:
                out.spec_files[device_id] = found.path
    return out


def container_edits(*, node_dir: nodedirs.NodeDir, pod: Mapping[str, Any], container: str) -> cdi.ContainerEdits:
    """What the container gets from its claims' CDI devices (env, device nodes, mounts, hooks...)."""
    return resolve(node_dir=node_dir, pod=pod, container=container).edits


def pod_containers(pod: Mapping[str, Any]) -> list[str]:
    """The containers of a pod in the kubelet's start order: init containers, then app containers."""
    spec = spec_of(pod)
    return [str(c.get("name")) for key in ("initContainers", "containers")
            for c in spec.get(key) or [] if isinstance(c, Mapping)]
