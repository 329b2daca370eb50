"""What a kind's strategy can say (`cp.strategies`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from cp.rbac import UserInfo

Obj = dict[str, Any]


class Strategy(msgspec.Struct, frozen=True, kw_only=True):
    # The status a new object starts with (None: `{}` where a status subresource exists).
    initial_status: Callable[[Obj], Obj] | None = None
    # Status may be set on create (nodes: the kubelet registers a node with its status).
    status_on_create: bool = False
    # More of `PrepareForCreate` (obj, now as unix seconds).
    prepare_for_create: Callable[[Obj, float], None] | None = None
    # More of `PrepareForUpdate` (new, old, now as unix seconds, subresource "" or "status").
    prepare_for_update: Callable[[Obj, Obj, float, str], None] | None = None
    # Records the requesting user in a new object (obj, user), as CertificateSigningRequests do.
    record_requester: Callable[[Obj, UserInfo], None] | None = None
    # `WarningsOnCreate`/`WarningsOnUpdate`: warnings about the object written (obj), sent to the client.
    warnings: Callable[[Obj], list[str]] | None = None
    # Metadata fields a `/status` write may change (upstream resets all of metadata for most kinds).
    status_keeps_metadata: tuple[str, ...] = ()
    # Other subresources that write part of the object (`cp.resources.PARTIAL_WRITES`): (name, fn) where
    # fn(new, old) returns the object to store, the stored one with what the write may change.
    partial_writes: tuple[tuple[str, Callable[[Obj, Obj], Obj]], ...] = ()
