"""The objects kept in memory (`storage.heads`): bounded by bytes, loaded in pages, warmed at start-up.

In scope: the budget (the least recently listed resource dropped to make room, a resource larger
than the budget not kept, what is served afterwards equal to the database), what a kept object costs
(tracemalloc, against its JSON and against what the budget charges), a load in pages while other
writes land between the pages (this process's and another process's), the warm-up a server starts
(every resource loaded, a LIST during it answering as the database), GETs served from memory.
Out of scope: the API's use of it (tests/api/test_list_streaming.py).
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from typing import Any

import pytest

from storage import factory, heads, log, sql
from tests.storage import writes
from tests.storage.conftest import OpenLog

PODS = {"group": "", "resource": "pods"}
CONFIGMAPS = {"group": "", "resource": "configmaps"}


def realistic_pod(i: int) -> dict[str, Any]:
    """A pod as the API server stores one (~2.4 KB of JSON: defaults, managedFields, status)."""
    name = f"web-7d9f8b6c5-{i:06d}"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "bench", "uid": f"6f1c2a9e-{i:04x}-4000-8000-00000000{i:04x}",
                     "generateName": "web-7d9f8b6c5-", "labels": {"app": "web", "pod-template-hash": "7d9f8b6c5"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f8b6c5",
                                          "uid": "0b8a3c1e-1111-4000-8000-000000000001", "controller": True,
                                          "blockOwnerDeletion": True}],
                     "creationTimestamp": "2026-01-01T00:00:00Z",
                     "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                                        "apiVersion": "v1", "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                                        "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {}},
                                                     "f:spec": {"f:containers": {}}}}]},
        "spec": {"nodeName": f"node-{i % 500}", "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                 "dnsPolicy": "ClusterFirst", "serviceAccountName": "default", "schedulerName": "default-scheduler",
                 "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
                 "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                  "effect": "NoExecute", "tolerationSeconds": 300},
                                 {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                  "effect": "NoExecute", "tolerationSeconds": 300}],
                 "containers": [{"name": "web", "image": "registry.example.com/web:1.27",
                                 "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                                 "terminationMessagePath": "/dev/termination-log",
                                 "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}]},
        "status": {"phase": "Running", "qosClass": "Burstable", "podIP": f"10.1.{i // 250 % 250}.{i % 250}",
                   "hostIP": "192.168.0.10", "startTime": "2026-01-01T00:00:01Z",
                   "conditions": [{"type": t, "status": "True", "lastProbeTime": None,
                                   "lastTransitionTime": "2026-01-01T00:00:02Z"}
                                  for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                            "PodScheduled")],
                   "containerStatuses": [{"name": "web", "ready": True, "restartCount": 0, "started": True,
                                          "image": "registry.example.com/web:1.27", "imageID": "",
                                          "containerID": f"containerd://{i:064x}",
                                          "state": {"running": {"startedAt": "2026-01-01T00:00:02Z"}}}]},
    }


def _pod_write(i: int) -> log.Write:
    obj = realistic_pod(i)
    return log.Write(type="ADDED", group="", resource="pods", namespace="bench", name=obj["metadata"]["name"],
                     object=obj, expected_revision=0, time=1767225600.0 + i,
                     actor=log.Actor(user="system:serviceaccount:kube-system:replicaset-controller",
                                     field_manager="kube-controller-manager",
                                     user_agent="kube-controller-manager/v1.37.1 (linux/amd64)",
                                     request_id=f"{i:032x}"))


async def _same_as_stored(event_log: sql.SqlEventLog, kind: dict[str, str], served: log.ListResult) -> None:
    stored = await event_log._list_stored(kind["group"], kind["resource"], None, served.revision, None, None)
    assert served == stored


async def test_the_least_recently_listed_resource_makes_room(event_log: sql.SqlEventLog) -> None:
    for i in range(4):
        await event_log.append(writes.added(f"p{i}"))
        await event_log.append(writes.added(f"c{i}", resource="configmaps"))
    cache = event_log._broadcaster.heads
    pods = await event_log.list_objects(**PODS, namespace=None)
    one_resource = cache.bytes
    cache.max_bytes = one_resource + one_resource // 2  # one resource and a half
    configmaps = await event_log.list_objects(**CONFIGMAPS, namespace=None)
    assert cache.loaded_at(**CONFIGMAPS) is not None
    assert cache.loaded_at(**PODS) is None and cache.evictions == 1  # listed least recently: dropped
    assert cache.bytes <= cache.max_bytes
    await _same_as_stored(event_log, PODS, pods)
    await _same_as_stored(event_log, CONFIGMAPS, configmaps)
    again = await event_log.list_objects(**PODS, namespace=None)  # loaded again; configmaps make room
    assert cache.loaded_at(**PODS) is not None and cache.loaded_at(**CONFIGMAPS) is None
    await _same_as_stored(event_log, PODS, again)
    # Growing past the budget by writes drops the other resource first, then the resource itself.
    await event_log.list_objects(**CONFIGMAPS, namespace=None)
    for i in range(4, 7):
        await event_log.append(writes.added(f"c{i}", resource="configmaps"))
    assert cache.loaded_at(**PODS) is None and cache.loaded_at(**CONFIGMAPS) is None
    assert cache.bytes == 0 and len(cache) == 0
    assert cache.refused(**CONFIGMAPS) and not cache.refused(**PODS)
    listed = await event_log.list_objects(**CONFIGMAPS, namespace=None)  # refused: read from the database
    assert [e.name for e in listed.events] == [f"c{i}" for i in range(7)]
    await _same_as_stored(event_log, CONFIGMAPS, listed)


async def test_a_budget_of_zero_keeps_nothing(open_log: OpenLog) -> None:
    event_log = await open_log()
    event_log._broadcaster.heads.max_bytes = 0
    await event_log.append(writes.added("p0"))
    listed = await event_log.list_objects(**PODS, namespace=None)
    assert [e.name for e in listed.events] == ["p0"] and len(event_log._broadcaster.heads) == 0


async def test_a_kept_pod_costs_at_most_half_again_its_json(event_log: sql.SqlEventLog) -> None:
    await asyncio.gather(*(event_log.append(_pod_write(i)) for i in range(3000)))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        listed = await event_log.list_objects(**PODS, namespace=None)
        json_bytes = sum(len(e.object) for e in listed.events)
        del listed
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    cache = event_log._broadcaster.heads
    assert len(cache) == 3000
    assert 1500 < json_bytes / 3000 < 3000
    assert kept <= 1.5 * json_bytes, (kept / 3000, json_bytes / 3000)
    # What the budget charges covers what it costs (beside the database driver's read buffers, ~1 MB).
    assert kept <= cache.bytes + (1 << 20)


async def test_a_load_in_pages_with_writes_between_them(open_log: OpenLog, monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes of this process and of another land between the pages of a load; the loaded state is
    the database's, and stays so."""
    event_log, other = await open_log(), await open_log()
    live: dict[str, log.Event] = {}
    for i in range(20):
        live[f"p{i:02d}"] = await event_log.append(writes.added(f"p{i:02d}"))
    monkeypatch.setattr(sql, "LOAD_PAGE", 3)
    read_page = event_log._list_stored
    step = 0

    async def page_then_write(*args: Any) -> log.ListResult:
        nonlocal step
        page = await read_page(*args)
        step += 1
        writer = event_log if step % 2 else other
        names = sorted(live)
        target = names[(step * 7) % len(names)]  # before, in or after the pages read so far
        if step % 3 == 0:
            await writer.append(writes.deleted(live.pop(target)))
        else:
            live[target] = await writer.append(writes.modified(live[target], spec={"step": step}))
        live[f"new{step}"] = await writer.append(writes.added(f"new{step}"))
        return page

    monkeypatch.setattr(event_log, "_list_stored", page_then_write)
    served = await event_log.list_objects(**PODS, namespace=None)
    monkeypatch.setattr(event_log, "_list_stored", read_page)
    assert step >= 7
    assert event_log._broadcaster.heads.loaded_at(**PODS) is not None
    await _same_as_stored(event_log, PODS, served)
    assert {e.name: e.revision for e in served.events} == {name: e.revision for name, e in live.items()}
    await other.append(writes.added("later"))
    await _same_as_stored(event_log, PODS, await event_log.list_objects(**PODS, namespace=None))


