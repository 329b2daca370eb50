"""The store at scale (issue #22): LISTs of 300,000 pods, the cache's memory, the start-up warm-up.

    .venv/bin/python -m bench.lists             # 199k, 201k, 300k pods (~6-10 min on 2 cores)
    .venv/bin/python -m bench.lists --quick     # 20k and 40k pods (~1-2 min; what `make bench` runs)
    options: --sizes 199000,201000,300000, --memory 2Gi (the server's --watch-cache-memory),
             --dir DIR (scratch space; default a temporary directory), --reps N,
             --before DIR (also measure the code of another tree, e.g. main's, on the same data)

Setup: one pod is created through a `cplane serve` process (so it has the server's defaults and
managedFields), then copies of it with their own names, uids and IPs are appended straight into the
data dir through the storage layer (group commits of 1,000, as bench/storage.py does). For each size,
a fresh `cplane serve --insecure --no-controllers` process is started on that data dir and measured:
- start-up to /readyz 200, the slowest /readyz while the cache warms in the background, and when the
  warm-up ends (the server's `watch_cache_warmed` log line);
- a JSON LIST issued at once after /readyz (it waits for the warm-up of pods if that is under way),
  the first LIST once warm and the later ones (median), a Table (`Accept: ...;as=Table;...`), a page
  (limit=500); the server's CPU per LIST (/proc/PID/stat);
- the server's RSS before, at its peak during (VmHWM, reset through /proc/PID/clear_refs), and after a
  LIST; RSS per cached pod: (RSS once warm - RSS of the same server with --watch-cache-memory 0) / pods,
  beside the pods' JSON size;
- the reference, in the same run: a bare aiohttp server (its own process) sending the same bytes as
  the JSON LIST from memory, read by the same client code.
The client reads every body in 1 MiB chunks and drops them, the same way for both servers.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import msgspec

from bench import harness
from storage import factory, log

PODS = "/api/v1/pods"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"

_REFERENCE_SERVER = """
import sys
from aiohttp import web
body = open(sys.argv[2], "rb").read()
async def send(request):
    return web.Response(body=body, content_type="application/json")
async def send_chunks(request):
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    view = memoryview(body)
    for start in range(0, len(body), 1 << 19):
        await resp.write(view[start:start + (1 << 19)])
    await resp.write_eof()
    return resp
app = web.Application()
app.router.add_get("/list", send)
app.router.add_get("/chunks", send_chunks)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


