"""The container surface in the secure (default) mode: `cplane serve` with TLS, authentication and
RBAC and the demo fleet; kubectl logs, exec and port-forward as the admin through the API server's
proxy, a user with the `view` role may read logs but not exec, and the simulated kubelet's API
refuses callers the API server did not send (no token: 403 as system:anonymous, an unknown token
401, a token without `nodes/proxy` 403); the upstream example driver's quickstart check
(`kubectl logs pod0 -c ctr0 | grep GPU_DEVICE`) shows the GPU the fake driver's CDI spec injected."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path

import aiohttp
import pytest

from cp.testing import eventually
from tests.kubectl.conftest import KUBECTL
from tests.kubectl.test_secure import secure_serve

pytestmark = [pytest.mark.kubectl, pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")]

POD = """
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: main
    image: nginx
    ports: [{containerPort: 80}]
    env: [{name: GREETING, value: hello}, {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
"""

# The upstream example driver's quickstart, gpu-test1 style: one pod, one container, one GPU.
GPU_POD = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: single-gpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
---
apiVersion: v1
kind: Pod
metadata: {name: pod0}
spec:
  containers:
  - name: ctr0
    image: ubuntu:22.04
    command: ["bash", "-c"]
    args: ["export; trap 'exit 0' TERM; sleep 9999 & wait"]
    resources: {claims: [{name: gpu}]}
  resourceClaims: [{name: gpu, resourceClaimTemplateName: single-gpu}]
"""


async def test_logs_exec_and_port_forward_over_tls_with_rbac(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('alice-secret-token-123,alice,uid-1,"devs"\n')
    async with secure_serve(tmp_path, "--token-auth-file", str(tokens)) as k:
        code, _, err = await k("apply", "-f", "-", stdin=POD)
        assert code == 0, err
        code, _, err = await k("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")
        assert code == 0, err
        node = json.loads((await k("get", "pod", "web", "-o", "json"))[1])["spec"]["nodeName"]

        code, out, err = await k("logs", "web")
        assert code == 0, err
        lines = out.splitlines()
        assert lines[0] == "[cplane] container main started (image nginx)"
        assert lines[-2:] == ["GREETING=hello", f"NODE={node}"]
        # The `kubernetes` service's variables (the kubelet reads Services with the fleet's role).
        kubernetes = json.loads((await k("get", "service", "kubernetes", "-o", "json"))[1])
        assert f"KUBERNETES_SERVICE_HOST={kubernetes['spec']['clusterIP']}" in lines
        code, out, err = await k("exec", "web", "--", "env")
        assert (code, out.splitlines()[-2:]) == (0, ["GREETING=hello", f"NODE={node}"]), err
        code, _, err = await k("exec", "web", "--", "sh", "-c", "exit 7")
        assert code == 7, err

        # alice reads logs with `view`, but may not exec: `create pods/exec`, even for kubectl's WebSocket GET.
        assert (await k("create", "rolebinding", "alice-view", "--clusterrole=view", "--user=alice"))[0] == 0
        alice = ("--token", "alice-secret-token-123")
        await eventually(lambda: _ok(k(*alice, "logs", "web")), within=30, interval=0.3, what="alice's grant")
        code, _, err = await k(*alice, "exec", "web", "--", "env")
        assert code == 1
        assert 'User "alice" cannot create resource "pods/exec" in API group "" in the namespace "default"' in err

        # The kubelet API itself: no token, or a token the API server did not send, is refused.
        node_obj = json.loads((await k("get", "node", node, "-o", "json"))[1])
        endpoint = node_obj["metadata"]["annotations"]["sim.cplane.dev/kubelet-endpoint"]
        assert node_obj["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == int(endpoint.rsplit(":", 1)[1])
        url = f"http://{endpoint}/containerLogs/default/web/main"
        async with aiohttp.ClientSession() as session:
            async with session.get(url) as resp:
                assert resp.status == 403  # system:anonymous may not nodes/proxy
            async with session.get(url, headers={"Authorization": "Bearer alice-secret-token-123"}) as resp:
                assert resp.status == 403
                assert "Forbidden (user=alice, verb=get, resource=nodes, subresource=proxy)" in await resp.text()
            async with session.get(url, headers={"Authorization": "Bearer wrong"}) as resp:
                assert resp.status == 401

        # The example driver's verification step: the GPU the fake driver's CDI spec injected.
        code, _, err = await k("apply", "-f", "-", stdin=GPU_POD)
        assert code == 0, err
        code, _, err = await k("wait", "--for=condition=Ready", "pod/pod0", "--timeout=30s")
        assert code == 0, err
        code, out, err = await k("logs", "pod0", "-c", "ctr0")
        assert code == 0, err
        # `grep -E "GPU_DEVICE_[0-9]+=" | grep -v "RESOURCE_CLAIM"` of upstream's README; the pod runs
        # `bash -c "export; ..."`, so the environment is printed as bash's `export` prints it.
        gpus = [m.groups() for ln in out.splitlines() if "RESOURCE_CLAIM" not in ln
                for m in [re.fullmatch(r'declare -x (GPU_DEVICE_[0-9]+)="(gpu-[0-9]+)"', ln)] if m]
        assert len(gpus) == 1, out
        code, out, err = await k("exec", "pod0", "-c", "ctr0", "--", "printenv", gpus[0][0])
        assert (code, out) == (0, gpus[0][1] + "\n"), err

        # port-forward as the admin, over TLS.
        forward = await asyncio.create_subprocess_exec(
            str(KUBECTL), "port-forward", "pod/web", ":80", env=_env(tmp_path),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            assert forward.stdout is not None
            line = (await asyncio.wait_for(forward.stdout.readline(), 30)).decode()
            assert "-> 80" in line, line
            local = int(line.split("127.0.0.1:")[1].split()[0])
            async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{local}/") as resp:
                assert await resp.text() == "cplane: simulated pod default/web, container main, port 80\n"
        finally:
            forward.terminate()
            await forward.wait()


def _env(tmp_path: Path) -> dict[str, str]:
    """kubectl as the admin with secure_serve's HOME and kubeconfig."""
    return {**os.environ, "HOME": str(tmp_path / "home"), "KUBECONFIG": str(tmp_path / "data" / "kubeconfig")}


async def _ok(result) -> bool:  # type: ignore[no-untyped-def]
    code, _, _ = await result
    return bool(code == 0)

