"""The table printer of a custom resource version (`cp.printers.custom`): upstream's columns and cell
conversions per column type, ages as `Since` cells, and a column that does not parse ending the
columns."""

from __future__ import annotations

import itertools
from typing import Any

from cp.clock import rfc3339
from cp.crd.custom import CustomVersion
from cp.printers import custom, render

_generations = itertools.count(1)


def _custom(columns: list[dict[str, Any]]) -> CustomVersion:
    """A new definition generation each time (printers are kept per generation)."""
    return CustomVersion(crd_name="widgets.example.com", crd_uid="u1", generation=next(_generations), version="v1",
                         storage_version="v1", openapi=None, status=False, scale=None, columns=columns,
                         selectable=[], conversion={})


def _row(columns: list[dict[str, Any]], obj: dict[str, Any], now: float = 0.0) -> list[Any]:
    p = custom.printer(custom=_custom(columns), api_version="example.com/v1")
    return render(p.row(obj), now) if now else p.row(obj)


def test_cells_follow_the_column_types() -> None:
    obj = {"metadata": {"name": "w"}, "spec": {"i": 2.9, "n": 3, "b": "yes", "s": 5, "l": [1, "a"], "z": None}}
    cols = [{"name": k, "type": t, "jsonPath": f".spec.{f}"} for k, t, f in (
        ("I", "integer", "i"), ("N", "number", "n"), ("B", "boolean", "b"), ("S", "string", "s"),
        ("L", "string", "l"), ("Z", "string", "z"), ("M", "integer", "missing"), ("Zi", "integer", "z"))]
    assert _row(cols, obj) == ["w", 2, 3.0, None, "5", '[1,"a"]', "<no value>", None, None]


def test_dates_are_ages() -> None:
    now = 1_700_000_000.0
    cols = [{"name": "At", "type": "date", "jsonPath": ".spec.at"}]
    assert _row(cols, {"metadata": {"name": "w"}, "spec": {"at": rfc3339(now - 300)}}, now) == ["w", "5m"]
    assert _row(cols, {"metadata": {"name": "w"}, "spec": {"at": "yesterday"}}, now) == ["w", "<invalid>"]
    assert _row(cols, {"metadata": {"name": "w"}, "spec": {"at": "0001-01-01T00:00:00Z"}}, now) == ["w", "<unknown>"]
    assert _row(cols, {"metadata": {"name": "w"}, "spec": {"at": 5}}, now) == ["w", None]


def test_default_columns_and_descriptions() -> None:
    p = custom.printer(custom=_custom([]), api_version="example.com/v1")
    assert [(c["name"], c["type"], c["format"]) for c in p.columns] == [("Name", "string", "name"), ("Age", "date", "")]
    cols = [{"name": "A", "type": "string", "jsonPath": ".spec.a"}, {"name": "Bad", "type": "string", "jsonPath": ".x[0"},
            {"name": "C", "type": "string", "jsonPath": ".spec.c"}]
    p = custom.printer(custom=_custom(cols), api_version="example.com/v1")
    assert [c["name"] for c in p.columns] == ["Name", "A"]  # the columns end at the one that does not parse
    assert p.columns[1]["description"] == "Custom resource definition column (in JSONPath format): .spec.a"


def test_a_column_may_read_the_served_api_version() -> None:
    cols = [{"name": "V", "type": "string", "jsonPath": ".apiVersion"}]
    p = custom.printer(custom=_custom(cols), api_version="example.com/v2")
    assert p.row({"apiVersion": "example.com/v1", "metadata": {"name": "w"}}) == ["w", "example.com/v2"]
