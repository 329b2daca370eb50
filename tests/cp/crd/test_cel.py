"""x-kubernetes-validations rules, table-driven with the messages upstream's
`pkg/apiserver/schema/cel/validation_test.go` and the CRD validation tests expect."""

from __future__ import annotations

from typing import Any

import pytest

from cp.crd.cel import check_crd_rules, compile_rules, escape

INT = {"type": "integer"}
STR = {"type": "string"}


def obj_schema(props: dict[str, Any], rules: list[dict[str, Any]] | None = None, **more: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"type": "object", "properties": props, **more}
    if rules:
        s["x-kubernetes-validations"] = rules
    return s


def root(spec: dict[str, Any]) -> dict[str, Any]:
    return obj_schema({"spec": spec})


def cr(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"},
            "spec": spec}


def texts(schema: dict[str, Any], obj: dict[str, Any], old: dict[str, Any] | None = None, **kw: Any) -> list[str]:
    return [c.text() for c in compile_rules(schema).validate(obj, old, **kw)]


SPEC_PROPS = {
    "i": INT, "big": INT, "s": STR, "b": {"type": "boolean"}, "n": {"type": "number"},
    "l": {"type": "array", "items": STR},
    "m": {"type": "object", "additionalProperties": INT},
    "o": obj_schema({"f": STR}),
    "ios": {"x-kubernetes-int-or-string": True},
    "dash-name": STR, "namespace": STR, "dot.name": STR,
    "when": {"type": "string", "format": "date-time"},
    "dur": {"type": "string", "format": "duration"},
    "raw": {"type": "string", "format": "byte"},
}
SPEC = {"i": 5, "big": 2**63 - 1, "s": "abc", "b": True, "n": 1, "l": ["a", "b"], "m": {"x": 1}, "o": {"f": "g"},
        "ios": "10%", "dash-name": "d", "namespace": "ns", "dot.name": "dn", "when": "2024-01-02T03:04:05Z",
        "dur": "1m30s", "raw": "aGVsbG8="}

VALID = [
    "self.i == 5", "self.s.startsWith('a') && self.s.size() == 3", "self.b", "self.n == 1.0",
    "self.l == ['a', 'b']", "self.l.all(x, x.size() == 1)", "self.m['x'] == 1", "'x' in self.m",
    "self.o.f == 'g'", "has(self.o.f)", "!has(self.m.h)", "self.ios == '10%'",
    "self.dash__dash__name == 'd'", "self.__namespace__ == 'ns'", "self.dot__dot__name == 'dn'",
    "self.when > timestamp('2024-01-01T00:00:00Z')", "self.dur == duration('90s')", "self.raw == b'hello'",
    "cel.bind(x, self.i * 2, x == 10)", "self.l.all(i, v, i >= 0 && v.size() == 1)",
    "self.m.exists(k, v, k == 'x' && v == 1)", "self.l.transformList(i, v, v + 'z') == ['az', 'bz']",
    "self.m.transformMap(k, v, v + 1) == {'x': 2}", "self.?o.?f.orValue('') == 'g'",
    "self.m.?h.orValue(0) == 0",
    "self.l[?5].orValue('') == ''", "quantity('1Gi').isGreaterThan(quantity('1Mi'))",
    "ip('10.0.0.1').family() == 4 && cidr('10.0.0.0/8').containsIP('10.1.2.3')",
    "isIP('::1') && !isIP('1.2.3') && ip.isCanonical('2001:db8::1') && string(ip('10.0.0.1')) == '10.0.0.1'",
    "url('https://example.com:8443/p?q=1').getPort() == '8443' && isURL('/a/b') && !isURL('a/b')",
    "!format.dns1123Label().validate('ok-name').hasValue() && format.named('dns1123Label').hasValue()",
    "format.dns1123Label().validate('Not_OK').value().size() == 1", "self.s.matches('^a.c$')",
    "[1, 2, 3].exists_one(x, x == 2)", "self.l.map(x, x + x) == ['aa', 'bb']",
]


