"""Every controller end to end in the secure mode (issue #23): TLS, authentication and RBAC, each
controller under its own identity and least-privilege role exactly as `cplane serve` runs them
(`cp.cli.serve.controller_identities` through the sandbox's `secure=True`), on a virtual clock.

One scenario per group of controllers, each in its own sandbox running all of them. A scenario
checks the outcome each controller is for (a refused write would leave it undone), and every
scenario ends by checking that no request of a controller identity was refused (401/403) — the
server's request log, as `tests/kubectl/test_secure.py` reads it from a `cplane serve` process.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import structlog

from controllers import health, registry, resourcepoolstatusrequest
from cp import errors, rbac
from cp.resources import ResourceKind
from cp.testing import Sandbox, sandbox
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
FLEET = ROOT / "examples/fleets/demo.yaml"
START = 1_800_000_000.0
R = "resource.k8s.io"
CONTROLLER_USERS = ("system:serviceaccount:kube-system:", "system:kube-")
POLICY = rbac.default_policy()


@contextlib.asynccontextmanager
async def secure_sandbox(tmp_path: Path, *, feature_gates: str | None = None, runtime_config: str | None = None
                         ) -> AsyncIterator[tuple[Sandbox, list[dict[str, Any]]]]:
    with structlog.testing.capture_logs() as logs:
        async with sandbox(data_dir=tmp_path / "cplane", controllers=registry.resolve_names(None), fleet=FLEET,
                           virtual_clock=True, clock_start=START, secure=True, feature_gates=feature_gates,
                           runtime_config=runtime_config) as sb:
            yield sb, logs


def refusals(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Requests of controller identities that were refused, but for creates in a namespace being
    deleted (403 from namespace lifecycle, not RBAC: the default policy allows them)."""
    return [e for e in logs if e.get("event") == "request" and e.get("code") in (401, 403)
            and str(e.get("user") or "").startswith(CONTROLLER_USERS) and not _lifecycle_refusal(e)]


def _lifecycle_refusal(entry: dict[str, Any]) -> bool:
    if entry.get("code") != 403 or entry.get("verb") != "create" or str(entry.get("resource")).startswith("/"):
        return False
    name = str(entry["user"])
    account = rbac.split_service_account(name)
    groups = (*rbac.service_account_groups(account[0]), rbac.AUTHENTICATED) if account else (rbac.AUTHENTICATED,)
    attrs = rbac.Attributes(user=rbac.UserInfo(name=name, groups=groups), verb="create",
                            namespace=str(entry.get("namespace") or ""), api_group=str(entry.get("group") or ""),
                            resource=str(entry["resource"]), subresource=str(entry.get("subresource") or ""))
    return POLICY.authorize(attrs).allowed


def actors(logs: list[dict[str, Any]]) -> set[str]:
    return {str(e.get("user")) for e in logs if e.get("event") == "request"}


