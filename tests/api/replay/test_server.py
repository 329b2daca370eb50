"""The replay server: control endpoints, refused writes, time travel below the cursor, watches with
the recorded resourceVersions, paced play (on a virtual pacer: no sleeps), the clock following the
recording, compacted recordings, and forks (a write, --fork-at, a fixed controller on the branch)."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import replay
from cp import clock as clocks
from cp import kubeconfig
from storage import factory, ndjson, recording
from storage import replay as replay_log
from tests import recordings
from tests.kubectl.conftest import KUBECTL

WRITES = [("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "x"}}),
          ("PUT", "/api/v1/namespaces/default/configmaps/owner", {"metadata": {"name": "owner"}}),
          ("PATCH", "/api/v1/namespaces/kube-system/leases/lease-0", {"spec": {}}),
          ("DELETE", "/api/v1/namespaces/default/configmaps/owner", None),
          ("DELETE", "/api/v1/namespaces/default/configmaps", None)]


async def _json(resp: aiohttp.ClientResponse) -> Any:
    return json.loads(await resp.read())


async def _control(http: aiohttp.ClientSession, action: str, **params: Any) -> tuple[int, Any]:
    method = "GET" if action == "" else "POST"
    path = replay.CONTROL + (f"/{action}" if action else "")
    async with http.request(method, path, params={k: str(v) for k, v in params.items()}) as r:
        return r.status, await _json(r)


def _recording(lines: list[bytes]) -> recording.Recording:
    return recording.Recording.from_ndjson(lines, description="test")


Made = recording.Recording | recording.SqlSource


@pytest.fixture(params=["memory", "stream"])
async def source_of(request: pytest.FixtureRequest,
                    tmp_path: Path) -> AsyncIterator[Callable[[list[bytes]], Awaitable[Made]]]:
    """Recordings of NDJSON lines: loaded in memory, or imported into an SQLite data dir and opened in
    place (a replay streams it from the store, `PAGE` events at a time). Both must replay alike."""
    opened: list[recording.SqlSource] = []

    async def make(lines: list[bytes]) -> Made:
        if request.param == "memory":
            return _recording(lines)
        data = tmp_path / f"recorded-{len(opened)}"
        data.mkdir()
        event_log = factory.open_event_log(url=f"sqlite+aiosqlite:///{data.resolve()}/cplane.db")
        await event_log.start()
        try:
            await ndjson.import_events(event_log, lines=lines)
        finally:
            await event_log.close()
        source = await recording.open_source(str(data))
        assert isinstance(source, recording.SqlSource)
        opened.append(source)
        return source

    yield make
    for source in opened:
        await source.close()


PAGE = 2


# ---------------------------------------------------------------------------------- reads and writes


@pytest.mark.parametrize(("method", "path", "body"), WRITES)
async def test_writes_are_refused_with_405(replayed: replay.ReplayServer, http: aiohttp.ClientSession,
                                           recorded: recordings.Recorded, method: str, path: str, body: Any) -> None:
    at = recorded.timeline.rev("ADDED", "leases.coordination.k8s.io/kube-system/lease-0")
    await replayed.replayer.until_revision(at)
    async with http.request(method, path, json=body,
                            headers={"Content-Type": "application/merge-patch+json"} if method == "PATCH"
                            else {}) as r:
        status = await _json(r)
        assert r.status == 405
    assert status["reason"] == "MethodNotAllowed"
    assert status["message"] == replay_log.WRITES_REFUSED
    assert replayed.log.revision == at and not replayed.log.forked


async def test_access_reviews_are_answered_not_refused(recorded: recordings.Recorded, tmp_path: Path) -> None:
    """A review writes nothing: a secure replay answers it (`kubectl auth can-i`, the web UI's write
    controls) instead of refusing it as a write, and one that forks on the first write does not fork."""
    async with recording.opened(str(recorded.ndjson)) as source, \
            replay.serving(source, data_dir=tmp_path / "replay", speed=None, fork=True, secure=True) as srv:
        token = kubeconfig.load(srv.kubeconfig).token
        attributes = {"verb": "create", "group": "sim.cplane.dev", "resource": "replay"}
        async with aiohttp.ClientSession(base_url=srv.url, headers={"Authorization": f"Bearer {token}"},
                                         connector=aiohttp.TCPConnector(ssl=False)) as http:
            for path, spec in [("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {}),
                               ("/apis/authorization.k8s.io/v1/subjectaccessreviews", {"user": "someone"})]:
                async with http.post(path, json={"apiVersion": "authorization.k8s.io/v1",
                                                 "spec": {"resourceAttributes": attributes, **spec}}) as r:
                    review = await _json(r)
                    assert r.status == 201, review
                assert review["status"]["allowed"] is (not spec)  # the admin may; someone may not
        assert srv.log.revision == 0 and not srv.log.forked


async def test_status_step_and_until(replayed: replay.ReplayServer, http: aiohttp.ClientSession,
                                     recorded: recordings.Recorded) -> None:
    code, status = await _control(http, "")
    assert code == 200
    assert status["kind"] == "ReplayStatus"
    assert (status["revision"], status["mode"], status["first"], status["last"]) == (0, "paused", 1, recorded.last)
    assert status["next"]["revision"] == 1 and status["remaining"] == recorded.last

    code, status = await _control(http, "step", count=3)
    assert code == 200 and status["revision"] == 3 and status["applied"] == 3
    assert [e["revision"] for e in status["events"]] == [1, 2, 3]

    # The next event of one object, wherever it is.
    code, status = await _control(http, "until", object="pods/shop/web")
    assert code == 200
    assert status["events"][-1]["object"] == "pods/shop/web" and status["events"][-1]["type"] == "ADDED"
    web_added = status["revision"]
    code, status = await _control(http, "until", object="pods/shop/web")
    assert status["events"][-1]["type"] == "MODIFIED" and status["revision"] > web_added

    at = status["revision"] + 3
    code, status = await _control(http, "until", revision=at)
    assert code == 200 and status["revision"] == at
    # Up to a time: the last event at or before it.
    cut, when = recorded.timeline.cut(at + 1)
    code, status = await _control(http, "until", time=clocks.rfc3339_micro(when))
    assert code == 200 and status["revision"] == cut
    assert replayed.clock.now() == max(e["time"] for e in recorded.timeline.events[:cut])

    # Errors: backwards, beyond the end, nonsense, an object with no later event.
    assert (await _control(http, "until", revision=3))[0] == 400
    assert (await _control(http, "until", revision=recorded.last + 1))[0] == 400
    assert (await _control(http, "until"))[0] == 400
    assert (await _control(http, "step", count="x"))[0] == 400
    assert (await _control(http, "step", count=0))[0] == 400
    code, body = await _control(http, "until", object="pods/shop/nope")
    assert code == 404 and "no later event of pods/shop/nope" in body["message"]
    code, body = await _control(http, "fork")
    assert code == 405 and body["message"] == replay_log.WRITES_REFUSED

    code, status = await _control(http, "step", count=10_000)
    assert status["revision"] == recorded.last and status["mode"] == "finished" and status["next"] is None
    code, status = await _control(http, "step")
    assert code == 200 and status["revision"] == recorded.last and "applied" not in status


async def test_time_travel_below_the_cursor_and_future_revisions(replayed: replay.ReplayServer,
                                                                 http: aiohttp.ClientSession,
                                                                 recorded: recordings.Recorded) -> None:
    tl = recorded.timeline
    cursor = tl.rev("ADDED", "configmaps/default/dependent")
    past = tl.rev("MODIFIED", "configmaps/shop/cfg", manager="bob")
    await replayed.replayer.until_revision(cursor)
    exact = {"resourceVersionMatch": "Exact"}
    async with http.get("/api/v1/configmaps", params={**exact, "resourceVersion": str(past)}) as r:
        body = await _json(r)
    assert r.status == 200 and body["metadata"]["resourceVersion"] == str(past)
    assert [i["metadata"]["name"] for i in body["items"]] == ["cfg"] == tl.names(past, "configmaps")
    async with http.get("/api/v1/configmaps") as r:
        body = await _json(r)
    assert body["metadata"]["resourceVersion"] == str(cursor)
    assert sorted(i["metadata"]["name"] for i in body["items"]) == ["cfg", "dependent", "owner"]
    # A revision the replay has not reached yet: 504 "Too large resource version", as a live server.
    async with http.get("/api/v1/configmaps", params={**exact, "resourceVersion": str(cursor + 1)}) as r:
        assert r.status == 504
    web = max(e["revision"] for e in tl.of("pods/shop/web") if e["revision"] <= cursor)
    async with http.get("/api/v1/namespaces/shop/pods/web") as r:
        assert r.status == 200 and (await _json(r))["metadata"]["resourceVersion"] == str(web)


async def test_watch_from_a_revision_sees_the_recorded_events(replayed: replay.ReplayServer,
                                                              http: aiohttp.ClientSession,
                                                              recorded: recordings.Recorded) -> None:
    tl = recorded.timeline
    start = tl.rev("MODIFIED", "configmaps/shop/cfg", manager="bob")
    await replayed.replayer.until_revision(start)
    resp = await http.get("/api/v1/namespaces/default/configmaps",
                          params={"watch": "1", "resourceVersion": str(start)})
    await replayed.replayer.until_revision(recorded.last)
    want = [(e["type"], e["name"], str(e["revision"])) for e in tl.events
            if e["revision"] > start and e["resource"] == "configmaps" and e["namespace"] == "default"]
    assert [(t, n) for t, n, _ in want] == [("ADDED", "owner"), ("ADDED", "dependent"), ("DELETED", "owner"),
                                            ("DELETED", "dependent"), ("ADDED", "owner")]
    got = []
    while len(got) < len(want):
        got.append(json.loads(await asyncio.wait_for(resp.content.readline(), 5)))
    resp.close()
    assert [(e["type"], e["object"]["metadata"]["name"], e["object"]["metadata"]["resourceVersion"])
            for e in got] == want


# ---------------------------------------------------------------------------------- pace and clock


async def test_play_follows_the_recorded_pace_scaled_by_speed(tmp_path: Path, source_of: Callable[[list[bytes]], Awaitable[Made]]) -> None:
    rec = await source_of(recordings.paced_lines([1000.0, 1010.0, 1010.0, 1030.0]))
    pacer = clocks.VirtualClock(start=0.0)
    async with replay.serving(rec, data_dir=tmp_path, page=PAGE, speed=2.0, pacer=pacer) as srv:
        rp = srv.replayer

        async def settle() -> None:
            for _ in range(20):
                await asyncio.sleep(0)

        await settle()
        assert srv.log.revision == 1 and rp.mode == "playing"  # the first event is due at once
        pacer.advance(4.9)
        await settle()
        assert srv.log.revision == 1
        pacer.advance(0.1)  # 10 recorded seconds at speed 2 = 5 s
        await settle()
        assert srv.log.revision == 3  # both events of t=1010 at once
        assert srv.clock.now() == 1010.0
        rp.pause()
        assert rp.mode == "paused"
        rp.play(4.0)
        await settle()
        pacer.advance(5.0)  # 20 recorded seconds at speed 4
        await settle()
        assert srv.log.revision == 4 and rp.mode == "finished"


async def test_max_gap_caps_idle_time(tmp_path: Path, source_of: Callable[[list[bytes]], Awaitable[Made]]) -> None:
    rec = await source_of(recordings.paced_lines([0.0, 3600.0]))
    pacer = clocks.VirtualClock(start=0.0)
    async with replay.serving(rec, data_dir=tmp_path, page=PAGE, speed=1.0, pacer=pacer, max_gap=2.0) as srv:
        for _ in range(10):
            await asyncio.sleep(0)
        pacer.advance(2.0)
        for _ in range(10):
            await asyncio.sleep(0)
        assert srv.log.revision == 2


async def test_full_speed_delivers_every_event_to_a_watch(tmp_path: Path, source_of: Callable[[list[bytes]], Awaitable[Made]]) -> None:
    n = 3000
    rec = await source_of(recordings.paced_lines([float(i) for i in range(n)]))
    async with replay.serving(rec, data_dir=tmp_path, page=PAGE, speed=None) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:
        resp = await http.get("/api/v1/configmaps", params={"watch": "1", "resourceVersion": "0"})
        srv.replayer.play(math.inf)
        seen = 0
        while seen < n:
            line = await asyncio.wait_for(resp.content.readline(), 10)
            assert json.loads(line)["object"]["metadata"]["resourceVersion"] == str(seen + 1)
            seen += 1
        resp.close()
        assert srv.replayer.mode == "finished"


async def test_the_virtual_clock_follows_the_recorded_clock_object(tmp_path: Path, source_of: Callable[[list[bytes]], Awaitable[Made]]) -> None:
    lines = [recordings.clock_line(1, time=100.0, to=100.0),
             recordings.configmap_line(2, "a", time=100.0),
             recordings.clock_line(3, time=100.0, to=3700.0, prev=1),
             recordings.configmap_line(4, "b", time=3700.0)]
    async with replay.serving(await source_of(lines), data_dir=tmp_path, speed=None) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:
        assert srv.clock.now() == 0.0 or srv.log.revision == 0
        await srv.replayer.step(2)
        assert srv.clock.now() == 100.0
        await srv.replayer.step(1)
        assert srv.clock.now() == 3700.0  # the clock moved with its object, before the next write
        async with http.get("/apis/sim.cplane.dev/v1alpha1/clocks/cluster") as r:
            assert (await _json(r))["spec"]["time"].startswith("1970-01-01T01:01:40")
        # Tables show ages at the replayed time.
        await srv.replayer.step(1)
        async with http.get("/api/v1/namespaces/default/configmaps",
                            headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}) as r:
            table = await _json(r)
        ages = {row["cells"][0]: row["cells"][-1] for row in table["rows"]}
        assert ages == {"a": "60m", "b": "0s"}


async def test_a_compacted_recording_starts_at_its_compacted_revision(tmp_path: Path) -> None:
    # Revisions 1-4 were compacted away, except the newest version of a key still live then.
    lines = [recordings.configmap_line(3, "kept", time=3.0),
             recordings.configmap_line(5, "new", time=5.0),
             recordings.configmap_line(6, "kept", time=6.0, type_="MODIFIED", prev=3, data={"v": "2"})]
    rec = _recording(lines)
    assert rec.compacted == 4
    async with replay.serving(rec, data_dir=tmp_path, speed=None) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:
        assert srv.log.revision == 4
        async with http.get("/api/v1/configmaps") as r:
            assert [i["metadata"]["name"] for i in (await _json(r))["items"]] == ["kept"]
        await srv.replayer.step(2)
        exact = {"resourceVersionMatch": "Exact"}
        async with http.get("/api/v1/configmaps", params={**exact, "resourceVersion": "5"}) as r:
            assert r.status == 200 and len((await _json(r))["items"]) == 2
        async with http.get("/api/v1/configmaps", params={**exact, "resourceVersion": "2"}) as r:
            assert r.status == 410
    with pytest.raises(recording.SourceError, match="out of range: --from 2 --until 6: test replays from revision 4 to 6"):
        replay_log.ReplayLog(rec, start=2)


# ---------------------------------------------------------------------------------- forks


async def test_a_write_forks_the_replay_when_allowed(recorded: recordings.Recorded, tmp_path: Path) -> None:
    rec = await recording.open_source(str(recorded.ndjson), in_memory=True)
    assert isinstance(rec, recording.Recording)
    at = recorded.timeline.rev("ADDED", "leases.coordination.k8s.io/kube-system/lease-2")
    async with replay.serving(rec, data_dir=tmp_path, speed=None, fork=True) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:
        await srv.replayer.until_revision(at)
        # Watch configmaps from here: the branch's events follow, never the recording's.
        watch = await http.get("/api/v1/namespaces/default/configmaps",
                               params={"watch": "1", "resourceVersion": str(at)})
        async with http.post("/api/v1/namespaces/default/configmaps",
                             json={"metadata": {"name": "branch-only"}}) as r:
            created = await _json(r)
            assert r.status == 201, created
        assert created["metadata"]["resourceVersion"] == str(at + 1)
        status = await srv.replayer.status()
        assert (status["mode"], status["forkedAt"], status["revision"]) == ("forked", at, at + 1)
        line = json.loads(await asyncio.wait_for(watch.content.readline(), 5))
        assert (line["type"], line["object"]["metadata"]["name"]) == ("ADDED", "branch-only")
        watch.close()
        # The recording's later events are gone from this server; the branch is writable.
        async with http.get("/api/v1/namespaces/default/configmaps") as r:
            names = sorted(i["metadata"]["name"] for i in (await _json(r))["items"])
        assert names == ["branch-only", "dependent", "owner"]
        async with http.delete("/api/v1/namespaces/default/configmaps/owner") as r:
            assert r.status == 200
        assert (await _control(http, "step"))[0] == 409
        assert (await _control(http, "until", revision=20))[0] == 409
        # The visible log: the recording up to the fork point, then the branch.
        async with http.get(f"{replay.CONTROL}/events") as r:
            saved = [json.loads(x) for x in (await r.read()).splitlines()]
        assert [e["revision"] for e in saved] == list(range(1, at + 3))
        assert saved[at]["name"] == "branch-only" and saved[at + 1]["type"] == "DELETED"
        assert saved[:at] == recorded.timeline.events[:at]


async def test_fork_at_stops_there_and_forks(recorded: recordings.Recorded, tmp_path: Path) -> None:
    rec = await recording.open_source(str(recorded.ndjson), in_memory=True)
    assert isinstance(rec, recording.Recording)
    async with replay.serving(rec, data_dir=tmp_path, speed=None, fork_at=10) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:
        forks: list[int] = []
        srv.replayer.on_fork.append(forks.append)
        await srv.replayer.step(3)
        # Before the fork point, writes are refused (only --fork makes a write fork the replay).
        async with http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "x"}}) as r:
            body = await _json(r)
        assert r.status == 405 and body["message"] == ("this server replays a recording; writes are refused until "
                                                       "it forks at revision 10 (--fork-at); it is at 3")
        applied = await srv.replayer.until_revision(20)
        assert applied.last[-1].revision == 10 and srv.log.forked_at == 10 and forks == [10]
        async with http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "x"}}) as r:
            assert r.status == 201
    with pytest.raises(recording.SourceError, match="--fork-at 99999 is out of range"):
        async with replay.serving(rec, data_dir=tmp_path, speed=None, fork_at=99_999):
            pass


async def test_fixed_controller_on_a_fork_and_diff_against_the_original(tmp_path: Path, capsys: Any) -> None:
    """The workflow of docs/replay.md: a run without the garbage collector leaves an orphan; replay it
    to the owner's deletion, fork there with the GC running, and compare the branch with the original."""
    from cp import cli

    async with recordings.recorded_run(tmp_path, controllers=["namespace"]) as (_live, _last, original):
        pass  # recorded without the garbage collector
    rec = recording.Recording.from_ndjson(original.read_bytes().splitlines(True), description=str(original))
    owner_deleted = next(e.revision for e in rec.index.events
                         if e.type == "DELETED" and e.name == "owner" and e.resource == "configmaps")
    async with replay.serving(rec, data_dir=tmp_path / "replay", speed=None, fork_at=owner_deleted) as srv:
        started = asyncio.Event()
        srv.replayer.on_fork.append(lambda _rev: started.set())
        await srv.replayer.until_revision(rec.last)
        assert started.is_set() and srv.log.forked_at == owner_deleted
        async with recordings.controllers_running(srv.url, names=["garbage-collector"], clock=srv.clock), \
                aiohttp.ClientSession(base_url=srv.url) as http:
            async def orphan_gone() -> bool:
                async with http.get("/api/v1/namespaces/default/configmaps/dependent") as r:
                    return r.status == 404
            await recordings.eventually(orphan_gone, what="the GC on the branch")
            async with http.get(f"{replay.CONTROL}/events") as r:
                branch_bytes = await r.read()
    branch = tmp_path / "branch.ndjson"
    branch.write_bytes(branch_bytes)
    # In the original the dependent outlived its owner; on the branch the GC removed it.
    original_rec = recording.Recording.from_ndjson(original.read_bytes().splitlines(True), description="o")
    assert original_rec.index.latest(("", "configmaps", "default", "dependent"), original_rec.last) is not None

    capsys.readouterr()  # drop the servers' log lines
    code = await asyncio.to_thread(cli.main, ["log", "diff", "-f", str(branch), "--against", str(original),
                                              "configmaps", "-o", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["forkPoint"] == owner_deleted
    assert "configmaps/default/dependent" in out["removed"]


# ---------------------------------------------------------------------------------- a real kubectl


@pytest.mark.skipif(KUBECTL is None, reason="no kubectl in .venv/bin (make test fetches it)")
async def test_kubectl_reads_a_replay_and_is_refused_writes(replayed: replay.ReplayServer,
                                                             recorded: recordings.Recorded, tmp_path: Path) -> None:
    bob = recorded.timeline.rev("MODIFIED", "pods/shop/web", manager="bob")
    await replayed.replayer.until_revision(bob - 1)
    home = tmp_path / "home"  # kubectl caches discovery under $HOME/.kube
    home.mkdir()
    env = {"KUBECONFIG": str(replayed.kubeconfig), "PATH": "/usr/bin:/bin", "HOME": str(home)}

    async def run(*argv: str) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(str(KUBECTL), *argv, env=env, cwd=home,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        return proc.returncode or 0, out.decode(), err.decode()

    code, out, _ = await run("get", "pods", "-A", "--show-labels")
    assert code == 0 and "web" in out and "app=web" in out and "tier=front" not in out
    await replayed.replayer.step(1)
    assert replayed.log.revision == bob
    code, out, _ = await run("get", "pod", "web", "-n", "shop", "-o", "jsonpath={.metadata.labels.tier}")
    assert code == 0 and out == "front"
    code, _, err = await run("create", "configmap", "nope")
    assert code != 0 and replay_log.WRITES_REFUSED in err



async def test_after_a_fork_the_clock_runs_on_unless_the_recording_was_virtual(tmp_path: Path, source_of: Callable[[list[bytes]], Awaitable[Made]]) -> None:
    wall = await source_of(recordings.paced_lines([1000.0, 1010.0]))
    async with replay.serving(wall, data_dir=tmp_path / "a", page=PAGE, speed=None, fork=True) as srv:
        await srv.replayer.step(1)
        await srv.replayer.fork()
        assert srv.clock.now() == 1000.0
        await recordings.eventually(lambda: srv.clock.now() > 1000.0, within=5, what="the clock to run on")
    virtual = await source_of([recordings.clock_line(1, time=100.0, to=500.0), recordings.configmap_line(2, "a", time=500.0)])
    async with replay.serving(virtual, data_dir=tmp_path / "b", page=PAGE, speed=None, fork=True) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:
        await srv.replayer.step(2)
        await srv.replayer.fork()
        assert "replay:clock" not in {t.get_name() for t in srv.replayer._tasks}
        assert srv.clock.now() == 500.0
        # Time moves as on a live virtual-clock server: by writing the Clock object.
        async with http.get("/apis/sim.cplane.dev/v1alpha1/clocks/cluster") as r:
            clock = await _json(r)
        clock["spec"]["time"] = clocks.rfc3339_micro(560.0)
        async with http.put("/apis/sim.cplane.dev/v1alpha1/clocks/cluster", json=clock) as r:
            assert r.status == 200, await r.text()
        assert srv.clock.now() == 560.0
