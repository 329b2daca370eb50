"""Builders for `cplane why` scenarios: a small cluster as plain dicts, and a Snapshot of it."""

from __future__ import annotations

from typing import Any

from cp.scheduling import explain

GPU = "gpu.example.com"
GPU_CLASS = "gpu"


def node(name: str, *, labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None,
         cpu: str = "8", memory: str = "32Gi", pods: str = "110", unschedulable: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": spec, "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}}}


def pod(name: str, *claims: str, namespace: str = "default", node_name: str = "", cpu: str | None = None,
        memory: str | None = None, node_selector: dict[str, str] | None = None,
        tolerations: list[dict[str, Any]] | None = None, phase: str = "Pending", owner: str = "",
        **spec: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    container: dict[str, Any] = {"name": "main", "image": "busybox"}
    if requests:
        container["resources"] = {"requests": requests}
    s: dict[str, Any] = {"containers": [container], "schedulerName": "default-scheduler"}
    if claims:
        s["resourceClaims"] = [{"name": c, "resourceClaimName": c} for c in claims]
    if node_name:
        s["nodeName"] = node_name
    if node_selector:
        s["nodeSelector"] = node_selector
    if tolerations:
        s["tolerations"] = tolerations
    s.update(spec)
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                    "uid": f"uid-{owner}", "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": s, "status": {"phase": phase}}


def device(name: str, **fields: Any) -> dict[str, Any]:
    attrs = fields.pop("attrs", None)
    d: dict[str, Any] = {"name": name, **fields}
    if attrs:
        d["attributes"] = {k: (v if isinstance(v, dict) else {"int": v} if isinstance(v, int) and not isinstance(v, bool)
                               else {"bool": v} if isinstance(v, bool) else {"string": v}) for k, v in attrs.items()}
    return d


def gpus(n: int, **fields: Any) -> list[dict[str, Any]]:
    return [device(f"gpu-{i}", **fields) for i in range(n)]


def rslice(name: str, node_name: str, *devices: dict[str, Any], driver: str = GPU, pool: str | None = None,
           generation: int = 1, count: int = 1, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"driver": driver, "pool": {"name": pool or node_name, "generation": generation,
                                                    "resourceSliceCount": count}}
    if node_name:
        s["nodeName"] = node_name
    else:
        s["allNodes"] = True
    if devices:
        s["devices"] = list(devices)
    s.update(spec)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name, "uid": f"uid-{name}", "generation": 1, "resourceVersion": "1"}, "spec": s}


def device_class(name: str = GPU_CLASS, expression: str | None = None, **spec: Any) -> dict[str, Any]:
    expr = expression if expression is not None else f'device.driver == "{GPU}"'
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expr}}], **spec}}


def request(name: str = "gpu", count: int = 1, cls: str = GPU_CLASS, *, selectors: list[str] | None = None,
            **exactly: Any) -> dict[str, Any]:
    e: dict[str, Any] = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count, **exactly}
    if selectors:
        e["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": e}


def claim(name: str, *requests: dict[str, Any], namespace: str = "default", constraints: list[dict[str, Any]] | None = None,
          allocated: list[tuple[str, str]] | None = None, reserved_for: str = "", driver: str = GPU) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests or [request()])}
    if constraints:
        devices["constraints"] = constraints
    c: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                         "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
                         "spec": {"devices": devices}}
    if allocated is not None:
        req = devices["requests"][0]["name"]
        c["status"] = {"allocation": {"devices": {"results": [
            {"request": req, "driver": driver, "pool": pool, "device": dev} for pool, dev in allocated]}}}
        if reserved_for:
            c["status"]["reservedFor"] = [{"resource": "pods", "name": reserved_for, "uid": f"uid-{reserved_for}"}]
    return c


def taint_rule(name: str, key: str, effect: str = "NoSchedule", *, device_name: str | None = None,
               pool: str | None = None) -> dict[str, Any]:
    sel: dict[str, Any] = {"driver": GPU}
    if pool:
        sel["pool"] = pool
    if device_name:
        sel["device"] = device_name
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name},
            "spec": {"deviceSelector": sel, "taint": {"key": key, "effect": effect}}}


def snapshot(*objects: dict[str, Any], revision: int = 1) -> explain.Snapshot:
    snap = explain.Snapshot(revision=revision)
    fields = {"Pod": "pods", "Node": "nodes", "ResourceClaim": "claims", "ResourceSlice": "slices",
              "DeviceClass": "classes", "DeviceTaintRule": "rules", "Namespace": "namespaces"}
    for obj in objects:
        getattr(snap, fields[obj["kind"]]).append(obj)
    if not snap.classes:
        snap.classes.append(device_class())
    return snap


def why(snap: explain.Snapshot, name: str = "web-0", **kw: Any) -> dict[str, Any]:
    return explain.explain_pod(snap, namespace="default", name=name, **kw)


def node_view(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(v for v in doc["nodes"] if v["node"] == name)


def request_view(doc: dict[str, Any], node_name: str, claim_name: str = "default/web-0-gpu",
                 request_name: str = "gpu") -> dict[str, Any]:
    v = node_view(doc, node_name)
    c = next(c for c in v["dra"]["claims"] if c["claim"] == claim_name)
    return next(r for r in c["requests"] if r["request"] == request_name)


def reasons(rv: dict[str, Any]) -> list[str]:
    return [r["reason"] for r in rv["rejections"]]
