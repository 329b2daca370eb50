"""Job benchmark (issue #20): an Indexed Job whose pods each take one GPU through a claim template,
end to end on the simulated fleet, in wall-clock time.

Run: `.venv/bin/python -m bench.job_perf [--quick] [--completions N] [--nodes N] [--parallelism N]
[--run-seconds S] [--profile FILE]`.

Four processes: the API server (`cplane serve --insecure --no-controllers`, SQLite event log), the
fleet (`python -m controllers.fleet`: Nodes with 10 GPUs each, their kubelets and DRA drivers),
the controllers (`python -m controllers --only job,scheduler,resourceclaim`) and this driver, which
creates the ResourceClaimTemplate and the Job and watches the Job's status. Every pod runs
`--run-seconds` (default 1 s) of real time and exits 0; each needs its claim created, allocated,
reserved, prepared, then released, deallocated and deleted, and its tracking finalizer removed.

Figures: pods completed per second = completions / (time from the Job's create to its Complete
condition), and the same rate over the middle 80 % of completions (sampled from
`status.succeeded`), with the CPU seconds of each process. Default: 5,000 completions, parallelism
1,000, 500 nodes; `--quick`: 500 completions, parallelism 200, 50 nodes. Then, in the same run,
`bench.scheduler_perf`'s SchedulingWithResourceClaimTemplate workload (its `--quick` variant with
`--quick`) for the scheduler's own pods/s beside it (`--no-reference` skips it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import harness
from controllers.runtime import client as clients

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[1]
DRIVER = "gpu.example.com"


def fleet_file(path: Path, nodes: int) -> Path:
    fleet = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "job-perf"},
             "network": {"podCIDR": "10.128.0.0/9"},
             "nodePools": [{"name": "gpu", "count": nodes,
                            "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
                            "drivers": [{"name": DRIVER, "devices": [{"type": "gpu", "count": 10, "model": "H100"}]}]}]}
    path.write_text(json.dumps(fleet))
    return path


def start(cmd: list[str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log.open("wb"), cwd=str(ROOT))


def job(completions: int, parallelism: int, run_seconds: float) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train"},
            "spec": {"completionMode": "Indexed", "completions": completions, "parallelism": parallelism,
                     "template": {"metadata": {"annotations": {"sim.cplane.dev/run-seconds": str(run_seconds)}},
                                  "spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "shard", "image": "registry.k8s.io/pause:3.10",
                                                           "resources": {"claims": [{"name": "gpu"}]}}],
                                           "resourceClaims": [{"name": "gpu",
                                                               "resourceClaimTemplateName": "one-gpu"}]}}}}


async def drive(url: str, args: argparse.Namespace, procs: dict[str, subprocess.Popen[bytes]]) -> dict[str, Any]:
    async with clients.Client(url) as client:
        deadline = time.perf_counter() + 600
        slices: list[dict[str, Any]] = []
        while time.perf_counter() < deadline:  # the fleet's slices and classes
            dead = [name for name, proc in procs.items() if proc.poll() is not None]
            if dead:
                raise RuntimeError(f"{', '.join(dead)} exited (see its log)")
            slices = (await client.list("resourceslices.resource.k8s.io")).items
            classes = (await client.list("deviceclasses.resource.k8s.io")).items
            if len(slices) >= args.nodes and classes:
                break
            await asyncio.sleep(1.0)
        else:
            raise TimeoutError(f"fleet not up: {len(slices)} of {args.nodes} nodes' slices")
        await client.create("resourceclaimtemplates.resource.k8s.io", {
            "metadata": {"name": "one-gpu"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}}},
            namespace="default")
        samples: list[tuple[float, int]] = []
        t0 = time.perf_counter()
        await client.create("jobs.batch", job(args.completions, args.parallelism, args.run_seconds), namespace="default")
        limit = t0 + args.timeout
        while time.perf_counter() < limit:
            obj = await client.get("jobs.batch", "train", namespace="default")
            status = obj.get("status") or {}
            samples.append((time.perf_counter() - t0, int(status.get("succeeded") or 0)))
            if any(c.get("type") == "Complete" and c.get("status") == "True" for c in status.get("conditions") or []):
                break
            await asyncio.sleep(0.25)
        else:
            raise TimeoutError(f"job not complete after {args.timeout} s: {samples[-1]}")
        total = samples[-1][0]
        pods = (await client.list("pods", namespace="default", label_selector="batch.kubernetes.io/job-name=train")).items
        lo, hi = int(args.completions * 0.1), int(args.completions * 0.9)
        t_lo = next(t for t, n in samples if n >= lo)
        t_hi = next(t for t, n in samples if n >= hi)
        return {"completions": args.completions, "pods_created": len(pods), "seconds": round(total, 1),
                "pods_per_s": round(args.completions / total, 1),
                "pods_per_s_middle_80": round((hi - lo) / (t_hi - t_lo), 1) if t_hi > t_lo else None}


async def main_async(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="job-perf-") as tmp:
        work = Path(tmp)
        server = start([str(BIN / "cplane"), "serve", "--data-dir", str(work / "data"), "--port", "0", "--insecure",
                        "--no-controllers", "--log-level", "warning"], work / "server.log")
        procs = {"server": server}
        try:
            url = await harness.wait_ready(work / "data", server, time.perf_counter() + 60)
            procs["fleet"] = start([str(BIN / "python"), "-m", "controllers.fleet", "--server", url, "--fleet",
                                    str(fleet_file(work / "fleet.json", args.nodes)), "--log-level", "warning"],
                                   work / "fleet.log")
            profile = ["-m", "cProfile", "-o", args.profile] if args.profile else []
            procs["controllers"] = start([str(BIN / "python"), *profile, "-m", "controllers", "--server", url, "--only",
                                          "job,scheduler,resourceclaim", "--log-level", "warning"],
                                         work / "controllers.log")
            cpu0 = {name: harness.cpu_seconds(p.pid) or 0.0 for name, p in procs.items()}
            result = await drive(url, args, procs)
            result["cpu_seconds"] = {name: round((harness.cpu_seconds(p.pid) or 0.0) - cpu0[name], 1)
                                     for name, p in procs.items()}
            result.update(nodes=args.nodes, parallelism=args.parallelism, run_seconds=args.run_seconds)
        finally:
            for proc in reversed(procs.values()):
                harness.stop(proc, sig=signal.SIGINT)
    if not args.no_reference:
        result["reference"] = await _reference(quick=args.quick)
    _print(result)
    return 0


async def _reference(*, quick: bool) -> dict[str, Any]:
    """`bench.scheduler_perf`'s claim-template workload, in the same run: the pods/s the scheduler
    reaches on its own, beside which the Job's end-to-end figure stands."""
    from bench import scheduler_perf

    w = next(w for w in scheduler_perf.workloads(quick) if w.name.startswith("SchedulingWithResourceClaimTemplate/"))
    ref_args = argparse.Namespace(controllers_log_level="warning", db=None, keep_logs=None, profile=None,
                                  profile_format="text", seed=1, verbose=False)
    r = await scheduler_perf.run_workload(w, ref_args)
    return {"workload": w.name, "pods_per_s": round(float(r["average"]), 1)}


