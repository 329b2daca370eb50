"""Replay benchmarks (issue #8): `cplane log show --at` and `cplane log history` on a 1,000,000-event
log, and a replay at full speed delivered to a watching client.

    .venv/bin/python -m bench.replay            # 1,000,000 events (~3 min on 2 cores, ~1.5 GB of scratch)
    .venv/bin/python -m bench.replay --quick    # 100,000 events (~30 s)
    .venv/bin/python -m bench.replay --start-only   # only the replay start figures (issue #22)
    options: --dir DIR (scratch space; default a temporary directory; an existing DIR/log.ndjson and
             DIR/data/cplane.db of the same size are reused)

The log: 10,000 pods ADDED, then MODIFIED round-robin (bench.storage.write_log_file), imported into a
data dir. Figures:
- `log show --at REV` (every kind; 10,000 pods at the middle revision) on the data dir: in process
  (open, read, decode, render the tables) and as the `cplane` command (a new Python process);
- `log history` of one pod (100 versions) on the data dir, the same two ways;
- the same two commands on the NDJSON file (a reference: an NDJSON source is loaded whole);
- replay at full speed: `cplane replay LOG.ndjson --step` runs in its own process; this process
  watches every pod from revision 0 (decoding each event) and asks `play?speed=max`; events received
  per second from the play request to the last event.
- replay start (issue #22): `cplane replay` of the data dir (streamed from the store) and of the NDJSON
  export (loaded in memory: the path every replay took before): spawn -> first answer, peak RSS, and
  `play?speed=max` to the end (events/s through the cursor), peak RSS after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import logging
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
import structlog

from api import replay
from bench import harness
from bench import storage as bench_storage
from cp.cli import log as log_command
from storage import factory, ndjson

OBJECTS = 10_000
RUNS = 5


class Row(msgspec.Struct):
    benchmark: str
    measured: str
    target: str


def build_log(directory: Path, *, events: int) -> tuple[Path, Path]:
    """DIR/log.ndjson and DIR/data/cplane.db holding `events` events (reused when already there)."""
    source = directory / "log.ndjson"
    data = directory / "data"
    stamp = directory / f"built-{events}"
    if stamp.exists() and source.exists() and (data / "cplane.db").exists():
        return source, data
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    started = time.perf_counter()
    bench_storage.write_log_file(source, objects=OBJECTS, events=events)
    print(f"  wrote {events:,} events in {time.perf_counter() - started:.1f} s", file=sys.stderr)

    async def load() -> None:
        event_log = factory.open_event_log(url=f"sqlite+aiosqlite:///{data.resolve()}/cplane.db")
        await event_log.start()
        try:
            with source.open("rb") as lines:
                await ndjson.import_events(event_log, lines=lines)
        finally:
            await event_log.close()

    started = time.perf_counter()
    asyncio.run(load())
    print(f"  imported in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    stamp.touch()
    return source, data


def _namespace(**kw: Any) -> argparse.Namespace:
    base: dict[str, Any] = {"data_dir": None, "db": None, "file": None}
    base.update(kw)
    return argparse.Namespace(**base)


def show_args(source: dict[str, Any], revision: int) -> argparse.Namespace:
    return _namespace(**source, log_command="show", resource=None, at=revision, at_time=None, namespace=None,
                      all_namespaces=False, output="table")


def history_args(source: dict[str, Any], ref: str) -> argparse.Namespace:
    return _namespace(**source, log_command="history", object=ref, namespace=None, all_fields=False, output="text")


def in_process(args: argparse.Namespace, *, runs: int) -> float:
    """Median seconds of `runs` runs of a log command in this process (stdout discarded)."""
    timings = []
    for _ in range(runs):
        sink = io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()):
            code = log_command.run_log_command(args)
        timings.append(time.perf_counter() - started)
        assert code == 0, sink.getvalue()[-500:]
    return statistics.median(timings)


_DIRECT = ("import argparse, json, sys\n"
           "from cp.cli import log as log_command\n"
           "from cp import logs\n"
           "logs.configure(level='warning')\n"
           "sys.exit(log_command.run_log_command(argparse.Namespace(**json.loads(sys.argv[1]))))\n")


def as_command(argv: list[str], *, runs: int) -> float:
    """Median wall seconds of `runs` runs of a new process (stdout discarded)."""
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        timings.append(time.perf_counter() - started)
        assert done.returncode == 0, done.stderr.decode()[-500:]
    return statistics.median(timings)


def cplane(*argv: str) -> list[str]:
    return [sys.executable, "-m", "cp.cli", *argv]


def direct(args: argparse.Namespace) -> list[str]:
    """The same command without `cplane`'s argument parser (see the start-up note in the output)."""
    return [sys.executable, "-c", _DIRECT, json.dumps({k: str(v) if isinstance(v, Path) else v
                                                       for k, v in vars(args).items()})]


