"""Leader election on a `coordination.k8s.io/v1` Lease, after client-go's `tools/leaderelection`.

- A candidate tries every `retry_period` (jittered by up to 20%) to acquire: create the Lease if it
  is missing, or update it (resourceVersion precondition) when it names no holder, names us, or
  has not changed for `lease_duration` as *observed locally* (the holder's clock is never read).
- The leader renews every `retry_period`; when no renewal has succeeded for `renew_deadline` it
  gives up (before anyone else may take over: renew_deadline < lease_duration).
- On a clean stop the leader releases the Lease (empty holderIdentity, leaseDurationSeconds 1) so
  a standby takes over on its next try instead of waiting out the lease.

Defaults are client-go's (15 s / 10 s / 2 s). All waiting is on the injected clock.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import uuid
from typing import Any

import msgspec
import structlog

from controllers.runtime import client as clients
from cp import clock as clocks
from cp import errors

logger = structlog.get_logger("cplane.controllers.leaderelection")

JITTER = 1.2


class LeaderElectionConfig(msgspec.Struct, kw_only=True):
    lease_name: str = "cplane-controller-manager"
    lease_namespace: str = "kube-system"
    identity: str = ""  # default: host_pid_random
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if not self.identity:
            self.identity = default_identity()
        if not self.lease_duration > self.renew_deadline > self.retry_period * JITTER > 0:
            raise ValueError("need lease_duration > renew_deadline > retry_period * 1.2 > 0")


def default_identity() -> str:
    return f"{socket.gethostname()}_{os.getpid()}_{uuid.uuid4().hex[:8]}"


class LeaderElector:
    def __init__(self, client: clients.Client, *, clock: clocks.Clock, config: LeaderElectionConfig) -> None:
        self.client = client
        self.clock = clock
        self.config = config
        self.identity = config.identity
        self._observed: dict[str, Any] | None = None  # the Lease spec last seen
        self._observed_rv = ""
        self._observed_time = 0.0
        self.attempts = 0  # tries to acquire or renew, for observers and tests
        self.transitions_seen = 0
        self._log = logger.bind(lease=f"{config.lease_namespace}/{config.lease_name}", identity=self.identity)

    @property
    def is_leader(self) -> bool:
        return self._observed is not None and self._observed.get("holderIdentity") == self.identity

    @property
    def observed_holder(self) -> str:
        return str((self._observed or {}).get("holderIdentity") or "")

    # ------------------------------------------------------------------ loops

    async def acquire(self) -> None:
        """Return once this candidate holds the Lease (cancel to give up)."""
        self._log.info("leader_election_started")
        while True:
            if await self._try():
                self._log.info("leader_acquired")
                return
            await self.clock.sleep(self.config.retry_period * (1 + random.random() * (JITTER - 1)))

    async def hold(self) -> None:
        """Renew until leadership is lost; return then (cancel to stop renewing)."""
        last_renew = self.clock.now()
        while True:
            await self.clock.sleep(self.config.retry_period)
            ok = await self._try()
            now = self.clock.now()
            if ok:
                last_renew = now
                continue
            if not self.is_leader or now - last_renew >= self.config.renew_deadline:
                self._log.warning("leader_lost", holder=self.observed_holder)
                return

    async def release(self) -> bool:
        """Give the Lease up if we hold it (clean shutdown)."""
        if not self.is_leader or self._observed is None:
            return False
        now = clocks.rfc3339_micro(self.clock.now())
        spec = {"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": now, "renewTime": now,
                "leaseTransitions": int(self._observed.get("leaseTransitions") or 0)}
        try:
            lease = await asyncio.wait_for(self._update(spec), self.config.renew_deadline)
        except (errors.StatusError, OSError, TimeoutError) as exc:
            self._log.warning("leader_release_failed", error=repr(exc))
            return False
        self._observe(lease)
        self._log.info("leader_released")
        return True

    # ------------------------------------------------------------------ one try

    async def _try(self) -> bool:
        self.attempts += 1
        try:
            return await asyncio.wait_for(self._try_acquire_or_renew(), self.config.renew_deadline)
        except (errors.StatusError, OSError, TimeoutError) as exc:
            self._log.info("leader_try_failed", error=repr(exc))
            return False

    async def _try_acquire_or_renew(self) -> bool:
        now = self.clock.now()
        stamp = clocks.rfc3339_micro(now)
        cfg = self.config
        try:
            lease = await self.client.get("leases.coordination.k8s.io", cfg.lease_name,
                                          namespace=cfg.lease_namespace)
        except errors.NotFound:
            spec = {"holderIdentity": self.identity, "leaseDurationSeconds": int(cfg.lease_duration),
                    "acquireTime": stamp, "renewTime": stamp, "leaseTransitions": 0}
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": cfg.lease_name, "namespace": cfg.lease_namespace}, "spec": spec}
            try:
                created = await self.client.create("leases.coordination.k8s.io", body)
            except errors.AlreadyExists:
                return False
            self._observe(created)
            return True
        old = dict(lease.get("spec") or {})
        if old != self._observed or self._observed is None:
            self._observe(lease)
        holder = str(old.get("holderIdentity") or "")
        duration = float(old.get("leaseDurationSeconds") or cfg.lease_duration)
        if holder and holder != self.identity and self._observed_time + duration > now:
            return False  # held by someone else, and not expired as far as we have seen
        transitions = int(old.get("leaseTransitions") or 0)
        spec = {"holderIdentity": self.identity, "leaseDurationSeconds": int(cfg.lease_duration),
                "renewTime": stamp}
        if holder == self.identity:
            spec["acquireTime"] = old.get("acquireTime") or stamp
            spec["leaseTransitions"] = transitions
        else:
            spec["acquireTime"] = stamp
            spec["leaseTransitions"] = transitions + 1
        try:
            updated = await self._update(spec, resource_version=str(lease["metadata"]["resourceVersion"]))
        except errors.Conflict:
            return False
        self._observe(updated)
        return True

    async def _update(self, spec: dict[str, Any], *, resource_version: str | None = None) -> dict[str, Any]:
        cfg = self.config
        rv = resource_version if resource_version is not None else self._observed_rv
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": cfg.lease_name, "namespace": cfg.lease_namespace, "resourceVersion": rv},
                "spec": spec}
        return await self.client.update("leases.coordination.k8s.io", body)

    def _observe(self, lease: dict[str, Any]) -> None:
        spec = dict(lease.get("spec") or {})
        if self._observed is not None and spec.get("holderIdentity") != self._observed.get("holderIdentity"):
            self.transitions_seen += 1
        self._observed = spec
        self._observed_rv = str((lease.get("metadata") or {}).get("resourceVersion") or "")
        self._observed_time = self.clock.now()
