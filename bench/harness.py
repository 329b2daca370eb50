"""What the benchmarks share: waiting for a `cplane serve` process to be ready, CPU seconds of a
process, py-spy profiles of a running process, watches that count what the benchmarks wait for."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp


async def wait_ready(data_dir: Path, proc: subprocess.Popen[bytes], deadline: float, *,
                     verify: bool = True) -> str:
    """Poll DATA_DIR/kubeconfig for the server URL, then `/readyz` until 200; return the URL.
    `verify=False`: do not check a TLS server's certificate (its CA is made as it starts)."""
    kubeconfig = data_dir / "kubeconfig"
    url = ""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=None if verify else False)) as s:
        while time.perf_counter() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}")
            if not url and kubeconfig.exists():
                for line in kubeconfig.read_text().splitlines():
                    if line.strip().startswith("server:"):
                        url = line.split("server:", 1)[1].strip()
            if url:
                try:
                    async with s.get(url + "/readyz") as r:
                        if r.status == 200:
                            return url
                except aiohttp.ClientError:
                    pass
            await asyncio.sleep(0.002)
    raise TimeoutError("server not ready")


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) process `pid` used so far, from Linux's /proc; None when it cannot
    be read (another OS, or the process is gone). Other tenants of the machine do not distort it,
    unlike wall time."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_average(*, all_three: bool = False) -> str:
    """The machine's load average over the last minute (`all_three`: and over 5 and 15 minutes) as
    text, for a wall-clock figure's context; "?" where /proc cannot be read."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3 if all_three else 1])
    except OSError:
        return "?"


def node_ready(node: dict[str, Any]) -> bool:
    """A Node's Ready condition is True."""
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (node.get("status") or {}).get("conditions") or [])


def stop(*procs: subprocess.Popen[bytes] | None, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
    """Signal every process still running (`sig`: SIGINT for the cplane processes that stop cleanly on
    Ctrl-C), then wait for each up to `timeout` s and kill one that is still there."""
    for p in procs:
        if p is not None and p.poll() is None:
            p.send_signal(sig)
    for p in procs:
        if p is not None:
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


class Sampler:
    """py-spy sampling a running process (`py-spy record --pid`, non-blocking so the process is not
    paused) into a collapsed-stacks file: `stop()` ends the recording and returns the file. py-spy
    comes with the `bench` extra (`make bench` installs it)."""

    def __init__(self, *, pid: int, out: Path, rate: int = 250) -> None:
        self.out = out
        spy = Path(sys.executable).parent / "py-spy"
        if not spy.exists():
            raise RuntimeError("py-spy is not installed: `make bench` installs the bench extra, "
                               "or `.venv/bin/pip install -e '.[bench]'`")
        self._proc = subprocess.Popen([str(spy), "record", "--pid", str(pid), "--format", "raw",
                                       "--rate", str(rate), "--nonblocking", "--output", str(out)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def stop(self) -> Path:
        self._proc.send_signal(signal.SIGINT)
        _, err = self._proc.communicate(timeout=60)
        if not self.out.exists():
            raise RuntimeError(f"py-spy wrote no profile: {err.decode(errors='replace').strip()}")
        return self.out


def top_frames(collapsed: Path, *, n: int = 15) -> list[tuple[str, float, float]]:
    """The `n` functions with the most samples of a collapsed-stacks profile (py-spy's raw format: one
    `frame;frame;... count` line per stack): (function, % of samples on top of the stack — self time,
    % of samples anywhere in the stack — total time), by self time."""
    own: dict[str, int] = {}
    anywhere: dict[str, int] = {}
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        total += samples
        frames = [_function(f) for f in stack.split(";")]
        own[frames[-1]] = own.get(frames[-1], 0) + samples
        for frame in set(frames):
            anywhere[frame] = anywhere.get(frame, 0) + samples
    if not total:
        return []
    ranked = sorted(own, key=lambda f: -own[f])[:n]
    return [(f, 100 * own[f] / total, 100 * anywhere[f] / total) for f in ranked]


def _function(frame: str) -> str:
    """`name (path/to/file.py:123)` -> `name (file.py)`: one entry per function, not per line."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    parts = Path(path).parts
    short = "/".join(parts[-2:]) if len(parts) >= 2 else path
    return f"{name} ({short})" if where else name


class Watcher:
    """Follows watch-list streams (`send_initial_events`) of some kinds through one API client, resuming
    after a dropped stream; a subclass counts what it sees in `apply`, and `until` waits for a condition
    on it."""

    def __init__(self, url: str, *, user_agent: str, watches: list[tuple[str, str | None]]) -> None:
        from controllers.runtime import client as clients

        self.client = clients.Client(url, user_agent=user_agent)
        self.changed = asyncio.Event()
        self._watches = watches
        self._tasks: list[asyncio.Task[None]] = []

    def apply(self, kind: str, event: Any) -> None:
        """One event (not a BOOKMARK) of `kind`: a `controllers.runtime.client.WatchEvent`."""
        raise NotImplementedError

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        for kind, ns in self._watches:
            self._tasks.append(loop.create_task(self._follow(kind, ns), name=f"bench:watch:{kind}"))

    async def _follow(self, kind: str, namespace: str | None) -> None:
        while True:
            try:
                async with self.client.watch(kind, namespace=namespace, send_initial_events=True,
                                             timeout_seconds=3600, read_timeout=None) as stream:
                    async for event in stream:
                        if event.type != "BOOKMARK":
                            self.apply(kind, event)
                            self.changed.set()
            except (aiohttp.ClientError, OSError, TimeoutError):
                await asyncio.sleep(0.05)

    async def until(self, predicate: Callable[[], Any], within: float) -> None:
        """Wait until `predicate()` holds (checked after events, and at least once a second)."""
        deadline = time.perf_counter() + within
        while not predicate():
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError("condition not reached")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), min(remaining, 1.0))

    async def close(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.client.close()
