"""Scale-out benchmark (issue #11): create throughput and watch latency with 1 and 2 API replicas on
PostgreSQL, and with one server on SQLite, in one run.

Run: `.venv/bin/python -m bench.replicas [--quick] [--pg-url URL]`. Each configuration starts real
`cplane serve --no-controllers` processes (PostgreSQL: on a fresh schema, dropped afterwards; SQLite:
on a fresh data dir) and drives them over HTTP from this process:

1. saturation: N ConfigMap creates (1 KB) from 32 concurrent clients, client i always on replica
   i mod R (what a load balancer does); creates/s = N / wall time;
2. paced: M creates at a fixed rate, alternating replicas — the latency of a watch when the
   servers are not queueing.

Two watches, opened before the load, receive every create (with 2 replicas: one watch on each, so
every setup does the same watch work). Watch latency: from sending a create to its line arriving on
a watch on the replica the write went through ("paced"), and on the other replica. Replication lag:
the other replica's line minus the writer's replica's. CPU seconds of the servers, of the PostgreSQL
backends serving them (local server) and of this load generator are counted over the saturation
phase. Everything shares this machine's cores: see docs/benchmarks.md ("Scale-out") before reading
the figures as a cluster's capacity.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp

CPLANE = Path(sys.executable).parent / "cplane"
PG_URL = os.environ.get("CPLANE_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
PATH = "/api/v1/namespaces/default/configmaps"
WATCHES = 2  # watch streams receiving every create, spread over the replicas


def _pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def _configmap(name: str) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                       "data": {"payload": "x" * 900}}).encode()


class Replica:
    def __init__(self, data_dir: Path, db_url: str | None) -> None:
        self.data_dir = data_dir
        args = [str(CPLANE), "serve", "--data-dir", str(data_dir), "--port", "0", "--insecure", "--no-controllers",
                "--log-level", "warning"]
        if db_url:
            args += ["--db", db_url]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = ""

    async def ready(self, http: aiohttp.ClientSession, timeout: float = 60) -> None:  # noqa: ASYNC109 (a benchmark budget)
        deadline = time.monotonic() + timeout
        kubeconfig = self.data_dir / "kubeconfig"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"cplane serve exited with {self.proc.returncode}")
            if not self.url and kubeconfig.exists():
                for line in kubeconfig.read_text().splitlines():
                    if line.strip().startswith("server:"):
                        self.url = line.split("server:", 1)[1].strip()
            if self.url:
                try:
                    async with http.get(self.url + "/readyz") as r:
                        if r.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
            await asyncio.sleep(0.05)
        raise TimeoutError("cplane serve not ready")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Watch:
    """One watch stream on one replica: name -> arrival time (perf_counter)."""

    def __init__(self, replica: int) -> None:
        self.replica = replica
        self.arrived: dict[str, float] = {}
        self._want: tuple[set[str], asyncio.Event] | None = None

    async def run(self, http: aiohttp.ClientSession, url: str, rv: str, opened: asyncio.Event) -> None:
        params = {"watch": "1", "resourceVersion": rv, "timeoutSeconds": "3600"}
        async with http.get(url + PATH, params=params) as response:
            assert response.status == 200, response.status
            opened.set()
            async for line in response.content:
                now = time.perf_counter()
                if not line.strip():
                    continue
                name = json.loads(line)["object"]["metadata"]["name"]
                self.arrived[name] = now
                if self._want is not None and name in self._want[0]:
                    self._want[0].discard(name)
                    if not self._want[0]:
                        self._want[1].set()

    async def wait_for(self, names: set[str], timeout: float) -> None:  # noqa: ASYNC109 (a benchmark budget)
        missing = names - self.arrived.keys()
        if not missing:
            return
        done = asyncio.Event()
        self._want = (missing, done)
        await asyncio.wait_for(done.wait(), timeout)
        self._want = None


async def _saturate(http: aiohttp.ClientSession, urls: list[str], prefix: str, count: int,
                    concurrency: int) -> tuple[float, dict[str, tuple[float, int]], int]:
    acks: dict[str, tuple[float, int]] = {}  # name -> (time the create was sent, replica index)
    errors = 0
    next_index = 0

    async def client(i: int) -> None:
        nonlocal errors, next_index
        replica = i % len(urls)
        while next_index < count:
            name = f"{prefix}-{next_index}"
            next_index += 1
            sent = time.perf_counter()
            async with http.post(urls[replica] + PATH, data=_configmap(name),
                                 headers={"Content-Type": "application/json"}) as r:
                await r.read()
                if r.status != 201:
                    errors += 1
                    continue
            acks[name] = (sent, replica)

    started = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(concurrency)))
    return count / (time.perf_counter() - started), acks, errors


async def _paced(http: aiohttp.ClientSession, urls: list[str], prefix: str, count: int,
                 rate: float) -> dict[str, tuple[float, int]]:
    acks: dict[str, tuple[float, int]] = {}
    started = time.perf_counter()
    for i in range(count):
        await asyncio.sleep(max(0.0, started + i / rate - time.perf_counter()))
        name = f"{prefix}-{i}"
        replica = i % len(urls)
        sent = time.perf_counter()
        async with http.post(urls[replica] + PATH, data=_configmap(name),
                             headers={"Content-Type": "application/json"}) as r:
            await r.read()
            assert r.status == 201, r.status
        acks[name] = (sent, replica)
    return acks


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc); 0 when unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _pg_client_ports(pids: list[int], pg_port: int) -> set[int]:
    """Local ports of the TCP connections these processes hold to port `pg_port` (Linux /proc)."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
        except OSError:
            continue
    ports: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                cols = line.split()
                if cols[9] in inodes and int(cols[2].rsplit(":", 1)[1], 16) == pg_port:
                    ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


