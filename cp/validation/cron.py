"""Cron schedules as CronJob validation parses them: the standard five-field format with the `@`
descriptors and an optional `TZ=`/`CRON_TZ=` prefix (robfig/cron v3's `ParseStandard`, whose error
texts kube-apiserver reports). Pure."""

from __future__ import annotations

import re
import zoneinfo

_MONTHS = {name: i + 1 for i, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_DAYS = {name: i for i, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# (min, max, names) of minute, hour, day of month, month, day of week
_FIELDS: tuple[tuple[int, int, dict[str, int] | None], ...] = (
    (0, 59, None), (0, 23, None), (1, 31, None), (1, 12, _MONTHS), (0, 6, _DAYS))
_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_DURATION = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$|^[-+]?0$")


class CronError(ValueError):
    pass


def load_location(name: str) -> None:
    """Go's `time.LoadLocation`: "" and "UTC" are UTC, "Local" the local zone, else the tz database."""
    if name in ("", "UTC", "Local"):
        return
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise CronError(f"unknown time zone {name}") from None


def parse_standard(spec: str) -> None:
    """Raise `CronError` with robfig/cron's message when `spec` is not a valid standard schedule."""
    if not spec:
        raise CronError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        eq = spec.index("=")
        space = spec.find(" ")
        location = spec[eq + 1:space] if space >= 0 else spec[eq + 1:]
        try:
            load_location(location)
        except CronError as exc:
            raise CronError(f"provided bad location {location}: {exc}") from None
        spec = spec[space:].strip() if space >= 0 else ""
    if spec.startswith("@"):
        _descriptor(spec)
        return
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for field, (low, high, names) in zip(fields, _FIELDS, strict=True):
        for expr in field.split(","):
            _range(expr, low, high, names)


def _descriptor(spec: str) -> None:
    if spec in _DESCRIPTORS:
        return
    if spec.startswith("@every "):
        duration = spec[len("@every "):]
        if not _DURATION.match(duration):
            raise CronError(f'failed to parse duration {spec}: time: invalid duration "{duration}"')
        return
    raise CronError(f"unrecognized descriptor: {spec}")


def _int(expr: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", expr):
        raise CronError(f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": invalid syntax')
    value = int(expr)
    if value < 0:
        raise CronError(f"negative number ({value}) not allowed: {expr}")
    return value


def _int_or_name(expr: str, names: dict[str, int] | None) -> int:
    if names is not None and expr.lower() in names:
        return names[expr.lower()]
    return _int(expr)


def _range(expr: str, low: int, high: int, names: dict[str, int] | None) -> None:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _int_or_name(low_and_high[0], names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], names)
        else:
            raise CronError(f"too many hyphens: {expr}")
    step = 1
    if len(range_and_step) == 2:
        step = _int(range_and_step[1])
        if len(low_and_high) == 1:  # "N/step" runs from N to the maximum
            end = high
    elif len(range_and_step) > 2:
        raise CronError(f"too many slashes: {expr}")
    if start < low:
        raise CronError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise CronError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
