"""cp/defaulting/admission.py: webhook, rule, service and policy defaults of admissionregistration/v1."""

from __future__ import annotations

from tests.cp.defaulting.support import defaulted, twice_is_once

V1 = "admissionregistration.k8s.io/v1"


def test_webhooks() -> None:
    hook = {"name": "a.example.com", "clientConfig": {"service": {"name": "s", "namespace": "n"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}
    validating = {"apiVersion": V1, "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "v"},
                  "webhooks": [hook]}
    out = defaulted(validating)["webhooks"][0]
    assert out == {**hook, "failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {},
                   "objectSelector": {}, "timeoutSeconds": 10,
                   "clientConfig": {"service": {"name": "s", "namespace": "n", "port": 443}},
                   "rules": [{**hook["rules"][0], "scope": "*"}]}
    mutating = dict(validating, kind="MutatingWebhookConfiguration")
    assert defaulted(mutating)["webhooks"][0]["reinvocationPolicy"] == "Never"
    assert twice_is_once(mutating)


def test_policies_and_bindings() -> None:
    policy = {"apiVersion": V1, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "p"},
              "spec": {"matchConstraints": {"resourceRules": []}}}
    spec = defaulted(policy)["spec"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConstraints"] == {"resourceRules": [], "matchPolicy": "Equivalent", "namespaceSelector": {},
                                        "objectSelector": {}}
    binding = {"apiVersion": V1, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "b"},
               "spec": {"policyName": "p", "paramRef": {"name": "cfg"}}}
    assert defaulted(binding)["spec"]["paramRef"] == {"name": "cfg", "parameterNotFoundAction": "Deny"}
    assert "matchResources" not in defaulted(binding)["spec"]