async def _pg_backends(pg_url: str, ports: set[int]) -> list[int]:
    """Server pids of PostgreSQL backends serving these client ports (a local server only)."""
    import asyncpg

    if not ports:
        return []
    connection = await asyncpg.connect(pg_url.split("?")[0].replace("postgresql+asyncpg://", "postgresql://", 1),
                                       timeout=5)
    try:
        rows = await connection.fetch("SELECT pid FROM pg_stat_activity WHERE client_port = ANY($1::int[])",
                                      sorted(ports))
    finally:
        await connection.close()
    return [row["pid"] for row in rows if Path(f"/proc/{row['pid']}").exists()]  # noqa: ASYNC240 (procfs)


class CpuMeter:
    """CPU seconds spent by the servers, their PostgreSQL backends and this process over a phase."""

    def __init__(self, servers: list[Replica], db_url: str | None) -> None:
        self.servers = servers
        self.db_url = db_url
        self.backends: list[int] = []
        self.start: dict[str, float] = {}

    async def __aenter__(self) -> CpuMeter:
        if self.db_url and self.db_url.startswith("postgresql"):
            import sqlalchemy as sa

            url = sa.make_url(self.db_url)
            if url.host in ("127.0.0.1", "localhost", "::1"):
                ports = _pg_client_ports([s.proc.pid for s in self.servers], url.port or 5432)
                self.backends = await _pg_backends(self.db_url, ports)
        self.start = self._read()
        return self

    async def __aexit__(self, *exc: object) -> None:
        end = self._read()
        self.used = {k: end[k] - self.start[k] for k in end}

    def _read(self) -> dict[str, float]:
        return {"servers": sum(_cpu_seconds(s.proc.pid) for s in self.servers),
                "postgres": sum(_cpu_seconds(pid) for pid in self.backends),
                "client": _cpu_seconds(os.getpid())}


def _latencies(acks: dict[str, tuple[float, int]], watches: list[Watch]) -> dict[str, list[float]]:
    """ms from sending a create to its line on each watch: on the `same` replica as the write, on the
    `other` replica; `lag`: the other replica's watch minus the writer's own replica's watch."""
    out: dict[str, list[float]] = {"same": [], "other": [], "lag": []}
    for name, (sent, replica) in acks.items():
        own = min(w.arrived[name] for w in watches if w.replica == replica)
        for watch in watches:
            if watch.replica == replica:
                out["same"].append((watch.arrived[name] - sent) * 1000)
            else:
                out["other"].append((watch.arrived[name] - sent) * 1000)
                out["lag"].append((watch.arrived[name] - own) * 1000)
    return out


