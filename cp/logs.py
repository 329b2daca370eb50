"""structlog set-up: console lines for people, JSON lines for machines; fixed key names."""

from __future__ import annotations

import logging
import sys

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


def configure(*, fmt: str = "console", level: str = "info") -> None:
    lvl = getattr(logging, level.upper(), logging.INFO)
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False, exception_formatter=structlog.dev.plain_traceback))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
