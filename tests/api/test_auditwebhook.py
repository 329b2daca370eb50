"""The audit webhook backend (`cplane serve --audit-webhook-config-file`): audit.k8s.io/v1 EventLists
POSTed to the webhook a kubeconfig names, over TLS with its CA and token, in batches (full or after
max-wait), retried with backoff, dropped when the buffer is full or the retries fail; beside the log
file (each event rendered once); and what a webhook received imports with `cplane log import --audit`."""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from api import audit as audits
from api import auditwebhook
from cp import kubeconfig
from cp.cli import log_audit, serve
from storage import factory
from tests.api.test_audit import POLICY, _serve_args, events, insecure_server
from tests.webhook_servers import WebhookServer


class Receiver:
    """A webhook on plain HTTP that answers each POST with the next of `codes` (then 200), recording
    the bodies and Authorization headers; `got` is set at each POST."""

    def __init__(self, codes: list[int] | None = None) -> None:
        self.codes = list(codes or [])
        self.bodies: list[dict[str, Any]] = []
        self.tokens: list[str] = []
        self.got = asyncio.Event()
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.tokens.append(request.headers.get("Authorization", ""))
        self.bodies.append(await request.json())
        self.got.set()
        return web.json_response({}, status=self.codes.pop(0) if self.codes else 200)

    def items(self) -> list[dict[str, Any]]:
        return [item for body in self.bodies for item in body["items"]]


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    rec = Receiver()
    app = web.Application()
    app.router.add_post("/audit", rec.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    rec.url = f"http://127.0.0.1:{runner.addresses[0][1]}/audit"
    try:
        yield rec
    finally:
        await runner.cleanup()


def _event(n: int) -> bytes:
    return json.dumps({"kind": "Event", "apiVersion": "audit.k8s.io/v1", "auditID": f"id-{n}"}).encode() + b"\n"


def _put(backend: auditwebhook.AuditWebhook, *numbers: int) -> None:
    for n in numbers:
        backend.put(lambda n=n: _event(n))  # type: ignore[misc]


async def test_batches_of_max_size_with_the_token_and_the_rest_on_flush(receiver: Receiver) -> None:
    backend = auditwebhook.AuditWebhook(kubeconfig.Endpoint(server=receiver.url, token="s3cret"), max_size=2,
                                        max_wait=3600)
    _put(backend, 1, 2, 3, 4, 5)
    await backend.flushed()
    assert [len(b["items"]) for b in receiver.bodies] == [2, 2, 1]
    assert {(b["kind"], b["apiVersion"]) for b in receiver.bodies} == {("EventList", "audit.k8s.io/v1")}
    assert [i["auditID"] for i in receiver.items()] == [f"id-{n}" for n in range(1, 6)]
    assert set(receiver.tokens) == {"Bearer s3cret"}
    assert (backend.sent, backend.dropped) == (5, 0)
    await backend.close()


async def test_a_batch_that_is_not_full_goes_after_max_wait(receiver: Receiver) -> None:
    backend = auditwebhook.AuditWebhook(kubeconfig.Endpoint(server=receiver.url), max_size=100, max_wait=0.05)
    for n in (1, 2):  # (the second after the first was sent: each batch's wait starts with its first event)
        receiver.got.clear()
        _put(backend, n)
        await asyncio.wait_for(receiver.got.wait(), 10)  # no flush asked: max-wait sent it
    assert [i["auditID"] for i in receiver.items()] == ["id-1", "id-2"]
    await backend.close()


async def test_failures_are_retried_then_dropped_and_a_full_buffer_drops(receiver: Receiver) -> None:
    receiver.codes = [500, 503]  # two failures, then accepted
    backend = auditwebhook.AuditWebhook(kubeconfig.Endpoint(server=receiver.url), max_size=10, max_wait=3600,
                                        initial_backoff=0.001)
    _put(backend, 1, 2)
    await backend.flushed()
    assert len(receiver.bodies) == 3 and (backend.sent, backend.dropped) == (2, 0)
    receiver.codes = [500] * 5  # every attempt fails: the batch is dropped
    _put(backend, 3)
    await backend.flushed()
    assert len(receiver.bodies) == 8 and (backend.sent, backend.dropped) == (2, 1)
    await backend.close()
    small = auditwebhook.AuditWebhook(kubeconfig.Endpoint(server=receiver.url), max_size=10, max_wait=3600,
                                      buffer_size=2)
    _put(small, 4, 5, 6)
    await small.close()  # what is queued is sent at shutdown
    assert (small.sent, small.dropped) == (2, 1)
    assert [i["auditID"] for i in receiver.items()][-2:] == ["id-4", "id-5"]


async def test_a_cplane_server_sends_its_events_over_tls_and_they_import(tmp_path: Path) -> None:
    async with WebhookServer() as hook:
        hook.route("/k8s-audit", lambda _body: {})
        config = tmp_path / "webhook.kubeconfig"
        config.write_text(kubeconfig.kubeconfig_text(server=hook.url("/k8s-audit"), ca_data=hook.ca_bundle,
                                                     token="audit-token"))
        (tmp_path / "policy.yaml").write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n"
                                              "- level: RequestResponse\n")
        the_auditor = audits.load(policy_file=str(tmp_path / "policy.yaml"), log_path=str(tmp_path / "audit.log"),
                                  webhook=auditwebhook.load(str(config), max_size=3, max_wait=3600))
        async with insecure_server(tmp_path, the_auditor) as srv, aiohttp.ClientSession(srv.url) as http:
            cms = "/api/v1/namespaces/default/configmaps"
            for name in ("a", "b"):
                async with http.post(cms, json={"metadata": {"name": name}, "data": {"k": name}}) as r:
                    assert r.status == 201
            async with http.delete(f"{cms}/a") as r:
                assert r.status == 200
            written = await events(srv.app, tmp_path / "audit.log")
        received = [item for body in hook.calls["/k8s-audit"] for item in body["items"]]
    # The same events as the log file's (each rendered once for both).
    assert received == written and [e["verb"] for e in received if e["stage"] == "ResponseComplete"] == [
        "create", "create", "delete"]
    # What a webhook receives imports as an audit log (EventList lines).
    lines = tmp_path / "received.log"
    lines.write_text("".join(json.dumps(body) + "\n" for body in [{"kind": "EventList", "apiVersion":
                                                                  "audit.k8s.io/v1", "items": received}]))
    data = tmp_path / "imported"
    args = argparse.Namespace(audit=[lines], keep_secrets=True, data_dir=data, db=None)
    assert await log_audit.run(args, store_url=f"sqlite+aiosqlite:///{data / 'cplane.db'}") == 0
    imported = factory.open_event_log(url=f"sqlite+aiosqlite:///{data / 'cplane.db'}")
    await imported.start()
    try:
        live = await imported.list_objects(group="", resource="configmaps", namespace="default")
        assert [e.name for e in live.events] == ["b"]
    finally:
        await imported.close()


