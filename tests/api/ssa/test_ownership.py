"""Field ownership over HTTP: a table of scenarios, each a sequence of writes by named managers and
the object and managedFields expected afterwards.

Expectations follow upstream's documented behaviour (kubernetes.io "Server-Side Apply": Field
management, Conflicts, Merge strategy; structured-merge-diff `merge/update.go`):

- an Apply that changes a field another manager owns fails with 409 Conflict unless forced; forcing
  moves ownership to the applier;
- applying the same value as another manager shares ownership;
- a field a manager stops applying is removed unless another manager (Apply or Update) owns it;
- Update operations (POST, PUT, PATCH) never conflict: they take the fields they change from everyone;
- lists merge by `x-kubernetes-list-type` (associative by their keys, sets by value, atomic whole);
  maps granularly unless `x-kubernetes-map-type: atomic`;
- status is owned through the status subresource only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.api.ssa.support import Api, configmap, container, deployment, owners

Obj = dict[str, Any]


@dataclass(frozen=True)
class Step:
    verb: str  # apply | force | create | merge | put | apply-status | merge-status
    manager: str
    body: Any
    code: int = 200
    target: Obj | None = None  # the object a merge patch is sent to


def apply(manager: str, body: Obj, code: int = 200) -> Step:
    return Step("apply", manager, body, code)


def force(manager: str, body: Obj, code: int = 200) -> Step:
    return Step("force", manager, body, code)


def create(manager: str, body: Obj) -> Step:
    return Step("create", manager, body, 201)


def merge(manager: str, target: Obj, patch: Any, code: int = 200, subresource: str = "") -> Step:
    return Step("merge-status" if subresource == "status" else "merge", manager, patch, code, target)


def put(manager: str, body: Obj, code: int = 200) -> Step:
    return Step("put", manager, body, code)


def apply_status(manager: str, body: Obj, code: int = 200) -> Step:
    return Step("apply-status", manager, body, code)


@dataclass(frozen=True)
class Scenario:
    name: str
    steps: list[Step]
    check: Callable[[Obj], Any]  # asserts on the final object
    owners: dict[str, set[str]] = field(default_factory=dict)  # path -> managers that must own it (exactly)
    conflicts: list[tuple[str, str]] = field(default_factory=list)  # (field, manager) of the last 409


CM = "ConfigMap"


def _cm(**data: str) -> Obj:
    return configmap("cm", **data)


def _deploy(*containers: Obj, **kw: Any) -> Obj:
    return deployment("web", containers=list(containers), **kw)


C = ".spec.template.spec.containers"

SCENARIOS = [
    Scenario(
        "two managers own different fields",
        [apply("a", _cm(x="1")), apply("b", _cm(y="2"))],
        lambda o: o["data"] == {"x": "1", "y": "2"},
        owners={".data.x": {"a/Apply"}, ".data.y": {"b/Apply"}}),
    Scenario(
        "changing a field another applier owns is a conflict",
        [apply("a", _cm(x="1")), apply("b", _cm(x="2"), code=409)],
        lambda o: o["data"] == {"x": "1"},
        owners={".data.x": {"a/Apply"}},
        conflicts=[(".data.x", 'conflict with "a"')]),
    Scenario(
        "force takes ownership from the other applier",
        [apply("a", _cm(x="1", z="0")), force("b", _cm(x="2"))],
        lambda o: o["data"] == {"x": "2", "z": "0"},
        owners={".data.x": {"b/Apply"}, ".data.z": {"a/Apply"}}),
    Scenario(
        "force=false is no force",
        [apply("a", _cm(x="1")), Step("apply", "b", _cm(x="2"), 409)],
        lambda o: o["data"] == {"x": "1"}),
    Scenario(
        "applying the same value shares ownership",
        [apply("a", _cm(x="1")), apply("b", _cm(x="1"))],
        lambda o: o["data"] == {"x": "1"},
        owners={".data.x": {"a/Apply", "b/Apply"}}),
    Scenario(
        "a shared field cannot be changed by either applier",
        [apply("a", _cm(x="1")), apply("b", _cm(x="1")), apply("a", _cm(x="2"), code=409)],
        lambda o: o["data"] == {"x": "1"},
        conflicts=[(".data.x", 'conflict with "b"')]),
    Scenario(
        "a shared field stays when one applier stops applying it",
        [apply("a", _cm(x="1", y="1")), apply("b", _cm(x="1")), apply("a", _cm(y="1"))],
        lambda o: o["data"] == {"x": "1", "y": "1"},
        owners={".data.x": {"b/Apply"}, ".data.y": {"a/Apply"}}),
    Scenario(
        "a field its only applier stops applying is removed",
        [apply("a", _cm(x="1", y="2")), apply("a", _cm(x="1"))],
        lambda o: o["data"] == {"x": "1"},
        owners={".data.x": {"a/Apply"}}),
    Scenario(
        "applying nothing removes everything the applier alone owned, and its entry",
        [apply("a", _cm(x="1")), apply("b", _cm(y="2")), apply("a", _cm())],
        lambda o: o["data"] == {"y": "2"} and [e["manager"] for e in o["metadata"]["managedFields"]] == ["b"]),
    Scenario(
        "a field an Update manager also owns is kept when the applier drops it",
        [create("creator", _cm(x="1")), apply("a", _cm(x="1", y="2")), apply("a", _cm())],
        lambda o: o["data"] == {"x": "1"},
        owners={".data.x": {"creator/Update"}}),
    Scenario(
        "an applier changing a field created by an Update manager conflicts with it (using its version)",
        [create("creator", _cm(x="1")), apply("a", _cm(x="2"), code=409)],
        lambda o: o["data"] == {"x": "1"},
        conflicts=[(".data.x", 'conflict with "creator" using v1')]),
    Scenario(
        "updates take ownership of what they change, without conflicts",
        [apply("a", _cm(x="1", y="1")), merge("editor", _cm(), {"data": {"x": "2"}})],
        lambda o: o["data"] == {"x": "2", "y": "1"},
        owners={".data.x": {"editor/Update"}, ".data.y": {"a/Apply"}}),
    Scenario(
        "after an update took a field, re-applying the old value conflicts with the updater",
        [apply("a", _cm(x="1")), merge("editor", _cm(), {"data": {"x": "2"}}), apply("a", _cm(x="1"), code=409)],
        lambda o: o["data"] == {"x": "2"},
        conflicts=[(".data.x", 'conflict with "editor" using v1')]),
    Scenario(
        "an update that removes a field removes it from every manager",
        [apply("a", _cm(x="1", y="2")), merge("editor", _cm(), {"data": {"y": None}})],
        lambda o: o["data"] == {"x": "1"},
        owners={".data.x": {"a/Apply"}}),
    Scenario(
        "an update writing the same value takes nothing",
        [apply("a", _cm(x="1")), merge("editor", _cm(), {"data": {"x": "1"}})],
        lambda o: [e["manager"] for e in o["metadata"]["managedFields"]] == ["a"]),
    Scenario(
        "labels are a granular map: appliers own their keys",
        [apply("a", configmap("cm", labels={"team": "a"})), apply("b", configmap("cm", labels={"app": "b"}))],
        lambda o: o["metadata"]["labels"] == {"team": "a", "app": "b"},
        owners={".metadata.labels.team": {"a/Apply"}, ".metadata.labels.app": {"b/Apply"}}),
    # Deployments: associative lists (containers by name, env by name, ports by containerPort+protocol),
    # atomic lists (args), atomic maps (selector, nodeSelector), sets (finalizers).
    Scenario(
        "containers merge by name: each applier keeps its container",
        [apply("a", _deploy(container("app"))), apply("b", _deploy(container("sidecar", "envoy:1")))],
        lambda o: [c["name"] for c in o["spec"]["template"]["spec"]["containers"]] == ["app", "sidecar"],
        owners={f'{C}[name="app"].image': {"a/Apply"}, f'{C}[name="sidecar"].image': {"b/Apply"},
                f'{C}[name="app"]': {"a/Apply"}, f'{C}[name="sidecar"]': {"b/Apply"}}),
    Scenario(
        "a container its applier stops applying is removed, another applier's stays",
        [apply("a", _deploy(container("app"))), apply("b", _deploy(container("sidecar", "envoy:1"))),
         apply("a", _deploy(selector=True))],
        lambda o: [c["name"] for c in o["spec"]["template"]["spec"]["containers"]] == ["sidecar"]),
    Scenario(
        "changing another applier's container image is a conflict on that item's field",
        [apply("a", _deploy(container("app"))), apply("b", _deploy(container("app", "nginx:1.29")), code=409)],
        lambda o: o["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27",
        conflicts=[(f'{C}[name="app"].image', 'conflict with "a"')]),
    Scenario(
        "env merges by name inside a shared container",
        [apply("a", _deploy(container("app", env=[{"name": "A", "value": "1"}]))),
         apply("b", _deploy(container("app", env=[{"name": "B", "value": "2"}])))],
        lambda o: o["spec"]["template"]["spec"]["containers"][0]["env"] == [
            {"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        owners={f'{C}[name="app"].env[name="A"].value': {"a/Apply"},
                f'{C}[name="app"].env[name="B"].value': {"b/Apply"},
                f'{C}[name="app"].image': {"a/Apply", "b/Apply"}}),
    Scenario(
        "ports are keyed by containerPort and protocol (defaulted to TCP)",
        [apply("a", _deploy(container("app", ports=[{"containerPort": 80}]))),
         apply("b", _deploy(container("app", ports=[{"containerPort": 80, "protocol": "UDP"}])))],
        lambda o: [(p["containerPort"], p["protocol"]) for p in o["spec"]["template"]["spec"]["containers"][0]["ports"]]
        == [(80, "TCP"), (80, "UDP")],
        owners={f'{C}[name="app"].ports[containerPort=80,protocol="TCP"].containerPort': {"a/Apply"},
                f'{C}[name="app"].ports[containerPort=80,protocol="UDP"].protocol': {"b/Apply"}}),
    Scenario(
        "args is an atomic list: a different list conflicts as a whole",
        [apply("a", _deploy(container("app", args=["--x"]))),
         apply("b", _deploy(container("app", args=["--y"])), code=409)],
        lambda o: o["spec"]["template"]["spec"]["containers"][0]["args"] == ["--x"],
        conflicts=[(f'{C}[name="app"].args', 'conflict with "a"')]),
    Scenario(
        "forcing an atomic list replaces it whole",
        [apply("a", _deploy(container("app", args=["--x", "--z"]))),
         force("b", _deploy(container("app", args=["--y"])))],
        lambda o: o["spec"]["template"]["spec"]["containers"][0]["args"] == ["--y"],
        owners={f'{C}[name="app"].args': {"b/Apply"}}),
    Scenario(
        "the selector is an atomic map",
        [apply("a", _deploy(container("app"))),
         apply("b", {**_deploy(container("app")), "spec": {
             **_deploy(container("app"))["spec"], "selector": {"matchLabels": {"app": "web", "x": "y"}}}},
             code=409)],
        lambda o: o["spec"]["selector"] == {"matchLabels": {"app": "web"}},
        conflicts=[(".spec.selector", 'conflict with "a"')]),
    Scenario(
        "nodeSelector is an atomic map: one applier owns it whole",
        [apply("a", _deploy(container("app"), template_extra={"nodeSelector": {"zone": "a"}})),
         force("b", _deploy(container("app"), template_extra={"nodeSelector": {"disk": "ssd"}}))],
        lambda o: o["spec"]["template"]["spec"]["nodeSelector"] == {"disk": "ssd"},
        owners={".spec.template.spec.nodeSelector": {"b/Apply"}}),
    Scenario(
        "replicas set by one applier, scaled by an update, then forced back",
        [apply("a", _deploy(container("app"), replicas=2)),
         merge("autoscaler", _deploy(), {"spec": {"replicas": 5}}),
         apply("a", _deploy(container("app"), replicas=2), code=409),
         force("a", _deploy(container("app"), replicas=3))],
        lambda o: o["spec"]["replicas"] == 3,
        owners={".spec.replicas": {"a/Apply"}}),
]


def _finalizers(manager_finalizers: list[str]) -> Obj:
    obj = configmap("cm")
    obj["metadata"]["finalizers"] = manager_finalizers
    return obj


SCENARIOS += [
    Scenario(
        "finalizers are a set: appliers own their values",
        [apply("a", _finalizers(["example.com/a"])), apply("b", _finalizers(["example.com/b"]))],
        lambda o: o["metadata"]["finalizers"] == ["example.com/a", "example.com/b"],
        owners={'.metadata.finalizers[="example.com/a"]': {"a/Apply"},
                '.metadata.finalizers[="example.com/b"]': {"b/Apply"}}),
    Scenario(
        "a set value its applier drops is removed",
        [apply("a", _finalizers(["example.com/a", "example.com/x"])), apply("b", _finalizers(["example.com/b"])),
         apply("a", _finalizers(["example.com/a"]))],
        lambda o: o["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]),
]


POD: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def _pod_status(**status: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "status": status}


SCENARIOS += [
    Scenario(
        "status belongs to status writers: a main-resource apply owns none of it",
        [apply("user", {**POD, "status": {"message": "ignored"}}), apply_status("kubelet", _pod_status(message="up"))],
        lambda o: o["status"]["message"] == "up" and o["spec"]["containers"][0]["image"] == "nginx",
        owners={".status.message": {"kubelet/Apply/status"}, '.spec.containers[name="c"].image': {"user/Apply"}}),
    Scenario(
        "a status update takes a status field from the status applier",
        [apply("user", POD), apply_status("kubelet", _pod_status(message="up", reason="R")),
         merge("controller", POD, {"status": {"message": "down"}}, subresource="status")],
        lambda o: o["status"]["message"] == "down" and o["status"]["reason"] == "R",
        owners={".status.message": {"controller/Update/status"}, ".status.reason": {"kubelet/Apply/status"}}),
    Scenario(
        "status appliers conflict with each other",
        [apply("user", POD), apply_status("kubelet", _pod_status(message="up")),
         apply_status("other", _pod_status(message="down"), code=409)],
        lambda o: o["status"]["message"] == "up",
        conflicts=[(".status.message", 'conflict with "kubelet" with subresource "status"')]),
]


async def _run(api: Api, steps: list[Step]) -> tuple[Obj, Any]:
    last: Any = None
    for i, s in enumerate(steps):
        if s.verb in ("apply", "force"):
            r = await api.apply(s.body, s.manager, force=True if s.verb == "force" else
                                (False if s.code == 409 and i == len(steps) - 1 else None))
        elif s.verb == "apply-status":
            r = await api.apply(s.body, s.manager, subresource="status")
        elif s.verb == "create":
            r = await api.create(s.body, s.manager)
        elif s.verb in ("merge", "merge-status"):
            assert s.target is not None
            target = {**s.target, "kind": s.target["kind"]}
            r = await api.patch(target, s.body, s.manager, subresource="status" if s.verb == "merge-status" else "")
        elif s.verb == "put":
            r = await api.replace(s.body, s.manager)
        else:  # pragma: no cover
            raise AssertionError(s.verb)
        expected = 201 if i == 0 and s.verb in ("apply", "force") and s.code == 200 else s.code
        assert r.status == expected, f"step {i} ({s.verb} by {s.manager}): {r.status} {r.body}"
        last = r
    body = steps[-1].body if steps[-1].target is None else steps[-1].target
    return await api.get(body), last


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
async def test_ownership(api: Api, scenario: Scenario) -> None:
    obj, last = await _run(api, scenario.steps)
    assert scenario.check(obj), obj
    owned = owners(obj)
    for path, expected in scenario.owners.items():
        got = {m for m, paths in owned.items() if path in paths}
        assert got == expected, f"{path}: owned by {got}, expected {expected}\n{owned}"
    if scenario.conflicts:
        assert last.status == 409
        status = last.body
        assert status["reason"] == "Conflict" and status["code"] == 409
        causes = status["details"]["causes"]
        assert [(c["field"], c["message"]) for c in causes] == scenario.conflicts
        assert all(c["reason"] == "FieldManagerConflict" for c in causes)
        f, m = scenario.conflicts[0]
        if len(scenario.conflicts) == 1:
            assert status["message"] == f"Apply failed with 1 conflict: {m}: {f}"


async def test_conflict_message_lists_every_conflict(api: Api) -> None:
    """Several conflicts: `Apply failed with N conflicts: conflicts with "m":` then one `- path` per field,
    managers sorted (getConflictMessage)."""
    await api.create(configmap("cm", x="1", y="1"), "creator")
    await api.apply(configmap("cm", z="1"), "a")
    await api.apply(configmap("cm", x="1", y="1", z="1"), "b")  # shares everything
    r = await api.apply(configmap("cm", x="2", y="2", z="2"), "c")
    assert r.status == 409
    assert r.body["message"] == (
        'Apply failed with 6 conflicts: conflicts with "a":\n- .data.z\n'
        'conflicts with "b":\n- .data.x\n- .data.y\n- .data.z\n'
        'conflicts with "creator" using v1:\n- .data.x\n- .data.y')
    assert [(c["field"], c["message"]) for c in r.body["details"]["causes"]] == [
        (".data.z", 'conflict with "a"'), (".data.x", 'conflict with "b"'), (".data.y", 'conflict with "b"'),
        (".data.z", 'conflict with "b"'), (".data.x", 'conflict with "creator" using v1'),
        (".data.y", 'conflict with "creator" using v1')]
    forced = await api.apply(configmap("cm", x="2", y="2", z="2"), "c", force=True)
    assert forced.status == 200
    # The creator keeps `.data` itself (its create added the map: `f:data: {.: {}}`), nothing below it.
    assert owners(forced.body) == {"c/Apply": {".data.x", ".data.y", ".data.z"}, "creator/Update": {".data"}}


async def test_status_is_owned_through_the_status_subresource(api: Api) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    r = await api.apply({**pod, "status": {"message": "ignored"}}, "user")
    assert r.status == 201
    assert "message" not in r.body["status"]
    assert not any(p.startswith(".status") for p in owners(r.body)["user/Apply"])
    # A status apply owns status fields only, recorded with subresource "status".
    status = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
              "status": {"conditions": [{"type": "Ready", "status": "False"}], "message": "starting"}}
    r = await api.apply(status, "kubelet", subresource="status")
    assert r.status == 200, r.body
    got = owners(r.body)
    assert got["kubelet/Apply/status"] == {'.status.conditions[type="Ready"]', '.status.conditions[type="Ready"].status',
                                            '.status.conditions[type="Ready"].type', ".status.message"}
    assert r.body["spec"]["containers"][0]["image"] == "nginx"
    # A status update by a controller takes the fields it changes from the status applier.
    r = await api.patch(pod, {"status": {"message": "running"}}, "controller", subresource="status")
    assert r.status == 200
    assert owned_paths(r.body, "controller/Update/status") == {".status.message"}
    assert ".status.message" not in owned_paths(r.body, "kubelet/Apply/status")
    # The status applier now conflicts with the controller on that field...
    r = await api.apply({**status, "status": {**status["status"], "message": "again"}}, "kubelet",
                        subresource="status")
    assert r.status == 409
    assert r.body["message"] == ('Apply failed with 1 conflict: conflict with "controller" with subresource '
                                 '"status" using v1: .status.message')
    # ... while spec writes never touch status ownership.
    r = await api.apply({**pod, "spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}, "user")
    assert r.status == 200, r.body
    assert owned_paths(r.body, "controller/Update/status") == {".status.message"}
    # Dropping a status condition from the status applier's configuration removes it.
    r = await api.apply({**status, "status": {"message": "running"}}, "kubelet", subresource="status")
    assert r.status == 200, r.body
    assert "conditions" not in r.body["status"]


def owned_paths(obj: Obj, manager: str) -> set[str]:
    return owners(obj).get(manager, set())
