"""`cp.fieldpath`: FieldsV1 sets as tries, their operations, upstream's key order, path rendering."""

from __future__ import annotations

import random

import pytest

from cp import fieldpath as fp
from tests.api.ssa.support import key_order

A = ("f:spec", "f:replicas")
B = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"a"}')
BI = (*B, "f:image")
C = ("f:metadata", "f:labels", "f:app")


def s(*paths: tuple[str, ...]) -> fp.Set:
    return fp.from_paths(list(paths))


def test_fieldsv1_shape() -> None:
    assert s(A, B, BI) == {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
        'k:{"name":"a"}': {".": {}, "f:image": {}}}}}}}
    assert list(fp.paths(s(BI, A, B))) == [A, B, BI]
    assert fp.has(s(B, BI), B) and fp.has(s(BI), BI) and not fp.has(s(BI), B)


def test_operations() -> None:
    assert fp.union(s(A), s(BI)) == s(A, BI)
    assert fp.union(s(BI), s(B)) == s(B, BI)  # a member gaining children / children gaining "."
    assert fp.difference(s(A, B, BI), s(B)) == s(A, BI)  # exact: children of B stay
    assert fp.difference(s(B, BI), s(BI)) == s(B)
    assert fp.difference(s(A), s(C)) == s(A)
    assert fp.recursive_difference(s(A, B, BI), s(B)) == s(A)  # everything below B goes too
    assert fp.recursive_difference(s(A, BI), s(("f:spec",))) == {}
    assert fp.intersection(s(A, B, BI), s(BI, C)) == s(BI)
    assert fp.intersection(s(B), s(BI)) == {}
    x = s(A, C)
    assert fp.difference(x, s(BI)) is x  # unchanged sets are returned as they are
    assert fp.union(x, {}) is x


def _random_paths(rng: random.Random) -> list[tuple[str, ...]]:
    elements = ["f:a", "f:b", "f:zeta", "f:A", 'k:{"name":"x"}', 'k:{"name":"y"}', 'k:{"port":80}',
                'k:{"port":1000}', 'v:"s"', "v:3", "v:10", "i:2", "i:10"]
    out = []
    for _ in range(rng.randint(1, 8)):
        out.append(tuple(rng.choice(elements) for _ in range(rng.randint(1, 4))))
    return out


def _canonical_everywhere(x: fp.Set) -> bool:
    return key_order(x) == key_order(fp.canonical(x))


def _members(x: fp.Set) -> set[tuple[str, ...]]:
    return set(fp.paths(x))


@pytest.mark.parametrize("seed", range(40))
def test_operations_agree_with_path_sets_and_keep_upstream_order(seed: int) -> None:
    rng = random.Random(seed)
    a, b = s(*_random_paths(rng)), s(*_random_paths(rng))
    pa, pb = _members(a), _members(b)
    u, d, i, r = fp.union(a, b), fp.difference(a, b), fp.intersection(a, b), fp.recursive_difference(a, b)
    assert _members(u) == pa | pb
    assert _members(d) == pa - pb
    assert _members(i) == pa & pb
    assert _members(r) == {p for p in pa if not any(p[:n] in pb for n in range(1, len(p) + 1))}
    for x in (u, d, r):
        assert _canonical_everywhere(x)


def test_upstream_key_order() -> None:
    """"." first; fields by name; list keys by their values (numbers numerically, before strings)."""
    node = {'k:{"port":1000}': {}, "f:b": {}, ".": {}, 'k:{"port":80}': {}, 'k:{"port":"x"}': {}}
    assert list(fp.canonical({"f:x": node})["f:x"]) == [".", "f:b", 'k:{"port":80}', 'k:{"port":1000}',
                                                        'k:{"port":"x"}']
    assert list(fp.canonical({"v:10": {}, 'v:"a"': {}, "v:9": {}, "v:true": {}})) == ["v:9", "v:10", 'v:"a"',
                                                                                      "v:true"]
    # Shorter key lists first, then by name, then by value (FieldList.Compare).
    keys = ['k:{"a":1,"b":2}', 'k:{"a":1}', 'k:{"a":0,"c":1}']
    assert list(fp.canonical({key: {} for key in keys})) == ['k:{"a":0,"c":1}', 'k:{"a":1}', 'k:{"a":1,"b":2}']
    assert list(fp.canonical({"i:10": {}, "i:9": {}})) == ["i:9", "i:10"]


def test_elements_and_path_strings() -> None:
    assert fp.key_element({"containerPort": 80, "name": "http"}, ("containerPort", "protocol"),
                          {"protocol": "TCP"}) == 'k:{"containerPort":80,"protocol":"TCP"}'
    assert fp.key_element({"b": "x", "a": "y"}, ("b", "a")) == 'k:{"a":"y","b":"x"}'
    assert fp.key_element({"name": "a<b&c>"}, ("name",)) == 'k:{"name":"a\\u003cb\\u0026c\\u003e"}'
    assert fp.key_element({"other": 1}, ("name",)) is None
    assert fp.value_element("example.com/x") == 'v:"example.com/x"'
    assert fp.value_element(3) == "v:3"
    assert fp.path_string(("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"web"}', "f:ports",
                           'k:{"containerPort":80,"protocol":"TCP"}', "f:protocol")) == \
        '.spec.template.spec.containers[name="web"].ports[containerPort=80,protocol="TCP"].protocol'
    assert fp.path_string(("f:metadata", "f:finalizers", 'v:"a\\"b"')) == '.metadata.finalizers[="a\\"b"]'
    assert fp.path_string(("f:metadata", "f:annotations", "f:kubectl.kubernetes.io/last-applied-configuration")) \
        == ".metadata.annotations.kubectl.kubernetes.io/last-applied-configuration"
    assert fp.path_string(("f:x", "i:3", 'k:{"flag":true}')) == ".x[3][flag=true]"


def test_validate_normalizes_and_rejects() -> None:
    assert fp.validate({"f:a": {'k:{"b":1,"a":"x"}': {".": {}, "f:c": {}}}}) == {
        "f:a": {'k:{"a":"x","b":1}': {".": {}, "f:c": {}}}}
    for bad in ({"a": {}}, {"f:a": []}, {".": {"f:x": {}}}, {"k:[1]": {}}, {"k:{": {}}, {"i:x": {}}, []):
        with pytest.raises(ValueError):
            fp.validate(bad)


@pytest.mark.parametrize(("value", "text"), [
    (1.0, "1"), (0.5, "0.5"), (-0.0, "-0"), (1e20, "100000000000000000000"), (1e21, "1e+21"),
    (1.5e-7, "1.5e-07".replace("e-07", "e-7")), (123456.789, "123456.789"), (1e-6, "0.000001"),
])
def test_go_float_format(value: float, text: str) -> None:
    assert fp.go_json(value) == text


def test_go_json() -> None:
    assert fp.go_json({"b": 1, "a": [1.0, "<&>"]}, sort_keys=True) == '{"a":[1,"\\u003c\\u0026\\u003e"],"b":1}'
