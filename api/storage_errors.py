"""Storage errors as Kubernetes `Status` errors: the one place their messages are written.

The event log (`storage.log`) reports revisions out of range as `ExpiredError` (compacted: 410
`Expired`) and `FutureRevisionError` (not written yet: 504 `Timeout`, "Too large resource version").
Reads, LISTs and watches answer them with the texts kube-apiserver uses, built here.
"""

from __future__ import annotations

from cp import errors
from storage import log

CONTINUE_EXPIRED = ("The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter.")


def too_old(*, requested: int | None, compacted: int) -> errors.Expired:
    """410 for a read or watch at a compacted revision."""
    return errors.Expired(f"too old resource version: {requested} ({compacted})")


def continue_too_old() -> errors.Expired:
    """410 for a LIST continued at a revision compacted since its first page."""
    return errors.Expired(CONTINUE_EXPIRED)


def too_large(*, requested: int, current: int) -> errors.Timeout:
    """504 for an exact read at a revision the log has not written yet."""
    return errors.Timeout(f"Too large resource version: {requested}, current: {current}",
                          headers={"Retry-After": "1"})


def too_large_after_wait(*, requested: int, current: int) -> errors.Timeout:
    """504 for a read that waited in vain for a newer revision (upstream's watch cache answer)."""
    return errors.Timeout(f"Too large resource version: {requested}, current: {current}",
                          details={"causes": [{"reason": "ResourceVersionTooLarge",
                                               "message": "Too large resource version"}],
                                   "retryAfterSeconds": 1},
                          headers={"Retry-After": "1"})


def unavailable(error: log.UnavailableError) -> errors.ServiceUnavailable:
    """503 with Retry-After while the event log's database cannot be reached (a client retries)."""
    return errors.ServiceUnavailable(str(error), details={"retryAfterSeconds": 1}, headers={"Retry-After": "1"})


def status_of(error: log.ExpiredError | log.FutureRevisionError) -> errors.StatusError:
    """The Status error for a revision out of range, from what the log reported."""
    if isinstance(error, log.ExpiredError):
        return too_old(requested=error.requested, compacted=error.compacted)
    return too_large(requested=error.requested, current=error.current)