def _print(result: dict[str, Any]) -> None:
    cpu = result["cpu_seconds"]
    rows = [(f"Job of {result['completions']} one-GPU pods, {result['nodes']} nodes: completed pods/s",
             f"{result['pods_per_s']:.1f}",
             f"{result['seconds']} s; middle 80 %: {result['pods_per_s_middle_80']}/s; CPU s server "
             f"{cpu.get('server')} / fleet {cpu.get('fleet')} / controllers {cpu.get('controllers')}")]
    ref = result.get("reference")
    if ref:
        rows.append((f"bench.scheduler_perf {ref['workload']} (same run): pods/s", f"{ref['pods_per_s']:.1f}",
                     "scheduling only"))
    width = max(len(r[0]) for r in rows)
    for name, value, detail in rows:
        print(f"{name.ljust(width)}  {value:>7}  {detail}")
    print(json.dumps(result), file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="500 completions, parallelism 200, 50 nodes")
    parser.add_argument("--completions", type=int, default=5000)
    parser.add_argument("--parallelism", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--run-seconds", type=float, default=1.0)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--profile", metavar="FILE", help="run the controllers under cProfile, write FILE")
    parser.add_argument("--no-reference", action="store_true",
                        help="skip bench.scheduler_perf's claim-template workload after the Job")
    args = parser.parse_args()
    if args.profile:
        args.profile = str(Path(args.profile).resolve())
    if args.quick:
        args.completions, args.parallelism, args.nodes = 500, 200, 50
    sys.exit(asyncio.run(main_async(args)))


if __name__ == "__main__":
    main()
