"""Pure rules for object metadata that kube-apiserver's generic registry applies on writes:
identity, timestamps, generateName, generation. managedFields are `cp.fieldmanager`'s.
"""

from __future__ import annotations

import os
import threading
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
