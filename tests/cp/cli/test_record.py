"""`cplane record` (issue #25): a running sandbox (TLS and a token: the stand-in for a real cluster) is
recorded while a workload with claim templates runs, scales and a DeviceTaintRule taints a device;
the recording ends as the source is (every object of the recorded kinds, field by field but the
resourceVersion and the redacted values) and `cplane why` answers alike on both. A watch that expires
(the source compacts) relists and records the difference as resync events. Stopping with `--for`
and SIGTERM, and the changes' time and manager, are covered too."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from api import why as api_why
from controllers.runtime import client as clients
from cp import errors, importing
from cp import resources as res
from cp.cli import record
from cp.testing import Sandbox, eventually, sandbox
from storage import factory, sql
from tests.crds import WIDGETS

R = "resource.k8s.io"
START = 1_800_000_000.0
FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "rec"},
         "nodePools": [{"name": "gpu-node", "count": 1, "instanceType": "sim.gpu-4x-a100",
                        "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
                        "drivers": [{"name": "gpu.example.com",
                                     "devices": [{"type": "gpu", "count": 2, "model": "A100-SXM4-80GB",
                                                  "memory": "80Gi"}]}]}]}
CONTROLLERS = ("garbage-collector", "replicaset", "deployment", "resourceclaim", "scheduler")


@contextlib.asynccontextmanager
async def _recording(path: Path) -> AsyncIterator[sql.SqlEventLog]:
    path.mkdir(mode=0o700)  # noqa: ASYNC240 (a test's set-up)
    async with _reopened(path) as event_log:
        yield event_log


def _bare(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


async def _state(event_log: sql.SqlEventLog, kinds: list[record.Target], *, redact: bool) -> dict[tuple[str, ...], Any]:
    out: dict[tuple[str, ...], Any] = {}
    for target in kinds:
        kind = target.kind if target.custom else res.storage_kind(target.kind)
        listed = await event_log.list_objects(group=kind.group, resource=kind.plural, namespace=None)
        for event in listed.events:
            obj = msgspec.json.decode(event.object)
            if redact:
                obj = importing.redact(kind.group, kind.kind, obj)
            out[(kind.group, kind.plural, event.namespace, event.name)] = _bare(obj)
    return out


async def _workload(sb: Sandbox) -> None:
    await sb.client.create(f"resourceclaimtemplates.{R}", {
        "metadata": {"name": "one-gpu"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.example.com"}}]}}}}, namespace="default")
    await sb.client.create("configmaps", {"metadata": {"name": "settings"}, "data": {"password": "hunter2"}},
                           namespace="default")
    await sb.client.create("deployments.apps", {
        "metadata": {"name": "train"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "train"}},
                 "template": {"metadata": {"labels": {"app": "train"}}, "spec": {
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                     "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}]}}}},
        namespace="default")


async def _pods(sb: Sandbox) -> list[dict[str, Any]]:
    return (await sb.client.list("pods", namespace="default", label_selector="app=train")).items


async def test_a_recording_ends_as_its_source(tmp_path: Path) -> None:
    async with sandbox(data_dir=tmp_path / "source", controllers=CONTROLLERS, fleet=FLEET, virtual_clock=True,
                       clock_start=START, secure=True) as sb, _recording(tmp_path / "rec") as rec:
        await sb.wait_for(lambda: _slices(sb))
        client = clients.Client.from_kubeconfig(sb.kubeconfig, user_agent=record.USER_AGENT)
        recorder = record.Recorder(client=client, event_log=rec, page=7)
        stop = asyncio.Event()
        task = asyncio.create_task(recorder.run(stop))
        try:
            await _workload(sb)

            async def scheduled(n: int) -> bool:
                pods = await _pods(sb)
                return len(pods) == n and all(p["spec"].get("nodeName") for p in pods[:2])

            await sb.wait_for(lambda: scheduled(1))
            # The DeviceTaintRule takes gpu-1 away: scaled to 3, one pod fits and one stays Pending.
            await sb.client.create(f"devicetaintrules.{R}", {"metadata": {"name": "broken-gpu"}, "spec": {
                "deviceSelector": {"driver": "gpu.example.com", "pool": "gpu-node-0", "device": "gpu-1"},
                "taint": {"key": "example.com/broken", "value": "fan", "effect": "NoSchedule"}}})
            await sb.client.patch("deployments.apps", "train", {"spec": {"replicas": 2}}, namespace="default")

            async def settled() -> list[dict[str, Any]] | None:
                pods = await _pods(sb)
                pending = [p for p in pods if not p["spec"].get("nodeName")
                           and any(c.get("reason") == "Unschedulable" for c in p.get("status", {}).get("conditions", []))]
                return pending if len(pods) == 2 and len(pending) == 1 else None

            (pending,) = await sb.wait_for(settled)
            targets = list(recorder.targets())

            async def caught_up() -> bool:
                return await _state(rec, targets, redact=False) == await _state(sb.event_log, targets, redact=True)

            await eventually(caught_up, within=10, what="the recording to catch up with the source")
        finally:
            stop.set()
            stats = await task
            await client.close()
        names = {t.name for t in targets}
        assert {"pods", f"resourceclaims.{R}", f"devicetaintrules.{R}", "deployments.apps",
                f"resourceslices.{R}", "configmaps"} <= names
        assert "events.events.k8s.io" not in names  # recorded once, as core Events
        assert stats.events == rec.revision and stats.listed == stats.kinds
        final = await _state(rec, targets, redact=False)
        assert final == await _state(sb.event_log, targets, redact=True)
        settings = final[("", "configmaps", "default", "settings")]
        assert settings["data"] == {"password": importing.REDACTED}
        # Every event names the source's resourceVersion; a pod's bind names its manager.
        history = [e for e in await _events(rec) if e.resource == "pods" and e.name == pending["metadata"]["name"]]
        assert history[0].type == "ADDED" and history[0].actor.request_id.startswith("source=")
        assert history[-1].actor.field_manager
        name = pending["metadata"]["name"]
        source_why = await api_why.explain_from_source(str(tmp_path / "source"), namespace="default", name=name)
        recorded_why = await api_why.explain_from_source(str(tmp_path / "rec"), namespace="default", name=name)
        assert _verdict(recorded_why) == _verdict(source_why)
        assert "example.com/broken" in msgspec.json.encode(recorded_why).decode()


def _verdict(doc: Any) -> Any:
    """The answer without the revisions it was read at (the two logs number differently)."""
    if isinstance(doc, dict):
        return {k: _verdict(v) for k, v in doc.items() if k not in ("revision", "resourceVersion", "at")}
    if isinstance(doc, list):
        return [_verdict(v) for v in doc]
    return doc


async def _slices(sb: Sandbox) -> bool:
    return len((await sb.client.list(f"resourceslices.{R}")).items) >= 1


async def _events(event_log: sql.SqlEventLog) -> list[Any]:
    return [e async for e in _scan(event_log)]


async def _scan(event_log: sql.SqlEventLog) -> AsyncIterator[Any]:
    after = 0
    while after < event_log.revision:
        page = await event_log.after(after, limit=1000)
        for event in page:
            yield event
        after = page[-1].revision


class _HeldRecorder(record.Recorder):
    """Holds the ConfigMaps' first WATCH until the test lets it go (the source compacts meanwhile)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.listed = asyncio.Event()
        self.go = asyncio.Event()
        self.expired = 0

    async def _watch(self, target: record.Target, rv: str) -> str:
        if target.name == "configmaps" and not self.go.is_set():
            self.listed.set()
            await self.go.wait()
        try:
            return await super()._watch(target, rv)
        except errors.Expired:
            self.expired += 1
            raise


