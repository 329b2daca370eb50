"""The webhook transport (`api.webhooks.client`): answers that are not 2xx become client-go's errors,
a Service is resolved to its ready endpoints (or refused with kube-aggregator's messages), and TLS
checks the CA bundle and the name the client expects."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from api.webhooks import client as clients
from storage import log, memory
from tests.webhook_servers import WebhookServer


@pytest.fixture
async def hook() -> AsyncIterator[WebhookServer]:
    async with WebhookServer(hosts=["hooks.default.svc"]) as srv:
        yield srv


@pytest.fixture
async def event_log() -> memory.MemoryEventLog:
    return memory.MemoryEventLog()


@pytest.fixture
async def client(event_log: memory.MemoryEventLog) -> AsyncIterator[clients.WebhookClient]:
    c = clients.WebhookClient(event_log=event_log)
    yield c
    await c.close()


async def put(event_log: log.EventLog, group: str, resource: str, obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    await event_log.append(log.Write(type="ADDED", group=group, resource=resource, namespace=meta["namespace"],
                                     name=meta["name"], object=obj, expected_revision=0, time=0.0,
                                     actor=log.Actor(user="test")))


async def test_answers(hook: WebhookServer, client: clients.WebhookClient) -> None:
    hook.route("/ok", lambda body: {"echo": body})
    hook.route("/status", lambda body: web.json_response(
        {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "no way", "code": 409}, status=409))
    hook.route("/boom", lambda body: web.Response(status=500, text="it broke"))
    config = {"caBundle": hook.ca_bundle}
    assert await client.post(client_config={**config, "url": hook.url("/ok")}, body=b'{"a": 1}',
                             timeout_seconds=5) == {"echo": {"a": 1}}
    with pytest.raises(clients.CallError) as caught:
        await client.post(client_config={**config, "url": hook.url("/status")}, body=b"{}", timeout_seconds=5)
    assert str(caught.value) == "no way" and caught.value.status is not None
    with pytest.raises(clients.CallError) as caught:
        await client.post(client_config={**config, "url": hook.url("/boom")}, body=b"{}", timeout_seconds=5)
    assert str(caught.value) == 'an error on the server ("it broke") has prevented the request from succeeding'


async def test_tls_checks_the_bundle_and_the_name(hook: WebhookServer, client: clients.WebhookClient) -> None:
    hook.route("/ok", lambda body: {})
    other = WebhookServer()  # another CA, never started
    with pytest.raises(clients.CallError) as caught:
        await client.post(client_config={"url": hook.url("/ok"), "caBundle": other.ca_bundle}, body=b"{}",
                          timeout_seconds=5)
    assert str(caught.value).endswith("x509: certificate signed by unknown authority")
    named = hook.url("/ok").replace("127.0.0.1", "localhost")  # the certificate names localhost too
    assert await client.post(client_config={"url": named, "caBundle": hook.ca_bundle}, body=b"{}",
                             timeout_seconds=5) == {}
    assert base64.b64decode(hook.ca_bundle).startswith(b"-----BEGIN CERTIFICATE-----")


async def test_service_resolution(event_log: memory.MemoryEventLog, client: clients.WebhookClient) -> None:
    with pytest.raises(clients.CallError) as caught:
        await client.resolve(namespace="default", name="hooks", port=443)
    assert str(caught.value) == 'service "hooks" not found'
    await put(event_log, "", "services", {"metadata": {"name": "hooks", "namespace": "default"},
                                          "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}]}})
    with pytest.raises(clients.CallError) as caught:
        await client.resolve(namespace="default", name="hooks", port=8443)
    assert str(caught.value) == 'no service port 8443 found for service "hooks"'
    with pytest.raises(clients.CallError) as caught:
        await client.resolve(namespace="default", name="hooks", port=443)
    assert str(caught.value) == 'no endpoints available for service "hooks"'
    await put(event_log, "discovery.k8s.io", "endpointslices", {
        "metadata": {"name": "hooks-a", "namespace": "default", "labels": {"kubernetes.io/service-name": "hooks"}},
        "addressType": "IPv4", "ports": [{"name": "https", "port": 8443}],
        "endpoints": [{"addresses": ["10.1.0.1"], "conditions": {"ready": False}},
                      {"addresses": ["10.1.0.2"]}]})
    await put(event_log, "discovery.k8s.io", "endpointslices", {
        "metadata": {"name": "other", "namespace": "default", "labels": {"kubernetes.io/service-name": "other"}},
        "addressType": "IPv4", "ports": [{"name": "https", "port": 9999}], "endpoints": [{"addresses": ["10.9.9.9"]}]})
    assert await client.resolve(namespace="default", name="hooks", port=443) == ("10.1.0.2", 8443)
    await put(event_log, "", "services", {"metadata": {"name": "ext", "namespace": "default"},
                                          "spec": {"type": "ExternalName", "externalName": "localhost"}})
    assert await client.resolve(namespace="default", name="ext", port=9443) == ("localhost", 9443)