@pytest.mark.parametrize("rule", VALID)
def test_valid_rules(rule: str) -> None:
    schema = root(obj_schema(SPEC_PROPS, [{"rule": rule}]))
    assert [c.text() for c in check_crd_rules(schema, path="s") if "estimated" not in c.text()] == []
    assert texts(schema, cr(SPEC)) == []


RUNTIME_ERRORS = [
    ("self.big + 1 == 0", 'spec: Invalid value: "object": integer overflow evaluating rule: self.big + 1 == 0'),
    ("1 / 0 == 1 / 0", 'spec: Invalid value: "object": division by zero evaluating rule: 1 / 0 == 1 / 0'),
    ("self.m['c'] == 1", "spec: Invalid value: \"object\": no such key: c evaluating rule: self.m['c'] == 1"),
    ("self.i == 6", 'spec: Invalid value: failed rule: self.i == 6'),
]


@pytest.mark.parametrize(("rule", "expected"), RUNTIME_ERRORS)
def test_runtime_errors(rule: str, expected: str) -> None:
    assert texts(root(obj_schema(SPEC_PROPS, [{"rule": rule}])), cr(SPEC)) == [expected]


COMPILE_ERRORS = [
    ("has(self.o.z)", "undefined field 'z'"),
    ("self.o['f'] == 'g'", "found no matching overload for '_[_]'"),
    ("self.s == 1", "found no matching overload for '_==_' applied to '(string, int)'"),
    ("self.s == null", "no matching overload for '_==_' applied to '(string, null)"),
    ("self.i + 1", "cel expression must evaluate to a bool"),
    ("fakeFunction(self.i)", "undeclared reference to 'fakeFunction'"),
    ("has(self.metadata)", "undefined field 'metadata'"),
    ("self.i ==", "Syntax error"),
]


@pytest.mark.parametrize(("rule", "fragment"), COMPILE_ERRORS)
def test_compile_errors_at_crd_time(rule: str, fragment: str) -> None:
    schema = root(obj_schema(SPEC_PROPS, [{"rule": rule}]))
    causes = [c.text() for c in check_crd_rules(schema, path="spec.validation.openAPIV3Schema")]
    assert len(causes) == 1, causes
    assert causes[0].startswith("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: "
                                "Invalid value: apiextensions.ValidationRule{Rule:")
    assert fragment in causes[0]


def test_compile_error_layout() -> None:
    schema = root(obj_schema({"i": INT}, [{"rule": "self.nope == 1"}]))
    (cause,) = check_crd_rules(schema, path="p")
    assert cause.detail == ("compilation failed: ERROR: <input>:1:5: undefined field 'nope'\n"
                            " | self.nope == 1\n | ....^")


def test_embedded_and_root_metadata() -> None:
    schema = obj_schema({"spec": obj_schema({"e": {"type": "object", "x-kubernetes-embedded-resource": True,
                                                   "x-kubernetes-preserve-unknown-fields": True}},
                                            [{"rule": "self.e.kind == 'Pod' && self.e.metadata.name == 'p'"}])},
                        [{"rule": "self.metadata.name == 'w' && self.kind == 'Widget'"}])
    assert check_crd_rules(schema, path="s") == []
    obj = cr({"e": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}}}})
    assert texts(schema, obj) == []
    bad = root(obj_schema({"e": {"type": "object", "x-kubernetes-embedded-resource": True,
                                 "x-kubernetes-preserve-unknown-fields": True}},
                          [{"rule": "has(self.e.metadata.namespace)"}]))
    assert "undefined field 'namespace'" in check_crd_rules(bad, path="s")[0].text()


def test_root_rule_path_is_nil() -> None:
    schema = obj_schema({"spec": obj_schema({"i": INT})}, [{"rule": "self.spec.i > 10", "message": "i too small"}])
    assert texts(schema, cr({"i": 1})) == ['<nil>: Invalid value: i too small']


