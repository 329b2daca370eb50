"""structlog set-up: console lines for people, JSON lines for machines; fixed key names."""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import MutableMapping
from typing import Any

if "structlog" not in sys.modules and "rich" not in sys.modules:
    # structlog imports `rich` whenever it is installed (the CEL package depends on it), only for
    # pretty tracebacks, which we do not use (plain tracebacks below, one format everywhere).
    # Hiding it while structlog loads keeps ~60 ms off the start-up of every `cplane` command.
    sys.modules["rich"] = None  # type: ignore[assignment]  # "not importable", for this import only
    try:
        import structlog
    finally:
        del sys.modules["rich"]

import structlog

# A process configures logging once, so each module's logger binds on first use and keeps it. A test
# process configures it again and again (every in-process `cplane` command): it sets this to False,
# or a logger first used under one test's level would filter every later test's events.
CACHE_LOGGERS = True


def exception_fields(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """For JSON lines: a logged exception (`exc_info`) as fixed keys a machine can read: `error_type`,
    `error` (its message) and `traceback` (the formatted traceback), instead of `"exc_info": true`."""
    exc_info = event.pop("exc_info", None)
    if not exc_info:
        return event
    if exc_info is True:
        exc_info = sys.exc_info()
    elif isinstance(exc_info, BaseException):
        exc_info = (type(exc_info), exc_info, exc_info.__traceback__)
    if not isinstance(exc_info, tuple) or exc_info[0] is None:
        return event
    event.setdefault("error_type", exc_info[0].__name__)
    event.setdefault("error", str(exc_info[1]))
    event["traceback"] = "".join(traceback.format_exception(*exc_info))
    return event


def configure(*, fmt: str = "console", level: str = "info") -> None:
    lvl = getattr(logging, level.upper(), logging.INFO)
    renderers: list[structlog.types.Processor] = (
        [exception_fields, structlog.processors.JSONRenderer()] if fmt == "json"
        else [structlog.dev.ConsoleRenderer(colors=False, exception_formatter=structlog.dev.plain_traceback)])
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            *renderers,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=CACHE_LOGGERS,
    )
