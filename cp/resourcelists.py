"""Resource lists (`corev1.ResourceList`: resource name → quantity) and their arithmetic, as quota,
LimitRanger and pod resource sums do it (k8s.io/apiserver `pkg/quota/v1/resources.go`,
component-helpers `resource`). Pure.

Values are `cp.quantity.Quantity`; a sum keeps the format of its left operand, as Go's
`Quantity.Add` keeps the receiver's, so `used` renders as upstream's (`500m`, `1536Mi`, `3`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cp.quantity import Quantity, QuantityError, parse_quantity

ResourceList = dict[str, Quantity]

ZERO = Quantity(0)


def parse(value: Any) -> ResourceList:
    """A ResourceList from its JSON form. Entries that are not quantities are left out: a stored
    object always passed validation, and quota must not fail on one that predates it."""
    out: ResourceList = {}
    if not isinstance(value, Mapping):
        return out
    for name, raw in value.items():
        try:
            out[str(name)] = parse_quantity(raw)
        except QuantityError:
            continue
    return out


def render(rl: Mapping[str, Quantity]) -> dict[str, str]:
    """The JSON form, keys sorted as Go's encoder writes a map."""
    return {name: rl[name].canonical() for name in sorted(rl)}


def plus(a: Quantity, b: Quantity) -> Quantity:
    """a + b in a's format, or b's when a is zero (Go's `Quantity.Add`)."""
    return Quantity(a.nanos + b.nanos, b.format if a.is_zero() else a.format)


def minus(a: Quantity, b: Quantity) -> Quantity:
    """a - b in a's format, or b's when a is zero (Go's `Quantity.Sub`)."""
    return Quantity(a.nanos - b.nanos, b.format if a.is_zero() else a.format)


def add(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """a + b for each name in either."""
    out: ResourceList = dict(a)
    for name, q in b.items():
        have = out.get(name)
        out[name] = q if have is None else plus(have, q)
    return out


def add_into(rl: ResourceList, more: Mapping[str, Quantity]) -> None:
    """rl += more, in place (component-helpers' `addResourceList`)."""
    for name, q in more.items():
        have = rl.get(name)
        rl[name] = q if have is None else plus(have, q)


def max_into(rl: ResourceList, other: Mapping[str, Quantity]) -> None:
    """rl[name] = max(rl[name], other[name]) for each name of other, in place (`maxResourceList`)."""
    for name, q in other.items():
        have = rl.get(name)
        if have is None or q > have:
            rl[name] = q


def subtract_non_negative(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """a - b for each name in either, never below zero (`SubtractWithNonNegativeResult`)."""
    out: ResourceList = {}
    for name, q in a.items():
        other = b.get(name)
        diff = q if other is None else minus(q, other)
        out[name] = diff if diff.sign() > 0 else ZERO
    for name in b:
        out.setdefault(name, ZERO)
    return out


def mask(rl: Mapping[str, Quantity], names: Iterable[str]) -> ResourceList:
    keep = set(names)
    return {name: q for name, q in rl.items() if name in keep}


def less_than_or_equal(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> tuple[bool, list[str]]:
    """Whether a <= b for every name of b that a has; the names where a exceeds b."""
    exceeded = [name for name, limit in b.items() if name in a and a[name] > limit]
    return not exceeded, exceeded


def equals(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> bool:
    return a.keys() == b.keys() and all(a[k] == b[k] for k in a)


def remove_zeros(rl: Mapping[str, Quantity]) -> ResourceList:
    return {name: q for name, q in rl.items() if not q.is_zero()}


def negative(rl: Mapping[str, Quantity]) -> list[str]:
    return [name for name, q in rl.items() if q.sign() < 0]


def pretty(rl: Mapping[str, Quantity]) -> str:
    """`name=value` by name, comma-separated: how quota errors print a list."""
    return ",".join(f"{name}={rl[name].canonical()}" for name in sorted(rl))


def pretty_names(names: Iterable[str]) -> str:
    return ",".join(sorted(names))
