"""`cplane replay SOURCE` as its own process, driven by `cplane replay status|step|until|play|save|fork`:
the serving path, the client commands, a fork that starts in-process controllers, and a clean exit
on SIGINT. Waits are bounded polls on observable state (the kubeconfig file, the replay status)."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from cp import cli
from tests import recordings


async def cplane(capsys: Any, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(cli.main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def test_replay_command_end_to_end(tmp_path: Path, recorded: recordings.Recorded, capsys: Any) -> None:
    kubeconfig = tmp_path / "replay.kubeconfig"
    err_file = (tmp_path / "replay.err").open("wb")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cp.cli", "replay", str(recorded.ndjson), "--step", "--port", "0",
        "--kubeconfig", str(kubeconfig), "--fork", "--controllers", "garbage-collector",
        stdout=asyncio.subprocess.DEVNULL, stderr=err_file)
    try:
        await recordings.eventually(lambda: kubeconfig.exists() or proc.returncode is not None, within=30,
                                 what="the replay server's kubeconfig")
        assert proc.returncode is None, (tmp_path / "replay.err").read_text()
        target = ["--kubeconfig", str(kubeconfig)]
        code, out, _ = await cplane(capsys, "replay", "status", *target)
        assert code == 0 and out.startswith("revision 0 (") and f"paused; {recorded.last} events left" in out
        code, out, _ = await cplane(capsys, "replay", "step", "3", *target)
        lines = out.splitlines()
        assert code == 0 and [line.split()[0] for line in lines[:3]] == ["1", "2", "3"]
        assert lines[3].startswith("revision 3 (")
        code, out, _ = await cplane(capsys, "replay", "until", "--object", "pods/shop/web", *target)
        assert code == 0 and "ADDED     pods/shop/web  by user system:admin, manager alice" in out
        code, out, err = await cplane(capsys, "replay", "until", "2", *target)
        assert code == 1 and out == "" and "is behind the replay" in err and err.count("\n") == 1
        code, out, _ = await cplane(capsys, "replay", "status", *target, "-o", "json")
        at = json.loads(out)["revision"]
        saved = tmp_path / "saved.ndjson"
        code, _, err = await cplane(capsys, "replay", "save", "-o", str(saved), *target)
        assert code == 0 and f"saved {at} events" in err
        assert saved.read_bytes().splitlines() == recorded.ndjson.read_bytes().splitlines()[:at]
        code, out, _ = await cplane(capsys, "replay", "play", "--speed", "max", *target)
        assert code == 0

        async def finished() -> bool:
            _code, out, _ = await cplane(capsys, "replay", "status", *target, "-o", "json")
            return json.loads(out)["mode"] == "finished"

        await recordings.eventually(finished, what="the replay to finish")
        # Fork: the server becomes writable and the garbage collector starts in-process.
        code, out, _ = await cplane(capsys, "replay", "fork", *target)
        assert code == 0 and f"forked at {recorded.last}" in out
        server = next(line.split("server:")[1].strip() for line in kubeconfig.read_text().splitlines()
                      if "server:" in line)
        async with aiohttp.ClientSession(base_url=server) as http:
            orphan = {"metadata": {"name": "orphan", "namespace": "default", "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "no-such-uid"}]}}
            async with http.post("/api/v1/namespaces/default/configmaps", json=orphan) as r:
                assert r.status == 201
                assert json.loads(await r.read())["metadata"]["resourceVersion"] == str(recorded.last + 1)

            async def collected() -> bool:
                async with http.get("/api/v1/namespaces/default/configmaps/orphan") as r:
                    return r.status == 404

            await recordings.eventually(collected, within=20, what="the GC on the fork")
        code, _, err = await cplane(capsys, "replay", "step", *target)
        assert code == 1 and "forked at revision" in err
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(proc.wait(), 20)
        err_file.close()
    stderr = (tmp_path / "replay.err").read_text()
    assert code == 0, stderr
    assert f"cplane replay: serving {recorded.ndjson}" in stderr
    assert "cplane replay: UI: http://127.0.0.1:" in stderr and "/ui/\n" in stderr
    assert f"forked at revision {recorded.last}; starting controllers" in stderr


@pytest.mark.parametrize("argv", [["replay", "status"], ["replay", "step", "2", "3"]])
async def test_client_commands_report_usage_errors(capsys: Any, argv: list[str]) -> None:
    code, _, err = await cplane(capsys, *argv, "--server", "http://127.0.0.1:9")
    assert code == 1 and err.count("\n") == 1
