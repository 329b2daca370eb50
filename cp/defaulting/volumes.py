"""Defaulting of core/v1 PersistentVolumes and PersistentVolumeClaims (also the claim templates of
StatefulSets), Endpoints and LimitRanges.

Sources of behaviour (read, not copied): `pkg/apis/core/v1/defaults.go` (SetDefaults_PersistentVolume,
_PersistentVolumeClaim, _PersistentVolumeClaimSpec, the volume source defaults of ISCSI, RBD and HostPath,
_EndpointPort, _LimitRangeItem). Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cp.defaulting.fields import child, dicts, setdefault, sub


def _claim_spec(spec: dict[str, Any]) -> None:
    setdefault(spec, "volumeMode", "Filesystem")


def default_claim(claim: dict[str, Any]) -> None:
    """A claim or a claim template: `Filesystem` volume mode; a claim starts `Pending`."""
    _claim_spec(child(claim, "spec"))
    status = child(claim, "status")
    if not status.get("phase"):
        status["phase"] = "Pending"


def _volume_sources(spec: dict[str, Any]) -> None:
    host = sub(spec, "hostPath")
    if host is not None and host.get("type") is None:
        host["type"] = ""
    iscsi = sub(spec, "iscsi")
    if iscsi is not None and not iscsi.get("iscsiInterface"):
        iscsi["iscsiInterface"] = "default"
    rbd = sub(spec, "rbd")
    if rbd is not None:
        for key, value in (("pool", "rbd"), ("user", "admin"), ("keyring", "/etc/ceph/keyring")):
            if not rbd.get(key):
                rbd[key] = value


def _persistent_volume(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    status = child(obj, "status")
    if not status.get("phase"):
        status["phase"] = "Pending"
    if not spec.get("persistentVolumeReclaimPolicy"):
        spec["persistentVolumeReclaimPolicy"] = "Retain"
    setdefault(spec, "volumeMode", "Filesystem")
    _volume_sources(spec)


def _endpoints(obj: dict[str, Any]) -> None:
    for subset in dicts(obj.get("subsets")):
        for port in dicts(subset.get("ports")):
            if not port.get("protocol"):
                port["protocol"] = "TCP"


def _limit_range(obj: dict[str, Any]) -> None:
    """Container limits: the default limit falls back to the max, the default request to the default
    limit, then to the min."""
    spec = sub(obj, "spec")
    if spec is None:
        return
    for item in dicts(spec.get("limits")):
        if item.get("type") != "Container":
            continue
        default = dict(item.get("default") or {})
        request = dict(item.get("defaultRequest") or {})
        for source, target in ((item.get("max"), default), (default, request), (item.get("min"), request)):
            for name, value in (source or {}).items() if isinstance(source, dict) else ():
                target.setdefault(name, value)
        for key, value in (("default", default), ("defaultRequest", request)):
            if value:
                item[key] = value


DEFAULTERS: dict[tuple[str, str, str], Callable[[dict[str, Any]], None]] = {
    ("", "v1", "PersistentVolume"): _persistent_volume,
    ("", "v1", "PersistentVolumeClaim"): default_claim,
    ("", "v1", "Endpoints"): _endpoints,
    ("", "v1", "LimitRange"): _limit_range,
}
