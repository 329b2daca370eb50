"""Table tests of the HPA's replica calculation (`controllers/hpa/calc.py`).

The cases are the documented cases of upstream's `replica_calculator_test.go` (same names, same
numbers: every test pod has two containers, each requesting `request` and using `level` milli-units,
so a pod's usage is 2 x level), plus the scale-from-zero formula (KEP-2021), per-direction
tolerances (HPAConfigurableTolerance) and the normalization rules of `horizontal.go`: legacy
stabilization and the max(2 x current, 4) cap, behavior windows, Pods/Percent policies and
`selectPolicy` (including the policy example of the HPA documentation).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from controllers.hpa import calc
from cp import clock as clocks

NOW = 1_800_000_000.0
COOL = NOW - 3600.0  # started long ago: past the CPU initialization period
HOT = NOW - 60.0  # started a minute ago: still initializing (no full window since Ready)
TOL = calc.Tolerances()


def _pod(i: int, *, request: str | None, ready: str, phase: str, deleting: bool, start: float) -> dict[str, Any]:
    containers: list[dict[str, Any]] = [{"name": "container0"}, {"name": "container1"}]
    if request is not None:
        for c in containers:
            c["resources"] = {"requests": {"cpu": request}}
    transition = start if start == COOL else NOW - 30.0
    pod: dict[str, Any] = {
        "metadata": {"name": f"test-pod-{i}", "namespace": "test-namespace", "labels": {"name": "test-pod"}},
        "spec": {"containers": containers},
        "status": {"phase": phase, "startTime": clocks.rfc3339(start),
                   "conditions": [{"type": "Ready", "status": ready,
                                   "lastTransitionTime": clocks.rfc3339(transition)}]},
    }
    if deleting:
        pod["metadata"]["deletionTimestamp"] = clocks.rfc3339(NOW)
    return pod


@dataclasses.dataclass
class Case:
    current: int
    expected: int = 0
    requests: list[str] | None = None
    levels: list[int] = dataclasses.field(default_factory=list)
    pod_names: list[str] | None = None
    target: int = 0
    expected_utilization: int = 0
    expected_value: int = 0
    readiness: list[str] | None = None
    phases: list[str] | None = None
    deleting: list[bool] | None = None
    starts: list[float] | None = None
    error: str = ""

    def pods(self) -> list[dict[str, Any]]:
        count = max(self.current, len(self.phases or []))
        return [_pod(i, request=self.requests[i] if self.requests and i < len(self.requests) else None,
                     ready=(self.readiness or [])[i] if self.readiness and i < len(self.readiness) else "True",
                     phase=self.phases[i] if self.phases else "Running",
                     deleting=bool(self.deleting and self.deleting[i]),
                     start=self.starts[i] if self.starts else COOL)
                for i in range(count)]

    def ctx(self) -> calc.PodContext:
        return calc.PodContext(pods=self.pods(), now=NOW, cpu_initialization_period=120.0,
                               initial_readiness_delay=10.0)

    def resource_metrics(self) -> calc.PodMetrics:
        names = self.pod_names or [f"test-pod-{i}" for i in range(len(self.levels))]
        return {names[i]: calc.PodMetric(2 * level, NOW, 60.0) for i, level in enumerate(self.levels)}

    def pod_metrics(self) -> calc.PodMetrics:
        return {f"test-pod-{i}": calc.PodMetric(level, NOW, 60.0) for i, level in enumerate(self.levels)}


ONE = "1.0"
F, T = "False", "True"

RESOURCE_CASES = {
    "ScaleUp": Case(3, 5, [ONE] * 3, [300, 500, 700], target=30, expected_utilization=50, expected_value=1000),
    "ScaleUpUnreadyLessScale": Case(3, 4, [ONE] * 3, [300, 500, 700], target=30, expected_utilization=60,
                                    expected_value=1200, readiness=[F, T, T]),
    "ScaleUpHotCpuLessScale": Case(3, 4, [ONE] * 3, [300, 500, 700], target=30, expected_utilization=60,
                                   expected_value=1200, starts=[HOT, COOL, COOL]),
    "ScaleUpUnreadyNoScale": Case(3, 3, [ONE] * 3, [400, 500, 700], target=30, expected_utilization=40,
                                  expected_value=800, readiness=[T, F, F]),
    "ScaleHotCpuNoScale": Case(3, 3, [ONE] * 3, [400, 500, 700], target=30, expected_utilization=40,
                               expected_value=800, readiness=[T, F, F], starts=[COOL, HOT, HOT]),
    "ScaleUpIgnoresFailedPods": Case(2, 4, [ONE] * 4, [500, 700], target=30, expected_utilization=60,
                                     expected_value=1200, readiness=[T, T, F, F],
                                     phases=["Running", "Running", "Failed", "Failed"]),
    "ScaleUpIgnoresDeletionPods": Case(2, 4, [ONE] * 4, [500, 700], target=30, expected_utilization=60,
                                       expected_value=1200, readiness=[T, T, F, F], phases=["Running"] * 4,
                                       deleting=[False, False, True, True]),
    "ScaleDown": Case(5, 3, [ONE] * 5, [100, 300, 500, 250, 250], target=50, expected_utilization=28,
                      expected_value=560),
    "ScaleDownIncludeUnreadyPods": Case(5, 2, [ONE] * 5, [100, 300, 500, 250, 250], target=50,
                                        expected_utilization=30, expected_value=600, readiness=[T, T, T, F, F]),
    "ScaleDownExcludeUnscheduledPods": Case(5, 1, [ONE] * 5, [100], target=50, expected_utilization=10,
                                            expected_value=200, readiness=[T, F, F, F, F],
                                            phases=["Running"] + ["Pending"] * 4),
    "ScaleDownIgnoreHotCpuPods": Case(5, 2, [ONE] * 5, [100, 300, 500, 250, 250], target=50,
                                      expected_utilization=30, expected_value=600,
                                      starts=[COOL, COOL, COOL, HOT, HOT]),
    "ScaleDownIgnoresFailedPods": Case(5, 3, [ONE] * 7, [100, 300, 500, 250, 250], target=50,
                                       expected_utilization=28, expected_value=560, readiness=[T] * 5 + [F, F],
                                       phases=["Running"] * 5 + ["Failed"] * 2),
    "ScaleDownIgnoresDeletionPods": Case(5, 3, [ONE] * 7, [100, 300, 500, 250, 250], target=50,
                                         expected_utilization=28, expected_value=560, readiness=[T] * 5 + [F, F],
                                         phases=["Running"] * 7, deleting=[False] * 5 + [True, True]),
    "Tolerance": Case(3, 3, ["0.9", "1.0", "1.1"], [1010, 1030, 1020], target=100, expected_utilization=102,
                      expected_value=2040),
    "SuperfluousMetrics": Case(4, 24, [ONE] * 4, [4000, 9500, 3000, 7000, 3200, 2000], target=100,
                               expected_utilization=587, expected_value=11750),
    "MissingMetrics": Case(4, 3, [ONE] * 4, [400, 95], target=100, expected_utilization=24, expected_value=495),
    "MissingMetricsNoChangeEq": Case(2, 2, [ONE] * 2, [1000], target=100, expected_utilization=100,
                                     expected_value=2000),
    "MissingMetricsNoChangeGt": Case(2, 2, [ONE] * 2, [1900], target=100, expected_utilization=190,
                                     expected_value=3800),
    "MissingMetricsNoChangeLt": Case(2, 2, [ONE] * 2, [600], target=100, expected_utilization=60,
                                     expected_value=1200),
    "MissingMetricsUnreadyChange": Case(3, 3, [ONE] * 3, [100, 450], target=50, expected_utilization=45,
                                        expected_value=900, readiness=[F, T, T]),
    "MissingMetricsHotCpuNoChange": Case(3, 3, [ONE] * 3, [100, 450], target=50, expected_utilization=45,
                                         expected_value=900, starts=[HOT, COOL, COOL]),
    "MissingMetricsUnreadyScaleUp": Case(3, 4, [ONE] * 3, [100, 2000], target=50, expected_utilization=200,
                                         expected_value=4000, readiness=[F, T, T]),
    "MissingMetricsHotCpuScaleUp": Case(3, 4, [ONE] * 3, [100, 2000], target=50, expected_utilization=200,
                                        expected_value=4000, readiness=[F, T, T], starts=[HOT, COOL, COOL]),
    "MissingMetricsUnreadyScaleDown": Case(4, 3, [ONE] * 4, [100, 100, 100], target=50, expected_utilization=10,
                                           expected_value=200, readiness=[F, T, T, T]),
    "DisjointResourcesMetrics": Case(1, requests=[ONE], levels=[100], pod_names=["an-older-pod-name"], target=100,
                                     error="no metrics returned matched known pods"),
    "EmptyCPURequest": Case(1, requests=[], levels=[200], target=100, error="missing request for"),
}


@pytest.mark.parametrize("name", list(RESOURCE_CASES))
def test_resource_utilization(name: str) -> None:
    tc = RESOURCE_CASES[name]
    if tc.error:
        with pytest.raises(calc.CalcError, match=tc.error):
            calc.resource_replicas(tc.current, tc.target, "cpu", TOL, tc.ctx(), tc.resource_metrics())
        return
    replicas, utilization, raw = calc.resource_replicas(tc.current, tc.target, "cpu", TOL, tc.ctx(),
                                                        tc.resource_metrics())
    assert (replicas, utilization, raw) == (tc.expected, tc.expected_utilization, tc.expected_value)


def test_computed_tolerance_regression() -> None:
    """ReplicaCalcComputedToleranceAlgImplementation: 10 pods using half of what they request."""
    used = 150
    requests = [f"{300 + d}m" for d in (100, -100, 10, -10, 2, -2, 1, -1, 0, 0)]
    tc = Case(10, 9, requests, [used] * 10, target=int((1 / (2 * 0.9) + 0.01) * 100),
              expected_utilization=50, expected_value=300)
    assert calc.resource_replicas(tc.current, tc.target, "cpu", TOL, tc.ctx(), tc.resource_metrics()) == (9, 50, 300)
    tc.target = int((1 / (2 * 0.9) + 0.004) * 100)  # just inside the tolerance: no change
    assert calc.resource_replicas(tc.current, tc.target, "cpu", TOL, tc.ctx(), tc.resource_metrics())[0] == 10


POD_METRIC_CASES = {
    "ScaleUpCM": Case(3, 4, levels=[20000, 10000, 30000], target=15000, expected_value=20000),
    "ScaleUpCMUnreadyHotCpuNoLessScale": Case(3, 6, levels=[50000, 10000, 30000], target=15000,
                                              expected_value=30000, readiness=[T, T, F], starts=[COOL, COOL, HOT]),
    "ScaleUpCMUnreadyHotCpuScaleWouldScaleDown": Case(3, 7, levels=[50000, 15000, 30000], target=15000,
                                                      expected_value=31666, readiness=[F, T, F],
                                                      starts=[HOT, COOL, HOT]),
    "ScaleDownCM": Case(5, 3, levels=[12000] * 5, target=20000, expected_value=12000),
    "ToleranceCM": Case(3, 3, levels=[20000, 21000, 21000], target=20000, expected_value=20666),
}


@pytest.mark.parametrize("name", list(POD_METRIC_CASES))
def test_pods_metric(name: str) -> None:
    tc = POD_METRIC_CASES[name]
    assert calc.plain_metric_replicas(tc.current, tc.target, TOL, tc.ctx(), tc.pod_metrics()) == \
        (tc.expected, tc.expected_value)


@pytest.mark.parametrize(("name", "current", "usage", "target", "readiness", "expected"), [
    ("ScaleUpCMObject", 3, 20000, 15000, None, 4),
    ("ScaleUpCMObjectIgnoresUnreadyPods", 3, 50000, 10000, [F, T, F], 5),
    ("ScaleDownCMObject", 5, 12000, 20000, None, 3),
    ("ToleranceCMObject", 3, 20666, 20000, None, 3),
])
def test_object_value(name: str, current: int, usage: int, target: int, readiness: list[str] | None,
                      expected: int) -> None:
    pods = Case(current, readiness=readiness).pods()
    assert calc.object_replicas(current, target, usage, TOL, pods) == expected


@pytest.mark.parametrize(("name", "current", "usage", "per_pod", "expected", "expected_usage"), [
    ("ScaleUpCMPerPodObject", 3, 20000, 5000, 4, 6667),
    ("ScaleDownPerPodCMObject", 5, 6000, 2000, 3, 1200),
    ("TolerancePerPodCMObject", 4, 20166, 5000, 4, 5042),
    ("ScaleUpPerPodCMExternal", 3, 8600, 2150, 4, 2867),
    ("ScaleDownPerPodCMExternal", 5, 8600, 2867, 3, 1720),
    ("TolerancePerPodCMExternal", 3, 8600, 2900, 3, 2867),
])
def test_average_value_per_pod(name: str, current: int, usage: int, per_pod: int, expected: int,
                               expected_usage: int) -> None:
    assert calc.per_pod_replicas(current, per_pod, usage, TOL) == (expected, expected_usage)


@pytest.mark.parametrize(("name", "current", "levels", "target", "readiness", "expected"), [
    ("ScaleUpCMExternal", 1, [8600], 4400, None, 2),
    ("ScaleUpCMExternalIgnoresUnreadyPods", 3, [8600], 4400, [F, T, F], 2),
    ("ScaleDownCMExternal", 5, [8600], 14334, None, 3),
    ("ToleranceCMExternal", 3, [8600], 8888, None, 3),
    ("ExternalValuesAreSummed", 2, [3000, 3000, 4000], 2000, None, 10),
])
def test_external_value(name: str, current: int, levels: list[int], target: int, readiness: list[str] | None,
                        expected: int) -> None:
    pods = Case(current, readiness=readiness).pods()
    assert calc.external_replicas(current, target, levels, TOL, pods) == (expected, sum(levels))


def test_scale_from_zero_is_ceil_of_ratio_without_pods_or_tolerance() -> None:
    # KEP-2021: at 0 replicas the Value formula is ceil(metric / target): no pods, no tolerance.
    assert calc.external_replicas(0, 10_000, [25_000], TOL, []) == (3, 25_000)
    assert calc.external_replicas(0, 10_000, [10_500], TOL, []) == (2, 10_500)  # ratio 1.05: no tolerance at 0
    assert calc.external_replicas(0, 10_000, [0], TOL, []) == (0, 0)
    assert calc.object_replicas(0, 100_000, 450_000, TOL, []) == 5
    # Above zero the ready pods count, and there must be pods.
    with pytest.raises(calc.CalcError, match="unable to calculate ready pods: no pods returned by selector"):
        calc.external_replicas(1, 10_000, [25_000], TOL, [])


def test_per_direction_tolerances() -> None:
    spec = {"behavior": {"scaleUp": {"tolerance": "0.5"}, "scaleDown": {"tolerance": "0.01"}}}
    tol = calc.tolerances_for(spec)
    assert tol == calc.Tolerances(scale_down=0.01, scale_up=0.5)
    pods = Case(4).pods()
    assert calc.object_replicas(4, 10_000, 14_000, tol, pods) == 4  # +40%: within the scale-up tolerance
    assert calc.object_replicas(4, 10_000, 9_500, tol, pods) == 4  # -5%: ceil(0.95 x 4) = 4
    assert calc.object_replicas(4, 10_000, 7_400, tol, pods) == 3  # -26%
    assert calc.object_replicas(4, 10_000, 16_000, tol, pods) == 7
    assert calc.tolerances_for({}) == calc.Tolerances(0.1, 0.1)
    assert calc.tolerances_for({}, 0.2) == calc.Tolerances(0.2, 0.2)
    assert str(tol) == "[down:1.0%, up:50.0%]"


def _gp(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "status": status}


@pytest.mark.parametrize(("name", "pod", "metric", "resource", "expected"), [
    ("count in a ready pod - memory", _gp(phase="Succeeded"), calc.PodMetric(1, NOW, 60), "memory",
     (1, set(), set(), set())),
    ("unready: no ready condition - CPU", _gp(phase="Succeeded", startTime=clocks.rfc3339(NOW)),
     calc.PodMetric(1), "cpu", (0, {"p"}, set(), set())),
    ("count in a ready pod with fresh metrics during initialization - CPU",
     _gp(phase="Succeeded", startTime=clocks.rfc3339(NOW - 60),
         conditions=[{"type": "Ready", "status": "True", "lastTransitionTime": clocks.rfc3339(NOW - 30)}]),
     calc.PodMetric(1, NOW, 30), "cpu", (1, set(), set(), set())),
    ("unready: ready pod without fresh metrics during initialization - CPU",
     _gp(phase="Succeeded", startTime=clocks.rfc3339(NOW - 60),
         conditions=[{"type": "Ready", "status": "True", "lastTransitionTime": clocks.rfc3339(NOW - 30)}]),
     calc.PodMetric(1, NOW, 60), "cpu", (0, {"p"}, set(), set())),
    ("unready: never ready after initialization - CPU",
     _gp(phase="Succeeded", startTime=clocks.rfc3339(NOW - 600),
         conditions=[{"type": "Ready", "status": "False", "lastTransitionTime": clocks.rfc3339(NOW - 595)}]),
     calc.PodMetric(1), "cpu", (0, {"p"}, set(), set())),
    ("count in an unready pod that was ready after initialization - CPU",
     _gp(phase="Succeeded", startTime=clocks.rfc3339(NOW - 600),
         conditions=[{"type": "Ready", "status": "False", "lastTransitionTime": clocks.rfc3339(NOW - 540)}]),
     calc.PodMetric(1), "cpu", (1, set(), set(), set())),
    ("a missing pod", _gp(phase="Succeeded", startTime=clocks.rfc3339(NOW - 180)), None, "cpu",
     (0, set(), {"p"}, set())),
    ("pending pods are unready", _gp(phase="Pending"), None, "cpu", (0, {"p"}, set(), set())),
    ("failed pods are ignored", _gp(phase="Failed"), calc.PodMetric(1), "cpu", (0, set(), set(), {"p"})),
])
def test_group_pods(name: str, pod: dict[str, Any], metric: calc.PodMetric | None, resource: str,
                    expected: tuple[int, set[str], set[str], set[str]]) -> None:
    metrics = {"p": metric} if metric is not None else {}
    assert calc.group_pods([pod], metrics, resource, now=NOW) == expected


def test_requests_pod_level_container_and_sidecars() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}},
                       {"name": "b", "resources": {"requests": {"cpu": "200m"}}}],
        "initContainers": [{"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}},
                           {"name": "init", "resources": {}}]}}
    assert calc.calculate_requests([pod], "", "cpu") == {"p": 350}
    assert calc.calculate_requests([pod], "b", "cpu") == {"p": 200}
    with pytest.raises(calc.CalcError, match="container nope not found in Pod p"):
        calc.calculate_requests([pod], "nope", "cpu")
    with pytest.raises(calc.CalcError, match="missing request for memory in container a of Pod p"):
        calc.calculate_requests([pod], "", "memory")
    pod["spec"]["resources"] = {"requests": {"cpu": "1"}}
    assert calc.calculate_requests([pod], "", "cpu") == {"p": 1000}  # pod-level requests win
    assert calc.calculate_requests([pod], "a", "cpu") == {"p": 100}  # unless a container is named


# ---------------------------------------------------------------------- normalization


def test_legacy_stabilization_keeps_the_highest_recommendation_of_the_window() -> None:
    recs = [calc.Recommendation(5, NOW - 400), calc.Recommendation(4, NOW - 200)]
    assert calc.stabilize_legacy(recs, 1, now=NOW, window=300) == 4  # 5 expired, 4 is in the window
    assert [r.replicas for r in recs] == [1, 4]  # the expired slot is reused
    assert calc.stabilize_legacy(recs, 2, now=NOW + 101, window=300) == 2  # 4 (t-200) has expired now
    # A recommendation exactly `window` old still counts (Go's Before is strict).
    recs = [calc.Recommendation(3, NOW - 300)]
    assert calc.stabilize_legacy(recs, 0, now=NOW, window=300) == 3


@pytest.mark.parametrize(("current", "desired", "lo", "hi", "expected"), [
    (3, 10, 1, 20, calc.Limited(6, *calc.SCALE_UP_LIMIT)),  # at most 2 x current
    (1, 10, 1, 20, calc.Limited(4, *calc.SCALE_UP_LIMIT)),  # ... or 4
    (0, 3, 0, 20, calc.Limited(3, *calc.WITHIN_RANGE)),  # from zero: up to 4 at once
    (5, 12, 1, 8, calc.Limited(8, *calc.TOO_MANY)),
    (5, 0, 2, 8, calc.Limited(2, *calc.TOO_FEW)),
    (5, 3, 1, 8, calc.Limited(3, *calc.WITHIN_RANGE)),
])
def test_convert_with_rules(current: int, desired: int, lo: int, hi: int, expected: calc.Limited) -> None:
    assert calc.convert_with_rules(current, desired, lo, hi) == expected


UP = calc.default_scale_up_rules()
DOWN = calc.default_scale_down_rules()


@pytest.mark.parametrize(("current", "rules", "expected"), [
    (10, UP, 20),  # Max of (10 + 4, 10 x 200%)
    (1, UP, 5),  # Max of (1 + 4, 2)
    (0, UP, 4),  # from zero: the Pods policy
    (10, {**UP, "selectPolicy": "Min"}, 14),
    (10, {**UP, "selectPolicy": "Disabled"}, 10),
    (3, {"policies": [{"type": "Percent", "value": 50, "periodSeconds": 60}]}, 5),  # ceil(4.5)
])
def test_scale_up_limit(current: int, rules: dict[str, Any], expected: int) -> None:
    assert calc.scale_up_limit(current, [], [], rules, NOW) == expected


DOC_DOWN = {"policies": [{"type": "Pods", "value": 4, "periodSeconds": 60},
                         {"type": "Percent", "value": 10, "periodSeconds": 60}]}


@pytest.mark.parametrize(("current", "rules", "expected"), [
    # The HPA documentation's example: 80 replicas -> the Percent policy removes 8 (Max change)...
    (80, DOC_DOWN, 72),
    (40, DOC_DOWN, 36),
    (10, DOC_DOWN, 6),  # ... below 40 replicas the Pods policy removes more
    (80, {**DOC_DOWN, "selectPolicy": "Min"}, 76),  # Min: the smallest change
    (80, {**DOC_DOWN, "selectPolicy": "Disabled"}, 80),
    (7, DOWN, 0),  # default: 100% per 15 s
    (7, {"policies": [{"type": "Percent", "value": 50, "periodSeconds": 15}]}, 3),  # trunc(3.5)
])
def test_scale_down_limit(current: int, rules: dict[str, Any], expected: int) -> None:
    assert calc.scale_down_limit(current, [], [], rules, NOW) == expected


def test_rate_limits_count_changes_within_the_period() -> None:
    up: list[calc.ScaleEvent] = []
    down: list[calc.ScaleEvent] = []
    behavior = {"scaleUp": {"policies": [{"type": "Pods", "value": 4, "periodSeconds": 60}]},
                "scaleDown": {"policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]}}
    calc.store_scale_event(behavior, up, down, 2, 6, NOW - 30)
    # 30 s ago we went 2 -> 6: the period started at 2, so 6 is the limit until that event ages out.
    assert calc.scale_up_limit(6, up, down, behavior["scaleUp"], NOW) == 6
    limited = calc.convert_with_behavior_rate(current=6, desired=10, min_replicas=1, max_replicas=20,
                                              up_rules=behavior["scaleUp"], down_rules=behavior["scaleDown"],
                                              up_events=up, down_events=down, now=NOW)
    assert limited == calc.Limited(6, *calc.SCALE_UP_LIMIT)
    assert calc.scale_up_limit(6, up, down, behavior["scaleUp"], NOW + 31) == 10
    # Scale-downs in the period give room back to scale-ups, and the other way round.
    calc.store_scale_event(behavior, up, down, 6, 5, NOW)
    # Period start = 5 - 4 added + 1 removed = 2, for both directions.
    assert calc.scale_down_limit(5, up, down, behavior["scaleDown"], NOW) == 0
    assert calc.scale_up_limit(5, up, down, behavior["scaleUp"], NOW) == 6
    # Outdated events are reused.
    calc.store_scale_event(behavior, up, down, 5, 7, NOW + 120)
    assert len(up) == 1 and up[0].change == 2


def test_convert_with_behavior_rate_clamps_to_min_and_max() -> None:
    limited = calc.convert_with_behavior_rate(current=5, desired=50, min_replicas=1, max_replicas=8,
                                              up_rules=UP, down_rules=DOWN, up_events=[], down_events=[], now=NOW)
    assert limited == calc.Limited(8, *calc.TOO_MANY)
    limited = calc.convert_with_behavior_rate(current=5, desired=0, min_replicas=2, max_replicas=8,
                                              up_rules=UP, down_rules=DOWN, up_events=[], down_events=[], now=NOW)
    assert limited == calc.Limited(2, *calc.TOO_FEW)
    limited = calc.convert_with_behavior_rate(current=10, desired=1, min_replicas=1, max_replicas=20,
                                              up_rules=UP, down_rules=DOC_DOWN, up_events=[], down_events=[],
                                              now=NOW)
    assert limited == calc.Limited(6, *calc.SCALE_DOWN_LIMIT)
    limited = calc.convert_with_behavior_rate(current=1, desired=0, min_replicas=0, max_replicas=20,
                                              up_rules=UP, down_rules=DOWN, up_events=[], down_events=[], now=NOW)
    assert limited == calc.Limited(0, *calc.WITHIN_RANGE)  # scale to zero: 100% of 1 may go


def test_stabilization_with_behaviors() -> None:
    recs = [calc.Recommendation(5, NOW - 200), calc.Recommendation(3, NOW - 100)]
    assert calc.stabilize_with_behaviors(recs, current=5, desired=2, up_window=0, down_window=300, now=NOW) == \
        (5, *calc.SCALE_DOWN_STABILIZED)
    recs = [calc.Recommendation(3, NOW - 30)]
    assert calc.stabilize_with_behaviors(recs, current=3, desired=8, up_window=60, down_window=300, now=NOW) == \
        (3, *calc.SCALE_UP_STABILIZED)
    recs = [calc.Recommendation(5, NOW - 400)]
    result = calc.stabilize_with_behaviors(recs, current=5, desired=2, up_window=0, down_window=300, now=NOW)
    assert result[0] == 2 and [r.replicas for r in recs] == [2]  # expired in both windows: slot reused


def test_quantities_and_go_formatting() -> None:
    assert calc.milli_value("250m") == 250 and calc.milli_value("1") == 1000 and calc.milli_value("0.5m") == 1
    assert calc.milli_value("64Mi") == 67108864000
    assert calc.milli_quantity(25000) == "25" and calc.milli_quantity(2500) == "2500m"
    assert calc.milli_quantity(0) == "0" and calc.milli_quantity(6667) == "6667m"
    assert calc.format_label_selector_go(None) == "nil"
    assert calc.format_label_selector_go({"matchLabels": {"queue": "orders", "a": "b"}}) == \
        ("&LabelSelector{MatchLabels:map[string]string{a: b,queue: orders,},"
         "MatchExpressions:[]LabelSelectorRequirement{},}")
    assert calc.format_label_selector_go({"matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]}) \
        == ("&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{"
            "LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}")
