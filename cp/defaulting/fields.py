"""Small accessors the defaulting modules share: read a sub-object that may be absent or malformed, or
create it where a default has to be written. Pure."""

from __future__ import annotations

from typing import Any


def dicts(value: Any) -> list[dict[str, Any]]:
    """The dict items of a list (nothing for anything else)."""
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []


def sub(parent: dict[str, Any], key: str) -> dict[str, Any] | None:
    """`parent[key]` when it is an object, else None (nothing is created)."""
    value = parent.get(key)
    return value if isinstance(value, dict) else None


def child(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """`parent[key]`, created empty when absent or not an object: Go serializes a non-pointer struct
    field even when it is empty, so defaulting writes `{}` where kube-apiserver's answer has one."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


def setdefault(obj: dict[str, Any], key: str, value: Any) -> None:
    """Set `obj[key]` when it is absent or null (a pointer field Go's defaulting fills when nil)."""
    if obj.get(key) is None:
        obj[key] = value
