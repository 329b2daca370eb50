"""Helpers for the workload controllers' tests (ReplicaSet, Deployment, ResourceClaim): a fake
client that also creates objects (generateName included) and applies strategic-merge patches,
object builders, a cache sync that replays informer events through a controller's map
functions, and a Python port of `kubectl rollout status`'s decision (rollout_status.go)."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import clock as clocks
from cp import errors, patching
from cp import resources as res
from tests.controllers.support import START, Action, FakeClient

ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class WorkloadFakeClient(FakeClient):
    """FakeClient plus create (generateName gets deterministic 5-character suffixes: bcdfb,
    bcdfc, ...), strategic-merge patches, and injectable create failures."""

    def __init__(self, *objects: tuple[str, dict[str, Any]], clock: clocks.Clock | None = None) -> None:
        super().__init__(*objects, clock=clock)
        self._suffix = itertools.count()
        # group-resource -> exceptions to raise, in order, from the next creates (None = succeed)
        self.create_failures: dict[str, list[errors.StatusError | None]] = {}

    def _next_suffix(self) -> str:
        n = next(self._suffix)
        chars = []
        for _ in range(5):
            n, r = divmod(n, len(ALPHABET))
            chars.append(ALPHABET[r])
        return "".join(reversed(chars))

    def put(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("creationTimestamp", clocks.rfc3339(self.clock.now()))
        kind = clients.resolve(resource)
        if kind.has_spec:
            meta.setdefault("generation", 1)
        return super().put(resource, obj)

    async def create(self, kind: res.ResourceKind | str, obj: Mapping[str, Any], *, namespace: str | None = None,
                     field_manager: str | None = None, **_: Any) -> dict[str, Any]:
        k = clients.resolve(kind)
        body = copy.deepcopy(dict(obj))
        meta = body.setdefault("metadata", {})
        ns = namespace if namespace is not None else str(meta.get("namespace") or "")
        self.actions.append(Action(verb="create", resource=k.group_resource, namespace=ns,
                                   name=str(meta.get("name") or ""), body=copy.deepcopy(body)))
        queue = self.create_failures.get(k.group_resource)
        if queue:
            failure = queue.pop(0)
            if failure is not None:
                raise failure
        if not meta.get("name"):
            meta["name"] = str(meta.pop("generateName", "")) + self._next_suffix()
        meta.pop("generateName", None)
        if k.namespaced:
            meta["namespace"] = ns
        if self._key(k, ns, meta["name"]) in self.objects:
            raise errors.AlreadyExists(f'{k.group_resource} "{meta["name"]}" already exists',
                                       details={"name": meta["name"], "kind": k.plural})
        if k.group_resource == "pods":
            body.setdefault("status", {"phase": "Pending"})
        return self.put(k.group_resource, body)

    async def patch(self, kind: res.ResourceKind | str, name: str, patch: Any, *, namespace: str = "",
                    patch_type: str = "merge", subresource: str = "", field_manager: str | None = None,
                    **kw: Any) -> dict[str, Any]:
        if patch_type == "merge":
            return await super().patch(kind, name, patch, namespace=namespace, patch_type=patch_type,
                                       subresource=subresource, field_manager=field_manager, **kw)
        assert patch_type == "strategic", patch_type
        k = clients.resolve(kind)
        self.actions.append(Action(verb="patch", resource=k.group_resource, namespace=namespace, name=name,
                                   body=copy.deepcopy(patch), subresource=subresource))
        key = self._key(k, namespace, name)
        current = self.objects.get(key)
        if current is None:
            raise errors.NotFound.of(group=k.group, plural=k.plural, name=name)
        merged = patching.apply_patch(copy.deepcopy(current), json.dumps(patch).encode(),
                                      content_type=patching.STRATEGIC_MERGE_PATCH, group=k.group,
                                      version=k.version, kind=k.kind)
        merged["metadata"]["uid"] = current["metadata"]["uid"]
        self._bump(merged)
        self.objects[key] = merged
        return copy.deepcopy(merged)

    async def update(self, kind: res.ResourceKind | str, obj: Mapping[str, Any], *, subresource: str = "",
                     **kw: Any) -> dict[str, Any]:
        """As the server: a main-resource update keeps the status and bumps the generation when
        the spec changes; removing the last finalizer of a deleting object deletes it."""
        k = clients.resolve(kind)
        meta = obj.get("metadata") or {}
        key = self._key(k, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        old = copy.deepcopy(self.objects.get(key))
        out = await super().update(kind, obj, subresource=subresource, **kw)
        if subresource == "status" or old is None:
            return out
        stored = self.objects[key]
        generation = int(old["metadata"].get("generation") or 0)
        if generation:
            stored["metadata"]["generation"] = generation + (1 if stored.get("spec") != old.get("spec") else 0)
        if "status" in old:
            stored["status"] = old["status"]
        for keep in ("deletionTimestamp", "creationTimestamp"):
            if keep in old["metadata"]:
                stored["metadata"][keep] = old["metadata"][keep]
        self._settle_deletion(key)
        return copy.deepcopy(stored)

    def events(self, reason: str | None = None) -> list[dict[str, Any]]:
        return [a.body for a in self.actions
                if a.verb == "create" and a.resource == "events" and (reason is None or a.body["reason"] == reason)]

    def creates(self, resource: str) -> list[dict[str, Any]]:
        return [a.body for a in self.actions if a.verb == "create" and a.resource == resource]

    def non_event_writes(self) -> list[Action]:
        return [a for a in self.writes if a.resource != "events"]


def recorder(fake: FakeClient, component: str) -> managers.EventRecorder:
    return managers.EventRecorder(fake, component=component, clock=fake.clock)  # type: ignore[arg-type]


def replay(fake: FakeClient, factory: informers.InformerFactory,
           maps: Mapping[str, Callable[[managers.Change], Iterable[reconcile.Request]]] | None = None,
           ) -> list[reconcile.Request]:
    """Make every cache match the fake's objects, as watch events would, calling `maps`
    (group-resource → a controller's map function) for each change; returns the Requests."""
    out: list[reconcile.Request] = []
    for inf in factory.informers:
        gr = inf.kind.group_resource
        diff = inf.cache.replace([copy.deepcopy(o) for (g, _ns, _n), o in fake.objects.items() if g == gr])
        fn = (maps or {}).get(gr)
        if fn is None:
            continue
        for obj in diff.added:
            out.extend(fn(managers.Change(type="add", kind=inf.kind, obj=obj)))
        for old, new in diff.updated:
            out.extend(fn(managers.Change(type="update", kind=inf.kind, obj=new, old=old)))
        for obj in diff.deleted:
            out.extend(fn(managers.Change(type="delete", kind=inf.kind, obj=obj)))
    return out


# ---------------------------------------------------------------------- builders


def pod_template(labels: Mapping[str, str], **spec: Any) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}], **spec}
    return {"metadata": {"labels": dict(labels)}, "spec": pod_spec}


