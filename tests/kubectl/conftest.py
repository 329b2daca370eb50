"""Fixtures for running the real kubectl 1.37.1 against a live, in-process cplane API server.

`kubectl` (the fixture) is a `Kubectl`: call it like the binary, `await kubectl("get", "pods")`, and
get a `Result(code, stdout, stderr)`. Every test gets a fresh server on its own SQLite store, a fresh
`HOME` (kubectl caches discovery for 6 h in `$HOME/.kube/cache`) and a kubeconfig pointing at the
server (kubectl-compat.md §1). The binary runs through `asyncio.create_subprocess_exec`, so the server,
which shares the test's event loop, keeps answering while kubectl waits on it.

Long-running commands (`get -w`, `wait`, a `delete` that waits for finalizers) go through
`kubectl.start(...)`, which returns a `Background` whose output can be awaited as it arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import server as servers
from cp import resources, runtimeconfig

COMMAND_TIMEOUT = 30.0  # seconds per kubectl command; a hang fails the test instead of pytest-timeout


def _find(tool: str, override: str) -> Path | None:
    """`tool` from $override, else the virtualenv's bin (where `make test` installs it)."""
    given = os.environ.get(override)
    candidates = [Path(given)] if given else []
    candidates += [Path(sys.prefix) / "bin" / tool, Path(__file__).resolve().parents[2] / ".venv/bin" / tool]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    return None


KUBECTL = _find("kubectl", "CPLANE_KUBECTL")
HELM = _find("helm", "CPLANE_HELM")  # Helm v4, from the same package as kubectl (tests/kubectl/test_helm.py)


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()

    def json(self) -> Any:
        return json.loads(self.stdout)

    def rows(self) -> list[list[str]]:
        """stdout split into table rows: columns are separated by two or more spaces (kubectl's tabwriter)."""
        return [re.split(r"\s{2,}", line.strip()) for line in self.lines if line.strip()]


class KubectlError(AssertionError):
    pass


def _describe(args: tuple[str, ...], code: int | None, out: str, err: str, *, tool: str = "kubectl") -> str:
    return (f"{tool} {shlex.join(args)} -> exit {code}\n--- stdout ---\n{out}\n--- stderr ---\n{err}")


class Background:
    """A kubectl process left running; its output is collected as it arrives."""

    def __init__(self, args: tuple[str, ...], proc: asyncio.subprocess.Process) -> None:
        self.args = args
        self.proc = proc
        self._out = bytearray()
        self._err = bytearray()
        self._changed = asyncio.Event()
        assert proc.stdout is not None and proc.stderr is not None
        self._readers = [asyncio.create_task(self._pump(proc.stdout, self._out)),
                         asyncio.create_task(self._pump(proc.stderr, self._err))]

    async def _pump(self, stream: asyncio.StreamReader, into: bytearray) -> None:
        while chunk := await stream.read(65536):
            into += chunk
            self._changed.set()
        self._changed.set()

    @property
    def stdout(self) -> str:
        return self._out.decode(errors="replace")

    @property
    def stderr(self) -> str:
        return self._err.decode(errors="replace")

    async def expect(self, pattern: str, *, stream: str = "stdout", timeout: float = 15.0) -> re.Match[str]:  # noqa: ASYNC109
        """Wait until `pattern` (a regex) appears in the output so far."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            self._changed.clear()  # before reading, so output arriving after the check wakes the wait
            text = self.stdout if stream == "stdout" else self.stderr
            m = re.search(pattern, text, re.MULTILINE)
            if m:
                return m
            remaining = deadline - loop.time()
            if remaining <= 0 or (self.proc.returncode is not None and all(r.done() for r in self._readers)):
                raise KubectlError(f"{pattern!r} not seen in {stream}\n"
                                   + _describe(self.args, self.proc.returncode, self.stdout, self.stderr))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.5))

    async def wait(self, *, timeout: float = COMMAND_TIMEOUT) -> Result:  # noqa: ASYNC109
        """Wait for the process to exit on its own."""
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            await self.stop()
            raise KubectlError(f"timed out after {timeout}s\n"
                               + _describe(self.args, None, self.stdout, self.stderr)) from None
        await asyncio.gather(*self._readers)
        assert self.proc.returncode is not None
        return Result(self.proc.returncode, self.stdout, self.stderr)

    async def stop(self) -> Result:
        """Interrupt the process (as Ctrl-C would) and collect what it printed."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                await self.proc.wait()
        await asyncio.gather(*self._readers, return_exceptions=True)
        return Result(self.proc.returncode if self.proc.returncode is not None else -1,
                      self.stdout, self.stderr)


