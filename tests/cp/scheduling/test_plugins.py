"""The scheduler's pure node filters, scores and texts (`cp/scheduling/plugins.py`)."""

from __future__ import annotations

from typing import Any

import pytest

from cp.scheduling import framework
from cp.scheduling import plugins as p


def node(name: str = "n1", *, labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None,
         unschedulable: bool = False, allocatable: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": name, "labels": labels or {"kubernetes.io/hostname": name}}, "spec": spec,
            "status": {"allocatable": allocatable or {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(*, containers: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": containers or [{"name": "c"}], **spec}}


def c(name: str = "c", restart: str | None = None, **requests: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "resources": {"requests": dict(requests)}}
    if restart:
        out["restartPolicy"] = restart
    return out


def status_of(pod_obj: dict[str, Any], node_obj: dict[str, Any], usage: p.NodeUsage | None = None,
              dra_backed: dict[str, str] | None = None) -> p.Status | None:
    info = p.PodInfo(pod_obj)
    return info.filter(p.NodeInfo(node_obj), usage, dra_backed or {})


# ---------------------------------------------------------------------- requests


def test_pod_requests_sum_containers_and_take_the_largest_init_container() -> None:
    req = p.pod_requests(pod(containers=[c(cpu="500m", memory="1Gi"), c("d", cpu="250m")],
                             initContainers=[c("init", cpu="2", memory="100Mi")]))
    assert (req.requests.cpu, req.requests.memory) == (2000, 1024 ** 3)
    # Scoring counts 100m / 200Mi for what a container does not request.
    assert (req.non_zero.cpu, req.non_zero.memory) == (2000, 1024 ** 3 + 200 * 1024 ** 2)


def test_sidecars_add_up_and_raise_later_init_containers() -> None:
    spec = pod(containers=[c(cpu="1")], initContainers=[c("side", restart="Always", cpu="500m"),
                                                          c("init", cpu="1200m")])
    req = p.pod_requests(spec)
    # regular 1 + sidecar 0.5 = 1.5; the init container runs next to the sidecar: 1.2 + 0.5 = 1.7
    assert req.requests.cpu == 1700


def test_pod_level_requests_and_overhead() -> None:
    req = p.pod_requests(pod(containers=[c(cpu="1", memory="1Gi")], resources={"requests": {"cpu": "3"}},
                             overhead={"cpu": "100m", "memory": "10Mi"}))
    assert req.requests.cpu == 3100 and req.requests.memory == 1024 ** 3 + 10 * 1024 ** 2


# ---------------------------------------------------------------------- filters


def test_filters_in_upstream_order_with_upstream_reasons() -> None:
    tainted = node(taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    assert status_of(pod(), tainted).reasons == [p.ERR_REASON_TAINT]
    assert status_of(pod(tolerations=[{"key": "dedicated", "operator": "Exists"}]), tainted) is None
    # PreferNoSchedule only affects the score.
    assert status_of(pod(), node(taints=[{"key": "k", "effect": "PreferNoSchedule"}])) is None
    cordoned = node(unschedulable=True)
    assert status_of(pod(), cordoned).reasons == [p.ERR_REASON_UNSCHEDULABLE]
    assert status_of(pod(tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                        "effect": "NoSchedule"}]), cordoned) is None
    assert status_of(pod(nodeSelector={"disk": "ssd"}), node()).reasons == [p.ERR_REASON_AFFINITY]
    assert status_of(pod(nodeSelector={"disk": "ssd"}), node(labels={"disk": "ssd"})) is None
    st = status_of(pod(nodeSelector={"disk": "ssd"}), cordoned)
    assert st is not None and st.plugin == "NodeUnschedulable" and not st.resolvable


def test_required_node_affinity() -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["special"]}]}]}}}
    assert status_of(pod(affinity=affinity), node(labels={"zone": "b"})) is None
    assert status_of(pod(affinity=affinity), node("special")) is None
    assert status_of(pod(affinity=affinity), node(labels={"zone": "c"})).reasons == [p.ERR_REASON_AFFINITY]


def test_resources_fit_against_pods_already_on_the_node() -> None:
    big = pod(containers=[c(cpu="3", memory="6Gi")])
    usage = p.NodeUsage()
    usage.add(p.pod_requests(pod(containers=[c(cpu="2", memory="4Gi")])), "")
    st = status_of(big, node(), usage)
    assert st is not None and st.reasons == ["Insufficient cpu", "Insufficient memory"] and st.resolvable
    assert status_of(big, node()) is None
    full = node(allocatable={"cpu": "4", "memory": "8Gi", "pods": "1"})
    assert status_of(pod(), full, usage).reasons == ["Too many pods"]
    assert status_of(pod(), full) is None


def test_extended_resources_fit_or_go_to_dra() -> None:
    gpu_pod = pod(containers=[c(**{"example.com/gpu": "2"})])
    plain = node()
    assert status_of(gpu_pod, plain).reasons == ["Insufficient example.com/gpu"]
    # Backed by a DeviceClass and not advertised by the node: DRA decides.
    assert status_of(gpu_pod, plain, dra_backed={"example.com/gpu": "gpu-class"}) is None
    # Advertised by a device plugin: counted as usual.
    plugin = node(allocatable={"cpu": "4", "memory": "8Gi", "pods": "110", "example.com/gpu": "1"})
    assert status_of(gpu_pod, plugin, dra_backed={"example.com/gpu": "gpu-class"}).reasons == [
        "Insufficient example.com/gpu"]


