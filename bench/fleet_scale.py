"""Fleet at scale (issue #22): 10,000 simulated nodes, their Leases and ResourceSlices.

Run: `.venv/bin/python -m bench.fleet_scale [--fleet FILE] [--nodes N] [--steady S] [--controllers]
[--kubelet-dirs]`.

What runs (each its own process, on a fresh SQLite data dir):
- the API server: `cplane serve --no-controllers --insecure`;
- with `--controllers`, the controller manager as its own process: `cplane controllers --server URL
  --only -fleet` (every controller `make run` runs but the fleet, which runs next; its CPU counts
  with the server's as "server + controllers");
- the fleet: `python -m controllers.fleet --server URL --fleet FILE`, started once /readyz answers:
  real API clients writing over HTTP (Node create + status, Lease create + renewals in
  kube-node-lease, ResourceSlices);
- this process: watch-list streams of nodes, slices and kube-node-lease Leases (it does not count
  in the CPU figures, but the server's fan-out to it does).

Measured:
1. Start-up: from starting the fleet process until every Node is Ready and every ResourceSlice is
   published (goal <= 60 s at 10,000 nodes), with the CPU seconds of server + fleet.
2. Steady state over `--steady` seconds (default 30) after a settle time: Lease ages (seconds since
   the last renewal event this process saw, max and the count older than 40 s, sampled each second),
   heartbeat writes (Lease + Node MODIFIED events) against those due per the fleet's intervals,
   the CPU seconds of the server and fleet processes from /proc/PID/stat, cores used and CPU ms
   per heartbeat (goals: <= 1 core, <= 0.5 ms).

Figures are printed beside the goals and beside the issue's reference points (main, measured at
5,000 nodes: 2.5-3.1 ms CPU per heartbeat; 57 % of heartbeats written; 1,021 Leases older than 40 s;
46-53 s to Ready). `--profile DIR` runs both processes under cProfile (slower; for finding hot spots).
The machine is shared: wall-clock figures are printed with the load average; CPU per heartbeat is
the reliable one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench import harness
from controllers import fleet as fleets
from controllers.fleet import objects as objs
from controllers.runtime import client as clients

ROOT = Path(__file__).resolve().parent.parent
FLEET_10K = ROOT / "examples" / "fleets" / "10k.yaml"
LEASE_NS = "kube-node-lease"
STALE = 40.0  # node-monitor-grace-period: a Lease older than this makes the node NotReady
GOAL_READY_S = 60.0
GOAL_CORES = 1.0
GOAL_MS_PER_HEARTBEAT = 0.5
MAIN_REFERENCE = {
    "ms_per_heartbeat": "2.5-3.1 ms (main)",
    "ready": "46-53 s at 5,000 nodes (main)",
    "stale": "1,021 of 5,000 (main)",
    "written": "57 % at 5,000 nodes (main)",
}


def _cpu(*procs: subprocess.Popen[bytes] | None) -> float:
    return sum(harness.cpu_seconds(p.pid) or 0.0 for p in procs if p is not None)


class Observer(harness.Watcher):
    """Nodes Ready, slices published, and when each Lease / Node was last written (watch-list)."""

    def __init__(self, url: str) -> None:
        super().__init__(url, user_agent="bench-fleet-scale/v0.1.0",
                         watches=[("nodes", None), ("resourceslices.resource.k8s.io", None),
                                  ("leases.coordination.k8s.io", LEASE_NS)])
        self.ready: set[str] = set()
        self.slices: set[str] = set()
        self.lease_seen: dict[str, float] = {}  # lease name -> monotonic time of its last event
        self.node_seen: dict[str, float] = {}  # node name -> monotonic time of its last event
        self.lease_writes = 0
        self.node_writes = 0
        self.other_writes = 0

    def apply(self, kind: str, event: clients.WatchEvent) -> None:
        obj = event.object
        name = str((obj.get("metadata") or {}).get("name"))
        if kind == "nodes":
            if event.type == "MODIFIED":
                self.node_writes += 1
            self.node_seen[name] = time.monotonic()
            if harness.node_ready(obj):
                self.ready.add(name)
        elif kind.startswith("leases"):
            if event.type == "MODIFIED":
                self.lease_writes += 1
            if event.type == "DELETED":
                self.lease_seen.pop(name, None)
            else:
                self.lease_seen[name] = time.monotonic()
        else:
            if event.type == "MODIFIED":
                self.other_writes += 1
            if event.type != "DELETED":
                self.slices.add(name)

    def ages(self) -> list[float]:
        now = time.monotonic()
        return [now - t for t in self.lease_seen.values()]


def _python(profile: Path | None, name: str) -> list[str]:
    return [sys.executable, *(["-m", "cProfile", "-o", str(profile / f"{name}.prof")] if profile else [])]


def _env(code: Path | None) -> dict[str, str] | None:
    """The environment of the measured processes: with `code`, its packages come first on the path
    (another checkout of cplane, e.g. main's, run by this interpreter; no bytecode written there)."""
    if code is None:
        return None
    return {**os.environ, "PYTHONPATH": str(code), "PYTHONDONTWRITEBYTECODE": "1"}


def _serve(data_dir: Path, *, profile: Path | None, code: Path | None) -> subprocess.Popen[bytes]:
    cmd = [*_python(profile, "server"), "-m", "cp.cli", "serve", "--data-dir", str(data_dir), "--port", "0",
           "--insecure", "--log-level", "warning", "--no-controllers"]
    return subprocess.Popen(cmd, cwd=code or ROOT, env=_env(code), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _controllers(url: str, *, profile: Path | None, code: Path | None) -> subprocess.Popen[bytes]:
    cmd = [*_python(profile, "controllers"), "-m", "cp.cli", "controllers", "--server", url, "--only=-fleet",
           "--log-level", "warning"]
    return subprocess.Popen(cmd, cwd=code or ROOT, env=_env(code), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _fleet(url: str, fleet: Path, *, profile: Path | None, log: Path, code: Path | None,
           root_dir: Path | None = None) -> subprocess.Popen[bytes]:
    cmd = [*_python(profile, "fleet"), "-m", "controllers.fleet", "--server", url, "--fleet", str(fleet),
           "--log-level", "warning", *(["--root-dir", str(root_dir)] if root_dir is not None else [])]
    with log.open("wb") as f:
        return subprocess.Popen(cmd, cwd=code or ROOT, env=_env(code), stdout=subprocess.DEVNULL, stderr=f)


def _py_spy(out: Path | None, procs: dict[str, subprocess.Popen[bytes] | None]) -> list[harness.Sampler]:
    """py-spy samplers (collapsed stacks in OUT/NAME.txt) from now until they are stopped, when asked."""
    if out is None:
        return []
    return [harness.Sampler(pid=p.pid, out=out / f"{name}.txt", rate=100) for name, p in procs.items()
            if p is not None]


def _fleet_file(path: Path, nodes: int | None, tmp: Path) -> Path:
    """The fleet file, or a copy whose single pool has `nodes` nodes."""
    if nodes is None:
        return path
    doc = yaml.safe_load(path.read_text())
    pools = doc["nodePools"]
    if len(pools) != 1:
        raise SystemExit("--nodes needs a fleet with one node pool")
    pools[0]["count"] = nodes
    out = tmp / f"fleet-{nodes}.yaml"
    out.write_text(yaml.safe_dump(doc))
    return out


async def run(args: argparse.Namespace, *, code: Path | None = None
              ) -> tuple[list[tuple[str, str, str, str]], dict[str, Any]]:
    rows: list[tuple[str, str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        fleet_path = _fleet_file(args.fleet, args.nodes, tmp)
        fleet = fleets.load_fleet(fleet_path)
        plan = objs.Plan(fleet)
        n_nodes = fleet.node_count()
        n_slices = sum(len(objs.slices_for(plan, plan.nodes[p.node_name(0)])) * p.count
                       for p in fleet.node_pools if p.count)
        k = fleet.kubelet
        results: dict[str, Any] = {"fleet": str(args.fleet), "nodes": n_nodes, "slices": n_slices,
                                   "server": "cplane serve --no-controllers" +
                                             (" + cplane controllers --only=-fleet" if args.controllers else ""),
                                   "lease_renew_s": k.lease_renew_interval_seconds,
                                   "status_report_s": k.status_report_interval_seconds}
        data_dir = tmp / "data"
        server = _serve(data_dir, profile=args.profile, code=code)
        manager: subprocess.Popen[bytes] | None = None
        fleet_proc: subprocess.Popen[bytes] | None = None
        observer: Observer | None = None
        try:
            url = await harness.wait_ready(data_dir, server, time.perf_counter() + 60)
            if args.controllers:
                manager = _controllers(url, profile=args.profile, code=code)
            observer = Observer(url)
            observer.start()
            cpu0 = _cpu(server, manager)
            t0 = time.perf_counter()
            fleet_proc = _fleet(url, fleet_path, profile=args.profile, log=tmp / "fleet.log", code=code,
                                root_dir=data_dir / "nodes" if args.kubelet_dirs else None)
            startup_spies = _py_spy(args.py_spy, {"server-startup": server, "fleet-startup": fleet_proc})
            try:
                await observer.until(lambda: len(observer.ready) >= n_nodes and len(observer.slices) >= n_slices,
                                     args.ready_timeout)
            except TimeoutError:
                print(f"bench: not all Ready within {args.ready_timeout:.0f} s: {len(observer.ready)} nodes, "
                      f"{len(observer.slices)} slices", file=sys.stderr)
                raise
            startup = time.perf_counter() - t0
            startup_cpu = _cpu(server, manager, fleet_proc) - cpu0
            startup_server_cpu = _cpu(server, manager) - cpu0
            for spy in startup_spies:
                spy.stop()
            results |= {"ready_s": startup, "ready_cpu_s": startup_cpu, "ready_server_cpu_s": startup_server_cpu,
                        "ready_load": harness.load_average(all_three=True)}
            rows.append((f"{n_nodes} nodes Ready + {n_slices} slices (s)", f"{startup:.1f}", f"<= {GOAL_READY_S:g}",
                         f"{startup_cpu:.1f} CPU-s (server{'+controllers' if manager else ''} {startup_server_cpu:.1f}); load {harness.load_average(all_three=True)}; ref {MAIN_REFERENCE['ready']}"))

            # Settle: every node has renewed at least once since start-up finished.
            await asyncio.sleep(args.settle)
            w0 = (observer.lease_writes, observer.node_writes, observer.other_writes)
            lease_phase, node_phase = dict(observer.lease_seen), dict(observer.node_seen)
            c0 = (_cpu(server, manager), _cpu(fleet_proc))
            spies = _py_spy(args.py_spy, {"server": server, "fleet": fleet_proc,
                                          "controllers": manager})
            t1 = time.perf_counter()
            max_age, worst_stale = 0.0, 0
            while time.perf_counter() - t1 < args.steady:
                await asyncio.sleep(1.0)
                ages = observer.ages()
                max_age = max(max_age, max(ages, default=0.0))
                worst_stale = max(worst_stale, sum(1 for a in ages if a > STALE))
            window = time.perf_counter() - t1
            c1 = (_cpu(server, manager), _cpu(fleet_proc))
            for spy in spies:
                spy.stop()
            leases = observer.lease_writes - w0[0]
            node_writes = observer.node_writes - w0[1]
            others = observer.other_writes - w0[2]
            server_cpu, fleet_cpu = c1[0] - c0[0], c1[1] - c0[1]
            heartbeats = leases + node_writes
            # Due in the window, from when each Lease / Node was last written before it began.
            end = time.monotonic()
            leases_due = sum(int((end - t) // k.lease_renew_interval_seconds) for t in lease_phase.values())
            status_due = sum(int((end - t) // k.status_report_interval_seconds) for t in node_phase.values())
            due = leases_due + status_due
            cores = (server_cpu + fleet_cpu) / window
            ms = 1000 * (server_cpu + fleet_cpu) / heartbeats if heartbeats else float("inf")
            results |= {"steady_s": window, "lease_writes": leases, "node_status_writes": node_writes,
                        "leases_due": leases_due, "node_status_due": status_due,
                        "other_writes": others, "heartbeats_due": due, "max_lease_age_s": max_age,
                        "leases_older_than_40s": worst_stale, "server_cpu_s": server_cpu, "fleet_cpu_s": fleet_cpu,
                        "cores": cores, "cpu_ms_per_heartbeat": ms,
                        "server_ms_per_heartbeat": 1000 * server_cpu / heartbeats if heartbeats else None,
                        "fleet_ms_per_heartbeat": 1000 * fleet_cpu / heartbeats if heartbeats else None,
                        "steady_load": harness.load_average(all_three=True)}
            rows.append(("CPU ms per heartbeat (server+fleet)", f"{ms:.2f}", f"<= {GOAL_MS_PER_HEARTBEAT:g}",
                         f"{'server+controllers' if manager else 'server'} {1000 * server_cpu / max(heartbeats, 1):.2f} + fleet "
                         f"{1000 * fleet_cpu / max(heartbeats, 1):.2f}; ref {MAIN_REFERENCE['ms_per_heartbeat']}"))
            rows.append(("cores used in steady state", f"{cores:.2f}", f"<= {GOAL_CORES:g}",
                         f"{'server+controllers' if manager else 'server'} {server_cpu:.1f} + fleet {fleet_cpu:.1f} CPU-s over {window:.0f} s; "
                         f"load {harness.load_average(all_three=True)}"))
            rows.append(("heartbeats written / due (%)", f"{100 * heartbeats / max(due, 1):.0f}", "100",
                         f"{leases}/{leases_due} lease renewals + {node_writes}/{status_due} node status writes "
                         f"(every {k.lease_renew_interval_seconds:g} s / {k.status_report_interval_seconds:g} s); "
                         f"{others} slice writes; ref {MAIN_REFERENCE['written']}"))
            rows.append(("max Lease age (s)", f"{max_age:.1f}", f"<= {STALE:g}",
                         f"sampled each second; renewal every {k.lease_renew_interval_seconds:g} s"))
            rows.append((f"Leases older than {STALE:g} s", str(worst_stale), "0",
                         f"worst sample; ref {MAIN_REFERENCE['stale']}"))
        finally:
            if observer is not None:
                await observer.close()
            harness.stop(fleet_proc, manager, timeout=60)
            harness.stop(server, timeout=60)
            log = tmp / "fleet.log"
            if fleet_proc is not None and fleet_proc.returncode not in (0, -15) and log.exists():
                tail = log.read_text(errors="replace").splitlines()[-5:]
                print("fleet stderr (last lines):\n  " + "\n  ".join(tail), file=sys.stderr)
    return rows, results


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.fleet_scale", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fleet", type=Path, default=FLEET_10K)
    p.add_argument("--nodes", type=int, default=None, help="override the (single) pool's node count")
    p.add_argument("--steady", type=float, default=60.0, help="seconds of steady-state measurement (>= 30)")
    p.add_argument("--settle", type=float, default=12.0, help="seconds between Ready and the steady window")
    p.add_argument("--ready-timeout", type=float, default=300.0)
    p.add_argument("--controllers", action="store_true",
                   help="also run `cplane controllers --only=-fleet` (the controllers `make run` runs, but the fleet) "
                        "as its own process; its CPU counts with the server's")
    p.add_argument("--profile", type=Path, default=None, metavar="DIR",
                   help="run server and fleet under cProfile, writing DIR/server.prof and DIR/fleet.prof")
    p.add_argument("--py-spy", type=Path, default=None, metavar="DIR",
                   help="sample server and fleet with py-spy over the steady window (DIR/server.txt, DIR/fleet.txt, "
                        "collapsed stacks; needs py-spy next to the interpreter)")
    p.add_argument("--baseline", type=Path, default=None, metavar="DIR",
                   help="first measure the same with the cplane code in DIR (e.g. `git archive main | tar -x -C "
                        "DIR`), and print its figures beside this tree's")
    p.add_argument("--kubelet-dirs", action="store_true",
                   help="give the fleet its nodes' kubelet directories (`--root-dir DATA_DIR/nodes`, as "
                        "`cplane serve` does): plugin registries watched, node kubeconfigs written")
    p.add_argument("--json", action="store_true", help="print the raw figures as JSON too")
    args = p.parse_args()
    for opt in ("profile", "py_spy"):
        if getattr(args, opt) is not None:
            setattr(args, opt, getattr(args, opt).resolve())
            getattr(args, opt).mkdir(parents=True, exist_ok=True)
    base: list[tuple[str, str, str, str]] | None = None
    if args.baseline is not None:
        try:
            base, base_results = asyncio.run(run(args, code=args.baseline.resolve()))
        except TimeoutError:
            print("bench: the baseline did not bring the fleet up in time", file=sys.stderr)
        else:
            if args.json:
                print(json.dumps({"baseline": str(args.baseline), **base_results}, default=float))
    rows, results = asyncio.run(run(args))
    if args.json:
        print(json.dumps(results, default=float))
    print(f"# {results['nodes']} nodes: {results['server']} + python -m controllers.fleet (own processes)")
    width = max(len(r[0]) for r in rows)
    before = {name: value for name, value, _, _ in base} if base else {}
    print(f"{'measure'.ljust(width)}  {'value':>8}  {'goal':>8}" + (f"  {'baseline':>8}" if base else "") +
          "  detail / reference")
    for name, value, goal, ref in rows:
        print(f"{name.ljust(width)}  {value:>8}  {goal:>8}" + (f"  {before.get(name, '-'):>8}" if base else "") +
              f"  {ref}")


if __name__ == "__main__":
    main()
