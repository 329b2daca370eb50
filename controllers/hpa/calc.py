"""The HorizontalPodAutoscaler's arithmetic, pure: replica proposals per metric, and the
normalization of a proposal (stabilization windows, scaling policies, min/max) — the behaviour of
kube-controller-manager's `podautoscaler` (`replica_calculator.go`, `horizontal.go`), written
from its documentation and observed behaviour.

Units: every metric value here is an int in *milli-units* (Quantity.MilliValue: `250m` CPU is
250, `1` is 1000, `64Mi` of memory is 67108864000). Times are float seconds on the controller's
clock; nothing here reads a clock, the caller passes `now`.

Errors that upstream returns as `error` are raised as `CalcError` with upstream's message, so the
controller can put them into conditions and events word for word.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import ROUND_CEILING
from typing import Any

from cp import clock as clocks
from cp import quantity
from cp.objects import meta_of, status_of

MAX_INT32 = 2**31 - 1
MIN_INT32 = -(2**31)
MAX_INT64 = 2**63 - 1

DEFAULT_TOLERANCE = 0.1  # --horizontal-pod-autoscaler-tolerance
DEFAULT_DOWNSCALE_WINDOW = 300.0  # --horizontal-pod-autoscaler-downscale-stabilization
DEFAULT_CPU_INITIALIZATION_PERIOD = 300.0  # --horizontal-pod-autoscaler-cpu-initialization-period
DEFAULT_INITIAL_READINESS_DELAY = 30.0  # --horizontal-pod-autoscaler-initial-readiness-delay
SCALE_UP_LIMIT_FACTOR = 2.0  # without `behavior`: at most max(2 x current, 4)
SCALE_UP_LIMIT_MINIMUM = 4.0


class CalcError(Exception):
    """A replica count could not be computed; the message is upstream's."""


# ---------------------------------------------------------------------- quantities


def milli_value(q: Any) -> int:
    """`resource.Quantity.MilliValue()`: the value x 1000, rounded up."""
    d = quantity.parse(q) * 1000
    return int(d.to_integral_value(rounding=ROUND_CEILING))


def milli_quantity(milli: int) -> str:
    """`resource.NewMilliQuantity(milli, DecimalSI).String()`: 2500 -> `2500m`, 25000 -> `25`."""
    return quantity.canonical(f"{milli}m") if milli else "0"


def to_float(q: Any) -> float:
    """`Quantity.AsApproximateFloat64()`."""
    return float(quantity.parse(q))


def _int32(value: float) -> int:
    """Go's int32(math.Ceil(x)) guarded against overflow (upstream caps at MaxInt32)."""
    if math.isnan(value):
        return 0
    if value >= MAX_INT32:
        return MAX_INT32
    return math.ceil(value)


# ---------------------------------------------------------------------- tolerances


@dataclasses.dataclass(frozen=True, slots=True)
class Tolerances:
    """How far the usage ratio may stray from 1.0 before a metric proposes a change."""

    scale_down: float = DEFAULT_TOLERANCE
    scale_up: float = DEFAULT_TOLERANCE

    def is_within(self, ratio: float) -> bool:
        return (1.0 - self.scale_down) <= ratio <= (1.0 + self.scale_up)

    def __str__(self) -> str:
        return f"[down:{self.scale_down * 100:.1f}%, up:{self.scale_up * 100:.1f}%]"


def tolerances_for(spec: Mapping[str, Any], default: float = DEFAULT_TOLERANCE) -> Tolerances:
    """The flag's tolerance, overridden per direction by `behavior.scaleUp/scaleDown.tolerance`
    (HPAConfigurableTolerance, on)."""
    down = up = default
    behavior = spec.get("behavior")
    if isinstance(behavior, Mapping):
        sd, su = behavior.get("scaleDown"), behavior.get("scaleUp")
        if isinstance(sd, Mapping) and sd.get("tolerance") is not None:
            down = to_float(sd["tolerance"])
        if isinstance(su, Mapping) and su.get("tolerance") is not None:
            up = to_float(su["tolerance"])
    return Tolerances(scale_down=down, scale_up=up)


# ---------------------------------------------------------------------- pods


