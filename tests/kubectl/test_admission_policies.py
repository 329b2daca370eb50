"""The real kubectl against admission policies: a ValidatingAdmissionPolicy that denies (kubectl
prints kube-apiserver's message), one that warns (`Warning: ...` on stderr, the write done), and the
upstream dra-example-driver's ResourceSlice policy, as its chart ships it, keeping the kubelet
plugin's service account to its own node's slices with the node name its pod-bound token carries
(`kubectl create token --bound-object-kind Pod`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api import server as servers
from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.kubectl


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[servers.Running]:
    """A secure server (TLS, authentication, RBAC): the kubeconfig is the admin's."""
    async with servers.running(data_dir=tmp_path / "data", secure=True) as srv:
        yield srv


POLICIES = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: small-configmaps}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["configmaps"]}
  validations:
  - expression: "!has(object.data) || size(object.data) <= 2"
    messageExpression: "'at most 2 keys, got ' + string(size(object.data))"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: small-configmaps}
spec:
  policyName: small-configmaps
  validationActions: [Deny]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: owner-label}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  validations:
  - expression: "has(object.metadata.labels) && 'owner' in object.metadata.labels"
    message: ConfigMaps should have an owner label
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: owner-label-warn}
spec:
  policyName: owner-label
  validationActions: [Warn]
"""


async def test_a_policy_denies_and_one_warns(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", input=POLICIES)
    r = await kubectl("create", "configmap", "big", "--from-literal=a=1", "--from-literal=b=2", "--from-literal=c=3",
                      check=False)
    assert r.code == 1
    assert r.stderr.strip().endswith(
        'configmaps "big" is forbidden: ValidatingAdmissionPolicy \'small-configmaps\' with binding '
        "'small-configmaps' denied request: at most 2 keys, got 3"), r.stderr
    assert (await kubectl("get", "configmap", "big", check=False)).code == 1
    r = await kubectl("create", "configmap", "small", "--from-literal=a=1")
    assert r.stdout.strip() == "configmap/small created"
    assert r.stderr.strip() == ("Warning: Validation failed for ValidatingAdmissionPolicy 'owner-label' with binding "
                                "'owner-label-warn': ConfigMaps should have an owner label")
    r = await kubectl("label", "configmap", "small", "owner=me")  # an update: the warning policy is CREATE only
    assert r.stderr == ""
    r = await kubectl("get", "validatingadmissionpolicy", "small-configmaps", "-o",
                      "jsonpath={.status.observedGeneration} {.status.typeChecking}")
    assert r.stdout == "1 {}"


# deployments/helm/dra-example-driver/templates/validatingadmissionpolicy{,binding}.yaml of
# kubernetes-sigs/dra-example-driver, rendered for the release `dra-example-driver` in its namespace.
DRA_POLICY = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: resourceslices-policy-dra-example-driver
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups:   ["resource.k8s.io"]
      apiVersions: ["v1beta1", "v1beta2", "v1"]
      operations:  ["CREATE", "UPDATE", "DELETE"]
      resources:   ["resourceslices"]
  matchConditions:
  - name: isRestrictedUser
    expression: >-
      request.userInfo.username == "system:serviceaccount:dra-example-driver:dra-example-driver-service-account"
  variables:
  - name: userNodeName
    expression: >-
      request.userInfo.extra[?'authentication.kubernetes.io/node-name'][0].orValue('')
  - name: objectNodeName
    expression: >-
      (request.operation == "DELETE" ? oldObject : object).spec.?nodeName.orValue("")
  validations:
  - expression: variables.userNodeName != ""
    message: >-
      no node association found for user, this user must run in a pod on a node and ServiceAccountTokenPodNodeInfo must be enabled
  - expression: variables.userNodeName == variables.objectNodeName
    messageExpression: >-
      "this user running on node '"+variables.userNodeName+"' may not modify " +
      (variables.objectNodeName == "" ?"cluster resourceslices" : "resourceslices on node '"+variables.objectNodeName+"'")
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: resourceslices-policy-dra-example-driver
spec:
  policyName: resourceslices-policy-dra-example-driver
  validationActions: [Deny]
  # All ResourceSlices are matched.
"""

PLUGIN_POD = """
apiVersion: v1
kind: Pod
metadata: {name: kubelet-plugin-node-1, namespace: dra-example-driver}
spec:
  serviceAccountName: dra-example-driver-service-account
  nodeName: node-1
  containers: [{name: plugin, image: registry.k8s.io/dra-example-driver:v0.2.0}]
"""


def _slice(name: str, node: str) -> str:
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {name}}}
spec:
  driver: gpu.example.com
  nodeName: {node}
  pool: {{name: {node}, generation: 1, resourceSliceCount: 1}}
  devices: [{{name: gpu-0}}]
"""


async def test_dra_example_driver_resourceslice_policy(kubectl: Kubectl) -> None:
    await kubectl("create", "namespace", "dra-example-driver")
    await kubectl("create", "serviceaccount", "dra-example-driver-service-account", "-n", "dra-example-driver")
    await kubectl("create", "clusterrole", "slices", "--verb=*", "--resource=resourceslices.resource.k8s.io")
    await kubectl("create", "clusterrolebinding", "slices", "--clusterrole=slices",
                  "--serviceaccount=dra-example-driver:dra-example-driver-service-account")
    await kubectl("apply", "-f", "-", input=DRA_POLICY)
    await kubectl("apply", "-f", "-", input=PLUGIN_POD)
    token = (await kubectl("create", "token", "dra-example-driver-service-account", "-n", "dra-example-driver",
                           "--bound-object-kind=Pod", "--bound-object-name=kubelet-plugin-node-1")).stdout.strip()
    as_plugin = f"--token={token}"
    r = await kubectl("apply", "-f", "-", as_plugin, input=_slice("node-1-gpus", "node-1"))
    assert r.stdout.strip() == "resourceslice.resource.k8s.io/node-1-gpus created"
    r = await kubectl("apply", "-f", "-", as_plugin, input=_slice("node-2-gpus", "node-2"), check=False)
    assert r.code == 1
    assert ("ValidatingAdmissionPolicy 'resourceslices-policy-dra-example-driver' with binding "
            "'resourceslices-policy-dra-example-driver' denied request: this user running on node 'node-1' may not "
            "modify resourceslices on node 'node-2'") in r.stderr, r.stderr
    # a token without the pod binding has no node: refused, with the policy's message
    unbound = (await kubectl("create", "token", "dra-example-driver-service-account", "-n",
                             "dra-example-driver")).stdout.strip()
    r = await kubectl("delete", "resourceslice", "node-1-gpus", f"--token={unbound}", check=False)
    assert r.code == 1 and "no node association found for user" in r.stderr, r.stderr
    r = await kubectl("delete", "resourceslice", "node-1-gpus", as_plugin)
    assert r.stdout.strip() == 'resourceslice.resource.k8s.io "node-1-gpus" deleted'
