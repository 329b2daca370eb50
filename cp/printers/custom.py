"""The Table printer of a custom resource version, as apiextensions-apiserver's `tableconvertor` builds
it from the definition's `additionalPrinterColumns`.

- Columns: `Name` (format `name`), then each printer column with its `type`, `format`, `priority` and
  `description` (by default `Custom resource definition column (in JSONPath format): <jsonPath>`); a
  version without columns gets upstream's default, one `Age` column of type `date` over
  `.metadata.creationTimestamp` (`serveDefaultColumnsIfEmpty`).
- Cells: each column's `jsonPath` is evaluated with kubectl's JSONPath (`cp.jsonpath`, missing keys
  allowed); the first value found is the cell, converted by the column type as `cellForJSONValue`
  does: `integer` (an int, a float truncated), `number` (a float), `boolean`, `string` (the value as the
  JSONPath printer writes it: maps and lists as JSON, null as `<no value>`) and `date` (an RFC 3339
  string rendered as an age, as upstream's server does: the cell holds `5m`, not the timestamp;
  `<invalid>` when it does not parse, `<unknown>` for the zero time). Nothing found, an evaluation
  error or a value of another type is a null cell (kubectl prints `<none>`).

A column whose path does not parse ends the columns there, as upstream's convertor keeps the columns
it parsed before the failing one. Printers are made once per definition generation and version.
Pure; no I/O.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime
from typing import Any

from cp import jsonpath
from cp.printers.common import E, Obj, Printer, Since, col, epoch

__all__ = ["printer"]

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_ZERO = datetime(1, 1, 1, tzinfo=UTC).timestamp()
_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


@functools.cache
def _meta_description(field: str) -> str:
    """ObjectMeta's field description, as upstream's `swaggerMetadataDescriptions`."""
    from cp import schemas

    props = (schemas.definitions().get(_META) or {}).get("properties") or {}
    return str((props.get(field) or {}).get("description") or "")


def _date_cell(value: Any) -> Any:
    if not isinstance(value, str):
        return None
    if value in ("", "null"):
        return "<unknown>"
    if _RFC3339.match(value) is None:
        return "<invalid>"
    t = epoch(value)
    if t is None:
        return "<invalid>"
    if t == _ZERO:
        return "<unknown>"
    return Since(t)


def _cell(type_: str, value: Any, found: bool) -> Any:
    if not found:
        return None
    if type_ == "string":
        return jsonpath.go_text(value)
    if value is None:
        return None
    if type_ == "integer":
        if type(value) is int:
            return value
        if type(value) is float:
            return int(value)
        return None
    if type_ == "number":
        if type(value) in (int, float):
            return float(value)
        return None
    if type_ == "boolean":
        return value if type(value) is bool else None
    if type_ == "date":
        return _date_cell(value)
    return None


def _columns(defined: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[tuple[jsonpath.JSONPath, str]]]:
    if not defined:
        defined = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
                    "description": _meta_description("creationTimestamp")}]
    headers = [col("Name", "string", _meta_description("name"), fmt="name")]
    paths: list[tuple[jsonpath.JSONPath, str]] = []
    for c in defined:
        path_text = str(c.get("jsonPath") or "")
        try:
            path = jsonpath.parse("{" + path_text + "}")
        except jsonpath.JSONPathError:
            break
        description = str(c.get("description") or "") or \
            f"Custom resource definition column (in JSONPath format): {path_text}"
        priority = c.get("priority")
        headers.append(col(str(c.get("name") or ""), str(c.get("type") or ""), description,
                           priority=priority if type(priority) is int else 0, fmt=str(c.get("format") or "")))
        paths.append((path, str(c.get("type") or "")))
    return headers, paths


def _make(*, api_version: str, columns: list[dict[str, Any]]) -> Printer:
    headers, paths = _columns(columns)
    reads_type = any("apiVersion" in p.text for p, _ in paths)

    def row(o: Obj) -> list[Any]:
        if reads_type:  # the object as the version asked for shows it
            o = {**o, "apiVersion": api_version}
        cells: list[Any] = [(o.get("metadata") or E).get("name", "")]
        for path, type_ in paths:
            value, found = path.first(o)
            cells.append(_cell(type_, value, found))
        return cells

    return Printer(headers, row)


_MADE: dict[Any, Printer] = {}


def printer(*, custom: Any, api_version: str) -> Printer:
    """The printer of one served custom resource version (`custom`: its `cp.crd.custom.CustomVersion`),
    made once per definition generation."""
    key = (custom.key(), api_version)
    found = _MADE.get(key)
    if found is None:
        if len(_MADE) > 1024:
            _MADE.clear()
        found = _MADE[key] = _make(api_version=api_version, columns=list(custom.columns))
    return found
