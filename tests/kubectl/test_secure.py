"""End to end: `cplane serve` (TLS and authentication by default) with its controllers and the demo
fleet, driven by the real kubectl over TLS with a fresh HOME per run; `cplane kubeconfig create`
for a restricted user; controllers acting with their own identities; no secret in the logs or in
the event-log export."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from cp.testing import eventually
from tests.kubectl.conftest import KUBECTL

ROOT = Path(__file__).resolve().parents[2]
CPLANE = [sys.executable, "-c", "from cp.cli import main; raise SystemExit(main())"]
pytestmark = [pytest.mark.kubectl, pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")]

CLAIM = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: gpu}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
---
apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  containers: [{name: c, image: busybox}]
  resourceClaims: [{name: gpu, resourceClaimName: gpu}]
"""


async def run(*args: str, kubeconfig: Path | None = None, home: Path, stdin: str | None = None,
              timeout: float = 30) -> tuple[int, str, str]:  # noqa: ASYNC109
    env = {**os.environ, "HOME": str(home)}
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    proc = await asyncio.create_subprocess_exec(*args, env=env, stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin else None), timeout)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_kubectl_over_tls_with_restricted_users_and_controller_identities(tmp_path: Path) -> None:
    data = tmp_path / "data"
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('alice-secret-token-123,alice,uid-1,"devs"\n')
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log_file:
        server = await asyncio.create_subprocess_exec(
            *CPLANE, "serve", "--data-dir", str(data), "--port", "0", "--fleet",
            str(ROOT / "examples/fleets/demo.yaml"), "--token-auth-file", str(tokens), "--log-format", "json",
            stdout=log_file, stderr=asyncio.subprocess.STDOUT, cwd=ROOT)
    kubectl = str(KUBECTL)
    try:
        admin = data / "kubeconfig"
        await eventually(lambda: _ready(admin), within=30, interval=0.3, what="the kubeconfig")
        assert stat.S_IMODE(admin.stat().st_mode) == 0o600
        text = admin.read_text()
        assert "server: https://127.0.0.1:" in text and "certificate-authority-data:" in text
        home = tmp_path / "home"
        home.mkdir()

        async def k(*args: str, kubeconfig: Path = admin, stdin: str | None = None) -> tuple[int, str, str]:
            return await run(kubectl, *args, kubeconfig=kubeconfig, home=home, stdin=stdin)

        await eventually(lambda: _ok(k("get", "--raw", "/readyz")), within=30, interval=0.3, what="readyz")
        code, out, err = await k("get", "pods")
        assert code == 0 and "No resources found in default namespace." in out + err
        code, out, _ = await k("auth", "whoami", "-o", "json")
        assert code == 0
        assert json.loads(out)["status"]["userInfo"] == {"username": "cplane-admin",
                                                         "groups": ["system:masters", "system:authenticated"]}
        assert (await k("auth", "can-i", "create", "pods"))[1].strip() == "yes"

        # A restricted user from `cplane kubeconfig create`.
        bob = tmp_path / "bob.kubeconfig"
        code, _, err = await run(*CPLANE, "kubeconfig", "create", "bob", "--group", "devs", "--group", "qa",
                                 "--data-dir", str(data), "-o", str(bob), home=home)
        assert code == 0, err
        assert stat.S_IMODE(bob.stat().st_mode) == 0o600 and "client-certificate-data" in bob.read_text()
        code, out, err = await k("get", "pods", kubeconfig=bob)
        assert code == 1
        assert ('Error from server (Forbidden): pods is forbidden: User "bob" cannot list resource "pods" in API '
                'group "" in the namespace "default"') in err
        code, out, _ = await k("auth", "whoami", kubeconfig=bob)
        assert code == 0 and re.search(r"Username\s+bob", out) and "[devs qa system:authenticated]" in out
        code, out, _ = await k("auth", "can-i", "list", "pods", kubeconfig=bob)
        assert (code, out.strip()) == (1, "no")
        assert (await k("create", "rolebinding", "bob-view", "--clusterrole=view", "--user=bob"))[0] == 0
        await eventually(lambda: _ok(k("get", "pods", kubeconfig=bob)), within=30, interval=0.3,
                         what="bob's grant")
        assert (await k("auth", "can-i", "list", "pods", kubeconfig=bob))[1].strip() == "yes"
        assert (await k("auth", "can-i", "delete", "pods", kubeconfig=bob))[1].strip() == "no"
        assert (await k("auth", "can-i", "list", "pods", "--as", "bob"))[1].strip() == "yes"
        code, _, err = await k("delete", "rolebinding", "bob-view", kubeconfig=bob)
        assert code == 1 and "Forbidden" in err
        # A token-file user.
        code, out, _ = await k("--token", "alice-secret-token-123", "auth", "whoami", "-o", "json")
        assert json.loads(out)["status"]["userInfo"]["username"] == "alice"
        code, _, err = await k("--token", "wrong", "get", "pods")
        assert code == 1 and "Unauthorized" in err

        # The cplane CLI reads the CA and token from the kubeconfig too.
        code, out, err = await run(*CPLANE, "clock", "show", "--kubeconfig", str(admin), home=home)
        assert code == 0 and out.startswith("mode: Real"), err

        # Controllers with their own identities: a Deployment and a DRA workload come up.
        assert (await k("create", "deployment", "web", "--image=nginx", "--replicas=2"))[0] == 0
        assert (await k("expose", "deployment", "web", "--port=80"))[0] == 0  # the endpoints controllers write
        assert (await k("apply", "-f", "-", stdin=CLAIM))[0] == 0

        async def running() -> bool:
            code, out, _ = await k("get", "pods", "-o", "json")
            pods = json.loads(out)["items"] if code == 0 else []
            return len(pods) == 3 and all(p["status"].get("phase") == "Running" for p in pods)

        await eventually(running, within=45, interval=0.3, what="pods Running")
        code, out, _ = await k("get", "resourceclaim", "gpu", "-o", "json")
        status = json.loads(out)["status"]
        assert status["allocation"]["devices"]["results"][0]["driver"] == "gpu.example.com"
        assert status["devices"][0]["driver"] == "gpu.example.com"  # written by the simulated driver
        assert status["reservedFor"][0]["name"] == "trainer"
        # Every pod runs as `default`, with its token volume; the controllers keep that account and the
        # root CA in each namespace; its token works and is never logged.
        pod = json.loads((await k("get", "pod", "trainer", "-o", "json"))[1])
        assert pod["spec"]["serviceAccountName"] == "default"
        assert pod["spec"]["volumes"][-1]["name"].startswith("kube-api-access-")
        code, out, _ = await k("get", "configmap", "kube-root-ca.crt", "-o", "json")
        assert code == 0 and json.loads(out)["data"]["ca.crt"] == (data / "pki" / "ca.crt").read_text()
        code, token, err = await k("create", "token", "default")
        assert code == 0, err
        code, out, _ = await k("--token", token.strip(), "auth", "whoami", "-o", "json")
        assert json.loads(out)["status"]["userInfo"]["username"] == "system:serviceaccount:default:default"
        code, _, err = await k("create", "secret", "generic", "s", "--from-literal=password=s3cr3t-value-1234")
        assert code == 0, err
        # The rest of the cluster over TLS, as the admin: cluster-info, and a drain that evicts through a
        # PodDisruptionBudget the disruption controller keeps.
        code, out, err = await k("cluster-info")
        assert code == 0 and "Kubernetes control plane is running at https://127.0.0.1:" in out, err
        assert (await k("create", "pdb", "web", "--selector=app=web", "--min-available=1"))[0] == 0
        code, out, _ = await k("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].spec.nodeName}")
        code, out, err = await k("drain", out, "--pod-selector=app=web", "--ignore-daemonsets", "--timeout=60s")
        assert code == 0 and "evicted" in out, err
        await eventually(running, within=45, interval=0.3, what="the evicted pod replaced")
        secrets = [admin_token(admin), "alice-secret-token-123", token.strip()]
        secrets += [p.read_text().strip().splitlines()[1] for p in (data / "pki").glob("*.key")]
    finally:
        server.terminate()
        await asyncio.wait_for(server.wait(), 20)
    logs = log_path.read_text()
    actors = set()
    for line in logs.splitlines():
        if line.startswith("{") and '"event": "request"' in line:
            entry = json.loads(line)
            actors.add(entry["user"])
            if entry["code"] in (401, 403) and entry["user"].startswith(("system:serviceaccount:kube-system:",
                                                                          "system:kube-")):
                # The only refusal a controller may see is a namespace being terminated.
                raise AssertionError(f"controller refused: {line}")
    assert {"system:kube-controller-manager", "system:kube-scheduler",
            "system:serviceaccount:kube-system:replicaset-controller",
            "system:serviceaccount:kube-system:deployment-controller",
            "system:serviceaccount:kube-system:fleet-simulator",
            "system:serviceaccount:kube-system:endpointslice-controller",
            "system:serviceaccount:kube-system:endpoint-controller",
            "system:serviceaccount:kube-system:service-account-controller",
            "system:serviceaccount:kube-system:root-ca-cert-publisher",
            "system:serviceaccount:kube-system:disruption-controller", "cplane-admin", "bob", "alice"} <= actors, actors
    code, export, err = await run(*CPLANE, "log", "export", "--data-dir", str(data), home=tmp_path)
    assert code == 0, err
    assert '"user":"system:kube-scheduler"' in export.replace(" ", "") or "system:kube-scheduler" in export
    assert "s3cr3t-value-1234" not in logs
    for secret in secrets:
        assert secret not in logs, "a secret in the server log"
        assert secret not in export, "a secret in the event log export"


