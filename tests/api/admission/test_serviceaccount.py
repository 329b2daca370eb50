"""The ServiceAccount admission plugin over HTTP (as `cplane serve` enables it): new pods run as
`default` unless they name an account, the account must exist (upstream's 403; a missing `default`
is waited for a little, as upstream retries while the controller creates it), and the projected
`kube-api-access-xxxxx` volume is mounted in every container unless automounting is off.

Out of scope: the controller that creates `default` (tests/controllers/accounts)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import server as servers
from cp import serviceaccounts as sas
from storage import memory

NS = "/api/v1/namespaces/default"


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[aiohttp.ClientSession]:
    log = memory.MemoryEventLog()
    await log.start()
    try:
        async with servers.running(data_dir=tmp_path, event_log=log, app_options={"service_accounts": True}) as srv, \
                aiohttp.ClientSession(base_url=srv.url) as session:
            yield session
    finally:
        await log.close()


async def _post(http: aiohttp.ClientSession, what: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with http.post(f"{NS}/{what}", json=body) as r:
        return r.status, await r.json()


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "app", "image": "nginx"}], **spec}}


async def test_pods_get_the_default_account_and_its_token_volume(http: aiohttp.ClientSession) -> None:
    assert (await _post(http, "serviceaccounts", {"metadata": {"name": "default"}}))[0] == 201
    pod = _pod("p", initContainers=[{"name": "init", "image": "busybox",
                                     "volumeMounts": [{"name": "own", "mountPath": sas.MOUNT_PATH}]}],
               volumes=[{"name": "own", "emptyDir": {}}])
    code, body = await _post(http, "pods", pod)
    assert code == 201, body
    spec = body["spec"]
    assert spec["serviceAccountName"] == "default" and spec["serviceAccount"] == "default"
    token = spec["volumes"][-1]
    assert token["name"].startswith("kube-api-access-") and len(token["name"]) == len("kube-api-access-") + 5
    assert token["projected"] == {
        "defaultMode": 420,
        "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                        "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}
    assert spec["containers"][0]["volumeMounts"] == [{"name": token["name"], "readOnly": True,
                                                      "mountPath": sas.MOUNT_PATH}]
    # A container with something mounted at the path keeps its own mount.
    assert spec["initContainers"][0]["volumeMounts"] == [{"name": "own", "mountPath": sas.MOUNT_PATH}]


async def test_automount_off_and_pull_secrets(http: aiohttp.ClientSession) -> None:
    assert (await _post(http, "serviceaccounts", {"metadata": {"name": "quiet"}, "automountServiceAccountToken": False,
                                                  "imagePullSecrets": [{"name": "regcred"}]}))[0] == 201
    code, body = await _post(http, "pods", _pod("p", serviceAccountName="quiet"))
    assert code == 201, body
    assert "volumes" not in body["spec"] and "volumeMounts" not in body["spec"]["containers"][0]
    assert body["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    # The pod's own setting wins over the account's.
    code, body = await _post(http, "pods", _pod("q", serviceAccountName="quiet", automountServiceAccountToken=True))
    assert code == 201 and body["spec"]["volumes"][0]["name"].startswith("kube-api-access-")


async def test_a_missing_account_is_refused(http: aiohttp.ClientSession) -> None:
    code, body = await _post(http, "pods", _pod("p", serviceAccountName="nope"))
    assert code == 403
    assert body["message"] == ('pods "p" is forbidden: error looking up service account default/nope: '
                               'serviceaccount "nope" not found')


async def test_a_pod_waits_briefly_for_its_default_account(http: aiohttp.ClientSession) -> None:
    creating = asyncio.ensure_future(_post(http, "pods", _pod("p")))
    assert (await _post(http, "serviceaccounts", {"metadata": {"name": "default"}}))[0] == 201
    code, body = await creating
    assert code == 201, body
    assert body["spec"]["serviceAccountName"] == "default"
