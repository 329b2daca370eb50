"""Issue #17's bounds, all attacks at once (bench/hostile.py, shortened): against a `cplane serve` with
TLS and a steady writer, every attack answer is a `Status`, `/readyz` answers within 100 ms throughout,
the writer's p99 stays within 2x of its baseline, the server's RSS within 200 MB of its baseline, no
watcher is left registered and no event written before the campaign changes.

The two timing bounds (the writer's p99, `/readyz`'s slowest answer) are wall-clock figures on a
shared 2-core machine, where another process can stretch one percentile: a campaign that broke only
those is run once more, and the second must keep every bound. Any other broken bound fails at once."""

from __future__ import annotations

import re
from pathlib import Path

from bench import hostile


async def test_the_hostile_campaign_keeps_every_bound(tmp_path: Path) -> None:
    # Phases long enough for stable percentiles (500 baseline writes, 1,000 under attack): with half
    # as many, the p99 was the third slowest write and one scheduler hiccup decided the comparison.
    (tmp_path / "first").mkdir()
    figures = await hostile.campaign(data_dir=tmp_path / "first", baseline_s=10.0, attack_s=20.0, scale=0.5)
    print(hostile.report(figures))
    broken = figures.failures()
    if broken and all(_timing(f) for f in broken):
        (tmp_path / "second").mkdir()
        figures = await hostile.campaign(data_dir=tmp_path / "second", baseline_s=10.0, attack_s=20.0, scale=0.5)
        print(hostile.report(figures))
    assert not figures.failures(), hostile.report(figures)
    expected = {"yaml-alias-create", "yaml-alias-apply", "json-patch-copy", "watch-timeout-overflow",
                "bad-list-parameters", "ssa-unknown-field", "field-manager-crlf", "slow-headers", "slow-bodies",
                "stalled-watches", "url-too-long", "bad-header"}
    assert expected <= set(figures.tallies), sorted(figures.tallies)


def _timing(failure: str) -> bool:
    """A broken wall-clock bound (`hostile.Figures.failures`' texts): the writer's p99, or `/readyz`
    slower than 100 ms with no probe failed. Not a wrong answer, a failed write or probe, or a leak."""
    if failure.startswith("writer p99 "):
        return True
    m = re.match(r"/readyz: slowest [0-9.]+ ms, 0 failed ", failure)
    return m is not None