async def run(label: str, *, replicas: int, db_url: str | None, count: int, paced: int, rate: float,
              concurrency: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        servers = [Replica(Path(tmp) / f"r{i}", db_url) for i in range(replicas)]
        tasks: list[asyncio.Task[None]] = []
        connector = aiohttp.TCPConnector(limit=0)
        try:
            async with aiohttp.ClientSession(connector=connector,
                                             timeout=aiohttp.ClientTimeout(total=None)) as http:
                await asyncio.gather(*(s.ready(http) for s in servers))
                urls = [s.url for s in servers]
                async with http.get(urls[0] + PATH) as r:
                    rv = json.loads(await r.read())["metadata"]["resourceVersion"]
                # the same watch load in every setup: WATCHES streams, spread over the replicas
                watches = [Watch(i % replicas) for i in range(WATCHES)]
                for watch in watches:
                    opened = asyncio.Event()
                    tasks.append(asyncio.create_task(watch.run(http, urls[watch.replica], rv, opened)))
                    await asyncio.wait_for(opened.wait(), 10)
                await asyncio.sleep(0.3)
                async with CpuMeter(servers, db_url) as meter:
                    per_s, sat_acks, errors = await _saturate(http, urls, "sat", count, concurrency)
                for watch in watches:
                    await watch.wait_for(set(sat_acks), 60)
                await asyncio.sleep(0.5)
                paced_acks = await _paced(http, urls, "paced", paced, rate)
                for watch in watches:
                    await watch.wait_for(set(paced_acks), 30)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for server in servers:
                server.stop()
    out: dict[str, Any] = {"label": label, "replicas": replicas, "creates_per_s": per_s, "errors": errors}
    out.update({f"cpu_{k}_per_1000": v / count * 1000 for k, v in meter.used.items()})
    out["postgres_backends"] = len(meter.backends)
    for phase, acks in (("sat", sat_acks), ("paced", paced_acks)):
        for kind, ms in _latencies(acks, watches).items():
            if ms:
                out[f"{phase}_{kind}_p50"], out[f"{phase}_{kind}_p99"] = _pct(ms, 50), _pct(ms, 99)
    return out


async def _pg_schema(pg_url: str, action: str, schema: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(pg_url.replace("postgresql+asyncpg://", "postgresql://", 1), timeout=5)
    try:
        await connection.execute(f'{action} SCHEMA IF {"NOT " if action == "CREATE" else ""}EXISTS "{schema}"'
                                 + (" CASCADE" if action == "DROP" else ""))
    finally:
        await connection.close()


async def main_async(args: argparse.Namespace) -> int:
    count, paced = (1000, 100) if args.quick else (4000, 300)
    common = {"count": count, "paced": paced, "rate": args.rate, "concurrency": args.concurrency}
    results = [await run("SQLite, 1 server", replicas=1, db_url=None, **common)]
    if not args.no_pg:
        for replicas in (1, 2):
            schema = f"bench_replicas_{uuid.uuid4().hex[:10]}"
            separator = "&" if "?" in args.pg_url else "?"
            try:
                await _pg_schema(args.pg_url, "CREATE", schema)
                results.append(await run(f"PostgreSQL, {replicas} replica{'s' if replicas > 1 else ''}",
                                         replicas=replicas, db_url=f"{args.pg_url}{separator}schema={schema}",
                                         **common))
            finally:
                await _pg_schema(args.pg_url, "DROP", schema)
    print(f"{count} creates from {args.concurrency} clients (saturation), then {paced} at {args.rate:.0f}/s "
          f"(paced); {WATCHES} watches spread over the replicas. Latency: from sending a create to its watch line.\n")
    print("| Setup | creates/s | watch p50 / p99, saturation (ms) | watch p50 / p99, paced (ms) "
          "| other replica's watch, paced (ms) | replication lag p50 / p99, paced (ms) |")
    print("|---|---:|---:|---:|---:|---:|")

    def pair(r: dict[str, Any], key: str, digits: int = 1) -> str:
        if f"{key}_p50" not in r:
            return "—"
        return f"{r[key + '_p50']:.{digits}f} / {r[key + '_p99']:.{digits}f}"

    for r in results:
        print(f"| {r['label']} | {r['creates_per_s']:.0f} | {pair(r, 'sat_same', 0)} | {pair(r, 'paced_same')} | "
              f"{pair(r, 'paced_other')} | {pair(r, 'paced_lag')} |")
    print("\nCPU seconds per 1,000 creates at saturation (servers together; PostgreSQL: the backends serving "
          "them, local server only; client: this load generator)\n")
    print("| Setup | cplane servers | PostgreSQL | client | total |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        pg = r["cpu_postgres_per_1000"] if r["postgres_backends"] else float("nan")
        parts = [r["cpu_servers_per_1000"], pg, r["cpu_client_per_1000"]]
        total = sum(x for x in parts if x == x)
        print(f"| {r['label']} | {parts[0]:.2f} | {'—' if pg != pg else f'{pg:.2f}'} | {parts[2]:.2f} | {total:.2f} |")
    print(json.dumps(results), file=sys.stderr)
    return 0 if all(r["errors"] == 0 for r in results) else 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1,000 creates instead of 4,000")
    ap.add_argument("--pg-url", default=PG_URL, help="PostgreSQL server (default $CPLANE_TEST_PG_URL or local)")
    ap.add_argument("--no-pg", action="store_true", help="SQLite only")
    ap.add_argument("--concurrency", type=int, default=32, help="concurrent clients at saturation (default 32)")
    ap.add_argument("--rate", type=float, default=100.0, help="writes/s of the paced phase (default 100)")
    args = ap.parse_args()
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(asyncio.run(main_async(args)))


if __name__ == "__main__":
    main()
