"""Admission webhooks with the real kubectl 1.37.1: configurations applied with `kubectl apply`, a
mutating webhook (a JSONPatch adding a label) whose change `kubectl create` shows, a validating one
whose refusal kubectl prints with the webhook's message, and a webhook warning kubectl prints as
`Warning: ...`. The webhooks are a real HTTPS server in the test (`tests.webhook_servers`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.kubectl.conftest import Kubectl
from tests.webhook_servers import WebhookServer, allow, deny, json_patch

pytestmark = pytest.mark.kubectl


@pytest.fixture
async def hooks() -> AsyncIterator[WebhookServer]:
    async with WebhookServer() as srv:
        yield srv


def mutate(review: dict[str, Any]) -> dict[str, Any]:
    return json_patch(review, [{"op": "add", "path": "/metadata/labels", "value": {"team": "webhooks"}}],
                      warnings=["configmap labelled by team-labeller"])


def validate(review: dict[str, Any]) -> dict[str, Any]:
    data = review["request"]["object"].get("data") or {}
    if "password" in data:
        return deny(review, "plain-text passwords belong in a Secret", code=403, reason="Forbidden")
    return allow(review)


def configuration(kind: str, name: str, url: str, ca_bundle: str) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": [{"name": f"{name}.example.com", "clientConfig": {"url": url, "caBundle": ca_bundle},
                          "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                     "resources": ["configmaps"]}],
                          "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}


async def test_kubectl_create_mutated_denied_and_warned(kubectl: Kubectl, hooks: WebhookServer) -> None:
    hooks.route("/mutate", mutate)
    hooks.route("/validate", validate)
    manifest = {"apiVersion": "v1", "kind": "List", "items": [
        configuration("MutatingWebhookConfiguration", "team-labeller", hooks.url("/mutate"), hooks.ca_bundle),
        configuration("ValidatingWebhookConfiguration", "no-passwords", hooks.url("/validate"), hooks.ca_bundle)]}
    r = await kubectl("apply", "-f", kubectl.write("hooks.json", json.dumps(manifest)))
    assert r.lines == ["mutatingwebhookconfiguration.admissionregistration.k8s.io/team-labeller created",
                       "validatingwebhookconfiguration.admissionregistration.k8s.io/no-passwords created"]

    r = await kubectl("create", "configmap", "settings", "--from-literal=color=blue", "-o", "json")
    assert json.loads(r.stdout)["metadata"]["labels"] == {"team": "webhooks"}
    assert r.stderr.strip() == "Warning: configmap labelled by team-labeller"
    assert await kubectl.jsonpath("configmap", "settings", path="{.metadata.labels.team}") == "webhooks"

    r = await kubectl("create", "configmap", "creds", "--from-literal=password=hunter2", check=False)
    assert r.code == 1
    assert r.stderr.strip().splitlines()[-1] == (
        'error: failed to create configmap: admission webhook "no-passwords.example.com" denied the request: '
        "plain-text passwords belong in a Secret")
    r = await kubectl("get", "configmap", "creds", check=False)
    assert r.code == 1 and "NotFound" in r.stderr
    assert [c["request"]["name"] for c in hooks.calls["/validate"]] == ["settings", "creds"]