async def test_the_warm_up_loads_every_resource_while_lists_stay_exact(
        log_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seed = factory.open_event_log(url=log_url)
    await seed.start()
    try:
        for i in range(10):
            await seed.append(writes.added(f"p{i}"))
        for i in range(4):
            await seed.append(writes.added(f"c{i}", resource="configmaps"))
    finally:
        await seed.close()
    monkeypatch.setattr(sql, "LOAD_PAGE", 2)
    event_log = factory.open_event_log(url=log_url, warm_cache=True)
    during: list[asyncio.Task[log.ListResult]] = []
    read_page = event_log._list_stored

    async def page_then_list(*args: Any) -> log.ListResult:
        page = await read_page(*args)
        if len(during) < 4:  # LISTs (and a write) while the warm-up runs
            during.append(asyncio.create_task(event_log.list_objects(**PODS, namespace=None)))
            await event_log.append(writes.added(f"during{len(during)}"))
        return page

    monkeypatch.setattr(event_log, "_list_stored", page_then_list)
    await event_log.start()
    try:
        await event_log.warmed.wait()
        monkeypatch.setattr(event_log, "_list_stored", read_page)
        cache = event_log._broadcaster.heads
        assert cache.loaded_at(**PODS) is not None and cache.loaded_at(**CONFIGMAPS) is not None
        assert len(during) == 4
        for task in during:
            await _same_as_stored(event_log, PODS, await task)
        latest = await event_log.list_objects(**PODS, namespace=None)
        await _same_as_stored(event_log, PODS, latest)
        assert len(latest.events) == 14
    finally:
        await event_log.close()


async def test_gets_from_memory_answer_as_the_database(open_log: OpenLog) -> None:
    event_log, other = await open_log(), await open_log()
    first = await event_log.append(writes.added("p0"))
    await event_log.list_objects(**PODS, namespace=None)  # kept from now on
    changed = await other.append(writes.modified(first, spec={"x": 1}))  # another process
    got = await event_log.get(**PODS, namespace="default", name="p0")
    assert got == changed
    assert await event_log.get(**PODS, namespace="default", name="p0", revision=first.revision) == first
    await event_log.append(writes.deleted(changed))
    assert await event_log.get(**PODS, namespace="default", name="p0") is None
    assert await event_log.get(**PODS, namespace="default", name="absent") is None


async def test_the_latest_known_version_may_lag_another_process(open_log: OpenLog,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sql.SqlEventLog, "poll_interval", 3600.0)  # nothing published but on demand
    event_log, other = await open_log(), await open_log()
    first = await event_log.append(writes.added("p0"))
    await event_log.list_objects(**PODS, namespace=None)  # kept from now on
    changed = await other.append(writes.modified(first, spec={"x": 1}))  # another process
    key = {**PODS, "namespace": "default", "name": "p0"}
    # a first guess: not learnt yet, unless PostgreSQL's notification of the other write came first
    assert await event_log.get(**key, latest_known=True) in (first, changed)
    assert await event_log.get(**key) == changed  # a read learns the database's revision
    await event_log.wait_for_revision(revision=changed.revision)
    assert await event_log.get(**key, latest_known=True) == changed


def test_cost_counts_the_json_and_the_unique_strings() -> None:
    event = log.Event(revision=1, type="ADDED", group="", resource="pods", namespace="d", name="n", uid="u",
                      object=b"{}", prev_revision=0, time=0.0, actor=log.Actor(request_id="r"))
    assert heads.cost(event) == heads.ENTRY_OVERHEAD + 2 + 1 + 1 + 1
    assert heads.compact(event) == event


async def test_a_load_outlives_the_list_that_started_it(event_log: sql.SqlEventLog,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    await event_log.append(writes.added("p0"))
    gate, reading = asyncio.Event(), asyncio.Event()
    read_page = event_log._list_stored

    async def held(*args: Any) -> log.ListResult:
        reading.set()
        await gate.wait()
        return await read_page(*args)

    monkeypatch.setattr(event_log, "_list_stored", held)
    listing = asyncio.create_task(event_log.list_objects(**PODS, namespace=None))
    await reading.wait()
    listing.cancel()  # the client went away
    with pytest.raises(asyncio.CancelledError):
        await listing
    load = event_log._loads[("", "pods")]
    gate.set()
    await load
    assert event_log._broadcaster.heads.loaded_at(**PODS) is not None
    monkeypatch.setattr(event_log, "_list_stored", read_page)
    await _same_as_stored(event_log, PODS, await event_log.list_objects(**PODS, namespace=None))


async def test_a_page_does_not_wait_for_a_load(event_log: sql.SqlEventLog, monkeypatch: pytest.MonkeyPatch) -> None:
    """A LIST with a limit or a namespace reads the database while its resource loads (it would answer
    in milliseconds); the load it started goes on; a full LIST waits for it."""
    for i in range(3):
        await event_log.append(writes.added(f"p{i}"))
    gate = asyncio.Event()
    read_page = event_log._list_stored

    async def held(*args: Any) -> log.ListResult:
        if args[4] is None and args[5] == sql.LOAD_PAGE:  # the load's first page
            await gate.wait()
        return await read_page(*args)

    monkeypatch.setattr(event_log, "_list_stored", held)
    page = await event_log.list_objects(**PODS, namespace=None, limit=2)  # starts the load, does not wait
    assert [e.name for e in page.events] == ["p0", "p1"] and page.more
    one = await event_log.list_objects(**PODS, namespace="default")
    assert len(one.events) == 3
    assert ("", "pods") in event_log._loads and event_log._broadcaster.heads.loaded_at(**PODS) is None
    full = asyncio.create_task(event_log.list_objects(**PODS, namespace=None))
    gate.set()
    served = await full
    assert event_log._broadcaster.heads.loaded_at(**PODS) is not None
    await _same_as_stored(event_log, PODS, served)
