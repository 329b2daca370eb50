"""Recording benchmark (issue #25): `cplane record` following a source that writes 2,000 times a second.

    .venv/bin/python -m bench.record             # 30 s of writes at 2,000/s
    .venv/bin/python -m bench.record --quick     # 8 s
    options: --rate N (writes/s, default 2000), --seconds S, --writers N (concurrent requests, 32)

The source is a `cplane serve --insecure --no-controllers` process; the recorder is `cplane record
--kubeconfig SOURCE/kubeconfig --data-dir REC` (every kind the source serves: one LIST and one WATCH
each) in its own process. This process writes ConfigMaps (1 KB of data) at the given rate: creates of
1,000, then merge patches of an annotation round-robin (not of the data: the recording redacts
ConfigMap values, so a change of a value alone records nothing), each one event in the source's log. Meanwhile it samples the
recording's newest revision (its SQLite file, read-only) every 100 ms. Figures: writes/s the source
did; events/s recorded over the same window; the lag (the time a write takes to show in the recording:
the recording's count against the source's, as time behind, its median and maximum over the samples);
the drain after the last write; the recorder's CPU seconds per 1,000 events.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

import aiohttp

from bench import harness

CPLANE = Path(sys.executable).parent / "cplane"
OBJECTS = 1000


_HEADS = ("SELECT h.name, {column} FROM heads h JOIN events e ON e.revision = h.revision "
          "WHERE h.resource = 'configmaps' AND h.namespace = 'default' AND NOT h.deleted")


def _configmaps(db: Path, column: str) -> dict[str, str]:
    """name -> the revision of each live ConfigMap (the source's), or the source's revision it was
    recorded from (the recording's `source=REV`)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0) as conn:
        rows = conn.execute(_HEADS.format(column=column)).fetchall()
    return {str(name): str(value).removeprefix("source=").split()[0] for name, value in rows}


def _caught_up(source: Path, recording: Path) -> bool:
    try:
        return _configmaps(source, "e.revision") == _configmaps(recording, "e.actor_request_id")
    except sqlite3.OperationalError:
        return False


def _lines(stream: IO[bytes], into: list[str], echo: bool) -> None:
    for raw in stream:
        line = raw.decode(errors="replace").rstrip()
        into.append(line)
        if echo:
            print(line, file=sys.stderr)


def _recorded(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0) as conn:
            row = conn.execute("SELECT COALESCE(MAX(revision), 0) FROM events").fetchone()
        return int(row[0])
    except sqlite3.OperationalError:  # not created yet, or busy: the next sample reads it
        return 0


async def _write(url: str, *, rate: int, seconds: float, writers: int, done: list[float]) -> None:
    """ConfigMap writes at `rate`/s for `seconds`; `done` gets each write's completion time."""
    base = f"{url}/api/v1/namespaces/default/configmaps"
    payload = "x" * 1000
    total = int(rate * seconds)
    next_index = 0
    start = time.perf_counter()

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal next_index
        while next_index < total:
            i = next_index
            next_index += 1
            due = start + i / rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            name = f"cm-{i % OBJECTS}"
            if i < OBJECTS:
                async with session.post(base, json={"metadata": {"name": name}, "data": {"v": payload}}) as resp:
                    assert resp.status == 201, await resp.text()
            else:
                async with session.patch(f"{base}/{name}", json={"metadata": {"annotations": {"n": str(i)}}},
                                         headers={"Content-Type": "application/merge-patch+json"}) as resp:
                    assert resp.status == 200, await resp.text()
            done.append(time.perf_counter())

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=writers)) as session:
        await asyncio.gather(*(worker(session) for _ in range(writers)))


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="cplane-bench-record-") as tmp:
        source_dir, rec_dir = Path(tmp) / "source", Path(tmp) / "rec"
        source_dir.mkdir()
        source = subprocess.Popen([str(CPLANE), "serve", "--data-dir", str(source_dir), "--port", "0",  # noqa: ASYNC220 (starts at once)
                                   "--insecure", "--no-controllers", "--log-level", "warning"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        recorder: subprocess.Popen[bytes] | None = None
        lines: list[str] = []
        try:
            url = await harness.wait_ready(source_dir, source, time.perf_counter() + 60)
            recorder = subprocess.Popen([str(CPLANE), "record", "--kubeconfig", str(source_dir / "kubeconfig"),  # noqa: ASYNC220 (starts at once)
                                         "--data-dir", str(rec_dir)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            assert recorder.stderr is not None
            reader = threading.Thread(target=_lines, args=(recorder.stderr, lines, args.debug), daemon=True)
            reader.start()
            db = rec_dir / "cplane.db"
            # The recorder has listed everything when its count stops growing with nothing written.
            baseline, steady = -1, 0
            while steady < 5:
                await asyncio.sleep(0.1)
                now = _recorded(db)
                steady = steady + 1 if now == baseline and now > 0 else 0
                baseline = now
            cpu_before = harness.cpu_seconds(recorder.pid) or 0.0
            sampler = harness.Sampler(pid=recorder.pid, out=Path(tmp) / "record.txt") if args.profile else None
            done: list[float] = []
            samples: list[tuple[float, int, int]] = []  # (time, writes done, recorded since the start)
            writing = asyncio.create_task(_write(url, rate=args.rate, seconds=args.seconds, writers=args.writers,
                                                 done=done))
            started = time.perf_counter()
            while not writing.done():
                await asyncio.sleep(0.1)
                samples.append((time.perf_counter(), len(done), _recorded(db) - baseline))
            await writing
            ended = time.perf_counter()
            total = len(done)
            recorded_at_end = _recorded(db) - baseline
            while not _caught_up(source_dir / "cplane.db", db):
                await asyncio.sleep(0.05)
                if time.perf_counter() - ended > 120:
                    raise TimeoutError("the recording did not catch up within 120 s")
            drained = time.perf_counter()
            recorded_total = _recorded(db) - baseline
            cpu = (harness.cpu_seconds(recorder.pid) or 0.0) - cpu_before
            if sampler is not None:
                for frame, own, anywhere in harness.top_frames(sampler.stop(), n=25):
                    print(f"  {own:5.1f} % {anywhere:5.1f} %  {frame}", file=sys.stderr)
        finally:
            harness.stop(recorder, source)
        if recorder is not None:
            reader.join(timeout=10)
        window = ended - started
        lags = []
        for when, _, recorded in samples:  # how long ago the source had done as many writes
            lags.append(when - done[min(recorded, len(done)) - 1] if recorded > 0 else when - started)
        print(f"load average {harness.load_average()}")
        print("| measure | measured | target |\n|---|---:|---:|")
        print(f"| source writes/s (ConfigMap create/patch, {args.writers} clients) | {total / window:,.0f} | "
              f"{args.rate:,} |")
        print(f"| events/s recorded during the writes | {recorded_at_end / window:,.0f} | {args.rate:,} |")
        print(f"| events/s recorded, first write to the last recorded | {recorded_total / (drained - started):,.0f} | "
              f"{args.rate:,} |")
        print(f"| lag behind the source, median / max (s) | {statistics.median(lags):.2f} / {max(lags):.2f} | small |")
        print(f"| drain after the last write (s) | {drained - ended:.2f} | — |")
        print(f"| recorder CPU s per 1,000 events | {cpu / max(total, 1) * 1000:.3f} | — |")
        print(f"recorded {recorded_total:,} events for {total:,} writes; the recorder's last lines:", *lines[-3:],
              sep="\n  ")


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--writers", type=int, default=32)
    parser.add_argument("--debug", action="store_true", help="the recorder's progress lines as they come")
    parser.add_argument("--profile", action="store_true", help="the recorder's busiest functions (py-spy)")
    args = parser.parse_args()
    if args.seconds is None:
        args.seconds = 8.0 if args.quick else 30.0
    asyncio.run(main(args))


if __name__ == "__main__":
    cli()
