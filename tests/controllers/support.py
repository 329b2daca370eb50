"""Helpers for controller tests: settling the loop (bounded polling is `tests.waiting.eventually`), and a fake API client that
records writes (sample-controller's fixture, in Python)."""

from __future__ import annotations

import asyncio
import copy
import itertools
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import discovery
from controllers.runtime import informer as informers
from cp import clock as clocks
from cp import errors, patching
from cp import resources as res

START = 1_800_000_000.0  # 2027-01-15T08:00:00Z, a whole second: timeAdded truncation is exact; the tests' VirtualClock start


async def settle(rounds: int = 10) -> None:
    """Let ready callbacks run (no time passes on any clock)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


# ---------------------------------------------------------------------- fake API client


class Action(msgspec.Struct, frozen=True, kw_only=True):
    """One call the code under test made: verb, group-resource, namespace, name, and the body
    (object, patch, or delete options)."""

    verb: str
    resource: str
    namespace: str = ""
    name: str = ""
    body: Any = None
    subresource: str = ""


READS = frozenset({"get", "list", "discover"})


class FakeClient:
    """Holds objects in memory, answers reads from them, records every call, and applies writes
    with just enough API semantics for reconcilers' follow-up reads (resourceVersion
    preconditions, finalizers keeping deleted objects, merge patches)."""

    def __init__(self, *objects: tuple[str, dict[str, Any]], clock: clocks.Clock | None = None) -> None:
        self.clock = clock or clocks.VirtualClock(start=1_800_000_000.0)
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.actions: list[Action] = []
        self._rv = itertools.count(100)
        # Discovery: the documents `/api` and `/apis` answer (no custom resource unless a test sets them).
        self.discovery: dict[str, dict[str, Any]] = {"/api": {"items": []}, "/apis": {"items": []}}
        self.mapper = discovery.RESTMapper(self._discovery)
        for resource, obj in objects:
            stored = self.put(resource, obj)
            obj.clear()
            obj.update(stored)  # callers keep using their dict: give it the uid and resourceVersion

    async def _discovery(self, path: str, accept: str) -> bytes:
        self.actions.append(Action(verb="discover", resource=path))
        return msgspec.json.encode(self.discovery[path])

    def resolve(self, kind: res.ResourceKind | str) -> res.ResourceKind:
        return clients.resolve(kind, mapper=self.mapper)

    # -------------------------------------------------------------- set-up and inspection

    def put(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Store an object (uid and resourceVersion filled in); returns a copy of what is stored."""
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("resourceVersion", str(next(self._rv)))
        kind = clients.resolve(resource)
        obj.setdefault("apiVersion", kind.api_version)
        obj.setdefault("kind", kind.kind)
        self.objects[(kind.group_resource, str(meta.get("namespace") or ""), str(meta["name"]))] = obj
        return copy.deepcopy(obj)

    @property
    def writes(self) -> list[Action]:
        return [a for a in self.actions if a.verb not in READS]

    def stored(self, resource: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        return self.objects.get((clients.resolve(resource).group_resource, namespace, name))

    # -------------------------------------------------------------- reads

    def _key(self, kind: res.ResourceKind | str, namespace: str, name: str) -> tuple[str, str, str]:
        k = clients.resolve(kind)
        return (k.group_resource, namespace if k.namespaced else "", name)

    async def get(self, kind: res.ResourceKind | str, name: str, *, namespace: str = "",
                  subresource: str = "") -> dict[str, Any]:
        k = clients.resolve(kind)
        self.actions.append(Action(verb="get", resource=k.group_resource, namespace=namespace, name=name))
        obj = self.objects.get(self._key(k, namespace, name))
        if obj is None:
            raise errors.NotFound.of(group=k.group, plural=k.plural, name=name)
        return copy.deepcopy(obj)

    async def list(self, kind: res.ResourceKind | str, *, namespace: str | None = None,
                   **_: Any) -> clients.ObjectList:
        k = clients.resolve(kind)
        self.actions.append(Action(verb="list", resource=k.group_resource, namespace=namespace or ""))
        items = [copy.deepcopy(o) for (gr, ns, _n), o in sorted(self.objects.items())
                 if gr == k.group_resource and (namespace is None or ns == namespace)]
        return clients.ObjectList(items=items)

    # -------------------------------------------------------------- writes

    def _bump(self, obj: dict[str, Any]) -> None:
        obj["metadata"]["resourceVersion"] = str(next(self._rv))

    def _check_rv(self, k: res.ResourceKind, current: dict[str, Any], wanted: Any) -> None:
        if wanted and str(wanted) != current["metadata"]["resourceVersion"]:
            raise errors.Conflict.modified(group=k.group, plural=k.plural, name=current["metadata"]["name"])

    def _settle_deletion(self, key: tuple[str, str, str]) -> None:
        obj = self.objects.get(key)
        if obj is not None and obj["metadata"].get("deletionTimestamp") and not obj["metadata"].get("finalizers"):
            del self.objects[key]

    async def patch(self, kind: res.ResourceKind | str, name: str, patch: Any, *, namespace: str = "",
                    patch_type: str = "merge", subresource: str = "", field_manager: str | None = None,
                    **_: Any) -> dict[str, Any]:
        k = clients.resolve(kind)
        self.actions.append(Action(verb="patch", resource=k.group_resource, namespace=namespace, name=name,
                                   body=copy.deepcopy(patch), subresource=subresource))
        key = self._key(k, namespace, name)
        current = self.objects.get(key)
        if current is None:
            raise errors.NotFound.of(group=k.group, plural=k.plural, name=name)
        assert patch_type == "merge", "the fake applies merge patches only"
        self._check_rv(k, current, (patch.get("metadata") or {}).get("resourceVersion"))
        merged = patching.json_merge_patch(copy.deepcopy(current), patch)
        merged["metadata"]["uid"] = current["metadata"]["uid"]
        self._bump(merged)
        self.objects[key] = merged
        self._settle_deletion(key)
        return copy.deepcopy(merged)

    async def update(self, kind: res.ResourceKind | str, obj: Mapping[str, Any], *, subresource: str = "",
                     **_: Any) -> dict[str, Any]:
        k = clients.resolve(kind)
        meta = obj.get("metadata") or {}
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        self.actions.append(Action(verb="update", resource=k.group_resource, namespace=ns, name=name,
                                   body=copy.deepcopy(dict(obj)), subresource=subresource))
        key = self._key(k, ns, name)
        current = self.objects.get(key)
        if current is None:
            raise errors.NotFound.of(group=k.group, plural=k.plural, name=name)
        self._check_rv(k, current, meta.get("resourceVersion"))
        new = copy.deepcopy(current)
        if subresource == "status":
            new["status"] = copy.deepcopy(obj.get("status"))
        else:
            new = copy.deepcopy(dict(obj))
        self._bump(new)
        self.objects[key] = new
        return copy.deepcopy(new)

    async def update_status(self, kind: res.ResourceKind | str, obj: Mapping[str, Any], **kw: Any) -> dict[str, Any]:
        return await self.update(kind, obj, subresource="status")

    async def delete(self, kind: res.ResourceKind | str, name: str, *, namespace: str = "",
                     propagation_policy: str | None = None, preconditions: Mapping[str, str] | None = None,
                     **_: Any) -> dict[str, Any]:
        k = clients.resolve(kind)
        body = {"propagationPolicy": propagation_policy, "preconditions": dict(preconditions or {})}
        self.actions.append(Action(verb="delete", resource=k.group_resource, namespace=namespace, name=name,
                                   body=body))
        key = self._key(k, namespace, name)
        current = self.objects.get(key)
        if current is None:
            raise errors.NotFound.of(group=k.group, plural=k.plural, name=name)
        pre = preconditions or {}
        if pre.get("uid") and pre["uid"] != current["metadata"]["uid"]:
            raise errors.Conflict("Precondition failed: UID")
        self._check_rv(k, current, pre.get("resourceVersion"))
        self._mark_deleted(key, propagation_policy)
        return {"kind": "Status", "status": "Success"}

    def _mark_deleted(self, key: tuple[str, str, str], policy: str | None) -> None:
        obj = self.objects[key]
        meta = obj["metadata"]
        fins = list(meta.get("finalizers") or [])
        if policy == "Foreground" and "foregroundDeletion" not in fins:
            fins.append("foregroundDeletion")
        if policy == "Orphan" and "orphan" not in fins:
            fins.append("orphan")
        if fins:
            meta["finalizers"] = fins
            meta.setdefault("deletionTimestamp", clocks.rfc3339(self.clock.now()))
            self._bump(obj)
        else:
            del self.objects[key]

    async def delete_collection(self, kind: res.ResourceKind | str, *, namespace: str = "",
                                propagation_policy: str | None = None, **_: Any) -> dict[str, Any]:
        k = clients.resolve(kind)
        self.actions.append(Action(verb="deletecollection", resource=k.group_resource, namespace=namespace,
                                   body={"propagationPolicy": propagation_policy}))
        for key in [key for key in self.objects if key[0] == k.group_resource and key[1] == namespace]:
            self._mark_deleted(key, propagation_policy)
        return {"kind": f"{k.kind}List", "items": []}

    async def finalize_namespace(self, namespace: Mapping[str, Any]) -> dict[str, Any]:
        name = str((namespace.get("metadata") or {}).get("name") or "")
        self.actions.append(Action(verb="update", resource="namespaces", name=name, subresource="finalize",
                                   body=copy.deepcopy(dict(namespace))))
        key = ("namespaces", "", name)
        current = self.objects.get(key)
        if current is None:
            raise errors.NotFound.of(group="", plural="namespaces", name=name)
        fins = (namespace.get("spec") or {}).get("finalizers") or []
        current.setdefault("spec", {})["finalizers"] = list(fins)
        if not fins and not current["metadata"].get("finalizers"):
            del self.objects[key]
        return copy.deepcopy(current)

    async def create_event(self, event: Mapping[str, Any]) -> dict[str, Any]:
        ns = str((event.get("metadata") or {}).get("namespace") or "")
        self.actions.append(Action(verb="create", resource="events", namespace=ns, body=copy.deepcopy(dict(event))))
        return dict(event)


def seeded_informers(fake: FakeClient, objects: Iterable[tuple[str, dict[str, Any]]] | None = None,
                     ) -> informers.InformerFactory:
    """An InformerFactory that is never started; its caches are filled straight from the fake's
    objects (or `objects`), as sample-controller pushes objects into informer indexers."""
    factory = informers.InformerFactory(fake, clock=fake.clock)  # type: ignore[arg-type]
    source = objects if objects is not None else [(gr, o) for (gr, _ns, _n), o in fake.objects.items()]
    for resource, obj in source:
        factory.informer(resource).cache.upsert(copy.deepcopy(obj))
    return factory


def sync_caches(fake: FakeClient, factory: informers.InformerFactory) -> None:
    """Make every cache match the fake's objects (what watches would have delivered)."""
    for inf in factory.informers:
        gr = inf.kind.group_resource
        inf.cache.replace([copy.deepcopy(o) for (g, _ns, _n), o in fake.objects.items() if g == gr])


def owner_ref(obj: Mapping[str, Any], *, block: bool | None = None, controller: bool | None = None
              ) -> dict[str, Any]:
    meta = obj["metadata"]
    ref: dict[str, Any] = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"],
                           "uid": meta["uid"]}
    if controller is not None:
        ref["controller"] = controller
    if block is not None:
        ref["blockOwnerDeletion"] = block
    return ref


def cm(name: str, namespace: str = "default", *, owners: Iterable[Mapping[str, Any]] = (),
       finalizers: Iterable[str] = (), deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owners:
        meta["ownerReferences"] = [dict(o) for o in owners]
    if finalizers:
        meta["finalizers"] = list(finalizers)
    if deleting:
        meta["deletionTimestamp"] = "2027-01-15T08:00:00Z"
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def indexed(factory: informers.InformerFactory, indexers: Mapping[str, caches.IndexFunc]) -> None:
    for inf in factory.informers:
        inf.add_indexers(indexers)
