"""`cplane why` on the framework plugins: which (anti-)affinity term or spread constraint rejected a
node, with the skew, beside upstream's reason."""

from __future__ import annotations

from typing import Any

from .support import node, node_view, pod, snapshot, why

ZONE = "topology.kubernetes.io/zone"


def _labelled(p: dict[str, Any], **labels: str) -> dict[str, Any]:
    p["metadata"]["labels"] = labels
    return p


def _anti_affinity(key: str = "kubernetes.io/hostname") -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": key, "labelSelector": {"matchLabels": {"app": "web"}}}]}}


def test_own_anti_affinity_names_the_term_and_the_pod_in_the_way() -> None:
    snap = snapshot(
        node("node-1"), node("node-2"),
        _labelled(pod("web-1", node_name="node-1", phase="Running"), app="web"),
        _labelled(pod("web-0", affinity=_anti_affinity()), app="web"))
    doc = why(snap)
    assert doc["verdict"] == "Schedulable" and doc["chosen"]["node"] == "node-2"
    view = node_view(doc, "node-1")["filter"]
    assert view["plugin"] == "InterPodAffinity"
    assert view["reasons"] == ["node(s) didn't match pod anti-affinity rules"]
    assert view["checks"][0]["message"] == (
        "required anti-affinity term 1 (topologyKey kubernetes.io/hostname, selector app=web): "
        "pod default/web-1 runs in kubernetes.io/hostname=node-1")


def test_existing_pods_anti_affinity_is_named() -> None:
    snap = snapshot(
        node("node-1"),
        _labelled(pod("guard", node_name="node-1", phase="Running", affinity=_anti_affinity()), app="guard"),
        _labelled(pod("web-0"), app="web"))
    doc = why(snap)
    assert doc["verdict"] == "Unschedulable"
    view = node_view(doc, "node-1")["filter"]
    assert view["reasons"] == ["node(s) didn't satisfy existing pods anti-affinity rules"]
    assert view["checks"][0]["message"] == (
        "pod default/guard in kubernetes.io/hostname=node-1 has a required anti-affinity term "
        "(selector app=web) that matches this pod")
    assert doc["upstreamMessage"].startswith(
        "0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules.")


def test_spread_constraint_reports_its_skew() -> None:
    constraint = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                  "labelSelector": {"matchLabels": {"app": "web"}}}
    snap = snapshot(
        node("node-a", labels={ZONE: "a"}), node("node-b", labels={ZONE: "b"}),
        _labelled(pod("web-1", node_name="node-a", phase="Running"), app="web"),
        _labelled(pod("web-2", node_name="node-a", phase="Running"), app="web"),
        _labelled(pod("web-0", topologySpreadConstraints=[constraint]), app="web"))
    doc = why(snap)
    assert doc["chosen"]["node"] == "node-b"
    view = node_view(doc, "node-a")["filter"]
    assert view["plugin"] == "PodTopologySpread"
    assert view["reasons"] == ["node(s) didn't match pod topology spread constraints"]
    assert view["checks"][0]["message"] == (
        "constraint 1 (topologyKey topology.kubernetes.io/zone, maxSkew 1, selector app=web): placing the pod "
        "in topology.kubernetes.io/zone=a makes the skew 3 (matching pods per domain: a=2, b=0; global minimum 0)")


def test_preemption_names_its_victims_or_says_why_there_are_none() -> None:
    low = pod("batch", node_name="node-1", cpu="6", phase="Running", priority=0)
    snap = snapshot(node("node-1"), low, pod("web-0", cpu="4", priority=1000))
    doc = why(snap)
    assert doc["verdict"] == "Unschedulable"
    assert doc["preemption"] == {"node": "node-1", "victims": ["default/batch"], "pdbViolations": 0}
    assert doc["summary"].endswith("; preemption would evict default/batch on node-1")
    assert doc["upstreamMessage"] == "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate"

    equal = snapshot(node("node-1"), low, pod("web-0", cpu="4", priority=0))
    doc = why(equal)
    assert doc["preemption"] == {"message": "preemption: 0/1 nodes are available: 1 No preemption victims found "
                                            "for incoming pod."}
    never = snapshot(node("node-1"), low, pod("web-0", cpu="4", priority=1000, preemptionPolicy="Never"))
    assert why(never)["preemption"] == {"message": "preemption: not eligible due to preemptionPolicy=Never."}


def test_text_form_shows_the_preemption() -> None:
    from cp.scheduling import explain_text

    snap = snapshot(node("node-1"), pod("batch", node_name="node-1", cpu="6", phase="Running"),
                    pod("web-0", cpu="4", priority=1000))
    text = explain_text.render(why(snap))
    assert "  preemption: would evict default/batch on node-1 (0 PodDisruptionBudget violation(s)); " \
           "the pod is then nominated there" in text.splitlines()


def test_a_pod_waiting_for_binding_conditions_is_said_to_wait() -> None:
    from .support import claim, gpus, rslice

    c = claim("web-0-gpu", allocated=[("node-1", "gpu-0")], reserved_for="web-0")
    result = c["status"]["allocation"]["devices"]["results"][0]
    result["bindingConditions"] = ["dra.example.com/attached"]
    result["bindingFailureConditions"] = ["dra.example.com/failed"]
    c["status"]["devices"] = [{"driver": result["driver"], "pool": "node-1", "device": "gpu-0", "conditions": [
        {"type": "dra.example.com/attached", "status": "False", "reason": "Attaching", "message": "",
         "lastTransitionTime": "2026-12-05T00:00:00Z"}]}]
    snap = snapshot(node("node-1"), rslice("s1", "node-1", *gpus(2)), c, pod("web-0", "web-0-gpu"))
    doc = why(snap)
    assert doc["verdict"] == "Binding"
    assert doc["summary"] == ("allocated and reserved; the scheduler waits in PreBind for binding conditions: "
                              "claim default/web-0-gpu device gpu.example.com/node-1/gpu-0: "
                              "dra.example.com/attached not True yet")
    c["status"]["devices"][0]["conditions"][0]["status"] = "True"
    assert why(snapshot(node("node-1"), rslice("s1", "node-1", *gpus(2)), c, pod("web-0", "web-0-gpu")))[
        "verdict"] != "Binding"
