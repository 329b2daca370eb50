"""`cplane log show|history|diff|events` and `cplane replay` (client side) through the real CLI, on a
recorded run (its data dir and its NDJSON export), and bad sources: one clear error line, exit 1,
nothing written."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from controllers.runtime import client as clients
from cp import cli
from cp.cli import log as log_command
from tests import recordings


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(params=["file", "data-dir"])
def source(request: pytest.FixtureRequest, recorded: recordings.Recorded) -> list[str]:
    """The same recording as `-f run.ndjson` and as `--data-dir live`."""
    if request.param == "file":
        return ["-f", str(recorded.ndjson)]
    return ["--data-dir", str(recorded.data_dir)]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------- show


def test_show_prints_the_state_at_a_revision_like_kubectl(capsys: Any, source: list[str],
                                                          recorded: recordings.Recorded) -> None:
    tl = recorded.timeline
    at = tl.rev("ADDED", "configmaps/default/dependent")
    code, out, err = run(capsys, "log", "show", *source, "--at", str(at))
    assert code == 0, err
    assert f"at revision {at}" in err
    assert "namespace/shop" in out and "pod/web" in out and "configmap/dependent" in out
    lines = out.splitlines()
    ns_row = next(i for i, line in enumerate(lines) if line.startswith("namespace/shop"))
    assert lines[max(i for i in range(ns_row) if lines[i].startswith("NAME"))].split() == ["NAME", "STATUS", "AGE"]
    pod_head = next(line for line in lines if line.startswith("NAMESPACE") and "READY" in line)
    assert pod_head.split() == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]

    at = tl.rev("ADDED", "pods/shop/web")
    code, out, err = run(capsys, "log", "show", *source, "--at", str(at), "pods", "-n", "shop")
    assert code == 0 and out.splitlines()[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert out.splitlines()[1].startswith("web ")


def test_show_yaml_json_name_and_at_time(capsys: Any, source: list[str], recorded: recordings.Recorded) -> None:
    tl = recorded.timeline
    at = tl.rev("MODIFIED", "configmaps/shop/cfg", manager="bob")
    code, out, _ = run(capsys, "log", "show", *source, "--at", str(at), "configmaps", "-o", "json")
    body = json.loads(out)
    assert code == 0 and body["kind"] == "List" and body["metadata"]["resourceVersion"] == str(at)
    assert [(i["metadata"]["name"], i["data"]) for i in body["items"]] == [("cfg", {"color": "green", "size": "L"})]
    code, out, _ = run(capsys, "log", "show", *source, "--at", str(at), "cm", "-o", "yaml")
    assert code == 0 and "kind: List" in out and "color: green" in out
    at = tl.rev("ADDED", "leases.coordination.k8s.io/kube-system/lease-2")
    code, out, _ = run(capsys, "log", "show", *source, "--at", str(at), "leases.coordination.k8s.io", "-o", "name")
    assert out.split() == ["lease.coordination.k8s.io/lease-0", "lease.coordination.k8s.io/lease-1",
                           "lease.coordination.k8s.io/lease-2"]
    from cp import clock as clocks

    at, when_ts = tl.cut(tl.rev("MODIFIED", "configmaps/shop/cfg", manager="bob"))
    when = clocks.rfc3339_micro(when_ts)
    code, out, err = run(capsys, "log", "show", *source, "--at-time", when, "configmaps", "-o", "json")
    assert code == 0, err
    assert json.loads(out)["metadata"]["resourceVersion"] == str(at)
    code, _, err = run(capsys, "log", "show", *source, "--at", "0")
    assert code == 0 and "No resources found at revision 0" in err


# ---------------------------------------------------------------------------------- history


def test_history_lists_every_version_with_actor_and_diff(capsys: Any, source: list[str],
                                                         recorded: recordings.Recorded) -> None:
    tl = recorded.timeline
    versions = tl.of("pods/shop/web")
    code, out, err = run(capsys, "log", "history", *source, "pods/web", "-n", "shop")
    assert code == 0, err
    assert out.startswith(f"pods/shop/web: {len(versions)} versions, revisions "
                          f"{versions[0]['revision']}..{versions[-1]['revision']}\n")
    blocks = out.split("\n\n")[1:]
    assert len(blocks) == len(versions)
    assert blocks[0].splitlines()[0].split("  ")[2] == "ADDED"
    assert "manager alice, agent alice-cli/1.0" in blocks[0]
    assert '  + spec.containers[name=web].image: "nginx:1.27"' in blocks[0]
    assert "resourceVersion" not in out and "managedFields" not in out
    bob = next(b for b in blocks if "manager bob, agent bob-tool/2.3" in b)
    assert "MODIFIED  by user system:admin, manager bob" in bob
    assert bob.splitlines()[1:] == ['  + metadata.labels.tier: "front"']
    assert "DELETED" in blocks[-1] and "cplane-controller-manager" in blocks[-1] and "(deleted)" in blocks[-1]

    code, out, _ = run(capsys, "log", "history", *source, "configmaps/default/owner")
    assert code == 0 and "(2 incarnations: deleted and created again)" in out and "(created again: new uid)" in out
    cfg = [e["revision"] for e in tl.of("configmaps/shop/cfg")]
    code, out, _ = run(capsys, "log", "history", *source, "cm/shop/cfg", "--all-fields")
    assert f'~ metadata.resourceVersion: "{cfg[0]}" → "{cfg[1]}"' in out
    code, out, _ = run(capsys, "log", "history", *source, "cm/shop/cfg", "-o", "ndjson")
    assert [json.loads(x)["revision"] for x in out.splitlines()] == cfg


# ---------------------------------------------------------------------------------- diff


def test_diff_between_two_revisions(capsys: Any, source: list[str], recorded: recordings.Recorded) -> None:
    tl = recorded.timeline
    r1, r2 = tl.rev("ADDED", "namespaces/shop"), tl.rev("MODIFIED", "namespaces/shop", manager="alice-cli")
    code, out, err = run(capsys, "log", "diff", *source, str(r1), str(r2))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"revision {r1} -> revision {r2}: ")
    assert "+ pods/shop/web" in lines and "+ configmaps/shop/cfg" in lines and "~ namespaces/shop" in lines
    assert '    ~ status.phase: "Active" → "Terminating"' in lines
    r = tl.rev("MODIFIED", "configmaps/shop/cfg", manager="bob")
    code, out, _ = run(capsys, "log", "diff", *source, str(r - 1), str(r), "configmaps", "-o", "json")
    body = json.loads(out)
    assert body["changed"] == {"configmaps/shop/cfg": [
        {"op": "~", "path": "data.color", "old": "blue", "new": "green"},
        {"op": "+", "path": "data.size", "old": None, "new": "L"}]}
    code, out, _ = run(capsys, "log", "diff", *source, str(r1), str(tl.last), "--brief")
    assert all(line[:2] in ("+ ", "- ", "~ ") for line in out.splitlines()[1:])
    code, _, err = run(capsys, "log", "diff", *source, "5")
    assert code == 1 and err.count("\n") == 1 and "give two revisions" in err


def test_diff_against_itself_finds_no_change(capsys: Any, recorded: recordings.Recorded) -> None:
    code, out, err = run(capsys, "log", "diff", "-f", str(recorded.ndjson), "--against", str(recorded.data_dir),
                         "-o", "json")
    assert code == 0, err
    body = json.loads(out)
    assert body["forkPoint"] == recorded.last
    assert (body["added"], body["removed"], body["changed"]) == ([], [], {})


# ---------------------------------------------------------------------------------- events


def test_events_filters(capsys: Any, source: list[str], recorded: recordings.Recorded) -> None:
    tl = recorded.timeline
    code, out, err = run(capsys, "log", "events", *source)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["REVISION", "TIME", "TYPE", "RESOURCE"]
    assert len(lines) == recorded.last + 1
    code, out, _ = run(capsys, "log", "events", *source, "--actor", "bob", "-o", "ndjson")
    events = [json.loads(x) for x in out.splitlines()]
    assert events and all(e["actor"]["field_manager"] == "bob" for e in events)
    lo, hi = tl.rev("ADDED", "configmaps/shop/cfg"), tl.rev("DELETED", "configmaps/default/dependent")
    code, out, _ = run(capsys, "log", "events", *source, "--resource", "cm", "--since", str(lo), "--until", str(hi),
                       "--type", "DELETED")
    want = [str(e["revision"]) for e in tl.events
            if lo < e["revision"] <= hi and e["resource"] == "configmaps" and e["type"] == "DELETED"]
    assert [line.split()[0] for line in out.splitlines()[1:]] == want == \
        [str(tl.rev("DELETED", "configmaps/default/owner")), str(hi)]
    code, out, _ = run(capsys, "log", "events", *source, "--resource", "pods", "-n", "shop", "--name", "web",
                       "-o", "ndjson", "--limit", "2")
    assert [json.loads(x)["revision"] for x in out.splitlines()] == [e["revision"] for e in tl.of("pods/shop/web")][:2]
    from cp import clock as clocks

    r0, since = tl.cut(tl.rev("ADDED", "configmaps/default/owner"))
    r1, until = tl.cut(r0 + 2)
    code, out, _ = run(capsys, "log", "events", *source, "-o", "ndjson",
                       "--since", clocks.rfc3339_micro(since), "--until", clocks.rfc3339_micro(until))
    assert [json.loads(x)["revision"] for x in out.splitlines()] == list(range(r0 + 1, r1 + 1))
    code, _, err = run(capsys, "log", "events", *source, "--actor", "nobody-at-all")
    assert code == 0 and "No events match." in err


def test_events_by_name_and_by_user(capsys: Any, source: list[str], recorded: recordings.Recorded) -> None:
    """`--name` alone (any resource, namespace), `--user` (the authenticated user, exactly), both,
    with the other filters: the events of the timeline that match, in order (through the indexes on a
    data dir, through the scan on the NDJSON file)."""
    tl = recorded.timeline
    users = sorted({e["actor"].get("user", "") for e in tl.events})
    assert len(users) >= 2, users  # the scenario writes as several users
    cases: list[tuple[list[str], Any]] = [
        (["--name", "web"], lambda e: e["name"] == "web"),
        (["--name", "web", "-n", "shop"], lambda e: e["name"] == "web" and e["namespace"] == "shop"),
        (["--name", "nothing-has-this-name"], lambda e: False),
        (["--user", "no-such-user"], lambda e: False),
    ]
    for user in users:
        cases.append((["--user", user], lambda e, u=user: e["actor"].get("user", "") == u))
        cases.append((["--user", user, "--name", "web", "--type", "MODIFIED"],
                      lambda e, u=user: e["actor"].get("user", "") == u and e["name"] == "web"
                      and e["type"] == "MODIFIED"))
    if len(users[0]) > 2:  # --actor stays a substring match; --user is exact
        cases.append((["--user", users[0][:-1]], lambda e: False))
        cases.append((["--actor", users[0][:-1]], lambda e: users[0][:-1] in e["actor"].get("user", "")
                       or users[0][:-1] in e["actor"].get("field_manager", "")
                       or users[0][:-1] in e["actor"].get("user_agent", "")))
    for flags, keep in cases:
        code, out, err = run(capsys, "log", "events", *source, *flags, "-o", "ndjson")
        assert code == 0, err
        assert [json.loads(x)["revision"] for x in out.splitlines()] == \
            [e["revision"] for e in tl.events if keep(e)], flags
    matching = [e["revision"] for e in tl.events if e["actor"].get("user", "") == users[-1]]
    code, out, _ = run(capsys, "log", "events", *source, "--user", users[-1], "--since", str(matching[0]),
                       "--limit", "1", "-o", "ndjson")
    assert [json.loads(x)["revision"] for x in out.splitlines()] == matching[1:2]


def test_events_help_documents_user(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        cli.main(["log", "events", "--help"])
    out = capsys.readouterr().out
    assert "--user U" in out and "exact" in out and "--actor A" in out


def test_events_ndjson_is_the_export_format(capsys: Any, recorded: recordings.Recorded) -> None:
    code, out, _ = run(capsys, "log", "events", "-f", str(recorded.ndjson), "-o", "ndjson")
    assert code == 0 and out.encode() == recorded.ndjson.read_bytes()


async def test_follow_prints_new_events_of_a_live_log(tmp_path: Path) -> None:
    import io

    from api import server as servers

    async with servers.running(data_dir=tmp_path / "live") as live:
        last = live.event_log.revision
        args = cli.build_parser().parse_args(["log", "events", "--data-dir", str(tmp_path / "live"), "--follow",
                                              "--since", str(last), "-o", "ndjson"])
        stop = asyncio.Event()
        out = io.BytesIO()
        task = asyncio.ensure_future(log_command.log_events(args, stop=stop, out=out))
        async with clients.Client(live.url, user_agent="late/1.0") as client:
            await client.create("configmaps", {"metadata": {"name": "late", "namespace": "default"}})
        await recordings.eventually(lambda: b'"late"' in out.getvalue(), what="the followed event")
        stop.set()
        assert await asyncio.wait_for(task, 5) == 0
        lines = [json.loads(x) for x in out.getvalue().splitlines()]
        assert [(e["revision"], e["name"]) for e in lines] == [(last + 1, "late")]


# ---------------------------------------------------------------------------------- bad sources


def _bad_sources(tmp: Path, recorded: recordings.Recorded) -> dict[str, tuple[list[str], str]]:
    good = recorded.ndjson.read_bytes()
    truncated = tmp / "truncated.ndjson"
    truncated.write_bytes(good[: len(good) - 40])
    yaml_file = tmp / "objects.yaml"
    yaml_file.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    array = tmp / "array.json"
    array.write_text("[1, 2, 3]\n")
    empty = tmp / "empty.ndjson"
    empty.write_bytes(b"")
    foreign = tmp / "foreign.db"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    no_db = tmp / "nodb"
    no_db.mkdir()
    lines = good.splitlines(True)
    reordered = tmp / "reordered.ndjson"
    reordered.write_bytes(lines[1] + lines[0] + b"".join(lines[2:]))
    return {
        "truncated": (["-f", str(truncated)], f"line {len(lines)}: "),
        "yaml": (["-f", str(yaml_file)], "not an NDJSON event log (line 1"),
        "array": (["-f", str(array)], "not an NDJSON event log (line 1"),
        "empty": (["-f", str(empty)], "empty file: no events"),
        "foreign-sqlite": (["-f", str(foreign)], "not a cplane event log (no events table)"),
        "foreign-url": (["--db", f"sqlite+aiosqlite:///{foreign}"], "not a cplane event log (no events table)"),
        "dir-without-db": (["--data-dir", str(no_db)], "no event log in this directory (no cplane.db)"),
        "missing": (["-f", str(tmp / "nope.ndjson")], "no such file or directory"),
        "reordered": (["-f", str(reordered)], "line 2 (revision 1): revisions must increase"),
    }


@pytest.mark.parametrize("case", ["truncated", "yaml", "array", "empty", "foreign-sqlite", "foreign-url",
                                  "dir-without-db", "missing", "reordered"])
def test_bad_sources_give_one_error_line_and_write_nothing(capsys: Any, tmp_path: Path,
                                                           recorded: recordings.Recorded, case: str) -> None:
    cases = _bad_sources(tmp_path, recorded)
    argv, message = cases[case]
    before = {p.name: _digest(p) for p in tmp_path.rglob("*") if p.is_file()}
    for command in (["log", "show"], ["log", "history", "pods/shop/web"], ["log", "diff", "1", "2"],
                    ["log", "events"]):
        code, out, err = run(capsys, *command, *argv)
        assert code == 1, (command, err)
        assert out == ""
        assert err.count("\n") == 1 and err.startswith(f"cplane {' '.join(command[:2])}: ") and message in err, err
    after = {p.name: _digest(p) for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before
    # The replay server refuses it the same way, before serving anything.
    code, _, err = run(capsys, "replay", argv[-1] if argv[0] != "--db" else argv[1], "--step")
    assert code == 1 and err.count("\n") == 1 and message in err


def test_revisions_and_names_out_of_range(capsys: Any, source: list[str], recorded: recordings.Recorded) -> None:
    code, _, err = run(capsys, "log", "show", *source, "--at", str(recorded.last + 1))
    assert code == 1 and err == (f"cplane log show: revision {recorded.last + 1} is out of range: "
                                 f"{source[1]} holds revisions 0..{recorded.last}\n")
    code, _, err = run(capsys, "log", "diff", *source, "3", "-1")
    assert code == 1 and "revision -1 is out of range" in err
    code, _, err = run(capsys, "log", "show", *source, "widgets")
    assert code == 1 and err.startswith('cplane log show: unknown resource "widgets" (known: ')
    code, _, err = run(capsys, "log", "history", *source, "pods")
    assert code == 1 and "is not RESOURCE/NAME" in err
    code, _, err = run(capsys, "log", "history", *source, "pods/shop/nope")
    assert code == 1 and err == f"cplane log history: pods/shop/nope: no events in {source[1]}\n"
    code, _, err = run(capsys, "log", "events", "-f", str(recorded.ndjson), "--follow")
    assert code == 1 and "--follow needs a data dir or a database URL" in err
    code, _, err = run(capsys, "replay", str(recorded.ndjson), "--from", str(recorded.last + 5), "--step")
    assert code == 1 and "out of range" in err and err.count("\n") == 1


def test_replay_client_commands_need_a_server(capsys: Any, tmp_path: Path) -> None:
    code, _, err = run(capsys, "replay", "step", "--server", "http://127.0.0.1:9")
    assert code == 1 and err.startswith("cplane replay step: cannot reach http://127.0.0.1:9")
    code, _, err = run(capsys, "replay", "until", "--server", "http://127.0.0.1:9")
    assert code == 1 and "until takes one of REV" in err
