"""The event log's read-only views for the web UI (api/eventlog.py): paging, density, object history,
and RBAC filtering for a user who may read one namespace."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
import pytest

from api import server as servers
from api import state as st
from cp.cli import render
from storage import log
from tests import waiting
from tests.api.security.conftest import Secure, binding, rbac_path, secure_server

EVENTLOG = "/apis/sim.cplane.dev/v1alpha1/eventlog"


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[servers.Running]:
    async with servers.running(data_dir=tmp_path / "data") as running:
        yield running


@pytest.fixture
async def http(srv: servers.Running) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=srv.url) as session:
        yield session


async def _write(http: aiohttp.ClientSession, namespace: str, name: str, **data: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    async with http.get(f"{path}/{name}") as r:
        exists = r.status == 200
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}
    method, url = ("PUT", f"{path}/{name}") if exists else ("POST", path)
    async with http.request(method, url, json=body) as r:
        assert r.status in (200, 201), await r.text()


async def _namespace(http: aiohttp.ClientSession, name: str) -> None:
    async with http.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": name}}) as r:
        assert r.status == 201, await r.text()


async def _get(http: aiohttp.ClientSession, path: str, **params: Any) -> tuple[int, Any]:
    async with http.get(path, params={k: str(v) for k, v in params.items()}) as r:
        return r.status, await r.json()


async def _all_events(event_log: log.EventLog) -> list[log.Event]:
    out: list[log.Event] = []
    while page := await event_log.after(out[-1].revision if out else event_log.compacted_revision, limit=1000):
        out += page
    return out


async def _populate(http: aiohttp.ClientSession) -> None:
    for ns in ("team", "other"):
        await _namespace(http, ns)
    for i in range(12):
        await _write(http, "team" if i % 3 else "other", f"cm-{i % 4}", round=str(i))


async def test_pages_follow_continue_in_revision_order(srv: servers.Running, http: aiohttp.ClientSession) -> None:
    await _populate(http)
    events = await _all_events(srv.event_log)
    code, first = await _get(http, EVENTLOG, limit=5)
    assert code == 200
    assert first["kind"] == "EventLogList" and first["revision"] == srv.event_log.revision
    assert len(first["items"]) == 5
    seen, page = list(first["items"]), first
    while "continue" in page:
        code, page = await _get(http, EVENTLOG, limit=5, since=page["continue"])
        assert code == 200
        seen += page["items"]
    assert [i["revision"] for i in seen] == [ev.revision for ev in events]
    assert seen[-1] == {"revision": events[-1].revision, "type": events[-1].type, "group": events[-1].group,
                        "resource": "configmaps", "namespace": events[-1].namespace, "name": events[-1].name,
                        "time": seen[-1]["time"], "actor": {"user": "system:admin", "fieldManager": events[-1].actor.field_manager,
                                                             "userAgent": events[-1].actor.user_agent}}
    # a window and filters
    lo, hi = events[3].revision, events[9].revision
    code, window = await _get(http, EVENTLOG, since=lo, until=hi)
    assert [i["revision"] for i in window["items"]] == [ev.revision for ev in events if lo < ev.revision <= hi]
    assert "continue" not in window
    code, cms = await _get(http, EVENTLOG, resource="configmaps", namespace="team")
    assert [i["revision"] for i in cms["items"]] == [ev.revision for ev in events
                                                     if ev.resource == "configmaps" and ev.namespace == "team"]


async def test_bad_parameters_and_compacted_since(srv: servers.Running, http: aiohttp.ClientSession) -> None:
    await _populate(http)
    for params in ({"limit": 0}, {"limit": 10_001}, {"limit": "x"}, {"since": -1}, {"since": "a"}):
        code, status = await _get(http, EVENTLOG, **params)
        assert code == 400 and status["kind"] == "Status", params
    await srv.event_log.compact(10)
    code, status = await _get(http, EVENTLOG, since=3)
    assert code == 410 and status["reason"] == "Expired"
    code, page = await _get(http, EVENTLOG)
    assert code == 200 and page["compacted"] == 10 and page["items"][0]["revision"] > 10
    async with http.post(EVENTLOG) as r:
        assert r.status == 405


async def test_density_counts_match_a_scan(srv: servers.Running, http: aiohttp.ClientSession) -> None:
    await _populate(http)
    events = await _all_events(srv.event_log)
    for buckets in (1, 3, 7, 100):
        code, d = await _get(http, f"{EVENTLOG}/density", buckets=buckets)
        assert code == 200, d
        width = d["width"]
        assert width & (width - 1) == 0 and len(d["buckets"]) <= buckets
        assert d["first"]["revision"] == events[0].revision and d["last"]["revision"] == events[-1].revision
        for b in d["buckets"]:
            inside = [ev for ev in events if b["from"] <= ev.revision <= b["to"]]
            assert b["counts"] == dict(Counter(ev.resource for ev in inside)), (buckets, b)
            assert b["to"] - b["from"] < width
            if inside:
                assert b["time"] == render.clocks.rfc3339_milli(inside[0].time)
        assert sum(sum(b["counts"].values()) for b in d["buckets"]) == len(events)
    # asked again after more writes: the remembered buckets and the new ones still match a scan
    await _write(http, "team", "late", x="1")
    events = await _all_events(srv.event_log)
    code, d = await _get(http, f"{EVENTLOG}/density", buckets=7)
    assert sum(sum(b["counts"].values()) for b in d["buckets"]) == len(events)
    lo = events[5].revision
    code, d = await _get(http, f"{EVENTLOG}/density", buckets=4, since=lo)
    assert d["since"] <= lo and sum(sum(b["counts"].values()) for b in d["buckets"]) == \
        len([ev for ev in events if ev.revision > d["since"]])


async def test_history_has_the_changes_log_history_prints(srv: servers.Running, http: aiohttp.ClientSession) -> None:
    await _populate(http)
    async with http.delete("/api/v1/namespaces/team/configmaps/cm-1") as r:
        assert r.status == 200
    await _write(http, "team", "cm-1", again="yes")
    code, h = await _get(http, f"{EVENTLOG}/history", resource="configmaps", namespace="team", name="cm-1")
    assert code == 200, h
    events = await srv.event_log.history(group="", resource="configmaps", namespace="team", name="cm-1")
    assert [i["revision"] for i in h["items"]] == [ev.revision for ev in events]
    assert [i["type"] for i in h["items"]][-2:] == ["DELETED", "ADDED"]
    text = render.history_text(events, [msgspec.json.decode(ev.object) for ev in events])
    at = 0
    for item, ev in zip(h["items"], events, strict=True):
        assert item["object"] == msgspec.json.decode(ev.object)
        at = text.index(f"\n{item['revision']}  ", at)  # its heading, then its changes as printed
        shown = render.changes_text([render.Change(**c) for c in item["changes"]])
        at = text.index(shown, at) + len(shown)
    assert any(c["path"] == "data.round" and c["op"] == "~" for i in h["items"] for c in i["changes"])
    code, status = await _get(http, f"{EVENTLOG}/history", resource="configmaps", namespace="team", name="nope")
    assert code == 404 and status["reason"] == "NotFound"
    code, status = await _get(http, f"{EVENTLOG}/history", namespace="team")
    assert code == 400


async def test_diff_classifies_the_objects_and_has_cp_changes_fields(srv: servers.Running,
                                                                     http: aiohttp.ClientSession) -> None:
    from cp import changes

    await _namespace(http, "team")
    await _write(http, "team", "kept", v="1")
    await _write(http, "team", "gone", v="1")
    a = srv.event_log.revision
    await _write(http, "team", "kept", v="2", more="yes")
    async with http.delete("/api/v1/namespaces/team/configmaps/gone") as r:
        assert r.status == 200
    await _write(http, "team", "new", v="1")
    await _write(http, "team", "brief", v="1")
    async with http.delete("/api/v1/namespaces/team/configmaps/brief") as r:
        assert r.status == 200
    async with http.post("/api/v1/namespaces/team/secrets", json={
            "metadata": {"name": "s"}, "data": {"k": "YQ=="}}) as r:
        assert r.status == 201
    b = srv.event_log.revision
    async with http.put("/api/v1/namespaces/team/secrets/s", json={
            "metadata": {"name": "s"}, "data": {"k": "Yg=="}}) as r:
        assert r.status == 200
    c = srv.event_log.revision
    code, d = await _get(http, f"{EVENTLOG}/diff", since=a, until=b)
    assert code == 200, d
    assert (d["kind"], d["events"], d["cut"], d["undetailed"]) == ("EventLogDiff", b - a, False, 0)
    by_name = {i["name"]: i for i in d["items"]}
    assert {n: i["change"] for n, i in by_name.items()} == {
        "kept": "modified", "gone": "deleted", "new": "added", "brief": "transient", "s": "added"}
    assert by_name["brief"]["count"] == 2 and by_name["brief"]["last"]["type"] == "DELETED"
    before = await srv.event_log.get(group="", resource="configmaps", namespace="team", name="kept", revision=a)
    after = await srv.event_log.get(group="", resource="configmaps", namespace="team", name="kept", revision=b)
    assert before is not None and after is not None
    assert by_name["kept"]["changes"] == changes.changes_json(changes.diff(
        msgspec.json.decode(before.object), msgspec.json.decode(after.object)))
    assert {(ch["op"], ch["path"]) for ch in by_name["kept"]["changes"]} >= {("~", "data.v"), ("+", "data.more")}
    code, d = await _get(http, f"{EVENTLOG}/diff", since=b, until=c)  # a Secret's values never shown
    [secret] = d["items"]
    assert [(ch["path"], ch["old"], ch["new"]) for ch in secret["changes"] if ch["path"] == "data.k"] == [
        ("data.k", "*** (before)", "*** (after)")]
    code, status = await _get(http, f"{EVENTLOG}/diff", since=-1)
    assert code == 400 and status["reason"] == "BadRequest"


# -- RBAC: a user who may read configmaps in one namespace only ------------------------------------

ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "team-reader"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
                  {"apiGroups": ["sim.cplane.dev"], "resources": ["eventlog"], "verbs": ["get", "list", "watch"]}]}


@pytest.fixture
async def secure(tmp_path: Path) -> AsyncIterator[Secure]:
    async with secure_server(tmp_path) as s:
        yield s


async def test_a_namespace_reader_sees_only_their_namespace(secure: Secure) -> None:
    admin, alice = secure.session("admin"), secure.session("alice")
    await _populate(admin)
    async with admin.post(rbac_path("roles", "team"), json=ROLE) as r:
        assert r.status == 201, await r.text()
    rb = binding("alice-team", "team-reader", namespace="team", role_kind="Role")
    async with admin.post(rbac_path("rolebindings", "team"), json=rb) as r:
        assert r.status == 201, await r.text()
    events = await _all_events(secure.srv.event_log)
    mine = [ev for ev in events if ev.resource == "configmaps" and ev.namespace == "team"]
    assert mine and len(mine) < len(events)

    code, status = await _get(alice, EVENTLOG)
    assert code == 403  # the cluster-wide view needs a cluster-wide grant
    team = "/apis/sim.cplane.dev/v1alpha1/namespaces/team/eventlog"
    code, page = await _get(alice, team, limit=10_000)
    assert code == 200, page
    assert [i["revision"] for i in page["items"]] == [ev.revision for ev in mine]
    code, d = await _get(alice, f"{team}/density", buckets=5)
    assert code == 200
    assert sum(b["counts"].get("configmaps", 0) for b in d["buckets"]) == len(mine)
    assert {k for b in d["buckets"] for k in b["counts"]} == {"configmaps"}
    code, h = await _get(alice, f"{team}/history", resource="configmaps", name="cm-1")
    assert code == 200 and h["items"]
    code, d = await _get(alice, f"{team}/diff", since=0)
    assert code == 200 and {(i["resource"], i["namespace"]) for i in d["items"]} == {("configmaps", "team")}
    code, status = await _get(alice, "/apis/sim.cplane.dev/v1alpha1/namespaces/other/eventlog")
    assert code == 403
    # the watch: the namespace's events only; others' writes advance it as bookmarks
    async with alice.get(EVENTLOG, params={"watch": "1", "since": "0"}) as r:
        assert r.status == 403
    async with alice.get(team, params={"watch": "1", "since": "0", "objects": "configmaps"}) as r:
        assert r.status == 200, await r.text()
        lines = Lines(r)
        got = [await lines.next() for _ in mine]
        assert [(g["revision"], g["namespace"], g["object"]["metadata"]["name"]) for g in got] == \
            [(ev.revision, "team", ev.name) for ev in mine]
        await _write(admin, "other", "hidden", x="1")
        hidden = secure.srv.event_log.revision
        line = await lines.next()
        while line["revision"] < hidden:  # a bookmark of the last revisions (not visible to alice)
            assert line["type"] == "BOOKMARK"
            line = await lines.next()
        assert line == {"type": "BOOKMARK", "revision": hidden}
        await _write(admin, "team", "seen", x="1")
        line = await lines.next()
        assert line["type"] == "ADDED" and line["name"] == "seen" and line["revision"] == hidden + 1
    code, status = await _get(alice, f"{team}/history", resource="secrets", name="x")
    assert code == 403 and status["reason"] == "Forbidden"
    code, status = await _get(alice, f"{team}/history", resource="namespaces", namespace="", name="team")
    assert code == 403  # a cluster-scoped object through the namespace's view: still RBAC's decision
    code, status = await _get(alice, f"{team}/history", resource="configmaps", namespace="other", name="cm-0")
    assert code == 400
    code, h = await _get(admin, f"{team}/history", resource="namespaces", namespace="", name="team")
    assert code == 200 and h["items"][0]["type"] == "ADDED"

    # the admin sees everything, cluster-wide; the view role grants the endpoints (and what it may list)
    code, page = await _get(admin, EVENTLOG, limit=10_000)
    assert len(page["items"]) == len(await _all_events(secure.srv.event_log))
    async with admin.post(rbac_path("rolebindings", "other"),
                          json=binding("bob-view", "view", subject="bob", namespace="other")) as r:
        assert r.status == 201, await r.text()
    code, page = await _get(secure.session("bob"), "/apis/sim.cplane.dev/v1alpha1/namespaces/other/eventlog")
    assert code == 200
    assert {(i["resource"], i["namespace"]) for i in page["items"]} == {("configmaps", "other")}


async def test_discovery_names_the_eventlog(http: aiohttp.ClientSession) -> None:
    code, doc = await _get(http, "/apis/sim.cplane.dev/v1alpha1")
    assert code == 200
    entry = next(r for r in doc["resources"] if r["name"] == "eventlog")
    assert entry["verbs"] == ["get", "list", "watch"] and entry["namespaced"] is True
    async with http.get("/apis", headers={
            "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}) as r:
        groups = (await r.json())["items"]
    sim = next(g for g in groups if g["metadata"]["name"] == "sim.cplane.dev")
    assert any(r["resource"] == "eventlog" and r["verbs"] == ["get", "list", "watch"]
               for v in sim["versions"] for r in v["resources"])


# -- the watch ------------------------------------------------------------------------------------

class Lines:
    """The JSON lines of a streamed response, one at a time (bounded: a missing line fails the test)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next(self) -> Any:
        async with asyncio.timeout(10):
            raw = await self.response.content.readline()
        assert raw, "the stream ended"
        return json.loads(raw)

    async def end(self) -> None:
        async with asyncio.timeout(10):
            assert await self.response.content.read() == b""


