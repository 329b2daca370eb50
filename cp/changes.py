"""Field-level changes between two versions of an object, as `cplane log history` prints them and the
event log's history endpoint (`api.eventlog`) returns them.

Paths name fields as a reader would (`spec.replicas`, `spec.containers[name=web].image`,
`metadata.labels["app.kubernetes.io/name"]`): lists of objects with a key field (`name`, `type`,
`key`...) are compared item by item by that key. A Secret's values are masked as `kubectl diff`
masks them. Pure: decoded objects in, `Change`s out.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

_json = msgspec.json.Encoder(order="deterministic")

# Fields every change touches; left out of diffs unless asked for (`--all-fields`).
NOISY_FIELDS: tuple[tuple[str, ...], ...] = (("metadata", "resourceVersion"), ("metadata", "managedFields"))

class Change(msgspec.Struct, frozen=True, kw_only=True):
    """One difference: `op` "+" (added), "-" (removed) or "~" (changed) at `path` (`spec.replicas`,
    `spec.containers[name=web].image`, `metadata.labels["app.kubernetes.io/name"]`)."""

    op: str
    path: str
    old: Any = None
    new: Any = None


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_LIST_KEYS = ("name", "type", "key", "devicePath", "containerPort", "ip")


def _join(path: str, key: str) -> str:
    if _PLAIN_KEY.match(key):
        return f"{path}.{key}" if path else key
    return f'{path}["{key}"]'


def _list_key(old: list[Any], new: list[Any]) -> str | None:
    """A field that identifies the items of both lists (`name`, then `type`...), if there is one."""
    items = old + new
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    for field in _LIST_KEYS:
        if all(field in i for i in items) and len({_json.encode(i[field]) for i in old}) == len(old) \
                and len({_json.encode(i[field]) for i in new}) == len(new):
            return field
    return None


def _item_label(path: str, key: str, item: dict[str, Any]) -> str:
    v = item[key]
    return f"{path}[{key}={v if isinstance(v, str) else _json.encode(v).decode()}]"


def _leaves(op: str, path: str, value: Any, out: list[Change], skip: set[str]) -> None:
    """Every leaf of an added ("+") or removed ("-") subtree, one Change each."""
    if path in skip:
        return
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _leaves(op, _join(path, str(k)), v, out, skip)
        return
    if isinstance(value, list) and value and all(isinstance(i, dict) for i in value):
        key = _list_key(value, [])
        for i, item in enumerate(value):
            _leaves(op, _item_label(path, key, item) if key else f"{path}[{i}]", item, out, skip)
        return
    if op == "+":
        out.append(Change(op="+", path=path, new=value))
    else:
        out.append(Change(op="-", path=path, old=value))


def _walk(old: Any, new: Any, path: str, out: list[Change], skip: set[str]) -> None:
    if path in skip:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for k in old:
            p = _join(path, str(k))
            if p in skip:
                continue
            if k in new:
                _walk(old[k], new[k], p, out, skip)
            else:
                _leaves("-", p, old[k], out, skip)
        for k in new:
            p = _join(path, str(k))
            if k not in old and p not in skip:
                _leaves("+", p, new[k], out, skip)
        return
    if isinstance(old, list) and isinstance(new, list) and old != new:
        key = _list_key(old, new)
        if key is not None:
            before = {_json.encode(i[key]): i for i in old}
            after = {_json.encode(i[key]): i for i in new}
            for k, item in before.items():
                if k in after:
                    _walk(item, after[k], _item_label(path, key, item), out, skip)
                else:
                    _leaves("-", _item_label(path, key, item), item, out, skip)
            for k, item in after.items():
                if k not in before:
                    _leaves("+", _item_label(path, key, item), item, out, skip)
            return
        if all(isinstance(i, dict) for i in old + new) and len(old) == len(new):
            for i, (a, b) in enumerate(zip(old, new, strict=True)):
                _walk(a, b, f"{path}[{i}]", out, skip)
            return
    if old != new or type(old) is not type(new):
        out.append(Change(op="~", path=path, old=old, new=new))


def diff(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, *, all_fields: bool = False) -> list[Change]:
    """Field-level changes from `old` to `new` (either may be None: everything added / removed).
    Unless `all_fields`, metadata.resourceVersion and metadata.managedFields are left out. A Secret's
    values are masked as `kubectl diff` masks them."""
    skip = set() if all_fields else {".".join(p) for p in NOISY_FIELDS}
    out: list[Change] = []
    before, after = dict(old or {}), dict(new or {})
    if _is_secret(before) or _is_secret(after):
        before, after = _mask_secrets(before, after)
    _walk(before, after, "", out, skip)
    return out


_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _is_secret(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "Secret" and obj.get("apiVersion") == "v1"


def _mask_secrets(old: dict[str, Any], new: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Copies whose `data` and `stringData` values (and kubectl's last-applied annotation, which
    repeats them) are `***`, or `*** (before)` / `*** (after)` where the value changed."""
    old, new = copy.deepcopy(old), copy.deepcopy(new)
    for field in ("data", "stringData"):
        a, b = old.get(field), new.get(field)
        a = a if isinstance(a, dict) else {}
        b = b if isinstance(b, dict) else {}
        for key in set(a) | set(b):
            changed = key in a and key in b and a[key] != b[key]
            if key in a:
                a[key] = "*** (before)" if changed else "***"
            if key in b:
                b[key] = "*** (after)" if changed else "***"
    for obj, mark in ((old, "*** (before)"), (new, "*** (after)")):
        annotations = (obj.get("metadata") or {}).get("annotations")
        if isinstance(annotations, dict) and _LAST_APPLIED in annotations:
            other = (new if obj is old else old).get("metadata") or {}
            same = (other.get("annotations") or {}).get(_LAST_APPLIED) == annotations[_LAST_APPLIED]
            annotations[_LAST_APPLIED] = "***" if same else mark
    return old, new


def changes_json(changes: Sequence[Change]) -> list[dict[str, Any]]:
    return [msgspec.structs.asdict(c) for c in changes]


def versions(*, types: Sequence[str], objects: Sequence[Mapping[str, Any] | None],
             all_fields: bool = False) -> list[list[Change]]:
    """The changes of each version of one object's history (`types[i]`: ADDED, MODIFIED or DELETED;
    `objects[i]`: that version): a creation lists every field as added (also when the object is
    created again after a deletion), a change or deletion what differs from the version before."""
    out: list[list[Change]] = []
    previous: Mapping[str, Any] | None = None
    for kind, obj in zip(types, objects, strict=True):
        out.append(diff(None if kind == "ADDED" else previous, obj, all_fields=all_fields))
        previous = None if kind == "DELETED" else obj
    return out
