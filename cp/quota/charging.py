"""Charging a write against the quotas of its namespace (the ResourceQuota admission plugin's
`CheckRequest`, k8s.io/apiserver `pkg/admission/plugin/resourcequota/controller.go`) and measuring
what a namespace uses (`quota.CalculateUsage`, as kube-controller-manager's resource quota
controller recalculates `status.used`). Pure.

A quota constrains an object when it holds a `status.hard` name the object's evaluator counts and
all its scopes match the object. For each such quota the object's usage — on update, only what it
adds over the stored object, when that counted against the same quota — is added to `status.used`;
if that passes `status.hard` for a name the write asks for, the write is refused with upstream's
`exceeded quota: <quota>, requested: ..., used: ..., limited: ...`. Quotas without `status.hard`
yet (before the controller's first pass) constrain nothing; quotas with `status.hard` but no
`status.used` for a constrained name refuse writes until the controller has measured usage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec

from cp import resourcelists as rl
from cp.quota import evaluators as ev
from cp.resourcelists import ResourceList


class QuotaRefused(Exception):
    """The write does not fit a quota; the message follows `<resource> "<name>" is forbidden: `."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class QuotaState(msgspec.Struct, kw_only=True):
    """What charging needs of one ResourceQuota: its status and scopes, and the version read."""

    name: str
    namespace: str = ""
    resource_version: str = ""
    hard: ResourceList = msgspec.field(default_factory=dict)
    used: ResourceList = msgspec.field(default_factory=dict)
    scopes: list[ev.Scope] = msgspec.field(default_factory=list)

    @classmethod
    def of(cls, quota: Mapping[str, Any]) -> QuotaState:
        meta = quota.get("metadata") if isinstance(quota.get("metadata"), Mapping) else {}
        status = quota.get("status") if isinstance(quota.get("status"), Mapping) else {}
        assert isinstance(meta, Mapping) and isinstance(status, Mapping)
        return cls(name=str(meta.get("name") or ""), namespace=str(meta.get("namespace") or ""),
                   resource_version=str(meta.get("resourceVersion") or ""),
                   hard=rl.parse(status.get("hard")), used=rl.parse(status.get("used")),
                   scopes=ev.scopes_of(quota))


def _matches(evaluator: ev.Evaluator, quota: QuotaState, obj: Mapping[str, Any]) -> bool:
    try:
        return evaluator.matches(quota.hard, quota.scopes, obj)
    except ev.ScopeError as exc:
        raise QuotaRefused(f"error matching quota {quota.name}, err: {exc}") from None


def check_request(quotas: Sequence[QuotaState], *, evaluator: ev.Evaluator, operation: str, subresource: str,
                  obj: Mapping[str, Any], old: Mapping[str, Any] | None,
                  ctx: ev.UsageContext) -> list[QuotaState]:
    """The quotas with the write charged to their `used`; raises QuotaRefused when it does not fit.
    Unchanged quotas come back as they were (compare `used` to see what to write)."""
    out = list(quotas)
    if not evaluator.handles(operation=operation, subresource=subresource, obj=obj, old=old):
        return out
    interesting: list[int] = []
    for i, quota in enumerate(quotas):
        try:
            evaluator.matching_scopes(obj, quota.scopes)
        except ev.ScopeError as exc:
            raise QuotaRefused(f"error matching scopes of quota {quota.name}, err: {exc}") from None
        if not _matches(evaluator, quota, obj):
            continue
        restricted = evaluator.matching_resources(quota.hard)
        problem = evaluator.constraints(restricted, obj)
        if problem:
            raise QuotaRefused(f"failed quota: {quota.name}: {problem}")
        if any(name not in quota.used for name in restricted):
            raise QuotaRefused(f"status unknown for quota: {quota.name}, resources: {rl.pretty_names(restricted)}")
        interesting.append(i)

    usage = evaluator.usage(obj, ctx)
    negative = rl.negative(usage)
    if negative:
        raise QuotaRefused(f"quota usage is negative for resource(s): {rl.pretty_names(negative)}")
    if not interesting:
        return out
    deltas: dict[int, ResourceList] = dict.fromkeys(interesting, usage)
    if operation == "UPDATE" and old is not None:
        grown = rl.subtract_non_negative(usage, evaluator.usage(old, ctx))
        for i in interesting:
            if _matches(evaluator, quotas[i], old):
                deltas[i] = grown
    deltas = {i: d for i, d in ((i, rl.remove_zeros(d)) for i, d in deltas.items()) if d}

    for i in interesting:
        delta = deltas.get(i)
        if delta is None:
            continue
        quota = quotas[i]
        requested = rl.mask(delta, quota.hard)
        new_used = rl.add(quota.used, requested)
        if subresource != "status":
            ok, exceeded = rl.less_than_or_equal(rl.mask(new_used, requested), quota.hard)
            if not ok:
                raise QuotaRefused(
                    f"exceeded quota: {quota.name}, requested: {rl.pretty(rl.mask(requested, exceeded))}, "
                    f"used: {rl.pretty(rl.mask(quota.used, exceeded))}, "
                    f"limited: {rl.pretty(rl.mask(quota.hard, exceeded))}")
        out[i] = msgspec.structs.replace(quota, used=new_used)
    return out


# ---------------------------------------------------------------- the controller's measure

def evaluators_for(hard: Iterable[str], *, ctx: ev.UsageContext,
                   countable: Callable[[str, str], bool]) -> list[ev.Evaluator]:
    """The evaluators that can measure some of these quota names: the kinds with their own
    evaluator, the legacy counts, and `count/<resource>.<group>` of any resource `countable` accepts."""
    names = list(hard)
    out: list[ev.Evaluator] = [ev.evaluator_for("", "pods"), ev.evaluator_for("", "services"),
                               ev.evaluator_for("", "persistentvolumeclaims"),
                               ev.evaluator_for("resource.k8s.io", "resourceclaims", ctx=ctx)]
    seen = {(e.group, e.resource) for e in out}
    for group, resource in ev.LEGACY_COUNT_ALIASES:
        out.append(ev.evaluator_for(group, resource))
        seen.add((group, resource))
    for name in names:
        if not name.startswith("count/"):
            continue
        resource, _, group = name[len("count/"):].partition(".")
        if (group, resource) not in seen and not ev.is_ignored(group, resource) and countable(group, resource):
            out.append(ev.evaluator_for(group, resource))
            seen.add((group, resource))
    return [e for e in out if e.matching_resources(names)]


def calculate_usage(*, hard: Mapping[str, Any], scopes: Sequence[ev.Scope], evaluators: Sequence[ev.Evaluator],
                    objects: Callable[[ev.Evaluator], Iterable[Mapping[str, Any]]],
                    ctx: ev.UsageContext) -> ResourceList:
    """What the objects use of each quota name some evaluator can measure (others are left out:
    the caller keeps what it knew). An object is counted when it matches every scope; a scope that
    cannot be evaluated ends that evaluator's count there, as upstream's `CalculateUsageStats`."""
    names = list(hard)
    matched = {n for e in evaluators for n in e.matching_resources(names)}
    total: ResourceList = {}
    for evaluator in evaluators:
        mine = evaluator.matching_resources(matched)
        if not mine:
            continue
        used: ResourceList = dict.fromkeys(mine, rl.ZERO)
        for obj in objects(evaluator):
            try:
                if not all(evaluator.matches_scope(scope, obj) for scope in scopes):
                    continue
            except ev.ScopeError:
                break
            used = rl.add(used, evaluator.usage(obj, ctx))
        total = rl.add(total, used)
    return rl.mask(total, matched)
