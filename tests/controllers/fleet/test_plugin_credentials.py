"""Issue #23: the credentials a real DRA kubelet plugin uses on a simulated node, over TLS with RBAC.

The fleet (acting as its own ServiceAccount, as `cplane serve` runs it) writes `ROOT/<node>/kubeconfig`
with a token of `kube-system/dra-kubelet-plugin` bound to the Node. With it a plugin may write its
node's ResourceSlices and the `status.devices` of claims allocated on its node, and is refused for
another node's with upstream's messages (the slice policy's denial is a 422, as a policy validation
without a `reason` is upstream; the granular status check a 403); the token dies with its Node."""

from __future__ import annotations

import asyncio
import base64
import json
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import structlog.testing

from api import auth
from api import server as servers
from controllers import fleet as fleets
from controllers import registry
from controllers.runtime import client as clients
from cp import errors, kubeconfig, kubeletplugins, rbac
from storage import memory
from tests.kubectl.conftest import KUBECTL
from tests.waiting import eventually

FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "plugins"},
         "nodePools": [{"name": "node", "count": 2}]}
DRIVER = "plugin.example.com"
SLICES = "resourceslices.resource.k8s.io"
CLAIMS = "resourceclaims.resource.k8s.io"
POLICY = kubeletplugins.POLICY


class Cluster:
    def __init__(self, srv: servers.Running, admin: clients.Client, root: Path) -> None:
        self.srv, self.admin, self.root = srv, admin, root


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    log = memory.MemoryEventLog()
    await log.start()
    root = tmp_path / "nodes"
    try:
        async with servers.running(data_dir=tmp_path / "data", event_log=log, secure=True) as srv:
            assert srv.auth is not None and srv.auth.credentials is not None
            ca = srv.auth.credentials.ca_cert

            def identity(name: str) -> clients.Client:
                return clients.Client(srv.url, token=auth.controller_token(srv.auth, name),
                                      ssl_context=auth.client_ssl_context(ca), root_ca=ca.decode())

            stop, ready = asyncio.Event(), asyncio.Event()
            task = asyncio.ensure_future(registry.run_controllers(
                server_url=srv.url, names=["fleet"], stop_event=stop, ready=ready, identities=identity,
                overrides={fleets.NAME: fleets.factory(fleets.fleet_from_dict(FLEET), kubelet_root=root)}))
            await asyncio.wait_for(ready.wait(), 20)
            async with clients.Client(srv.url, token=srv.auth.credentials.admin_token,
                                      ssl_context=auth.client_ssl_context(ca)) as admin:
                try:
                    yield Cluster(srv, admin, root)
                finally:
                    stop.set()
                    await asyncio.wait_for(task, 20)
    finally:
        await log.close()


async def _plugin(cluster: Cluster, node: str) -> clients.Client:
    path = cluster.root / node / "kubeconfig"
    await eventually(path.exists, within=20, what=f"{path} written")
    return clients.Client.from_kubeconfig(path)


def _slice(name: str, *, node: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": DRIVER, "pool": {"name": node or "shared", "generation": 1,
                                                       "resourceSliceCount": 1},
                            "devices": [{"name": "gpu-0"}]}
    if node is None:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def _allocated_on(node: str) -> dict[str, Any]:
    return {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": node, "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}


