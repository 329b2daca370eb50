"""The RBAC objects of the event log in memory (what authorization evaluates), and the default
policy a new cluster is given."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import msgspec

from api import store as stores
from cp import errors, kubeletplugins, rbac
from cp import resources as res
from storage import log

_decode = msgspec.json.Decoder().decode

RBAC_KINDS = {"roles": "Role", "clusterroles": "ClusterRole", "rolebindings": "RoleBinding",
              "clusterrolebindings": "ClusterRoleBinding"}


class PolicyCache:
    """The RBAC objects of the event log, in memory: loaded at start, then kept current by the
    store's own writes (write-through) and by subscriptions (writes from other processes)."""

    def __init__(self) -> None:
        self.policy = rbac.Policy()
        self._revisions: dict[tuple[str, str, str], int] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self.revision = 0

    def apply(self, ev: log.Event) -> None:
        if ev.group != rbac.GROUP or ev.resource not in RBAC_KINDS:
            return
        key = (ev.resource, ev.namespace, ev.name)
        if self._revisions.get(key, 0) >= ev.revision:
            return
        self._revisions[key] = ev.revision
        kind = RBAC_KINDS[ev.resource]
        if ev.type == "DELETED":
            self.policy.remove(kind, ev.namespace, ev.name)
            return
        try:
            obj = _decode(ev.object)
        except msgspec.DecodeError:
            return
        if isinstance(obj, dict):
            obj.setdefault("kind", kind)
            self.policy.put(obj)

    async def load(self, event_log: log.EventLog) -> None:
        revision = event_log.revision
        for resource in RBAC_KINDS:
            result = await event_log.list_objects(group=rbac.GROUP, resource=resource, namespace=None)
            for ev in result.events:
                self.apply(ev)
            revision = min(revision, result.revision) if revision else result.revision
        self.revision = revision

    def follow(self, event_log: log.EventLog) -> None:
        for resource in RBAC_KINDS:
            self._tasks.append(asyncio.get_running_loop().create_task(
                self._follow(event_log, resource), name=f"auth:rbac:{resource}"))

    async def _follow(self, event_log: log.EventLog, resource: str) -> None:
        after = self.revision
        while True:
            try:
                sub = await event_log.subscribe(group=rbac.GROUP, resource=resource, namespace=None, after=after)
            except log.ExpiredError:
                await self.load(event_log)
                after = self.revision
                continue
            try:
                while True:
                    batch = await sub.next_batch(timeout=30.0)
                    if batch is None:
                        break
                    for ev in batch:
                        self.apply(ev)
                        after = max(after, ev.revision)
            finally:
                sub.close()
            await asyncio.sleep(0.1)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()


async def bootstrap_policy(store: stores.Store) -> None:
    """Create the default ClusterRoles and ClusterRoleBindings; put back the rules/subjects of
    those still annotated `rbac.authorization.kubernetes.io/autoupdate: "true"` (upstream's
    reconciliation, without removing anything an administrator added)."""
    ctx = stores.WriteContext(user=rbac.APISERVER, field_manager="kube-apiserver", user_agent="cplane")
    for obj in [*rbac.default_cluster_roles(), kubeletplugins.cluster_role(),
                *rbac.default_cluster_role_bindings(), kubeletplugins.cluster_role_binding()]:
        kind = res.lookup(rbac.GROUP, "v1", "clusterroles" if obj["kind"] == "ClusterRole" else "clusterrolebindings")
        assert kind is not None
        name = obj["metadata"]["name"]
        existing = await store.log.get(group=rbac.GROUP, resource=kind.plural, namespace="", name=name)
        if existing is None:
            with contextlib.suppress(errors.AlreadyExists):
                await store.create(kind, "", dict(obj), ctx)
            continue
        current = _decode(existing.object)
        if ((current.get("metadata") or {}).get("annotations") or {}).get(rbac.AUTOUPDATE) != "true":
            continue
        field = "rules" if obj["kind"] == "ClusterRole" else "subjects"
        if obj["kind"] == "ClusterRole":
            missing = [r for r in obj["rules"] if r not in (current.get("rules") or [])]
        else:
            missing = [s for s in obj["subjects"] if s not in (current.get("subjects") or [])]
        if not missing:
            continue
        updated = list(current.get(field) or []) + missing

        def mutate(cur: dict[str, Any], field: str = field, updated: list[Any] = updated) -> dict[str, Any]:
            cur[field] = updated
            return cur

        with contextlib.suppress(errors.StatusError):
            await store.guaranteed_update(kind, "", name, mutate, ctx)


async def bootstrap_kubelet_plugins(store: stores.Store) -> None:
    """The ServiceAccount DRA kubelet plugins on simulated nodes run as, and the ResourceSlice
    admission policy on its node-name claim (`cp.kubeletplugins`), each created when missing
    (an administrator's edits are kept)."""
    ctx = stores.WriteContext(user=rbac.APISERVER, field_manager="kube-apiserver", user_agent="cplane")
    for group, plural, obj in (
            ("", "serviceaccounts", kubeletplugins.service_account()),
            ("admissionregistration.k8s.io", "validatingadmissionpolicies", kubeletplugins.admission_policy()),
            ("admissionregistration.k8s.io", "validatingadmissionpolicybindings",
             kubeletplugins.admission_policy_binding())):
        kind = res.lookup(group, "v1", plural)
        assert kind is not None
        meta = obj["metadata"]
        namespace = str(meta.get("namespace") or "")
        if await store.log.get(group=group, resource=plural, namespace=namespace, name=meta["name"]) is None:
            with contextlib.suppress(errors.AlreadyExists):
                await store.create(kind, namespace, obj, ctx)
