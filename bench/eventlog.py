"""The web UI's reads at scale (issue #26): the event log views of api/eventlog.py on a
1,000,000-event SQLite log, and exact LISTs of 500 ResourceSlices at a past revision.

    .venv/bin/python -m bench.eventlog                  # 1,000,000 events (~2-3 min on 2 cores)
    .venv/bin/python -m bench.eventlog --quick          # 100,000 events (~20 s; or --events N)
    options: --dir DIR (scratch space; default a temporary directory), --reps N (default 5)

The log is written straight into SQLite (bench.storage.fill_query_log: pods in 100 namespaces,
MODIFIED round-robin), then an in-process server (`api.server.running`, no authentication) serves it,
and an aiohttp client on the same loop measures, each figure the median of --reps requests unless
said otherwise:
- `eventlog/density?buckets=200`: the first request (every bucket counted: one GROUP BY over the
  log), then again (the complete buckets remembered: only the newest is counted), then after a write;
  and the storage query alone (`EventLog.density` over the whole log);
- `eventlog?limit=500` and `?limit=10000` from the middle of the log; `eventlog/history` of one pod;
- 500 ResourceSlices of 8 devices each, created through the API and then each changed once: a LIST at
  the newest revision and an exact LIST (`resourceVersion=R&resourceVersionMatch=Exact`) at the
  revision before the changes.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

from bench import storage as storage_bench

EVENTLOG = "/apis/sim.cplane.dev/v1alpha1/eventlog"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"


async def _ms(call: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


async def _median(call: Callable[[], Awaitable[Any]], reps: int) -> float:
    return statistics.median([await _ms(call) for _ in range(reps)])


def _slice(i: int) -> dict[str, Any]:
    node = f"node-{i:04d}"
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpu"},
            "spec": {"driver": "gpu.example.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{d}", "attributes": {
                         "model": {"string": "H100"}, "index": {"int": d}, "uuid": {"string": f"GPU-{i:04d}-{d}"}},
                         "capacity": {"memory": {"value": "80Gi"}}} for d in range(8)]}}


def fill(directory: Path, *, events: int) -> tuple[str, str]:
    data_dir = directory / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    storage_bench.fill_query_log(data_dir / "cplane.db", events=events, objects=min(100_000, events), users=500)
    return f"log written ({events:,} events)", f"{time.perf_counter() - started:.1f} s"


async def measure(directory: Path, *, events: int, reps: int) -> list[tuple[str, str]]:
    from api import server as servers

    rows: list[tuple[str, str]] = []

    data_dir = directory / "data"
    db = data_dir / "cplane.db"
    async with servers.running(data_dir=data_dir, db_url=f"sqlite+aiosqlite:///{db}") as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:

        async def get(path: str, **params: Any) -> Any:
            async with http.get(path, params={k: str(v) for k, v in params.items()}) as r:
                assert r.status == 200, await r.text()
                return await r.read()

        newest = srv.event_log.revision
        sql_ms = await _ms(lambda: srv.event_log.density(since=0, until=newest, width=8192))
        rows.append(("EventLog.density, whole log, width 8192 (storage only)", f"{sql_ms:.0f} ms"))
        rows.append(("density?buckets=200, first request", f"{await _ms(lambda: get(f'{EVENTLOG}/density', buckets=200)):.0f} ms"))
        rows.append(("density?buckets=200, again", f"{await _median(lambda: get(f'{EVENTLOG}/density', buckets=200), reps):.1f} ms"))

        async def write_then_density() -> float:
            async with http.post("/api/v1/namespaces/default/configmaps", json={
                    "metadata": {"generateName": "b-"}, "data": {"x": "1"}}) as r:
                assert r.status == 201
            return await _ms(lambda: get(f"{EVENTLOG}/density", buckets=200))

        after_write = statistics.median([await write_then_density() for _ in range(reps)])
        rows.append(("density?buckets=200, after a write", f"{after_write:.1f} ms"))
        middle = events // 2
        rows.append(("eventlog?limit=500 (summaries)", f"{await _median(lambda: get(EVENTLOG, since=middle, limit=500), reps):.1f} ms"))
        rows.append(("eventlog?limit=10000", f"{await _median(lambda: get(EVENTLOG, since=middle, limit=10_000), reps):.0f} ms"))
        rows.append(("eventlog/history (one pod)", f"{await _median(lambda: get(f'{EVENTLOG}/history', resource='pods', namespace='ns-07', name='pod-0000007'), reps):.1f} ms"))

        for i in range(500):
            async with http.post(SLICES, json=_slice(i)) as r:
                assert r.status == 201, await r.text()
        before = srv.event_log.revision
        for i in range(500):
            async with http.patch(f"{SLICES}/node-{i:04d}-gpu", json={"metadata": {"labels": {"changed": "yes"}}},
                                  headers={"Content-Type": "application/merge-patch+json"}) as r:
                assert r.status == 200
        size = len(await get(SLICES))
        live = await _median(lambda: get(SLICES), reps)
        past = await _median(lambda: get(SLICES, resourceVersion=before, resourceVersionMatch="Exact"), reps)
        rows.append((f"LIST 500 ResourceSlices x 8 devices ({size / 1e6:.1f} MB), newest", f"{live:.0f} ms"))
        rows.append(("the same LIST at a past revision (Exact)", f"{past:.0f} ms"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="100,000 events")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    if args.quick:
        args.events = 100_000
    logging.disable(logging.INFO)
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with tempfile.TemporaryDirectory(prefix="cplane-bench-eventlog-", dir=args.dir) as tmp:
        rows = [fill(Path(tmp), events=args.events)]
        rows += asyncio.run(measure(Path(tmp), events=args.events, reps=args.reps))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