class _WatchEvent(msgspec.Struct):
    type: str
    object: dict[str, Any]


@contextlib.asynccontextmanager
async def _replaying(source: Path, *, directory: Path, name: str,
                     poll: float) -> AsyncIterator[tuple[subprocess.Popen[bytes], str]]:
    """`cplane replay SOURCE --step` in its own process, from its spawn until its kubeconfig names the
    server (checked every `poll` s): (the process, the server's URL); interrupted (SIGINT) when done."""
    kubeconfig = directory / f"{name}.kubeconfig"
    kubeconfig.unlink(missing_ok=True)
    err = (directory / f"{name}.err").open("wb")
    # A Popen, not an asyncio subprocess: it is polled, signalled and waited for synchronously.
    proc = subprocess.Popen(cplane("replay", str(source), "--step", "--port", "0", "--kubeconfig", str(kubeconfig)),  # noqa: ASYNC220
                            stdout=subprocess.DEVNULL, stderr=err)
    try:
        while not kubeconfig.exists():
            if proc.poll() is not None:
                raise RuntimeError((directory / f"{name}.err").read_text()[-2000:])
            await asyncio.sleep(poll)
        server = next(line.split("server:")[1].strip() for line in kubeconfig.read_text().splitlines()
                      if "server:" in line)
        yield proc, server
    finally:
        harness.stop(proc, sig=signal.SIGINT, timeout=10)
        err.close()


async def full_speed(source: Path, *, events: int, directory: Path) -> dict[str, float]:
    """Replay LOG at full speed in a `cplane replay` process; this process watches every pod."""
    started = time.perf_counter()
    out: dict[str, float] = {}
    async with _replaying(source, directory=directory, name="replay", poll=0.05) as (proc, server):
        out["load"] = time.perf_counter() - started
        decoder = msgspec.json.Decoder(_WatchEvent)
        timeout = aiohttp.ClientTimeout(total=None, sock_read=60)
        async with aiohttp.ClientSession(base_url=server, timeout=timeout) as http:
            watch = await http.get("/api/v1/pods", params={"watch": "1", "resourceVersion": "0"})
            received = 0
            last_rv = ""
            async with http.post(f"{replay.CONTROL}/play", params={"speed": "max"}) as r:
                assert r.status == 200, await r.text()
            started = time.perf_counter()
            buffer = b""
            while received < events:
                chunk = await watch.content.readany()
                if not chunk:
                    raise RuntimeError(f"watch ended after {received} events")
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    event = decoder.decode(line)
                    received += 1
                    last_rv = event.object["metadata"]["resourceVersion"]
            out["rate"] = events / (time.perf_counter() - started)
            watch.close()
            assert last_rv == str(events), last_rv
        with contextlib.suppress(OSError):
            out["rss_mb"] = _proc_kb(proc.pid, "VmRSS") / 1024
    return out


def _proc_kb(pid: int, field: str) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith(field + ":"))