def _watch(http: aiohttp.ClientSession, path: str = EVENTLOG, **params: Any) -> Any:
    return http.get(path, params={"watch": "1", **{k: str(v) for k, v in params.items()}})


async def test_watch_streams_events_in_order_with_named_objects(srv: servers.Running,
                                                                http: aiohttp.ClientSession) -> None:
    await _populate(http)
    events = await _all_events(srv.event_log)
    start = events[4].revision
    async with _watch(http, since=start, objects="configmaps") as r:
        assert r.status == 200 and r.headers["Content-Type"].startswith("application/json")
        lines = Lines(r)
        got = [await lines.next() for ev in events if ev.revision > start]
        assert [g["revision"] for g in got] == [ev.revision for ev in events if ev.revision > start]
        for g, ev in zip(got, [ev for ev in events if ev.revision > start], strict=True):
            assert {k: g[k] for k in ("type", "group", "resource", "namespace", "name")} == \
                {"type": ev.type, "group": ev.group, "resource": ev.resource, "namespace": ev.namespace, "name": ev.name}
            assert g["time"] and g["actor"] == {"user": ev.actor.user, "fieldManager": ev.actor.field_manager,
                                                "userAgent": ev.actor.user_agent}
            assert ("object" in g) == (ev.resource == "configmaps")
            if ev.resource == "configmaps":
                assert g["object"] == msgspec.json.decode(ev.object)
        # follows new writes: namespaces are summaries only (not named), configmaps carry their object
        await _namespace(http, "later")
        await _write(http, "later", "cm", v="1")
        ns, cm = await lines.next(), await lines.next()
        assert (ns["resource"], ns["name"], "object" in ns) == ("namespaces", "later", False)
        assert (cm["resource"], cm["name"], cm["object"]["data"]) == ("configmaps", "cm", {"v": "1"})
        assert cm["revision"] == srv.event_log.revision
    # plural.group names one group; a group that does not match sends no object
    async with _watch(http, since=start, objects="configmaps.example.com,namespaces.") as r:
        lines = Lines(r)
        got = [await lines.next() for ev in events if ev.revision > start]
        assert not any("object" in g for g in got if g["resource"] == "configmaps")
        assert all("object" in g for g in got if g["resource"] == "namespaces")


