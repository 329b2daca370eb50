"""The real kubectl against a secure server: `kubectl create token` (the TokenRequest subresource) and
using the token it prints, Secrets written with `kubectl create secret` read back base64-encoded, a
manifest whose data is not base64 refused with kube-apiserver's decoding error, and `kubectl auth
can-i --as` answered by the RBAC authorizer for another user or a ServiceAccount."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api import server as servers
from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.kubectl

BAD_SECRET = """apiVersion: v1
kind: Secret
metadata: {name: plain}
data:
  password: hunter2
"""


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[servers.Running]:
    """A secure server (TLS, authentication, RBAC): the kubeconfig is the admin's."""
    async with servers.running(data_dir=tmp_path / "data", secure=True) as srv:
        yield srv


def _claims(token: str) -> dict[str, object]:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


async def test_kubectl_create_token(kubectl: Kubectl) -> None:
    await kubectl("create", "serviceaccount", "default")
    await kubectl("create", "serviceaccount", "builder")
    token = (await kubectl("create", "token", "default")).stdout.strip()
    claims = _claims(token)
    assert claims["sub"] == "system:serviceaccount:default:default"
    assert claims["aud"] == ["https://kubernetes.default.svc.cluster.local"]
    who = json.loads((await kubectl("auth", "whoami", "-o", "json", f"--token={token}")).stdout)
    assert who["status"]["userInfo"]["username"] == "system:serviceaccount:default:default"
    assert who["status"]["userInfo"]["groups"] == ["system:serviceaccounts", "system:serviceaccounts:default",
                                                   "system:authenticated"]
    # Nothing is granted to the account: RBAC refuses it.
    r = await kubectl("get", "pods", f"--token={token}", check=False)
    assert r.code == 1
    assert 'User "system:serviceaccount:default:default" cannot list resource "pods"' in r.stderr
    # Audiences and duration; a token for another audience is not accepted by the API.
    other = (await kubectl("create", "token", "builder", "--audience=vault", "--duration=20m")).stdout.strip()
    claims = _claims(other)
    assert claims["aud"] == ["vault"] and int(claims["exp"]) - int(claims["iat"]) == 1200
    r = await kubectl("get", "pods", f"--token={other}", check=False)
    assert r.code == 1 and "Unauthorized" in r.stderr
    # Too short, and a missing account.
    r = await kubectl("create", "token", "builder", "--duration=5m", check=False)
    assert r.code == 1
    assert "may not specify a duration less than 10 minutes" in r.stderr
    r = await kubectl("create", "token", "nobody", check=False)
    assert r.code == 1 and 'serviceaccounts "nobody" not found' in r.stderr


async def test_kubectl_secrets_are_base64(kubectl: Kubectl) -> None:
    await kubectl("create", "secret", "generic", "creds", "--from-literal=password=hunter2",
                  "--from-literal=user=admin")
    out = (await kubectl("get", "secret", "creds", "-o", "yaml")).stdout
    assert "password: aHVudGVyMg==" in out and "user: YWRtaW4=" in out and "type: Opaque" in out
    assert "hunter2" not in out
    r = await kubectl("create", "-f", "-", input=BAD_SECRET, check=False)
    assert r.code == 1
    assert r.stderr.strip() == ('Error from server (BadRequest): error when creating "STDIN": Secret in version "v1" '
                                "cannot be handled as a Secret: illegal base64 data at input byte 4")
    await kubectl("create", "secret", "docker-registry", "reg", "--docker-server=r.example.com",
                  "--docker-username=u", "--docker-password=p")
    assert await kubectl.jsonpath("secret", "reg", path="{.type}") == "kubernetes.io/dockerconfigjson"
    # stringData is merged into data.
    await kubectl("apply", "-f", "-", input="apiVersion: v1\nkind: Secret\nmetadata: {name: merged}\n"
                                            "stringData: {token: abc}\n")
    assert await kubectl.jsonpath("secret", "merged", path="{.data.token}") == "YWJj"


async def test_kubectl_auth_can_i_as(kubectl: Kubectl) -> None:
    await kubectl("create", "serviceaccount", "builder")
    r = await kubectl("auth", "can-i", "list", "pods", "--as=alice", check=False)
    assert (r.code, r.stdout.strip()) == (1, "no")
    await kubectl("create", "rolebinding", "alice-view", "--clusterrole=view", "--user=alice")
    assert (await kubectl("auth", "can-i", "list", "pods", "--as=alice")).stdout.strip() == "yes"
    r = await kubectl("auth", "can-i", "list", "secrets", "--as=alice", check=False)
    assert r.stdout.strip() == "no"
    sa = "--as=system:serviceaccount:default:builder"
    assert (await kubectl("auth", "can-i", "create", "configmaps", sa, check=False)).stdout.strip() == "no"
    await kubectl("create", "rolebinding", "builder-edit", "--clusterrole=edit", "--serviceaccount=default:builder")
    assert (await kubectl("auth", "can-i", "create", "configmaps", sa)).stdout.strip() == "yes"


async def test_kubectl_create_token_bound_to_a_pod(kubectl: Kubectl) -> None:
    await kubectl("create", "serviceaccount", "builder")
    await kubectl("run", "p", "--image=busybox", "--overrides",
                  '{"spec": {"serviceAccountName": "builder"}}')
    token = (await kubectl("create", "token", "builder", "--bound-object-kind", "Pod",
                           "--bound-object-name", "p")).stdout.strip()
    uid = await kubectl.jsonpath("pod", "p", path="{.metadata.uid}")
    assert _claims(token)["kubernetes.io"] == {
        "namespace": "default", "serviceaccount": {"name": "builder",
                                                   "uid": await kubectl.jsonpath("sa", "builder",
                                                                                 path="{.metadata.uid}")},
        "pod": {"name": "p", "uid": uid}}
    who = json.loads((await kubectl("auth", "whoami", "-o", "json", f"--token={token}")).stdout)
    assert who["status"]["userInfo"]["extra"]["authentication.kubernetes.io/pod-name"] == ["p"]
    # The pod goes (it was never scheduled: at once), and the token with it.
    await kubectl("delete", "pod", "p")
    r = await kubectl("auth", "whoami", f"--token={token}", check=False)
    assert r.code == 1 and "Unauthorized" in r.stderr
    jwks = json.loads((await kubectl("get", "--raw", "/openid/v1/jwks")).stdout)
    header = token.split(".")[0]
    assert json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))["kid"] == jwks["keys"][0]["kid"]


async def test_kubectl_as_user_extra_key_with_a_slash(kubectl: Kubectl) -> None:
    """`--as-user-extra` with a key holding `/` (a node-bound kubelet plugin's extra): kubectl sends
    `Impersonate-Extra-Authentication.kubernetes.io%2fnode-Name`, the server decodes it back."""
    r = await kubectl("auth", "whoami", "-o", "json", "--as=system:serviceaccount:default:plugin",
                      "--as-user-extra", "authentication.kubernetes.io/node-name=node-1")
    user = json.loads(r.stdout)["status"]["userInfo"]
    assert user["username"] == "system:serviceaccount:default:plugin"
    assert user["extra"] == {"authentication.kubernetes.io/node-name": ["node-1"]}