def _device_status(node: str) -> dict[str, Any]:
    return {"status": {"devices": [{"driver": DRIVER, "pool": node, "device": "gpu-0", "conditions": [
        {"type": "Ready", "status": "True", "reason": "Prepared", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]}}


def _denied(name: str, detail: str) -> str:
    return (f'resourceslices.resource.k8s.io "{name}" is forbidden: ValidatingAdmissionPolicy \'{POLICY}\' '
            f"with binding '{POLICY}' denied request: {detail}")


async def test_the_kubeconfig_names_the_server_its_ca_and_a_node_bound_identity(cluster: Cluster) -> None:
    plugin = await _plugin(cluster, "node-0")
    try:
        path = cluster.root / "node-0" / "kubeconfig"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        ep = kubeconfig.load(path)
        assert ep.server == cluster.srv.url and ep.server.startswith("https://")
        assert cluster.srv.auth is not None and cluster.srv.auth.credentials is not None
        assert base64.b64decode(ep.ca_data) == cluster.srv.auth.credentials.ca_cert
        review = await plugin._json("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                    body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        info = review["status"]["userInfo"]
        assert info["username"] == "system:serviceaccount:kube-system:dra-kubelet-plugin"
        assert info["extra"][kubeletplugins.NODE_NAME_EXTRA] == ["node-0"]
        assert "authentication.kubernetes.io/node-uid" in info["extra"]
        assert (cluster.root / "node-1" / "kubeconfig").exists()
        # Nothing but what the example driver's chart grants: no pods, no secrets.
        with pytest.raises(errors.Forbidden):
            await plugin.list("pods", namespace="default")
        await plugin.get("nodes", "node-0")
    finally:
        await plugin.close()


async def test_a_plugin_writes_its_nodes_slices_only(cluster: Cluster) -> None:
    plugin = await _plugin(cluster, "node-0")
    try:
        mine = await plugin.create(SLICES, _slice("node-0-plugin", node="node-0"))
        mine["spec"]["devices"].append({"name": "gpu-1"})
        mine = await plugin.update(SLICES, mine)
        assert mine["metadata"]["generation"] == 2
        await plugin.patch(SLICES, "node-0-plugin", {"metadata": {"labels": {"a": "b"}}})
        # A policy's validation without a `reason` denies as Invalid (422), as upstream's does.
        with pytest.raises(errors.Invalid) as refused:
            await plugin.create(SLICES, _slice("node-1-plugin", node="node-1"))
        assert str(refused.value) == _denied("node-1-plugin",
                                             "this user running on node 'node-0' may not modify resourceslices "
                                             "on node 'node-1'")
        with pytest.raises(errors.Invalid) as refused:
            await plugin.create(SLICES, _slice("everywhere", node=None))
        assert str(refused.value) == _denied("everywhere",
                                             "this user running on node 'node-0' may not modify cluster "
                                             "resourceslices")
        # Another node's slice (the admin wrote it) may be read, not deleted.
        await cluster.admin.create(SLICES, _slice("node-1-plugin", node="node-1"))
        assert (await plugin.get(SLICES, "node-1-plugin"))["spec"]["nodeName"] == "node-1"
        with pytest.raises(errors.Invalid) as refused:
            await plugin.delete(SLICES, "node-1-plugin")
        assert "may not modify resourceslices on node 'node-1'" in str(refused.value)
        await plugin.delete(SLICES, "node-0-plugin")
    finally:
        await plugin.close()


async def test_a_plugin_writes_device_status_of_claims_on_its_node_only(cluster: Cluster) -> None:
    plugin = await _plugin(cluster, "node-0")
    try:
        for node in ("node-0", "node-1"):
            claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                     "metadata": {"name": f"on-{node}", "namespace": "default"},
                     "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}
            await cluster.admin.create(CLAIMS, claim)
            await cluster.admin.patch(CLAIMS, f"on-{node}", {"status": {"allocation": _allocated_on(node)}},
                                      namespace="default", subresource="status")
        out = await plugin.patch(CLAIMS, "on-node-0", _device_status("node-0"), namespace="default",
                                 subresource="status")
        assert out["status"]["devices"][0]["driver"] == DRIVER
        with pytest.raises(errors.Forbidden) as refused:
            await plugin.patch(CLAIMS, "on-node-1", _device_status("node-1"), namespace="default",
                               subresource="status")
        assert str(refused.value) == (
            f'resourceclaims.resource.k8s.io "{DRIVER}" is forbidden: User "{kubeletplugins.USER}" cannot '
            'arbitrary-node:patch resource "resourceclaims/driver" in API group "resource.k8s.io" in the '
            'namespace "default"')
        # Allocation is the scheduler's (resourceclaims/binding), not the plugin's.
        with pytest.raises(errors.Forbidden):
            await plugin.patch(CLAIMS, "on-node-0", {"status": {"allocation": None}}, namespace="default",
                               subresource="status")
    finally:
        await plugin.close()


async def test_the_token_dies_with_its_node(cluster: Cluster) -> None:
    plugin = await _plugin(cluster, "node-1")
    try:
        await plugin.get("nodes", "node-1")
        await cluster.admin.delete("nodes", "node-1")

        async def refused() -> bool:
            try:
                await plugin.get("nodes", "node-0")
            except errors.Unauthorized:
                return True
            return False

        await eventually(refused, within=10, what="node-1's plugin token refused")
    finally:
        await plugin.close()


def test_the_fleet_may_ask_for_the_plugin_account_only() -> None:
    policy = rbac.default_policy()
    fleet = rbac.UserInfo(name=rbac.service_account_user("kube-system", "fleet-simulator"),
                          groups=rbac.service_account_groups("kube-system"))

    def may(name: str) -> bool:
        return policy.authorize(rbac.Attributes(user=fleet, verb="create", resource="serviceaccounts",
                                                subresource="token", namespace="kube-system",
                                                name=name)).allowed

    assert may(kubeletplugins.ACCOUNT)
    assert not may("default")


@pytest.mark.kubectl
@pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")
async def test_kubectl_with_a_nodes_kubeconfig(cluster: Cluster, tmp_path: Path) -> None:
    """The real kubectl 1.37.1 reads the kubeconfig as written (CA, token) and sees the plugin's identity."""
    path = cluster.root / "node-1" / "kubeconfig"
    await eventually(path.exists, within=20, what=f"{path} written")

    async def kubectl(*args: str, stdin: str = "") -> tuple[int, str, str]:
        assert KUBECTL is not None
        proc = await asyncio.create_subprocess_exec(
            str(KUBECTL), "--kubeconfig", str(path), *args, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), 30)
        return proc.returncode or 0, out.decode(), err.decode()

    code, out, err = await kubectl("auth", "whoami", "-o", "json")
    assert code == 0, err
    user = json.loads(out)["status"]["userInfo"]
    assert user["username"] == kubeletplugins.USER
    assert user["extra"][kubeletplugins.NODE_NAME_EXTRA] == ["node-1"]
    code, out, err = await kubectl("create", "-f", "-", stdin=json.dumps(_slice("node-1-gpus", node="node-1")))
    assert code == 0, err
    assert out.strip() == "resourceslice.resource.k8s.io/node-1-gpus created"
    code, out, err = await kubectl("create", "-f", "-", stdin=json.dumps(_slice("node-0-gpus", node="node-0")))
    assert code == 1
    # kubectl prints a 422 by its causes (a policy's denial has one, its message).
    assert err.strip() == ('The resourceslices "node-0-gpus" is invalid: : ValidatingAdmissionPolicy '
                           f"'{POLICY}' with binding '{POLICY}' denied request: this user running on node "
                           "'node-1' may not modify resourceslices on node 'node-0'")
    code, out, err = await kubectl("get", "pods", "-A")
    assert code == 1 and "Error from server (Forbidden)" in err


async def test_an_insecure_server_gets_a_kubeconfig_without_a_token(tmp_path: Path) -> None:
    """`cplane serve --insecure` authenticates nobody: the kubeconfig names the server only (the
    token is asked for once, and refused: no account is made without authentication)."""
    log = memory.MemoryEventLog()
    await log.start()
    root = tmp_path / "nodes"
    try:
        async with servers.running(data_dir=tmp_path / "data", event_log=log, secure=False) as srv:
            with structlog.testing.capture_logs() as logs:
                stop, ready = asyncio.Event(), asyncio.Event()
                task = asyncio.ensure_future(registry.run_controllers(
                    server_url=srv.url, names=["fleet"], stop_event=stop, ready=ready,
                    overrides={fleets.NAME: fleets.factory(fleets.fleet_from_dict(FLEET), kubelet_root=root)}))
                try:
                    await asyncio.wait_for(ready.wait(), 20)
                    path = root / "node-0" / "kubeconfig"
                    await eventually(path.exists, within=20, what=f"{path} written")
                    ep = kubeconfig.load(path)
                    assert (ep.server, ep.token) == (srv.url, "")
                    for sub in ("plugins_registry", "plugins", "cdi"):
                        assert (root / "node-0" / sub).is_dir()
                    async with clients.Client.from_kubeconfig(path) as plugin:
                        await plugin.create(SLICES, _slice("node-1-plugin", node="node-1"))  # nobody is restricted
                    await eventually((root / "node-1" / "kubeconfig").exists, within=20, what="node-1's kubeconfig")
                finally:
                    stop.set()
                    await asyncio.wait_for(task, 20)
            refusals = [e for e in logs if e["event"] == "node_credentials_without_token"]
            assert len(refusals) == 1 and refusals[0]["code"] == 404, refusals
    finally:
        await log.close()


async def test_a_node_made_by_hand_and_made_again_gets_a_fresh_token(cluster: Cluster) -> None:
    path = cluster.root / "by-hand" / "kubeconfig"
    await cluster.admin.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "by-hand"}})
    await eventually(path.exists, within=20, what=f"{path} written")
    first = kubeconfig.load(path).token
    await cluster.admin.delete("nodes", "by-hand")
    await cluster.admin.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "by-hand"}})
    await eventually(lambda: kubeconfig.load(path).token != first, within=20, what="a new token")
    async with clients.Client.from_kubeconfig(path) as plugin:
        await plugin.create(SLICES, _slice("by-hand-plugin", node="by-hand"))
