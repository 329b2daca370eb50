"""Kubernetes API errors as exceptions that carry their own `Status` object.

Reasons, codes and message shapes follow `apimachinery/pkg/api/errors/errors.go`
(see `../shared/reference/kubectl-compat.md` §7). Pure; no I/O.
"""

from __future__ import annotations

from typing import Any, ClassVar


class StatusError(Exception):
    """Base: an error that becomes a `Status` response.

    `details` is `metav1.StatusDetails`: None when upstream's constructor leaves the pointer nil (no
    `details` key), a dict (possibly empty: `"details":{}`) when it sets one. Classes whose upstream
    constructors always set it (`NewNotFound`, `NewForbidden`, `NewInvalid`...) default to `{}`."""

    code: int = 500
    reason: str = "InternalError"
    always_details: ClassVar[bool] = False

    def __init__(self, message: str, *, details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details if details is not None or not self.always_details else {}
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        """The `Status` object, its keys in the order Go's encoder writes `metav1.Status` (every
        field but `metadata` is `omitempty`)."""
        out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
        if self.message:
            out["message"] = self.message
        if self.reason:
            out["reason"] = self.reason
        details = self.details
        if details is None and self.reason in ALWAYS_DETAILS_REASONS:
            details = {}  # e.g. a webhook's or an HTTP exception's Status: clients dereference details
        if details is not None:
            out["details"] = go_details(details)
        if self.code:
            out["code"] = self.code
        return out


# The reasons whose upstream constructors always set `details` (NewNotFound, NewForbidden,
# NewAlreadyExists, NewConflict, NewInvalid, NewMethodNotSupported, NewTimeoutError): a Status with one
# of them carries `details` whatever built it — kubectl dereferences it (`kubectl debug` reads
# `details.name` of a 404, issue #23).
ALWAYS_DETAILS_REASONS = frozenset({"NotFound", "Forbidden", "AlreadyExists", "Conflict", "Invalid",
                                    "MethodNotAllowed", "Timeout"})

_DETAIL_KEYS = ("name", "group", "kind", "uid")
_CAUSE_KEYS = ("reason", "message", "field")


def go_details(details: dict[str, Any]) -> dict[str, Any]:
    """`metav1.StatusDetails` as Go writes it: name, group, kind, uid, causes (each reason, message,
    field), retryAfterSeconds; empty values left out (`omitempty`)."""
    out = {k: details[k] for k in _DETAIL_KEYS if details.get(k)}
    causes = details.get("causes")
    if causes:
        out["causes"] = [{k: c[k] for k in _CAUSE_KEYS if c.get(k)} for c in causes]
    if details.get("retryAfterSeconds"):
        out["retryAfterSeconds"] = details["retryAfterSeconds"]
    return out


def _details(name: str, group: str, kind: str, **more: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name}
    if group:
        d["group"] = group
    d["kind"] = kind
    d.update({k: v for k, v in more.items() if v})
    return d


class BadRequest(StatusError):
    code = 400
    reason = "BadRequest"


class Unauthorized(StatusError):
    code = 401
    reason = "Unauthorized"


class Forbidden(StatusError):
    code = 403
    reason = "Forbidden"
    always_details = True

    @classmethod
    def of(cls, *, group: str, plural: str, name: str, reason: str) -> Forbidden:
        """`errors.NewForbidden(resource, name, err)`: `<resource> "<name>" is forbidden: <err>`."""
        gr = f"{plural}.{group}" if group else plural
        return cls(f'{gr} "{name}" is forbidden: {reason}', details=_details(name, group, plural))


class NotFound(StatusError):
    code = 404
    reason = "NotFound"
    always_details = True

    @classmethod
    def of(cls, *, group: str, plural: str, name: str) -> NotFound:
        gr = f"{plural}.{group}" if group else plural
        return cls(f'{gr} "{name}" not found', details=_details(name, group, plural))


class MethodNotAllowed(StatusError):
    code = 405
    reason = "MethodNotAllowed"
    always_details = True


class AlreadyExists(StatusError):
    code = 409
    reason = "AlreadyExists"
    always_details = True

    @classmethod
    def of(cls, *, group: str, plural: str, name: str) -> AlreadyExists:
        gr = f"{plural}.{group}" if group else plural
        return cls(f'{gr} "{name}" already exists', details=_details(name, group, plural))


class Conflict(StatusError):
    code = 409
    reason = "Conflict"
    always_details = True

    @classmethod
    def modified(cls, *, group: str, plural: str, name: str) -> Conflict:
        gr = f"{plural}.{group}" if group else plural
        return cls(
            f'Operation cannot be fulfilled on {gr} "{name}": the object has been modified; '
            "please apply your changes to the latest version and try again",
            details=_details(name, group, plural),
        )


class Gone(StatusError):
    code = 410
    reason = "Gone"


class Expired(StatusError):
    code = 410
    reason = "Expired"


class NotAcceptable(StatusError):
    """406: nothing in the request's Accept header is a media type the endpoint can write."""

    code = 406
    reason = "NotAcceptable"


class RequestEntityTooLarge(StatusError):
    code = 413
    reason = "RequestEntityTooLarge"


class UnsupportedMediaType(StatusError):
    code = 415
    reason = "UnsupportedMediaType"


class Invalid(StatusError):
    """422 with field causes, as `errors.NewInvalid`."""

    code = 422
    reason = "Invalid"
    always_details = True

    def __init__(self, *, kind: str, group: str, name: str, causes: list[Cause]) -> None:
        qualified = f"{kind}.{group}" if group else kind
        parts = [c.text() for c in causes]
        if not parts:
            message = f'{qualified} "{name}" is invalid'
        elif len(parts) == 1:
            message = f'{qualified} "{name}" is invalid: {parts[0]}'
        else:
            message = f'{qualified} "{name}" is invalid: [{", ".join(parts)}]'
        super().__init__(message, details=_details(
            name, group, kind, causes=[c.as_dict() for c in causes]))
        self.causes = causes


class TooManyRequests(StatusError):
    code = 429
    reason = "TooManyRequests"


class InternalError(StatusError):
    code = 500
    reason = "InternalError"


class Timeout(StatusError):
    code = 504
    reason = "Timeout"
    always_details = True


class ServiceUnavailable(StatusError):
    code = 503
    reason = "ServiceUnavailable"


class _Omitted:
    """`field.OmitValueType{}`: a cause whose value is not shown."""

    def __repr__(self) -> str:
        return "OMITTED"


OMITTED = _Omitted()


class GoValue:
    """A bad value a `Cause` prints as it stands: the way Go showed it in upstream's message (`%#v`,
    `%v` or JSON), not quoted again."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GoValue) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


class Cause:
    """One field error, as `field.Error` renders it (`OMITTED` as value: none shown)."""

    __slots__ = ("detail", "field", "type", "value")

    # field.ErrorType -> (cause reason, rendered phrase)
    TYPES: ClassVar[dict[str, tuple[str, str]]] = {
        "Invalid": ("FieldValueInvalid", "Invalid value"),
        "Required": ("FieldValueRequired", "Required value"),
        "Forbidden": ("FieldValueForbidden", "Forbidden"),
        "Duplicate": ("FieldValueDuplicate", "Duplicate value"),
        "NotSupported": ("FieldValueNotSupported", "Unsupported value"),
        "TooLong": ("FieldValueTooLong", "Too long"),
        "TooMany": ("FieldValueTooMany", "Too many"),
        "NotFound": ("FieldValueNotFound", "Not found"),
        "InternalError": ("InternalError", "Internal error"),
        "TypeInvalid": ("FieldValueTypeInvalid", "Invalid value"),
    }

    def __init__(self, type_: str, field: str, detail: str = "", value: Any = None) -> None:
        self.type = type_
        self.field = field
        self.detail = detail
        self.value = value

    def text(self) -> str:
        phrase = self.TYPES.get(self.type, ("", self.type))[1]
        if self.type in ("Required", "Forbidden", "TooLong", "InternalError") or \
                (self.type == "TooMany" and self.value is None) or self.value is OMITTED:
            body = f"{self.field}: {phrase}"
        else:
            body = f"{self.field}: {phrase}: {_render(self.value)}"
        return f"{body}: {self.detail}" if self.detail else body

    def as_dict(self) -> dict[str, Any]:
        reason = self.TYPES.get(self.type, (self.type, ""))[0]
        msg = self.text()
        if msg.startswith(self.field + ": "):
            msg = msg[len(self.field) + 2:]
        return {"reason": reason, "message": msg, "field": self.field}


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
               "\\": "\\\\", '"': '\\"'}


def _go_quote(value: str) -> str:
    """Go's `%q` (strconv.Quote): backslash escapes for quotes, backslashes and control characters."""
    out = []
    for ch in value:
        escaped = _GO_ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ch < " " or ch == "\x7f":
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _render(value: Any) -> str:
    if isinstance(value, str):
        return _go_quote(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return "{...}" if isinstance(value, dict) else "[...]"
    return str(value)
