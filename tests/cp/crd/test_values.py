"""cp/crd/values.py: values shown as Go shows them in field errors (`%v`, `json.Marshal`)."""

from __future__ import annotations

from typing import Any

import pytest

from cp.crd.values import bad_value, go_float, go_json


@pytest.mark.parametrize(("value", "shown"), [
    (1.0, "1"), (2.5, "2.5"), (1e6, "1e+06"), (123456.0, "123456"), (1234567.0, "1.234567e+06"),
    (0.0001, "0.0001"), (0.00001, "1e-05"), (-3.25, "-3.25"), (1e21, "1e+21"),
])
def test_go_float(value: float, shown: str) -> None:
    assert go_float(value) == shown


@pytest.mark.parametrize(("value", "shown"), [
    ({"b": [1, 2.0, "<a&b>"], "a": None}, '{"a":null,"b":[1,2,"\\u003ca\\u0026b\\u003e"]}'),
    ([True, 1e21, 1e20, 1e-7, 0.5], "[true,1e+21,100000000000000000000,1e-7,0.5]"),
    ("é", '"é"'),
])
def test_go_json(value: Any, shown: str) -> None:
    assert go_json(value) == shown


def test_bad_values_keep_scalars_and_show_the_rest() -> None:
    assert bad_value("x") == "x" and bad_value(3) == 3 and bad_value(None) is None
    assert str(bad_value(2.0)) == "2" and str(bad_value({"a": 1})) == '{"a":1}'
