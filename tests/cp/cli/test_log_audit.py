"""`cplane log import --audit`: hand-made kube-apiserver audit logs (upstream's documented format) into an
empty data dir, all or nothing, read back with `log show` and `log history`."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest

from cp import cli
from tests.cp.test_auditlog import POD, event


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def lines(*events: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(ev).encode() + b"\n" for ev in events)


SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token", "namespace": "shop", "uid": "s-1"},
          "type": "Opaque", "data": {"password": "aHVudGVyMg=="}}


@pytest.fixture
def audit_files(tmp_path: Path) -> list[Path]:
    """A rotated gzip file (RequestResponse level) and the current file (Request and Metadata levels)."""
    labelled = {**POD, "metadata": {**POD["metadata"], "labels": {"tier": "web"}, "resourceVersion": "5013"}}
    rotated = tmp_path / "audit-2026-12-01T10-00-00.000.log.gz"
    rotated.write_bytes(gzip.compress(lines(
        event("create", code=201, request=POD, response=POD, audit_id="c1", at="2026-12-01T10:00:01.000000Z"),
        event("create", code=201, resource="secrets", name="token", request=SECRET, response=SECRET,
              audit_id="c2", at="2026-12-01T10:00:02.000000Z"),
        event("get", level="Metadata", audit_id="r1", at="2026-12-01T10:00:03.000000Z"))))
    current = tmp_path / "audit.log"
    bob = event("patch", request={"metadata": {"labels": {"tier": "web"}}}, response=labelled, audit_id="p1",
                at="2026-12-01T10:00:04.000000Z")
    bob["user"] = {"username": "bob"}
    current.write_bytes(lines(
        bob,
        event("create", level="Request", code=201, resource="configmaps", name="cfg", audit_id="c3",
              request={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"k": "v"}},
              at="2026-12-01T10:00:05.000000Z"),
        event("update", level="Metadata", resource="configmaps", name="cfg", audit_id="u1",
              at="2026-12-01T10:00:06.000000Z")))
    return [current, rotated]


def test_audit_logs_import_and_read_back(capsys: Any, tmp_path: Path, audit_files: list[Path]) -> None:
    data = tmp_path / "data"
    code, _, err = run(capsys, "log", "import", "--audit", *map(str, audit_files), "--data-dir", str(data))
    assert code == 0, err
    assert "imported 4 events from 6 audit events" in err
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    summary = err.splitlines()
    assert summary[0].split()[:2] == ["RESOURCE", "IMPORTED"] and "METADATA LEVEL" in summary[0]
    assert next(line for line in summary if line.startswith("configmaps ")).split() == ["configmaps", "1", "0", "1"]

    code, out, err = run(capsys, "log", "show", "--data-dir", str(data))
    assert code == 0, err
    assert "pod/web" in out and "secret/token" in out and "configmap/cfg" in out
    code, out, _ = run(capsys, "log", "show", "--data-dir", str(data), "secrets", "-o", "json")
    assert json.loads(out)["items"][0]["data"] == {"password": "REDACTED"}
    code, out, err = run(capsys, "log", "history", "--data-dir", str(data), "pods/web", "-n", "shop")
    assert code == 0, err
    assert "alice" in out and "bob" in out and "tier" in out
    code, out, _ = run(capsys, "log", "events", "--data-dir", str(data), "-o", "ndjson")
    events = [json.loads(line) for line in out.splitlines()]
    assert [(e["revision"], e["type"], e["actor"]["user"], e["actor"]["request_id"]) for e in events] == [
        (1, "ADDED", "alice", "source=c1"), (2, "ADDED", "alice", "source=c2"), (3, "MODIFIED", "bob", "source=p1"),
        (4, "ADDED", "alice", "source=c3")]


def test_keep_secrets(capsys: Any, tmp_path: Path, audit_files: list[Path]) -> None:
    data = tmp_path / "data"
    code, _, err = run(capsys, "log", "import", "--audit", *map(str, audit_files), "--data-dir", str(data),
                       "--keep-secrets")
    assert code == 0, err
    code, out, _ = run(capsys, "log", "show", "--data-dir", str(data), "secrets", "-o", "json")
    assert json.loads(out)["items"][0]["data"] == {"password": "aHVudGVyMg=="}


def test_a_malformed_line_names_file_and_line_and_writes_nothing(capsys: Any, tmp_path: Path,
                                                                 audit_files: list[Path]) -> None:
    broken = tmp_path / "audit-2026-12-01T11-00-00.000.log"
    broken.write_bytes(lines(event("get", audit_id="x", at="2026-12-01T10:00:07.000000Z"))
                       + b'{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "auditID": "y", "stage\n')
    data = tmp_path / "data"
    code, _, err = run(capsys, "log", "import", "--audit", *map(str, audit_files), str(broken),
                       "--data-dir", str(data))
    assert code == 1
    assert f"{broken}:2: malformed JSON" in err
    with sqlite3.connect(data / "cplane.db") as db:
        assert db.execute("select count(*) from events").fetchone() == (0,)


def test_audit_and_ndjson_input_are_exclusive(capsys: Any, tmp_path: Path, audit_files: list[Path]) -> None:
    code, _, err = run(capsys, "log", "import", "--data-dir", str(tmp_path / "d"), "run.ndjson",
                       "--audit", str(audit_files[0]))
    assert code == 2 and "--audit takes no NDJSON input" in err
    code, _, err = run(capsys, "log", "import", "--data-dir", str(tmp_path / "d"), "--dump", str(tmp_path),
                       "--audit", str(audit_files[0]))
    assert code == 2 and "no --dump" in err


def test_big_inputs_are_read_by_a_worker_process(capsys: Any, tmp_path: Path, audit_files: list[Path],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from cp.cli import log_audit

    monkeypatch.setattr(log_audit, "WORKER_BYTES", 0)
    code, _, err = run(capsys, "log", "import", "--audit", *map(str, audit_files), "--data-dir", str(tmp_path / "a"))
    assert code == 0, err
    assert "imported 4 events from 6 audit events" in err and "METADATA LEVEL" in err
    code, out, _ = run(capsys, "log", "events", "--data-dir", str(tmp_path / "a"), "-o", "ndjson")
    assert [json.loads(line)["actor"]["request_id"] for line in out.splitlines()] == [
        "source=c1", "source=c2", "source=p1", "source=c3"]
    code, _, err = run(capsys, "log", "import", "--audit", *map(str, audit_files), "--data-dir", str(tmp_path / "a"))
    assert code == 1 and "empty" in err  # the store is not empty: refused, and the worker stopped

    broken = tmp_path / "broken.log"
    broken.write_bytes(lines(event("get")) + b'{"kind": "Event", "apiVersion": "audit.k8s.io/v1"}\n')
    code, _, err = run(capsys, "log", "import", "--audit", *map(str, audit_files), str(broken),
                       "--data-dir", str(tmp_path / "b"))
    assert code == 1 and f"{broken}:2: an audit Event without stageTimestamp" in err
    with sqlite3.connect(tmp_path / "b" / "cplane.db") as db:
        assert db.execute("select count(*) from events").fetchone() == (0,)


def _exit_at_once(*_args: Any) -> None:
    os._exit(3)  # a worker that dies (killed, out of memory...) without a word


def test_a_worker_that_dies_is_an_error_not_a_hang(capsys: Any, tmp_path: Path, audit_files: list[Path],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from cp.cli import log_audit

    monkeypatch.setattr(log_audit, "WORKER_BYTES", 0)
    monkeypatch.setattr(log_audit, "_worker", _exit_at_once)
    code, _, err = run(capsys, "log", "import", "--audit", *map(str, audit_files), "--data-dir", str(tmp_path / "d"))
    assert code == 1 and "the audit log reader stopped unexpectedly" in err
    with sqlite3.connect(tmp_path / "d" / "cplane.db") as db:
        assert db.execute("select count(*) from events").fetchone() == (0,)


def test_an_object_the_worker_cannot_number_names_file_and_line(capsys: Any, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from cp.cli import log_audit

    monkeypatch.setattr(log_audit, "WORKER_BYTES", 0)
    nameless = {**POD, "metadata": {"namespace": "shop", "uid": "u-2"}}
    path = tmp_path / "audit.log"
    path.write_bytes(lines(event("create", code=201, request=POD, response=POD, audit_id="c1"),
                           event("create", code=201, request=nameless, response=nameless, audit_id="c2")))
    code, _, err = run(capsys, "log", "import", "--audit", str(path), "--data-dir", str(tmp_path / "d"))
    assert code == 1 and f"{path}:2: Pod without metadata.name" in err
    with sqlite3.connect(tmp_path / "d" / "cplane.db") as db:
        assert db.execute("select count(*) from events").fetchone() == (0,)


def test_the_worker_stops_by_itself_when_the_import_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's pipe breaks when the importing process lets go of it: the worker ends on its own
    (exit code 0), it is not left blocked on a full pipe until killed."""
    import multiprocessing

    from cp.cli import log_audit

    monkeypatch.setattr(log_audit, "_CHUNK", 20)
    monkeypatch.setattr(log_audit, "_AHEAD", 2)
    path = tmp_path / "audit.log"  # ~500 KB of events: more than the pipe and the queue hold
    path.write_bytes(lines(*(event("create", code=201, request=POD, audit_id=f"c{n}", name=f"web-{n}",
                                   response={**POD, "metadata": {**POD["metadata"], "name": f"web-{n}",
                                                                 "uid": f"u-{n}"}})
                             for n in range(500))))
    outcome: list[Any] = []
    rows, _stop = log_audit._from_worker([path], keep_secrets=False, outcome=outcome)
    assert len(next(rows)) == 20
    (worker,) = multiprocessing.active_children()
    rows.close()  # as the import does when the store refuses: the generator stops the worker
    assert worker.exitcode == 0 and not outcome