def replicaset(name: str, replicas: int, *, labels: Mapping[str, str] | None = None, namespace: str = "default",
               min_ready: int = 0, owner: Mapping[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    labels = dict(labels or {"app": name})
    obj: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels), **meta},
        "spec": {"replicas": replicas, "minReadySeconds": min_ready, "selector": {"matchLabels": dict(labels)},
                 "template": pod_template(labels)},
        "status": {"replicas": 0},
    }
    if owner is not None:
        obj["metadata"]["ownerReferences"] = [dict(owner)]
    return obj


def pod(name: str, *, labels: Mapping[str, str], owner: Mapping[str, Any] | None = None, namespace: str = "default",
        node: str = "", phase: str = "Running", ready: bool | None = None, ready_since: float | None = None,
        created: float | None = None, deleting: bool = False, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels)}
    if owner is not None:
        meta["ownerReferences"] = [dict(owner)]
    if created is not None:
        meta["creationTimestamp"] = clocks.rfc3339(created)
    if deleting:
        meta["deletionTimestamp"] = clocks.rfc3339(START)
    pod_spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}], **spec}
    if node:
        pod_spec["nodeName"] = node
    status: dict[str, Any] = {"phase": phase}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False",
                                 "lastTransitionTime": clocks.rfc3339(ready_since or START)}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec, "status": status}


def controller_ref(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def deployment(name: str, replicas: int, *, labels: Mapping[str, str] | None = None, namespace: str = "default",
               strategy: Mapping[str, Any] | None = None, max_surge: Any = "25%", max_unavailable: Any = "25%",
               history: int = 10, deadline: int | None = 600, paused: bool = False,
               template: Mapping[str, Any] | None = None) -> dict[str, Any]:
    labels = dict(labels or {"app": name})
    strat = dict(strategy) if strategy is not None else {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": max_unavailable}}
    spec: dict[str, Any] = {"replicas": replicas, "selector": {"matchLabels": dict(labels)},
                            "template": copy.deepcopy(dict(template)) if template else pod_template(labels),
                            "strategy": strat, "revisionHistoryLimit": history}
    if deadline is not None:
        spec["progressDeadlineSeconds"] = deadline
    if paused:
        spec["paused"] = True
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": spec, "status": {}}


# ---------------------------------------------------------------------- kubectl rollout status


def rollout_status(d: Mapping[str, Any]) -> tuple[str, bool]:
    """kubectl's DeploymentStatusViewer.Status: (message, done); raises on a missed deadline."""
    meta, spec, status = d["metadata"], d.get("spec") or {}, d.get("status") or {}
    name = meta["name"]
    if int(meta.get("generation") or 0) <= int(status.get("observedGeneration") or 0):
        for cond in status.get("conditions") or []:
            if cond.get("type") == "Progressing" and cond.get("reason") == "ProgressDeadlineExceeded":
                raise AssertionError(f'deployment "{name}" exceeded its progress deadline')
        replicas = spec.get("replicas", 1)
        updated = int(status.get("updatedReplicas") or 0)
        if updated < replicas:
            return (f'Waiting for deployment "{name}" rollout to finish: {updated} out of {replicas} '
                    "new replicas have been updated...", False)
        if int(status.get("replicas") or 0) > updated:
            return (f'Waiting for deployment "{name}" rollout to finish: '
                    f"{int(status.get('replicas') or 0) - updated} old replicas are pending termination...", False)
        if int(status.get("availableReplicas") or 0) < updated:
            return (f'Waiting for deployment "{name}" rollout to finish: '
                    f"{int(status.get('availableReplicas') or 0)} of {updated} updated replicas are available...",
                    False)
        return f'deployment "{name}" successfully rolled out', True
    return "Waiting for deployment spec update to be observed...", False
