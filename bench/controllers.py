"""Controller benchmark (issue #4): the simulated fleet.

Run: `.venv/bin/python -m bench.controllers [--fleet FILE] [--pods N] [--quick]`.

1. Start-up: from launching `cplane serve --fleet examples/fleets/large.yaml` (500 nodes) until
   every Node is Ready and every ResourceSlice is published (target <= 5 s). Until `serve` wires
   the fleet controller, `--mode auto` notices (no Node appears) and measures the same thing with
   `cplane serve --no-controllers` plus `python -m controllers.fleet --server URL` started as soon
   as the server answers /readyz (`--mode process` forces that).
2. Pods: N pods (default 1,000) created by hand with `spec.nodeName` spread over the fleet, timed
   from the first create until all are Running (target >= 200 pods/s); the status writes per pod
   are counted from the watch (target: exactly one).
3. Steady state: the kubelets' heartbeat writes per second over a few seconds (lease renewals every
   10 s and status heartbeats per the fleet's `statusReportIntervalSeconds`).

The server runs as its own process on a fresh SQLite data dir; observation is by watch streams
(watch-list), so polling adds no load. Figures are printed beside their targets.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import harness
from controllers import fleet as fleets
from controllers.fleet import objects as objs
from controllers.runtime import client as clients

ROOT = Path(__file__).resolve().parent.parent
CPLANE = Path(sys.executable).parent / "cplane"
LARGE = ROOT / "examples" / "fleets" / "large.yaml"
NAMESPACE = "bench"


_wait_ready = harness.wait_ready


def _cpu(*procs: subprocess.Popen[bytes] | None) -> float:
    """CPU seconds (user + system) the processes used so far."""
    return sum(harness.cpu_seconds(p.pid) or 0.0 for p in procs if p is not None)


def _expected(fleet: fleets.Fleet) -> tuple[int, int]:
    plan = objs.Plan(fleet)
    slices = sum(len(objs.slices_for(plan, plan.nodes[p.node_name(0)])) * p.count
                 for p in fleet.node_pools if p.count)
    return fleet.node_count(), slices


class Observer(harness.Watcher):
    """Follows nodes, slices, leases and pods through watch-list streams."""

    def __init__(self, url: str) -> None:
        super().__init__(url, user_agent="bench-controllers/v0.1.0",
                         watches=[("nodes", None), ("resourceslices.resource.k8s.io", None),
                                  ("leases.coordination.k8s.io", "kube-node-lease"), ("pods", NAMESPACE)])
        self.ready_nodes: set[str] = set()
        self.slices: set[str] = set()
        self.running: set[str] = set()
        self.pod_writes: collections.Counter[str] = collections.Counter()
        self.writes: collections.Counter[str] = collections.Counter()  # MODIFIED events by resource

    def apply(self, kind: str, event: clients.WatchEvent) -> None:
        obj = event.object
        name = str((obj.get("metadata") or {}).get("name"))
        if event.type == "MODIFIED":
            self.writes[kind] += 1
        if kind == "nodes" and harness.node_ready(obj):
            self.ready_nodes.add(name)
        elif kind.startswith("resourceslices") and event.type != "DELETED":
            self.slices.add(name)
        elif kind == "pods":
            if event.type == "MODIFIED" and name not in self.running:
                self.pod_writes[name] += 1
            if (obj.get("status") or {}).get("phase") == "Running":
                self.running.add(name)


def _serve(data_dir: Path, fleet: Path | None) -> subprocess.Popen[bytes]:
    cmd = [str(CPLANE), "serve", "--data-dir", str(data_dir), "--port", "0", "--insecure", "--log-level", "warning"]
    cmd += ["--fleet", str(fleet)] if fleet is not None else ["--no-controllers"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _serve_inprocess(data_dir: Path, fleet: Path) -> subprocess.Popen[bytes]:
    """One process serving the API with the fleet controller next to it (what `serve --fleet` does)."""
    return subprocess.Popen([sys.executable, "-m", "bench.controllers", "--child-serve", str(data_dir), "--fleet",
                             str(fleet)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def _child_serve(data_dir: Path, fleet_path: Path) -> None:
    import signal

    from api import server as servers
    from controllers.runtime import manager as managers
    from cp import clock as clocks
    from cp import logs

    logs.configure(level="warning")
    fleet = fleets.load_fleet(fleet_path)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    clock = clocks.RealClock()
    async with servers.running(data_dir=data_dir, clock=clock) as srv, clients.Client(srv.url) as client:
        manager = managers.Manager(client=client, clock=clock)
        manager.add(fleets.new(manager.context(), fleet=fleet))
        await manager.run(stop)


def _fleet_process(url: str, fleet: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "controllers.fleet", "--server", url, "--fleet", str(fleet),
                             "--log-level", "warning"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def _create_pods(url: str, nodes: list[str], n: int, concurrency: int) -> float:
    """Create n pods round-robin over `nodes`; returns the seconds the creates took."""
    async with clients.Client(url, user_agent="bench-controllers/v0.1.0") as c:
        with contextlib.suppress(Exception):
            await c.create("namespaces", {"metadata": {"name": NAMESPACE}})
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in range(n):
            queue.put_nowait(i)

        async def worker() -> None:
            while True:
                try:
                    i = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                await c.create("pods", {
                    "metadata": {"name": f"p-{i:05d}", "namespace": NAMESPACE},
                    "spec": {"nodeName": nodes[i % len(nodes)],
                             "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}})

        t = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - t


async def run(args: argparse.Namespace) -> list[tuple[str, str, str, str]]:
    fleet = fleets.load_fleet(args.fleet)
    n_nodes, n_slices = _expected(fleet)
    rows: list[tuple[str, str, str, str]] = []
    results: dict[str, Any] = {"fleet": str(args.fleet), "nodes": n_nodes, "slices": n_slices}
    mode = args.mode
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        fleet_proc: subprocess.Popen[bytes] | None = None
        t0 = time.perf_counter()
        server = (_serve_inprocess(data_dir, args.fleet) if mode == "inprocess"
                  else _serve(data_dir, args.fleet if mode in ("auto", "serve") else None))
        observer: Observer | None = None
        try:
            url = await _wait_ready(data_dir, server, t0 + 30)
            api_ready = time.perf_counter() - t0
            api_ready_cpu = _cpu(server)
            observer = Observer(url)
            observer.start()
            if mode == "auto":
                try:
                    await observer.until(lambda: observer is not None and observer.ready_nodes, 3.0)
                    mode = "serve"
                except TimeoutError:
                    print("bench: `cplane serve --fleet` started no Node within 3 s (not wired yet); measuring "
                          "`cplane serve --no-controllers` + `python -m controllers.fleet` instead", file=sys.stderr)
                    await observer.close()
                    harness.stop(server, timeout=10)
                    return await run(argparse.Namespace(**{**vars(args), "mode": "process"}))
            if mode == "process":
                fleet_proc = _fleet_process(url, args.fleet)
            await observer.until(lambda: len(observer.ready_nodes) >= n_nodes and len(observer.slices) >= n_slices,
                                 120)
            startup = time.perf_counter() - t0
            cpu_startup = _cpu(server, fleet_proc)
            results |= {"mode": mode, "api_ready_s": api_ready, "fleet_ready_s": startup, "startup_cpu_s": cpu_startup,
                        "api_ready_cpu_s": api_ready_cpu,
                        "load_average": harness.load_average()}
            how = {"serve": "cplane serve --fleet", "process": "serve --no-controllers + python -m controllers.fleet",
                   "inprocess": "API + fleet controller in one process"}[mode]
            rows.append((f"{n_nodes} nodes Ready + {n_slices} slices (s)", f"{startup:.2f}", "<= 5",
                         f"{how}; /readyz at {api_ready:.2f} s; {cpu_startup:.2f} CPU-s in server+fleet "
                         f"({api_ready_cpu:.2f} before /readyz); "
                         f"load average {harness.load_average()}; kwok ~20 nodes/s"))

            nodes = sorted(objs.Plan(fleet).nodes)
            t1 = time.perf_counter()
            cpu1 = _cpu(server, fleet_proc)
            create_s = await _create_pods(url, nodes, args.pods, args.concurrency)
            await observer.until(lambda: len(observer.running) >= args.pods, 120)
            elapsed = time.perf_counter() - t1
            cpu_pods = _cpu(server, fleet_proc) - cpu1
            writes = [observer.pod_writes[f"p-{i:05d}"] for i in range(args.pods)]
            rate = args.pods / elapsed
            results |= {"pods": args.pods, "pods_running_s": elapsed, "pods_per_s": rate, "create_s": create_s,
                        "status_writes_per_pod": sum(writes) / len(writes), "max_writes_per_pod": max(writes),
                        "pods_cpu_s": cpu_pods}
            rows.append((f"{args.pods} bound pods -> Running (pods/s)", f"{rate:.0f}", ">= 200",
                         f"{elapsed:.2f} s; creates alone took {create_s:.2f} s ({args.pods / create_s:.0f}/s, "
                         f"{args.concurrency} clients); {cpu_pods:.2f} CPU-s in server+fleet"))
            rows.append(("status writes per pod to Running", f"{sum(writes) / len(writes):.2f}", "1",
                         f"max {max(writes)}"))

            if args.steady > 0:
                before = dict(observer.writes)
                await asyncio.sleep(args.steady)
                leases = (observer.writes["leases.coordination.k8s.io"] -
                          before.get("leases.coordination.k8s.io", 0)) / args.steady
                node_writes = (observer.writes["nodes"] - before.get("nodes", 0)) / args.steady
                others = sum(v - before.get(k, 0) for k, v in observer.writes.items()
                             if k not in ("nodes", "leases.coordination.k8s.io"))
                results |= {"lease_writes_per_s": leases, "node_status_writes_per_s": node_writes,
                            "other_writes_in_steady_state": others}
                k = fleet.kubelet
                rows.append(("steady heartbeat writes/s (leases + nodes)", f"{leases + node_writes:.0f}",
                             f"~{n_nodes / k.lease_renew_interval_seconds:.0f}+"
                             f"{n_nodes / k.status_report_interval_seconds:.0f}",
                             f"leases {leases:.1f}/s, node status {node_writes:.1f}/s, slices+pods {others} "
                             f"writes over {args.steady:.0f} s "
                             f"(renewal every {k.lease_renew_interval_seconds:g} s, status every "
                             f"{k.status_report_interval_seconds:g} s)"))
        finally:
            if observer is not None:
                await observer.close()
            harness.stop(fleet_proc, server, timeout=10)
    print(json.dumps(results, default=float), file=sys.stderr)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.controllers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fleet", type=Path, default=LARGE)
    p.add_argument("--pods", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--steady", type=float, default=10.0, help="seconds of steady-state heartbeat measurement")
    p.add_argument("--mode", choices=("auto", "serve", "process", "inprocess"), default="auto",
                   help="auto: serve --fleet if it is wired, else process; inprocess: the API and the fleet "
                        "controller in one process, as serve --fleet will run them")
    p.add_argument("--quick", action="store_true", help="200 pods, no steady-state phase")
    p.add_argument("--child-serve", type=Path, default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child_serve is not None:
        asyncio.run(_child_serve(args.child_serve, args.fleet))
        return
    if args.quick:
        args.pods, args.steady = 200, 0.0
    rows = asyncio.run(run(args))
    width = max(len(r[0]) for r in rows)
    print(f"{'measure'.ljust(width)}  {'value':>8}  {'target':>8}  reference / detail")
    for name, value, target, ref in rows:
        print(f"{name.ljust(width)}  {value:>8}  {target:>8}  {ref}")


if __name__ == "__main__":
    main()
