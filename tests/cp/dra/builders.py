"""Small builders for DRA objects in their JSON (camelCase) dict form, for the allocator tests.

Defaults mirror the fixtures of upstream's shared allocator test table: driver `driver-a`, pool
`pool-1` with one slice at generation 1, node `node-1` in region `region-1` on planet `earth`.
"""

from __future__ import annotations

from typing import Any

ALL = "__all_nodes__"
PER_DEVICE = "__per_device__"

DRIVER_A, DRIVER_B = "driver-a", "driver-b"
CLASS_A, CLASS_B = "class-a", "class-b"


def node(name: str = "node-1", region: str = "region-1") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"region": region, "planet": "earth"}}}


def sel(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


def device_class(name: str = CLASS_A, driver: str = DRIVER_A, *, expression: str | None = None,
                 config: str | None = None, extended: str | None = None, created: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [sel(expression if expression is not None else f'device.driver == "{driver}"')]}
    if config is not None:
        spec["config"] = [{"opaque": opaque(driver, config)}]
    if extended is not None:
        spec["extendedResourceName"] = extended
    meta: dict[str, Any] = {"name": name}
    if created is not None:
        meta["creationTimestamp"] = created
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": meta, "spec": spec}


def classes(*items: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in items}


def opaque(driver: str, attribute: str) -> dict[str, Any]:
    return {"driver": driver, "parameters": {attribute: attribute + "Value"}}


def device(name: str, *, capacity: dict[str, str] | None = None, attrs: dict[str, Any] | None = None,
           **fields: Any) -> dict[str, Any]:
    """`attrs` values: int/bool/str scalars, ("version", "1.0.0"), lists, or raw attribute dicts."""
    d: dict[str, Any] = {"name": name}
    if attrs:
        d["attributes"] = {k: attr(v) for k, v in attrs.items()}
    if capacity:
        d["capacity"] = {k: (v if isinstance(v, dict) else {"value": v}) for k, v in capacity.items()}
    d.update(fields)
    return d


def attr(v: Any) -> dict[str, Any]:
    if isinstance(v, dict):
        return v
    if isinstance(v, tuple) and v[0] == "version":
        return {"version": v[1]}
    if isinstance(v, tuple) and v[0] == "versions":
        return {"versions": list(v[1])}
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": v}
    if isinstance(v, str):
        return {"string": v}
    if isinstance(v, list):
        if all(isinstance(x, bool) for x in v):
            return {"bools": v}
        if all(isinstance(x, int) for x in v):
            return {"ints": v}
        return {"strings": v}
    raise TypeError(v)


def consumes(counter_set: str, **counters: str) -> dict[str, Any]:
    return {"counterSet": counter_set, "counters": {k: {"value": v} for k, v in counters.items()}}


def counter_set(name: str, **counters: str) -> dict[str, Any]:
    return {"name": name, "counters": {k: {"value": v} for k, v in counters.items()}}


def rslice(name: str, where: Any = "node-1", pool: str = "pool-1", driver: str = DRIVER_A, *devices: dict[str, Any],
           count: int = 1, generation: int = 1, counters: list[dict[str, Any]] | None = None,
           **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": driver, "pool": {"name": pool, "generation": generation, "resourceSliceCount": count}}
    if where == ALL:
        spec["allNodes"] = True
    elif where == PER_DEVICE:
        spec["perDeviceNodeSelection"] = True
    elif isinstance(where, dict):
        spec["nodeSelector"] = where
    else:
        spec["nodeName"] = where
    if devices:
        spec["devices"] = list(devices)
    if counters is not None:
        spec["sharedCounters"] = counters
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name, **meta}, "spec": spec}