# ---------------------------------------------------------------------- scores


def test_prioritized_list_score_favours_earlier_subrequests() -> None:
    claim = {"spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": "x"}, {"name": "small", "deviceClassName": "x"}]}]}}}
    first = {"devices": {"results": [{"request": "gpu/big"}]}}
    second = {"devices": {"results": [{"request": "gpu/small"}]}}
    assert p.prioritized_list_score([claim], [first]) == 8
    assert p.prioritized_list_score([claim], [second]) == 7


def _first_available(name: str, *subs: str) -> dict[str, Any]:
    return {"name": name, "firstAvailable": [{"name": sub, "deviceClassName": "x"} for sub in subs]}


def _claim(*requests: dict[str, Any], allocated: list[str] | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"spec": {"devices": {"requests": list(requests)}}}
    if allocated is not None:
        c["status"] = {"allocation": {"devices": {"results": [{"request": r} for r in allocated]}}}
    return c


def _alloc(*refs: str) -> dict[str, Any]:
    return {"devices": {"results": [{"request": r} for r in refs]}}


DRA_SCORE_CASES = [
    # (name, claims in pod order, the node's results for the unallocated ones, score)
    ("one-claim-first-subrequest", [_claim(_first_available("gpu", "big", "small"))], [_alloc("gpu/big")], 8),
    ("one-claim-second-subrequest", [_claim(_first_available("gpu", "big", "small"))], [_alloc("gpu/small")], 7),
    ("exactly-requests-score-nothing", [_claim({"name": "gpu", "exactly": {"deviceClassName": "x"}})],
     [_alloc("gpu")], 0),
    ("two-requests-add-up", [_claim(_first_available("a", "x", "y"), _first_available("b", "x", "y", "z"))],
     [_alloc("a/y", "b/z")], 7 + 6),
    # kubernetes#139017: an allocated claim (shared, say) counts with its own allocation and does
    # not take the node's results of the claims after it.
    ("allocated-claim-first", [_claim(_first_available("gpu", "big", "small"), allocated=["gpu/small"]),
                               _claim(_first_available("nic", "fast", "slow"))], [_alloc("nic/fast")], 7 + 8),
    ("allocated-claim-between", [_claim(_first_available("a", "x", "y")),
                                 _claim({"name": "s", "exactly": {"deviceClassName": "x"}}, allocated=["s"]),
                                 _claim(_first_available("b", "x", "y"))], [_alloc("a/x"), _alloc("b/y")], 8 + 7),
    ("only-allocated-claims", [_claim(_first_available("gpu", "big", "small"), allocated=["gpu/big"])], [], 8),
]


@pytest.mark.parametrize(("name", "claims", "allocs", "want"), DRA_SCORE_CASES, ids=[c[0] for c in DRA_SCORE_CASES])
def test_dynamic_resources_score(name: str, claims: list[dict[str, Any]], allocs: list[dict[str, Any]],
                                 want: int) -> None:
    assert p.dynamic_resources_score(claims, allocs) == want


def test_dynamic_resources_normalization_truncates_as_upstream() -> None:
    """DefaultNormalizeScore works in int64: 26 of 36 becomes 72 (not 72.2)."""
    scores = [26, 36, 0]
    framework.default_normalize(scores, reverse=False)
    assert scores == [72, 100, 0]


# ---------------------------------------------------------------------- texts


def test_fit_error_texts() -> None:
    statuses = {
        "a": p.Status(p.UNRESOLVABLE, [p.ERR_REASON_TAINT]),
        "b": p.Status(p.UNSCHEDULABLE, ["Insufficient cpu", "Insufficient memory"]),
        "c": p.Status(p.UNSCHEDULABLE, ["Insufficient cpu"]),
    }
    post = "no new claims to deallocate, " + p.preemption_message(pod(), 3, statuses, None)
    assert p.fit_error(3, statuses, post_filter=post) == (
        "0/3 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 1 Preemption is not helpful for "
        "scheduling, 2 No preemption victims found for incoming pod.")
    pre = p.Status(p.UNRESOLVABLE, ["resourceclaim in use"])
    assert p.fit_error(2, {}, prefilter=pre, post_filter=p.preemption_message(pod(), 2, {}, pre)) == (
        "0/2 nodes are available: resourceclaim in use. preemption: 0/2 nodes are available: "
        "2 Preemption is not helpful for scheduling.")
    assert p.preemption_message(pod(preemptionPolicy="Never"), 2, statuses, None) == (
        "preemption: not eligible due to preemptionPolicy=Never.")


@pytest.mark.parametrize(("nodes", "want"), [(3, 3), (99, 99), (100, 100), (500, 230), (1000, 420),
                                             (5000, 500)])
def test_num_feasible_nodes_to_find(nodes: int, want: int) -> None:
    assert p.num_feasible_nodes_to_find(nodes) == want
