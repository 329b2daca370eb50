"""Pure rules for object metadata that kube-apiserver's generic registry applies on writes:
identity, timestamps, generateName, generation. managedFields are `cp.fieldmanager`'s.
"""

from __future__ import annotations

import secrets
import uuid
from typing import Any

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
