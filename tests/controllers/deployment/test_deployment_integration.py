"""The Deployment, ReplicaSet, ResourceClaim and garbage-collector controllers running together
(through `run_controllers`) against an in-process API server:

- a Deployment of 3 pods with a ResourceClaimTemplate, pinned to a node by hand (no scheduler or
  allocator yet): 3 pods, each with a generated claim named, annotated and owned as upstream and
  recorded in the pod's status; an allocated claim gets reserved for its pod; deleting the
  Deployment removes ReplicaSets, pods and claims;
- a template change rolls out a second ReplicaSet within maxSurge 1 / maxUnavailable 0 (checked
  on every watch event), with revisions and conditions that make the real
  `kubectl rollout status` succeed; `kubectl scale` scales it. A small fake kubelet in the test
  marks pods Ready as they appear.

Out of scope: decision details (test_deployment_writes.py, test_resourceclaim_writes.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from api import server as servers
from controllers import deployment as deploy
from controllers import registry
from controllers import resourceclaim as rcc
from controllers.runtime import client as clients
from cp import clock as clocks
from cp import errors
from tests.controllers.workload_support import rollout_status
from tests.waiting import eventually

CLAIMS = "resourceclaims.resource.k8s.io"
LABELS = {"app": "web"}
KUBECTL = Path(__file__).resolve().parents[3] / ".venv" / "bin" / "kubectl"


async def _run(srv: servers.Running, names: list[str]) -> AsyncIterator[None]:
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.ensure_future(registry.run_controllers(server_url=srv.url, names=names,
                                                          stop_event=stop, ready=ready))
    await asyncio.wait_for(ready.wait(), 10)
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


@pytest.fixture
async def workloads(srv: servers.Running) -> AsyncIterator[None]:
    async for _ in _run(srv, ["replicaset", "deployment", "resourceclaim", "garbage-collector"]):
        yield


def _deployment(replicas: int, *, image: str = "busybox:1", **pod_spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": LABELS},
                     "strategy": {"type": "RollingUpdate",
                                  "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                     "template": {"metadata": {"labels": LABELS},
                                  "spec": {"containers": [{"name": "c", "image": image}], **pod_spec}}}}


async def _items(client: clients.Client, resource: str) -> list[dict[str, Any]]:
    return (await client.list(resource, namespace="default")).items


# ---------------------------------------------------------------------- claims and deletion


@pytest.mark.usefixtures("workloads")
async def test_deployment_pods_get_claims_and_everything_goes_with_the_deployment(client: clients.Client) -> None:
    await client.create("resourceclaimtemplates.resource.k8s.io", {
        "metadata": {"name": "gpu-template", "namespace": "default"},
        "spec": {"metadata": {"labels": {"team": "ml"}},
                 "spec": {"devices": {"requests": [{"name": "gpu",
                                                    "exactly": {"deviceClassName": "gpu.example.com"}}]}}}})
    body = _deployment(3, nodeName="node-1", terminationGracePeriodSeconds=0,
                       resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}])
    body["spec"]["template"]["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    d = await client.create("deployments.apps", body)

    async def claims_recorded() -> bool:
        pods = await _items(client, "pods")
        return len(pods) == 3 and all((p.get("status") or {}).get("resourceClaimStatuses") for p in pods)

    await eventually(claims_recorded, within=10, what="3 pods with their claims")
    pod_hash = deploy.compute_hash(d["spec"]["template"])
    (rs,) = await _items(client, "replicasets.apps")
    assert rs["metadata"]["name"] == f"web-{pod_hash}"
    claims = {c["metadata"]["name"]: c for c in await _items(client, CLAIMS)}
    assert len(claims) == 3
    for p in await _items(client, "pods"):
        name = p["metadata"]["name"]
        assert name.startswith(f"web-{pod_hash}-")
        assert p["metadata"]["labels"] == {**LABELS, "pod-template-hash": pod_hash}
        (entry,) = p["status"]["resourceClaimStatuses"]
        assert entry["name"] == "gpu"
        claim = claims[entry["resourceClaimName"]]
        assert claim["metadata"]["generateName"] == rcc.generate_name(name, "gpu") == f"{name}-gpu-"
        assert len(claim["metadata"]["name"]) == len(f"{name}-gpu-") + 5
        assert claim["metadata"]["annotations"] == {"resource.kubernetes.io/pod-claim-name": "gpu"}
        assert claim["metadata"]["labels"] == {"team": "ml"}
        assert claim["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": p["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}]
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.example.com"

    # Allocate one claim by hand (no allocator yet): the pod bypassed the scheduler, so the
    # controller reserves the claim for it.
    some_pod = (await _items(client, "pods"))[0]
    claim = claims[some_pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]]
    claim["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}}}
    await client.update_status(CLAIMS, claim)

    async def reserved() -> bool:
        current = await client.get(CLAIMS, claim["metadata"]["name"], namespace="default")
        return (current.get("status") or {}).get("reservedFor") == [
            {"resource": "pods", "name": some_pod["metadata"]["name"], "uid": some_pod["metadata"]["uid"]}]

    await eventually(reserved, what="claim reserved for its pod")

    await client.delete("deployments.apps", "web", namespace="default", propagation_policy="Background")

    async def all_gone() -> bool:
        return not any([await _items(client, "replicasets.apps"), await _items(client, "pods"),
                        await _items(client, CLAIMS)])

    await eventually(all_gone, within=10, what="replicasets, pods and claims collected")


# ---------------------------------------------------------------------- rollout + kubectl


class _Kubelet:
    """Marks every new pod Running and Ready (what a kubelet would report), from a watch."""

    def __init__(self, client: clients.Client) -> None:
        self.client = client
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> _Kubelet:
        listed = await self.client.list("pods", namespace="default")
        for p in listed.items:
            await self._ready(p)
        self.task = asyncio.ensure_future(self._watch(listed.resource_version))
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.task is not None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task

    async def _watch(self, rv: str) -> None:
        async with self.client.watch("pods", namespace="default", resource_version=rv) as stream:
            async for ev in stream:
                if ev.type == "ADDED":
                    await self._ready(ev.object)

    async def _ready(self, p: dict[str, Any]) -> None:
        if p["metadata"].get("deletionTimestamp"):
            return
        now = clocks.rfc3339(clocks.RealClock().now())
        with contextlib.suppress(errors.NotFound):
            await self.client.patch("pods", p["metadata"]["name"], {"status": {
                "phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]}},
                namespace="default", patch_type="strategic", subresource="status")


class _Observer:
    """Watches ReplicaSets and pods and records the worst moments of a rollout."""

    def __init__(self, client: clients.Client) -> None:
        self.client = client
        self.max_total_replicas = 0
        self.min_ready = 10**9
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        rss = await self.client.list("replicasets.apps", namespace="default")
        pods = await self.client.list("pods", namespace="default")
        self._rs = {r["metadata"]["name"]: r for r in rss.items}
        self._pods = {p["metadata"]["name"]: p for p in pods.items}
        self._measure()
        self.tasks = [asyncio.ensure_future(self._watch("replicasets.apps", self._rs, rss.resource_version)),
                      asyncio.ensure_future(self._watch("pods", self._pods, pods.resource_version))]

    async def stop(self) -> None:
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def _watch(self, resource: str, into: dict[str, dict[str, Any]], rv: str) -> None:
        async with self.client.watch(resource, namespace="default", resource_version=rv) as stream:
            async for ev in stream:
                if ev.type == "DELETED":
                    into.pop(ev.object["metadata"]["name"], None)
                elif ev.type in ("ADDED", "MODIFIED"):
                    into[ev.object["metadata"]["name"]] = ev.object
                self._measure()

    def _measure(self) -> None:
        total = sum(r["spec"]["replicas"] for r in self._rs.values())
        self.max_total_replicas = max(self.max_total_replicas, total)
        ready = sum(1 for p in self._pods.values() if not p["metadata"].get("deletionTimestamp") and any(
            c["type"] == "Ready" and c["status"] == "True" for c in (p.get("status") or {}).get("conditions") or []))
        self.min_ready = min(self.min_ready, ready)


async def _kubectl(home: Path, srv: servers.Running, *args: str, timeout: float = 30) -> tuple[int, str, str]:  # noqa: ASYNC109
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "KUBECTL_"))}
    env.update(HOME=str(home), KUBECONFIG=str(srv.kubeconfig), NO_PROXY="127.0.0.1", LANG="C.UTF-8")
    proc = await asyncio.create_subprocess_exec(str(KUBECTL), *args, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
        raise AssertionError(f"kubectl {' '.join(args)} timed out: {out.decode()} {err.decode()}") from None
    return proc.returncode or 0, out.decode(), err.decode()


async def _rolled_out(client: clients.Client) -> bool:
    return rollout_status(await client.get("deployments.apps", "web", namespace="default"))[1]


@pytest.mark.kubectl
@pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl not installed (make test fetches it)")
async def test_rolling_update_respects_surge_and_unavailability_and_kubectl_agrees(
        srv: servers.Running, client: clients.Client, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    async for _ in _run(srv, ["replicaset", "deployment"]):
        async with _Kubelet(client):
            await client.create("deployments.apps", _deployment(3))
            await eventually(lambda: _rolled_out(client), within=10, what="first rollout")
            code, out, err = await _kubectl(home, srv, "rollout", "status", "deployment/web", "--timeout=20s")
            assert code == 0, err
            assert 'deployment "web" successfully rolled out' in out

            observer = _Observer(client)
            await observer.start()
            try:
                await client.patch("deployments.apps", "web",
                                   {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}}},
                                   namespace="default", patch_type="strategic")
                # the real kubectl follows the rollout through its watch until it is complete
                code, out, err = await _kubectl(home, srv, "rollout", "status", "deployment/web", "--timeout=20s")
                assert code == 0, err
                assert out.strip().splitlines()[-1] == 'deployment "web" successfully rolled out'
                await eventually(lambda: _rolled_out(client), what="second rollout observed")
            finally:
                await observer.stop()
            assert observer.max_total_replicas <= 4  # replicas + maxSurge
            assert observer.min_ready >= 3  # replicas - maxUnavailable

            d = await client.get("deployments.apps", "web", namespace="default")
            assert d["metadata"]["annotations"][deploy.REVISION] == "2"
            conds = {c["type"]: c for c in d["status"]["conditions"]}
            assert (conds["Available"]["status"], conds["Available"]["reason"]) == ("True", "MinimumReplicasAvailable")
            assert (conds["Progressing"]["status"], conds["Progressing"]["reason"]) == (
                "True", "NewReplicaSetAvailable")
            rss = {r["metadata"]["annotations"][deploy.REVISION]: r for r in await _items(client, "replicasets.apps")}
            assert rss["1"]["spec"]["replicas"] == 0 and rss["2"]["spec"]["replicas"] == 3
            assert rss["2"]["metadata"]["name"] == f"web-{deploy.compute_hash(d['spec']['template'])}"
            assert {k: d["status"][k] for k in ("replicas", "updatedReplicas", "readyReplicas",
                                                "availableReplicas")} == {
                "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3}
            messages = [e["message"] for e in await _items(client, "events") if e["reason"] == "ScalingReplicaSet"]
            assert f"Scaled up replica set {rss['2']['metadata']['name']} from 0 to 1" in messages
            assert f"Scaled down replica set {rss['1']['metadata']['name']} from 1 to 0" in messages

            code, out, err = await _kubectl(home, srv, "scale", "deployment/web", "--replicas=5")
            assert code == 0, err
            assert out.strip() == "deployment.apps/web scaled"
            code, out, err = await _kubectl(home, srv, "rollout", "status", "deployment/web", "--timeout=20s")
            assert code == 0, err
            assert 'deployment "web" successfully rolled out' in out
            assert len(await _items(client, "pods")) == 5
