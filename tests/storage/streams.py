"""Reading subscriptions in the storage tests."""

from __future__ import annotations

from storage import log


async def collect(subscription: log.Subscription, *, until: int) -> list[log.Event]:
    """Events until `subscription.revision` reaches `until` (the stream must not end first)."""
    out: list[log.Event] = []
    while subscription.revision < until:
        batch = await subscription.next_batch(timeout=5)
        assert batch is not None, "stream ended"
        out += batch
    return out


async def expected(event_log: log.EventLog, *, resource: str, namespace: str | None,
                   after: int) -> list[log.Event]:
    everything = await event_log.after(0, limit=1_000_000)
    return [e for e in everything if e.resource == resource and e.revision > after
            and (namespace is None or e.namespace == namespace)]
