"""Custom resources are ordinary objects of the event log (issue #19): read at an exact past
revision, shown, followed through their history and events, diffed, exported and imported, and
replayed — offline, their names resolve through the log's own CustomResourceDefinitions (even one
deleted since); on a replay server, through the recording's."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
import pytest

from api import replay
from api import server as servers
from controllers.runtime import client as clients
from cp import cli
from storage import recording
from tests.controllers import crds
from tests.recordings import export


class Run(msgspec.Struct, kw_only=True):
    data_dir: Path
    ndjson: Path
    blue: int  # the revision at which widget w was blue
    green: int  # ... and green
    exact: list[dict[str, Any]]  # widgets listed with resourceVersionMatch=Exact at `blue`


async def _record(tmp: Path) -> Run:
    async with servers.running(data_dir=tmp / "live") as srv, clients.Client(srv.url) as client:
        widgets = await crds.establish(client)
        gizmos = await crds.establish(client, crds.definition(kind="Gizmo", plural="gizmos"))
        blue = await client.create(widgets, {"apiVersion": "example.com/v1", "kind": "Widget",
                                             "metadata": {"name": "w", "namespace": "default"},
                                             "spec": {"color": "blue", "replicas": 1}})
        green = await client.patch(widgets, "w", {"spec": {"color": "green"}}, namespace="default",
                                   field_manager="alice")
        await client.create(widgets, {"apiVersion": "example.com/v1", "kind": "Widget",
                                      "metadata": {"name": "keep", "namespace": "default"}})
        await client.delete(widgets, "w", namespace="default")
        await client.create(gizmos, {"apiVersion": "example.com/v1", "kind": "Gizmo",
                                     "metadata": {"name": "old", "namespace": "default"}})
        await client.delete(crds.CRDS, "gizmos.example.com")  # its instances go with it

        async def no_gizmos() -> bool:
            return await crds.gone(client, crds.CRDS, "gizmos.example.com")

        from tests.waiting import eventually

        await eventually(no_gizmos, what="gizmos definition deleted")
        rv = blue["metadata"]["resourceVersion"]
        raw = await client.request("GET", "/apis/example.com/v1/namespaces/default/widgets",
                                   params={"resourceVersion": rv, "resourceVersionMatch": "Exact"})
        exact = json.loads(raw)["items"]
        path = tmp / "run.ndjson"
        await export(srv.event_log, path, end=srv.event_log.revision)
    return Run(data_dir=tmp / "live", ndjson=path, blue=int(rv), green=int(green["metadata"]["resourceVersion"]),
               exact=exact)


@pytest.fixture(scope="module")
def run_(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return asyncio.run(_record(tmp_path_factory.mktemp("custom")))


@pytest.fixture(params=["file", "data-dir"])
def source(request: pytest.FixtureRequest, run_: Run) -> list[str]:
    return ["-f", str(run_.ndjson)] if request.param == "file" else ["--data-dir", str(run_.data_dir)]


def cplane(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_time_travel_reads_a_custom_resource_at_an_exact_revision(run_: Run) -> None:
    assert [(w["metadata"]["name"], w["spec"]["color"]) for w in run_.exact] == [("w", "blue")]


def test_show_history_events_and_diff_resolve_custom_resources(capsys: Any, source: list[str], run_: Run) -> None:
    code, out, err = cplane(capsys, "log", "show", *source, "--at", str(run_.green), "widgets.example.com",
                            "-o", "json")
    assert code == 0, err
    assert [(i["metadata"]["name"], i["spec"]["color"]) for i in json.loads(out)["items"]] == [("w", "green")]
    code, out, err = cplane(capsys, "log", "show", *source, "-o", "name")  # every kind: custom ones too
    assert code == 0, err
    assert "widget.example.com/keep" in out.split()

    code, out, err = cplane(capsys, "log", "history", *source, "wd/default/w")  # the short name
    assert code == 0, err
    assert "alice" in out and "green" in out and "DELETED" in out
    # A resource whose definition was deleted since still resolves, from the definitions the log held.
    code, out, err = cplane(capsys, "log", "history", *source, "gizmos.example.com/default/old", "-o", "ndjson")
    assert code == 0, err
    assert [json.loads(line)["type"] for line in out.splitlines()] == ["ADDED", "DELETED"]

    code, out, err = cplane(capsys, "log", "events", *source, "--resource", "widget", "-o", "ndjson")
    assert code == 0, err
    assert [(e["type"], e["name"]) for e in map(json.loads, out.splitlines())] == [
        ("ADDED", "w"), ("MODIFIED", "w"), ("ADDED", "keep"), ("DELETED", "w")]

    code, out, err = cplane(capsys, "log", "diff", *source, str(run_.blue), str(run_.green), "widgets.example.com",
                            "-o", "json")
    assert code == 0, err
    assert "green" in out and "blue" in out

    code, _out, err = cplane(capsys, "log", "history", *source, "sprockets.example.com/default/x")
    assert code == 1 and 'unknown resource "sprockets.example.com"' in err and "widgets.example.com" in err


async def test_an_imported_log_serves_its_custom_resources(tmp_path: Path, run_: Run) -> None:
    from storage import factory, ndjson

    target = tmp_path / "imported"
    target.mkdir()
    event_log = factory.open_event_log(url=f"sqlite+aiosqlite:///{target / 'cplane.db'}")
    await event_log.start()
    try:
        with run_.ndjson.open("rb") as lines:
            await ndjson.import_events(event_log, lines=lines)
    finally:
        await event_log.close()
    async with servers.running(data_dir=target) as srv, clients.Client(srv.url) as client:
        await client.discover()
        keep = await client.get("widgets.example.com", "keep", namespace="default")
        assert keep["kind"] == "Widget"


async def test_a_replay_serves_custom_resources_and_goes_until_one(tmp_path: Path, run_: Run) -> None:
    async with recording.opened(str(run_.ndjson), in_memory=True) as source:
        assert isinstance(source, recording.Recording)
        async with replay.serving(source, data_dir=tmp_path / "replay", speed=None) as srv, \
                aiohttp.ClientSession(base_url=srv.url) as http:
            async with http.post(f"{replay.CONTROL}/until",
                                 params={"object": "widgets.example.com/default/w"}) as r:
                assert r.status == 200, await r.text()
            async with http.get("/apis/example.com/v1/namespaces/default/widgets/w") as r:
                assert r.status == 200, await r.text()
                assert (await r.json())["spec"]["color"] == "blue"
            async with http.post(f"{replay.CONTROL}/until", params={"object": "gizmos.example.com/default/old"}) as r:
                assert r.status == 200, await r.text()
            async with http.post(f"{replay.CONTROL}/until", params={"object": "nothings/default/x"}) as r:
                assert r.status == 400