async def test_watch_bookmarks_timeout_and_errors(srv: servers.Running, http: aiohttp.ClientSession) -> None:
    await _populate(http)
    newest = srv.event_log.revision
    # a namespace with no events: only the cluster-scoped ones, then a bookmark of the newest revision
    async with _watch(http, "/apis/sim.cplane.dev/v1alpha1/namespaces/nobody/eventlog", since=0) as r:
        assert r.status == 200
        lines = Lines(r)
        line = await lines.next()
        while line["type"] != "BOOKMARK":
            assert line["namespace"] == "" and line["revision"] < newest
            line = await lines.next()
        assert line == {"type": "BOOKMARK", "revision": newest}
    async with _watch(http, since=newest, timeoutSeconds=1) as r:
        lines = Lines(r)
        assert await lines.next() == {"type": "BOOKMARK", "revision": newest}  # idle: at the interval
        await lines.end()  # the timeout ends it
    for params in ({}, {"since": -1}, {"since": "x"}, {"since": 0, "objects": ".apps"}):
        async with _watch(http, **params) as r:
            assert r.status == 400 and (await r.json())["kind"] == "Status", params
    await srv.event_log.compact(10)
    async with _watch(http, since=3) as r:
        assert r.status == 410 and (await r.json())["reason"] == "Expired"


