"""Request options as kube-apiserver reads them: integer query parameters, resourceVersions and the
field manager. The one place where request text becomes these numbers and names. Pure.

- Integer query parameters (`limit`, `timeoutSeconds`, `gracePeriodSeconds`, ...) convert as
  apimachinery's parameter codec does (`runtime.Convert_Slice_string_To_int64`), with Go's
  `strconv.ParseInt(s, 10, 64)`: ASCII digits after an optional sign, in int64's range. Python's
  `int()` also takes spaces, underscores and other scripts' digits, and has no range: a value it
  accepts may still be one no database column holds. A bad value is a 400 with strconv's own error.
- A resourceVersion parses as the storage versioner's `ParseResourceVersion` (`strconv.ParseUint`,
  uint64): in a query, a bad one is the 400 the storage answers; in an object's metadata, strconv's
  error (`ObjectResourceVersion`; upstream lets it become a 500, here it is the client's 400).
- The field manager as the CreateOptions / UpdateOptions / PatchOptions validation checks it
  (`ValidateFieldManager`: at most 128 bytes, printable characters only; 422), and the default a
  write without one gets from its User-Agent (`prefixFromUserAgent`).
"""

from __future__ import annotations

import functools

from cp import errors
from cp.fieldpath import go_quote
from cp.validation.common import GoValue

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
UINT64_MAX = (1 << 64) - 1
FIELD_MANAGER_MAX_LENGTH = 128  # bytes, as upstream's FieldManagerMaxLength
META_GROUP = "meta.k8s.io"

_DIGITS = "0123456789"


class NumError(ValueError):
    """Go's `*strconv.NumError`: the function, the text it was given and why it failed."""

    SYNTAX = "invalid syntax"
    RANGE = "value out of range"

    def __init__(self, *, func: str, num: str, reason: str) -> None:
        super().__init__(f"strconv.{func}: parsing {go_quote(num)}: {reason}")
        self.reason = reason


def parse_uint64(text: str, *, func: str = "ParseUint") -> int:
    """`strconv.ParseUint(text, 10, 64)`. Raises NumError ("invalid syntax" / "value out of range").

    As Go: the first character that is not an ASCII digit is a syntax error, unless the value
    overflowed before it (then it is a range error)."""
    if not text:
        raise NumError(func=func, num=text, reason=NumError.SYNTAX)
    value = 0
    for ch in text:
        digit = _DIGITS.find(ch)
        if digit < 0:
            raise NumError(func=func, num=text, reason=NumError.SYNTAX)
        value = value * 10 + digit
        if value > UINT64_MAX:
            raise NumError(func=func, num=text, reason=NumError.RANGE)
    return value


def parse_int64(text: str) -> int:
    """`strconv.ParseInt(text, 10, 64)`: an optional `+` or `-`, then as `parse_uint64`, within int64."""
    if not text:
        raise NumError(func="ParseInt", num=text, reason=NumError.SYNTAX)
    negative = text[0] == "-"
    digits = text[1:] if text[0] in "+-" else text
    try:
        magnitude = parse_uint64(digits, func="ParseInt")
    except NumError as exc:
        if exc.reason != NumError.RANGE:
            raise NumError(func="ParseInt", num=text, reason=NumError.SYNTAX) from None
        magnitude = UINT64_MAX + 1  # out of range: the check below says so with ParseInt's name
    value = -magnitude if negative else magnitude
    if not INT64_MIN <= value <= INT64_MAX:
        raise NumError(func="ParseInt", num=text, reason=NumError.RANGE)
    return value


def int64_param(value: str | None) -> int | None:
    """An int64 query parameter (`?limit=`, `?timeoutSeconds=`...): None when absent. Present but empty
    is a syntax error, as upstream (only an absent parameter leaves the field unset)."""
    if value is None:
        return None
    try:
        return parse_int64(value)
    except NumError as exc:
        raise errors.BadRequest(str(exc)) from None


def resource_version_param(value: str | None) -> int | None:
    """`?resourceVersion=`: None when absent or empty (unset), else the uint64 it names ("0": 0).
    A bad one is upstream's storage answer: 400 "invalid resource version: ..."."""
    if value is None or value == "":
        return None
    try:
        return parse_uint64(value)
    except NumError as exc:
        raise errors.BadRequest(f"invalid resource version: resourceVersion: Invalid value: {go_quote(value)}: "
                                f"{exc}") from None


def object_resource_version(value: str) -> int:
    """The `metadata.resourceVersion` a written object carries (a precondition): its uint64, 0 when
    empty (no precondition, as `ObjectResourceVersion`). Bad syntax: 400 with strconv's error."""
    if value == "":
        return 0
    try:
        return parse_uint64(value)
    except NumError as exc:
        raise errors.BadRequest(str(exc)) from None


def field_manager_causes(manager: str) -> list[errors.Cause]:
    """`ValidateFieldManager`: too long (in bytes), and one cause per character that is not printable
    (`unicode.IsPrint`), at its byte offset. Empty is valid (the default manager is derived)."""
    if _valid_field_manager(manager):
        return []
    causes: list[errors.Cause] = []
    encoded = manager.encode("utf-8", "surrogatepass")
    if len(encoded) > FIELD_MANAGER_MAX_LENGTH:
        causes.append(errors.Cause("TooLong", "fieldManager",
                                   f"may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes"))
    offset = 0
    for ch in manager:
        if not ch.isprintable():
            causes.append(errors.Cause("Invalid", "fieldManager",
                                       f"invalid character U+{ord(ch):04X} (at position {offset})",
                                       GoValue(go_quote(manager))))
        offset += len(ch.encode("utf-8", "surrogatepass"))
    return causes


@functools.lru_cache(maxsize=256)  # a handful of managers, checked on every write
def _valid_field_manager(manager: str) -> bool:
    return len(manager.encode("utf-8", "surrogatepass")) <= FIELD_MANAGER_MAX_LENGTH and manager.isprintable()


def check_write_options(*, options_kind: str, field_manager: str, apply: bool = False) -> None:
    """The field manager checks of `ValidateCreateOptions` / `ValidateUpdateOptions` /
    `ValidatePatchOptions` (`options_kind` names which): 422 Invalid with every cause. An apply patch
    needs a manager."""
    causes: list[errors.Cause] = []
    if apply and not field_manager:
        causes.append(errors.Cause("Required", "fieldManager", "is required for apply patch"))
    causes += field_manager_causes(field_manager)
    if causes:
        raise errors.Invalid(kind=options_kind, group=META_GROUP, name="", causes=causes)


@functools.lru_cache(maxsize=256)  # a handful of clients, asked on every write
def manager_from_user_agent(user_agent: str) -> str:
    """`prefixFromUserAgent`: the User-Agent up to its first "/", without characters that are not
    printable, cut (at a character) to at most 128 bytes: always a valid field manager."""
    out: list[str] = []
    size = 0
    for ch in user_agent.split("/", 1)[0]:
        if not ch.isprintable():
            continue
        width = len(ch.encode("utf-8", "surrogatepass"))
        if size + width > FIELD_MANAGER_MAX_LENGTH:
            break
        out.append(ch)
        size += width
    return "".join(out)
