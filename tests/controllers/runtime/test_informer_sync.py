"""Informers against an in-process API server: the initial sync through a watch-list, the
LIST + WATCH fallback when the server answers 422, add / update / delete events reaching
handlers, a relist after a 410 forced by compacting the log (with synthetic deletes for objects
that vanished meanwhile), handlers added late, and the shared factory.

Out of scope: the cache's index bookkeeping (test_cache_indexes.py).
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any

from api import server as servers
from api import state as st
from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from cp import clock as clocks
from cp import errors
from cp import resources as res
from tests.waiting import eventually

CONFIGMAPS = clients.resolve("configmaps")


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []  # (type, name, resourceVersion)

    def _rec(self, type_: str, obj: dict[str, Any]) -> None:
        meta = caches.meta(obj)
        self.events.append((type_, str(meta.get("name")), str(meta.get("resourceVersion"))))

    def on_add(self, obj: dict[str, Any]) -> None:
        self._rec("add", obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        assert caches.key_of(old) == caches.key_of(new)
        self._rec("update", new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        self._rec("delete", obj)

    def names(self, type_: str) -> list[str]:
        return [n for t, n, _ in self.events if t == type_]


class _GatedWatch:
    def __init__(self, inner: clients.WatchStream, gate: asyncio.Event) -> None:
        self.inner = inner
        self.gate = gate

    async def __aenter__(self) -> clients.WatchStream:
        await self.gate.wait()
        return await self.inner.__aenter__()

    async def __aexit__(self, t: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.inner.__aexit__(t, e, tb)


class ScriptedClient(clients.Client):
    """A real client whose watches can be held at a gate, and which can refuse watch-lists."""

    def __init__(self, url: str, *, refuse_watch_list: bool = False) -> None:
        super().__init__(url)
        self.refuse_watch_list = refuse_watch_list
        self.gate = asyncio.Event()
        self.gate.set()
        self.watch_calls: list[dict[str, Any]] = []
        self.list_calls = 0

    def watch(self, kind: res.ResourceKind | str, **kw: Any) -> Any:
        self.watch_calls.append(kw)
        if kw.get("send_initial_events") and self.refuse_watch_list:
            return _Refused()
        return _GatedWatch(super().watch(kind, **kw), self.gate)

    async def list(self, kind: res.ResourceKind | str, **kw: Any) -> clients.ObjectList:
        self.list_calls += 1
        return await super().list(kind, **kw)


class _Refused:
    async def __aenter__(self) -> None:
        raise errors.Invalid(kind="ListOptions", group="meta.k8s.io", name="", causes=[])

    async def __aexit__(self, *exc: object) -> None:
        return None


async def _cm(client: clients.Client, name: str, **data: str) -> dict[str, Any]:
    return await client.create("configmaps", {"metadata": {"name": name, "namespace": "default"}, "data": data})


async def test_initial_sync_then_events(srv: servers.Running, client: clients.Client) -> None:
    await _cm(client, "a")
    await _cm(client, "b")
    async with ScriptedClient(srv.url) as c:
        inf = informers.Informer(c, CONFIGMAPS, clock=clocks.RealClock(), namespace="default")
        rec = Recorder()
        inf.add_handler(rec)
        inf.start()
        try:
            await asyncio.wait_for(inf.wait_for_sync(), 5)
            assert sorted(rec.names("add")) == ["a", "b"]
            assert c.watch_calls[0]["send_initial_events"] is True and c.list_calls == 0
            assert inf.resource_version

            await client.patch("configmaps", "a", {"data": {"k": "v"}}, namespace="default")
            await eventually(lambda: rec.names("update") == ["a"], what="update event")
            cached = inf.cache.get("default", "a")
            assert cached is not None and cached["data"] == {"k": "v"}

            await client.delete("configmaps", "b", namespace="default")
            await eventually(lambda: rec.names("delete") == ["b"], what="delete event")
            assert inf.cache.get("default", "b") is None

            late = Recorder()
            inf.add_handler(late)  # replays the cache as adds
            assert late.names("add") == ["a"]
        finally:
            await inf.stop()


async def test_falls_back_to_list_and_watch_on_422(srv: servers.Running, client: clients.Client) -> None:
    await _cm(client, "a")
    async with ScriptedClient(srv.url, refuse_watch_list=True) as c:
        inf = informers.Informer(c, CONFIGMAPS, clock=clocks.RealClock(), namespace="default")
        rec = Recorder()
        inf.add_handler(rec)
        inf.start()
        try:
            await asyncio.wait_for(inf.wait_for_sync(), 5)
            assert c.list_calls == 1 and rec.names("add") == ["a"]
            assert not inf.use_watch_list
            await _cm(client, "b")
            await eventually(lambda: rec.names("add") == ["a", "b"], what="add over plain watch")
            assert c.watch_calls[-1].get("resource_version")  # watched from the list's RV
        finally:
            await inf.stop()


async def test_relists_after_410_and_reports_missed_changes(srv: servers.Running, client: clients.Client) -> None:
    await _cm(client, "a")
    await _cm(client, "b")
    async with ScriptedClient(srv.url) as c:
        inf = informers.Informer(c, CONFIGMAPS, clock=clocks.RealClock(), namespace="default")
        rec = Recorder()
        inf.add_handler(rec)
        inf.start()
        try:
            await asyncio.wait_for(inf.wait_for_sync(), 5)
            assert inf.relists == 1
            last_rv = inf.resource_version
            # Cut the stream while holding the informer's next watch at the gate.
            c.gate.clear()
            for task in list(srv.app[st.WATCHES]):  # type: ignore[index]
                task.cancel()
            await eventually(lambda: len(c.watch_calls) == 2, what="re-watch attempt")
            assert c.watch_calls[1]["resource_version"] == last_rv
            # Changes the informer cannot see, then compaction past its resourceVersion.
            await client.delete("configmaps", "a", namespace="default")
            await client.patch("configmaps", "b", {"data": {"k": "v"}}, namespace="default")
            await _cm(client, "c")
            await srv.event_log.compact(srv.event_log.revision)
            c.gate.set()
            await eventually(lambda: inf.relists == 2, what="relist after 410")
            assert c.watch_calls[2]["send_initial_events"] is True
            assert sorted(caches.key_of(o)[1] for o in inf.cache) == ["b", "c"]
            b = inf.cache.get("default", "b")
            assert b is not None and b["data"] == {"k": "v"}
            after = rec.events[2:]
            assert sorted((t, n) for t, n, _ in after) == [("add", "c"), ("delete", "a"), ("update", "b")]
            # ...and it keeps watching afterwards.
            await _cm(client, "d")
            await eventually(lambda: "d" in rec.names("add"), what="event after relist")
        finally:
            await inf.stop()


async def test_factory_shares_one_informer_per_resource(srv: servers.Running, client: clients.Client) -> None:
    await _cm(client, "a")
    factory = informers.InformerFactory(client, clock=clocks.RealClock())
    one = factory.informer("configmaps", indexers={caches.OWNER_UID: caches.by_owner_uid})
    two = factory.informer(CONFIGMAPS, indexers={caches.UID: caches.by_uid})
    assert one is two and {caches.OWNER_UID, caches.UID} <= set(one.cache.indexers)
    factory.informer("namespaces")
    factory.start()
    try:
        await asyncio.wait_for(factory.wait_for_sync(), 5)
        assert factory.cache("namespaces").get("", "default") is not None
        assert factory.cache("configmaps").get("default", "a") is not None
    finally:
        await factory.stop()
    assert not any(inf.running for inf in factory.informers)
