"""The web UI at scale (issue #26): 500 nodes x 8 devices in headless Chromium, first render and scrubs.

    .venv/bin/python -m bench.ui                     # 500 nodes x 8 devices, 5 loads, 10 scrubs
    options: --nodes N, --devices N (per node), --claims N (allocated claims, one pod each),
             --loads N, --scrubs N, --browser PATH (default: $CPLANE_CHROMIUM or Debian's chromium)

Setup: a `cplane serve --insecure --no-controllers` process on a fresh data dir; through its API (no
fleet controller: the objects are written directly, 8 requests at a time) a DeviceClass, N Nodes, one
ResourceSlice of `--devices` GPUs per node, `--claims` ResourceClaims allocated to devices (status
written as the scheduler would) with one running pod each. Then history to scrub through: revision
`A` is that state; a quarter of the claims then move to other devices (revision `B`), a tenth are
deleted with their pods (live).

Measured, in the same run, against the issue's targets:
- load: from navigation to `/ui/` until `main[data-rendered-rv]` is set (the map and pending views have
  rendered a revision), time taken in the page (performance.now(), from navigation start): ≤ 1 s;
- scrub: from setting the scrubber (`#timeline input[type=range]`, a `change` event: what a user's
  release does) to an earlier revision until `main[data-rendered-rv]` equals it: ≤ 300 ms; also until
  the next frame is painted, and how much of it was spent waiting for the server's responses
  (Resource Timing of the requests the scrub made: until the last response's end, and the slowest
  one's time to first byte) against the rest (the page's own work); scrubs half a second apart; the
  CPU time a scrub costs the server and Chromium (from /proc: comparable under any load);
- the server's share on its own: the Exact LISTs a scrub makes (nodes, resourceslices, resourceclaims,
  pods, deviceclasses at a past revision), timed from this process, at a past revision and at the newest.
Each as median and p90 of the runs. Wall-clock figures on a shared machine: the load average is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

from bench import harness

GOAL_LOAD_S = 1.0
GOAL_SCRUB_S = 0.3
PAUSE_S = 0.5  # between two scrubs
DRIVER = "gpu.example.com"
NAMESPACE = "bench"
CLAIMS = f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
# What a scrub reads at a past revision (the map's and pending view's kinds).
SCRUB_LISTS = ("/api/v1/nodes", "/apis/resource.k8s.io/v1/resourceslices", "/apis/resource.k8s.io/v1/resourceclaims",
               "/api/v1/pods", "/apis/resource.k8s.io/v1/deviceclasses")


def browser_path(given: str | None = None) -> str | None:
    """The Chromium to drive: `given`, `$CPLANE_CHROMIUM`, or Debian's (`chromium` on the PATH)."""
    return given or os.environ.get("CPLANE_CHROMIUM") or shutil.which("chromium")


# ------------------------------------------------------------------------------------ the cluster


def node(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"node-{i:04d}", "labels": {"kubernetes.io/hostname": f"node-{i:04d}",
                                                            "example.com/accelerator": "a100"}},
            "status": {"capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
                       "allocatable": {"cpu": "63", "memory": "500Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}


def resource_slice(i: int, *, devices: int) -> dict[str, Any]:
    name = f"node-{i:04d}"
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-{DRIVER}"},
            "spec": {"driver": DRIVER, "nodeName": name,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{d}",
                                  "attributes": {"model": {"string": "A100-SXM4-80GB"}, "index": {"int": d}},
                                  "capacity": {"memory": {"value": "80Gi"}}} for d in range(devices)]}}


def claim(name: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}}


