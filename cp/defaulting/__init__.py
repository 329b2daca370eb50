"""Server-side defaulting, in place, as kube-apiserver applies it before validation.

Each module covers an API area and declares `DEFAULTERS`, its defaulting functions by (group,
version, kind); `apply_defaults` runs the one of an object's kind. Defaulting is idempotent: running
it again on a defaulted object changes nothing. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cp.defaulting import (
    admission,
    certificates,
    core,
    extensions,
    flowcontrol,
    networking,
    scheduling,
    storage,
)
from cp.defaulting.core import (
    DEFAULT_TOLERATION_SECONDS,
    VOLUME_SOURCES,
    default_claim_spec,
    default_device_taints,
    default_pod_spec,
    image_tag,
)

DEFAULTERS: dict[tuple[str, str, str], Callable[[dict[str, Any]], None]] = {}
for _module in (core, networking, storage, scheduling, certificates, admission, flowcontrol, extensions):
    DEFAULTERS.update(_module.DEFAULTERS)


def apply_defaults(obj: dict[str, Any], *, group: str, version: str, kind: str) -> None:
    fn = DEFAULTERS.get((group, version, kind))
    if fn is not None:
        fn(obj)


__all__ = ["DEFAULTERS", "DEFAULT_TOLERATION_SECONDS", "VOLUME_SOURCES",
           "apply_defaults", "default_claim_spec", "default_device_taints", "default_pod_spec", "image_tag"]