async def _get(sb: Sandbox, resource: str | ResourceKind, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    try:
        obj: dict[str, Any] = await sb.client.get(resource, name, namespace=namespace)
        return obj
    except errors.NotFound:
        return None


async def _items(sb: Sandbox, resource: str, namespace: str | None = None, **kw: Any) -> list[dict[str, Any]]:
    return list((await sb.client.list(resource, namespace=namespace, **kw)).items)


def _running(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if (p.get("status") or {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")]


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"terminationGracePeriodSeconds": 0,
                                                  "containers": [{"name": "c", "image": "busybox"}], **spec}}


def _template(app: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": app}},
            "spec": {"terminationGracePeriodSeconds": 0, "containers": [{"name": "c", "image": "busybox",
                                                                         "resources": {"requests": {"cpu": "100m"}}}]}}


# ------------------------------------------------------------------------------------------ scenarios


async def workloads(sb: Sandbox) -> None:
    """A namespace gets its account and CA bundle; a Deployment's pods run behind a Service, a PDB,
    a quota and an HPA; deleting the namespace removes it all."""
    c = sb.client
    await c.create("namespaces", {"metadata": {"name": "team"}})
    await eventually(lambda: _get(sb, "serviceaccounts", "default", "team"), within=10, what="the default account")
    await eventually(lambda: _get(sb, "configmaps", "kube-root-ca.crt", "team"), within=10, what="the CA bundle")
    await c.create("resourcequotas", {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "10"}}}, namespace="team")
    await c.create("deployments.apps", {"metadata": {"name": "web"}, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": _template("web")}}, namespace="team")
    await c.create("services", {"metadata": {"name": "web"}, "spec": {
        "selector": {"app": "web"}, "ports": [{"port": 80}]}}, namespace="team")
    await c.create("poddisruptionbudgets.policy", {"metadata": {"name": "web"}, "spec": {
        "minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}, namespace="team")
    await c.create("horizontalpodautoscalers.autoscaling", {"metadata": {"name": "web"}, "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2, "maxReplicas": 3}}, namespace="team")

    async def serving() -> bool:
        pods = _running(await _items(sb, "pods", "team"))
        slices = await _items(sb, "endpointslices.discovery.k8s.io", "team")
        endpoints = await _get(sb, "endpoints", "web", "team")
        pdb = await _get(sb, "poddisruptionbudgets.policy", "web", "team") or {}
        quota = await _get(sb, "resourcequotas", "q", "team") or {}
        hpa = await _get(sb, "horizontalpodautoscalers.autoscaling", "web", "team") or {}
        deploy = await _get(sb, "deployments.apps", "web", "team") or {}
        return (len(pods) == 2 and sum(len(s.get("endpoints") or []) for s in slices) == 2
                and endpoints is not None and len((endpoints.get("subsets") or [{}])[0].get("addresses") or []) == 2
                and (pdb.get("status") or {}).get("currentHealthy") == 2
                and ((quota.get("status") or {}).get("used") or {}).get("pods") == "2"
                and (hpa.get("status") or {}).get("currentReplicas") == 2
                and (deploy.get("status") or {}).get("availableReplicas") == 2)

    await eventually(serving, within=20, what="the Deployment served, budgeted, counted and autoscaled")
    await c.delete("namespaces", "team")

    async def gone() -> bool:
        return await _get(sb, "namespaces", "team") is None

    await eventually(gone, within=20, what="the namespace emptied and deleted")


async def dra(sb: Sandbox) -> None:
    """Claims from a template and a shared claim: allocated, prepared (the NIC driver's status.devices
    entry), reported healthy in pod status; the shared claim deallocated when its pod goes (the
    driver's entry dropped with it); a NoExecute DeviceTaintRule evicts the template's pod."""
    c = sb.client
    requests = [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}},
                {"name": "nic", "exactly": {"deviceClassName": "nic.example.com"}}]
    await c.create(f"resourceclaimtemplates.{R}", {"metadata": {"name": "both"}, "spec": {"spec": {
        "devices": {"requests": requests}}}}, namespace="default")
    await c.create(f"resourceclaims.{R}", {"metadata": {"name": "shared"}, "spec": {"devices": {
        "requests": requests}}}, namespace="default")
    claims_of = {"a": [{"name": "dev", "resourceClaimTemplateName": "both"}],
                 "b": [{"name": "dev", "resourceClaimName": "shared"}]}
    for name, claims in claims_of.items():
        pod = _pod(name, resourceClaims=claims)
        pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "dev"}]}
        await c.create("pods", pod, namespace="default")

    async def prepared() -> bool:
        pods = _running(await _items(sb, "pods", "default"))
        if len(pods) != 2:
            return False
        for pod in pods:
            statuses = (pod.get("status") or {}).get("containerStatuses") or []
            if not statuses or not statuses[0].get("allocatedResourcesStatus"):
                return False
        claims = await _items(sb, f"resourceclaims.{R}", "default")
        return len(claims) == 2 and all(
            {d.get("driver") for d in (cl.get("status") or {}).get("devices") or []} >= {"nic.example.com"}
            for cl in claims)

    await eventually(prepared, within=20, what="both pods Running with their devices' health and NIC status")
    await c.delete("pods", "b", namespace="default")

    async def deallocated() -> bool:
        claim = await _get(sb, f"resourceclaims.{R}", "shared", "default") or {}
        status = claim.get("status") or {}
        return bool(claim) and "allocation" not in status and "devices" not in status and "reservedFor" not in status

    await eventually(deallocated, within=20, what="the shared claim deallocated, the driver's entry dropped")
    generated = [cl for cl in await _items(sb, f"resourceclaims.{R}", "default") if cl["metadata"]["name"] != "shared"]
    result = next(r for r in generated[0]["status"]["allocation"]["devices"]["results"] if r["request"] == "gpu")
    await c.create(f"devicetaintrules.{R}", {"metadata": {"name": "broken"}, "spec": {
        "deviceSelector": {"driver": result["driver"], "pool": result["pool"], "device": result["device"]},
        "taint": {"key": "example.com/broken", "effect": "NoExecute"}}})

    async def evicted() -> bool:
        rule = await _get(sb, f"devicetaintrules.{R}", "broken") or {}
        return await _get(sb, "pods", "a", "default") is None and bool((rule.get("status") or {}).get("conditions"))

    await eventually(evicted, within=20, what="the tainted device's pod evicted, the rule's status written")

    async def collected() -> bool:
        return [cl["metadata"]["name"] for cl in await _items(sb, f"resourceclaims.{R}", "default")] == ["shared"]

    await eventually(collected, within=20, what="the template's claim deleted with its pod")


async def batch(sb: Sandbox) -> None:
    """A Job runs to completion and its TTL deletes it; a CronJob starts a Job on schedule."""
    c = sb.client
    template = _template("job")
    template["metadata"]["annotations"] = {"sim.cplane.dev/run-seconds": "1"}
    template["spec"]["restartPolicy"] = "Never"
    await c.create("jobs.batch", {"metadata": {"name": "once"}, "spec": {
        "ttlSecondsAfterFinished": 5, "template": template}}, namespace="default")
    await c.create("cronjobs.batch", {"metadata": {"name": "tick"}, "spec": {
        "schedule": "*/1 * * * *", "jobTemplate": {"spec": {"template": template}}}}, namespace="default")

    async def complete() -> bool:
        job = await _get(sb, "jobs.batch", "once", "default") or {}
        return (job.get("status") or {}).get("succeeded") == 1 and bool((job.get("status") or {}).get("completionTime"))

    await eventually(lambda: _ran_after(sb, 2, complete), within=20, what="the Job complete")

    async def ttl_and_cron() -> bool:
        names = [j["metadata"]["name"] for j in await _items(sb, "jobs.batch", "default")]
        cron = await _get(sb, "cronjobs.batch", "tick", "default") or {}
        return "once" not in names and any(n.startswith("tick-") for n in names) \
            and bool((cron.get("status") or {}).get("lastScheduleTime"))

    await eventually(lambda: _ran_after(sb, 30, ttl_and_cron), within=20,
                     what="the Job deleted after its TTL, the CronJob's Job created")


async def sets(sb: Sandbox) -> None:
    """A DaemonSet on every node; a StatefulSet whose claims the volume binder provisions and binds."""
    c = sb.client
    await c.create("daemonsets.apps", {"metadata": {"name": "agent"}, "spec": {
        "selector": {"matchLabels": {"app": "agent"}}, "template": _template("agent")}}, namespace="default")
    await c.create("statefulsets.apps", {"metadata": {"name": "db"}, "spec": {
        "replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}}, "template": _template("db"),
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}, namespace="default")

    async def up() -> bool:
        ds = (await _get(sb, "daemonsets.apps", "agent", "default") or {}).get("status") or {}
        sts = (await _get(sb, "statefulsets.apps", "db", "default") or {}).get("status") or {}
        pvcs = await _items(sb, "persistentvolumeclaims", "default")
        return (ds.get("numberAvailable") == 2 and sts.get("readyReplicas") == 2 and len(pvcs) == 2
                and all((p.get("status") or {}).get("phase") == "Bound" for p in pvcs))

    await eventually(up, within=20, what="the DaemonSet and the StatefulSet up, claims bound")


async def nodes(sb: Sandbox) -> None:
    """A stopped kubelet: the node lifecycle controller marks its Node and taints it, the taint
    eviction controller deletes its pods when their toleration runs out."""
    c = sb.client
    await c.create("pods", _pod("pinned", nodeName="gpu-node-0"), namespace="default")
    await eventually(lambda: _running_named(sb, "pinned"), within=10, what="the pinned pod Running")
    await c.patch("nodes", "gpu-node-0", {"metadata": {"annotations": {"sim.cplane.dev/kubelet": "stopped"}}})

    async def tainted() -> bool:
        node = await _get(sb, "nodes", "gpu-node-0") or {}
        keys = {t.get("key") for t in (node.get("spec") or {}).get("taints") or []}
        return "node.kubernetes.io/unreachable" in keys

    await eventually(lambda: _ran_after(sb, 20, tainted), within=20, what="the node tainted unreachable")

    async def evicted() -> bool:
        pod = await _get(sb, "pods", "pinned", "default")
        return pod is None or bool(pod["metadata"].get("deletionTimestamp"))

    await eventually(lambda: _ran_after(sb, 60, evicted), within=20, what="the pod evicted after 300 s")


POOL_STATUS_REQUESTS = resourcepoolstatusrequest.REQUESTS


async def pool_status(sb: Sandbox) -> None:
    """A v1alpha3 ResourcePoolStatusRequest (alpha gate and version on) answered by its controller under
    its own identity: the demo fleet's GPU pools, one GPU allocated to a pod's claim."""
    c = sb.client
    await c.create(f"resourceclaims.{R}", {"metadata": {"name": "one"}, "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}, namespace="default")
    await c.create("pods", {"metadata": {"name": "user"}, "spec": {
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "one"}],
        "containers": [{"name": "main", "image": "app", "resources": {"claims": [{"name": "gpu"}]}}]}},
        namespace="default")
    await eventually(lambda: _running_named(sb, "user"), what="pod running")
    await c.create(POOL_STATUS_REQUESTS, {"metadata": {"name": "gpus"},
                                                              "spec": {"driver": "gpu.example.com"}})

    async def answered() -> dict[str, Any] | None:
        got = await _get(sb, POOL_STATUS_REQUESTS, "gpus")
        return (got or {}).get("status")

    status = await eventually(answered, what="request answered")
    assert status["poolCount"] == len(status["pools"]) >= 1
    assert sum(p["allocatedDevices"] for p in status["pools"]) == 1


async def _ran_after(sb: Sandbox, seconds: float, check: Callable[[], Awaitable[bool]]) -> bool:
    """`check` now; else move the clock and say no (the caller polls again)."""
    if await check():
        return True
    await sb.advance(seconds)
    return False


async def _running_named(sb: Sandbox, name: str) -> bool:
    pod = await _get(sb, "pods", name, "default")
    return pod is not None and (pod.get("status") or {}).get("phase") == "Running"


SCENARIOS: dict[str, tuple[Callable[[Sandbox], Awaitable[None]], set[str]]] = {
    "workloads": (workloads, {"serviceaccount", "root-ca-cert-publisher", "resourcequota", "deployment", "replicaset",
                              "scheduler", "fleet", "endpointslice", "endpoints", "disruption",
                              "horizontal-pod-autoscaler", "namespace", "garbage-collector"}),
    "dra": (dra, {"resourceclaim", "scheduler", "fleet", "device-health", "device-taint-eviction",
                  "garbage-collector"}),
    "batch": (batch, {"job", "ttl-after-finished", "cronjob"}),
    "sets": (sets, {"daemonset", "statefulset", "persistentvolume-binder"}),
    "nodes": (nodes, {"node-lifecycle", "taint-eviction"}),
    "pool-status": (pool_status, {"resourcepoolstatusrequest"}),
}
# The gates and versions a scenario's cluster runs with (`cplane serve --feature-gates`, `--runtime-config`).
OPTIONS: dict[str, dict[str, str]] = {
    "pool-status": {"feature_gates": "DRAResourcePoolStatus=true", "runtime_config": "resource.k8s.io/v1alpha3=true"},
}


def test_the_scenarios_cover_every_controller() -> None:
    covered = set().union(*(names for _, names in SCENARIOS.values()))
    assert covered == set(registry.CONTROLLERS), set(registry.CONTROLLERS) ^ covered


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_controllers_in_the_secure_mode(name: str, tmp_path: Path) -> None:
    scenario, _covers = SCENARIOS[name]
    async with secure_sandbox(tmp_path, **OPTIONS.get(name, {})) as (sb, logs):
        await scenario(sb)
    assert not refusals(logs), refusals(logs)
    assert "system:kube-controller-manager" in actors(logs)


@pytest.mark.kubectl
async def test_kubectl_debug_and_device_health_over_tls(tmp_path: Path) -> None:
    """The real kubectl against the secure sandbox: `kubectl debug` adds an ephemeral container and,
    for a missing pod, reports upstream's NotFound (kubectl reads a 404's `details`: issue #23's
    panic); a DRA pod's `allocatedResourcesStatus` and its claim's device condition, written by the
    device-health controller under its own identity, follow a device's health report."""
    from tests.kubectl.conftest import kubectl_on

    async with secure_sandbox(tmp_path) as (sb, logs), kubectl_on(sb, tmp_path) as kubectl:
        assert "certificate-authority-data" in sb.kubeconfig.read_text()
        await sb.client.create(f"resourceclaims.{R}", {"metadata": {"name": "gpu"}, "spec": {"devices": {
            "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}, namespace="default")
        pod = _pod("trainer", resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu"}])
        pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
        await sb.client.create("pods", pod, namespace="default")

        path = "{.status.containerStatuses[0].allocatedResourcesStatus[0].resources[0].health}"

        async def health_is(wanted: str) -> bool:
            result = await kubectl("get", "pod", "trainer", "-o", f"jsonpath={path}", check=False)
            return result.code == 0 and result.stdout == wanted

        await eventually(lambda: health_is("Unknown"), within=10, what="the device's health (no report yet)")
        claim = await sb.client.get(f"resourceclaims.{R}", "gpu", namespace="default")
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        await health.set_health(sb.client, result["driver"], result["pool"], result["device"], "Unhealthy", "ECC errors")
        await eventually(lambda: health_is("Unhealthy"), within=10, what="the report in the pod status")

        async def condition() -> bool:
            claim = await sb.client.get(f"resourceclaims.{R}", "gpu", namespace="default")
            conditions = [c for d in (claim.get("status") or {}).get("devices") or [] for c in d.get("conditions") or []]
            return any(c["type"] == "Ready" and c["status"] == "False" and c["reason"] == "DeviceUnhealthy"
                       for c in conditions)

        await eventually(condition, within=10, what="the claim's device condition")
        result = await kubectl("debug", "pod/trainer", "--image=busybox", "-c", "dbg")
        assert result.code == 0, result.stderr
        assert json.loads(await kubectl.jsonpath("pod", "trainer", path="{.spec.ephemeralContainers[0]}"))["name"] == "dbg"
        result = await kubectl("debug", "pod/nosuch", "--image=busybox", check=False)
        assert result.code == 1 and "panic" not in result.stderr
        assert result.stderr.strip() == 'Error from server (NotFound): pods "nosuch" not found'
    assert not refusals(logs), refusals(logs)