async def test_insecure_refuses_other_hosts_and_token_files(tmp_path: Path) -> None:
    code, _, err = await run(*CPLANE, "serve", "--data-dir", str(tmp_path), "--insecure", "--host", "0.0.0.0",
                             home=tmp_path)
    assert code == 2 and "loopback" in err
    code, _, err = await run(*CPLANE, "serve", "--data-dir", str(tmp_path), "--insecure", "--token-auth-file",
                             "x.csv", home=tmp_path)
    assert code == 2
    code, _, err = await run(*CPLANE, "kubeconfig", "create", "x", "--data-dir", str(tmp_path), home=tmp_path)
    assert code == 1 and "no CA" in err


def admin_token(kubeconfig: Path) -> str:
    return next(line.split(":", 1)[1].strip() for line in kubeconfig.read_text().splitlines()
                if line.strip().startswith("token:"))


def _ready(path: Path) -> bool:
    return path.exists() and "https://" in path.read_text()


async def _ok(result) -> bool:
    code, _, _ = await result
    return code == 0



Kubectl = Callable[..., Awaitable[tuple[int, str, str]]]


@contextlib.asynccontextmanager
async def secure_serve(tmp_path: Path, *flags: str, fleet: bool = True) -> AsyncIterator[Kubectl]:
    """`cplane serve` with TLS, authentication and RBAC on (its defaults) and the demo fleet (`fleet=False`:
    none), logging to `tmp_path/server.log`; yields the real kubectl as the admin, with a fresh HOME,
    once ready."""
    data = tmp_path / "data"
    fleet_flags = ["--fleet", str(ROOT / "examples/fleets/demo.yaml")] if fleet else []
    with (tmp_path / "server.log").open("wb") as log_file:
        server = await asyncio.create_subprocess_exec(
            *CPLANE, "serve", "--data-dir", str(data), "--port", "0", *fleet_flags, *flags,
            stdout=log_file, stderr=asyncio.subprocess.STDOUT, cwd=ROOT)
    try:
        admin = data / "kubeconfig"
        await eventually(lambda: _ready(admin), within=30, interval=0.3, what="the kubeconfig")
        home = tmp_path / "home"
        home.mkdir()

        async def k(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
            return await run(str(KUBECTL), *args, kubeconfig=admin, home=home, stdin=stdin)

        await eventually(lambda: _ok(k("get", "--raw", "/readyz")), within=30, interval=0.3, what="readyz")
        yield k
    finally:
        server.terminate()
        await asyncio.wait_for(server.wait(), 20)


JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: quick, namespace: team}
spec:
  completions: 2
  template:
    metadata:
      annotations: {sim.cplane.dev/run-seconds: "1"}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
