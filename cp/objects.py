"""Pure rules for object metadata that kube-apiserver's generic registry applies on writes:
identity, timestamps, generateName, generation. managedFields are `cp.fieldmanager`'s.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

_ALNUM = "bcdfghjklmnpqrstvwxz2456789"  # upstream's utilrand alphabet (no vowels, no 0/1/3)
_ALNUM_BYTES = 256 - 256 % len(_ALNUM)  # bytes at or above this would bias the choice: drawn again
MAX_GENERATE_NAME = 58  # 63 - 5 random characters


class _RandomPool:
    """Bytes from the OS's cryptographic source (`os.urandom`), read 4 KiB at a time: a write takes
    several random values (uid, request id, generated name) and a system call costs 20-200 us on
    sandboxed machines, more than the rest of the bookkeeping."""

    def __init__(self, *, chunk: int = 4096) -> None:
        self._chunk = chunk
        self._buffer = b""
        self._offset = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> bytes:
        with self._lock:
            if self._offset + n > len(self._buffer):
                self._buffer = os.urandom(max(self._chunk, n))
                self._offset = 0
            start = self._offset
            self._offset = start + n
            return self._buffer[start:start + n]


_random = _RandomPool()


def generate_name(prefix: str) -> str:
    if len(prefix) > MAX_GENERATE_NAME:
        prefix = prefix[:MAX_GENERATE_NAME]
    chars: list[str] = []
    while len(chars) < 5:
        chars.extend(_ALNUM[b % len(_ALNUM)] for b in _random.take(8) if b < _ALNUM_BYTES)
    return prefix + "".join(chars[:5])


def new_uid() -> str:
    """A random (version 4) UUID, as text."""
    b = bytearray(_random.take(16))
    b[6] = (b[6] & 0x0F) | 0x40  # version 4
    b[8] = (b[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def new_request_id() -> str:
    return _random.take(16).hex()


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


# ---------------------------------------------------------------------- read-only accessors
# For objects that must not be edited (informer caches, decoded responses): a missing or malformed
# section reads as a new empty dict instead of being created in the object, unlike `meta` above.


def meta_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """`metadata`, or an empty mapping."""
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def spec_of(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """`spec`, or an empty mapping (also for None)."""
    s = obj.get("spec") if obj is not None else None
    return s if isinstance(s, Mapping) else {}


def status_of(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """`status`, or an empty mapping (also for None)."""
    s = obj.get("status") if obj is not None else None
    return s if isinstance(s, Mapping) else {}


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    """`metadata.labels` as strings (empty when missing)."""
    labels = meta_of(obj).get("labels")
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}


def uid_of(obj: Mapping[str, Any]) -> str:
    return str(meta_of(obj).get("uid") or "")


def resource_version_of(obj: Mapping[str, Any]) -> int:
    """`metadata.resourceVersion` as a number (0 when missing or not a number)."""
    try:
        return int(meta_of(obj).get("resourceVersion") or 0)
    except ValueError:
        return 0


def controller_uid_of(obj: Mapping[str, Any]) -> str:
    """The uid of the owner reference marked `controller: true`, or ""."""
    for ref in meta_of(obj).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            return str(ref.get("uid") or "")
    return ""


def display_key(obj: Mapping[str, Any]) -> str:
    """`namespace/name` (just `name` for cluster-scoped objects), as klog's KObj prints it."""
    m = meta_of(obj)
    ns, name = m.get("namespace") or "", m.get("name") or ""
    return f"{ns}/{name}" if ns else str(name)
