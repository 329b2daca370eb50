"""Fixtures for the `cplane` command's tests: a recorded run (tests/recordings.py) for the `log`
and `replay` commands to read."""

from __future__ import annotations

from tests.recordings import recorded as recorded