class Kubectl:
    """Runs the real kubectl (or another client-go tool: `binary`, e.g. Helm) against one server, in a
    fresh HOME, from a scratch working directory."""

    def __init__(self, server: servers.Running, *, home: Path, workdir: Path, binary: Path | None = None) -> None:
        binary = binary or KUBECTL
        assert binary is not None
        self.binary = binary
        self.server = server
        self.home = home
        self.workdir = workdir
        home.mkdir(parents=True, exist_ok=True)
        workdir.mkdir(parents=True, exist_ok=True)
        # A hermetic environment: nothing from the caller's kubectl configuration leaks in.
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("KUBE", "KUBECTL_", "HELM_")) and k not in ("EDITOR", "VISUAL", "HTTP_PROXY",
                                                                       "HTTPS_PROXY", "http_proxy",
                                                                       "https_proxy")}
        tmp = workdir / "tmp"  # kubectl edit and diff write temporary files here, not in /tmp
        tmp.mkdir(exist_ok=True)
        env.update(HOME=str(home), KUBECONFIG=str(server.kubeconfig), NO_PROXY="127.0.0.1",
                   LANG="C.UTF-8", TZ="UTC", TMPDIR=str(tmp))
        self.env = env
        self._background: list[Background] = []

    async def __call__(self, *args: str, input: str | bytes | None = None, env: dict[str, str] | None = None,
                       check: bool = True, timeout: float = COMMAND_TIMEOUT) -> Result:  # noqa: ASYNC109
        proc = await self._spawn(args, env=env, stdin=input is not None)
        data = input.encode() if isinstance(input, str) else input
        try:
            out, err = await asyncio.wait_for(proc.communicate(data), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            out, err = await proc.communicate()
            raise KubectlError(f"timed out after {timeout}s\n"
                               + _describe(args, None, out.decode(errors="replace"),
                                           err.decode(errors="replace"), tool=self.binary.name)) from None
        result = Result(proc.returncode if proc.returncode is not None else -1,
                        out.decode(errors="replace"), err.decode(errors="replace"))
        if check and result.code != 0:
            raise KubectlError(_describe(args, result.code, result.stdout, result.stderr, tool=self.binary.name))
        return result

    async def jsonpath(self, *target: str, path: str) -> str:
        """`kubectl get TARGET -o jsonpath=PATH`: one value (or a few) read back."""
        return (await self("get", *target, "-o", f"jsonpath={path}")).stdout

    async def gone(self, *target: str) -> bool:
        """Whether `kubectl get TARGET` says NotFound."""
        r = await self("get", *target, check=False)
        return r.code == 1 and "(NotFound)" in r.stderr

    async def start(self, *args: str, env: dict[str, str] | None = None) -> Background:
        """Start a long-running kubectl (watch, wait, a waiting delete); stopped at teardown at the latest."""
        bg = Background(args, await self._spawn(args, env=env, stdin=False))
        self._background.append(bg)
        return bg

    async def _spawn(self, args: tuple[str, ...], *, env: dict[str, str] | None,
                     stdin: bool) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            str(self.binary), *args, cwd=self.workdir, env={**self.env, **(env or {})},
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)

    def write(self, name: str, text: str, *, mode: int | None = None) -> str:
        """Write a file (a manifest, an editor script) into the working directory; returns its path."""
        path = self.workdir / name
        path.write_text(text)
        if mode is not None:
            path.chmod(mode)
        return str(path)

    async def close(self) -> None:
        for bg in self._background:
            await bg.stop()


def runtime_config(text: str) -> runtimeconfig.RuntimeConfig:
    """`cplane serve --runtime-config TEXT` as the server's option."""
    return runtimeconfig.parse(text, group_versions=resources.builtin_group_versions())


@pytest.fixture
def runtime() -> str:
    """The `server` fixture's `--runtime-config` ("": the defaults); a test module overrides it."""
    return ""


@pytest.fixture
async def server(tmp_path: Path, runtime: str) -> AsyncIterator[servers.Running]:
    """A fresh API server (no controllers) on the default SQLite store."""
    options = {"runtime_config": runtime_config(runtime)} if runtime else {}
    async with servers.running(data_dir=tmp_path / "data", app_options=options) as srv:
        yield srv


@contextlib.asynccontextmanager
async def kubectl_on(target: Any, tmp_path: Path) -> AsyncIterator[Kubectl]:
    """The real kubectl against `target` (a running server, or a `cp.testing.Sandbox`: anything with
    `url` and `kubeconfig`), with its HOME and working directory under `tmp_path`; skips the test when
    kubectl is not installed. Test modules outside tests/kubectl build their `kubectl` fixture on it."""
    if KUBECTL is None:
        pytest.skip("kubectl not found: run `make test` (tests/tools/fetch-kubectl.sh) or set CPLANE_KUBECTL")
    k = Kubectl(target, home=tmp_path / "home", workdir=tmp_path / "work")
    try:
        yield k
    finally:
        await k.close()


@pytest.fixture
async def kubectl(server: servers.Running, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubectl_on(server, tmp_path) as k:
        yield k


@pytest.fixture
async def helm(server: servers.Running, tmp_path: Path) -> AsyncIterator[Kubectl]:
    """Helm v4 against the same server, sharing kubectl's HOME and working directory."""
    if HELM is None:
        pytest.skip("helm not found: run `make test` (tests/tools/fetch-kubectl.sh) or set CPLANE_HELM")
    h = Kubectl(server, home=tmp_path / "home", workdir=tmp_path / "work", binary=HELM)
    try:
        yield h
    finally:
        await h.close()


@pytest.fixture
async def api(server: servers.Running) -> AsyncIterator[aiohttp.ClientSession]:
    """Direct HTTP access to the same server, for what kubectl cannot do (e.g. posting an Event)."""
    async with aiohttp.ClientSession(base_url=server.url) as session:
        yield session