async def test_an_expired_watch_relists_as_resync_events(tmp_path: Path) -> None:
    async with sandbox(data_dir=tmp_path / "source", controllers=(), secure=True) as sb, \
            _recording(tmp_path / "rec") as rec:
        for name in ("a", "b"):
            await sb.client.create("configmaps", {"metadata": {"name": name}, "data": {"v": "1"}}, namespace="default")
        client = clients.Client.from_kubeconfig(sb.kubeconfig)
        recorder = _HeldRecorder(client=client, event_log=rec, keep_secrets=True, page=1)  # (the relist in pages)
        stop = asyncio.Event()
        task = asyncio.create_task(recorder.run(stop, only=["configmaps"]))
        try:
            await recorder.listed.wait()
            await sb.client.patch("configmaps", "a", {"data": {"v": "2"}}, namespace="default")
            await sb.client.delete("configmaps", "b", namespace="default")
            await sb.client.create("configmaps", {"metadata": {"name": "c"}, "data": {"v": "1"}}, namespace="default")
            await sb.event_log.compact(sb.event_log.revision)
            recorder.go.set()

            async def resynced() -> bool:
                return recorder.stats.resyncs >= 1 and rec.revision >= 5

            await eventually(resynced, within=10, what="the relist's events")
        finally:
            stop.set()
            await task
            await client.close()
        assert recorder.expired >= 1 and recorder.stats.resyncs >= 1
        resync = [(e.type, e.name) for e in await _events(rec) if e.actor.request_id.endswith("resync")]
        assert sorted(resync) == [("ADDED", "c"), ("DELETED", "b"), ("MODIFIED", "a")]
        live = await rec.list_objects(group="", resource="configmaps", namespace="default")
        assert {e.name: msgspec.json.decode(e.object)["data"] for e in live.events} == {
            "a": {"v": "2"}, "c": {"v": "1"}, **({"kube-root-ca.crt": _ca(live)} if _ca(live) else {})}


