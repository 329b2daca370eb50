"""Updates start from the newest state the server knows (issue #22): `Store.guaranteed_update`'s first
attempt takes the log's latest known version (`EventLog.get(latest_known=True)`, the objects this
process keeps) instead of a database read, as upstream's cached existing object. A first guess that is
stale (another process wrote the same database and this one has not learnt it yet; here: a log that
answers with the version before a write straight into it) must change nothing a client can observe:
the patch applies to the current object, a current resourceVersion is not a conflict while a stale one
is, a patch that is a no-op only on the stale state is still written, and errors are the fresh ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from api import server as servers
from controllers.runtime import client as clients
from cp import errors
from storage import log, memory

LEASES = "leases.coordination.k8s.io"
NS = "remembered"


def _lease(name: str, holder: str = "a") -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 40,
                     "renewTime": "2026-01-01T00:00:00.000000Z"}}


class _LaggingLog(memory.MemoryEventLog):
    """A log whose latest known version of an object written behind the server's back is the one
    before that write, until the next write through the server (as a process that has not polled yet)."""

    def __init__(self) -> None:
        super().__init__()
        self.lagging: dict[tuple[str, str, str, str], log.Event] = {}
        self.guesses = 0

    async def get(self, *, group: str, resource: str, namespace: str, name: str,
                  revision: int | None = None, latest_known: bool = False) -> log.Event | None:
        stale = self.lagging.pop((group, resource, namespace, name), None) if latest_known else None
        if stale is not None:
            self.guesses += 1
            return stale
        return await super().get(group=group, resource=resource, namespace=namespace, name=name,
                                 revision=revision, latest_known=latest_known)


async def _write_behind(the_log: _LaggingLog, name: str, change: dict[str, Any]) -> log.Event:
    """Change the Lease in the log without the server's Store (as another process would); the server's
    next update starts from the version before."""
    current = await the_log.get(group="coordination.k8s.io", resource="leases", namespace=NS, name=name)
    assert current is not None
    the_log.lagging[("coordination.k8s.io", "leases", NS, name)] = current
    obj = json.loads(current.object)
    obj["spec"].update(change)
    return await the_log.append(log.Write(
        type="MODIFIED", group="coordination.k8s.io", resource="leases", namespace=NS, name=name, object=obj,
        expected_revision=current.revision, time=0.0, actor=log.Actor(user="elsewhere")))


@pytest.fixture
async def served(tmp_path: Path) -> Any:
    the_log = _LaggingLog()
    await the_log.start()
    try:
        async with servers.running(data_dir=tmp_path, event_log=the_log) as srv, clients.Client(srv.url) as c:
            await c.create("namespaces", {"metadata": {"name": NS}})
            yield the_log, c
    finally:
        await the_log.close()


async def test_a_patch_applies_to_the_current_object_not_the_remembered_one(served: Any) -> None:
    the_log, c = served
    created = await c.create(LEASES, _lease("n1"))
    behind = await _write_behind(the_log, "n1", {"holderIdentity": "b", "leaseDurationSeconds": 15})
    out = await c.patch(LEASES, "n1", {"spec": {"renewTime": "2026-01-01T00:00:10.000000Z"}}, namespace=NS)
    assert out["spec"] == {"holderIdentity": "b", "leaseDurationSeconds": 15,
                           "renewTime": "2026-01-01T00:00:10.000000Z"}
    assert int(out["metadata"]["resourceVersion"]) == behind.revision + 1 > int(created["metadata"]["resourceVersion"])
    stored = await the_log.get(group="coordination.k8s.io", resource="leases", namespace=NS, name="n1")
    assert stored is not None and json.loads(stored.object) == out
    assert stored.prev_revision == behind.revision
    assert the_log.guesses == 1  # the update started from the stale version


async def test_preconditions_are_checked_against_the_current_revision(served: Any) -> None:
    the_log, c = served
    created = await c.create(LEASES, _lease("n2"))
    behind = await _write_behind(the_log, "n2", {"holderIdentity": "b"})
    # The current resourceVersion is no conflict, though the server remembers the created one.
    ok = await c.patch(LEASES, "n2", {"metadata": {"resourceVersion": str(behind.revision)},
                                      "spec": {"holderIdentity": "c"}}, namespace=NS)
    assert ok["spec"]["holderIdentity"] == "c" and the_log.guesses == 1
    # The remembered (now stale) one is a 409, for PATCH and PUT alike.
    with pytest.raises(errors.Conflict):
        await c.patch(LEASES, "n2", {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
                                     "spec": {"holderIdentity": "d"}}, namespace=NS)
    stale = {**ok, "metadata": {**ok["metadata"], "resourceVersion": created["metadata"]["resourceVersion"]}}
    with pytest.raises(errors.Conflict):
        await c.update(LEASES, stale)
    assert (await c.get(LEASES, "n2", namespace=NS))["spec"]["holderIdentity"] == "c"


async def test_a_no_op_on_the_remembered_state_is_decided_again(served: Any) -> None:
    the_log, c = served
    await c.create(LEASES, _lease("n3", holder="a"))
    behind = await _write_behind(the_log, "n3", {"holderIdentity": "b"})
    # Setting holderIdentity back to "a" changes nothing on the remembered object, but does on the current one.
    out = await c.patch(LEASES, "n3", {"spec": {"holderIdentity": "a"}}, namespace=NS)
    assert out["spec"]["holderIdentity"] == "a"
    assert int(out["metadata"]["resourceVersion"]) == behind.revision + 1 and the_log.guesses == 1


async def test_errors_come_from_the_current_state(served: Any) -> None:
    the_log, c = served
    await c.create(LEASES, _lease("n4"))
    current = await the_log.get(group="coordination.k8s.io", resource="leases", namespace=NS, name="n4")
    assert current is not None
    the_log.lagging[("coordination.k8s.io", "leases", NS, "n4")] = current  # deleted behind the server's back
    await the_log.append(log.Write(
        type="DELETED", group="coordination.k8s.io", resource="leases", namespace=NS, name="n4",
        object=json.loads(current.object), expected_revision=current.revision, time=0.0,
        actor=log.Actor(user="elsewhere")))
    with pytest.raises(errors.NotFound):
        await c.patch(LEASES, "n4", {"spec": {"holderIdentity": "z"}}, namespace=NS)
    assert the_log.guesses == 1
    # Invalid on the current object is Invalid, and leaves it as it is.
    await c.create(LEASES, _lease("n5"))
    with pytest.raises(errors.Invalid):
        await c.patch(LEASES, "n5", {"spec": {"leaseDurationSeconds": -1}}, namespace=NS)
    assert (await c.get(LEASES, "n5", namespace=NS))["spec"]["leaseDurationSeconds"] == 40


async def test_every_update_is_one_event_in_order(served: Any) -> None:
    the_log, c = served
    await c.create(LEASES, _lease("n6"))
    outs = [await c.patch(LEASES, "n6", {"spec": {"renewTime": f"2026-01-01T00:00:{i:02d}.000000Z"}},
                          namespace=NS) for i in range(1, 6)]
    revisions = [int(o["metadata"]["resourceVersion"]) for o in outs]
    assert revisions == sorted(revisions)
    events = await the_log.list_objects(group="coordination.k8s.io", resource="leases", namespace=NS)
    (latest,) = [e for e in events.events if e.name == "n6"]
    assert latest.revision == revisions[-1] and latest.prev_revision == revisions[-2]
