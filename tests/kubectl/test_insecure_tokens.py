"""The real kubectl against a server as `cplane serve --insecure` runs it (plain HTTP, no
authentication, every request allowed): `kubectl create token` still works, as the walkthrough shows —
the token is signed with the data directory's key, TokenReview accepts it for its audience,
SubjectAccessReview answers as the server's own AlwaysAllow, and the issuer is published."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api import server as servers
from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.kubectl


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[servers.Running]:
    async with servers.running(data_dir=tmp_path / "data", insecure_limits=True) as srv:
        yield srv


def _review(kind: str, group: str, spec: dict[str, object]) -> str:
    return json.dumps({"apiVersion": f"{group}/v1", "kind": kind, "spec": spec})


async def test_create_token_and_review_it_on_an_insecure_server(kubectl: Kubectl, tmp_path: Path) -> None:
    await kubectl("create", "serviceaccount", "builder")
    token = (await kubectl("create", "token", "builder", "--audience=ci", "--duration=20m")).stdout.strip()
    assert token.count(".") == 2, token
    assert (tmp_path / "data" / "pki" / "sa.key").exists()  # made on first use, kept for restarts

    answer = (await kubectl("create", "-f", "-", "-o", "json", input=_review(
        "TokenReview", "authentication.k8s.io", {"token": token, "audiences": ["ci"]}))).json()
    assert answer["status"]["authenticated"] is True
    assert answer["status"]["user"]["username"] == "system:serviceaccount:default:builder"
    assert answer["status"]["audiences"] == ["ci"]

    wrong = (await kubectl("create", "-f", "-", "-o", "json", input=_review(
        "TokenReview", "authentication.k8s.io", {"token": token, "audiences": ["other"]}))).json()
    assert not wrong["status"].get("authenticated")

    await kubectl("delete", "serviceaccount", "builder")
    gone = (await kubectl("create", "-f", "-", "-o", "json", input=_review(
        "TokenReview", "authentication.k8s.io", {"token": token, "audiences": ["ci"]}))).json()
    assert not gone["status"].get("authenticated")

    access = (await kubectl("create", "-f", "-", "-o", "json", input=_review(
        "SubjectAccessReview", "authorization.k8s.io",
        {"user": "bob", "resourceAttributes": {"verb": "delete", "resource": "pods"}}))).json()
    assert access["status"]["allowed"] is True

    discovery = json.loads((await kubectl("get", "--raw", "/.well-known/openid-configuration")).stdout)
    assert discovery["jwks_uri"].endswith("/openid/v1/jwks")
