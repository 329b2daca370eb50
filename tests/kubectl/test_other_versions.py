"""The real kubectl against a server started with `--runtime-config api/all=true` (`make_app(runtime_config=...)`):
a MutatingAdmissionPolicy and its binding as the 1.32 guides write them (admissionregistration.k8s.io/v1alpha1)
are applied with upstream's deprecation warning on kubectl's stderr, read through v1 and mutate a ConfigMap;
a certificates.k8s.io/v1beta1 ClusterTrustBundle is applied and server-side applied again, with the
warning naming its replacement. Without the flag, kubectl finds no such kind.

Out of scope: the conversions (tests/api/test_other_versions.py)."""

from __future__ import annotations

import pytest

from tests.api import test_builtin_manifests as builtin
from tests.kubectl.conftest import Kubectl

POLICY = """\
apiVersion: admissionregistration.k8s.io/v1alpha1
kind: MutatingAdmissionPolicy
metadata: {name: stamp}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [configmaps]
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'stamped': 'yes'}}}"
---
apiVersion: admissionregistration.k8s.io/v1alpha1
kind: MutatingAdmissionPolicyBinding
metadata: {name: stamp}
spec: {policyName: stamp}
"""


@pytest.fixture
def runtime() -> str:
    return "api/all=true"


def _bundle(signer: str) -> str:
    pem = builtin.ca_pem().replace("\n", "\\n")
    return ("apiVersion: certificates.k8s.io/v1beta1\nkind: ClusterTrustBundle\n"
            "metadata: {name: 'example.com:signer:roots'}\n"
            f'spec: {{signerName: {signer}, trustBundle: "{pem}"}}\n')


async def test_apply_a_v1alpha1_mutating_policy(kubectl: Kubectl) -> None:
    r = await kubectl("apply", "-f", kubectl.write("policy.yaml", POLICY))
    assert r.stdout.splitlines() == [
        "mutatingadmissionpolicy.admissionregistration.k8s.io/stamp created",
        "mutatingadmissionpolicybinding.admissionregistration.k8s.io/stamp created"]
    assert ("Warning: admissionregistration.k8s.io/v1alpha1 MutatingAdmissionPolicy is deprecated in v1.35+, "
            "unavailable in v1.38+" in r.stderr), r.stderr
    v1 = (await kubectl("get", "mutatingadmissionpolicies", "stamp", "-o", "json")).json()
    assert v1["apiVersion"] == "admissionregistration.k8s.io/v1"  # the preferred version
    alpha = (await kubectl("get", "mutatingadmissionpolicies.v1alpha1.admissionregistration.k8s.io", "stamp",
                           "-o", "json")).json()
    assert alpha["apiVersion"] == "admissionregistration.k8s.io/v1alpha1"
    assert alpha["spec"]["mutations"] == v1["spec"]["mutations"]
    await kubectl("create", "configmap", "c", "--from-literal=a=b")
    assert await kubectl.jsonpath("configmaps", "c", path="{.metadata.labels.stamped}") == "yes"


async def test_apply_a_v1beta1_cluster_trust_bundle(kubectl: Kubectl) -> None:
    r = await kubectl("apply", "-f", kubectl.write("bundle.yaml", _bundle("example.com/signer")))
    assert r.stdout.strip() == "clustertrustbundle.certificates.k8s.io/example.com:signer:roots created"
    assert ("Warning: certificates.k8s.io/v1beta1 ClusterTrustBundle is deprecated in v1.37+, unavailable in "
            "v1.40+; use certificates.k8s.io/v1 ClusterTrustBundle" in r.stderr), r.stderr
    # managedFields list the stored version's fields (docs/api.md), so kubectl's client-side to server-side
    # apply upgrade, which looks for the object's own version, finds none: forced, as the v1beta2 demos
    r = await kubectl("apply", "--server-side", "--force-conflicts", "-f",
                      kubectl.write("bundle.yaml", _bundle("example.com/signer")))
    assert r.stdout.strip() == "clustertrustbundle.certificates.k8s.io/example.com:signer:roots serverside-applied"
    rows = (await kubectl("get", "clustertrustbundles.v1beta1.certificates.k8s.io")).rows()
    assert rows[1][0] == "example.com:signer:roots"
    got = (await kubectl("get", "clustertrustbundles", "example.com:signer:roots", "-o", "json")).json()
    assert (got["apiVersion"], got["spec"]["signerName"]) == ("certificates.k8s.io/v1", "example.com/signer")


@pytest.mark.parametrize("runtime", [""])
async def test_without_the_flag_kubectl_finds_no_v1alpha1(kubectl: Kubectl) -> None:
    r = await kubectl("apply", "-f", kubectl.write("policy.yaml", POLICY), check=False)
    assert r.code != 0
    assert ('no matches for kind "MutatingAdmissionPolicy" in version "admissionregistration.k8s.io/v1alpha1"'
            in r.stderr), r.stderr
