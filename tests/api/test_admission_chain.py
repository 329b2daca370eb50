"""The admission chain of the store (api/admission): mutating plugins change a write after defaulting
and before validation, validating plugins refuse it after validation, `committed` reports each write's
outcome (failures and dry runs too, so reservations can be released), and an object leaving the log —
deleted at once or when its last finalizer goes — is reported as a DELETE."""

from __future__ import annotations

from typing import Any

import aiohttp

from api import admission
from api import server as servers
from api import state as st
from cp import errors

CM = "/api/v1/namespaces/default/configmaps"


class Recorder(admission.BasePlugin):
    name = "test-recorder"

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, Any]] = []

    def handles(self, attrs: admission.Attributes) -> bool:
        return attrs.kind.plural == "configmaps"

    async def admit(self, attrs: admission.Attributes, store: Any) -> None:
        assert attrs.obj is not None
        self.events.append(("admit", attrs.operation, attrs.name, attrs.user))
        attrs.obj["metadata"].setdefault("labels", {})["admitted"] = "yes"
        if attrs.obj.get("data", {}).get("break") == "validation":
            attrs.obj["data"] = {"bad key!": "x"}  # validation runs after mutation

    async def validate(self, attrs: admission.Attributes, store: Any) -> None:
        self.events.append(("validate", attrs.operation, attrs.name, None))
        if attrs.name.startswith("refused"):
            raise errors.Forbidden(f'configmaps "{attrs.name}" is forbidden: test-recorder says no')

    async def committed(self, attrs: admission.Attributes, store: Any, *, succeeded: bool) -> None:
        self.events.append(("committed", attrs.operation, attrs.name, succeeded))


async def test_plugins_mutate_validate_and_hear_the_outcome(api_server: servers.Running,
                                                            http: aiohttp.ClientSession) -> None:
    plugin = Recorder()
    api_server.app[st.STORE].admission.add(plugin)

    async with http.post(CM, json={"metadata": {"name": "a"}}) as r:
        assert r.status == 201
        assert (await r.json())["metadata"]["labels"] == {"admitted": "yes"}
    assert [e[:3] for e in plugin.events] == [("admit", "CREATE", "a"), ("validate", "CREATE", "a"),
                                              ("committed", "CREATE", "a")]
    assert plugin.events[-1][3] is True
    plugin.events.clear()

    async with http.post(CM, json={"metadata": {"name": "refused-1"}}) as r:
        assert r.status == 403 and "test-recorder says no" in (await r.json())["message"]
    assert ("committed", "CREATE", "refused-1", False) not in plugin.events  # refused before the write
    async with http.post(CM, json={"metadata": {"name": "b"}, "data": {"break": "validation"}}) as r:
        assert r.status == 422  # the mutated object is validated
    plugin.events.clear()

    async with http.post(f"{CM}?dryRun=All", json={"metadata": {"name": "dry"}}) as r:
        assert r.status == 201
    assert plugin.events[-1] == ("committed", "CREATE", "dry", False)  # nothing was written
    plugin.events.clear()

    async with http.patch(f"{CM}/a", json={"data": {"k": "v"}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200
    assert [e[:2] for e in plugin.events] == [("admit", "UPDATE"), ("validate", "UPDATE"), ("committed", "UPDATE")]
    assert plugin.events[-1][3] is True
    plugin.events.clear()

    async with http.delete(f"{CM}/a") as r:
        assert r.status == 200
    assert plugin.events == [("validate", "DELETE", "a", None), ("committed", "DELETE", "a", True)]
    plugin.events.clear()

    async with http.post(CM, json={"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}) as r:
        assert r.status == 201
    async with http.delete(f"{CM}/held") as r:
        assert r.status == 200
    assert ("committed", "DELETE", "held", True) not in plugin.events  # still there, finalized later
    async with http.patch(f"{CM}/held", json={"metadata": {"finalizers": None}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200
    assert plugin.events[-1] == ("committed", "DELETE", "held", True)


async def test_refusals_leave_the_log_unchanged(api_server: servers.Running, http: aiohttp.ClientSession) -> None:
    api_server.app[st.STORE].admission.add(Recorder())
    revision = api_server.event_log.revision
    async with http.post(CM, json={"metadata": {"name": "refused-2"}}) as r:
        assert r.status == 403
    assert api_server.event_log.revision == revision
