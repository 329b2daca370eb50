"""The reconcile contract every controller implements.

Reconciliation is level-based: a `Request` names an object, never an event or a diff. The
reconciler reads the current state (from the informer cache, or live when it must), makes the
world match it, and reports one of these outcomes:

- it raises an exception (anything but `TerminalError`): the outcome is an error. The key is
  re-added with the rate limiter's per-item exponential backoff (5 ms doubling up to 1000 s), and
  any `Result` is ignored;
- it raises `TerminalError`: the error is logged (and counted) but never retried; the key's backoff
  history is forgotten. Use it for states that retrying cannot fix (an invalid spec);
- it returns `Result(requeue_after=s)` with `s > 0`: the backoff history is forgotten and the key
  is re-added after `s` seconds on the controller's clock (periodic work, polling an estimate);
- it returns `Result()` (or `None`): success. The backoff history is forgotten and the key is
  processed again only when an informer event enqueues it.

Precedence, as in controller-runtime's `reconcile` package: an error wins over `requeue_after`,
which wins over plain success. While one reconcile of a key is running, the same key is never
handed to another worker; if it is enqueued meanwhile, it is processed once more afterwards.
"""

from __future__ import annotations

from typing import Protocol

import msgspec


class Request(msgspec.Struct, frozen=True, kw_only=True, order=True):
    """Which object to reconcile. `resource` is empty for single-kind controllers; controllers that
    act on many kinds (the garbage collector) put the object's group-resource there
    (`configmaps`, `deployments.apps`)."""

    namespace: str = ""
    name: str
    resource: str = ""

    def __str__(self) -> str:
        key = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.resource}:{key}" if self.resource else key


class Result(msgspec.Struct, frozen=True, kw_only=True):
    """What a successful reconcile asks for next: `requeue_after` seconds (None: nothing)."""

    requeue_after: float | None = None


class TerminalError(Exception):
    """A failure that retrying will not fix: logged, never requeued."""


class Reconciler(Protocol):
    async def reconcile(self, request: Request) -> Result | None: ...
