"""controllers/daemonset/rules.py: placement (nodeName, selector, affinity, taints vs the automatic
tolerations), the daemon pod, surge/unavailable arithmetic, finding new and old pods, status numbers."""

from __future__ import annotations

from typing import Any

from controllers.daemonset import rules


def _ds(spec: dict[str, Any] | None = None, *, strategy: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "d", "namespace": "ns", "generation": 1,
                         "annotations": {rules.TEMPLATE_GENERATION_ANNOTATION: "4"}},
            "spec": {"selector": {"matchLabels": {"a": "b"}},
                     "updateStrategy": strategy or {"type": "RollingUpdate",
                                                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                     "template": {"metadata": {"labels": {"a": "b"}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}], **(spec or {})}}}}


def _node(name: str, *, labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None,
          unschedulable: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"taints": taints or []}
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}, "spec": spec}


def test_placement() -> None:
    P = rules.Placement
    assert rules.node_should_run(_node("n"), _ds()) == P(True, True)
    assert rules.node_should_run(_node("n"), _ds({"nodeName": "m"})) == P(False, False)
    assert rules.node_should_run(_node("n"), _ds({"nodeSelector": {"gpu": "1"}})) == P(False, False)
    assert rules.node_should_run(_node("n", labels={"gpu": "1"}), _ds({"nodeSelector": {"gpu": "1"}})) == P(True, True)
    no_sched = [{"key": "k", "effect": "NoSchedule"}]
    assert rules.node_should_run(_node("n", taints=no_sched), _ds()) == P(False, True)
    assert rules.node_should_run(_node("n", taints=[{"key": "k", "effect": "NoExecute"}]), _ds()) == P(False, False)
    assert rules.node_should_run(_node("n", taints=no_sched), _ds({"tolerations": [
        {"key": "k", "operator": "Exists"}]})) == P(True, True)
    # The tolerations daemon pods always get.
    for key, effect in [("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
                        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
                        ("node.kubernetes.io/unschedulable", "NoSchedule")]:
        assert rules.node_should_run(_node("n", taints=[{"key": key, "effect": effect}]), _ds()) == P(True, True)
    network = [{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]
    assert rules.node_should_run(_node("n", taints=network), _ds()) == P(False, True)
    assert rules.node_should_run(_node("n", taints=network), _ds({"hostNetwork": True})) == P(True, True)


def test_daemon_pod() -> None:
    pod = rules.daemon_pod(_ds({"tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                                 "effect": "NoExecute", "tolerationSeconds": 5}],
                                "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}}),
                           node_name="n1", hash_="abc")
    assert pod["metadata"]["labels"] == {"a": "b", "pod-template-generation": "4", "controller-revision-hash": "abc"}
    not_ready = [t for t in pod["spec"]["tolerations"] if t["key"] == "node.kubernetes.io/not-ready"]
    assert not_ready == [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}]
    assert pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}
    assert "preferredDuringSchedulingIgnoredDuringExecution" in pod["spec"]["affinity"]["nodeAffinity"]
    assert rules.target_node(pod) == "n1"
    assert rules.target_node({"spec": {"nodeName": "n2", **pod["spec"]}}) == "n2"


def test_surge_and_unavailable() -> None:
    assert rules.surge_and_unavailable(_ds(), 10) == (0, 1)
    pct = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "10%"}}
    assert rules.surge_and_unavailable(_ds(strategy=pct), 10) == (1, 3)  # both round up
    zero = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}
    assert rules.surge_and_unavailable(_ds(strategy=zero), 10) == (0, 1)
    assert rules.surge_and_unavailable(_ds(strategy={"type": "OnDelete"}), 10) == (0, 0)


def _pod(name: str, hash_: str, *, node: str = "n", deleting: bool = False, ready: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {rules.HASH_LABEL: hash_},
                            "creationTimestamp": "2027-01-01T00:00:00Z"}
    if deleting:
        meta["deletionTimestamp"] = "2027-01-01T00:00:01Z"
    return {"metadata": meta, "spec": {"nodeName": node},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def test_find_updated_pods_and_status() -> None:
    ds = _ds()
    new, old, ok = rules.find_updated_pods([_pod("a", "h2"), _pod("b", "h1"), _pod("c", "h1", deleting=True)], ds, "h2")
    assert ok and new is not None and old is not None and new["metadata"]["name"] == "a"
    assert rules.find_updated_pods([_pod("a", "h2"), _pod("b", "h2")], ds, "h2")[2] is False
    nodes = [_node("n1"), _node("n2"), _node("n3", taints=[{"key": "k", "effect": "NoSchedule"}])]
    status = rules.calculate_status(ds, nodes, {"n1": [_pod("a", "h2", node="n1")],
                                                "n3": [_pod("b", "h1", node="n3", ready=False)]}, "h2", now=0.0)
    assert status == {"currentNumberScheduled": 1, "numberMisscheduled": 1, "desiredNumberScheduled": 2,
                      "numberReady": 1, "updatedNumberScheduled": 1, "numberAvailable": 1, "numberUnavailable": 1}


def test_failed_pod_backoff() -> None:
    b = rules.FailedPodBackoff(initial=1.0, maximum=8.0)
    assert b.remaining("k", 100.0) == 0.0
    b.next("k", 100.0)
    assert b.remaining("k", 100.5) == 0.5 and b.remaining("k", 101.0) == 0.0
    b.next("k", 101.0)  # doubles
    assert b.remaining("k", 102.0) == 1.0
    for t in (103.0, 107.0, 115.0, 123.0):
        b.next("k", t)
    assert b.remaining("k", 123.0) == 8.0  # capped
    b.next("k", 123.0 + 17.0)  # untouched for more than twice the maximum: starts over
    assert b.remaining("k", 140.0) == 1.0
    b.gc(140.0 + 17.0)
    assert b.remaining("k", 157.0) == 0.0
