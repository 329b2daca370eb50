"""Defaulting an object of any served kind, as the store does before it validates."""

from __future__ import annotations

import copy
from typing import Any

from cp import defaulting
from cp import resources as res


def defaulted(obj: dict[str, Any]) -> dict[str, Any]:
    group, _, version = obj["apiVersion"].rpartition("/")
    kind = res.by_kind(group, obj["kind"])
    assert kind is not None and kind.version == version
    obj = copy.deepcopy(obj)
    defaulting.apply_defaults(obj, group=group, version=version, kind=obj["kind"])
    return obj


def twice_is_once(obj: dict[str, Any]) -> bool:
    """Defaulting is idempotent: a stored (defaulted) object written back is unchanged by it."""
    once = defaulted(obj)
    return defaulted(once) == once