def allocation(node_index: int, device: int) -> dict[str, Any]:
    name = f"node-{node_index:04d}"
    return {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": name, "device": f"gpu-{device}"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [name]}]}]}}


def pod(name: str, *, claim_name: str, node_name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"nodeName": node_name,
                     "containers": [{"name": "train", "image": "registry.example.com/train:1",
                                     "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}]}}


class Api:
    """A few JSON calls over one session, raising on an unexpected status."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.s = session

    async def call(self, method: str, path: str, body: Any = None, *, ok: tuple[int, ...] = (200, 201)) -> Any:
        async with self.s.request(method, path, json=body) as r:
            out = await r.json()
            if r.status not in ok:
                raise RuntimeError(f"{method} {path}: {r.status} {out.get('message', out)}")
            return out


async def _gather(jobs: list[Callable[[], Awaitable[Any]]], *, width: int = 8) -> list[Any]:
    """Run the jobs `width` at a time, in order of the list; their results in that order."""
    out: list[Any] = [None] * len(jobs)
    queue = iter(enumerate(jobs))

    async def worker() -> None:
        for i, job in queue:
            out[i] = await job()

    await asyncio.gather(*(worker() for _ in range(width)))
    return out


class Cluster:
    """What `generate` made: the revisions to scrub between (`a`: every claim allocated; `b`: a quarter
    moved; `live`: a tenth deleted) and the sizes."""

    def __init__(self, *, a: int, b: int, live: int, nodes: int, devices: int, claims: int) -> None:
        self.a, self.b, self.live = a, b, live
        self.nodes, self.devices, self.claims = nodes, devices, claims


async def generate(url: str, *, nodes: int, devices: int, claims: int) -> Cluster:
    """Write the cluster of the module doc through the API at `url` (an insecure server)."""
    if claims > nodes * devices:
        raise ValueError(f"{claims} claims do not fit on {nodes * devices} devices")
    async with aiohttp.ClientSession(base_url=url) as s:
        api = Api(s)
        await api.call("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}}, ok=(201, 409))
        await api.call("POST", "/apis/resource.k8s.io/v1/deviceclasses",
                       {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
                        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})

        async def make_node(i: int) -> None:
            created = await api.call("POST", "/api/v1/nodes", node(i))
            created["status"] = node(i)["status"]
            await api.call("PUT", f"/api/v1/nodes/{created['metadata']['name']}/status", created)
            await api.call("POST", "/apis/resource.k8s.io/v1/resourceslices", resource_slice(i, devices=devices))

        await _gather([lambda i=i: make_node(i) for i in range(nodes)])  # type: ignore[misc]

        # Claim k on device (k % nodes, k // nodes): spread over the nodes, as a scheduler would.
        def place(k: int) -> tuple[int, int]:
            return k % nodes, k // nodes

        async def make_claim(k: int) -> dict[str, Any]:
            name = f"train-{k:05d}"
            created = await api.call("POST", CLAIMS, claim(name))
            n, d = place(k)
            p = await api.call("POST", PODS, pod(name, claim_name=name, node_name=f"node-{n:04d}"))
            created["status"] = {"allocation": allocation(n, d),
                                 "reservedFor": [{"resource": "pods", "name": name, "uid": p["metadata"]["uid"]}]}
            return await api.call("PUT", f"{CLAIMS}/{name}/status", created)  # type: ignore[no-any-return]

        await _gather([lambda k=k: make_claim(k) for k in range(claims)])  # type: ignore[misc]
        a = int((await api.call("GET", CLAIMS + "?limit=1"))["metadata"]["resourceVersion"])

        # A quarter of the claims move to a free device (the ones after the last claim's), through a
        # deallocation.
        moved = list(range(0, claims, 4))

        async def move(j: int, k: int) -> None:
            current = await api.call("GET", f"{CLAIMS}/train-{k:05d}")
            n, d = place(claims + j)
            if d >= devices:
                n, d = place(k)
                d = (d + 1) % devices
            status = current["status"]
            current["status"] = {}  # deallocated (an allocation is immutable), then allocated again
            current = await api.call("PUT", f"{CLAIMS}/train-{k:05d}/status", current)
            current["status"] = {**status, "allocation": allocation(n, d)}
            await api.call("PUT", f"{CLAIMS}/train-{k:05d}/status", current)

        await _gather([lambda j=j, k=k: move(j, k) for j, k in enumerate(moved)])  # type: ignore[misc]
        b = int((await api.call("GET", CLAIMS + "?limit=1"))["metadata"]["resourceVersion"])

        async def delete(k: int) -> None:
            await api.call("DELETE", f"{PODS}/train-{k:05d}?gracePeriodSeconds=0")
            await api.call("DELETE", f"{CLAIMS}/train-{k:05d}")

        await _gather([lambda k=k: delete(k) for k in range(1, claims, 10)])  # type: ignore[misc]
        live = int((await api.call("GET", CLAIMS + "?limit=1"))["metadata"]["resourceVersion"])
    return Cluster(a=a, b=b, live=live, nodes=nodes, devices=devices, claims=claims)


# ------------------------------------------------------------------------------------ measuring

# Installed before the page's scripts: when `main[data-rendered-rv]` is first set, and each time after.
_INIT_SCRIPT = """
window.__renders = [];
new MutationObserver((records) => {
  for (const r of records) {
    if (r.target.tagName === "MAIN" && r.target.dataset.renderedRv) {
      window.__renders.push([performance.now(), r.target.dataset.renderedRv]);
    }
  }
}).observe(document, {subtree: true, attributes: true, attributeFilter: ["data-rendered-rv"]});
"""

# One scrub in the page: set the range input to `rv` and fire `change`; wait for main's data-rendered-rv
# to equal it, then for the next painted frame. Times in ms, and the requests it made.
_SCRUB = """
async (rv) => {
  const main = document.querySelector("main");
  const input = document.querySelector("#timeline input[type=range]");
  performance.clearResourceTimings();
  const want = String(rv);
  const rendered = new Promise((resolve) => {
    const obs = new MutationObserver(() => {
      if (main.dataset.renderedRv === want) { obs.disconnect(); resolve(performance.now()); }
    });
    obs.observe(main, {attributes: true, attributeFilter: ["data-rendered-rv"]});
  });
  const t0 = performance.now();
  input.value = want;
  input.dispatchEvent(new Event("input", {bubbles: true}));
  input.dispatchEvent(new Event("change", {bubbles: true}));
  const t1 = await rendered;
  await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  const t2 = performance.now();
  const requests = performance.getEntriesByType("resource").filter((e) => e.startTime >= t0 && e.responseEnd <= t1);
  const fetchEnd = requests.length ? Math.max(...requests.map((e) => e.responseEnd)) : t0;
  const ttfb = requests.map((e) => e.responseStart - e.requestStart);
  return {rendered: t1 - t0, painted: t2 - t0, waiting: fetchEnd - t0, requests: requests.length,
          server: ttfb.length ? Math.max(...ttfb) : 0,
          slowest: requests.map((e) => [e.duration, e.name]).sort((x, y) => y[0] - x[0]).slice(0, 3)};
}
"""


def _stats(values: list[float]) -> tuple[float, float]:
    """(median, p90) of `values`."""
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, max(0, round(0.9 * len(ordered)) - 1))]
    return statistics.median(ordered), p90


def _line(label: str, values: list[float], *, goal: float | None = None, unit: str = "ms") -> str:
    med, p90 = _stats(values)
    verdict = ""
    if goal is not None:
        verdict = f"   goal <= {goal:.0f} {unit}: {'met' if p90 <= goal else ('median met' if med <= goal else 'NOT met')}"
    return f"  {label:<44} median {med:7.1f} {unit}   p90 {p90:7.1f} {unit}   (n={len(values)}){verdict}"


async def server_lists(url: str, *, revision: int | None, reps: int) -> dict[str, list[float]]:
    """Milliseconds of each of a scrub's LISTs, at `revision` (Exact) or the newest (None), from here."""
    out: dict[str, list[float]] = {p: [] for p in SCRUB_LISTS}
    query = f"?resourceVersion={revision}&resourceVersionMatch=Exact" if revision is not None else ""
    async with aiohttp.ClientSession(base_url=url) as s:
        for _ in range(reps):
            for path in SCRUB_LISTS:
                started = time.perf_counter()
                async with s.get(path + query) as r:
                    assert r.status == 200, (path, r.status, await r.text())
                    await r.read()
                out[path].append((time.perf_counter() - started) * 1000)
    return out


def _children() -> dict[int, list[int]]:
    """Every process's children, from /proc."""
    out: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            out.setdefault(ppid, []).append(int(entry.name))
    return out


def browser_cpu(*, server: int) -> float:
    """CPU seconds of this process's descendants but the server's: the Playwright driver and Chromium
    (every process of it: browser, renderer, GPU, network), as far as /proc shows them."""
    children = _children()
    total, todo = 0.0, list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        if pid == server:
            continue
        total += harness.cpu_seconds(pid) or 0.0
        todo.extend(children.get(pid, []))
    return total


async def measure_browser(url: str, cluster: Cluster, *, loads: int, scrubs: int,
                          browser: str, server: int) -> dict[str, list[float]]:
    """The load and scrub figures (see the module doc); `server`: the server's pid, for CPU seconds."""
    from playwright.async_api import async_playwright

    figures: dict[str, list[float]] = {"load": [], "scrub": [], "painted": [], "waiting": [], "page": [],
                                       "server": []}
    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=browser, headless=True)
        try:
            context = await chromium.new_context(viewport={"width": 1600, "height": 1000})
            await context.add_init_script(_INIT_SCRIPT)
            page = await context.new_page()
            for _ in range(loads):
                await page.goto(url + "/ui/", wait_until="commit")
                await page.wait_for_function("window.__renders && window.__renders.length > 0", timeout=60_000)
                first = await page.evaluate("window.__renders[0][0]")
                figures["load"].append(float(first))
            await page.wait_for_selector("#timeline input[type=range]")
            shown = await page.evaluate("document.querySelectorAll('[data-device]').length")
            print(f"  the page shows {shown} devices ([data-device]); {cluster.nodes * cluster.devices} published")
            targets = [cluster.a, cluster.b]
            # What the page costs doing nothing (at a past revision: no watches, no polls), per pause.
            await page.evaluate(_SCRUB, cluster.a)
            await asyncio.sleep(PAUSE_S)
            idle = (harness.cpu_seconds(server) or 0.0, browser_cpu(server=server))
            await asyncio.sleep(PAUSE_S * 4)
            idle = (((harness.cpu_seconds(server) or 0.0) - idle[0]) / 4, (browser_cpu(server=server) - idle[1]) / 4)
            cpu = (harness.cpu_seconds(server) or 0.0, browser_cpu(server=server))
            for i in range(scrubs):
                await asyncio.sleep(PAUSE_S)  # a person's pace: what the last scrub started afterwards is done
                result = await page.evaluate(_SCRUB, targets[i % 2])
                figures["scrub"].append(result["rendered"])
                figures["painted"].append(result["painted"])
                figures["waiting"].append(result["waiting"])
                figures["page"].append(result["rendered"] - result["waiting"])
                figures["server"].append(result["server"])
                if i == 0:
                    print(f"  first scrub: {result['requests']} requests, slowest: "
                          + ", ".join(f"{ms:.0f} ms {name.split('/', 3)[-1][:70]}" for ms, name in result["slowest"]))
            await asyncio.sleep(PAUSE_S)  # the last scrub's follow-up reads
            # CPU per scrub, with what it makes the page do afterwards (the events read), minus what the
            # pause before it costs idle: load-independent, unlike the wall-clock figures.
            figures["server_cpu"] = [((harness.cpu_seconds(server) or 0.0) - cpu[0]) * 1000 / scrubs - idle[0] * 1000]
            figures["browser_cpu"] = [(browser_cpu(server=server) - cpu[1]) * 1000 / scrubs - idle[1] * 1000]
            figures["idle_cpu"] = [idle[1] * 1000 / PAUSE_S]
        finally:
            await chromium.close()
    return figures


def start_server(data_dir: Path) -> subprocess.Popen[bytes]:
    """`cplane serve --insecure --no-controllers` on `data_dir`, a port of its choosing (see its kubeconfig)."""
    return subprocess.Popen([sys.executable, "-m", "cp.cli", "serve", "--data-dir", str(data_dir), "--port", "0",
                             "--insecure", "--no-controllers", "--log-level", "warning"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def main(args: argparse.Namespace) -> int:
    browser = browser_path(args.browser)
    if browser is None:  # `make bench` goes on without it, saying so
        print("bench.ui SKIPPED: no Chromium found (install Debian's `chromium`, or set CPLANE_CHROMIUM)")
        return 0
    try:
        import playwright  # noqa: F401
    except ImportError:
        print("bench.ui SKIPPED: Playwright for Python is not installed (pip install -e '.[test]')")
        return 0
    with tempfile.TemporaryDirectory(prefix="cplane-bench-ui-") as tmp:
        data_dir = Path(tmp)
        proc = start_server(data_dir)
        try:
            url = await harness.wait_ready(data_dir, proc, time.perf_counter() + 60)
            started = time.perf_counter()
            cluster = await generate(url, nodes=args.nodes, devices=args.devices, claims=args.claims)
            print(f"cluster: {args.nodes} nodes x {args.devices} devices, {args.claims} claims and pods, written in "
                  f"{time.perf_counter() - started:.1f} s; revisions A={cluster.a} (allocated), B={cluster.b} "
                  f"(a quarter moved), live={cluster.live} (a tenth deleted)")
            print(f"load average: {harness.load_average(all_three=True)}")
            past = await server_lists(url, revision=cluster.a, reps=args.scrubs // 2 or 1)
            newest = await server_lists(url, revision=None, reps=args.scrubs // 2 or 1)
            figures = await measure_browser(url, cluster, loads=args.loads, scrubs=args.scrubs, browser=browser,
                                            server=proc.pid)
        finally:
            harness.stop(proc, sig=2)
    print("browser (headless Chromium " + browser + "):")
    print(_line("load: navigation -> main[data-rendered-rv]", figures["load"], goal=GOAL_LOAD_S * 1000))
    print(_line("scrub: change -> main[data-rendered-rv]", figures["scrub"], goal=GOAL_SCRUB_S * 1000))
    print(_line("scrub: change -> next painted frame", figures["painted"], goal=GOAL_SCRUB_S * 1000))
    print(_line("  of which waiting for the server", figures["waiting"]))
    print(_line("  of which the page's own work", figures["page"]))
    print(_line("  the slowest request's server time (TTFB)", figures["server"]))
    print(f"  CPU per scrub (all scrubs' CPU / scrubs): server {figures['server_cpu'][0]:.1f} ms, "
          f"Chromium and its driver {figures['browser_cpu'][0]:.1f} ms (idle: {figures['idle_cpu'][0]:.0f} ms/s, "
          "taken off)")
    print("server, each LIST of a scrub timed from this process (past: Exact at A; newest: no resourceVersion):")
    for path in SCRUB_LISTS:
        print(_line(f"past   {path.rsplit('/', 1)[-1]}", past[path]))
        print(_line(f"newest {path.rsplit('/', 1)[-1]}", newest[path]))
    print(f"load average: {harness.load_average(all_three=True)}")
    return 0


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--devices", type=int, default=8, help="devices per node (one ResourceSlice each)")
    p.add_argument("--claims", type=int, default=1000, help="allocated claims, each with a pod")
    p.add_argument("--loads", type=int, default=5)
    p.add_argument("--scrubs", type=int, default=10)
    p.add_argument("--browser", default=None, help="Chromium executable (default: $CPLANE_CHROMIUM, chromium)")
    return p.parse_args(argv)


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse())))
