"""Per-kind registry strategies: what kube-apiserver's `rest.RESTCreateStrategy` and
`RESTUpdateStrategy` of a kind do to an object as it is created or updated, beyond defaulting
(`cp.defaulting`) and validation (`cp.validation`): the status a new object starts with, fields reset or
carried over on update, what a status write may change of metadata.

The generic rules live here (`prepare_for_create`, `prepare_for_update`); each module covers an API
area and declares `STRATEGIES` {(group, kind): Strategy} for the kinds that differ. The store
(`api.store`) calls the two functions, after defaulting (which fills in the fields Go's encoder always
writes, `cp.protobuf.zero`); what a strategy sets is filled in the same way. Pure.
"""

from __future__ import annotations

from typing import Any

import msgspec

from cp import rbac
from cp import resources as res
from cp.protobuf import zero
from cp.strategies import accounts, cluster, core, dra, service, workloads
from cp.strategies.model import Strategy

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode

STRATEGIES: dict[tuple[str, str], Strategy] = {}
for _module in (core, accounts, workloads, dra, cluster, service):
    STRATEGIES.update(_module.STRATEGIES)

_DEFAULT = Strategy()


def of(kind: res.ResourceKind) -> Strategy:
    return STRATEGIES.get((kind.group, kind.kind), _DEFAULT)


def prepare_for_create(kind: res.ResourceKind, obj: dict[str, Any], *, now: float,
                       user: rbac.UserInfo | None = None) -> None:
    """`PrepareForCreate`: where a status subresource exists, status is not settable on create; it
    starts as the kind's strategy says (empty by default). `user` is the requesting user, for kinds
    that record it."""
    strategy = of(kind)
    changed = "status"  # what the strategy set, filled as the Go struct has it (defaulting filled the rest)
    if strategy.initial_status is not None:
        obj["status"] = strategy.initial_status(obj)
    elif kind.subresource("status") is not None and not strategy.status_on_create:
        obj["status"] = {}
    else:
        changed = ""
    if strategy.prepare_for_create is not None:
        strategy.prepare_for_create(obj, now)
        changed = "all"
    if strategy.record_requester is not None and user is not None:
        strategy.record_requester(obj, user)
        changed = "all"
    if changed:  # a reset status is its zero struct
        zero.fill(obj, api_version=kind.api_version, kind=kind.kind, only="" if changed == "all" else changed)


def partial_write(kind: res.ResourceKind, new: dict[str, Any], old: dict[str, Any], *,
                  subresource: str) -> dict[str, Any]:
    """A write to a subresource that changes part of the object (`res.PARTIAL_WRITES`): the kind's own
    rule for it where it has one (a Pod's `ephemeralcontainers`, `resize`), else as `/status`."""
    for name, fn in of(kind).partial_writes:
        if name == subresource:
            return fn(new, _copy(old))
    return status_write(kind, new, old)


def status_write(kind: res.ResourceKind, new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """A write to `/status`: the old object with the new status (metav1.ResetObjectMetaForStatus),
    keeping of the written metadata only what the kind's status strategy keeps."""
    status = new.get("status")
    written_meta = new.get("metadata") or {}
    out: dict[str, Any] = _copy(old)
    if status is None:
        out.pop("status", None)
    else:
        out["status"] = status
    for field in of(kind).status_keeps_metadata:
        if field in written_meta:
            out["metadata"][field] = written_meta[field]
        else:
            out["metadata"].pop(field, None)
    return out


def prepare_for_update(kind: res.ResourceKind, new: dict[str, Any], old: dict[str, Any], *, now: float,
                       subresource: str) -> None:
    """`PrepareForUpdate` after the generic rules (status carried over on writes to the main resource,
    metadata the server owns): what the kind's strategy adds."""
    strategy = of(kind)
    if strategy.prepare_for_update is not None:
        strategy.prepare_for_update(new, old, now, subresource)
        zero.fill(new, api_version=kind.api_version, kind=kind.kind)


def warnings(kind: res.ResourceKind, obj: dict[str, Any]) -> list[str]:
    """The strategy's warnings about an object being created or updated (`Warning` headers)."""
    fn = of(kind).warnings
    return fn(obj) if fn is not None else []


def _copy(value: Any) -> Any:
    """A deep copy of a decoded JSON value (re-decoded from its encoding: several times faster than
    copying it in Python)."""
    return _decode(_encode(value))


__all__ = ["STRATEGIES", "Strategy", "of", "partial_write", "prepare_for_create", "prepare_for_update",
           "status_write"]
