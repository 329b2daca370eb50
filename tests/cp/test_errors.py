"""`cp.errors`: the `Status` object an error becomes, in Go's field order with Go's `omitempty`.

Out of scope: the bytes on the wire (tests/api/test_status_bodies.py).
"""

from __future__ import annotations

from cp import errors


def test_status_keys_and_details_in_go_order() -> None:
    err = errors.Timeout("Too large resource version", details={
        "retryAfterSeconds": 1, "causes": [{"message": "m", "reason": "ResourceVersionTooLarge"}],
        "kind": "pods", "name": "", "uid": "u"})
    status = err.status()
    assert list(status) == ["kind", "apiVersion", "metadata", "status", "message", "reason", "details", "code"]
    assert list(status["details"]) == ["kind", "uid", "causes", "retryAfterSeconds"]  # empty name left out
    assert list(status["details"]["causes"][0]) == ["reason", "message"]


def test_details_present_exactly_when_upstream_sets_them() -> None:
    assert errors.NotFound("x").status()["details"] == {}  # NewNotFound always sets the pointer
    assert errors.Forbidden("x").status()["details"] == {}
    assert errors.Timeout("x", details={"retryAfterSeconds": 0}).status()["details"] == {}
    assert "details" not in errors.BadRequest("x").status()  # NewBadRequest leaves it nil
    assert "details" not in errors.Expired("x").status()
