"""The tests' bounded wait: `cp.testing.eventually`, the sandbox's, re-exported under the name the
test support modules import (`from tests import waiting`; `waiting.eventually(check, within=...)`)."""

from __future__ import annotations

from cp.testing import NotMet, eventually

__all__ = ["NotMet", "eventually"]
