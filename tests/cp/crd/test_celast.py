"""cp/crd/celast.py: the parser's and checker's messages, and the cost estimate against upstream's
TestCostEstimation figures (compilation_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from cp.crd import celast
from cp.crd.cel import decl_type

NUMBERS = {"type": "array", "items": {"type": "number"}}
TEN_NUMBERS = {"type": "array", "maxItems": 10, "items": {"type": "number"}}
STRING = {"type": "string"}


@pytest.mark.parametrize(("schema", "rule", "expected"), [
    (NUMBERS, "self.all(x, true)", 4718591),
    (TEN_NUMBERS, "self.all(x, true)", 32),
    ({"type": "array", "items": STRING}, "self.all(x, true)", 3145727),
    ({"type": "array", "items": {"type": "boolean"}}, "self.all(x, true)", 1887437),
    ({"type": "object", "additionalProperties": {"type": "number"}}, "self.all(x, true)", 1348169),
    ({"type": "object", "maxProperties": 3, "additionalProperties": STRING}, "self.all(x, true)", 11),
    (STRING, "self.contains('test')", 314574),
    ({"type": "string", "maxLength": 10}, "self.contains('test')", 5),
    (STRING, "self.startsWith('test')", 2),
    (STRING, 'size(self + "hello") > size("hello")', 314578),
    ({"type": "string", "maxLength": 4}, 'size(self + "hello") > size("hello")', 7),
    ({"type": "array", "items": STRING}, "self[1] == self[1]", 314577),
    (TEN_NUMBERS, "self.all(x, self.all(y, true))", 352),
    (TEN_NUMBERS, "self.all(x, self.all(y, self.all(z, true)))", 3552),
    (STRING, 'self.matches("x")', 314574),
    (STRING, '"".matches("(((((((((())))))))))[0-9]")', 7),
    (STRING, 'self.matches("")', 1),
    ({"type": "string", "maxLength": 0}, 'self == "x"', 1),
    (STRING, 'self == "x"', 2),
])
def test_cost_estimate(schema: dict[str, Any], rule: str, expected: int) -> None:
    t = decl_type(schema, root=False)
    assert t is not None
    tree = celast.parse(rule)
    celast.check(tree, variables={"self": t}, src=rule)
    assert celast.estimate_cost(tree) == expected


@pytest.mark.parametrize(("rule", "message"), [
    ("self.i ==", "ERROR: <input>:1:10: Syntax error: mismatched input '<EOF>'"),
    ("self.x", "ERROR: <input>:1:5: undefined field 'x'\n | self.x\n | ....^"),
    ("nope > 1", "ERROR: <input>:1:1: undeclared reference to 'nope' (in container '')"),
    ("duration('1d') > duration('1s')", "ERROR: <input>:1:10: invalid duration argument"),
    ("timestamp('2000-13-01T00:00:00Z') != timestamp(0)", "ERROR: <input>:1:11: invalid timestamp"),
    ("'a'.matches(')')", "ERROR: <input>:1:13: invalid matches argument"),
    ("[1, 'a'].size() == 2", "ERROR: <input>:1:5: expected type 'int' but found 'string'"),
    ("self.i + 'a' == 1", "found no matching overload for '_+_' applied to '(int, string)'"),
])
def test_messages(rule: str, message: str) -> None:
    t = celast.T("object", fields={"i": celast.INT})
    with pytest.raises((celast.CelSyntaxError, celast.CelTypeError)) as info:
        celast.check(celast.parse(rule), variables={"self": t}, src=rule)
    assert message in str(info.value)


@pytest.mark.parametrize(("rule", "rendered"), [
    ("cel.bind(x, self.i, x > 1)", "[self.i].map(x, (x > 1))[0]"),
    ("self.?i.orValue(0) == 0", "(__k8s_opt_select(self, 'i').orValue(0) == 0)"),
    ("self.l.all(i, v, v > i)",
     "__k8s_entries(self.l).all(__e1, [__e1[0]].map(i, [__e1[1]].map(v, (v > i))[0])[0])"),
    ("size(self.s) == 1", "(__k8s_size(self.s) == 1)"),
    ("size(self.l) == 1", "(size(self.l) == 1)"),
])
def test_rendering_for_the_engine(rule: str, rendered: str) -> None:
    t = celast.T("object", fields={"i": celast.INT, "s": celast.STRING, "l": celast.T("list", elem=celast.INT)})
    tree = celast.parse(rule)
    celast.check(tree, variables={"self": t}, src=rule)
    assert celast.render(tree) == rendered
