"""Pure rules for object metadata that kube-apiserver's generic registry applies on writes:
identity, timestamps, generateName, generation, and the field set of a write (managedFields).
"""

from __future__ import annotations

import secrets
import uuid
from typing import Any

from cp import clock

_ALNUM = "bcdfghjklmnpqrstvwxz2456789"  # upstream's utilrand alphabet (no vowels, no 0/1/3)
MAX_GENERATE_NAME = 58  # 63 - 5 random characters


def generate_name(prefix: str) -> str:
    if len(prefix) > MAX_GENERATE_NAME:
        prefix = prefix[:MAX_GENERATE_NAME]
    return prefix + "".join(secrets.choice(_ALNUM) for _ in range(5))


def new_uid() -> str:
    return str(uuid.uuid4())


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    m = obj.get("metadata")
    if not isinstance(m, dict):
        m = {}
        obj["metadata"] = m
    return m


def spec_changed(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Whether a write changes anything but metadata and status (bumps metadata.generation)."""
    skip = ("metadata", "status", "kind", "apiVersion")
    keys = (set(new) | set(old)) - set(skip)
    return any(new.get(k) != old.get(k) for k in keys)


def fields_v1(obj: Any) -> dict[str, Any]:
    """The set of fields present in `obj`, in the managedFields `FieldsV1` shape.

    Associative lists are keyed by their usual identity (`name`, `type`, `uid`, `containerPort`...)
    as `k:{...}`; other list items by value `v:`. Full server-side-apply ownership lives elsewhere;
    this records what a write set."""
    if not isinstance(obj, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if isinstance(value, dict):
            out[f"f:{key}"] = fields_v1(value) if value else {}
            if value:
                out[f"f:{key}"]["."] = {}
        elif isinstance(value, list):
            items: dict[str, Any] = {}
            for item in value:
                if isinstance(item, dict):
                    ident = _list_key(item)
                    if ident is None:
                        continue
                    sub = fields_v1(item)
                    sub["."] = {}
                    items[ident] = sub
                else:
                    items[f"v:{_json_scalar(item)}"] = {}
            out[f"f:{key}"] = items
        else:
            out[f"f:{key}"] = {}
    return out


_KEYS = ("name", "type", "uid", "containerPort", "mountPath", "devicePath", "ip", "topologyKey", "key")


def _list_key(item: dict[str, Any]) -> str | None:
    for k in _KEYS:
        if k in item and isinstance(item[k], (str, int)):
            return "k:{" + f'"{k}":{_json_scalar(item[k])}' + "}"
    return None


def _json_scalar(v: Any) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    return str(v)


def managed_entry(*, manager: str, operation: str, api_version: str, now: float, fields: dict[str, Any],
                  subresource: str = "") -> dict[str, Any]:
    entry: dict[str, Any] = {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": clock.rfc3339(now),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def record_manager(obj: dict[str, Any], entry: dict[str, Any]) -> None:
    """Replace (or add) the managedFields entry of the same manager/operation/subresource."""
    m = meta(obj)
    entries = [e for e in m.get("managedFields") or []
               if not (e.get("manager") == entry["manager"] and e.get("operation") == entry["operation"]
                       and e.get("subresource", "") == entry.get("subresource", ""))]
    entries.append(entry)
    m["managedFields"] = entries
