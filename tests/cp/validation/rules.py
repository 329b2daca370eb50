"""Running an object through what the store does before it validates (defaulting, the kind's strategy)
and then the kind's rules, for the rule tables of this package. Causes are rendered as kube-apiserver
renders them (`field: Type: value: detail`)."""

from __future__ import annotations

import copy
from typing import Any

from cp import defaulting, errors, strategies, validation
from cp import resources as res


def kind_of(obj: dict[str, Any]) -> res.ResourceKind:
    group = obj["apiVersion"].rpartition("/")[0]
    kind = res.by_kind(group, obj["kind"])
    assert kind is not None, obj["kind"]
    return kind


def prepared(obj: dict[str, Any]) -> dict[str, Any]:
    kind = kind_of(obj)
    obj = copy.deepcopy(obj)
    if kind.namespaced:
        obj.setdefault("metadata", {}).setdefault("namespace", "default")
    defaulting.apply_defaults(obj, group=kind.group, version=kind.version, kind=kind.kind)
    return obj


def create_errors(obj: dict[str, Any]) -> list[str]:
    kind = kind_of(obj)
    obj = prepared(obj)
    strategies.prepare_for_create(kind, obj, now=0.0)
    try:
        validation.validate_create(obj, group=kind.group, version=kind.version, kind=kind.kind,
                                   namespaced=kind.namespaced)
    except errors.Invalid as exc:
        return [c.text() for c in exc.causes]
    return []


def update_errors(new: dict[str, Any], old: dict[str, Any], subresource: str = "") -> list[str]:
    """`old` as stored (defaulted, prepared for create), `new` as written over it."""
    kind = kind_of(new)
    old = prepared(old)
    strategies.prepare_for_create(kind, old, now=0.0)
    new = prepared(new)
    for o in (old, new):
        o["metadata"]["resourceVersion"] = "5"
    if subresource == "status":
        new = strategies.status_write(kind, new, old)
    elif kind.subresource("status") is not None:
        new["status"] = copy.deepcopy(old.get("status"))
    strategies.prepare_for_update(kind, new, old, now=0.0, subresource=subresource)
    try:
        validation.validate_update(new, old, group=kind.group, version=kind.version, kind=kind.kind,
                                   subresource=subresource)
    except errors.Invalid as exc:
        return [c.text() for c in exc.causes]
    return []


def changed(base: dict[str, Any], fn: Any) -> dict[str, Any]:
    obj = copy.deepcopy(base)
    fn(obj)
    return obj
