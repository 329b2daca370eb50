"""Before and after in one run: start-up, creates/s, LISTs and watch fan-out (`bench.api`) and the DRA
allocator (`bench.allocator`) of an earlier commit beside the working tree, alternating, with py-spy
profiles of both servers.

Run: `.venv/bin/python -m bench.compare --base REV [--rounds N] [--quick] [--py-spy DIR]`.

The earlier commit is checked out in a temporary `git worktree`; both sides run this tree's benchmark
drivers against their own code (`python -P` with `PYTHONPATH` naming this tree's `bench` package first,
then the side's tree, which the spawned `cplane serve` inherits), in the same virtualenv — so a
dependency added since REV would make REV's side fail to import, and is reported. Rounds alternate
the order (before, after; after, before; ...) so that a change of the machine's load falls on both.

`--py-spy DIR` samples each side's server through the first round's creates, LISTs and watches
(`bench.api --py-spy`) and prints the functions with most samples of each; the collapsed stacks stay
in DIR (`before.txt`, `after.txt`) for a flame graph.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import harness

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cp", "api", "storage", "controllers", "migrations")

# (label, the figure's key in bench.api's JSON, format, better when higher)
API_FIGURES = [
    ("start-up to /readyz (s)", "startup_s", "{:.3f}", False),
    ("creates/s ConfigMap 1 KB", "configmaps.per_s", "{:.0f}", True),
    ("  server CPU µs/create", "configmaps.server_cpu_us", "{:.0f}", False),
    ("creates/s ResourceClaim", "claims.per_s", "{:.0f}", True),
    ("  server CPU µs/create", "claims.server_cpu_us", "{:.0f}", False),
    ("LIST pods JSON (ms)", "list_json_ms", "{:.0f}", False),
    ("LIST pods Table (ms)", "list_table_ms", "{:.0f}", False),
    # 10,000 pods and 1,000 watches; 2,000 and 200 with --quick
    ("watch fan-out p99 (ms)", "watch_p99_ms", "{:.1f}", False),
    ("watch fan-out p50 (ms)", "watch_p50_ms", "{:.1f}", False),
]
ALLOCATOR_FIGURES = [(f"allocator warm µs/node, {d} devices", f"{d}.warm_node_us", "{:.1f}", False)
                     for d in ("10", "100", "1000")]


def _figure(results: dict[str, Any], key: str) -> float | None:
    value: Any = results
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return float(value)


def _worktree(rev: str, where: Path) -> Path:
    tree = where / "base"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force", str(tree), rev],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return tree


def _env(tree: Path, shim: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{shim}{os.pathsep}{tree}"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _run(module: str, args: list[str], *, tree: Path, shim: Path, out: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-P", "-m", module, *args, "--json-out", str(out)]
    proc = subprocess.run(cmd, env=_env(tree, shim), cwd=tree, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, check=False)
    if proc.returncode != 0 or not out.exists():
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-5:]
        raise RuntimeError(f"{module} on {tree} failed ({proc.returncode}): " + " | ".join(tail))
    result: dict[str, Any] = json.loads(out.read_text())
    out.unlink()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, metavar="REV", help="the earlier commit (e.g. main~5, a hash)")
    parser.add_argument("--rounds", type=int, default=2, metavar="N", help="runs of each side, alternating")
    parser.add_argument("--quick", action="store_true", help="bench.api --quick and bench.allocator --quick")
    parser.add_argument("--py-spy", type=Path, default=None, metavar="DIR",
                        help="sample both servers with py-spy in the first round; profiles kept in DIR")
    args = parser.parse_args()
    quick = ["--quick"] if args.quick else []
    with tempfile.TemporaryDirectory(prefix="cplane-compare-") as tmp:
        scratch = Path(tmp)
        shim = scratch / "shim"
        shim.mkdir()
        (shim / "bench").symlink_to(ROOT / "bench")
        base = _worktree(args.base, scratch)
        try:
            for tree in (base, ROOT):
                for package in PACKAGES:
                    compileall.compile_dir(tree / package, quiet=1)
            sides = {"before": base, "after": ROOT}
            api: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
            alloc: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
            for round_ in range(args.rounds):
                order = ("before", "after") if round_ % 2 == 0 else ("after", "before")
                for side in order:
                    spy: list[str] = []
                    if args.py_spy is not None and round_ == 0:
                        args.py_spy.mkdir(parents=True, exist_ok=True)
                        spy = ["--py-spy", str(args.py_spy.resolve() / f"{side}.txt")]
                    print(f"round {round_ + 1}/{args.rounds}: {side} ({sides[side]})", file=sys.stderr)
                    api[side].append(_run("bench.api", quick + spy, tree=sides[side], shim=shim,
                                          out=scratch / "api.json"))
                    alloc[side].append(_run("bench.allocator", ["--quick"], tree=sides[side], shim=shim,
                                            out=scratch / "alloc.json"))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _table(api, alloc, args)
    if args.py_spy is not None:
        for side in ("before", "after"):
            print(f"\npy-spy, {side}: the server's functions with most samples (self %, total %)")
            for function, own, total in harness.top_frames(args.py_spy / f"{side}.txt"):
                print(f"  {own:5.1f} {total:5.1f}  {function}")


def _table(api: dict[str, list[dict[str, Any]]], alloc: dict[str, list[dict[str, Any]]],
           args: argparse.Namespace) -> None:
    print(f"\nbefore = {args.base}, after = the working tree; {args.rounds} round(s) each, median "
          f"(all runs); load average {Path('/proc/loadavg').read_text().split()[0]}")
    width = 40
    print(f"{'measure'.ljust(width)}  {'before':>22}  {'after':>22}  change")
    for figures, runs in ((API_FIGURES, api), (ALLOCATOR_FIGURES, alloc)):
        for label, key, fmt, higher in figures:
            cells = []
            medians: list[float | None] = []
            for side in ("before", "after"):
                values = [v for v in (_figure(r, key) for r in runs[side]) if v is not None]
                if not values:
                    cells.append("-")
                    medians.append(None)
                    continue
                median = statistics.median(values)
                medians.append(median)
                cells.append(f"{fmt.format(median)} ({', '.join(fmt.format(v) for v in values)})")
            change = ""
            if medians[0] and medians[1] is not None:
                delta = (medians[1] - medians[0]) / medians[0] * 100
                better = (delta > 0) == higher
                change = f"{delta:+.0f} %" + ("" if abs(delta) < 5 else (" better" if better else " worse"))
            print(f"{label.ljust(width)}  {cells[0]:>22}  {cells[1]:>22}  {change}")


if __name__ == "__main__":
    main()
