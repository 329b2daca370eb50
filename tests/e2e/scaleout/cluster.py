"""Real processes for the scale-out tests: `cplane serve` API replicas on one PostgreSQL schema,
`cplane controllers --leader-elect` managers, a TCP load balancer (the role haproxy plays in
docker-compose.yml), and a watch client that resumes from its last resourceVersion.

Every process is started here and killed by its own pid in `Cluster.close()` (SIGKILL, then
waited for); on Linux each child also gets SIGKILL if the test process dies (PR_SET_PDEATHSIG), so
nothing outlives a test run.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp

from cp import testing
from tests.tcp import Balancer as Balancer  # the scale-out tests' load balancer

ROOT = Path(__file__).resolve().parents[3]
READY_TIMEOUT = 60.0
PR_SET_PDEATHSIG = 1


try:
    _LIBC: ctypes.CDLL | None = ctypes.CDLL("libc.so.6", use_errno=True) if sys.platform == "linux" else None
except OSError:
    _LIBC = None


def _die_with_parent() -> None:  # runs in the child between fork and exec: no imports, no dlopen
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Child:
    """One `python -m cp.cli ...` process; output goes to a log file (never a pipe that could fill)."""

    def __init__(self, name: str, args: Sequence[str], log_path: Path) -> None:
        self.name = name
        self.args = list(args)
        self.log_path = log_path
        self.process: asyncio.subprocess.Process | None = None
        self.url = ""  # API replicas: their own URL

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def start(self) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115, ASYNC230 (handed to the child; a local file opens at once)
        try:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "cp.cli", *self.args, cwd=ROOT, stdin=asyncio.subprocess.DEVNULL,
                stdout=log, stderr=log, env={**os.environ, "PYTHONPATH": str(ROOT)},
                preexec_fn=_die_with_parent if _LIBC is not None else None)
        finally:
            log.close()

    async def kill(self) -> None:
        """SIGKILL (no clean shutdown: no Lease release, no goodbye to watchers) and reap."""
        if self.process is None:
            return
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        await self.process.wait()

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])


class Cluster:
    """API replicas and controller managers on one event-log database URL."""

    def __init__(self, *, db_url: str, workdir: Path) -> None:
        self.db_url = db_url
        self.workdir = workdir
        self.children: list[Child] = []

    async def replicas(self, count: int) -> list[Child]:
        """Start `count` API replicas at once (`--port 0`; the URL is read from DIR/kubeconfig) and
        wait until every one answers /readyz."""
        started = []
        for _ in range(count):
            index = sum(1 for c in self.children if c.name.startswith("api-"))
            data_dir = self.workdir / f"api-{index}"
            child = Child(f"api-{index}", ["serve", "--data-dir", str(data_dir), "--port", "0", "--insecure",
                                           "--no-controllers", "--db", self.db_url, "--log-level", "warning"],
                          self.workdir / f"api-{index}.log")
            self.children.append(child)
            await child.start()
            started.append(child)
        await asyncio.gather(*(self._ready(child, self.workdir / child.name) for child in started))
        return started

    async def manager(self, *, server: str, fleet: Path | None = None, only: str = "") -> Child:
        """Start `cplane controllers --leader-elect` against `server` (not waited for)."""
        index = sum(1 for c in self.children if c.name.startswith("manager-"))
        args = ["controllers", "--server", server, "--leader-elect", "--log-level", "info"]
        if fleet is not None:
            args += ["--fleet", str(fleet)]
        if only:
            args += ["--only", only]
        child = Child(f"manager-{index}", args, self.workdir / f"manager-{index}.log")
        self.children.append(child)
        await child.start()
        return child

    async def _ready(self, child: Child, data_dir: Path) -> None:
        kubeconfig = data_dir / "kubeconfig"
        async with aiohttp.ClientSession() as http:

            async def ready() -> bool:
                assert child.process is not None
                if child.process.returncode is not None:
                    raise AssertionError(f"{child.name} exited with {child.process.returncode}:\n{child.tail()}")
                if not child.url and kubeconfig.exists():
                    for line in kubeconfig.read_text().splitlines():
                        if line.strip().startswith("server:"):
                            child.url = line.split("server:", 1)[1].strip()
                if child.url:
                    with contextlib.suppress(aiohttp.ClientError, OSError):
                        async with http.get(child.url + "/readyz") as r:
                            return r.status == 200
                return False

            try:
                await testing.eventually(ready, within=READY_TIMEOUT, interval=0.05, what=f"{child.name} ready")
            except testing.NotMet:
                raise AssertionError(f"{child.name} not ready after {READY_TIMEOUT} s:\n{child.tail()}") from None

    def logs(self) -> str:
        return "\n".join(f"--- {c.name} (pid {c.process.pid if c.process else '-'}) ---\n{c.tail()}"
                         for c in self.children)

    async def close(self) -> None:
        for child in self.children:
            await child.kill()


@contextlib.asynccontextmanager
async def cluster(*, db_url: str, workdir: Path) -> AsyncIterator[Cluster]:
    the_cluster = Cluster(db_url=db_url, workdir=workdir)
    try:
        yield the_cluster
    except BaseException:
        print(the_cluster.logs(), file=sys.stderr)
        raise
    finally:
        await the_cluster.close()


class Watcher:
    """A watch client as client-go's reflector resumes one: on any stream failure it reconnects —
    to the next server in `urls` — with `resourceVersion` = the last one it saw (events and
    BOOKMARKs), never relisting. `events` is what it received: (revision, type, namespace, name,
    monotonic arrival time)."""

    def __init__(self, urls: Sequence[str], path: str, *, resource_version: int) -> None:
        self.urls = list(urls)
        self.path = path
        self.last = resource_version
        self.events: list[tuple[int, str, str, str, float]] = []
        self.connected: list[tuple[str, int]] = []  # (server, events received before) per connection
        self.failures: list[str] = []
        self.target: int | None = None  # stop once an event at or past this revision arrived
        self.streaming = asyncio.Event()  # set once the first stream's headers arrived
        self._done = asyncio.Event()
        self._server = 0

    def stop_at(self, revision: int) -> None:
        self.target = revision
        if self.last >= revision:
            self._done.set()

    async def wait(self, within: float) -> None:
        await asyncio.wait_for(self._done.wait(), within)

    async def run(self) -> None:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_read=30)) as http:
            while not self._done.is_set():
                url = self.urls[self._server % len(self.urls)]
                params = {"watch": "1", "resourceVersion": str(self.last), "allowWatchBookmarks": "true",
                          "timeoutSeconds": "300"}
                try:
                    async with http.get(url + self.path, params=params) as response:
                        if response.status != 200:
                            raise AssertionError(f"watch {url}{self.path}: HTTP {response.status}: "
                                                 f"{await response.text()}")
                        self.connected.append((url, len(self.events)))
                        self.streaming.set()
                        async for line in response.content:
                            self._line(line)
                            if self._done.is_set():
                                return
                except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                    self.failures.append(f"{url}: {type(exc).__name__}")
                    self._server += 1  # the load balancer's job: another replica
                    await asyncio.sleep(0.05)  # the client's reconnect backoff (behaviour, not a wait for state)

    def _line(self, line: bytes) -> None:
        if not line.strip():
            return
        event = json.loads(line)
        if event["type"] == "ERROR":
            raise AssertionError(f"watch error: {event['object']}")
        meta = event["object"]["metadata"]
        revision = int(meta["resourceVersion"])
        if event["type"] != "BOOKMARK":
            self.events.append((revision, event["type"], meta.get("namespace", ""), meta["name"],
                                time.monotonic()))
        self.last = max(self.last, revision)
        if self.target is not None and self.last >= self.target:
            self._done.set()


async def get_json(http: aiohttp.ClientSession, url: str, **params: str) -> dict[str, Any]:
    async with http.get(url, params=params) as response:
        body = await response.read()
        assert response.status == 200, (url, response.status, body[:500])
        return json.loads(body)  # type: ignore[no-any-return]