async def test_watch_ends_with_a_status_when_compacted_under_it(srv: servers.Running, http: aiohttp.ClientSession,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    await _populate(http)
    start = srv.event_log.revision
    event_log = srv.event_log
    read = event_log.after
    reading, go_on = asyncio.Event(), asyncio.Event()

    async def held(revision: int, *, limit: int = 1000) -> list[log.Event]:  # the watch's next read waits
        reading.set()
        await go_on.wait()
        return await read(revision, limit=limit)

    async with _watch(http, "/apis/sim.cplane.dev/v1alpha1/namespaces/nobody/eventlog", since=start) as r:
        lines = Lines(r)
        await waiting.eventually(lambda: len(srv.app[st.WATCHES]) == 1, what="the watch registered")
        monkeypatch.setattr(event_log, "after", held)
        for i in range(3):
            await _write(http, "team", f"more-{i}", x="1")
        async with asyncio.timeout(10):
            await reading.wait()
        await event_log.compact(event_log.revision)  # the events it has not read yet are gone
        go_on.set()
        line = await lines.next()
        assert line["type"] == "ERROR" and line["object"]["code"] == 410 and line["object"]["reason"] == "Expired"
        await lines.end()


async def test_watch_ends_on_shutdown_and_when_the_client_goes(srv: servers.Running,
                                                               http: aiohttp.ClientSession) -> None:
    from api import app as apps

    await _namespace(http, "team")
    r = await _watch(http, since=0)
    assert (await Lines(r).next())["revision"] == 1
    await waiting.eventually(lambda: len(srv.app[st.WATCHES]) == 1, what="the watch registered")
    r.close()  # the client goes away
    await waiting.eventually(lambda: not srv.app[st.WATCHES], what="the watch released")
    async with _watch(http, since=0) as r:
        lines = Lines(r)
        assert (await lines.next())["revision"] == 1
        await waiting.eventually(lambda: len(srv.app[st.WATCHES]) == 1, what="the watch registered")
        await apps._shutdown_watches(srv.app)  # what the server's on_shutdown does
        with contextlib.suppress(aiohttp.ClientPayloadError):
            async with asyncio.timeout(10):  # what was sent before, then the end
                while await r.content.readline():
                    pass
    await waiting.eventually(lambda: not srv.app[st.WATCHES], what="the watch ended")