@dataclasses.dataclass(frozen=True, slots=True)
class PodMetric:
    """One pod's sample: value (milli), when it was taken and over which window (seconds)."""

    value: int
    timestamp: float = 0.0
    window: float = 60.0


PodMetrics = dict[str, PodMetric]


def pod_name(pod: Mapping[str, Any]) -> str:
    return str(meta_of(pod).get("name") or "")


def pod_phase(pod: Mapping[str, Any]) -> str:
    return str(status_of(pod).get("phase") or "")


def ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for c in status_of(pod).get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == "Ready":
            return c
    return None


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """podutil.IsPodReady: the Ready condition is True."""
    c = ready_condition(pod)
    return c is not None and c.get("status") == "True"


def group_pods(pods: Iterable[Mapping[str, Any]], metrics: Mapping[str, PodMetric], resource: str, *,
               now: float, cpu_initialization_period: float = DEFAULT_CPU_INITIALIZATION_PERIOD,
               initial_readiness_delay: float = DEFAULT_INITIAL_READINESS_DELAY,
               ) -> tuple[int, set[str], set[str], set[str]]:
    """Sort pods into (ready count, unready, missing, ignored).

    Ignored: deleting or Failed. Unready: Pending; and for CPU, pods that are not Ready, or that
    are still in their initialization period and have no full metric window since turning Ready,
    or that have never been Ready since starting (within the readiness delay). Missing: no metric.
    """
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        name = pod_name(pod)
        phase = pod_phase(pod)
        if meta_of(pod).get("deletionTimestamp") or phase == "Failed":
            ignored.add(name)
            continue
        if phase == "Pending":
            unready.add(name)
            continue
        metric = metrics.get(name)
        if metric is None:
            missing.add(name)
            continue
        if resource == "cpu":
            cond = ready_condition(pod)
            start = clocks.time_of(status_of(pod).get("startTime"))
            if cond is None or start is None:
                is_unready = True
            else:
                transition = clocks.time_of(cond.get("lastTransitionTime")) or 0.0
                if start + cpu_initialization_period > now:
                    # Still initializing: count only Ready pods sampled for a full window since.
                    is_unready = cond.get("status") == "False" or metric.timestamp < transition + metric.window
                else:
                    # Unready and never Ready since it started: ignore.
                    is_unready = cond.get("status") == "False" and start + initial_readiness_delay > transition
            if is_unready:
                unready.add(name)
                continue
        ready += 1
    return ready, unready, missing, ignored


