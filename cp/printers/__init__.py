"""kubectl's printers, as the server runs them for `meta.k8s.io/v1` Table output: the columns and the
cells of one object's row, per kind.

Columns and cell rules follow upstream's printers (`pkg/printers/internalversion/printers.go`, and
the aggregator's for APIServices), one module per API area; a module is imported on the first table
of one of its groups, so start-up does not pay for them. Kinds without a printer upstream get
kube-apiserver's default table (Name, Created At); the sandbox's own kinds without one print like
custom resources (Name, Age). Ages are rendered like apimachinery's `duration.HumanDuration`.

Row builders run once per object on lists of up to 10,000 objects, so they read the raw dicts
directly. A row depends on its object only: ages are `Since` cells, rendered with the table's `now`
(unix seconds, passed in), so `cp.tables.RowCache` can keep rows between requests. Pure; no I/O.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from cp.printers.common import (
    AGE_COL,
    CREATED_AT_COL,
    NAME_COL,
    Obj,
    Printer,
    RowFn,
    Since,
    human_duration,
    name_age,
    name_created_at,
)

__all__ = ["Obj", "RowFn", "Since", "columns", "human_duration", "printer", "render", "row", "row_fn"]

# The module that prints each API group's kinds.
_MODULES = {
    "": "core",
    "apps": "apps",
    "batch": "batch",
    "autoscaling": "autoscaling",
    "events.k8s.io": "events",
    "networking.k8s.io": "networking",
    "discovery.k8s.io": "networking",
    "storage.k8s.io": "storage",
    "rbac.authorization.k8s.io": "rbac",
    "certificates.k8s.io": "certificates",
    "admissionregistration.k8s.io": "admission",
    "flowcontrol.apiserver.k8s.io": "apiserver",
    "apiregistration.k8s.io": "apiserver",
    "storagemigration.k8s.io": "apiserver",
    "scheduling.k8s.io": "scheduling",
    "node.k8s.io": "scheduling",
    "policy": "scheduling",
    "coordination.k8s.io": "coordination",
    "resource.k8s.io": "dra",
    "sim.cplane.dev": "sim",
}
_CUSTOM_GROUPS = frozenset({"sim.cplane.dev"})

_DEFAULT = Printer([NAME_COL, CREATED_AT_COL], name_created_at)
_CUSTOM_DEFAULT = Printer([NAME_COL, AGE_COL], name_age)

_loaded: dict[str, Mapping[str, Printer]] = {}


def _module_printers(module: str) -> Mapping[str, Printer]:
    found = _loaded.get(module)
    if found is None:
        printers: Mapping[str, Printer] = importlib.import_module(f"cp.printers.{module}").PRINTERS
        found = _loaded[module] = printers
    return found


def printer(*, group: str, kind: str) -> Printer:
    """The columns and row builder of a kind (the default table for kinds without a printer)."""
    module = _MODULES.get(group)
    if module is not None:
        found = _module_printers(module).get(kind)
        if found is not None:
            return found
    return _CUSTOM_DEFAULT if group in _CUSTOM_GROUPS else _DEFAULT


def columns(*, group: str, kind: str) -> list[dict[str, Any]]:
    """`columnDefinitions` for a kind (fresh dicts; callers may mutate them)."""
    return [dict(c) for c in printer(group=group, kind=kind).columns]


def row_fn(group: str, kind: str) -> RowFn:
    return printer(group=group, kind=kind).row


def render(cells: list[Any], now: float) -> list[Any]:
    """`cells` with every `Since` cell rendered at `now` (in place)."""
    for i, cell in enumerate(cells):
        if type(cell) is Since:
            cells[i] = cell.render(now)
    return cells


def row(obj: Obj, *, group: str, kind: str, now: float) -> list[Any]:
    """The cells of one object's row, in `columns()` order."""
    return render(row_fn(group, kind)(obj), now)
