"""cp.admission.policies: compiling and evaluating admission policies as k8s.io/apiserver does —
lazy variables, match conditions, validation decisions and their messages, audit annotations,
mutations — and matching a policy and its bindings to a request."""

from __future__ import annotations

from typing import Any

import pytest

from cp import fieldmanager, rbac
from cp import resources as res
from cp.admission import matching
from cp.admission import policies as pol


def _pod_root() -> Any:
    kind = res.by_kind("", "Pod")
    assert kind is not None
    return fieldmanager.kind_info(kind).root


POD = matching.Request(group="", version="v1", resource="pods", kind_group="", kind_version="v1", kind="Pod",
                       operation="CREATE", namespace="default", name="web", namespaced=True)


def vap(spec: dict[str, Any], name: str = "p") -> pol.ValidatingPolicy:
    return pol.compile_validating({"metadata": {"name": name, "uid": "u1", "generation": 1}, "spec": spec})


def invocation(policy: Any, obj: dict[str, Any] | None = None, *, old: dict[str, Any] | None = None,
               params: dict[str, Any] | None = None, user: rbac.UserInfo | None = None) -> pol.Invocation:
    request = pol.request_value(matched=POD, requested=POD, user=user or rbac.UserInfo(name="alice"))
    return pol.Invocation(policy, obj=obj, old=old, request=request, params=params,
                          namespace={"metadata": {"name": "default", "labels": {"env": "dev"},
                                                  "managedFields": [{}]}})


def test_decisions_and_message_fallbacks() -> None:
    policy = vap({"validations": [
        {"expression": "object.spec.replicas < 3"},
        {"expression": "false", "message": "  plain  "},
        {"expression": "false", "message": "fallback", "messageExpression": "'computed ' + string(1)"},
        {"expression": "false", "message": "fallback", "messageExpression": "1"},  # not a string
        {"expression": "false", "messageExpression": "'two\\nlines'"},
        {"expression": "true", "reason": "Forbidden"},
        {"expression": "false", "reason": "Forbidden"},
        {"expression": "object.spec.missing"},
        {"expression": "'not a bool'"},
    ]})
    decisions = invocation(policy, {"spec": {"replicas": 5}}).validate()
    assert [(d.action, d.message, d.reason) for d in decisions] == [
        ("deny", "failed expression: object.spec.replicas < 3", "Invalid"),
        ("deny", "plain", "Invalid"),
        ("deny", "computed 1", "Invalid"),
        ("deny", "fallback", "Invalid"),
        ("deny", "failed expression: false", "Invalid"),
        ("admit", "", ""),
        ("deny", "failed expression: false", "Forbidden"),
        ("error", "expression 'object.spec.missing' resulted in error: no such key: missing", ""),
        ("error", "expression ''not a bool'' resulted in error: must evaluate to bool but got string", ""),
    ]


def test_compilation_errors_surface_at_evaluation() -> None:
    policy = vap({"validations": [{"expression": "object.("}]})
    [decision] = invocation(policy, {}).validate()
    assert decision.action == "error" and decision.message.startswith("compilation error: compilation failed")


def test_variables_are_lazy_in_order_and_once() -> None:
    policy = vap({"variables": [
        {"name": "a", "expression": "object.n + 1"},
        {"name": "b", "expression": "variables.a * 10"},
        {"name": "bad", "expression": "object.nope"},
        {"name": "uses_bad", "expression": "variables.bad + 1"},
    ], "validations": [
        {"expression": "variables.b == 20"},
        {"expression": "variables.uses_bad > 0"},
    ]})
    inv = invocation(policy, {"n": 1})
    ok, failed = inv.validate()
    assert ok.action == "admit"
    assert failed.action == "error"
    assert failed.message == "expression 'object.nope' resulted in error: no such key: nope"
    # `bad` was evaluated only for the expression that needed it
    assert invocation(policy, {"n": 1}).evaluate(policy.validations[0].expression) is True


def test_match_conditions() -> None:
    def conditions(*exprs: str) -> pol.Invocation:
        return invocation(vap({"matchConditions": [{"name": f"c{i}", "expression": e} for i, e in enumerate(exprs)],
                               "validations": [{"expression": "true"}]}), {"a": 1})
    assert conditions("true", "object.a == 1").conditions_match()
    assert not conditions("object.missing", "false").conditions_match()  # a false wins over errors
    with pytest.raises(pol.PolicyError, match="no such key: missing"):
        conditions("true", "object.missing").conditions_match()
    with pytest.raises(pol.PolicyError, match=r"^\[expression .*, expression .*\]$"):
        conditions("object.x", "object.y").conditions_match()