def _container_list(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    out = [c for c in spec.get("containers") or () if isinstance(c, Mapping)]
    for c in spec.get("initContainers") or ():  # restartable init containers (sidecars) count
        if isinstance(c, Mapping) and c.get("restartPolicy") == "Always":
            out.append(c)
    return out


def _requests(container: Mapping[str, Any]) -> Mapping[str, Any]:
    res = container.get("resources")
    req = res.get("requests") if isinstance(res, Mapping) else None
    return req if isinstance(req, Mapping) else {}


def calculate_requests(pods: Iterable[Mapping[str, Any]], container: str, resource: str) -> dict[str, int]:
    """Each pod's request of `resource` (milli): pod-level requests when set (and no container is
    named), else the sum over its containers (or the named container's alone)."""
    out: dict[str, int] = {}
    for pod in pods:
        name = pod_name(pod)
        spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
        assert isinstance(spec, Mapping)
        pod_res = spec.get("resources")
        pod_req = pod_res.get("requests") if isinstance(pod_res, Mapping) else None
        if not container and isinstance(pod_req, Mapping) and pod_req:
            if resource not in pod_req:
                raise CalcError(f"missing pod-level request for {resource} in Pod {name}")
            out[name] = milli_value(pod_req[resource])
            continue
        total = 0
        found = False
        for c in _container_list(pod):
            cname = str(c.get("name") or "")
            if not container or container == cname:
                req = _requests(c)
                if resource not in req:
                    raise CalcError(f"missing request for {resource} in container {cname} of Pod {name}")
                total += milli_value(req[resource])
            if container and container == cname:
                found = True
                break
        if container and not found:
            raise CalcError(f"container {container} not found in Pod {name}")
        out[name] = total
    return out


def resource_utilization_ratio(metrics: Mapping[str, PodMetric], requests: Mapping[str, int],
                               target_utilization: int) -> tuple[float, int, int]:
    """(usage ratio, current utilization %, average raw value) over pods that have a request."""
    metrics_total = 0
    requests_total = 0
    entries = 0
    for name, metric in metrics.items():
        request = requests.get(name)
        if request is None:
            continue  # extraneous metric (a pod we do not know)
        metrics_total += metric.value
        requests_total += request
        entries += 1
    if requests_total == 0:
        raise CalcError("no metrics returned matched known pods")
    utilization = _go_div(metrics_total * 100, requests_total)
    return utilization / target_utilization, utilization, _go_div(metrics_total, entries)


def metric_usage_ratio(metrics: Mapping[str, PodMetric], target: int) -> tuple[float, int]:
    """(usage ratio, average usage) of plain per-pod metrics."""
    total = sum(m.value for m in metrics.values())
    usage = _go_div(total, len(metrics))
    return usage / target, usage


def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def ready_pods_count(pods: Sequence[Mapping[str, Any]]) -> int:
    if not pods:
        raise CalcError("no pods returned by selector while calculating replica count")
    return sum(1 for p in pods if pod_phase(p) == "Running" and is_pod_ready(p))


# ---------------------------------------------------------------------- per-metric proposals


@dataclasses.dataclass(frozen=True, slots=True)
class PodContext:
    """The pods an HPA's target selects, and how to judge their readiness."""

    pods: Sequence[Mapping[str, Any]]
    now: float
    cpu_initialization_period: float = DEFAULT_CPU_INITIALIZATION_PERIOD
    initial_readiness_delay: float = DEFAULT_INITIAL_READINESS_DELAY

    def group(self, metrics: Mapping[str, PodMetric], resource: str) -> tuple[int, set[str], set[str], set[str]]:
        return group_pods(self.pods, metrics, resource, now=self.now,
                          cpu_initialization_period=self.cpu_initialization_period,
                          initial_readiness_delay=self.initial_readiness_delay)


def resource_replicas(current: int, target_utilization: int, resource: str, tolerances: Tolerances,
                      ctx: PodContext, metrics: Mapping[str, PodMetric], container: str = "",
                      ) -> tuple[int, int, int]:
    """A Utilization target: (replicas, utilization %, average raw value)."""
    metrics = dict(metrics)
    if not ctx.pods:
        raise CalcError("no pods returned by selector while calculating replica count")
    ready, unready, missing, ignored = ctx.group(metrics, resource)
    for name in ignored | unready:
        metrics.pop(name, None)
    if not metrics:
        raise CalcError("did not receive metrics for targeted pods (pods might be unready)")
    requests = calculate_requests(ctx.pods, container, resource)
    ratio, utilization, raw = resource_utilization_ratio(metrics, requests, target_utilization)

    scale_up_with_unready = bool(unready) and ratio > 1.0
    if not scale_up_with_unready and not missing:
        if tolerances.is_within(ratio):
            return current, utilization, raw
        return _int32(ratio * ready), utilization, raw

    if missing:
        if ratio < 1.0:  # scale-down: missing pods use 100% of their request (or the target if higher)
            fallback = max(100, target_utilization)
            for name in missing:
                metrics[name] = PodMetric(value=_go_div(requests.get(name, 0) * fallback, 100))
        elif ratio > 1.0:  # scale-up: missing pods use nothing
            for name in missing:
                metrics[name] = PodMetric(value=0)
    if scale_up_with_unready:
        for name in unready:
            metrics[name] = PodMetric(value=0)

    new_ratio, _, _ = resource_utilization_ratio(metrics, requests, target_utilization)
    if tolerances.is_within(new_ratio) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current, utilization, raw
    replicas = _int32(new_ratio * len(metrics))
    if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
        return current, utilization, raw
    return replicas, utilization, raw


def plain_metric_replicas(current: int, target: int, tolerances: Tolerances, ctx: PodContext,
                          metrics: Mapping[str, PodMetric], resource: str = "") -> tuple[int, int]:
    """An AverageValue target over pods (Resource AverageValue, Pods metrics): (replicas, usage)."""
    metrics = dict(metrics)
    if not ctx.pods:
        raise CalcError("no pods returned by selector while calculating replica count")
    ready, unready, missing, ignored = ctx.group(metrics, resource)
    for name in ignored | unready:
        metrics.pop(name, None)
    if not metrics:
        raise CalcError("did not receive metrics for targeted pods (pods might be unready)")
    ratio, usage = metric_usage_ratio(metrics, target)

    scale_up_with_unready = bool(unready) and ratio > 1.0
    if not scale_up_with_unready and not missing:
        if tolerances.is_within(ratio):
            return current, usage
        return _int32(ratio * ready), usage

    if missing:
        if ratio < 1.0:  # scale-down: missing pods use exactly the target
            for name in missing:
                metrics[name] = PodMetric(value=target)
        elif ratio > 1.0:
            for name in missing:
                metrics[name] = PodMetric(value=0)
    if scale_up_with_unready:
        for name in unready:
            metrics[name] = PodMetric(value=0)

    new_ratio, _ = metric_usage_ratio(metrics, target)
    if tolerances.is_within(new_ratio) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current, usage
    replicas = _int32(new_ratio * len(metrics))
    if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
        return current, usage
    return replicas, usage


def usage_ratio_replica_count(current: int, ratio: float, tolerances: Tolerances, pods: Sequence[Mapping[str, Any]]
                              ) -> int:
    """Value targets of Object and External metrics. At 0 replicas: ceil(ratio), with neither the
    tolerance nor a pod count (scale from zero)."""
    if current != 0:
        if tolerances.is_within(ratio):
            return current
        try:
            ready = ready_pods_count(pods)
        except CalcError as exc:
            raise CalcError(f"unable to calculate ready pods: {exc}") from None
        return _int32(ratio * ready)
    return _int32(ratio)


def object_replicas(current: int, target: int, usage: int, tolerances: Tolerances,
                    pods: Sequence[Mapping[str, Any]]) -> int:
    """Object metric, Value target."""
    return usage_ratio_replica_count(current, usage / target, tolerances, pods)


def per_pod_replicas(status_replicas: int, target_per_pod: int, usage: int, tolerances: Tolerances
                     ) -> tuple[int, int]:
    """Object or External metric, AverageValue target: (replicas, usage per pod). The ratio is
    usage / (target x status.replicas); outside the tolerance the proposal is ceil(usage / target).
    With no replicas counted in the target's status the whole usage is reported per pod."""
    replicas = status_replicas
    denominator = float(target_per_pod) * float(status_replicas)
    ratio = (usage / denominator) if denominator else (math.inf if usage > 0 else math.nan)
    if math.isnan(ratio) or not tolerances.is_within(ratio):
        replicas = _int32(usage / target_per_pod)
    if usage >= MAX_INT64:
        return replicas, MAX_INT64
    per_pod = math.ceil(usage / status_replicas) if status_replicas else usage
    return replicas, per_pod


def external_usage(values: Iterable[int]) -> int:
    """External values are summed (capped at MaxInt64)."""
    total = 0
    for v in values:
        if v > 0 and total > MAX_INT64 - v:
            return MAX_INT64
        total += v
    return total


def external_replicas(current: int, target: int, values: Iterable[int], tolerances: Tolerances,
                      pods: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """External metric, Value target: (replicas, summed usage)."""
    usage = external_usage(values)
    return usage_ratio_replica_count(current, usage / target, tolerances, pods), usage


# ---------------------------------------------------------------------- normalization


@dataclasses.dataclass(slots=True)
class Recommendation:
    replicas: int
    timestamp: float


@dataclasses.dataclass(slots=True)
class ScaleEvent:
    change: int  # always positive: how many replicas were added (up) or removed (down)
    timestamp: float
    outdated: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Limited:
    """A normalized replica count and the ScalingLimited reason/message that explains it."""

    replicas: int
    reason: str
    message: str


WITHIN_RANGE = ("DesiredWithinRange", "the desired count is within the acceptable range")
SCALE_UP_LIMIT = ("ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")
SCALE_DOWN_LIMIT = ("ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate")
TOO_MANY = ("TooManyReplicas", "the desired replica count is more than the maximum replica count")
TOO_FEW = ("TooFewReplicas", "the desired replica count is less than the minimum replica count")
SCALE_UP_STABILIZED = ("ScaleUpStabilized",
                       "recent recommendations were lower than current one, applying the lowest recent recommendation")
SCALE_DOWN_STABILIZED = ("ScaleDownStabilized",
                         "recent recommendations were higher than current one, applying the highest recent "
                         "recommendation")
READY_FOR_NEW_SCALE = ("ReadyForNewScale", "recommended size matches current size")


def stabilize_legacy(recommendations: list[Recommendation], desired: int, *, now: float, window: float) -> int:
    """Without `behavior`: the highest recommendation of the last `window` seconds (this one
    included), which is then recorded (reusing the slot of an expired one)."""
    highest = desired
    old_index: int | None = None
    cutoff = now - window
    for i, rec in enumerate(recommendations):
        if rec.timestamp < cutoff:
            old_index = i
        elif rec.replicas > highest:
            highest = rec.replicas
    new = Recommendation(desired, now)
    if old_index is not None:
        recommendations[old_index] = new
    else:
        recommendations.append(new)
    return highest


def scale_up_limit_legacy(current: int) -> int:
    return int(max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM))


def convert_with_rules(current: int, desired: int, min_replicas: int, max_replicas: int) -> Limited:
    """Without `behavior`: clamp to [min, min(max, max(2 x current, 4))]."""
    limit = scale_up_limit_legacy(current)
    if max_replicas > limit:
        maximum, reason = limit, SCALE_UP_LIMIT
    else:
        maximum, reason = max_replicas, TOO_MANY
    if desired < min_replicas:
        return Limited(min_replicas, *TOO_FEW)
    if desired > maximum:
        return Limited(maximum, *reason)
    return Limited(desired, *WITHIN_RANGE)


def stabilize_with_behaviors(recommendations: list[Recommendation], *, current: int, desired: int,
                             up_window: float, down_window: float, now: float) -> tuple[int, str, str]:
    """With `behavior`: clamp `current` between the lowest recommendation of the scale-up window
    and the highest of the scale-down window (both including `desired`), then record `desired`."""
    up_rec = desired
    down_rec = desired
    up_cutoff = now - up_window
    down_cutoff = now - down_window
    old_index: int | None = None
    for i, rec in enumerate(recommendations):
        if rec.timestamp > up_cutoff:
            up_rec = min(rec.replicas, up_rec)
        if rec.timestamp > down_cutoff:
            down_rec = max(rec.replicas, down_rec)
        if rec.timestamp < up_cutoff and rec.timestamp < down_cutoff:
            old_index = i
    result = current
    if result < up_rec:
        result = up_rec
    if result > down_rec:
        result = down_rec
    new = Recommendation(desired, now)
    if old_index is not None:
        recommendations[old_index] = new
    else:
        recommendations.append(new)
    reason, message = SCALE_UP_STABILIZED if desired >= current else SCALE_DOWN_STABILIZED
    return result, reason, message


def replicas_change_in_period(period: float, events: Iterable[ScaleEvent], now: float) -> int:
    cutoff = now - period
    return sum(e.change for e in events if e.timestamp > cutoff)


def _policies(rules: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [p for p in rules.get("policies") or () if isinstance(p, Mapping)]


def _policy_limit(current: int, up_events: Sequence[ScaleEvent], down_events: Sequence[ScaleEvent],
                  rules: Mapping[str, Any], now: float, *, up: bool) -> int:
    """The limit the policies of one direction allow now: each policy proposes a bound from the
    replicas at the start of its period (current - added + removed within it); `selectPolicy` Max
    takes the most permissive (largest change), Min the least, Disabled allows no change."""
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    most_change = select != "Min"
    # Scaling up the most permissive bound is the largest; scaling down it is the smallest.
    pick: Callable[[int, int], int] = max if most_change == up else min
    result = MIN_INT32 if pick is max else MAX_INT32
    for policy in _policies(rules):
        period = float(policy.get("periodSeconds") or 0)
        start = current - replicas_change_in_period(period, up_events, now) \
            + replicas_change_in_period(period, down_events, now)
        value = int(policy.get("value") or 0)
        if policy.get("type") == "Pods":
            proposed = start + value if up else start - value
        elif policy.get("type") == "Percent":
            # Go: int32(math.Ceil(start * (1 + v/100))) up; int32(start * (1 - v/100)) (truncation) down.
            proposed = _int32(start * (1 + value / 100)) if up else int(start * (1 - value / 100))
        else:
            continue
        result = pick(result, proposed)
    return result


def scale_up_limit(current: int, up_events: Sequence[ScaleEvent], down_events: Sequence[ScaleEvent],
                   rules: Mapping[str, Any], now: float) -> int:
    """The most replicas the scale-up policies allow now."""
    return _policy_limit(current, up_events, down_events, rules, now, up=True)


def scale_down_limit(current: int, up_events: Sequence[ScaleEvent], down_events: Sequence[ScaleEvent],
                     rules: Mapping[str, Any], now: float) -> int:
    """The fewest replicas the scale-down policies allow now."""
    return _policy_limit(current, up_events, down_events, rules, now, up=False)


def convert_with_behavior_rate(*, current: int, desired: int, min_replicas: int, max_replicas: int,
                               up_rules: Mapping[str, Any], down_rules: Mapping[str, Any],
                               up_events: Sequence[ScaleEvent], down_events: Sequence[ScaleEvent],
                               now: float) -> Limited:
    """With `behavior`: limit the change by the policies, then clamp to [min, max]."""
    if desired > current:
        limit = max(scale_up_limit(current, up_events, down_events, up_rules, now), current)
        if max_replicas > limit:
            maximum, reason = limit, SCALE_UP_LIMIT
        else:
            maximum, reason = max_replicas, TOO_MANY
        if desired > maximum:
            return Limited(maximum, *reason)
    elif desired < current:
        limit = min(scale_down_limit(current, up_events, down_events, down_rules, now), current)
        if min_replicas < limit:
            minimum, reason = limit, SCALE_DOWN_LIMIT
        else:
            minimum, reason = min_replicas, TOO_FEW
        if desired < minimum:
            return Limited(minimum, *reason)
    return Limited(desired, *WITHIN_RANGE)


def longest_policy_period(rules: Mapping[str, Any]) -> float:
    return max((float(p.get("periodSeconds") or 0) for p in _policies(rules)), default=0.0)


def store_scale_event(behavior: Mapping[str, Any] | None, up_events: list[ScaleEvent], down_events: list[ScaleEvent],
                      previous: int, new: int, now: float) -> None:
    """Remember a rescale for the rate policies (only with `behavior`); slots of events older
    than the longest policy period are reused."""
    if not behavior:
        return
    if new > previous:
        events, rules, change = up_events, behavior.get("scaleUp") or {}, new - previous
    else:
        events, rules, change = down_events, behavior.get("scaleDown") or {}, previous - new
    cutoff = now - longest_policy_period(rules)
    for e in events:
        if e.timestamp < cutoff:
            e.outdated = True
    for i, e in enumerate(events):
        if e.outdated:
            events[i] = ScaleEvent(change, now)
            return
    events.append(ScaleEvent(change, now))


# ---------------------------------------------------------------------- behavior defaults

def default_scale_up_rules() -> dict[str, Any]:
    return {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                         {"type": "Percent", "value": 100, "periodSeconds": 15}]}


def default_scale_down_rules() -> dict[str, Any]:
    return {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def filled_rules(rules: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    """`behavior.scaleUp/scaleDown` with unset fields taken from the API defaults."""
    out = dict(defaults)
    if isinstance(rules, Mapping):
        for key, value in rules.items():
            if value is not None:
                out[key] = value
    return out


# ---------------------------------------------------------------------- Go-style formatting


def format_label_selector_go(sel: Mapping[str, Any] | None) -> str:
    """`%+v` of a *metav1.LabelSelector as upstream messages print it (`nil`, or
    `&LabelSelector{MatchLabels:map[string]string{a: b,},MatchExpressions:[]LabelSelectorRequirement{},}`)."""
    if sel is None:
        return "nil"
    labels = sel.get("matchLabels") or {}
    exprs = sel.get("matchExpressions") or []
    ml = "map[string]string{" + "".join(f"{k}: {labels[k]}," for k in sorted(labels)) + "}"
    me = "[]LabelSelectorRequirement{"
    for e in exprs:
        values = " ".join(str(v) for v in e.get("values") or [])
        me += f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},Values:[{values}],}},"
    me += "}"
    return f"&LabelSelector{{MatchLabels:{ml},MatchExpressions:{me},}}"
