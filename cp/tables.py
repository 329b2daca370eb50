"""Server-side `meta.k8s.io/v1` Table output, as `kubectl get` asks for it.

The columns and the cells of each row are kubectl's printers (`cp/printers/`); this module builds
the Table around them, with the `includeObject` rules of `../shared/reference/kubectl-compat.md` §4,
and keeps rows of stored objects between requests (`RowCache`). Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import msgspec

from cp.errors import BadRequest
from cp.printers import Obj, RowFn, Since, columns, human_duration, render, row, row_fn
from cp.printers.common import Printer
from cp.resources import ResourceKind

__all__ = ["Printer", "RowCache", "Since", "columns", "human_duration", "printer_for", "row", "table"]

_E: Mapping[str, Any] = {}


# Row conditions upstream attaches to finished pods (`metav1.RowCompleted`).
_POD_DONE = {
    "Succeeded": [{"type": "Completed", "status": "True", "reason": "Succeeded",
                   "message": "The pod has completed successfully."}],
    "Failed": [{"type": "Completed", "status": "True", "reason": "Failed",
                "message": "The pod failed."}],
}


def _object_mode(include_object: str) -> int:
    """0: no object, 1: PartialObjectMetadata, 2: the whole object."""
    if include_object == "" or include_object == "Metadata":
        return 1
    if include_object == "Object":
        return 2
    if include_object == "None":
        return 0
    raise BadRequest(f'unrecognized includeObject value: "{include_object}"')


def _pod_conditions(o: Obj) -> list[dict[str, Any]] | None:
    phase: Any = (o.get("status") or _E).get("phase")
    return _POD_DONE.get(phase)


def _flow_schema_order(row: dict[str, Any]) -> tuple[Any, Any]:
    cells = row["cells"]
    return cells[2], cells[0]  # matching precedence, then name


def printer_for(kind: ResourceKind) -> Printer | None:
    """The printer of a custom resource version (`cp.resources.ResourceKind` with `custom`), made from
    its definition's printer columns (`cp.printers.custom`); None for a built-in kind, whose printer
    `table` finds by group and kind."""
    if kind.custom is None:
        return None
    from cp.printers import custom as custom_printers

    return custom_printers.printer(custom=kind.custom, api_version=kind.api_version)


def _table(rows: list[dict[str, Any]], *, group: str, kind: str, resource_version: str, continue_token: str,
           headers: bool, printer: Printer | None = None) -> dict[str, Any]:
    if kind == "FlowSchema" and group == "flowcontrol.apiserver.k8s.io":
        # Upstream's FlowSchema list printer orders the rows as the schemas are matched.
        rows.sort(key=_flow_schema_order)
    meta: dict[str, Any] = {}
    if resource_version:
        meta["resourceVersion"] = resource_version
    if continue_token:
        meta["continue"] = continue_token
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": ((columns(group=group, kind=kind) if printer is None else
                               [dict(c) for c in printer.columns]) if headers else []),
        "rows": rows,
    }


def table(objs: list[dict[str, Any]], *, group: str, kind: str, now: float,
          include_object: str = "Metadata", resource_version: str = "", continue_token: str = "",
          headers: bool = True, printer: Printer | None = None) -> dict[str, Any]:
    """A `meta.k8s.io/v1` Table for `objs`.

    `include_object`: "Object" embeds each object, "None" omits it, "Metadata" or "" embeds a
    PartialObjectMetadata (sharing the object's metadata dict, not a copy). `headers=False`
    leaves `columnDefinitions` empty (watch events after the first). `printer`: a custom resource's
    (`printer_for`) instead of the built-in one of `group` and `kind`.
    """
    mode = _object_mode(include_object)
    fn = row_fn(group, kind) if printer is None else printer.row
    pods = kind == "Pod" and group == ""
    rows: list[dict[str, Any]] = []
    append = rows.append
    for o in objs:
        r: dict[str, Any] = {"cells": render(fn(o), now)}
        if pods:
            done = _pod_conditions(o)
            if done is not None:
                r["conditions"] = [dict(c) for c in done]
        if mode == 1:
            r["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                           "metadata": o.get("metadata") or {}}
        elif mode == 2:
            r["object"] = o
        append(r)
    return _table(rows, group=group, kind=kind, resource_version=resource_version,
                  continue_token=continue_token, headers=headers, printer=printer)


# ---------------------------------------------------------------------------------------------
# Rows of stored objects, kept between requests


_decode_object = msgspec.json.Decoder().decode
_encode_json = msgspec.json.Encoder().encode
_PARTIAL_HEAD = b'{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":'


class _Kept(NamedTuple):
    revision: int
    size: int
    cells: list[Any]  # may hold `Since` cells
    timed: tuple[int, ...]  # where they are
    conditions: list[dict[str, Any]] | None
    partial: msgspec.Raw  # the PartialObjectMetadata, encoded


class RowCache:
    """Table rows of stored objects, kept per object key and revision, so that a repeated
    `kubectl get` of a large list renders ages and copies bytes instead of decoding every object (the
    Table counterpart of kube-apiserver serving lists from its watch cache). A revision names one
    immutable version of one object, so an entry is valid exactly while the key's revision matches;
    nothing has to be invalidated. Memory: bounded by `max_bytes`, each entry charged its encoded
    metadata plus `ENTRY_BYTES` (its cells and the containers, measured with tracemalloc on pods); the
    longest kept are dropped first. A bound in bytes, not in rows, so that a list one row larger than
    some count does not decode every object again (issue #22)."""

    ENTRY_BYTES = 800

    def __init__(self, *, max_bytes: int = 1 << 30) -> None:
        self.max_bytes = max_bytes
        self._kept: dict[Any, _Kept] = {}
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    @property
    def charged(self) -> int:
        """Bytes charged for the rows kept."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._kept)

    def table(self, items: Iterable[tuple[Any, int, bytes]], *, group: str, kind: str, now: float,
              include_object: str = "Metadata", resource_version: str = "",
              continue_token: str = "", printer: Printer | None = None) -> dict[str, Any]:
        """A Table of stored objects; `items`: (key, revision, stored JSON bytes) per object. The rows'
        objects are `msgspec.Raw` (the stored bytes, or an encoded PartialObjectMetadata): encode the
        result with msgspec. With a custom resource's `printer`, the keys must name the definition's
        generation and the version (its rows change with them)."""
        mode = _object_mode(include_object)
        fn = row_fn(group, kind) if printer is None else printer.row
        pods = kind == "Pod" and group == ""
        kept = self._kept
        rows: list[dict[str, Any]] = []
        append = rows.append
        hits = 0
        charged = 0
        for key, revision, raw in items:
            entry = kept.get(key)
            if entry is None or entry.revision != revision or entry.size != len(raw):
                if entry is not None:
                    charged -= len(entry.partial) + self.ENTRY_BYTES
                entry = kept[key] = self._keep(raw, revision, fn, pods)
                charged += len(entry.partial) + self.ENTRY_BYTES
            else:
                hits += 1
            cells = entry.cells
            if entry.timed:
                cells = cells.copy()
                for i in entry.timed:
                    cells[i] = cells[i].render(now)
            r: dict[str, Any] = {"cells": cells}
            if entry.conditions is not None:
                r["conditions"] = entry.conditions
            if mode == 1:
                r["object"] = entry.partial
            elif mode == 2:
                r["object"] = msgspec.Raw(raw)
            append(r)
        self.hits += hits
        self.misses += len(rows) - hits
        self._bytes += charged
        if self._bytes > self.max_bytes:
            for key in list(kept):
                if self._bytes <= self.max_bytes:
                    break
                dropped = kept.pop(key)
                self._bytes -= len(dropped.partial) + self.ENTRY_BYTES
        return _table(rows, group=group, kind=kind, resource_version=resource_version,
                      continue_token=continue_token, headers=True, printer=printer)

    @staticmethod
    def _keep(raw: bytes, revision: int, fn: RowFn, pods: bool) -> _Kept:
        o = _decode_object(raw)
        cells = fn(o)
        timed = tuple(i for i, cell in enumerate(cells) if type(cell) is Since)
        partial = msgspec.Raw(_PARTIAL_HEAD + _encode_json(o.get("metadata") or {}) + b"}")
        return _Kept(revision, len(raw), cells, timed, _pod_conditions(o) if pods else None, partial)