def _ca(listed: Any) -> Any:
    for e in listed.events:
        if e.name == "kube-root-ca.crt":
            return msgspec.json.decode(e.object)["data"]
    return None


def test_a_change_has_the_clusters_time_and_manager() -> None:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "p", "resourceVersion": "42", "creationTimestamp": "2027-01-15T08:00:00Z",
        "managedFields": [{"manager": "kubectl", "time": "2027-01-15T08:00:00Z"},
                          {"manager": "kube-scheduler", "time": "2027-01-15T08:00:05Z"}]}}
    added = record.change_of("ADDED", obj)
    assert (added.time, added.user, added.field_manager, added.source) == (START, "kube-scheduler", "kube-scheduler", "42")
    modified = record.change_of("MODIFIED", obj)
    assert modified.time == START + 5 and not modified.deleted
    bare = record.change_of("MODIFIED", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, now=lambda: 7.0)
    assert (bare.time, bare.user) == (7.0, "")
    assert record.change_of("DELETED", obj, now=lambda: 9.0).deleted


async def test_the_command_stops_on_sigterm_and_for_and_its_recording_reads_back(tmp_path: Path, capsys: Any) -> None:
    async with sandbox(data_dir=tmp_path / "source", controllers=(), secure=True) as sb:
        await sb.client.create("configmaps", {"metadata": {"name": "a"}, "data": {"v": "1"}}, namespace="default")
        env = {**os.environ, "PYTHONWARNINGS": "error"}
        cmd = [sys.executable, "-m", "cp.cli", "record", "--kubeconfig", str(sb.kubeconfig), "--kinds", "configmaps,namespaces"]
        proc = await asyncio.create_subprocess_exec(*cmd, "--data-dir", str(tmp_path / "r1"), env=env,
                                                    stderr=subprocess.PIPE)
        assert proc.stderr is not None
        line = await proc.stderr.readline()  # the first progress line: the LISTs are committed
        while b"2/2 kinds listed" not in line:
            line = await proc.stderr.readline()
            assert line, "the recorder ended before listing"
        proc.send_signal(signal.SIGTERM)
        rest = await proc.stderr.read()
        assert await proc.wait() == 0, rest
        assert b"recorded" in rest
        assert (tmp_path / "r1").stat().st_mode & 0o777 == 0o700
        proc = await asyncio.create_subprocess_exec(*cmd, "--for", "1ms", "--data-dir", str(tmp_path / "r2"), env=env,
                                                    stderr=subprocess.PIPE)
        _, err = await proc.communicate()
        assert proc.returncode == 0, err
        async with _reopened(tmp_path / "r1") as r1:
            got = await r1.get(group="", resource="configmaps", namespace="default", name="a")
            assert got is not None and msgspec.json.decode(got.object)["data"] == {"v": importing.REDACTED}
    # The recording reads as any log: `log show`, `log history`, `replay`.
    r1 = str(tmp_path / "r1")
    code, out, _ = await _cplane(capsys, "log", "show", "configmaps", "-n", "default", "--data-dir", r1)
    assert code == 0 and "\na " in out
    code, out, _ = await _cplane(capsys, "log", "history", "configmaps/a", "-n", "default", "--data-dir", r1)
    assert code == 0 and "ADDED" in out
    kubeconfig = tmp_path / "replay.kubeconfig"
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "cp.cli", "replay", r1, "--step", "--port", "0",
                                                "--kubeconfig", str(kubeconfig), stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL)
    try:
        await eventually(lambda: kubeconfig.exists() or proc.returncode is not None, within=30)
        code, out, _ = await _cplane(capsys, "replay", "until", "--object", "configmaps/default/a",
                                     "--kubeconfig", str(kubeconfig))
        assert code == 0, out
        async with clients.Client.from_kubeconfig(kubeconfig) as replayed:
            got_a = await replayed.get("configmaps", "a", namespace="default")
        assert got_a["data"] == {"v": importing.REDACTED}
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 20) == 0


