"""API server benchmark (issue #3): start-up, create throughput, LIST latency, watch fan-out latency.

Run: `.venv/bin/python -m bench.api [--quick] [--json-out FILE] [--py-spy FILE]`. The server runs as its own process
(`cplane serve --insecure`) on a fresh SQLite data dir; the load comes from this process over HTTP.
Each figure is printed beside its target and the reference point measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from bench import harness

ROOT = Path(__file__).resolve().parent.parent
CPLANE = Path(sys.executable).parent / "cplane"


def _pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


_wait_ready = harness.wait_ready


def _start(data_dir: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(CPLANE), "serve", "--data-dir", str(data_dir), "--port", "0", "--insecure",
                             "--no-controllers", "--log-level", "warning"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _byte_compile() -> None:
    """Compile our packages as pip compiles installed ones (`make bytecode`), so the start-up below is
    what an installed server pays, not the compilation of sources edited since the last build."""
    for package in ("cp", "api", "storage", "controllers", "migrations"):
        compileall.compile_dir(ROOT / package, quiet=1)


async def bench_startup(runs: int) -> dict[str, float]:
    _byte_compile()
    floor: list[float] = []
    for _ in range(runs):
        t = time.perf_counter()
        # Blocking on purpose: the floor is a bare interpreter start-up, with nothing else on the loop.
        subprocess.run([sys.executable, "-c", "import aiohttp, sqlalchemy, msgspec"], check=True)  # noqa: ASYNC221
        floor.append(time.perf_counter() - t)
    times: list[float] = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            proc = _start(Path(tmp))
            try:
                await _wait_ready(Path(tmp), proc, t + 30)
                times.append(time.perf_counter() - t)
            finally:
                proc.terminate()
                proc.wait()
    return {"startup_s": statistics.median(times), "floor_s": statistics.median(floor)}


async def _creates(url: str, path: str, bodies: list[dict[str, Any]], concurrency: int,
                   *, server_pid: int | None = None) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for b in bodies:
        queue.put_nowait(b)
    conn = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(base_url=url, connector=conn) as s:
        async def worker() -> None:
            nonlocal errors
            while not queue.empty():
                body = queue.get_nowait()
                data = json.dumps(body).encode()
                t = time.perf_counter()
                async with s.post(path, data=data, headers={"Content-Type": "application/json"}) as r:
                    await r.read()
                    if r.status != 201:
                        errors += 1
                latencies.append(time.perf_counter() - t)

        cpu_before = harness.cpu_seconds(server_pid) if server_pid else None
        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - start
        cpu_after = harness.cpu_seconds(server_pid) if server_pid else None
    result = {"per_s": len(bodies) / elapsed, "p50_ms": _pct(latencies, 50) * 1000,
              "p99_ms": _pct(latencies, 99) * 1000, "errors": errors}
    if cpu_before is not None and cpu_after is not None:
        result["server_cpu_us"] = (cpu_after - cpu_before) / len(bodies) * 1e6
    return result


def _configmap(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}"},
            "data": {"payload": "x" * 900}}


def _named_configmap(prefix: str) -> Any:
    def make(i: int) -> dict[str, Any]:
        body = _configmap(i)
        body["metadata"]["name"] = f"{prefix}-{i}"
        return body
    return make


async def _add_policy(url: str, name: str, resource: str) -> None:
    """A ValidatingAdmissionPolicy (one CEL validation that passes) and its Deny binding, matching
    creates of `resource` in the core group."""
    adm = "/apis/admissionregistration.k8s.io/v1"
    async with aiohttp.ClientSession(base_url=url) as s:
        for path, body in (
            (f"{adm}/validatingadmissionpolicies", {"metadata": {"name": name}, "spec": {
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                        "operations": ["CREATE"], "resources": [resource]}]},
                "validations": [{"expression": "size(object.metadata.name) < 64"}]}}),
            (f"{adm}/validatingadmissionpolicybindings", {"metadata": {"name": name}, "spec": {
                "policyName": name, "validationActions": ["Deny"]}})):
            async with s.post(path, json=body) as r:
                assert r.status == 201, await r.text()


def _claim(i: int) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": f"claim-{i}"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.example.com",
                "selectors": [{"cel": {"expression": 'device.attributes["gpu.example.com"].model == "A100"'}}]}}]}}}


def _pod(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"pod-{i}", "labels": {"app": "bench", "shard": str(i % 10)}},
            "spec": {"nodeName": f"node-{i % 100}", "containers": [
                {"name": "app", "image": "registry.example.com/app:1.0",
                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}


def _protobuf_items(body: bytes) -> int:
    """How many items a protobuf List body holds (its field 2), without decoding them."""
    from cp.protobuf import wire

    _, _, pos, end, _, _ = wire.envelope(body)
    count = 0
    while pos < end:
        number, _, _, pos = wire.read_field(body, pos, end)
        count += number == 2
    return count


async def bench_list(url: str, n: int, *, reps: int = 9) -> dict[str, float]:
    await _creates(url, "/api/v1/namespaces/default/pods", [_pod(i) for i in range(n)], 32)
    out: dict[str, float] = {}
    table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    protobuf = "application/vnd.kubernetes.protobuf,application/json"  # client-go's typed clients, informers
    async with aiohttp.ClientSession(base_url=url) as s:
        for label, headers in (("json", {"Accept": "application/json"}), ("table", {"Accept": table}),
                               ("protobuf", {"Accept": protobuf})):
            times = []
            for _ in range(reps):
                t = time.perf_counter()
                async with s.get("/api/v1/namespaces/default/pods", headers=headers) as r:
                    body = await r.read()
                times.append(time.perf_counter() - t)
            if label == "protobuf":
                count = _protobuf_items(body)
            else:
                count = len(json.loads(body)["items" if label == "json" else "rows"])
            assert count == n, (label, count)
            out[f"list_{label}_ms"] = statistics.median(times) * 1000
            out[f"list_{label}_first_ms"] = times[0] * 1000  # Table, protobuf: before any row/message was kept
            out[f"list_{label}_bytes"] = float(len(body))
    return out


# The reference point for throughput and transfer on this machine, measured in the same run: a bare
# aiohttp server (no storage, no validation) answering the same client. Nothing built on aiohttp can
# beat it here.
_REFERENCE_SERVER = """
import sys, msgspec
from aiohttp import web
decode, encode = msgspec.json.decode, msgspec.json.encode
async def echo(request):
    return web.Response(body=encode(decode(await request.read())), status=201, content_type="application/json")
