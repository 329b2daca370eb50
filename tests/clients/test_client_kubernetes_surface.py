"""The official `kubernetes` 37.0.2 client on a simulated pod's container surface (issue #23):
`read_namespaced_pod_log` (with `tail_lines`) and `stream(connect_get_namespaced_pod_exec)`, whose
WebSocket speaks `v4.channel.k8s.io` (no close signal; the exit code from the error channel)."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes import client, config
from kubernetes.stream import stream

from cp import testing

FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "py"},
         "nodePools": [{"name": "node", "count": 1}]}


def _scenario(kubeconfig: str) -> None:
    with config.new_client_from_config(config_file=kubeconfig) as api_client:
        _calls(client.CoreV1Api(api_client))


def _calls(api: client.CoreV1Api) -> None:
    assert api.read_namespaced_pod_log("web", "default", tail_lines=1) == "GREETING=hi\n"
    for command, out, code in ((["printenv", "GREETING"], "hi\n", 0), (["sh", "-c", "echo x; exit 6"], "x\n", 6)):
        # Not preloaded: the client's preloading call leaves its socket open.
        resp = stream(api.connect_get_namespaced_pod_exec, "web", "default", command=command,
                      stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False)
        try:
            resp.run_forever(timeout=10)
            assert (resp.read_stdout(), resp.returncode) == (out, code)
        finally:
            resp.close()
            resp.sock.shutdown()  # websocket-client leaves the socket open once the server closed first


@pytest.mark.cplane(fleet=FLEET, controllers=[])
async def test_logs_and_exec_with_the_official_client(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    await sb.client.create("pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
        "spec": {"nodeName": "node-0", "containers": [{"name": "c", "image": "nginx",
                                                        "env": [{"name": "GREETING", "value": "hi"}]}]}},
        namespace="default")

    async def running() -> bool:
        pod = await sb.client.get("pods", "web", namespace="default")
        return pod.get("status", {}).get("phase") == "Running"

    await sb.wait_for(running)
    await asyncio.to_thread(_scenario, str(sb.kubeconfig))
