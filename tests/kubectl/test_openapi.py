"""What the real kubectl 1.37.1 does with the server's OpenAPI documents (v3 first, the v2 protobuf
where v3 cannot answer): `kind: List` files, files naming kinds or group/versions the server does not
serve, client-side validation of List items, server-side validation of the rest, `explain`.

Upstream behaviour relied on (kubectl/pkg/validation/schema.go, cli-runtime/pkg/resource/
query_param_verifier*.go and mapper.go): the items of a `v1 List` and kinds missing from the v3
documents are validated client-side against `/openapi/v2`, skipping kinds it does not define; the
builder then reports each unknown kind and the command applies every other object.

Out of scope: the documents over raw HTTP (tests/api/test_openapi.py).
"""

from __future__ import annotations

import pytest

from cp import resources as res
from tests.kubectl import manifests as m
from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.kubectl

WIDGET = """apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
"""
GADGET = """apiVersion: apps/v1
kind: Gadget
metadata:
  name: g
"""


def _indent(doc: str) -> str:
    lines = doc.strip("\n").splitlines()
    return "\n".join(["- " + lines[0], *("  " + line for line in lines[1:])]) + "\n"


def _list(*docs: str) -> str:
    return "apiVersion: v1\nkind: List\nitems:\n" + "".join(_indent(d) for d in docs)


async def test_apply_a_list(kubectl: Kubectl) -> None:
    path = kubectl.write("list.yaml", _list(m.configmap("one", {"a": "1"}), m.deployment("web"), m.DEVICE_CLASS))
    for verb in (["apply"], ["apply", "--server-side"]):
        r = await kubectl(*verb, "-f", path, "-v=6")
        assert "/openapi/v2" in r.stderr  # the List's items are validated against v2
        assert r.lines[0].startswith("configmap/one ") and r.lines[1].startswith("deployment.apps/web ")
        assert r.lines[2].startswith("deviceclass.resource.k8s.io/gpu.example.com ")
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "1"
    r = await kubectl("create", "-f", path, check=False)  # create reads the same file the same way
    assert r.code == 1 and 'configmaps "one" already exists' in r.stderr


async def test_list_items_are_validated_client_side_against_v2(kubectl: Kubectl) -> None:
    bad_cm = m.configmap("bad", {"a": "1"}) + "spec: {}\n"
    bad_deploy = m.deployment("bad").replace("  replicas: 1", '  replicas: "x"')
    path = kubectl.write("bad.yaml", _list(bad_cm, bad_deploy))
    r = await kubectl("apply", "-f", path, check=False)
    assert r.code == 1
    assert 'ValidationError(ConfigMap): unknown field "spec" in io.k8s.api.core.v1.ConfigMap' in r.stderr
    assert ('ValidationError(Deployment.spec.replicas): invalid type for io.k8s.api.apps.v1.DeploymentSpec.replicas:'
            ' got "string", expected "integer"') in r.stderr
    assert "turn validation off with --validate=false" in r.stderr
    assert await kubectl.gone("configmap", "bad")
    # --validate=false skips the check; the server still drops what the type does not have.
    r = await kubectl("apply", "--validate=false", "-f", kubectl.write("cm.yaml", _list(bad_cm)))
    assert r.stdout == "configmap/bad created\n"


async def test_unknown_kinds_are_reported_and_the_rest_applied(kubectl: Kubectl) -> None:
    docs = kubectl.write("docs.yaml", m.docs(m.configmap("first", {"a": "1"}), WIDGET, GADGET, m.configmap("last", {"a": "1"})))
    r = await kubectl("apply", "-f", docs, check=False)
    assert r.code == 1
    assert r.lines == ["configmap/first created", "configmap/last created"]
    for name, kind, version in (("w", "Widget", "example.com/v1"), ("g", "Gadget", "apps/v1")):
        assert (f'resource mapping not found for name: "{name}" namespace: "" from "{docs}": '
                f'no matches for kind "{kind}" in version "{version}"\nensure CRDs are installed first') in r.stderr
    assert "could not find the requested resource" not in r.stderr

    listed = kubectl.write("list.yaml", _list(m.configmap("one", {"a": "1"}), WIDGET, GADGET, m.configmap("two", {"a": "1"})))
    r = await kubectl("apply", "-f", listed, check=False)
    assert r.code == 1 and r.lines == ["configmap/one created", "configmap/two created"]
    assert 'unable to recognize no matches for kind "Widget" in version "example.com/v1"' in r.stderr
    assert 'unable to recognize no matches for kind "Gadget" in version "apps/v1"' in r.stderr


async def test_validate_strict_is_done_by_the_server(kubectl: Kubectl) -> None:
    bad = m.configmap("bad", {"a": "1"}) + "spec: {}\n"
    r = await kubectl("apply", "--validate=strict", "-f", kubectl.write("bad.yaml", bad), "-v=6", check=False)
    assert r.code == 1
    assert "fieldValidation=Strict" in r.stderr and "/openapi/v2" not in r.stderr
    assert 'Error from server (BadRequest): error when creating' in r.stderr
    assert 'strict decoding error: unknown field "spec"' in r.stderr


async def test_explain_every_kind(kubectl: Kubectl) -> None:
    for kind in res.KINDS:
        r = await kubectl("explain", kind.plural, "--api-version", kind.api_version)
        assert f"KIND:       {kind.kind}\n" in r.stdout, kind.api_version
        assert f"VERSION:    {kind.version}\n" in r.stdout and "DESCRIPTION:" in r.stdout, kind.api_version
    r = await kubectl("explain", "secrets.data")
    assert "FIELD: data <map[string]string>" in r.stdout