"""


async def test_crds_policies_and_batch_over_tls_with_rbac(tmp_path: Path) -> None:
    """Issues #19 and #20 with TLS, authentication and RBAC on, each controller as its own account:
    a CRD and an admission policy from examples/crds, a user without a binding refused the new kind,
    the policy's denial, a Job run to completion by the job controller, and the namespace controller
    emptying a deleted namespace of its custom resources."""
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('alice-secret-token-123,alice,uid-1,"devs"\n')
    async with secure_serve(tmp_path, "--token-auth-file", str(tokens)) as k:
        code, out, err = await k("apply", "-f", str(ROOT / "examples/crds/widgets.yaml"))
        assert code == 0, err
        code, _, err = await k("wait", "--for", "condition=Established", "crd/widgets.example.com", "--timeout=20s")
        assert code == 0, err
        assert (await k("create", "namespace", "team"))[0] == 0
        code, out, err = await k("apply", "-n", "team", "-f", str(ROOT / "examples/crds/widget.yaml"))
        assert code == 0, err

        # alice is authenticated but bound to nothing: the new kind is RBAC's like any other
        code, _, err = await k("--token", "alice-secret-token-123", "get", "widgets", "-n", "team")
        assert code == 1 and 'User "alice" cannot list resource "widgets" in API group "example.com"' in err

        assert (await k("apply", "-f", str(ROOT / "examples/crds/no-red-widgets.yaml")))[0] == 0
        code, _, err = await k("patch", "widget", "blue", "-n", "team", "--type", "merge", "-p",
                               '{"spec":{"color":"red"}}')
        assert code == 1 and "widget blue may not be red" in err

        code, _, err = await k("apply", "-f", "-", stdin=JOB)
        assert code == 0, err
        code, out, err = await k("wait", "--for=condition=complete", "job/quick", "-n", "team", "--timeout=30s")
        assert code == 0, err

        code, _, err = await k("delete", "namespace", "team", "--timeout=60s")
        assert code == 0, err
        code, out, _ = await k("get", "widgets", "-A", "-o", "name")
        assert out.strip() == ""


SERVICE = """
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
"""


async def test_scheduler_plugins_and_preemption_over_tls_with_rbac(tmp_path: Path) -> None:
    """Issue #21 with TLS, authentication and RBAC on, the scheduler as `system:kube-scheduler`: the
    informers its plugins need (Services, ReplicaSets, StatefulSets, ReplicationControllers for
    PodTopologySpread's defaults, PodDisruptionBudgets for preemption, volumes for VolumeBinding) are
    readable, required anti-affinity places one web pod per node and refuses a third with upstream's
    message, and a high-priority pod preempts a web pod (DisruptionTarget, nominatedNodeName)."""
    async with secure_serve(tmp_path) as k:
        assert (await k("apply", "-f", "-", stdin=SERVICE))[0] == 0
        code, _, err = await k("apply", "-f", str(ROOT / "examples/scheduling/web.yaml"))
        assert code == 0, err

        async def web_nodes() -> list[str] | None:
            code, out, _ = await k("get", "pods", "-l", "app=web", "-o", "json")
            pods = json.loads(out)["items"] if code == 0 else []
            nodes = sorted(p["spec"].get("nodeName") or "" for p in pods)
            return nodes if len(pods) == 2 and all(nodes) else None
        assert await eventually(web_nodes, within=30, interval=0.3, what="two web pods bound") == [
            "gpu-node-0", "gpu-node-1"]
        assert (await k("scale", "deploy", "web", "--replicas=3"))[0] == 0

        async def pending_message() -> str | None:
            _, out, _ = await k("get", "pods", "-l", "app=web", "-o", "json")
            for p in json.loads(out)["items"]:
                for c in p.get("status", {}).get("conditions") or []:
                    if c["type"] == "PodScheduled" and c["status"] == "False":
                        return str(c["message"])
            return None
        message = await eventually(pending_message, within=30, interval=0.3, what="the third pod's message")
        assert message.startswith("0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.")

        code, _, err = await k("apply", "-f", str(ROOT / "examples/scheduling/urgent.yaml"))
        assert code == 0, err

        async def nominated() -> str | None:
            # Binding clears the nomination (ClearingNominatedNodeNameAfterBinding): on a slow machine
            # the victim may be gone and urgent bound before kubectl looks, so its node counts too.
            _, out, _ = await k("get", "pod", "urgent", "-o",
                                "jsonpath={.status.nominatedNodeName}{\"|\"}{.spec.nodeName}")
            nominated_node, _, bound_node = out.strip().partition("|")
            return nominated_node or bound_node or None
        node = await eventually(nominated, within=30, interval=0.3, what="urgent nominated")
    # The victim may be gone by the time kubectl could list it (its grace period is short, and the
    # machine may be slow): its DisruptionTarget is read from the event log once the server stopped.
    code, export, err = await run(*CPLANE, "log", "export", "--data-dir", str(tmp_path / "data"), home=tmp_path)
    assert code == 0, err
    victims = set()
    for line in export.splitlines():
        event = json.loads(line)
        pod = event.get("object") or {}
        if event.get("resource") == "pods" and (pod.get("metadata", {}).get("labels") or {}).get("app") == "web" \
                and pod.get("spec", {}).get("nodeName") == node \
                and any(c["type"] == "DisruptionTarget" and c.get("reason") == "PreemptionByScheduler"
                        for c in (pod.get("status") or {}).get("conditions") or []):
            victims.add(pod["metadata"]["name"])
    assert len(victims) == 1, victims
    log = (tmp_path / "server.log").read_text()
    assert "forbidden" not in log.lower(), [line for line in log.splitlines() if "forbidden" in line.lower()][:5]


async def test_large_lists_and_the_fleet_as_its_own_process_over_tls_with_rbac(tmp_path: Path) -> None:
    """Issue #22 with TLS, authentication and RBAC on: the fleet runs as its own process with a
    kubeconfig (its lean keep-alive client over TLS) and brings its nodes Ready with their Leases and
    slices; a list large enough to be streamed (600 ConfigMaps of 2 KB, over 1 MiB) reads whole with
    kubectl as JSON and as a table, under a small `--watch-cache-memory`."""
    async with secure_serve(tmp_path, "--watch-cache-memory", "64Mi", "--no-controllers", fleet=False) as k:
        kubeconfig = tmp_path / "data" / "kubeconfig"
        with (tmp_path / "fleet.log").open("wb") as log_file:
            fleet = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "controllers.fleet", "--kubeconfig", str(kubeconfig),
                "--fleet", str(ROOT / "examples/fleets/demo.yaml"),
                stdout=log_file, stderr=asyncio.subprocess.STDOUT, cwd=ROOT)
        try:
            async def ready_nodes() -> list[str] | None:
                code, out, _ = await k("get", "nodes", "-o", "json")
                nodes = json.loads(out)["items"] if code == 0 else []
                ready = sorted(n["metadata"]["name"] for n in nodes
                               if any(c["type"] == "Ready" and c["status"] == "True"
                                      for c in n.get("status", {}).get("conditions", [])))
                return ready if len(ready) == 2 else None
            assert await eventually(ready_nodes, within=30, interval=0.3,
                                    what="the fleet's nodes Ready") == ["gpu-node-0", "gpu-node-1"]
            code, out, err = await k("get", "leases", "-n", "kube-node-lease", "-o", "json")
            assert code == 0, err
            assert sorted(lease["spec"]["holderIdentity"] for lease in json.loads(out)["items"]) == [
                "gpu-node-0", "gpu-node-1"]
            code, out, err = await k("get", "resourceslices", "-o", "json")
            assert code == 0 and len(json.loads(out)["items"]) == 4, err
        finally:
            fleet.terminate()
            await asyncio.wait_for(fleet.wait(), 20)
        items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"big-{i:03d}"},
                  "data": {"payload": f"{i:03d}" + "x" * 2000}} for i in range(600)]
        code, _, err = await k("create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                     "items": items}))
        assert code == 0, err
        # --chunk-size=0: one LIST of every ConfigMap (kubectl pages by 500 otherwise), which the server streams
        code, out, err = await k("get", "configmaps", "-o", "json", "--chunk-size=0")
        assert code == 0, err
        listed = [cm for cm in json.loads(out)["items"] if cm["metadata"]["name"].startswith("big-")]
        assert [cm["metadata"]["name"] for cm in listed] == [f"big-{i:03d}" for i in range(600)]
        assert all(cm["data"]["payload"][:3] == cm["metadata"]["name"][4:] for cm in listed)
        code, out, err = await k("get", "configmaps", "--no-headers", "--chunk-size=0")
        assert code == 0, err
        assert sum(1 for line in out.splitlines() if line.startswith("big-")) == 600