def test_request_params_namespace_and_user() -> None:
    user = rbac.UserInfo(name="system:serviceaccount:dra:plugin", uid="u", groups=("system:serviceaccounts",),
                         extra={"authentication.kubernetes.io/node-name": ("node-1",)})
    policy = vap({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}, "validations": [
        {"expression": "request.userInfo.extra[?'authentication.kubernetes.io/node-name'][0].orValue('') == "
                       "params.data.node"},
        {"expression": "request.kind.kind == 'Pod' && request.resource.resource == 'pods' && "
                       "request.operation == 'CREATE' && request.namespace == 'default' && !request.dryRun"},
        {"expression": "namespaceObject.metadata.labels.env == 'dev' && !has(namespaceObject.metadata.managedFields)"},
        {"expression": "request.userInfo.groups == ['system:serviceaccounts']"},
    ]})
    decisions = invocation(policy, {}, params={"data": {"node": "node-1"}}, user=user).validate()
    assert [d.action for d in decisions] == ["admit"] * 4
    decisions = invocation(policy, {}, params={"data": {"node": "node-2"}}, user=user).validate()
    assert decisions[0].action == "deny"


def test_audit_annotations() -> None:
    policy = vap({"validations": [{"expression": "true"}], "auditAnnotations": [
        {"key": "replicas", "valueExpression": "'replicas: ' + string(object.r)"},
        {"key": "empty", "valueExpression": "'  '"},
        {"key": "none", "valueExpression": "null"},
        {"key": "number", "valueExpression": "1"},
    ]})
    notes = invocation(policy, {"r": 3}).audit_annotations()
    assert [(n.key, n.value, n.error) for n in notes] == [
        ("replicas", "replicas: 3", ""),
        ("number", "", "valueExpression '1' resulted in unsupported return type: int. "
                       "Return type must be either string or null.")]


def test_definition_and_binding_matching() -> None:
    match = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                "resources": ["pods"]}],
             "namespaceSelector": {"matchLabels": {"env": "prod"}}}
    assert pol.definition_matches(match, POD, obj={}, old=None, namespace_labels={"env": "prod"}) == POD
    assert pol.definition_matches(match, POD, obj={}, old=None, namespace_labels={"env": "dev"}) is None
    binding = {"spec": {"matchResources": {"objectSelector": {"matchLabels": {"app": "web"}}}}}
    assert pol.binding_matches(binding, POD, obj={"metadata": {"labels": {"app": "web"}}}, old=None,
                               namespace_labels=None)
    assert not pol.binding_matches(binding, POD, obj={"metadata": {}}, old=None, namespace_labels=None)
    assert pol.binding_matches({"spec": {}}, POD, obj=None, old=None, namespace_labels=None)


def test_mutations() -> None:
    policy = pol.compile_mutating({"metadata": {"name": "m"}, "spec": {"reinvocationPolicy": "Never", "mutations": [
        {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
            "Object{metadata: Object.metadata{labels: {'zone': 'a'}}, "
            "spec: Object.spec{containers: [Object.spec.containers{name: 'app', image: 'nginx:2'}]}}"}},
        {"patchType": "JSONPatch", "jsonPatch": {"expression":
            "[JSONPatch{op: 'replace', path: '/spec/containers/0/name', value: object.spec.containers[0].name + "
            "'-' + string(size(object.metadata.labels))}]"}},
    ]}})
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}},
           "spec": {"containers": [{"name": "side", "image": "busybox"}, {"name": "app", "image": "nginx:1"}]}}
    out = invocation(policy, pod).mutate(pod, root=_pod_root())
    # containers merged by name (an associative list), as server-side apply merges them
    assert out["spec"]["containers"] == [{"name": "side-2", "image": "busybox"}, {"name": "app", "image": "nginx:2"}]
    assert out["metadata"]["labels"] == {"app": "web", "zone": "a"}
    assert pod["spec"]["containers"][1]["image"] == "nginx:1"  # the input is left alone


def test_mutation_errors() -> None:
    def run(patch_type: str, expression: str) -> None:
        body = "applyConfiguration" if patch_type == "ApplyConfiguration" else "jsonPatch"
        policy = pol.compile_mutating({"metadata": {"name": "m"}, "spec": {"mutations": [
            {"patchType": patch_type, body: {"expression": expression}}]}})
        invocation(policy, {}).mutate({"apiVersion": "v1", "kind": "Pod"}, root=_pod_root())
    with pytest.raises(pol.PolicyError, match="unsupported return type from ApplyConfiguration expression"):
        run("ApplyConfiguration", "1")
    with pytest.raises(pol.PolicyError, match="invalid ApplyConfiguration: may not mutate atomic arrays, maps or "
                                              "structs: ") as raised:
        run("ApplyConfiguration", "Object{spec: Object.spec{nodeSelector: {'x': 'y'}, "
                                  "containers: [Object.spec.containers{name: 'a', command: ['sh']}]}}")
    listed = str(raised.value).rpartition(": ")[2].split(", ")
    assert sorted(listed) == [".spec.containers[0].command", ".spec.nodeSelector"]
    with pytest.raises(pol.PolicyError, match=r"JSONPatchType\.expression should evaluate to array"):
        run("JSONPatch", "{'op': 'add'}")
    with pytest.raises(pol.PolicyError, match=r"^JSON Patch: "):
        run("JSONPatch", "[JSONPatch{op: 'remove', path: '/spec/nothing'}]")


@pytest.mark.parametrize("reason,code", [("Invalid", 422), ("Forbidden", 403), ("RequestEntityTooLarge", 413)])
def test_reason_codes(reason: str, code: int) -> None:
    assert pol.reason_code(reason) == code
