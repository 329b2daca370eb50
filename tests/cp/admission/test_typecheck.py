"""cp.admission.typecheck: the policy status controller's expression warnings (undefined fields of
the matched kinds' schemas, with cel-go's message and caret)."""

from __future__ import annotations

from typing import Any

from cp.admission import typecheck


def policy(*validations: dict[str, Any], resources: tuple[str, ...] = ("deployments",),
           groups: tuple[str, ...] = ("apps",)) -> dict[str, Any]:
    return {"metadata": {"name": "p", "generation": 3}, "spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": list(groups), "apiVersions": ["v1"],
                                                "operations": ["CREATE"], "resources": list(resources)}]},
        "validations": list(validations)}}


def test_undefined_fields_are_reported_per_kind() -> None:
    p = policy({"expression": "object.spec.replicas > 1"},
               {"expression": "true", "messageExpression": "'x' + oldObject.spec.selectr.foo"},
               resources=("deployments", "statefulsets"))
    assert typecheck.expression_warnings(p) == [{
        "fieldRef": "spec.validations[1].messageExpression",
        "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:21: undefined field 'selectr'\n"
                   " | 'x' + oldObject.spec.selectr.foo\n | ....................^\n\n"
                   "apps/v1, Kind=StatefulSet: ERROR: <input>:1:21: undefined field 'selectr'\n"
                   " | 'x' + oldObject.spec.selectr.foo\n | ....................^\n"}]


def test_maps_strings_and_wildcards_are_not_checked() -> None:
    ok = policy({"expression": "object.metadata.labels.anything == 'object.spec.nope'"},
                {"expression": "object.spec.template.spec.containers.all(c, c.whatever)"})
    assert typecheck.expression_warnings(ok) == []
    assert typecheck.expression_warnings(policy({"expression": "object.nope"}, groups=("*",))) == []


def test_status() -> None:
    assert typecheck.status(policy({"expression": "object.spec.paused"})) == {
        "observedGeneration": 3, "typeChecking": {}}
    core = policy({"expression": "object.spec.nodeNam == ''"}, resources=("pods",), groups=("",))
    [warning] = typecheck.status(core)["typeChecking"]["expressionWarnings"]
    assert warning["warning"].startswith("/v1, Kind=Pod: ERROR: <input>:1:12: undefined field 'nodeNam'")
