"""kubectl's JSONPath (`cp.jsonpath`) as client-go evaluates it with missing keys allowed: fields,
indexes and slices, wildcards, unions, recursive descent, filters with Go's comparison rules, and the
printer's text for values."""

from __future__ import annotations

from typing import Any

import pytest

from cp import jsonpath

OBJ: dict[str, Any] = {
    "metadata": {"name": "w", "labels": {"b": "2", "a": "<1>"}},
    "spec": {"replicas": 3, "ratio": 0.5, "tags": ["x", "y", "z"], "nothing": None, "on": True},
    "status": {"conditions": [{"type": "Progressing", "status": "False", "n": 1},
                              {"type": "Ready", "status": "True", "n": 2}]},
}


@pytest.mark.parametrize(("path", "expected"), [
    (".spec.replicas", [3]),
    (".spec['replicas']", [3]),
    (".spec.tags[0]", ["x"]),
    (".spec.tags[-1]", ["z"]),
    (".spec.tags[0:2]", ["x", "y"]),
    (".spec.tags[::2]", ["x", "z"]),
    (".spec.tags[*]", ["x", "y", "z"]),
    (".spec.tags[0,2]", ["x", "z"]),
    (".spec.missing.deeper", []),
    (".spec.nothing", [None]),
    ('.status.conditions[?(@.type=="Ready")].status', ["True"]),
    (".status.conditions[?(@.type=='Ready')].status", ["True"]),
    (".status.conditions[?(@.n>1)].type", ["Ready"]),
    (".status.conditions[?(@.n<=1)].type", ["Progressing"]),
    (".status.conditions[?(@.status)].type", ["Progressing", "Ready"]),
    (".status.conditions[?(@.missing)].type", []),
    ("..type", ["Progressing", "Ready"]),
    (".metadata.labels.*", ["2", "<1>"]),
])
def test_finds(path: str, expected: list[Any]) -> None:
    assert jsonpath.parse("{" + path + "}").find_results(OBJ) == [expected]


@pytest.mark.parametrize("path", [
    ".spec.tags[7]",  # out of range
    ".spec.replicas[0]",  # not a list
    ".status.conditions[?(@.n==\"1\")].type",  # a number compared with a string
    ".status.conditions[?(@.type>true)].type",  # booleans are not ordered
])
def test_evaluation_errors(path: str) -> None:
    parsed = jsonpath.parse("{" + path + "}")
    with pytest.raises(jsonpath.JSONPathError):
        parsed.find_results(OBJ)
    assert parsed.first(OBJ) == (None, False)


@pytest.mark.parametrize("text", ["{.spec", "{.spec.tags[x]}", "{.a[?(@.b==1)}", "{.a[0}", "{#}"])
def test_parse_errors(text: str) -> None:
    with pytest.raises(jsonpath.JSONPathError):
        jsonpath.parse(text)


def test_text_as_the_printer_writes_it() -> None:
    assert jsonpath.go_text({"b": 1, "a": "<x>"}) == '{"a":"\\u003cx\\u003e","b":1}'
    assert jsonpath.go_text(["a", 1]) == '["a",1]'
    assert jsonpath.go_text(None) == "<no value>"
    assert jsonpath.go_text(True) == "true"
    assert [jsonpath.go_sprint(f) for f in (1.5, 3.0, 1e6, 123456.0, 1e-5, -0.25)] == \
        ["1.5", "3", "1e+06", "123456", "1e-05", "-0.25"]
