"""Custom resource benchmark (issue #19): what a create of a custom resource whose definition has one
CEL rule (`x-kubernetes-validations`) costs, beside a ConfigMap create in the same server and run.

Run: `.venv/bin/python -m bench.crds [--quick]`. The server runs as its own process (`cplane serve
--insecure --no-controllers`) on a fresh SQLite data dir; the load comes from this process over HTTP
(32 clients). The target: a custom resource create costs at most twice a ConfigMap create, in server
CPU per create and in creates/s. Rounds alternate ConfigMaps and custom resources, so load on the
machine falls on both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from bench import api as api_bench
from bench import harness

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gpupools.bench.example.com"},
    "spec": {
        "group": "bench.example.com",
        "scope": "Namespaced",
        "names": {"plural": "gpupools", "singular": "gpupool", "kind": "GPUPool"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}},
            "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object",
                         "x-kubernetes-validations": [{"rule": "self.size <= self.maxSize",
                                                       "message": "size must not exceed maxSize"}],
                         "properties": {"size": {"type": "integer", "minimum": 0},
                                        "maxSize": {"type": "integer"},
                                        "model": {"type": "string", "maxLength": 64},
                                        "payload": {"type": "string", "maxLength": 2048}}},
                "status": {"type": "object", "properties": {"ready": {"type": "integer"}}}}}},
        }],
    },
}
PATH = "/apis/bench.example.com/v1/namespaces/default/gpupools"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def _pool(i: int) -> dict[str, Any]:
    return {"apiVersion": "bench.example.com/v1", "kind": "GPUPool", "metadata": {"name": f"pool-{i}"},
            "spec": {"size": 2, "maxSize": 8, "model": "A100", "payload": "x" * 800}}


async def _establish(url: str) -> None:
    async with aiohttp.ClientSession(base_url=url) as s:
        async with s.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=CRD) as r:
            assert r.status == 201, await r.text()
        deadline = time.perf_counter() + 10
        while time.perf_counter() < deadline:
            async with s.get(PATH) as r:
                if r.status == 200:
                    return
            await asyncio.sleep(0.01)
    raise RuntimeError("the definition was not served within 10 s")


async def main_async(quick: bool) -> None:
    n = 1000 if quick else 4000
    rounds = 2 if quick else 3
    out: dict[str, list[dict[str, float]]] = {"configmaps": [], "crs": []}
    with tempfile.TemporaryDirectory() as tmp:
        proc = api_bench._start(Path(tmp))
        try:
            url = await harness.wait_ready(Path(tmp), proc, time.perf_counter() + 30)
            await _establish(url)
            # Untimed warm-up: the first custom resource compiles the schema and the CEL rule.
            await api_bench._creates(url, PATH, [_pool(-i) for i in range(1, 33)], 32)
            await api_bench._creates(url, CONFIGMAPS, [api_bench._configmap(-i) for i in range(1, 33)], 32)
            for r in range(rounds):
                out["configmaps"].append(await api_bench._creates(
                    url, CONFIGMAPS, [api_bench._configmap(r * n + i) for i in range(n)], 32, server_pid=proc.pid))
                out["crs"].append(await api_bench._creates(
                    url, PATH, [_pool(r * n + i) for i in range(n)], 32, server_pid=proc.pid))
        finally:
            proc.terminate()
            proc.wait()
    med = {k: {m: statistics.median(x[m] for x in v) for m in ("per_s", "p50_ms", "p99_ms", "server_cpu_us")}
           for k, v in out.items()}
    errors = {k: sum(x["errors"] for x in v) for k, v in out.items()}
    cpu_ratio = med["crs"]["server_cpu_us"] / med["configmaps"]["server_cpu_us"]
    rate_ratio = med["configmaps"]["per_s"] / med["crs"]["per_s"]
    rows = [
        ("creates/s ConfigMap 1 KB, 32 clients", f"{med['configmaps']['per_s']:.0f}", "reference",
         f"server CPU {med['configmaps']['server_cpu_us']:.0f} us/create, p99 {med['configmaps']['p99_ms']:.1f} ms, "
         f"errors {errors['configmaps']}"),
        ("creates/s custom resource, 1 CEL rule", f"{med['crs']['per_s']:.0f}", "",
         f"server CPU {med['crs']['server_cpu_us']:.0f} us/create, p99 {med['crs']['p99_ms']:.1f} ms, "
         f"errors {errors['crs']}"),
        ("cost of a custom resource create (x ConfigMap)", f"{max(cpu_ratio, rate_ratio):.2f}", "<= 2",
         f"server CPU x{cpu_ratio:.2f}, creates/s x{rate_ratio:.2f} (medians of {rounds} alternating rounds of {n})"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure'.ljust(width)}  {'value':>8}  {'target':>9}  reference / detail")
    for name, value, target, ref in rows:
        print(f"{name.ljust(width)}  {value:>8}  {target:>9}  {ref}")
    print(json.dumps({"median": med, "errors": errors}), file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="smaller run")
    args = ap.parse_args()
    asyncio.run(main_async(args.quick))


if __name__ == "__main__":
    main()
