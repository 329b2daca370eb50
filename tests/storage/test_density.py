"""`EventLog.density` on every implementation: the events of a revision range counted per bucket and
per (group, resource, namespace), as a scan of the same events counts them."""

from __future__ import annotations

from collections import Counter

import pytest

from storage import log
from tests.storage import writes


async def _fill(event_log: log.EventLog) -> list[log.Event]:
    out = []
    for i in range(40):
        kind = ("", "pods") if i % 3 else ("resource.k8s.io", "resourceclaims")
        ns = f"ns{i % 4}"
        out.append(await event_log.append(writes.added(f"o{i}", namespace=ns, group=kind[0], resource=kind[1],
                                                       at=1000.0 + i)))
    for ev in out[:10]:
        out.append(await event_log.append(writes.modified(ev, at=2000.0 + ev.revision, spec={"x": 1})))
    return out


def _scan(events: list[log.Event], *, since: int, until: int, width: int) -> tuple[Counter[tuple[int, str, str, str]],
                                                                                    dict[int, tuple[int, float]]]:
    counts: Counter[tuple[int, str, str, str]] = Counter()
    firsts: dict[int, tuple[int, float]] = {}
    for ev in events:
        if since < ev.revision <= until:
            b = (ev.revision - since - 1) // width
            counts[(b, ev.group, ev.resource, ev.namespace)] += 1
            firsts.setdefault(b, (ev.revision, ev.time))
    return counts, firsts


@pytest.mark.parametrize(("since", "until", "width"), [(0, 50, 1), (0, 50, 7), (0, 1000, 16), (13, 37, 5),
                                                       (49, 50, 3), (20, 20, 4), (30, 10, 4)])
async def test_density_counts_what_a_scan_counts(contract_log: log.EventLog, since: int, until: int,
                                                 width: int) -> None:
    events = await _fill(contract_log)
    assert contract_log.revision == 50
    got = await contract_log.density(since=since, until=until, width=width)
    counts, firsts = _scan(events, since=since, until=until, width=width)
    assert Counter({(c.bucket, c.group, c.resource, c.namespace): c.count for c in got.counts}) == counts
    assert len(got.counts) == len(counts)
    assert got.firsts == firsts
