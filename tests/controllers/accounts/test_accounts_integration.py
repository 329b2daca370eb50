"""The ServiceAccounts controller and the root CA publisher against an in-process API server:
every namespace gets its `default` ServiceAccount and its `kube-root-ca.crt` ConfigMap, both come
back when deleted, the ConfigMap's data and description are put back when changed, and a namespace
being deleted gets neither."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import pytest

from api import server as servers
from controllers import registry, rootcacert, serviceaccount
from controllers.runtime import client as clients
from cp import certs, errors
from tests.waiting import eventually

CA = certs.new_ca(now=dt.datetime.now(dt.UTC).timestamp())[0].decode()


@pytest.fixture
async def controllers(srv: servers.Running) -> AsyncIterator[None]:
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.ensure_future(registry.run_controllers(
        server_url=srv.url, stop_event=stop, ready=ready, names=[serviceaccount.NAME, rootcacert.NAME],
        overrides={rootcacert.NAME: rootcacert.factory(ca=CA)}))
    await asyncio.wait_for(ready.wait(), 10)
    yield
    stop.set()
    await asyncio.wait_for(task, 10)


async def _get(client: clients.Client, resource: str, ns: str, name: str) -> dict[str, Any] | None:
    try:
        return await client.get(resource, name, namespace=ns)
    except errors.NotFound:
        return None


async def _published(client: clients.Client, ns: str) -> bool:
    cm = await _get(client, "configmaps", ns, "kube-root-ca.crt")
    return cm is not None and cm.get("data") == {"ca.crt": CA} and \
        cm["metadata"]["annotations"]["kubernetes.io/description"] == rootcacert.DESCRIPTION


async def _has_default(client: clients.Client, ns: str) -> bool:
    return await _get(client, "serviceaccounts", ns, "default") is not None


@pytest.mark.usefixtures("controllers")
async def test_every_namespace_gets_a_default_account_and_the_root_ca(client: clients.Client) -> None:
    for ns in ("default", "kube-system"):
        await eventually(lambda ns=ns: _has_default(client, ns), what=f"default SA in {ns}")
        await eventually(lambda ns=ns: _published(client, ns), what=f"root CA in {ns}")
    await client.create("namespaces", {"metadata": {"name": "app"}})
    await eventually(lambda: _has_default(client, "app"), what="default SA in app")
    await eventually(lambda: _published(client, "app"), what="root CA in app")
    sa = await client.get("serviceaccounts", "default", namespace="app")
    assert set(sa) == {"apiVersion", "kind", "metadata"}


@pytest.mark.usefixtures("controllers")
async def test_deleted_or_changed_objects_come_back(client: clients.Client) -> None:
    await client.create("namespaces", {"metadata": {"name": "app"}})
    await eventually(lambda: _has_default(client, "app"), what="default SA")
    await eventually(lambda: _published(client, "app"), what="root CA")
    first = await client.get("serviceaccounts", "default", namespace="app")
    await client.delete("serviceaccounts", "default", namespace="app")

    async def recreated() -> bool:
        sa = await _get(client, "serviceaccounts", "app", "default")
        return sa is not None and sa["metadata"]["uid"] != first["metadata"]["uid"]

    await eventually(recreated, what="default SA recreated")
    cm = await client.get("configmaps", "kube-root-ca.crt", namespace="app")
    cm["data"] = {"ca.crt": "not the CA", "extra": "x"}
    cm["metadata"]["annotations"] = {"mine": "kept"}
    await client.update("configmaps", cm)
    await eventually(lambda: _published(client, "app"), what="root CA put back")
    cm = await client.get("configmaps", "kube-root-ca.crt", namespace="app")
    assert cm["metadata"]["annotations"]["mine"] == "kept"
    await client.delete("configmaps", "kube-root-ca.crt", namespace="app")
    await eventually(lambda: _published(client, "app"), what="root CA recreated")


@pytest.mark.usefixtures("controllers")
async def test_a_terminating_namespace_gets_nothing(client: clients.Client) -> None:
    await client.create("namespaces", {"metadata": {"name": "going"}})
    await eventually(lambda: _has_default(client, "going"), what="default SA")
    await eventually(lambda: _published(client, "going"), what="root CA")
    # Without the namespace controller, the namespace stays Terminating with its content.
    await client.delete("namespaces", "going")
    await client.delete("serviceaccounts", "default", namespace="going")
    await client.delete("configmaps", "kube-root-ca.crt", namespace="going")
    # A marker written after the deletions: once the controllers have seen it, they saw those too.
    await client.create("namespaces", {"metadata": {"name": "marker"}})
    await eventually(lambda: _has_default(client, "marker"), what="default SA in marker")
    await eventually(lambda: _published(client, "marker"), what="root CA in marker")
    assert not await _has_default(client, "going")
    assert await _get(client, "configmaps", "going", "kube-root-ca.crt") is None


def test_the_publisher_uses_the_kubeconfig_ca(tmp_path: Any) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    import base64

    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n"
        f"    certificate-authority-data: {base64.b64encode(CA.encode()).decode()}\n"
        "users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
        "current-context: x\n")
    assert clients.Client.from_kubeconfig(kubeconfig).root_ca == CA
