"""Two `cplane serve` replicas on one PostgreSQL schema (issue #11).

- A write acknowledged by replica A reaches a watch on replica B, in revision order, within 100 ms.
- Replica A is killed (SIGKILL) while clients stream from it: raw watch clients reconnect to B, and
  the controllers' own Informer reconnects through a load balancer; each resumes from the last
  resourceVersion it saw, and what each received is exactly the event log's sequence for its
  watch — no gap, no duplicate, no relist.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import aiohttp
import pytest

from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from cp import clock as clocks
from cp.testing import eventually
from storage import factory, log
from tests.e2e.scaleout import cluster as clusters

pytestmark = pytest.mark.postgres

NAMESPACES = ("ns-0", "ns-1", "ns-2")


def configmap(name: str, namespace: str, value: str = "0") -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"v": value}}


async def post(http: aiohttp.ClientSession, url: str, body: dict[str, object]) -> dict[str, object]:
    async with http.post(url, json=body) as response:
        data = await response.json()
        assert response.status == 201, data
        return data  # type: ignore[no-any-return]


async def read_log(db_url: str, *, resource: str, after: int) -> list[log.Event]:
    """Every event of `resource` (core group) after `after`, read from the database itself."""
    event_log = factory.open_event_log(url=db_url)
    await event_log.start()
    try:
        out: list[log.Event] = []
        cursor = after
        while batch := await event_log.after(cursor, limit=1000):
            out += [e for e in batch if e.group == "" and e.resource == resource]
            cursor = batch[-1].revision
        return out
    finally:
        await event_log.close()


async def test_writes_through_one_replica_reach_watches_on_the_other_in_order_within_100_ms(
        pg_url: str, tmp_path: Path) -> None:
    async with clusters.cluster(db_url=pg_url, workdir=tmp_path) as c, aiohttp.ClientSession() as http:
        a, b = await c.replicas(2)
        listed = await clusters.get_json(http, f"{b.url}/api/v1/namespaces/default/configmaps")
        start = int(listed["metadata"]["resourceVersion"])
        watcher = clusters.Watcher([b.url], "/api/v1/namespaces/default/configmaps", resource_version=start)
        watching = asyncio.ensure_future(watcher.run())
        try:
            await asyncio.wait_for(watcher.streaming.wait(), 10)  # B streams before the first write
            acked: dict[int, float] = {}  # revision -> when A's answer arrived

            async def writer(first: int, count: int) -> None:
                for i in range(first, first + count):
                    path = f"{a.url}/api/v1/namespaces/default/configmaps"
                    created = await post(http, path, configmap(f"cm-{i}", "default"))
                    acked[int(created["metadata"]["resourceVersion"])] = time.monotonic()  # type: ignore[index]

            # 4 concurrent writers: group-committed batches, not only one write at a time
            await asyncio.gather(*(writer(n * 50, 50) for n in range(4)))
            watcher.stop_at(max(acked))
            await watcher.wait(within=10)
        finally:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching
        received = [revision for revision, *_ in watcher.events]
        assert received == sorted(acked), "B's watch must deliver exactly A's writes, in revision order"
        assert watcher.connected == [(b.url, 0)] and not watcher.failures
        lag = sorted(max(0.0, watcher.events[i][4] - acked[revision]) * 1000
                     for i, revision in enumerate(received))
        p50, p99, worst = lag[len(lag) // 2], lag[int(len(lag) * 0.99)], lag[-1]
        print(f"A acknowledged -> B's watch: p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {worst:.1f} ms "
              f"({len(lag)} writes)")
        # The bound is 100 ms per write. On a 2-core machine shared by four processes (two replicas,
        # PostgreSQL, this test) the OS can stall any of them, so 1 % may exceed it; a missed NOTIFY
        # would show as the 1 s poll interval.
        assert p99 <= 100, f"p99 {p99:.1f} ms (p50 {p50:.1f} ms, max {worst:.1f} ms)"
        assert worst < 500, f"slowest delivery {worst:.1f} ms: a notification was missed?"


async def test_a_list_on_one_replica_reflects_every_write_acknowledged_by_the_other(
        pg_url: str, tmp_path: Path) -> None:
    """Read-your-writes across replicas, with B answering LISTs from memory: each write acknowledged
    by A is in the very next LIST on B (B first reads the database's revision and catches up)."""
    async with clusters.cluster(db_url=pg_url, workdir=tmp_path) as c, aiohttp.ClientSession() as http:
        a, b = await c.replicas(2)
        path = "/api/v1/namespaces/default/configmaps"
        await clusters.get_json(http, f"{b.url}{path}")  # B now keeps configmaps in memory
        for i in range(30):
            created = await post(http, f"{a.url}{path}", configmap(f"cm-{i}", "default", str(i)))
            listed = await clusters.get_json(http, f"{b.url}{path}")
            names = [item["metadata"]["name"] for item in listed["items"]]  # type: ignore[index]
            assert f"cm-{i}" in names and len(names) == i + 1
            assert int(listed["metadata"]["resourceVersion"]) >= int(
                created["metadata"]["resourceVersion"])  # type: ignore[index]
        async with http.delete(f"{a.url}{path}/cm-0") as response:
            assert response.status == 200
        listed = await clusters.get_json(http, f"{b.url}{path}")
        assert "cm-0" not in [item["metadata"]["name"] for item in listed["items"]]  # type: ignore[index]


async def test_a_killed_replica_s_watchers_resume_on_the_other_without_gaps_or_duplicates(
        pg_url: str, tmp_path: Path) -> None:
    async with clusters.cluster(db_url=pg_url, workdir=tmp_path) as c, aiohttp.ClientSession() as http:
        a, b = await c.replicas(2)
        for ns in NAMESPACES:
            await post(http, f"{a.url}/api/v1/namespaces", {"metadata": {"name": ns}})
        listed = await clusters.get_json(http, f"{a.url}/api/v1/configmaps")
        start = int(listed["metadata"]["resourceVersion"])
        async with clusters.Balancer([a.url, b.url]) as lb:
            # Three clients streaming from A: two raw watches (all namespaces; one namespace) that
            # fail over to B themselves, and the controllers' Informer behind the load balancer.
            every = clusters.Watcher([a.url, b.url], "/api/v1/configmaps", resource_version=start)
            one_ns = clusters.Watcher([a.url, b.url], "/api/v1/namespaces/ns-1/configmaps",
                                      resource_version=start)
            seen: list[tuple[str, int]] = []

            def record(what: str):  # type: ignore[no-untyped-def]
                return lambda *objs: seen.append((what, int(objs[-1]["metadata"]["resourceVersion"])))

            client = clients.Client(lb.url)
            informer = informers.Informer(client, clients.resolve("configmaps"), clock=clocks.RealClock())
            informer.add_handler(informers.Handlers(on_add=record("add"), on_update=record("update"),
                                                    on_delete=record("delete")))
            tasks = [asyncio.ensure_future(every.run()), asyncio.ensure_future(one_ns.run())]
            informer.start()
            try:
                await asyncio.wait_for(informer.wait_for_sync(), 10)
                synced_at = int(informer.resource_version)
                seen.clear()  # what the initial sync delivered (nothing: no ConfigMap exists yet)
                assert lb.connections == {0: 1}, "the informer streams from A"
                await asyncio.wait_for(asyncio.gather(every.streaming.wait(), one_ns.streaming.wait()), 10)
                assert every.connected == one_ns.connected == [(a.url, 0)]

                # The load: creates, updates and deletes through the balancer (A, then B once A is
                # gone), 4 writers with their own objects; A is killed after a third of the writes.
                writes = 240
                done = 0
                killed_at_write = 0
                outcomes = {"done": 0, "refused": 0, "cut": 0}

                async def write(n: int, j: int) -> None:
                    ns = NAMESPACES[j % 3]
                    base = f"{lb.url}/api/v1/namespaces/{ns}/configmaps"
                    try:
                        if j % 6 == 4:  # update the one this writer created at j - 3 (same namespace)
                            request = http.patch(f"{base}/cm-{n}-{j - 3}", json={"data": {"v": str(j)}},
                                                 headers={"Content-Type": "application/merge-patch+json"})
                        elif j % 6 == 5:  # delete the one created at j - 3
                            request = http.delete(f"{base}/cm-{n}-{j - 3}")
                        else:
                            request = http.post(base, json=configmap(f"cm-{n}-{j}", ns))
                        async with request as r:
                            await r.read()
                            outcomes["done" if r.status < 300 else "refused"] += 1
                    except (aiohttp.ClientError, OSError):
                        outcomes["cut"] += 1  # in flight on A when it died: either outcome is fine

                async def writer(n: int) -> None:
                    nonlocal done, killed_at_write
                    for j in range(writes // 4):
                        await write(n, j)
                        done += 1
                        if done == writes // 3 and not killed_at_write:
                            killed_at_write = done
                            await a.kill()

                await asyncio.gather(*(writer(n) for n in range(4)))
                assert killed_at_write and not a.running

                truth = await read_log(pg_url, resource="configmaps", after=start)
                assert outcomes["done"] <= len(truth) <= outcomes["done"] + outcomes["cut"], outcomes
                assert outcomes["done"] > writes * 0.8, outcomes
                last = truth[-1].revision
                last_ns1 = max(e.revision for e in truth if e.namespace == "ns-1")
                every.stop_at(last)
                one_ns.stop_at(last_ns1)
                await asyncio.gather(every.wait(10), one_ns.wait(10))
                await eventually(lambda: int(informer.resource_version or 0) >= last, within=10,
                                 what=f"the informer at revision {last}")
            finally:
                for task in tasks:
                    task.cancel()
                results = await asyncio.gather(*tasks, return_exceptions=True)
                failed = [r for r in results if isinstance(r, Exception)]
                await informer.stop()
                await client.close()
            if failed:
                raise failed[0]

        def expected(events: list[log.Event]) -> list[tuple[int, str, str, str]]:
            return [(e.revision, e.type, e.namespace, e.name) for e in events]

        for watcher, events in ((every, truth), (one_ns, [e for e in truth if e.namespace == "ns-1"])):
            got = [event[:4] for event in watcher.events]
            assert got == expected(events), "a resumed watch must equal the log: no gap, no duplicate"
            # one reconnection, to B, with events streamed from A before it and from B after it
            assert [url for url, _ in watcher.connected] == [a.url, b.url], watcher.connected
            assert 0 < watcher.connected[1][1] < len(watcher.events), watcher.connected

        kinds = {"ADDED": "add", "MODIFIED": "update", "DELETED": "delete"}
        assert seen == [(kinds[e.type], e.revision) for e in truth if e.revision > synced_at], \
            "the informer resumed from its last resourceVersion with exactly the log's events"
        assert informer.relists == 1, "resumed, not relisted"
        assert lb.connections.get(1, 0) >= 1, "the informer reconnected through the balancer to B"
        print(f"{len(truth)} events; write outcomes {outcomes}; watch failures "
              f"{[w.failures for w in (every, one_ns)]}")


async def test_a_crd_created_through_one_replica_is_served_by_the_other(pg_url: str, tmp_path: Path) -> None:
    from tests.crds import WIDGETS

    async with clusters.cluster(db_url=pg_url, workdir=tmp_path) as c, aiohttp.ClientSession() as http:
        a, b = await c.replicas(2)
        await post(http, f"{a.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", WIDGETS)

        async def served() -> bool:
            async with http.get(f"{b.url}/apis/example.com/v1/widgets") as resp:
                return resp.status == 200

        await eventually(served, within=5.0)
        widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}}
        await post(http, f"{b.url}/apis/example.com/v1/namespaces/default/widgets", widget)
        got = await clusters.get_json(http, f"{a.url}/apis/example.com/v1/namespaces/default/widgets/w")
        assert got["metadata"]["name"] == "w"  # type: ignore[index]
        crd = await clusters.get_json(http, f"{a.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                            "widgets.example.com")
        # one NamesAccepted and one Established, however many replicas reconciled them
        assert sorted(c["type"] for c in crd["status"]["conditions"]) == ["Established", "NamesAccepted"]  # type: ignore[index]
