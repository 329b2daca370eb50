"""The kubelet's DRA manager for pods and claims on nodes with real plugins: what the fleet's pod
and claim reconciles call (`controllers/fleet/controller.py`), over the plugin managers
(`manager.Plugins`).

- `prepare(pod, node, claims)`: NodePrepareResources for the pod's allocated, reserved claims; on
  failure the kubelet's Warning event `FailedPrepareDynamicResources` ("Failed to prepare dynamic
  resources: prepare dynamic resources: <error>"), a repeat of the same message counting up the
  last event (`count`, `lastTimestamp`) as the kubelet's recorder aggregates.
- `unprepare_pod(pod, node)`: NodeUnprepareResources for the claims of a pod that is done, unless
  another pod on the node that has not ended still uses them.
- `unprepare_claim(namespace, name, claim)`: on deallocation (claim gone, not allocated, or another
  uid of the name) wherever the claim is prepared.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from controllers.fleet.plugins.manager import Plugins
from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import manager as managers
from cp import clock as clocks
from cp import errors
from cp.objects import meta_of, spec_of, status_of

FAILED_PREPARE = "FailedPrepareDynamicResources"  # the kubelet's event reason
TERMINAL = ("Succeeded", "Failed")

logger = structlog.get_logger("cplane.controllers.fleet.plugins")


def claim_names(pod: Mapping[str, Any]) -> list[str]:
    """The claims a pod uses (direct, generated, extended), resolved or not."""
    names = set(caches.by_claim_name(pod))
    extended = status_of(pod).get("extendedResourceClaimStatus")
    if isinstance(extended, Mapping) and extended.get("resourceClaimName"):
        names.add(str(extended["resourceClaimName"]))
    return sorted(names)


class KubeletDRA:
    def __init__(self, *, plugins: Plugins, client: clients.Client, clock: clocks.Clock, pods: caches.Cache,
                 recorder: managers.EventRecorder | None) -> None:
        self.plugins = plugins
        self.client = client
        self.clock = clock
        self.pods = pods  # indexed by node and claim name
        self.recorder = recorder
        # pod key -> (pod uid, event name, message, count) of its last FailedPrepareDynamicResources
        self._events: dict[tuple[str, str], tuple[str, str, str, int]] = {}
        self._log = logger

    def forget(self, key: tuple[str, str]) -> None:
        self._events.pop(key, None)

    async def prepare(self, pod: Mapping[str, Any], node: str, claims: Iterable[Mapping[str, Any]]) -> str:
        """"" once every claim with a real plugin's driver is prepared; else the error (the event
        is written)."""
        key = caches.key_of(pod)
        error = await self.plugins.prepare(node, claims)
        if not error:
            self._events.pop(key, None)
            return ""
        self._log.warning("pod_prepare_failed", namespace=key[0], name=key[1], node=node, error=error)
        await self._event(pod, f"Failed to prepare dynamic resources: prepare dynamic resources: {error}")
        return error

    async def _event(self, pod: Mapping[str, Any], message: str) -> None:
        if self.recorder is None:
            return
        key = caches.key_of(pod)
        uid = str(meta_of(pod).get("uid") or "")
        last = self._events.get(key)
        if last is not None and last[0] == uid and last[2] == message:
            count = last[3] + 1
            try:
                await self.client.patch("events", last[1], {"count": count,
                                                            "lastTimestamp": clocks.rfc3339(self.clock.now())},
                                        namespace=key[0])
            except (errors.StatusError, OSError, TimeoutError) as exc:
                self._log.warning("event_failed", reason=FAILED_PREPARE, error=repr(exc))
            else:
                self._events[key] = (uid, last[1], message, count)
                return
        event = self.recorder.build({"kind": "Pod", "apiVersion": "v1", "metadata": meta_of(pod)}, "Warning",
                                    FAILED_PREPARE, message)
        try:
            await self.client.create_event(event)
        except (errors.StatusError, OSError, TimeoutError) as exc:
            self._log.warning("event_failed", reason=FAILED_PREPARE, error=repr(exc))
            return
        self._events[key] = (uid, str(event["metadata"]["name"]), message, 1)

    async def unprepare_pod(self, pod: Mapping[str, Any], node: str) -> str:
        """"" or the error (the caller retries before removing the pod)."""
        ns, name = caches.key_of(pod)
        uid = str(meta_of(pod).get("uid") or "")

        def in_use(claim_ns: str, claim: str) -> bool:
            for pns, pname in self.pods.index_keys(caches.CLAIM_NAME, claim):
                other = self.pods.get(pns, pname)
                if pns == claim_ns and other is not None and str(meta_of(other).get("uid") or "") != uid and \
                        spec_of(other).get("nodeName") == node and status_of(other).get("phase") not in TERMINAL:
                    return True
            return False

        error = await self.plugins.unprepare(node, ns, claim_names(pod), in_use=in_use)
        if error:
            self._log.warning("pod_unprepare_failed", namespace=ns, name=name, node=node, error=error)
        return error

    async def unprepare_claim(self, namespace: str, name: str, claim: Mapping[str, Any] | None) -> str:
        """"" or the error (the caller retries)."""
        if not self.plugins.knows(namespace, name):
            return ""
        allocated = "" if claim is None or not status_of(claim).get("allocation") else \
            str(meta_of(claim).get("uid") or "")
        for node in self.plugins.nodes_of(namespace, name):
            error = await self.plugins.unprepare(node, namespace, [name], in_use=lambda _ns, _name: False,
                                                 keep_uid=lambda _ns, _name: allocated)
            if error:
                self._log.warning("claim_unprepare_failed", namespace=namespace, name=name, node=node, error=error)
                return error
        return ""
