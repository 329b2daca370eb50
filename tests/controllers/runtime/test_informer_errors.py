"""How the informer classifies a failed watch: by the error's type and its Status details, never by
its message text."""

from __future__ import annotations

from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from cp import errors


def test_too_large_resource_version_is_read_from_the_status_cause() -> None:
    status = {"kind": "Status", "status": "Failure", "code": 504, "reason": "Timeout",
              "message": "Too large resource version: 12, current: 10",
              "details": {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                          "retryAfterSeconds": 1}}
    assert informers.resource_version_too_large(clients.status_error(status))


def test_other_timeouts_and_errors_are_not_a_too_large_resource_version() -> None:
    plain = {"kind": "Status", "status": "Failure", "code": 504, "reason": "Timeout",
             "message": "resource version wording without the cause"}
    assert not informers.resource_version_too_large(clients.status_error(plain))
    assert not informers.resource_version_too_large(errors.Gone("too old resource version: 1 (5)"))
    assert not informers.resource_version_too_large(OSError("connection reset"))