async def _cplane(capsys: Any, *argv: str) -> tuple[int, str, str]:
    from cp import cli

    capsys.readouterr()
    code = await asyncio.to_thread(cli.main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@contextlib.asynccontextmanager
async def _reopened(path: Path) -> AsyncIterator[sql.SqlEventLog]:
    event_log = factory.open_event_log(url=f"sqlite+aiosqlite:///{path / 'cplane.db'}")
    await event_log.start()
    try:
        yield event_log
    finally:
        await event_log.close()


def test_help_documents_record() -> None:
    out = subprocess.run([sys.executable, "-m", "cp.cli", "--help"], capture_output=True, text=True, check=True).stdout
    assert "record" in out
    with pytest.raises(SystemExit):
        record_parser_fails()


def record_parser_fails() -> None:
    from cp import cli

    cli.build_parser().parse_args(["record"])  # --data-dir is required


async def _served(sb: Sandbox, name: str) -> bool:
    await sb.client.discover()
    return sb.client.mapper.resolve(name) is not None


def _gadgets() -> dict[str, Any]:
    crd = copy.deepcopy(WIDGETS)
    crd["metadata"]["name"] = "gadgets.example.org"
    crd["spec"]["group"] = "example.org"
    crd["spec"]["names"] = {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"}
    return crd


async def test_custom_resources_follow_their_definitions(tmp_path: Path) -> None:
    async with sandbox(data_dir=tmp_path / "source", controllers=()) as sb, _recording(tmp_path / "rec") as rec:
        crds = "customresourcedefinitions.apiextensions.k8s.io"
        await sb.client.create(crds, WIDGETS)
        await sb.wait_for(lambda: _served(sb, "widgets.example.com"))
        await sb.client.create("widgets.example.com", {"apiVersion": "example.com/v1", "kind": "Widget",
                                                       "metadata": {"name": "w1"}, "spec": {"color": "blue"}},
                               namespace="default")
        client = clients.Client.from_kubeconfig(sb.kubeconfig)
        recorder = record.Recorder(client=client, event_log=rec)
        stop = asyncio.Event()
        task = asyncio.create_task(recorder.run(stop))
        try:
            await eventually(lambda: "widgets.example.com" in {t.name for t in recorder.targets()}, within=10)
            await sb.client.create(crds, _gadgets())

            await eventually(lambda: _served(sb, "gadgets.example.org"), within=10, what="the gadgets served")
            await sb.client.create("gadgets.example.org", {"apiVersion": "example.org/v1", "kind": "Gadget",
                                                           "metadata": {"name": "g1"}, "spec": {"replicas": 2}},
                                   namespace="default")

            async def recorded() -> bool:
                return await rec.get(group="example.org", resource="gadgets", namespace="default", name="g1") is not None

            await eventually(recorded, within=10, what="the gadget recorded")
        finally:
            stop.set()
            await task
            await client.close()
        events = [(e.group, e.resource, e.name) for e in await _events(rec) if e.group.startswith("example")
                  or e.resource == "customresourcedefinitions"]
        assert events.index(("apiextensions.k8s.io", "customresourcedefinitions", "widgets.example.com")) \
            < events.index(("example.com", "widgets", "w1"))
        assert events.index(("apiextensions.k8s.io", "customresourcedefinitions", "gadgets.example.org")) \
            < events.index(("example.org", "gadgets", "g1"))
        assert not recorder.sequencer.skipped


async def test_kinds_narrow_and_bring_the_definitions(tmp_path: Path) -> None:
    async with sandbox(data_dir=tmp_path / "source", controllers=()) as sb:
        await sb.client.create("customresourcedefinitions.apiextensions.k8s.io", WIDGETS)
        await sb.wait_for(lambda: _served(sb, "widgets.example.com"))
        client = clients.Client.from_kubeconfig(sb.kubeconfig)
        try:
            async def listed() -> list[str]:
                return sorted(t.name for t in await record.discover(client, only=["widgets.example.com", "pods"]))

            assert await eventually(listed, within=10) == [
                "customresourcedefinitions.apiextensions.k8s.io", "pods", "widgets.example.com"]
            with pytest.raises(ValueError, match=r"no resource 'gizmos\.example\.com'"):
                await record.discover(client, only=["gizmos.example.com"])
        finally:
            await client.close()


async def test_a_full_queue_holds_the_watches_back_and_loses_nothing(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(record, "QUEUE_LIMIT", 3)  # changes waiting for the writer, at most
    async with sandbox(data_dir=tmp_path / "source", controllers=()) as sb, _recording(tmp_path / "rec") as rec:
        for i in range(30):
            await sb.client.create("configmaps", {"metadata": {"name": f"before-{i}"}}, namespace="default")
        client = clients.Client.from_kubeconfig(sb.kubeconfig)
        recorder = record.Recorder(client=client, event_log=rec, keep_secrets=True, batch=2)
        assert recorder._queue.maxsize == 3
        stop = asyncio.Event()
        task = asyncio.create_task(recorder.run(stop, only=["configmaps"]))
        try:
            for i in range(30):
                await sb.client.create("configmaps", {"metadata": {"name": f"during-{i}"}}, namespace="default")

            async def names() -> set[str]:
                live = await rec.list_objects(group="", resource="configmaps", namespace="default")
                return {e.name for e in live.events}

            want = {f"{when}-{i}" for when in ("before", "during") for i in range(30)}
            await eventually(lambda: _has(names, want), within=20, what="every ConfigMap recorded")
        finally:
            stop.set()
            await task
            await client.close()
        assert recorder.stats.errors == 0


async def _has(names: Any, want: set[str]) -> bool:
    return want <= await names()


async def test_a_recording_goes_into_postgresql_with_db(tmp_path: Path, capsys: Any) -> None:
    from tests.storage.conftest import fresh_pg_url

    async with sandbox(data_dir=tmp_path / "source", controllers=()) as sb, fresh_pg_url() as url:
        await sb.client.create("configmaps", {"metadata": {"name": "a"}, "data": {"v": "1"}}, namespace="default")
        stop = asyncio.Event()
        task = asyncio.create_task(record.record(kubeconfig=str(sb.kubeconfig), context=None, only=["configmaps"],
                                                 duration=None, keep_secrets=True, data_dir=None, db=url, stop=stop))
        recorded = factory.open_event_log(url=url)
        await recorded.start()
        try:
            async def has_a() -> bool:
                return await recorded.get(group="", resource="configmaps", namespace="default", name="a") is not None

            await eventually(has_a, within=20, what="the ConfigMap recorded in PostgreSQL")
            stop.set()
            assert await task == 0
            assert "into postgresql+asyncpg://" in capsys.readouterr().err
            # Not empty any more: a second recording is refused, as is a URL that cannot be used.
            again = await record.record(kubeconfig=str(sb.kubeconfig), context=None, only=["configmaps"],
                                        duration=None, keep_secrets=True, data_dir=None, db=url)
            assert again == 2 and "needs an empty event log" in capsys.readouterr().err
            bad = await record.record(kubeconfig=str(sb.kubeconfig), context=None, only=None, duration=None,
                                      keep_secrets=True, data_dir=None, db="mysql://x/y")
            assert bad == 2 and "unsupported event log URL" in capsys.readouterr().err
        finally:
            if not task.done():
                stop.set()
                await task
            await recorded.close()


async def _record_until(sb: Sandbox, rec: sql.SqlEventLog, done: Any, *, resume: bool = False) -> record.Recorder:
    """Record `sb` into `rec` until `done()` is true of the recording."""
    client = clients.Client.from_kubeconfig(sb.kubeconfig)
    recorder = record.Recorder(client=client, event_log=rec, keep_secrets=True, resume=resume)
    stop = asyncio.Event()
    task = asyncio.create_task(recorder.run(stop, only=["configmaps", "widgets.example.com"]))
    try:
        await eventually(done, within=20, what="the recording caught up")
    finally:
        stop.set()
        await task
        await client.close()
    return recorder


async def test_a_recording_resumes_with_what_changed_meanwhile(tmp_path: Path) -> None:
    """Stopped, then resumed: each resource is listed again and only what changed or went in between
    is recorded (resync events), so the recording ends as the source is, revisions following on."""
    async with sandbox(data_dir=tmp_path / "source", controllers=()) as sb, _recording(tmp_path / "rec") as rec:
        await sb.client.create("customresourcedefinitions.apiextensions.k8s.io", WIDGETS)
        await sb.wait_for(lambda: _served(sb, "widgets.example.com"))
        widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"color": "blue"}}
        await sb.client.create("widgets.example.com", widget, namespace="default")
        for name in ("keep", "change", "go", "again"):
            await sb.client.create("configmaps", {"metadata": {"name": name}, "data": {"v": "1"}}, namespace="default")

        async def has(resource: str, name: str) -> bool:
            group = "example.com" if resource == "widgets" else ""
            return await rec.get(group=group, resource=resource, namespace="default", name=name) is not None

        deleted = []

        async def first_done() -> bool:  # everything recorded, then "again" deleted (and made again later)
            if not deleted:
                if not (await has("configmaps", "go") and await has("widgets", "w1") and await has("configmaps",
                                                                                                     "again")):
                    return False
                await sb.client.delete("configmaps", "again", namespace="default")
                deleted.append(True)
            return not await has("configmaps", "again")

        await _record_until(sb, rec, first_done)
        before = rec.revision
        with pytest.raises(ValueError, match="--resume"):
            record.Recorder(client=clients.Client("http://unused"), event_log=rec)
        # Meanwhile, not recorded: a change, a deletion, a new object, the custom resource changed.
        await sb.client.patch("configmaps", "change", {"data": {"v": "2"}}, namespace="default")
        await sb.client.delete("configmaps", "go", namespace="default")
        await sb.client.create("configmaps", {"metadata": {"name": "new"}, "data": {"v": "1"}}, namespace="default")
        await sb.client.create("configmaps", {"metadata": {"name": "again"}, "data": {"v": "2"}}, namespace="default")
        await sb.client.patch("widgets.example.com", "w1", {"spec": {"color": "red"}}, namespace="default")

        async def caught_up() -> bool:
            return await has("configmaps", "new") and not await has("configmaps", "go")

        recorder = await _record_until(sb, rec, caught_up, resume=True)
        after = [e for e in await _events(rec) if e.revision > before]
        assert sorted((e.type, e.resource, e.name) for e in after) == [
            ("ADDED", "configmaps", "again"), ("ADDED", "configmaps", "new"), ("DELETED", "configmaps", "go"),
            ("MODIFIED", "configmaps", "change"), ("MODIFIED", "widgets", "w1")]
        deletion = next(e for e in await _events(rec) if e.name == "again" and e.type == "DELETED")
        assert next(e for e in after if e.name == "again").prev_revision == deletion.revision
        assert all(e.actor.request_id.split()[-1] == "resync" for e in after), [e.actor for e in after]
        assert [e.revision for e in after] == list(range(before + 1, before + 6))
        assert not recorder.sequencer.skipped and recorder.stats.errors == 0
        kinds = [t for t in recorder.targets() if t.name in ("configmaps", "widgets.example.com")]
        source_log = sb.event_log
        assert await _state(rec, kinds, redact=False) == await _state(source_log, kinds, redact=False)


async def test_the_first_list_streams_page_by_page_and_an_expired_continue_relists(tmp_path: Path,
                                                                                   monkeypatch: Any) -> None:
    """The first LIST goes into the queue a page at a time (3 changes may wait, pages of 2: the LIST
    is never held whole); a continue token that expires part-way takes the LIST again, compared with
    what the pages had queued, and the recording still ends as the source is."""
    monkeypatch.setattr(record, "QUEUE_LIMIT", 3)
    async with sandbox(data_dir=tmp_path / "source", controllers=()) as sb, _recording(tmp_path / "rec") as rec:
        for i in range(20):
            await sb.client.create("configmaps", {"metadata": {"name": f"cm-{i:02}"}}, namespace="default")
        client = clients.Client.from_kubeconfig(sb.kubeconfig)
        pages: list[str] = []
        real_page = client.list_page

        async def list_page(kind: Any, **kw: Any) -> Any:
            pages.append(kw.get("continue_") or "")
            if len(pages) == 4:  # the fourth page's token has expired; meanwhile one went and one came
                await sb.client.delete("configmaps", "cm-00", namespace="default")
                await sb.client.create("configmaps", {"metadata": {"name": "late"}}, namespace="default")
                raise errors.Expired("the continue token expired")
            return await real_page(kind, **kw)

        monkeypatch.setattr(client, "list_page", list_page)
        recorder = record.Recorder(client=client, event_log=rec, keep_secrets=True, batch=2, page=2)
        stop = asyncio.Event()
        task = asyncio.create_task(recorder.run(stop, only=["configmaps"]))
        try:
            await eventually(lambda: "configmaps" in recorder._listed, within=20, what="the LIST recorded")
        finally:
            stop.set()
            await task
            await client.close()
        live = await rec.list_objects(group="", resource="configmaps", namespace="default")
        source = await sb.client.list("configmaps", namespace="default")
        assert sorted(e.name for e in live.events) == sorted(c["metadata"]["name"] for c in source.items)
        assert "late" in {e.name for e in live.events} and "cm-00" not in {e.name for e in live.events}
        resynced = [e for e in await _events(rec) if e.actor.request_id.split()[-1] == "resync"]
        # What the pages had queued is compared (cm-00 went: a resync DELETED); the rest of the LIST,
        # "late" among it, is ADDED as a first LIST's objects are.
        assert [(e.type, e.name) for e in resynced] == [("DELETED", "cm-00")]
        assert len(pages) > 5  # (pages of 2, not one LIST held whole)
        assert recorder.stats.errors == 0