def test_message_expression_reason_and_field_path() -> None:
    spec = obj_schema({"f1": STR, "f2": STR, "f3": STR, "m": {"type": "object", "additionalProperties": STR}}, [
        {"rule": "self.f2 != 'v2'", "reason": "FieldValueDuplicate", "fieldPath": ".f2"},
        {"rule": "self.f3 != 'v3'", "reason": "FieldValueRequired", "fieldPath": ".f3", "message": "f3 needed"},
        {"rule": "self.f1 != 'v1'", "reason": "FieldValueForbidden", "fieldPath": ".f1",
         "messageExpression": "'f1 may not be ' + self.f1"},
        {"rule": "self.m.size() == 0", "fieldPath": ".m['k.x']", "messageExpression": "''", "message": "fallback"},
    ])
    got = texts(root(spec), cr({"f1": "v1", "f2": "v2", "f3": "v3", "m": {"a": "b"}}))
    assert got == ['spec.f2: Duplicate value', "spec.f3: Required value: f3 needed",
                   "spec.f1: Forbidden: f1 may not be v1", 'spec.m[k.x]: Invalid value: fallback']


def test_transition_rules_correlate() -> None:
    item = obj_schema({"k": STR, "v": INT}, [{"rule": "self.v >= oldSelf.v", "message": "v may not shrink"}],
                      required=["k"])
    spec = obj_schema({
        "lm": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"], "items": item},
        "mp": {"type": "object", "additionalProperties": obj_schema({"v": INT},
                                                                    [{"rule": "self.v == oldSelf.v"}])},
        "imm": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}]},
    })
    schema = root(spec)
    new = cr({"lm": [{"k": "a", "v": 1}, {"k": "b", "v": 5}], "mp": {"x": {"v": 1}, "y": {"v": 2}}, "imm": "n"})
    assert texts(schema, new) == []  # no old value: transition rules do not run
    old = cr({"lm": [{"k": "b", "v": 9}], "mp": {"x": {"v": 2}}, "imm": "o"})
    assert sorted(texts(schema, new, old)) == sorted([
        'spec.lm[1]: Invalid value: v may not shrink',
        'spec.mp[x]: Invalid value: failed rule: self.v == oldSelf.v',
        'spec.imm: Invalid value: "n": immutable',
    ])


def test_optional_old_self() -> None:
    spec = obj_schema({"i": INT}, [{"rule": "!oldSelf.hasValue() || self.i >= oldSelf.value().i",
                                    "optionalOldSelf": True, "message": "i may not shrink"},
                                   {"rule": "oldSelf.hasValue() || self.i < 100", "optionalOldSelf": True,
                                    "message": "create below 100"}])
    schema = root(spec)
    assert texts(schema, cr({"i": 200})) == ['spec: Invalid value: create below 100']
    assert texts(schema, cr({"i": 1}), cr({"i": 2})) == ['spec: Invalid value: i may not shrink']


