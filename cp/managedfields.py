"""managedFields entries, as the apiserver's field manager stores them
(`k8s.io/apimachinery/pkg/util/managedfields/internal`): one `Entry` per manager, decoding and validating
stored entries, encoding them in upstream's order, and choosing the request's or the live entries.
Used by `cp.fieldmanager`. Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from cp import fieldpath as fp
from cp.fieldpath import Set

_MISSING: Any = object()

# ---------------------------------------------------------------------------------------------------------
# managedFields entries


class Entry:
    __slots__ = ("api_version", "fields", "manager", "operation", "raw", "subresource", "time")

    def __init__(self, *, manager: str, operation: str, api_version: str, subresource: str, fields: Set,
                 time: str | None, raw: dict[str, Any] | None = None) -> None:
        self.manager = manager
        self.operation = operation
        self.api_version = api_version
        self.subresource = subresource
        self.fields = fields
        self.time = time
        self.raw = raw  # the stored entry, reused while nothing changes

    def with_fields(self, fields: Set, *, time: str | None = _MISSING) -> Entry:
        return Entry(manager=self.manager, operation=self.operation, api_version=self.api_version,
                     subresource=self.subresource, fields=fields,
                     time=self.time if time is _MISSING else time)

    @property
    def applied(self) -> bool:
        return self.operation == "Apply"

    def encode(self) -> dict[str, Any]:
        if self.raw is not None:
            return self.raw
        out: dict[str, Any] = {"manager": self.manager, "operation": self.operation,
                               "apiVersion": self.api_version}
        if self.time is not None:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = self.fields  # kept in upstream's key order by every set operation
        if self.subresource:
            out["subresource"] = self.subresource
        self.raw = out
        return out


Key = tuple[str, str, str, str]
Managed = dict[Key, Entry]


def manager_key(manager: str, operation: str, api_version: str, subresource: str) -> Key:
    """`BuildManagerIdentifier`: appliers are one manager whatever the version they apply."""
    return (manager or "unknown", operation, "" if operation == "Apply" else api_version, subresource)


def decode(entries: Any, *, trusted: bool) -> Managed:
    """`DecodeManagedFields`. ValueError for an entry that is not a valid managedFields entry."""
    out: Managed = {}
    if not entries:
        return out
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise ValueError(f"managed fields entry {i} is not an object")
        op = e.get("operation")
        if op not in ("Apply", "Update"):
            raise ValueError("operation must be `Apply` or `Update`")
        api_version = e.get("apiVersion")
        if not api_version or not isinstance(api_version, str):
            raise ValueError("apiVersion must not be empty")
        ftype = e.get("fieldsType")
        if not ftype:
            raise ValueError(f"missing fieldsType in managed fields entry {i}")
        if ftype != "FieldsV1":
            raise ValueError(f"invalid fieldsType {ftype!r} in managed fields entry {i}")
        fields = e.get("fieldsV1") or {}
        raw: dict[str, Any] | None = e
        if not trusted:
            fields = fp.canonical(fp.validate(fields))
            raw = None
        manager = e.get("manager") or ""
        if not isinstance(manager, str):
            raise ValueError("manager must be a string")
        sub = e.get("subresource") or ""
        time = e.get("time")
        entry = Entry(manager=manager, operation=op, api_version=api_version, subresource=sub,
                      fields=fields, time=time if isinstance(time, str) else None, raw=raw)
        out[manager_key(manager, op, api_version, sub)] = entry
    return out


def encode(managed: Managed) -> list[dict[str, Any]] | None:
    """Entries sorted as upstream: Apply before Update, then by time, manager, apiVersion, subresource."""
    if not managed:
        return None
    entries = sorted(managed.values(), key=lambda e: (e.operation, e.time or "", e.manager, e.api_version,
                                                      e.subresource))
    return [e.encode() for e in entries]


def known_versions(managed: Managed, api_versions: Container[str]) -> Managed:
    """Managers recorded at a version the resource cannot be converted to are dropped (upstream: the
    version converter's missing-version error removes them on the next write)."""
    if all(e.api_version in api_versions for e in managed.values()):
        return managed
    return {k: e for k, e in managed.items() if e.api_version in api_versions}


def decode_live_or_new(live_entries: Any, new_entries: Any, *, subresource: str) -> tuple[Managed, bool]:
    """`decodeLiveOrNew`: the request's entries when it sets them (an empty list resets them), else the
    live ones; subresources always keep the live ones. Second: whether the live entries were used."""
    if subresource:
        return _decode_or_empty(live_entries, trusted=True), True
    if isinstance(new_entries, list) and (not new_entries or (len(new_entries) == 1 and new_entries[0] == {})):
        return {}, False  # an explicit reset
    if new_entries and new_entries != live_entries:
        try:
            managed = decode(new_entries, trusted=False)
        except (ValueError, TypeError):
            managed = {}
        if managed:
            return managed, False
    return _decode_or_empty(live_entries, trusted=True), True


def _decode_or_empty(entries: Any, *, trusted: bool) -> Managed:
    try:
        return decode(entries, trusted=trusted)
    except (ValueError, TypeError):
        return {}
