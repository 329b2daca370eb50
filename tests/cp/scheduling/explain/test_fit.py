"""A pod that fits: which node and devices it gets, and why the other nodes lost."""

from __future__ import annotations

from cp.scheduling import explain
from cp.scheduling import explain_text as render

from .support import claim, gpus, node, node_view, pod, request, rslice, snapshot, why

MINE = "web-0-gpu"


def _cluster(*extra: dict) -> explain.Snapshot:
    return snapshot(
        pod("web-0", MINE, cpu="1"), claim(MINE, request(count=2)),
        node("node-1", taints=[{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]),
        rslice("s1", "node-1", *gpus(4)),
        node("node-2"), rslice("s2", "node-2", *gpus(2)),
        claim("other", allocated=[("node-2", "gpu-0")], reserved_for="trainer"),
        node("node-3"), rslice("s3", "node-3", *gpus(4)),
        node("node-4"), rslice("s4", "node-4", *gpus(4)),
        pod("busy", node_name="node-4", cpu="6", memory="20Gi", phase="Running"),
        claim("busy-gpu", allocated=[("node-3", "gpu-0")], reserved_for="busy"),
        *extra)


def test_fitting_pod_explains_node_devices_and_losers() -> None:
    doc = why(_cluster())
    assert doc["verdict"] == "Schedulable"
    chosen = doc["chosen"]
    assert chosen["node"] == "node-3"
    # First fit in pool order: gpu-0 is taken, so gpu-1 and gpu-2.
    assert chosen["allocation"] == [{"claim": "default/web-0-gpu", "devices": [
        {"request": "gpu", "device": "gpu.example.com/node-3/gpu-1"},
        {"request": "gpu", "device": "gpu.example.com/node-3/gpu-2"}]}]
    assert doc["summary"] == ("fits: 2 of 4 nodes feasible; best node-3 with gpu.example.com/node-3/gpu-1, "
                              "gpu.example.com/node-3/gpu-2")
    # node-4 fits too, but loses on score (it is busier).
    n3, n4 = node_view(doc, "node-3"), node_view(doc, "node-4")
    assert n4["fits"] and n4["score"] < n3["score"] == chosen["score"]
    assert n4["scoreDetail"]["NodeResourcesFit"] < n3["scoreDetail"]["NodeResourcesFit"]
    # node-1 is filtered before DRA, node-2 has too few free devices.
    assert node_view(doc, "node-1")["filter"]["plugin"] == "TaintToleration"
    assert node_view(doc, "node-2")["dra"]["blocker"].startswith(
        "claim default/web-0-gpu, request gpu: 1 of 2 devices usable, 2 needed; 1 device already allocated: "
        "default/other (gpu-0)")
    assert "suggestions" not in doc
    text = render.render(doc)
    assert "Would choose node-3, score" in text
    assert "claim default/web-0-gpu: gpu → gpu.example.com/node-3/gpu-1, gpu → gpu.example.com/node-3/gpu-2" in text
    assert "Other feasible nodes lost on score (1):\n  node-4: score" in text
    assert "TaintToleration: node-1: untolerated node taint dedicated=ml:NoSchedule" in text


def test_bound_pod_reports_its_node_and_devices() -> None:
    snap = _cluster()
    web = snap.pods[0]
    web["spec"]["nodeName"] = "node-4"
    web["status"]["phase"] = "Running"
    mine = next(c for c in snap.claims if c["metadata"]["name"] == MINE)
    mine["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "node-4", "device": f"gpu-{i}"} for i in (0, 1)]}},
        "reservedFor": [{"resource": "pods", "name": "web-0", "uid": "uid-web-0"}]}
    doc = why(snap)
    assert doc["verdict"] == "Bound"
    assert doc["bound"] == {"node": "node-4", "claims": [{"claim": "default/web-0-gpu", "devices": [
        "gpu.example.com/node-4/gpu-0", "gpu.example.com/node-4/gpu-1"]}]}
    # Its own claim does not count as "in use" against itself: scheduled again now it still fits.
    assert doc["chosen"]["node"] == "node-3"
    assert doc["summary"].startswith("bound to node-4; scheduled again now it would go to node-3")


def test_pod_without_claims_fits_on_filters_alone() -> None:
    doc = why(snapshot(pod("web-0", cpu="1"), node("node-1"), node("node-2", cpu="500m")))
    assert doc["chosen"]["node"] == "node-1"
    assert node_view(doc, "node-2")["filter"]["checks"][0]["message"] == "cpu: requests 1, 500m free of 500m allocatable"


def test_one_node_only() -> None:
    doc = why(_cluster(), node="node-2")
    assert [v["node"] for v in doc["nodes"]] == ["node-2"]
    assert doc["verdict"] == "Unschedulable"
    assert doc["suggestions"][0]["message"] == ("node-2 would fit if claim default/other (holding "
                                                "gpu.example.com/node-2/gpu-0, reserved for pod default/trainer) "
                                                "were deallocated")
