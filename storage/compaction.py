"""Retention policy: which revision the background compaction may compact up to.

Full history is kept unless a `Retention` is configured. With both limits set, history is kept while
either limit still wants it (the lower target wins).
"""

from __future__ import annotations

import msgspec

# Revisions per compaction transaction: writers interleave between windows.
WINDOW = 10_000


class Retention(msgspec.Struct, frozen=True, kw_only=True):
    keep_revisions: int | None = None  # keep at least this many newest revisions
    keep_seconds: float | None = None  # keep at least this much history by wall time
    interval_seconds: float = 60.0  # how often the background compaction runs

    def __post_init__(self) -> None:
        if self.keep_revisions is not None and self.keep_revisions < 0:
            raise ValueError("keep_revisions must be >= 0")
        if self.keep_seconds is not None and self.keep_seconds < 0:
            raise ValueError("keep_seconds must be >= 0")
        if self.interval_seconds <= 0:
            raise ValueError("interval_seconds must be > 0")


def target(*, retention: Retention, current: int, first_newer_than_cutoff: int | None) -> int:
    """The revision to compact to (0: nothing).

    `first_newer_than_cutoff` is the first revision written at or after now - keep_seconds (None when
    every revision is older, or keep_seconds is unset).
    """
    targets = []
    if retention.keep_revisions is not None:
        targets.append(current - retention.keep_revisions)
    if retention.keep_seconds is not None:
        targets.append(current if first_newer_than_cutoff is None else first_newer_than_cutoff - 1)
    return max(0, min(targets)) if targets else 0


def windows(*, start: int, end: int, size: int = WINDOW) -> list[tuple[int, int]]:
    """(lo, hi] windows covering (start, end]."""
    return [(lo, min(lo + size, end)) for lo in range(start, end, size)]
