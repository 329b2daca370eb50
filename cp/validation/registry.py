"""The per-kind rules table: which create, update and status-update checks run for a (group, kind).

Rule modules declare their `RULES`; the package (`cp.validation`) collects them at import, and modules
outside the package that serve their own kinds add theirs with `register`. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cp.errors import Cause

CreateFn = Callable[[dict[str, Any], dict[str, Any], list[Cause], bool], None]
UpdateFn = Callable[[dict[str, Any], dict[str, Any], list[Cause]], None]


class Rules:
    """One kind's checks: `create(obj, meta, errs, namespaced)`, `update(new, old, errs)` and
    `status_update(new, old, errs)` (the last two optional)."""

    __slots__ = ("create", "status_update", "update")

    def __init__(self, create: CreateFn, update: UpdateFn | None = None,
                 status_update: UpdateFn | None = None) -> None:
        self.create = create
        self.update = update
        self.status_update = status_update


_RULES: dict[tuple[str, str], Rules] = {}


def register(group: str, kind: str, rules: Rules) -> None:
    _RULES[(group, kind)] = rules


def register_all(table: dict[tuple[str, str], Rules]) -> None:
    _RULES.update(table)


def rules_for(*, group: str, kind: str) -> Rules | None:
    return _RULES.get((group, kind))
