"""cp/validation/admission.py: webhook configurations (names, rules, client configs, side effects, review
versions, match conditions), admission policies and their bindings, with CEL expressions that must compile
in the environment kube-apiserver declares for each (pkg/apis/admissionregistration/validation)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cp.validation.rules import changed, create_errors, update_errors

V1 = "admissionregistration.k8s.io/v1"
RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}


def hook(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": "check.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                            "clientConfig": {"url": "https://hooks.example.com/check"}, "rules": [dict(RULE)]}
    body.update(fields)
    return body


def configuration(*hooks: dict[str, Any], kind: str = "ValidatingWebhookConfiguration") -> dict[str, Any]:
    return {"apiVersion": V1, "kind": kind, "metadata": {"name": "hooks"}, "webhooks": list(hooks)}


@pytest.mark.parametrize(("fields", "expected"), [
    ({"name": "check"}, ['webhooks[0].name: Invalid value: "check": should be a domain with at least three segments '
                         "separated by dots"]),
    ({"sideEffects": "Some"},
     ['webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"']),
    ({"timeoutSeconds": 31}, ["webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 "
                              "and 30 seconds"]),
    ({"admissionReviewVersions": ["v2", "v2"]},
     ['webhooks[0].admissionReviewVersions[1]: Invalid value: "v2": duplicate version',
      'webhooks[0].admissionReviewVersions: Invalid value: ["v2","v2"]: must include at least one of v1, v1beta1']),
    ({"admissionReviewVersions": []},
     ["webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1"]),
    ({"clientConfig": {"url": "http://hooks.example.com/check?x=1"}},
     ["webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired "
      "format: https://host[/path]",
      'webhooks[0].clientConfig.url: Invalid value: "x=1": query parameters are not permitted in the URL']),
    ({"clientConfig": {}}, ["webhooks[0].clientConfig: Required value: exactly one of url or service is required"]),
    ({"clientConfig": {"service": {"name": "svc", "namespace": "ns", "path": "webhook//x", "port": 0}}},
     ["webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, "
      "inclusive",
      "webhooks[0].clientConfig.service.path: Invalid value: \"webhook//x\": must start with a '/'",
      'webhooks[0].clientConfig.service.path: Invalid value: "webhook//x": segment[1] may not be empty']),
    ({"rules": [{"apiGroups": ["*", "apps"], "apiVersions": [], "operations": ["CREATE", "PATCH"],
                 "resources": ["pods/*", "pods/log", "*", "deployments"], "scope": "Global"}]},
     ['webhooks[0].rules[0].operations[1]: Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", '
      '"DELETE", "UPDATE"',
      'webhooks[0].rules[0].apiGroups: Invalid value: ["*","apps"]: if \'*\' is present, must not specify other API '
      "groups",
      "webhooks[0].rules[0].apiVersions: Required value",
      "webhooks[0].rules[0].resources[1]: Invalid value: \"pods/log\": if 'pods/*' is present, must not specify "
      "pods/log",
      'webhooks[0].rules[0].resources: Invalid value: ["pods/*","pods/log","*","deployments"]: if \'*\' is present, '
      "must not specify other resources without subresources",
      'webhooks[0].rules[0].scope: Unsupported value: "Global": supported values: "*", "Cluster", "Namespaced"']),
    ({"matchConditions": [{"name": "a", "expression": "object.metadata.name.startsWith('x')"},
                          {"name": "a", "expression": "params.enabled"}]},
     ['webhooks[0].matchConditions[1].expression: Invalid value: "params.enabled": compilation failed: ERROR: '
      "<input>:1:1: undeclared reference to 'params' (in container '')",
      'webhooks[0].matchConditions[1].name: Duplicate value: "a"']),
])
def test_webhook(fields: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(configuration(hook(**fields))) == expected


def test_webhook_names_are_unique_and_mutating_reinvocation() -> None:
    assert create_errors(configuration(hook(), hook())) == ['webhooks[1].name: Duplicate value: "check.example.com"']
    assert create_errors(configuration(hook(reinvocationPolicy="Always"), kind="MutatingWebhookConfiguration")) == [
        'webhooks[0].reinvocationPolicy: Unsupported value: "Always": supported values: "IfNeeded", "Never"']


def test_webhook_updates_tolerate_what_was_stored() -> None:
    """Stored side effects and match conditions that would not be accepted today do not block other edits."""
    old = configuration(hook(sideEffects="Some", matchConditions=[{"name": "a", "expression": "params.x"}]))
    new = changed(old, lambda o: o["webhooks"][0].update(timeoutSeconds=5))
    assert update_errors(new, old) == []


def policy(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"matchConstraints": {"resourceRules": [dict(RULE)]},
                            "validations": [{"expression": "object.spec.containers.size() < 10"}]}
    body.update(spec)
    return {"apiVersion": V1, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "limits.example.com"},
            "spec": body}


@pytest.mark.parametrize(("spec", "expected"), [
    ({"validations": [{"expression": "params.max > 1"}]},
     ['spec.validations[0].expression: Invalid value: "params.max > 1": compilation failed: ERROR: <input>:1:1: '
      "undeclared reference to 'params' (in container '')"]),
    ({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}, "validations": [
        {"expression": "object.spec.containers.size() <= int(params.data.max)",
         "messageExpression": "'at most ' + params.data.max", "reason": "Invalid"}]}, []),
    ({"validations": [{"expression": "authorizer.group('').resource('pods').check('create').allowed()"},
                      {"expression": "url(object.metadata.annotations.hook).getScheme() == 'https'"}]}, []),
    ({"variables": [{"name": "count", "expression": "object.spec.containers.size()"},
                    {"name": "if", "expression": "1"}],
      "validations": [{"expression": "variables.count < 10", "message": "too\nmany"}]},
     ['spec.variables[1].name: Invalid value: "if": name is not a valid CEL identifier',
      'spec.validations[0].message: Invalid value: "too\\nmany": message must not contain line breaks']),
    # cel-go's optional syntax, as the dra-example-driver chart's policy on ResourceSlices uses it
    ({"variables": [
        {"name": "nodeName", "expression": "request.userInfo.extra[?'authentication.kubernetes.io/node-name']"
                                           "[0].orValue('')"},
        {"name": "objectNodeName", "expression": '(request.operation == "DELETE" ? oldObject : object)'
                                                 '.spec.?nodeName.orValue("")'},
        {"name": "literals", "expression": "[1, ?optional.none(), ?optional.of(2)].size() + {?'k': "
                                           "optional.ofNonZeroValue(0)}.size()"}],
      "validations": [{"expression": "variables.nodeName == '' || variables.nodeName == variables.objectNodeName"},
                      {"expression": "object.metadata.?labels['a?b'].hasValue() || 'x.?y' != \"[?\""},
                      {"expression": "object.spec.?missing.orValue(undefined)"}]},
     ['spec.validations[2].expression: Invalid value: "object.spec.?missing.orValue(undefined)": compilation '
      "failed: ERROR: <input>:1:30: undeclared reference to 'undefined' (in container '')"]),
    ({"validations": [], "auditAnnotations": []},
     ["spec.validations: Required value: validations or auditAnnotations must contain at least one item",
      "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item"]),
    ({"matchConstraints": {"resourceRules": []}, "paramKind": {"apiVersion": "a/b/c", "kind": "Config Map"}},
     ['spec.paramKind.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c',
      "spec.paramKind.kind: Invalid value: \"Config Map\": may have mixed case, but should otherwise match: a DNS-1035 "
      "label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and "
      "end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
      "'[a-z]([-a-z0-9]*[a-z0-9])?')",
      "spec.matchConstraints.resourceRules: Required value"]),
    ({"auditAnnotations": [{"key": "count", "valueExpression": "string(object.spec.containers.size())"},
                           {"key": "count", "valueExpression": "  "}]},
     ["spec.auditAnnotations[1].valueExpression: Required value: valueExpression is not specified",
      'spec.auditAnnotations[1].key: Duplicate value: "count"']),
])
def test_validating_admission_policy(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(policy(**spec)) == expected


def test_policy_failure_policy_and_match_policy_values() -> None:
    obj = policy(failurePolicy="Retry")
    obj["spec"]["matchConstraints"]["matchPolicy"] = "Loose"
    assert create_errors(obj) == [
        'spec.failurePolicy: Unsupported value: "Retry": supported values: "Fail", "Ignore"',
        'spec.matchConstraints.matchPolicy: Unsupported value: "Loose": supported values: "Equivalent", "Exact"']


def mutating_policy(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"matchConstraints": {"resourceRules": [dict(RULE)]}, "reinvocationPolicy": "Never",
                            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": (
                                "[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('a/b'), "
                                "value: 'c'}]")}}]}
    body.update(spec)
    return {"apiVersion": V1, "kind": "MutatingAdmissionPolicy", "metadata": {"name": "labels.example.com"},
            "spec": body}


@pytest.mark.parametrize(("spec", "expected"), [
    ({}, []),
    ({"reinvocationPolicy": "", "mutations": []},
     ["spec.mutations: Required value: mutations must contain at least one item",
      "spec.reinvocationPolicy: Required value"]),
    ({"mutations": [{"patchType": "ApplyConfiguration", "jsonPatch": {"expression": "[]"}}]},
     ["spec.mutations[0].applyConfiguration: Required value: must be specified when patchType is ApplyConfiguration",
      'spec.mutations[0].jsonPatch: Invalid value: "{jsonPatch}": must not be specified when patchType is '
      "ApplyConfiguration"]),
    ({"mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": " "}}]},
     ["spec.mutations[0].jsonPatch.expression: Required value"]),
    ({"matchConstraints": {"resourceRules": [dict(RULE, operations=["CREATE", "DELETE"])]}},
     ['spec.matchConstraints.resourceRules.operations: Unsupported value: "DELETE": supported values: "*", '
      '"CONNECT", "CREATE", "UPDATE"']),
    ({"mutations": [{"patchType": "Merge"}]},
     ['spec.mutations[0].patchType: Unsupported value: "Merge": supported values: "ApplyConfiguration", '
      '"JSONPatch"']),
])
def test_mutating_admission_policy(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(mutating_policy(**spec)) == expected


def binding(kind: str = "ValidatingAdmissionPolicyBinding", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"policyName": "limits.example.com"}
    if kind.startswith("Validating"):
        body["validationActions"] = ["Deny"]
    body.update(spec)
    return {"apiVersion": V1, "kind": kind, "metadata": {"name": "b"}, "spec": body}


@pytest.mark.parametrize(("obj", "expected"), [
    (binding(), []),
    (binding(paramRef={"name": "cfg", "selector": {}}),
     ["spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
      "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive"]),
    (binding(paramRef={}), ["spec.paramRef: Required value: one of name or selector must be specified"]),
    (binding(validationActions=["Audit", "Audit", "Block"]),
     ['spec.validationActions[1]: Duplicate value: "Audit"',
      'spec.validationActions[2]: Unsupported value: "Block": supported values: "Audit", "Deny", "Warn"']),
    (binding(policyName="", validationActions=[]),
     ["spec.policyName: Required value", "spec.validationActions: Required value"]),
    (binding(matchResources={"resourceRules": [{"resourceNames": ["a", "a"], **RULE}]}),
     ['spec.matchResouces.resourceRules[0].resourceNames[1]: Duplicate value: "a"']),
    (binding("MutatingAdmissionPolicyBinding", policyName="Bad Name"),
     ["spec.policyName: Invalid value: \"Bad Name\": a lowercase RFC 1123 subdomain must consist of lower case "
      "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
      "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
])
def test_bindings(obj: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(obj) == expected


def test_errors_in_expressions_with_optional_syntax_point_into_the_expression_as_written() -> None:
    from cp.validation.admission import cel_problem

    problem = cel_problem("object.?spec.?x ++", params=False, authorizer=True, variables=False)
    assert problem is not None
    assert problem.splitlines()[:3] == [
        "compilation failed: ERROR: <input>:1:18: Syntax error: mismatched input '+' expecting {'[', '{', '(', "
        "'.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}",
        "| object.?spec.?x ++",
        "| .................^"]
    assert "<input>:2:3: undeclared reference to 'nope'" in str(
        cel_problem("object.?a.orValue(1) +\n  nope", params=False, authorizer=True, variables=False))
