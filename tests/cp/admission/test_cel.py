"""cp.admission.cel: cel-go's optional syntax and typed object literals, rewritten for the engine,
keep their meaning."""

from __future__ import annotations

from typing import Any

import pytest

from cp.admission import cel

VARS = frozenset({"object", "oldObject", "request", "params", "variables"})


def run(expression: str, **activation: Any) -> Any:
    return cel.evaluate(cel.compile_admission(expression, variables=VARS), activation)


@pytest.mark.parametrize("expression,activation,value", [
    ("object.spec.?nodeName.orValue('')", {"object": {"spec": {"nodeName": "n1"}}}, "n1"),
    ("object.spec.?nodeName.orValue('')", {"object": {"spec": {}}}, ""),
    ("object.?spec.?nodeName.orValue('none')", {"object": {}}, "none"),
    ("object.?spec.nodeName.orValue('none')", {"object": {"spec": {"nodeName": "x"}}}, "x"),  # chaining
    ("request.userInfo.extra[?'a/b'][0].orValue('')", {"request": {"userInfo": {"extra": {"a/b": ["v"]}}}}, "v"),
    ("request.userInfo.extra[?'a/b'][0].orValue('')", {"request": {"userInfo": {"extra": {}}}}, ""),
    ("object.items[?1].orValue(0)", {"object": {"items": [5]}}, 0),
    ("object.items[?0].orValue(0)", {"object": {"items": [5]}}, 5),
    ("object.spec.?x.hasValue()", {"object": {"spec": {"x": None}}}, True),
    ("(object.spec.?a.orValue(1) + 1) * 2", {"object": {"spec": {}}}, 4),
    ("'s.?t' + object.?x.orValue('!')", {"object": {}}, "s.?t!"),  # string literals untouched
    ("[1, 2].map(i, object.?m[?string(i)].orValue(0))", {"object": {"m": {"2": 7}}}, [0, 7]),
    ("has(object.a) ? object.a : object.?b.orValue('b')", {"object": {}}, "b"),
    ("optional.of(1).orValue(2) + optional.none().orValue(3)", {}, 4),
])
def test_optional_syntax(expression: str, activation: dict[str, Any], value: Any) -> None:
    assert run(expression, **activation) == value


def test_rewrite_forms() -> None:
    assert cel.rewrite("a.?b") == '__opt_select(a, "b")'
    assert cel.rewrite("f(x)[?0]") == "__opt_index(f(x), 0)"
    assert cel.rewrite("x in {'a': 1}") == "x in {'a': 1}"  # map literals stay
    assert cel.rewrite("Object{spec: Object.spec{replicas: 1}}") == '{"spec": {"replicas": 1}}'
    assert cel.rewrite("{k: 1}") == "{k: 1}"  # a map keyed by the variable k


def test_typed_literals_evaluate_to_maps() -> None:
    value = run("Object{metadata: Object.metadata{labels: {'a': object.metadata.name}}, "
                "spec: Object.spec{replicas: 2, template: Object.spec.template{x: [1]}}}",
                object={"metadata": {"name": "web"}})
    assert value == {"metadata": {"labels": {"a": "web"}}, "spec": {"replicas": 2, "template": {"x": [1]}}}
    patches = run("[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('example.com/a~b'), "
                  "value: 'x'}]")
    assert patches == [{"op": "add", "path": "/metadata/labels/example.com~1a~0b", "value": "x"}]


def test_errors_are_cel_errors() -> None:
    with pytest.raises(cel.CelError, match="no such key: nodeName"):
        run("object.spec.nodeName", object={"spec": {}})
    compiled = cel.compile_admission("object.spec.(", variables=VARS)
    assert compiled.error is not None and compiled.error.startswith("compilation failed")
    with pytest.raises(cel.CelError):
        cel.evaluate(compiled, {})
    assert cel.compile_admission("nope == 1", variables=VARS).error is not None  # undeclared


def test_variables_used() -> None:
    compiled = cel.compile_admission("variables.a + variables.b.size() + variables.a", variables=VARS)
    assert compiled.variables_used == ("a", "b")
