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


class Counting(admission.BasePlugin):
    """Counts how often the chain asks it; `static` is its `may_handle` answer (None: it has none)."""

    name = "test-counting"

    def __init__(self, static: bool) -> None:
        self.static = static
        self.asked = 0

    def may_handle(self, *, group: str, plural: str, subresource: str, operation: str) -> bool:
        return self.static and plural == "leases"

    def handles(self, attrs: admission.Attributes) -> bool:
        self.asked += 1
        return True


def _lease_update(**kw: Any) -> admission.Attributes:
    from cp import resources as res

    kind = res.lookup("coordination.k8s.io", "v1", "leases")
    assert kind is not None
    return admission.Attributes(kind=kind, operation=admission.UPDATE, namespace="kube-node-lease", name="n1", **kw)


async def test_the_chain_asks_only_plugins_that_may_handle_the_kind_of_write() -> None:
    chain = admission.Chain()
    never, maybe = Counting(False), Counting(True)
    chain.add(never)
    chain.add(maybe)
    for _ in range(3):
        assert chain.for_write(_lease_update()) == [maybe]
    assert (never.asked, maybe.asked) == (0, 3)  # the static answer is remembered, the dynamic one asked each time
    late = Counting(True)
    chain.plugins.append(late)  # the list changed behind the chain's back: its memory is dropped too
    assert chain.for_write(_lease_update()) == [maybe, late]


async def test_builtin_plugins_never_handle_what_they_say_they_cannot(api_server: servers.Running) -> None:
    """`may_handle` False must imply `handles` False, whatever the object: every built-in plugin over
    a grid of kinds, subresources and operations (webhook and policy configurations unknown yet, so
    those plugins answer as permissively as they can)."""
    from cp import resources as res

    store = api_server.app[st.STORE]
    grid = [("", "v1", "pods"), ("", "v1", "persistentvolumeclaims"), ("", "v1", "nodes"),
            ("coordination.k8s.io", "v1", "leases"), ("", "v1", "configmaps"),
            ("certificates.k8s.io", "v1", "certificatesigningrequests"),
            ("scheduling.k8s.io", "v1", "priorityclasses"),
            ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")]
    checked = 0
    for group, version, plural in grid:
        kind = res.lookup(group, version, plural)
        assert kind is not None
        for sub in ("", "status", "approval", "resize"):
            for op in (admission.CREATE, admission.UPDATE, admission.DELETE):
                obj = {"metadata": {"name": "x"}, "spec": {}}
                attrs = admission.Attributes(kind=kind, operation=op, namespace="default" if kind.namespaced else "",
                                             name="x", subresource=sub, obj=obj, old={"metadata": {"name": "x"},
                                                                                      "spec": {"priority": 1}})
                for plugin in store.admission.plugins:
                    static = getattr(plugin, "may_handle", None)
                    if static is not None and not static(group=group, plural=plural, subresource=sub, operation=op):
                        assert not plugin.handles(attrs), (plugin.name, plural, sub, op)
                        checked += 1
    assert checked > 100