async def start_and_rate(source: Path, *, events: int, directory: Path) -> dict[str, float]:
    """`cplane replay SOURCE --step` in its own process: seconds from the spawn to the first answer (a
    LIST of one pod), its peak RSS then; `play?speed=max` to the end of the log (events per second
    through the cursor, from the status), and its peak RSS then."""
    started = time.perf_counter()
    out: dict[str, float] = {}
    async with _replaying(source, directory=directory, name="start", poll=0.005) as (proc, server):
        async with aiohttp.ClientSession(base_url=server) as http:
            async with http.get("/api/v1/pods", params={"limit": "1"}) as r:
                assert r.status == 200, await r.text()
            out["first_answer"] = time.perf_counter() - started
            out["start_peak_mb"] = _proc_kb(proc.pid, "VmHWM") / 1024
            async with http.post(f"{replay.CONTROL}/step") as r:  # the first event (the play's start-up aside)
                assert r.status == 200, await r.text()
            played = time.perf_counter()
            async with http.post(f"{replay.CONTROL}/play", params={"speed": "max"}) as r:
                assert r.status == 200, await r.text()
            while True:
                async with http.get(replay.CONTROL) as r:
                    status = await r.json()
                if status["mode"] == "finished":
                    break
                await asyncio.sleep(0.02)
            out["rate"] = (events - 1) / (time.perf_counter() - played)
            assert status["revision"] == events, status
        out["end_peak_mb"] = _proc_kb(proc.pid, "VmHWM") / 1024
        out["end_rss_mb"] = _proc_kb(proc.pid, "VmRSS") / 1024
    return out


def start_rows(*, events: int, directory: Path) -> list[Row]:
    """Replay start (issue #22): the data dir streamed from the store, beside the NDJSON export
    loaded in memory (the path every replay took before)."""
    rows: list[Row] = []
    source, data = build_log(directory, events=events)
    label = f"{events:,}-event log"
    streamed = asyncio.run(start_and_rate(data, events=events, directory=directory))
    loaded = asyncio.run(start_and_rate(source, events=events, directory=directory))
    issue = " (issue #22 on 1M: 7-9 s, 1.27 GB)"
    rows.append(Row(benchmark=f"replay start: spawn -> first answer, data dir streamed ({label})",
                    measured=f"{streamed['first_answer']:,.2f} s", target="<= 1 s"))
    rows.append(Row(benchmark="  the same, NDJSON loaded in memory (the previous path)",
                    measured=f"{loaded['first_answer']:,.2f} s", target="reference" + issue))
    rows.append(Row(benchmark="replay peak RSS at the first answer, data dir streamed",
                    measured=f"{streamed['start_peak_mb']:,.0f} MB", target="bounded (not growing with the log)"))
    rows.append(Row(benchmark="  the same, NDJSON loaded in memory", measured=f"{loaded['start_peak_mb']:,.0f} MB",
                    target="reference"))
    rows.append(Row(benchmark="replay play?speed=max to the end: events/s through the cursor, data dir streamed",
                    measured=f"{streamed['rate']:,.0f} events/s", target=">= 300,000 events/s"))
    rows.append(Row(benchmark="  the same, NDJSON loaded in memory", measured=f"{loaded['rate']:,.0f} events/s",
                    target="reference"))
    rows.append(Row(benchmark="replay peak RSS after the whole log, data dir streamed (RSS at the end)",
                    measured=f"{streamed['end_peak_mb']:,.0f} MB ({streamed['end_rss_mb']:,.0f} MB)",
                    target="bounded"))
    rows.append(Row(benchmark="  the same, NDJSON loaded in memory",
                    measured=f"{loaded['end_peak_mb']:,.0f} MB ({loaded['end_rss_mb']:,.0f} MB)", target="reference"))
    return rows