async def payload(request):
    return web.Response(body=b"x" * int(request.match_info["size"]), content_type="application/json")
app = web.Application(client_max_size=4 << 20)
app.router.add_post("/echo", echo)
app.router.add_get("/bytes/{size}", payload)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


def _start_reference(port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", _REFERENCE_SERVER, str(port)])


async def bench_reference(n_creates: int, sizes: dict[str, int], *, reps: int = 9) -> dict[str, float]:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = _start_reference(port)
    url = f"http://127.0.0.1:{port}"
    out: dict[str, float] = {}
    try:
        async with aiohttp.ClientSession(base_url=url) as s:
            deadline = time.perf_counter() + 30
            while True:
                try:
                    async with s.get("/bytes/1") as r:
                        await r.read()
                    break
                except aiohttp.ClientError:
                    if time.perf_counter() > deadline:
                        raise
                    await asyncio.sleep(0.01)
            for label, size in sizes.items():
                times = []
                for _ in range(reps):
                    t = time.perf_counter()
                    async with s.get(f"/bytes/{size}") as r:
                        await r.read()
                    times.append(time.perf_counter() - t)
                out[f"transfer_{label}_ms"] = statistics.median(times) * 1000
        out["echo_per_s"] = (await _creates(url, "/echo", [_configmap(i) for i in range(n_creates)], 32))["per_s"]
    finally:
        proc.terminate()
        proc.wait()
    return out


async def bench_watch(url: str, watchers: int) -> dict[str, float]:
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(base_url=url, connector=conn,
                                     timeout=aiohttp.ClientTimeout(total=None)) as s:
        async with s.get("/api/v1/namespaces/default/configmaps", params={"limit": "1"}) as r:
            rv = json.loads(await r.read())["metadata"]["resourceVersion"]
        streams = []
        for i in range(0, watchers, 100):
            batch = await asyncio.gather(*(s.get("/api/v1/namespaces/default/configmaps",
                                                 params={"watch": "1", "resourceVersion": rv,
                                                         "timeoutSeconds": "60"})
                                           for _ in range(min(100, watchers - i))))
            streams.extend(batch)
        arrived: list[float] = []
        missed = 0

        async def read_one(resp: aiohttp.ClientResponse) -> None:
            nonlocal missed
            line = await resp.content.readline()
            stamp = time.perf_counter()
            try:
                event = json.loads(line)
            except ValueError:
                missed += 1  # the stream ended (e.g. a dropped slow watcher) instead of delivering
                return
            if event.get("type") == "ADDED" and event["object"]["metadata"]["name"] == "watched":
                arrived.append(stamp)
            else:
                missed += 1

        readers = [asyncio.create_task(read_one(r)) for r in streams]
        await asyncio.sleep(0.2)  # let every stream reach its wait
        t0 = time.perf_counter()
        async with s.post("/api/v1/namespaces/default/configmaps",
                          json={"metadata": {"name": "watched"}, "data": {"a": "b"}}) as r:
            assert r.status == 201
        await asyncio.wait_for(asyncio.gather(*readers), 30)
        for resp in streams:
            resp.close()
    lat = [(a - t0) * 1000 for a in arrived] or [float("nan")]
    return {"watch_p50_ms": _pct(lat, 50), "watch_p99_ms": _pct(lat, 99), "watchers": float(len(arrived)),
            "watch_missed": float(missed)}


async def main_async(quick: bool, *, py_spy: Path | None = None) -> dict[str, Any]:
    results: dict[str, Any] = {}
    results.update(await bench_startup(3 if quick else 5))
    n_creates = 2000 if quick else 10000
    n_pods = 2000 if quick else 10000
    with tempfile.TemporaryDirectory() as tmp:
        proc = _start(Path(tmp))
        try:
            url = await _wait_ready(Path(tmp), proc, time.perf_counter() + 30)
            sampler = harness.Sampler(pid=proc.pid, out=py_spy) if py_spy else None
            # A few untimed writes first: the first ResourceClaim loads the CEL environment (~0.25 s,
            # once per process), which is start-up work, not throughput.
            for path, make in (("/api/v1/namespaces/default/configmaps", _configmap),
                               ("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims", _claim)):
                await _creates(url, path, [make(-i) for i in range(1, 33)], 32)
            results["configmaps"] = await _creates(url, "/api/v1/namespaces/default/configmaps",
                                                   [_configmap(i) for i in range(n_creates)], 32,
                                                   server_pid=proc.pid)
            results["claims"] = await _creates(url, "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
                                               [_claim(i) for i in range(n_creates)], 32, server_pid=proc.pid)
            # Admission policies (issue #19): one that matches other writes only, then one that matches.
            await _add_policy(url, "unrelated", "services")
            results["configmaps_unrelated_policy"] = await _creates(
                url, "/api/v1/namespaces/default/configmaps",
                [_named_configmap("unrelated")(i) for i in range(n_creates)], 32, server_pid=proc.pid)
            await _add_policy(url, "matching", "configmaps")
            results["configmaps_matching_policy"] = await _creates(
                url, "/api/v1/namespaces/default/configmaps",
                [_named_configmap("matching")(i) for i in range(n_creates)], 32, server_pid=proc.pid)
            results.update(await bench_list(url, n_pods))
            results.update(await bench_watch(url, 200 if quick else 1000))
            if sampler is not None:
                sampler.stop()
        finally:
            proc.terminate()
            proc.wait()
    results.update(await bench_reference(n_creates, {"json": int(results["list_json_bytes"]),
                                                     "table": int(results["list_table_bytes"]),
                                                     "protobuf": int(results["list_protobuf_bytes"])}))
    rows = [
        ("start-up to /readyz 200 (s)", f"{results['startup_s']:.3f}", "<= 0.5",
         f"import floor {results['floor_s']:.3f} s; envtest ~s (20 s timeout), kind 12-17 s, k3s ~50 s"),
    ]
    for label, key in (("ConfigMap 1 KB", "configmaps"), ("ResourceClaim", "claims"),
                       ("ConfigMap, an unrelated VAP", "configmaps_unrelated_policy"),
                       ("ConfigMap, a matching VAP", "configmaps_matching_policy")):
        r = results[key]
        rows.append((f"creates/s {label}, 32 clients", f"{r['per_s']:.0f}", ">= 2000",
                     f"p50 {r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms (<= 50), errors {r['errors']}; "
                     + (f"server CPU {r['server_cpu_us']:.0f} us/create; " if "server_cpu_us" in r else "")
                     + f"bare aiohttp echo {results['echo_per_s']:.0f}/s"))
    for label, name in (("json", "JSON"), ("table", "Table"), ("protobuf", "protobuf")):
        mb = results[f"list_{label}_bytes"] / 1e6
        first = f"first {results[f'list_{label}_first_ms']:.0f} ms; "
        rows.append((f"LIST {n_pods} pods {name} (ms)", f"{results[f'list_{label}_ms']:.0f}", "<= 150",
                     f"median; {first}{mb:.1f} MB, bare aiohttp sends it in "
                     f"{results[f'transfer_{label}_ms']:.0f} ms"))
    rows.append((f"watch: {int(results['watchers'])} watches, p99 (ms)", f"{results['watch_p99_ms']:.1f}",
                 "<= 50", f"p50 {results['watch_p50_ms']:.1f} ms; streams without the event: "
                          f"{int(results['watch_missed'])}"))
    width = max(len(r[0]) for r in rows)
    print(f"{'measure'.ljust(width)}  {'value':>8}  {'target':>8}  reference / detail")
    for name, value, target, ref in rows:
        print(f"{name.ljust(width)}  {value:>8}  {target:>8}  {ref}")
    print(json.dumps(results, default=float), file=sys.stderr)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="smaller run")
    ap.add_argument("--json-out", type=Path, metavar="FILE", help="also write the figures as JSON to FILE")
    ap.add_argument("--py-spy", type=Path, metavar="FILE",
                    help="sample the server with py-spy from ready to the end (creates, LISTs, watches) "
                         "into FILE (collapsed stacks)")
    args = ap.parse_args()
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    results = asyncio.run(main_async(args.quick, py_spy=args.py_spy))
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(results, default=float))


if __name__ == "__main__":
    main()
