"""What the simulated kubelet reports of a pod's in-place resizes and ephemeral containers.

Resizes are accepted at once (the simulated node has no cgroups to change): a running container's
status shows its spec's requests as `allocatedResources` and its requests and limits as `resources`,
and the pod carries no `PodResizePending`/`PodResizeInProgress` condition. Ephemeral containers
(`kubectl debug`) run as soon as they are added; as the kubelet reports them, never ready.
Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RESIZE_CONDITIONS = ("PodResizePending", "PodResizeInProgress")


def applied_resources(container: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a running container's status that show the resources it runs with."""
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return {}
    shown = {key: dict(resources[key]) for key in ("requests", "limits")
             if isinstance(resources.get(key), Mapping) and resources[key]}
    if not shown:
        return {}
    out: dict[str, Any] = {"resources": shown}
    if "requests" in shown:
        out["allocatedResources"] = dict(shown["requests"])
    return out


def ephemeral_status(running: dict[str, Any]) -> dict[str, Any]:
    """An ephemeral container's status from what a running container reports: no readiness."""
    out = {k: v for k, v in running.items() if k not in ("started", "resources", "allocatedResources")}
    out["ready"] = False
    return out