class Server:
    """A `cplane serve` process on a data dir, with its log lines read as they come."""

    def __init__(self, data_dir: Path, *, memory: str, before: Path | None = None) -> None:
        """`before`: run the code of that source tree (`git archive main | tar -x -C DIR`), which has
        no --watch-cache-memory."""
        (data_dir / "kubeconfig").unlink(missing_ok=True)  # the previous server's URL
        self.started = time.perf_counter()
        command = [sys.executable, "-m", "cp.cli", "serve", "--data-dir", str(data_dir), "--port", "0", "--insecure",
                   "--no-controllers", "--log-format", "json", "--log-level", "info"]
        env = dict(os.environ)
        if before is None:
            command += ["--watch-cache-memory", memory]
        else:
            env["PYTHONPATH"] = str(before)
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                                     cwd=str(before or Path.cwd()))
        self.data_dir = data_dir
        self.warmed_at: float | None = None
        self.warm_line: dict[str, Any] = {}
        self._reader = threading.Thread(target=self._read_log, daemon=True)
        self._reader.start()
        self.url = ""

    def _read_log(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            if b"watch_cache_warmed" in raw:
                self.warmed_at = time.perf_counter()
                try:
                    self.warm_line = json.loads(raw)
                except ValueError:
                    self.warm_line = {}

    async def ready(self) -> float:
        self.url = await harness.wait_ready(self.data_dir, self.proc, self.started + 120)
        return time.perf_counter() - self.started

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait()

    def rss(self) -> int:
        return _status_kb(self.proc.pid, "VmRSS") * 1024

    def reset_peak(self) -> None:
        Path(f"/proc/{self.proc.pid}/clear_refs").write_text("5")

    def peak(self) -> int:
        return _status_kb(self.proc.pid, "VmHWM") * 1024

    def cpu(self) -> float:
        return harness.cpu_seconds(self.proc.pid) or 0.0


class _List(msgspec.Struct):
    items: list[msgspec.Raw]


_decode_list = msgspec.json.Decoder(_List).decode


def _status_kb(pid: int, field: str) -> int:
    match = re.search(rf"^{field}:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    return int(match.group(1)) if match else 0


async def _read(s: aiohttp.ClientSession, url: str, *, headers: dict[str, str] | None = None,
                keep: bool = False) -> tuple[float, int, bytes]:
    """(seconds, body bytes, the body when `keep`) of one GET, the body read in 1 MiB chunks."""
    started = time.perf_counter()
    size = 0
    parts: list[bytes] = []
    async with s.get(url, headers=headers) as r:
        assert r.status == 200, (url, r.status, await r.text())
        async for chunk in r.content.iter_chunked(1 << 20):
            size += len(chunk)
            if keep:
                parts.append(chunk)
    return time.perf_counter() - started, size, b"".join(parts)


async def _template(data_dir: Path) -> dict[str, Any]:
    """A pod as `cplane serve` stores one created by a client (its defaults, managedFields, status)."""
    server = Server(data_dir, memory="1Gi")
    try:
        await server.ready()
        async with aiohttp.ClientSession(base_url=server.url) as s:
            async with s.post("/api/v1/namespaces", json={"metadata": {"name": "bench"}}) as r:
                assert r.status == 201, await r.text()
            body = {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "template", "namespace": "bench",
                                 "labels": {"app": "web", "pod-template-hash": "7d9f8b6c5"}},
                    "spec": {"nodeName": "node-0", "containers": [
                        {"name": "web", "image": "registry.example.com/web:1.27",
                         "ports": [{"containerPort": 8080}],
                         "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}
            async with s.post("/api/v1/namespaces/bench/pods", json=body) as r:
                assert r.status == 201, await r.text()
                pod: dict[str, Any] = await r.json()
            status = {"phase": "Running", "podIP": "10.1.0.1", "hostIP": "192.168.0.10",
                      "startTime": pod["metadata"]["creationTimestamp"],
                      "conditions": [{"type": t, "status": "True", "lastProbeTime": None,
                                      "lastTransitionTime": pod["metadata"]["creationTimestamp"]}
                                     for t in ("PodReadyToStartContainers", "Initialized", "Ready",
                                               "ContainersReady", "PodScheduled")],
                      "containerStatuses": [{"name": "web", "ready": True, "restartCount": 0, "started": True,
                                             "image": "registry.example.com/web:1.27", "imageID": "",
                                             "containerID": "containerd://" + "0" * 64,
                                             "state": {"running": {"startedAt": pod["metadata"]["creationTimestamp"]}}}]}
            async with s.put("/api/v1/namespaces/bench/pods/template/status",
                             json={**pod, "status": status}) as r:
                assert r.status == 200, await r.text()
                pod = await r.json()
            async with s.delete("/api/v1/namespaces/bench/pods/template", params={"gracePeriodSeconds": "0"}) as r:
                assert r.status == 200, await r.text()
    finally:
        server.stop()
    return pod


def _pod(template: dict[str, Any], i: int) -> dict[str, Any]:
    pod = dict(template)
    meta = dict(template["metadata"])
    meta["name"] = f"web-7d9f8b6c5-{i:06d}"
    meta["uid"] = f"6f1c2a9e-{i >> 16:04x}-4000-8000-{i:012x}"
    meta.pop("resourceVersion", None)
    pod["metadata"] = meta
    pod["spec"] = {**template["spec"], "nodeName": f"node-{i % 10000}"}
    status = copy.copy(template["status"])
    status["podIP"] = f"10.{1 + i // 62500}.{i // 250 % 250}.{i % 250}"
    status["containerStatuses"] = [{**template["status"]["containerStatuses"][0], "containerID": f"containerd://{i:064x}"}]
    pod["status"] = status
    return pod


async def _append_pods(data_dir: Path, template: dict[str, Any], start: int, stop: int) -> float:
    """Append pods [start, stop) into the data dir's event log; seconds taken."""
    url = f"sqlite+aiosqlite:///{data_dir.resolve() / 'cplane.db'}"  # noqa: ASYNC240 (set-up, nothing else runs)
    event_log = factory.open_event_log(url=url, cache_bytes=0)
    await event_log.start()
    started = time.perf_counter()
    actor = log.Actor(user="system:serviceaccount:kube-system:replicaset-controller",
                      field_manager="kube-controller-manager", user_agent="kube-controller-manager/v1.37.1 (linux/amd64)")
    try:
        for first in range(start, stop, 1000):
            await asyncio.gather(*(event_log.append(log.Write(
                type="ADDED", group="", resource="pods", namespace="bench", name=f"web-7d9f8b6c5-{i:06d}",
                object=_pod(template, i), expected_revision=0, time=time.time(),
                actor=log.Actor(user=actor.user, field_manager=actor.field_manager, user_agent=actor.user_agent,
                                request_id=f"{i:032x}")))
                for i in range(first, min(first + 1000, stop))))
    finally:
        await event_log.close()
    return time.perf_counter() - started


async def _reference(body: bytes, directory: Path, reps: int, *, server: Server,
                     session: aiohttp.ClientSession) -> dict[str, float]:
    """A bare aiohttp server (its own process) sending `body` to the same client code, as one
    `web.Response` and written in 512 KiB chunks of a `StreamResponse`, its requests interleaved
    with the same number of JSON LISTs of `server` (so both see the same moments of a shared
    machine): median seconds of each, and the CPU each server spent per request."""
    path = directory / "reference-body.json"
    path.write_bytes(body)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-c", _REFERENCE_SERVER, str(port), str(path)])  # noqa: ASYNC220 (starts at once)
    whole: list[float] = []
    chunks: list[float] = []
    ours: list[float] = []
    cpu = {"whole": 0.0, "chunks": 0.0, "ours": 0.0}
    try:
        async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{port}") as s:
            deadline = time.perf_counter() + 60
            while True:
                try:
                    await _read(s, "/list")
                    break
                except aiohttp.ClientError:
                    if time.perf_counter() > deadline:
                        raise
                    await asyncio.sleep(0.05)
            for _ in range(reps):
                for label, times, read, pid in (("ours", ours, lambda: _read(session, PODS), server.proc.pid),
                                                ("whole", whole, lambda: _read(s, "/list"), proc.pid),
                                                ("chunks", chunks, lambda: _read(s, "/chunks"), proc.pid)):
                    before = harness.cpu_seconds(pid) or 0.0
                    times.append((await read())[0])
                    cpu[label] += ((harness.cpu_seconds(pid) or 0.0) - before) / reps
    finally:
        proc.terminate()
        proc.wait()
        path.unlink()
    return {"reference_whole_s": statistics.median(whole), "reference_chunks_s": statistics.median(chunks),
            "list_interleaved_s": statistics.median(ours), "reference_whole_cpu_s": cpu["whole"],
            "reference_chunks_cpu_s": cpu["chunks"], "list_interleaved_cpu_s": cpu["ours"]}


async def _readyz_while_warming(server: Server) -> float:
    """The slowest /readyz answer from readiness until the warm-up ends (or 60 s)."""
    slowest = 0.0
    deadline = time.perf_counter() + 60
    async with aiohttp.ClientSession(base_url=server.url) as s:
        while server.warmed_at is None and time.perf_counter() < deadline:
            started = time.perf_counter()
            async with s.get("/readyz") as r:
                await r.read()
                assert r.status == 200
            slowest = max(slowest, time.perf_counter() - started)
            await asyncio.sleep(0.05)
    return slowest


async def measure(data_dir: Path, pods: int, *, memory: str, reps: int, scratch: Path) -> dict[str, float]:
    out: dict[str, float] = {"pods": pods}
    # The same server without a cache: the RSS the cache comes on top of.
    bare = Server(data_dir, memory="0")
    try:
        out["ready_no_cache_s"] = await bare.ready()
        async with aiohttp.ClientSession(base_url=bare.url) as s:
            token = ""
            while True:  # read every pod once, in pages (SQLite's page caches fill as in the cached server)
                async with s.get(PODS, params={"limit": "2000", **({"continue": token} if token else {})}) as r:
                    token = (await r.json())["metadata"].get("continue", "")
                if not token:
                    break
        out["rss_no_cache_mb"] = bare.rss() / 1e6
    finally:
        bare.stop()
    server = Server(data_dir, memory=memory)
    try:
        out["ready_s"] = await server.ready()
        async with aiohttp.ClientSession(base_url=server.url, timeout=aiohttp.ClientTimeout(total=None)) as s:
            slowest = asyncio.ensure_future(_readyz_while_warming(server))
            out["list_at_ready_s"], out["list_at_ready_cpu_s"] = await _timed(s, server, PODS)
            out["readyz_max_while_warming_s"] = await slowest
            while server.warmed_at is None:  # noqa: ASYNC110 (set by the thread reading the server's log)
                await asyncio.sleep(0.05)
            out["warmed_after_start_s"] = server.warmed_at - server.started
            out["warm_cache_mb"] = float(server.warm_line.get("bytes", 0)) / 1e6
            out["rss_warm_mb"] = server.rss() / 1e6
            server.reset_peak()
            out["list_first_warm_s"], out["list_cpu_first_s"] = await _timed(s, server, PODS)
            out["list_peak_rss_mb"] = server.peak() / 1e6
            _, size, body = await _read(s, PODS, keep=True)
            out["list_bytes_mb"] = size / 1e6
            items = _decode_list(body).items
            assert len(items) == pods, (len(items), pods)
            out["json_per_pod_b"] = sum(len(item) for item in items) / pods
            del items
            await asyncio.sleep(0.5)
            out["rss_after_list_mb"] = server.rss() / 1e6
            out["rss_per_cached_pod_b"] = (out["rss_warm_mb"] - out["rss_no_cache_mb"]) * 1e6 / pods
            times, cpus = await _lists(s, server, reps)
            out["list_s"] = statistics.median(times)
            out["list_cpu_s"] = statistics.median(cpus)
            out["list_cpu_us_per_pod"] = out["list_cpu_s"] / pods * 1e6
            out.update(await _tables_pages_gets(s, server, reps))
            out.update(await _reference(body, scratch, reps, server=server, session=s))
        out["reference_s"] = min(out["reference_whole_s"], out["reference_chunks_s"])
        out["list_vs_reference"] = out["list_interleaved_s"] / out["reference_s"]
        out["list_cpu_vs_reference"] = out["list_interleaved_cpu_s"] / max(  # /proc ticks are 10 ms
            min(out["reference_whole_cpu_s"], out["reference_chunks_cpu_s"]), 0.01)
        out["first_vs_later"] = out["list_first_warm_s"] / out["list_s"]
    finally:
        server.stop()
    return out


async def _timed(s: aiohttp.ClientSession, server: Server, url: str, *,
                 headers: dict[str, str] | None = None) -> tuple[float, float]:
    """One read of `url`: its seconds and the server's CPU seconds meanwhile."""
    cpu = server.cpu()
    seconds = (await _read(s, url, headers=headers))[0]
    return seconds, server.cpu() - cpu


async def _lists(s: aiohttp.ClientSession, server: Server, reps: int, *,
                 headers: dict[str, str] | None = None) -> tuple[list[float], list[float]]:
    """`reps` LISTs of every pod (JSON, or as `headers` ask): seconds and server CPU seconds of each."""
    times, cpus = [], []
    for _ in range(reps):
        seconds, cpu = await _timed(s, server, PODS, headers=headers)
        times.append(seconds)
        cpus.append(cpu)
    return times, cpus


async def _tables_pages_gets(s: aiohttp.ClientSession, server: Server, reps: int) -> dict[str, float]:
    """The Table LISTs (the first, which renders the rows the row cache keeps, then the later ones: time,
    CPU, peak RSS), pages of 500 and GETs of one pod (time and CPU each)."""
    out: dict[str, float] = {}
    server.reset_peak()
    out["table_first_s"], out["table_first_cpu_s"] = await _timed(s, server, PODS, headers={"Accept": TABLE})
    times, cpus = await _lists(s, server, max(2, reps // 2), headers={"Accept": TABLE})
    out["table_s"] = statistics.median(times)
    out["table_cpu_s"] = statistics.median(cpus)
    out["table_peak_rss_mb"] = server.peak() / 1e6
    cpu = server.cpu()
    times = [(await _read(s, PODS + "?limit=500"))[0] for _ in range(reps * 20)]
    out["page_ms"] = statistics.median(times) * 1000
    out["page_cpu_ms"] = (server.cpu() - cpu) / len(times) * 1000
    cpu = server.cpu()
    times = [(await _read(s, "/api/v1/namespaces/bench/pods/web-7d9f8b6c5-000007"))[0] for _ in range(reps * 40)]
    out["get_ms"] = statistics.median(times) * 1000
    out["get_cpu_ms"] = (server.cpu() - cpu) / len(times) * 1000
    return out


async def measure_before(data_dir: Path, pods: int, *, before: Path, reps: int) -> dict[str, float]:
    """The same LISTs against the code of `before` (no warm-up, no budget: its first LIST loads the
    cache, up to its object cap)."""
    out: dict[str, float] = {"pods": pods}
    server = Server(data_dir, memory="", before=before)
    try:
        out["ready_s"] = await server.ready()
        async with aiohttp.ClientSession(base_url=server.url, timeout=aiohttp.ClientTimeout(total=None)) as s:
            out["rss_warm_mb"] = server.rss() / 1e6
            server.reset_peak()
            out["list_at_ready_s"], out["list_at_ready_cpu_s"] = await _timed(s, server, PODS)
            out["list_first_peak_rss_mb"] = server.peak() / 1e6
            server.reset_peak()
            times, cpus = await _lists(s, server, reps)
            out["list_peak_rss_mb"] = server.peak() / 1e6
            await asyncio.sleep(0.5)
            out["rss_after_list_mb"] = server.rss() / 1e6
            out["list_s"] = statistics.median(times)
            out["list_cpu_s"] = statistics.median(cpus)
            out["list_cpu_us_per_pod"] = out["list_cpu_s"] / pods * 1e6
            out.update(await _tables_pages_gets(s, server, reps))
    finally:
        server.stop()
    return out


ROWS = (  # (key, label, format, target)
    ("ready_no_cache_s", "start-up to /readyz 200, no cache", "{:.2f} s", ""),
    ("ready_s", "start-up to /readyz 200", "{:.2f} s", "≈ without cache"),
    ("readyz_max_while_warming_s", "slowest /readyz while warming", "{:.3f} s", "≤ 0.5 s"),
    ("warmed_after_start_s", "warm-up done after start", "{:.1f} s", ""),
    ("list_at_ready_s", "LIST issued at /readyz (waits for warm-up)", "{:.2f} s", ""),
    ("list_first_warm_s", "first LIST once warm", "{:.2f} s", "≈ later LISTs"),
    ("list_cpu_first_s", "server CPU, first LIST once warm", "{:.2f} s", ""),
    ("list_s", "later LISTs, JSON (median)", "{:.2f} s", "≤ 1.5 x reference"),
    ("list_interleaved_s", "JSON LISTs interleaved with the reference", "{:.2f} s", ""),
    ("reference_whole_s", "bare aiohttp, same bytes, one Response", "{:.2f} s", ""),
    ("reference_chunks_s", "bare aiohttp, same bytes, 512 KiB chunks", "{:.2f} s", ""),
    ("list_vs_reference", "LIST / the faster reference (interleaved)", "{:.2f} x", "≤ 1.5"),
    ("list_interleaved_cpu_s", "server CPU per LIST (interleaved)", "{:.2f} s", ""),
    ("reference_whole_cpu_s", "reference CPU, one Response", "{:.2f} s", ""),
    ("reference_chunks_cpu_s", "reference CPU, 512 KiB chunks", "{:.2f} s", ""),
    ("list_cpu_vs_reference", "LIST CPU / the cheaper reference's", "{:.2f} x", ""),
    ("list_cpu_s", "server CPU per JSON LIST", "{:.2f} s", ""),
    ("list_cpu_us_per_pod", "server CPU per listed pod", "{:.2f} µs", ""),
    ("table_first_s", "first Table LIST (renders every row)", "{:.2f} s", ""),
    ("table_first_cpu_s", "server CPU, first Table LIST", "{:.2f} s", ""),
    ("table_s", "Table LIST (median)", "{:.2f} s", ""),
    ("table_cpu_s", "server CPU per Table LIST", "{:.2f} s", ""),
    ("page_ms", "page, limit=500 (median)", "{:.1f} ms", ""),
    ("page_cpu_ms", "server CPU per page", "{:.2f} ms", ""),
    ("get_ms", "GET one pod (median)", "{:.2f} ms", ""),
    ("get_cpu_ms", "server CPU per GET", "{:.2f} ms", ""),
    ("list_bytes_mb", "JSON LIST body", "{:.0f} MB", ""),
    ("json_per_pod_b", "JSON per pod", "{:.0f} B", ""),
    ("rss_per_cached_pod_b", "RSS per cached pod", "{:.0f} B", "≤ 1.5 x JSON"),
    ("warm_cache_mb", "cache charged (budget accounting)", "{:.0f} MB", ""),
    ("rss_no_cache_mb", "RSS, no cache, every pod read once", "{:.0f} MB", ""),
    ("rss_warm_mb", "RSS once warm", "{:.0f} MB", ""),
    ("list_first_peak_rss_mb", "peak RSS during the first JSON LIST", "{:.0f} MB", ""),
    ("list_peak_rss_mb", "peak RSS during a JSON LIST", "{:.0f} MB", "bounded (streamed)"),
    ("rss_after_list_mb", "RSS after the LIST", "{:.0f} MB", "≈ RSS once warm"),
    ("table_peak_rss_mb", "peak RSS during Table LISTs", "{:.0f} MB", "bounded (streamed)"),
)


def report(results: list[dict[str, float]]) -> None:
    print(f"load average: {Path('/proc/loadavg').read_text().strip()}")
    header = "measure".ljust(44) + "".join(
        f"{int(r['pods']):>10,}{'b' if r.get('before') else ' '} " for r in results) + "  target"
    print(header)
    for key, label, fmt, target in ROWS:
        cells = "".join(f"{fmt.format(r[key]):>12}" if key in r else f"{'-':>12}" for r in results)
        print(f"{label.ljust(44)}{cells}  {target}")
    for before in (True, False):
        runs = {r["pods"]: r for r in results if bool(r.get("before")) == before}
        if 199_000 in runs and 201_000 in runs:
            a, b = runs[199_000], runs[201_000]
            print(f"{'before' if before else 'after'}, 199k -> 201k: " + ", ".join(
                f"{key} x{b[key] / a[key]:.2f}" for key in ("list_s", "table_s", "page_ms", "list_cpu_s", "table_cpu_s",
                                                           "page_cpu_ms") if a.get(key)))
    print("b: the --before code (the first LIST after start is the 'LIST issued at /readyz' row)")
    print(json.dumps(results), file=sys.stderr)


async def main_async(args: argparse.Namespace) -> None:
    sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else (
        [20_000, 40_000] if args.quick else [199_000, 201_000, 300_000])
    scratch = Path(tempfile.mkdtemp(prefix="bench-lists-", dir=args.dir))
    try:
        data_dir = scratch / "data"
        template = await _template(data_dir)
        print(f"pod template: {len(json.dumps(template, separators=(',', ':')))} bytes of JSON", file=sys.stderr)
        have = 0
        results = []
        for size in sorted(sizes):
            seconds = await _append_pods(data_dir, template, have, size)
            print(f"appended {size - have:,} pods in {seconds:.1f} s ({(size - have) / seconds:,.0f}/s)",
                  file=sys.stderr)
            have = size
            if args.before:
                results.append({**await measure_before(data_dir, size, before=args.before,
                                                       reps=args.reps), "before": 1})
                print(json.dumps(results[-1]), file=sys.stderr)
            results.append(await measure(data_dir, size, memory=args.memory, reps=args.reps, scratch=scratch))
            print(json.dumps(results[-1]), file=sys.stderr)
            if args.before:
                results[-2]["rss_per_cached_pod_b"] = (results[-2]["rss_after_list_mb"]
                                                       - results[-1]["rss_no_cache_mb"]) * 1e6 / size
        report(results)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="20k and 40k pods")
    ap.add_argument("--sizes", default="", help="comma-separated pod counts (default 199000,201000,300000)")
    ap.add_argument("--memory", default="2Gi", help="the server's --watch-cache-memory (default 2Gi)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions of each LIST (default 5)")
    ap.add_argument("--dir", default=None, help="scratch directory (default: a temporary one)")
    ap.add_argument("--before", default=None, metavar="DIR",
                    help="also measure the code in DIR on the same data, in the same run "
                         "(e.g. `git archive main | tar -x -C DIR`)")
    args = ap.parse_args()
    args.before = Path(args.before).resolve() if args.before else None
    os.environ.setdefault("PYTHONHASHSEED", "0")
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
