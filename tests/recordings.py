"""Recorded runs, shared by the tests of what reads them (storage's recording sources and replay
log, the replay server, the `cplane log` and `cplane replay` commands): an in-process server on
SQLite with the controllers, writes by two "users", and the GC and namespace controllers reacting
to them; synthetic NDJSON lines with exact times; and a `Timeline` to find revisions by content.
No sleeps: every wait is a bounded poll on an observable condition.

`recorded` is a module-scoped fixture: a directory's conftest exposes it with
`from tests.recordings import recorded as recorded`."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from api import server as servers
from controllers import registry
from controllers.runtime import client as clients
from cp import clock as clocks
from cp import errors
from cp import resources as res
from storage import ndjson
from tests import waiting

_decode = msgspec.json.Decoder().decode

# Every kind the server serves, as list paths across all namespaces.
LIST_PATHS = [(k, k.path_prefix() + "/" + k.plural) for k in res.KINDS if "list" in k.verbs and k.stored]


eventually = functools.partial(waiting.eventually, within=10.0)


async def _gone(client: clients.Client, resource: str, name: str, namespace: str = "") -> bool:
    try:
        await client.get(resource, name, namespace=namespace)
    except errors.NotFound:
        return True
    return False


@contextlib.asynccontextmanager
async def controllers_running(url: str, *, names: list[str] | None = None,
                              clock: clocks.Clock | None = None) -> AsyncIterator[None]:
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.ensure_future(registry.run_controllers(server_url=url, names=names, clock=clock,
                                                          stop_event=stop, ready=ready))
    try:
        await asyncio.wait_for(ready.wait(), 15)
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 15)


async def scenario(url: str, *, gc: bool = True) -> None:
    """Writes by two users; the GC (if running: `gc`) and the namespace controller finish what they start."""
    alice = clients.Client(url, user_agent="alice-cli/1.0")
    bob = clients.Client(url, user_agent="bob-tool/2.3")
    async with alice, bob:
        await alice.create("namespaces", {"metadata": {"name": "shop"}}, field_manager="alice")
        await alice.create("configmaps", {"metadata": {"name": "cfg", "namespace": "shop"},
                                          "data": {"color": "blue"}}, field_manager="alice")
        pod = {"metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
               "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}
        await alice.create("pods", pod, field_manager="alice")
        await bob.patch("pods", "web", {"metadata": {"labels": {"tier": "front"}}}, namespace="shop",
                        field_manager="bob")
        await bob.patch("configmaps", "cfg", {"data": {"color": "green", "size": "L"}}, namespace="shop",
                        field_manager="bob")
        # An owner and its dependent in default: deleting the owner makes the GC delete the dependent.
        owner = await alice.create("configmaps", {"metadata": {"name": "owner", "namespace": "default"}})
        await alice.create("configmaps", {"metadata": {
            "name": "dependent", "namespace": "default",
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                                 "uid": owner["metadata"]["uid"]}]}})
        for i in range(3):
            await bob.create("leases.coordination.k8s.io", {
                "metadata": {"name": f"lease-{i}", "namespace": "kube-system"},
                "spec": {"holderIdentity": f"bob-{i}"}}, field_manager="bob")
        await alice.delete("configmaps", "owner", namespace="default")
        if gc:
            await eventually(lambda: _gone(alice, "configmaps", "dependent", "default"), what="GC of dependent")
        # Content with a finalizer keeps the namespace Terminating until the finalizer goes.
        await alice.create("configmaps", {"metadata": {"name": "held", "namespace": "shop",
                                                       "finalizers": ["example.com/hold"]}})
        await alice.delete("namespaces", "shop")
        await eventually(lambda: _gone(alice, "pods", "web", "shop"), what="namespace emptied")
        await bob.patch("configmaps", "held", {"metadata": {"finalizers": None}}, namespace="shop",
                        field_manager="bob")
        await eventually(lambda: _gone(alice, "namespaces", "shop"), what="namespace removed")
        # Recreate an object under the same name (a second incarnation).
        await alice.create("configmaps", {"metadata": {"name": "owner", "namespace": "default"},
                                          "data": {"again": "yes"}})
        lease = await bob.get("leases.coordination.k8s.io", "lease-0", namespace="kube-system")
        lease["spec"]["holderIdentity"] = "bob-renewed"
        await bob.update("leases.coordination.k8s.io", lease, field_manager="bob")


async def export(event_log: Any, path: Path, *, end: int | None = None) -> int:
    with path.open("wb") as out:
        return await ndjson.export_events(event_log, out=out, end=end)


@contextlib.asynccontextmanager
async def recorded_run(tmp: Path, *, clock: clocks.Clock | None = None,
                       controllers: list[str] | None = None) -> AsyncIterator[tuple[servers.Running, int, Path]]:
    """A live server (SQLite in tmp/live) that ran the scenario with the controllers (None: all; the
    namespace controller is needed); yields it, the last recorded revision and the NDJSON export (tmp/run.ndjson). The server stays up
    inside the block."""
    async with servers.running(data_dir=tmp / "live", clock=clock) as srv:
        async with controllers_running(srv.url, names=controllers, clock=clock):
            await scenario(srv.url, gc=controllers is None or "garbage-collector" in controllers)
        last = srv.event_log.revision
        path = tmp / "run.ndjson"
        await export(srv.event_log, path, end=last)
        yield srv, last, path


class Recorded(msgspec.Struct, kw_only=True, dict=True):
    data_dir: Path  # the live run's data dir (cplane.db)
    ndjson: Path  # its export
    last: int  # the last recorded revision

    @property
    def timeline(self) -> Timeline:
        if "_timeline" not in self.__dict__:
            self.__dict__["_timeline"] = Timeline(self.ndjson)
        return self.__dict__["_timeline"]  # type: ignore[no-any-return]


async def record_to_disk(tmp: Path) -> Recorded:
    async with recorded_run(tmp) as (_srv, last, path):
        pass
    return Recorded(data_dir=tmp / "live", ndjson=path, last=last)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """One recorded run per module, on disk: the live data dir (SQLite) and its NDJSON export."""
    tmp = tmp_path_factory.mktemp("recorded")
    return asyncio.run(record_to_disk(tmp))


# -- synthetic recordings (exact times, no server) ---------------------------------------------------

_encode = msgspec.json.Encoder().encode


def configmap_line(revision: int, name: str, *, time: float, type_: str = "ADDED", prev: int = 0,
                   namespace: str = "default", data: dict[str, str] | None = None,
                   uid: str | None = None, user: str = "tester") -> bytes:
    """One NDJSON line: a ConfigMap event as the server would have stored it."""
    uid = uid or f"uid-{name}"
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": namespace, "uid": uid, "resourceVersion": str(revision),
                        "creationTimestamp": clocks.rfc3339(time)},
           "data": data or {}}
    line = {"revision": revision, "type": type_, "group": "", "resource": "configmaps", "namespace": namespace,
            "name": name, "uid": uid, "prev_revision": prev, "time": time, "actor": {"user": user},
            "object": obj}
    return _encode(line) + b"\n"


def clock_line(revision: int, *, time: float, to: float, prev: int = 0) -> bytes:
    """A sim.cplane.dev Clock event moving the virtual clock to `to`."""
    obj = {"apiVersion": f"{res.SIM_GROUP}/{res.SIM_VERSION}", "kind": "Clock",
           "metadata": {"name": "cluster", "uid": "uid-clock", "resourceVersion": str(revision)},
           "spec": {"mode": "Virtual", "time": clocks.rfc3339_micro(to)}}
    line = {"revision": revision, "type": "MODIFIED" if prev else "ADDED", "group": res.SIM_GROUP,
            "resource": "clocks", "namespace": "", "name": "cluster", "uid": "uid-clock", "prev_revision": prev,
            "time": time, "actor": {"user": "clock"}, "object": obj}
    return _encode(line) + b"\n"


def paced_lines(times: list[float]) -> list[bytes]:
    """ConfigMaps cm-0, cm-1... ADDED at the given times (revision i+1)."""
    return [configmap_line(i + 1, f"cm-{i}", time=t) for i, t in enumerate(times)]


class Timeline:
    """The recorded events of an NDJSON export, to find revisions by content: controllers interleave
    their writes with the scenario's, so tests never hard-code revision numbers."""

    def __init__(self, path: Path) -> None:
        self.events: list[dict[str, Any]] = [_decode(line) for line in path.read_bytes().splitlines()]
        self.last = self.events[-1]["revision"]

    @staticmethod
    def ref(e: dict[str, Any]) -> str:
        gr = f"{e['resource']}.{e['group']}" if e["group"] else e["resource"]
        return f"{gr}/{e['namespace']}/{e['name']}" if e["namespace"] else f"{gr}/{e['name']}"

    def find(self, type_: str, ref: str, *, manager: str | None = None, nth: int = 0) -> dict[str, Any]:
        hits = [e for e in self.events if e["type"] == type_ and self.ref(e) == ref
                and (manager is None or e["actor"].get("field_manager") == manager)]
        return hits[nth]

    def rev(self, type_: str, ref: str, *, manager: str | None = None, nth: int = 0) -> int:
        return int(self.find(type_, ref, manager=manager, nth=nth)["revision"])

    def of(self, ref: str) -> list[dict[str, Any]]:
        return [e for e in self.events if self.ref(e) == ref]

    def time(self, revision: int) -> float:
        return float(next(e["time"] for e in self.events if e["revision"] == revision))

    def names(self, revision: int, resource: str, namespace: str | None = None) -> list[str]:
        """Names of the live objects of a (core) resource at a revision."""
        live: dict[tuple[str, str], bool] = {}
        for e in self.events:
            if e["revision"] > revision:
                break
            if e["resource"] == resource and e["group"] == "" and namespace in (None, e["namespace"]):
                live[(e["namespace"], e["name"])] = e["type"] != "DELETED"
        return sorted(name for (_ns, name), alive in live.items() if alive)

    def cut(self, at_least: int) -> tuple[int, float]:
        """(r, t): the first revision r >= at_least with every event up to r before time t and every later
        event after it. (Event times need not grow with revisions: a write's time is taken before it
        queues for the group commit, so concurrent writers can interleave.)"""
        times = [e["time"] for e in self.events]  # gapless from revision 1
        for r in range(at_least, len(times)):
            lo, hi = max(times[:r]), min(times[r:])
            if lo < hi:
                return r, (lo + hi) / 2
        raise AssertionError(f"no clean time cut after revision {at_least}")
