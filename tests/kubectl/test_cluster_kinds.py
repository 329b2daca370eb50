"""Real kubectl 1.37.1 with the typical manifests of the cluster configuration kinds (networking,
storage, scheduling, node, certificates, admission registration, flow control, coordination, discovery,
API registration, storage migration, CRDs): created, applied again without a change (the server's
defaults are stable), applied server-side, and an invalid one refused with upstream's message.

Out of scope: the rules themselves (tests/cp/validation) and the HTTP answers (tests/api)."""

from __future__ import annotations

import pytest
import yaml

from tests.api.test_builtin_manifests import manifests
from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.kubectl


def _stream() -> tuple[str, list[str]]:
    objects = [obj for _path, obj in manifests()]
    names = []
    for obj in objects:
        group = obj["apiVersion"].rpartition("/")[0]
        names.append(f"{obj['kind'].lower()}{'.' + group if group else ''}/{obj['metadata']['name']}")
    return "---\n".join(yaml.safe_dump(o, sort_keys=False) for o in objects), names


# Kinds whose second apply kubectl reports as `configured` although nothing changes, as with
# kube-apiserver: their manifests hold an atomic list (kubectl replaces it whole) in which the server
# defaults a field (ports' protocol, rules' scope), or set a field the server owns (a CSR's requester).
PATCHED_AGAIN = {"NetworkPolicy", "EndpointSlice", "CertificateSigningRequest", "ValidatingWebhookConfiguration",
                 "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "MutatingAdmissionPolicy"}


async def test_apply_create_and_apply_again_unchanged(kubectl: Kubectl) -> None:
    text, names = _stream()
    kinds = [obj["kind"] for _path, obj in manifests()]
    path = kubectl.write("cluster.yaml", text)
    r = await kubectl("apply", "-f", path)
    assert r.lines == [f"{n} created" for n in names]
    assert r.stderr == ""
    versions = await kubectl("get", "-f", path, "-o", "jsonpath={.items[*].metadata.resourceVersion}")
    r = await kubectl("apply", "-f", path)
    assert r.lines == [f"{n} {'configured' if k in PATCHED_AGAIN else 'unchanged'}" for n, k in zip(names, kinds,
                                                                                                      strict=True)]
    # The defaults are stable: applying the same manifests again writes nothing.
    assert (await kubectl("get", "-f", path, "-o", "jsonpath={.items[*].metadata.resourceVersion}")).stdout == \
        versions.stdout
    r = await kubectl("apply", "--server-side", "--force-conflicts", "-f", path)
    assert r.lines == [f"{n} serverside-applied" for n in names]
    assert await kubectl.jsonpath("validatingwebhookconfiguration", "cert-manager-webhook",
                                  path="{.webhooks[0].timeoutSeconds}") == "10"


async def test_invalid_object_is_refused_with_the_cause(kubectl: Kubectl) -> None:
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": "broken"},
              "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                               "operations": ["CREATE"],
                                                               "resources": ["deployments"]}]},
                       "validations": [{"expression": "object.spec.replicas <= params.max"}]}}
    path = kubectl.write("broken.yaml", yaml.safe_dump(policy))
    r = await kubectl("create", "-f", path, check=False)
    assert r.code == 1
    assert r.stderr.startswith('The ValidatingAdmissionPolicy "broken" is invalid: '
                               'spec.validations[0].expression: Invalid value: "object.spec.replicas <= params.max": '
                               "compilation failed: ERROR: <input>:1:25: undeclared reference to 'params'")