def test_ratcheting_unchanged_values_warn() -> None:
    spec = obj_schema({"a": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 3"}]},
                       "b": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 3"}]}})
    schema = root(spec)
    old = cr({"a": "long", "b": "long"})
    warnings: list[str] = []
    got = texts(schema, cr({"a": "long", "b": "longer"}), old, warnings=warnings)
    assert got == ['spec.b: Invalid value: "longer": failed rule: self.size() < 3']
    assert warnings == ['spec.a: Invalid value: "long": failed rule: self.size() < 3']


def test_cost_budget_and_per_call_limit() -> None:
    schema = root(obj_schema({"i": INT}, [{"rule": "self.i > 0"}, {"rule": "self.i > 1"}]))
    assert texts(schema, cr({"i": 5}), budget=0) == [
        'spec: Invalid value: "object": validation failed due to running out of cost budget, '
        "no further validation rules will be run"]
    rules = compile_rules(schema, per_call_limit=0)
    assert [c.text() for c in rules.validate(cr({"i": 5}), None)] == [
        "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation "
        "rules will be run due to call cost exceeds limit for rule: self.i > 0"]


def test_runtime_cost_uses_actual_sizes() -> None:
    # Unbounded list of unbounded strings: too expensive statically, cheap for a small object.
    spec = obj_schema({"l": {"type": "array", "items": STR}}, [{"rule": "self.l.all(x, x.matches('^a+$'))"}])
    assert texts(root(spec), cr({"l": ["a", "aa"]})) == []


CRD_RULE_CHECKS = [
    ({"rule": ""}, "p.x-kubernetes-validations[0].rule: Required value: rule is not specified"),
    ({"rule": "true", "message": " "}, 'p.x-kubernetes-validations[0].message: Invalid value: " ": '
                                       "must be non-empty if specified"),
    ({"rule": "true\n&& true"}, "p.x-kubernetes-validations[0].message: Required value: message must be specified "
                                "if rule contains line breaks"),
    ({"rule": "true", "reason": "Bogus"}, 'p.x-kubernetes-validations[0].reason: Unsupported value: "Bogus": '
     'supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"'),
    ({"rule": "true", "fieldPath": ".nope"}, 'p.x-kubernetes-validations[0].fieldPath: Invalid value: ".nope": '
                                             "must be a valid path"),
    ({"rule": "true", "optionalOldSelf": True}, "p.x-kubernetes-validations[0].optionalOldSelf: Invalid value: "
                                                "true: may not be set if oldSelf is not used in rule"),
    ({"rule": "true", "messageExpression": "1"}, "p.x-kubernetes-validations[0].messageExpression: Invalid value: "
     'apiextensions.ValidationRule{Rule:"true", Message:"", MessageExpression:"1", Reason:'
     "(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: "
     "messageExpression must evaluate to a string"),
]


@pytest.mark.parametrize(("rule", "expected"), CRD_RULE_CHECKS)
def test_crd_rule_shape_checks(rule: dict[str, Any], expected: str) -> None:
    schema = obj_schema({"i": INT}, [rule])
    assert [c.text() for c in check_crd_rules(schema, path="p")] == [expected]


def test_old_self_on_uncorrelatable_list_items() -> None:
    schema = obj_schema({"l": {"type": "array", "maxItems": 10, "items": {
        "type": "string", "maxLength": 10, "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}})
    assert [c.text() for c in check_crd_rules(schema, path="p")] == [
        'p.properties[l].items.x-kubernetes-validations[0].rule: Invalid value: "self == oldSelf": oldSelf cannot be '
        "used on the uncorrelatable portion of the schema within p.properties[l]"]


def test_estimated_cost_limits() -> None:
    unbounded = obj_schema({"l": {"type": "array", "items": STR}}, [{"rule": "self.l.all(x, x.matches('^a+$'))"}])
    causes = [c.text() for c in check_crd_rules(unbounded, path="p")]
    assert causes[0] == ("p.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor "
                         "of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and "
                         "maxLength where arrays, maps, and strings are declared)")
    assert causes[-1].startswith("p: Forbidden: x-kubernetes-validations estimated rule cost total for entire "
                                 "OpenAPIv3 schema exceeds budget by factor of")
    bounded = obj_schema({"l": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}}},
                         [{"rule": "self.l.all(x, x.matches('^a+$'))"}])
    assert check_crd_rules(bounded, path="p") == []


@pytest.mark.parametrize(("name", "escaped"), [("dash-name", "dash__dash__name"), ("namespace", "__namespace__"),
                                                ("a.b/c", "a__dot__b__slash__c"), ("x__y", "x__underscores__y"),
                                                ("1x", None), ("a b", None), ("plain", "plain")])
def test_escaping(name: str, escaped: str | None) -> None:
    assert escape(name) == escaped


def test_empty() -> None:
    assert compile_rules(root(obj_schema({"i": INT}))).empty()
    assert not compile_rules(root(obj_schema({"i": INT}, [{"rule": "true"}]))).empty()


def test_crd_validation_compiles_rules() -> None:
    """cp/validation/extensions.py checks the rules when a CRD is written (a schema all versions share
    under spec.validation, as upstream reports it)."""
    from tests.cp.validation.rules import create_errors

    schema = root(obj_schema({"i": INT}, [{"rule": "self.i > 0"}, {"rule": "self.j > 0"}]))
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": schema}}]},
           "status": {"storedVersions": ["v1"]}}
    (error,) = create_errors(crd)
    assert error.startswith("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1]"
                            ".rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.j > 0\"")
    assert "undefined field 'j'" in error


LIST_MAP = {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
            "items": obj_schema({"k": STR, "v": STR}, required=["k"])}


@pytest.mark.parametrize("rule", [
    "self.objs[0] == self.objs[1]", "self.objs[0] + self.objs[2] == self.objs[2]",
    "self.objs[2] + self.objs[0] == self.objs[0]", "self.objs[0] == [self.objs[0][1], self.objs[0][0]]",
    "size(self.objs[0] + [self.objs[3][0]]) == 3", "self.set == [3, 2, 1]", "self.set != [3, 2]",
    "self.set + [1, 4] == [1, 2, 3, 4]", "self.atomic != [2, 1]",
])
def test_list_types_compare_by_identity(rule: str) -> None:
    """List-type map lists compare by their keys and set lists in any order (upstream's listMaps cases)."""
    spec = obj_schema({"objs": {"type": "array", "items": LIST_MAP},
                       "set": {"type": "array", "x-kubernetes-list-type": "set", "items": INT},
                       "atomic": {"type": "array", "items": INT}}, [{"rule": rule}])
    value = {"objs": [[{"k": "a", "v": "1"}, {"k": "b", "v": "2"}], [{"k": "b", "v": "2"}, {"k": "a", "v": "1"}],
                      [{"k": "b", "v": "3"}, {"k": "a", "v": "1"}], [{"k": "c", "v": "4"}]],
             "set": [1, 2, 3], "atomic": [1, 2]}
    assert texts(root(spec), cr(value)) == []


def test_homogeneous_literals() -> None:
    schema = root(obj_schema({"i": INT}, [{"rule": "{'k1': 'a', 'k2': 1}.size() == 2"}]))
    assert "expected type 'string' but found 'int'" in check_crd_rules(schema, path="p")[0].text()


@pytest.mark.parametrize(("message", "expression", "budget", "per_call", "expected"), [
    ("", '"static string"', 300, 1_000_000, 'root: Invalid value: static string'),
    ("invisible", '"this is messageExpression"', 10_000_000, 1_000_000,
     'root: Invalid value: this is messageExpression'),
    ("", "true", 10_000_000, 1_000_000, 'root: Invalid value: failed rule: false'),
    ("", '"string 1" + "string 2" + "string 3"', 1, 1_000_000,
     'root: Invalid value: "object": messageExpression evaluation failed due to running out of cost budget, '
     "no further validation rules will be run"),
    ("", '"str1 " + self.str', 50, 1_000_000, 'root: Invalid value: str1 a string'),
    ("message not messageExpression", '"str1 " + ["a", "b", "c", "d"][4]', 50, 1_000_000,
     'root: Invalid value: message not messageExpression'),
    ("", '"string 1" + "string 2" + "string 3"', 10_000_000, 1,
     'root: Invalid value: "object": no further validation rules will be run due to call cost exceeds limit for '
     'messageExpression: "\\"string 1\\" + \\"string 2\\" + \\"string 3\\""'),
    ("message not messageExpression", '"str with \\na newline"', 10_000_000, 1_000_000,
     'root: Invalid value: message not messageExpression'),
    ("message not messageExpression", '"' + "a" * 5121 + '"', 10_000_000, 1_000_000,
     'root: Invalid value: message not messageExpression'),
    ("message not messageExpression", 'string("     ")', 10_000_000, 1_000_000,
     'root: Invalid value: message not messageExpression'),
])
def test_message_expression(message: str, expression: str, budget: int, per_call: int, expected: str) -> None:
    """Upstream's TestMessageExpression: the rule `false` with a messageExpression."""
    rule: dict[str, Any] = {"rule": "false", "messageExpression": expression}
    if message:
        rule["message"] = message
    schema = obj_schema({"str": STR}, [rule])
    rules = compile_rules(schema, per_call_limit=per_call)
    assert [c.text() for c in rules.validate({"str": "a string"}, None, path="root", budget=budget)] == [expected]


@pytest.mark.parametrize(("schema", "obj", "old", "fails"), [
    (obj_schema({"foo": STR}), {"foo": "bar"}, None, "self.foo == 'not bar' || !oldSelf.hasValue()"),
    (obj_schema({"foo": STR}), {"foo": "invalid"}, {"foo": "bar"}, "!self.foo == 'valid' || !oldSelf.hasValue()"),
    (obj_schema({"foo": STR}), {"foo": "invalid again"}, {"foo": "invalid"},
     "self.foo == 'valid' || (oldSelf.hasValue() && oldSelf.value().foo != 'valid')"),
    (obj_schema({"foo": STR}), {"foo": "invalid again"}, {"foo": "invalid"},
     "self.foo == 'valid' || oldSelf.foo.orValue('') != 'valid'"),
    (obj_schema({"foo": STR}), {"foo": "invalid"}, {"foo": "valid"},
     "!self.foo == 'valid' || (oldSelf.hasValue() && oldSelf.value().foo != 'valid')"),
    (INT, 10, None, "self >= 10 || (oldSelf.hasValue() && oldSelf.value() <= self)"),
    (INT, 9, None, "!self >= 10 || (oldSelf.hasValue() && oldSelf.value() <= self)"),
    (INT, 9, 5, "self >= 10 || (oldSelf.hasValue() && oldSelf.value() <= self)"),
    (INT, 4, 5, "!self >= 10 || (oldSelf.hasValue() && oldSelf.value() <= self)"),
])
def test_optional_old_self_cases(schema: dict[str, Any], obj: Any, old: Any, fails: str) -> None:
    """Upstream's TestOptionalOldSelf (a leading `!` marks the cases that must fail)."""
    rule = fails.removeprefix("!")
    rules = compile_rules({**schema, "x-kubernetes-validations": [{"rule": rule, "optionalOldSelf": True}]})
    got = [c.text() for c in rules.validate(obj, old, path="root")]
    shown = f"{obj}: " if schema["type"] == "integer" else ""
    assert got == ([f"root: Invalid value: {shown}failed rule: {rule}"] if fails.startswith("!") else [])


@pytest.mark.parametrize("rule", [
    "self.?presentObj.?presentStr == optional.of('value')", "self.presentObj.?presentStr.orValue('') == 'value'",
    "self.presentObj.?presentStr.optMap(v, v == 'value').hasValue()",
    "self.?absentObj.?absentStr.or(optional.of('nope')) == optional.of('nope')",
    "self.m[?'x'].orValue('nope') == 'nope'", "self.l[?1] == optional.none()",
    "{?'k': optional.none(), 'k2': 'v2'} == {'k2': 'v2'}", "['a', ?optional.of('v'), 'c'] == ['a', 'v', 'c']",
    "optional.ofNonZeroValue('') == optional.none()", "!has(self.nullStr)",
])
def test_optionals(rule: str) -> None:
    """Upstream's `optionals` cases (and a null field read as absent)."""
    props = {"presentObj": obj_schema({"presentStr": STR}), "absentObj": obj_schema({"absentStr": STR}),
             "m": {"type": "object", "additionalProperties": STR}, "l": {"type": "array", "items": STR},
             "nullStr": {"type": "string", "nullable": True}}
    schema = obj_schema(props, [{"rule": rule}])
    assert [c.text() for c in check_crd_rules(schema, path="p") if "estimated" not in c.text()
            and "contributed" not in c.text()] == []
    obj = {"presentObj": {"presentStr": "value"}, "m": {"k": "v"}, "l": ["a"], "nullStr": None}
    assert texts(schema, obj) == []


def test_reserved_words_are_not_field_names() -> None:
    schema = obj_schema({"true": INT}, [{"rule": "self.true == 1"}])
    assert "mismatched input 'true' expecting IDENTIFIER" in check_crd_rules(schema, path="p")[0].text()
    assert texts(obj_schema({"true": INT}, [{"rule": "self.__true__ == 1"}]), {"true": 1}) == []


def test_unchanged_schema_skips_the_per_expression_limit() -> None:
    """suppressExpressionCostForUnchangedSchema: an update that keeps a version's schema keeps its rules."""
    schema = obj_schema({"l": {"type": "array", "items": STR}}, [{"rule": "self.l.all(x, x.matches('^a+$'))"}])
    causes = [c.text() for c in check_crd_rules(schema, path="p", unchanged=True)]
    assert not any("estimated rule cost exceeds" in c for c in causes)
    assert causes[-1].startswith("p: Forbidden: x-kubernetes-validations estimated rule cost total")


def test_rules_under_unescapable_names_and_allof() -> None:
    schema = obj_schema({"a@b": obj_schema({"m": INT}, [{"rule": "self.m == 2"}])},
                        allOf=[{"x-kubernetes-validations": [{"rule": "has(self.x)", "message": "x required"}]}])
    schema["properties"]["x"] = STR
    assert texts(schema, {"a@b": {"m": 1}}, path="root") == ["root: Invalid value: x required",
                                                                "root.a@b: Invalid value: failed rule: self.m == 2"]


def test_field_paths_at_crd_time() -> None:
    """Upstream's "x-kubernetes-validations should have valid fieldPath for array" case."""
    paths = [".foo['b.c']['c\\a']", "['a.c']", ".a.c", ".list[0]", "   ", ".", ".."]
    schema = obj_schema({
        "a.c": {"type": "number"},
        "foo": obj_schema({"b.c": obj_schema({"c\a": {"type": "number"}})}),
        "list": {"type": "array", "items": obj_schema({"a": {"type": "number"}})},
    }, [{"rule": "true", "fieldPath": p} for p in paths])
    got = [(c.field, c.type) for c in check_crd_rules(schema, path="p")]
    assert got == [("p.x-kubernetes-validations[2].fieldPath", "Invalid"),
                   ("p.x-kubernetes-validations[3].fieldPath", "Invalid"),
                   ("p.x-kubernetes-validations[4].fieldPath", "Invalid"),
                   ("p.x-kubernetes-validations[4].fieldPath", "Invalid"),
                   ("p.x-kubernetes-validations[5].fieldPath", "Invalid"),
                   ("p.x-kubernetes-validations[6].fieldPath", "Invalid")]


def test_metadata_names_are_bounded() -> None:
    """Upstream: metadata.name and generateName are estimated as 253-byte strings, not unbounded."""
    schema = {"type": "object", "x-kubernetes-validations": [{
        "rule": "self.metadata.name.contains(self.metadata.name) && "
                "self.metadata.generateName.contains(self.metadata.generateName)"}]}
    assert check_crd_rules(schema, path="p") == []


def test_message_expression_costs_count() -> None:
    """Upstream: a messageExpression over unbounded strings exceeds the per-expression and per-CRD limits."""
    schema = obj_schema({"f": {"type": "array", "items": STR, "x-kubernetes-validations": [
        {"rule": "true", "messageExpression": "string(self[0]) + string(self[1]) + string(self[2])"}]}})
    got = [(c.type, c.field) for c in check_crd_rules(schema, path="p")]
    me = "p.properties[f].x-kubernetes-validations[0].messageExpression"
    assert sorted(got) == sorted([("Forbidden", me), ("Forbidden", me), ("Forbidden", "p")])


def test_conversions_cost_their_actual_size_at_runtime() -> None:
    schema = root(obj_schema({"i": INT}, [{"rule": "self.i < 3", "messageExpression": "'i is ' + string(self.i)"}]))
    assert texts(schema, cr({"i": 5})) == ["spec: Invalid value: i is 5"]


@pytest.mark.parametrize("rule", [
    "self.str.find('[0-9]+') == '123'", "self.str.findAll('[0-9]+', 1) == ['123']",
    "url('https://[::1]:80/').getHost() == '[::1]:80'", "url('https://[::1]/').getHostname() == '::1'",
    "url('https://example.com/with space/').getEscapedPath() == '/with%20space/'",
    "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
    "isURL('https://a:b:c/') == false", "isURL('../relative-path') == false",
    "self.durs.sum() == duration('0s')",
])
def test_regex_and_url_libraries(rule: str) -> None:
    """Upstream's `stdlib regex functions` and `URL parsing` cases."""
    schema = obj_schema({"str": STR, "durs": {"type": "array", "items": {"type": "string", "format": "duration"}}},
                        [{"rule": rule}])
    assert texts(schema, {"str": "this is a 123 string 456", "durs": []}) == []


@pytest.mark.parametrize(("rule", "detail"), [
    ("self.str.matches('x++')", "compilation failed: ERROR: <input>:1:18: invalid matches argument"),
    ("self.str.find(')') == ''", "program instantiation failed: error parsing regexp:"),
])
def test_constant_regexes_are_checked(rule: str, detail: str) -> None:
    (cause,) = check_crd_rules(obj_schema({"str": STR}, [{"rule": rule}]), path="p")
    assert detail in cause.detail


@pytest.mark.parametrize("rule", [
    "has(self.withUnknown)", "self.withUnknownList.size() == 5",
    "self.withUnknownList[0] != self.withUnknownList[1]", "self.withUnknownList[1] == self.withUnknownList[2]",
    "self.withUnknownList[3] == self.withUnknownList[4]",
    "self.withUnknownFieldList[0] != self.withUnknownFieldList[1]",
    "self.withUnknownFieldList[1] == self.withUnknownFieldList[2]", "self.known.k == 1",
])
def test_unknown_fields_take_part_in_equality(rule: str) -> None:
    """Upstream's `preserve unknown fields` cases: unknown and untyped fields are not reachable by
    name but objects that differ in them are not equal."""
    unknown = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    schema = obj_schema({
        "withUnknown": unknown,
        "withUnknownList": {"type": "array", "items": unknown},
        "withUnknownFieldList": {"type": "array", "items": obj_schema({
            "fieldOfUnknownType": {"x-kubernetes-preserve-unknown-fields": True}})},
        "known": {**obj_schema({"k": INT}), "x-kubernetes-preserve-unknown-fields": True},
    }, [{"rule": rule}])
    obj = {"withUnknown": {"field1": "a"},
           "withUnknownList": [{"field1": "a", "field2": "b"}, {"field1": "x", "field2": "y"},
                               {"field1": "x", "field2": "y"}, {}, {}],
           "withUnknownFieldList": [{"fieldOfUnknownType": "a"}, {"fieldOfUnknownType": 1},
                                    {"fieldOfUnknownType": 1}],
           "known": {"k": 1, "other": "x"}}
    assert [c.text() for c in check_crd_rules(schema, path="p") if "estimated" not in c.text()
            and "contributed" not in c.text()] == []
    assert texts(schema, obj) == []


@pytest.mark.parametrize("rule", ["has(self.withUnknown.field1)", "has(self.anyval)", "has(self.known.other)"])
def test_unknown_fields_are_not_reachable(rule: str) -> None:
    schema = obj_schema({"withUnknown": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                         "anyval": {"x-kubernetes-preserve-unknown-fields": True},
                         "known": {**obj_schema({"k": INT}), "x-kubernetes-preserve-unknown-fields": True}},
                        [{"rule": rule}])
    assert "undefined field" in check_crd_rules(schema, path="p")[0].detail


@pytest.mark.parametrize("rule", [
    "has(self.embedded.metadata.namespace)", "self.embedded.metadata.namespace == 'ns'",
    "has(self.embedded.spec.if)", "self.embedded.spec.if == 'x'", "self.embedded.spec.__if__ == 'x'",
    "[1, 2].includes(2) && !self.embedded.spec.if.includes('y')",
])
def test_reserved_words_name_escaped_properties(rule: str) -> None:
    """1.31+: `self.x.namespace` reads the property escaped as `__namespace__` (upstream's
    "embedded object with usage of reserved keywords"); the lists library's `includes`."""
    embedded = {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {
        "kind": STR, "apiVersion": STR, "metadata": obj_schema({"name": STR, "generateName": STR, "namespace": STR}),
        "spec": obj_schema({"if": STR})}}
    schema = obj_schema({"embedded": embedded}, [{"rule": rule}])
    obj = {"embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
                        "spec": {"if": "x"}}}
    assert [c.text() for c in check_crd_rules(schema, path="p") if "estimated" not in c.text()
            and "contributed" not in c.text()] == []
    assert texts(schema, obj) == []