def many_devices(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [device(f"device-{i}") for i in range(start, start + n)]


def req(name: str, cls: str = CLASS_A, count: int | None = 1, *selectors: dict[str, Any], mode: str | None = None,
        admin: bool | None = None, tolerations: list[dict[str, Any]] | None = None,
        capacity: dict[str, str] | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls, "allocationMode": mode or "ExactCount"}
    if (mode or "ExactCount") == "ExactCount":
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = list(selectors)
    if admin is not None:
        exactly["adminAccess"] = admin
    if tolerations:
        exactly["tolerations"] = tolerations
    if capacity is not None:
        exactly["capacity"] = {"requests": capacity}
    return {"name": name, "exactly": exactly}


def all_req(name: str, cls: str = CLASS_A, *selectors: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return req(name, cls, None, *selectors, mode="All", **kw)


def sub(name: str, cls: str = CLASS_A, count: int | None = 1, *selectors: dict[str, Any], mode: str | None = None,
        tolerations: list[dict[str, Any]] | None = None, capacity: dict[str, str] | None = None) -> dict[str, Any]:
    s: dict[str, Any] = {"name": name, "deviceClassName": cls, "allocationMode": mode or "ExactCount"}
    if (mode or "ExactCount") == "ExactCount":
        s["count"] = count
    if selectors:
        s["selectors"] = list(selectors)
    if tolerations:
        s["tolerations"] = tolerations
    if capacity is not None:
        s["capacity"] = {"requests": capacity}
    return s


def first(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def claim(name: str, *requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None,
          config: list[dict[str, Any]] | None = None, namespace: str = "") -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints is not None:
        devices["constraints"] = constraints
    if config is not None:
        devices["config"] = config
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta, "spec": {"devices": devices}}


def match(attribute: str, *requests: str) -> dict[str, Any]:
    c: dict[str, Any] = {"matchAttribute": attribute}
    if requests:
        c["requests"] = list(requests)
    return c


def distinct(attribute: str, *requests: str) -> dict[str, Any]:
    c: dict[str, Any] = {"distinctAttribute": attribute}
    if requests:
        c["requests"] = list(requests)
    return c


def claim_config(driver: str, attribute: str, *requests: str) -> dict[str, Any]:
    c: dict[str, Any] = {"opaque": opaque(driver, attribute)}
    if requests:
        c["requests"] = list(requests)
    return c


def taint(key: str, value: str, effect: str) -> dict[str, Any]:
    return {"key": key, "value": value, "effect": effect}


def toleration(key: str = "", *, operator: str = "Equal", value: str = "", effect: str = "") -> dict[str, Any]:
    t: dict[str, Any] = {"operator": operator}
    if key:
        t["key"] = key
    if value:
        t["value"] = value
    if effect:
        t["effect"] = effect
    return t


def taint_rule(name: str, t: dict[str, Any], *, driver: str | None = None, pool: str | None = None,
               device_name: str | None = None, no_selector: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"taint": t}
    if not no_selector:
        s: dict[str, Any] = {}
        if driver is not None:
            s["driver"] = driver
        if pool is not None:
            s["pool"] = pool
        if device_name is not None:
            s["device"] = device_name
        spec["deviceSelector"] = s
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name}, "spec": spec}


def labels_selector(key: str, *values: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]}


def local(node_name: str = "node-1") -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}


SHARE = "<share-id>"


def res(request: str, device_name: str, *, driver: str = DRIVER_A, pool: str = "pool-1", admin: bool = False,
        tolerations: list[dict[str, Any]] | None = None, bc: list[str] | None = None, bfc: list[str] | None = None,
        share: bool = False, consumed: dict[str, str] | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"request": request, "driver": driver, "pool": pool, "device": device_name}
    if admin:
        r["adminAccess"] = True
    if tolerations:
        r["tolerations"] = tolerations
    if bc:
        r["bindingConditions"] = bc
    if bfc:
        r["bindingFailureConditions"] = bfc
    if share or consumed:
        r["shareID"] = SHARE
    if consumed:
        r["consumedCapacity"] = consumed
    return r


def alloc(*results: dict[str, Any], selector: dict[str, Any] | str | None = "local",
          config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {}
    if results:
        devices["results"] = list(results)
    if config:
        devices["config"] = config
    out: dict[str, Any] = {"devices": devices}
    if selector == "local":
        out["nodeSelector"] = local()
    elif selector is not None:
        out["nodeSelector"] = selector
    return out


def allocated_claim(*results: dict[str, Any]) -> dict[str, Any]:
    """A claim whose status.allocation holds the given results (for AllocatedState)."""
    return {"metadata": {"name": "existing"}, "status": {"allocation": {"devices": {"results": list(results)}}}}
