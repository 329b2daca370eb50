"""The per-kind rules table: which create, update and status-update checks run for a (group, kind).

Rule modules declare their `RULES`; the package (`cp.validation`) collects them at import, or names the
module of an API group with `register_lazily` so that it is imported on the first object of that group
(start-up does not pay for rules of kinds nobody writes); modules outside the package that serve their
own kinds add theirs with `register`. Pure.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from cp.errors import Cause
from cp.features import FeatureGates

CreateFn = Callable[[dict[str, Any], dict[str, Any], list[Cause], bool], None]
UpdateFn = Callable[[dict[str, Any], dict[str, Any], list[Cause]], None]
# (new, old or None on create, errs, the server's feature gates)
GatedFn = Callable[[dict[str, Any], dict[str, Any] | None, list[Cause], FeatureGates], None]


class Rules:
    """One kind's checks: `create(obj, meta, errs, namespaced)`, `update(new, old, errs)` and
    `status_update(new, old, errs)` (the last two optional), the update checks of other
    subresources that write part of the object (`subresource_updates`, e.g. a CSR's `approval`), and
    the checks whose options upstream's strategy derives from feature gates and the stored object
    (`gated(new, old, errs, features)`, run after `create` or `update`; e.g. an HPA's
    `MinReplicasLowerBound`)."""

    __slots__ = ("create", "gated", "status_update", "subresource_updates", "update")

    def __init__(self, create: CreateFn, update: UpdateFn | None = None,
                 status_update: UpdateFn | None = None, *,
                 subresource_updates: dict[str, UpdateFn] | None = None, gated: GatedFn | None = None) -> None:
        self.create = create
        self.update = update
        self.status_update = status_update
        self.subresource_updates = subresource_updates or {}
        self.gated = gated


_RULES: dict[tuple[str, str], Rules] = {}
_LAZY: dict[str, str] = {}  # API group -> module whose RULES cover it, until imported


def register(group: str, kind: str, rules: Rules) -> None:
    _RULES[(group, kind)] = rules


def register_all(table: dict[tuple[str, str], Rules]) -> None:
    _RULES.update(table)


def register_lazily(groups: dict[str, str]) -> None:
    """Rules for these API groups are the named modules' `RULES`, imported on first use."""
    _LAZY.update(groups)


def rules_for(*, group: str, kind: str) -> Rules | None:
    rules = _RULES.get((group, kind))
    if rules is None and group in _LAZY:
        module = importlib.import_module(_LAZY[group])
        _RULES.update(module.RULES)
        for g in [g for g, name in _LAZY.items() if name == module.__name__]:
            del _LAZY[g]
        rules = _RULES.get((group, kind))
    return rules