def run(*, events: int, directory: Path) -> list[Row]:
    rows: list[Row] = []
    source, data = build_log(directory, events=events)
    label = f"{events:,}-event log"
    middle = events // 2
    pod = "pods/bench/pod-0004242"
    versions = events // OBJECTS
    on_dir = {"data_dir": data}
    on_file = {"file": str(source)}

    def add(name: str, seconds: float, target: str, fmt: Callable[[float], str] | None = None) -> None:
        rows.append(Row(benchmark=name, measured=(fmt or (lambda s: f"{s * 1000:,.0f} ms"))(seconds), target=target))

    show = show_args(on_dir, middle)
    add(f"log show --at {middle:,} (every kind, {OBJECTS:,} pods), data dir, in process ({label})",
        in_process(show, runs=RUNS), "<= 1 s")
    add("  the same, `cplane log show` command end to end", as_command(
        cplane("log", "show", "--data-dir", str(data), "--at", str(middle)), runs=RUNS), "<= 1 s")
    add("  the same, a new process without cplane's argument parser", as_command(direct(show), runs=RUNS),
        "reference (start-up note below)")
    hist = history_args(on_dir, pod)
    add(f"log history {pod} ({versions} versions), data dir, in process ({label})",
        in_process(hist, runs=RUNS), "<= 100 ms")
    add("  the same, `cplane log history` command end to end", as_command(
        cplane("log", "history", "--data-dir", str(data), pod), runs=RUNS), "<= 100 ms")
    add("  the same, a new process without cplane's argument parser", as_command(direct(hist), runs=RUNS),
        "reference")
    add(f"log show --at {middle:,}, NDJSON file (loaded whole), in process", in_process(
        show_args(on_file, middle), runs=1), "reference", lambda s: f"{s:,.1f} s")
    add(f"log history {pod}, NDJSON file (loaded whole), in process", in_process(
        history_args(on_file, pod), runs=1), "reference", lambda s: f"{s:,.1f} s")
    replayed = asyncio.run(full_speed(source, events=events, directory=directory))
    add(f"replay at full speed -> a watching client (all pods from revision 0, {label})", replayed["rate"],
        ">= 50,000 events/s", lambda r: f"{r:,.0f} events/s")
    add("  replay server start-up (load and index the NDJSON, serve)", replayed["load"], "reference",
        lambda s: f"{s:,.1f} s")
    if "rss_mb" in replayed:
        add("  replay server memory (RSS) at the end", replayed["rss_mb"], "reference", lambda m: f"{m:,.0f} MB")
    rows += start_rows(events=events, directory=directory)
    return rows


def print_table(rows: list[Row]) -> None:
    headers = ("Benchmark", "Measured", "Target / reference")
    cells = [headers] + [(r.benchmark, r.measured, r.target) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(3)]
    for n, cell in enumerate(cells):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)) + " |")
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


def startup_note() -> str:
    """How long `cplane --help` takes: the fixed cost of every `cplane` command."""
    started = time.perf_counter()
    subprocess.run(cplane("--help"), stdout=subprocess.DEVNULL, check=True)
    return f"`cplane --help` alone: {(time.perf_counter() - started) * 1000:,.0f} ms (the start-up of every command)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="100,000 events instead of 1,000,000")
    parser.add_argument("--dir", type=Path, help="scratch directory (default: a temporary one)")
    parser.add_argument("--start-only", action="store_true", help="only the replay start figures (issue #22)")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
                        logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    events = 100_000 if args.quick else 1_000_000
    directory = args.dir or Path(tempfile.mkdtemp(prefix="cplane-bench-replay-"))
    directory.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        rows = (start_rows if args.start_only else run)(events=events, directory=directory)
        note = startup_note()
    finally:
        if args.dir is None:
            shutil.rmtree(directory, ignore_errors=True)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"bench.replay {'--quick ' if args.quick else ''}({os.cpu_count()} CPUs, load average {load}, Python "
          f"{sys.version.split()[0]}; {time.perf_counter() - started:.0f} s)")
    print_table(rows)
    print(f"\n{note}")


if __name__ == "__main__":
    main()
