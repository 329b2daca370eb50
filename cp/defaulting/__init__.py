"""Server-side defaulting, in place, as kube-apiserver applies it before validation.

Each module covers an API area and declares `DEFAULTERS`, its defaulting functions by (group,
version, kind); `apply_defaults` runs the one of an object's kind. The modules of the cluster
configuration groups are imported on the first object of their group (`_LAZY`), so that start-up does
not pay for kinds nobody writes. Last, `cp.protobuf.zero` adds the fields Go's JSON encoder always
writes (no `omitempty`), as decoding into the typed struct does upstream. Defaulting is idempotent: running
it again on a defaulted object changes nothing. Pure.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from cp.defaulting import accounts, core, service, volumes, workloads
from cp.defaulting.core import (
    DEFAULT_TOLERATION_SECONDS,
    VOLUME_SOURCES,
    default_claim_spec,
    default_device_taints,
    default_pod_spec,
    image_tag,
)
from cp.protobuf import zero

DEFAULTERS: dict[tuple[str, str, str], Callable[[dict[str, Any]], None]] = {
    **core.DEFAULTERS, **accounts.DEFAULTERS, **service.DEFAULTERS, **volumes.DEFAULTERS, **workloads.DEFAULTERS}
_LAZY: dict[str, str] = {  # API group -> module whose DEFAULTERS cover it, until imported
    "networking.k8s.io": "networking", "discovery.k8s.io": "networking", "storage.k8s.io": "storage",
    "scheduling.k8s.io": "scheduling", "certificates.k8s.io": "certificates",
    "admissionregistration.k8s.io": "admission", "flowcontrol.apiserver.k8s.io": "flowcontrol",
    "apiregistration.k8s.io": "extensions", "apiextensions.k8s.io": "extensions",
}


def apply_defaults(obj: dict[str, Any], *, group: str, version: str, kind: str) -> None:
    fn = DEFAULTERS.get((group, version, kind))
    if fn is None and group in _LAZY:
        name = _LAZY[group]
        DEFAULTERS.update(importlib.import_module(f"{__name__}.{name}").DEFAULTERS)
        for g in [g for g, n in _LAZY.items() if n == name]:
            del _LAZY[g]
        fn = DEFAULTERS.get((group, version, kind))
    if fn is not None:
        fn(obj)
    # Last, as the typed struct would carry them: the fields Go's encoder always writes.
    zero.fill(obj, api_version=f"{group}/{version}" if group else version, kind=kind)


__all__ = ["DEFAULTERS", "DEFAULT_TOLERATION_SECONDS", "VOLUME_SOURCES",
           "apply_defaults", "default_claim_spec", "default_device_taints", "default_pod_spec", "image_tag"]