def test_flags_that_cannot_be_used_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    config = tmp_path / "webhook.kubeconfig"
    config.write_text(kubeconfig.kubeconfig_text(server="https://audit.example/k8s",
                                                 ca_data=base64.b64encode(b"unused").decode()))
    base = ("--audit-policy-file", str(policy), "--audit-webhook-config-file")
    assert serve.run(_serve_args(*base, str(config), "--audit-webhook-mode", "blocking")) == 2
    assert "--audit-webhook-mode blocking is not served by cplane (batch is)" in capsys.readouterr().err
    assert serve.run(_serve_args(*base, str(config), "--audit-webhook-batch-max-wait", "soon")) == 2
    assert "--audit-webhook-batch-max-wait: " in capsys.readouterr().err
    assert serve.run(_serve_args(*base, str(config), "--audit-webhook-batch-max-size", "0")) == 2
    assert "--audit-webhook-batch-max-size 0 must be a positive number" in capsys.readouterr().err
    assert serve.run(_serve_args(*base, str(tmp_path / "missing"))) == 2
    assert capsys.readouterr().err.startswith("cplane serve: --audit-webhook-config-file: ")


async def test_shutdown_does_not_wait_for_a_webhook_that_hangs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(auditwebhook, "_SHUTDOWN", 0.2)
    async with WebhookServer() as hook:
        hook.route("/hang", hook.hang)
        backend = auditwebhook.AuditWebhook(kubeconfig.Endpoint(server=hook.url("/hang"), ca_data=hook.ca_bundle),
                                            max_size=10, max_wait=3600)
        _put(backend, 1, 2)
        await backend.close()  # the POST never answers: given up after _SHUTDOWN
    assert (backend.sent, backend.dropped) == (0, 2)
