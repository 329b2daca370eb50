"""PodDisruptionBudgets: what the eviction subresource checks and what the disruption controller
computes, as upstream's `pkg/registry/core/pod/storage/eviction.go`, `pkg/controller/disruption` and
`k8s.io/component-helpers/apps/poddisruptionbudget`. Pure; no I/O.

The eviction side decides, for one pod and the budgets of its namespace, whether the pod may go and
what the budget's status becomes (`check_and_decrement`); the controller side computes a budget's
status from the pods it selects and the scale of their controllers (`compute_status`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cp import clock as clocks
from cp import errors, selectors

# policy/v1 names.
DISRUPTION_ALLOWED = "DisruptionAllowed"
SUFFICIENT_PODS = "SufficientPods"
INSUFFICIENT_PODS = "InsufficientPods"
SYNC_FAILED = "SyncFailed"
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"
IF_HEALTHY_BUDGET = "IfHealthyBudget"
ALWAYS_ALLOW = "AlwaysAllow"

# The eviction handler refuses to add to a budget whose `disruptedPods` map is larger than this (the
# controller is behind), as upstream's MaxDisruptedPodSize.
MAX_DISRUPTED_POD_SIZE = 2000
# How long an eviction the controller has not seen carried out counts the pod as disrupted
# (upstream's DeletionTimeout).
DELETION_TIMEOUT = 120.0
# Conflicts a budget's status write is retried on (upstream's EvictionsRetry.Steps).
EVICTION_RETRIES = 20

TOO_MANY_REQUESTS = "Cannot evict pod as it would violate the pod's disruption budget."
MORE_THAN_ONE = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."


# ---------------------------------------------------------------------------------------- pods


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """`podutil.IsPodReady`: the Ready condition is True (how a budget measures healthy)."""
    return any(isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
               for c in _status(pod).get("conditions") or [])


def can_ignore_budgets(pod: Mapping[str, Any]) -> bool:
    """A pod whose eviction disrupts nothing more: finished, not started (Pending), or already being
    deleted. It is deleted without looking at budgets."""
    return _status(pod).get("phase") in ("Succeeded", "Failed", "Pending") or \
        bool(_meta(pod).get("deletionTimestamp"))


def enforces_resource_version(pod: Mapping[str, Any]) -> bool:
    """Whether deleting the pod without a budget check must still be conditional on the version read
    (a Pending pod could turn ready meanwhile): all but finished and terminating pods."""
    return _status(pod).get("phase") not in ("Succeeded", "Failed") and not _meta(pod).get("deletionTimestamp")


def mark_disruption_target(pod: dict[str, Any], *, now: float) -> None:
    """Set the pod's DisruptionTarget condition as the eviction subresource does before deleting it
    (`podutil.UpdatePodCondition`: the transition time changes only with the status)."""
    status = pod.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    new: dict[str, Any] = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                           "lastTransitionTime": clocks.rfc3339(now), "reason": "EvictionByEvictionAPI",
                           "message": "Eviction API: evicting"}
    for i, old in enumerate(conditions):
        if old.get("type") == "DisruptionTarget":
            if old.get("status") == "True" and old.get("lastTransitionTime"):
                new["lastTransitionTime"] = old["lastTransitionTime"]
            new["lastProbeTime"] = old.get("lastProbeTime")
            conditions[i] = new
            break
    else:
        conditions.append(new)
    status["conditions"] = conditions


# How long a DisruptionTarget condition may stay on a pod that is not being deleted before the
# disruption controller resets it (upstream's stalePodDisruptionTimeout).
STALE_DISRUPTION_TIMEOUT = 120.0


def stale_disruption_wait(pod: Mapping[str, Any], *, now: float) -> float | None:
    """For a pod that is not terminating, not finished and carries a True DisruptionTarget condition
    not set by its kubelet: how long until the condition is stale (0: it is). None otherwise."""
    if _meta(pod).get("deletionTimestamp") or _status(pod).get("phase") in ("Succeeded", "Failed"):
        return None
    cond = next((c for c in _status(pod).get("conditions") or []
                 if isinstance(c, Mapping) and c.get("type") == "DisruptionTarget"), None)
    if cond is None or cond.get("status") != "True" or cond.get("reason") == "TerminationByKubelet":
        return None
    try:
        since = clocks.parse_time(str(cond.get("lastTransitionTime") or ""))
    except ValueError:
        return 0.0
    return max(since + STALE_DISRUPTION_TIMEOUT - now, 0.0)


def reset_disruption_target(pod: Mapping[str, Any], *, now: float) -> dict[str, Any]:
    """The pod with its DisruptionTarget condition set False (reason and message kept)."""
    new = copy.deepcopy(dict(pod))
    status = new.setdefault("status", {})
    status["conditions"] = [
        {**c, "status": "False", "lastTransitionTime": clocks.rfc3339(now)}
        if isinstance(c, Mapping) and c.get("type") == "DisruptionTarget" else c
        for c in status.get("conditions") or []]
    return new


def budgets_for_eviction(pod: Mapping[str, Any], budgets: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The budgets of the pod's namespace whose selector matches its labels; a budget with an invalid,
    missing or empty selector guards nothing here."""
    namespace = _meta(pod).get("namespace")
    labels = _meta(pod).get("labels") or {}
    out: list[Mapping[str, Any]] = []
    for pdb in budgets:
        if _meta(pdb).get("namespace") != namespace:
            continue
        sel = _spec(pdb).get("selector")
        try:
            selector = selectors.from_label_selector_object(sel if isinstance(sel, Mapping) else None)
        except errors.StatusError:
            continue
        if selector.empty or selector.matches_nothing or not selector.matches(labels):
            continue
        out.append(pdb)
    return out


# ---------------------------------------------------------------------------------------- budgets


def too_many_requests(message: str, *, retry_after: int) -> errors.TooManyRequests:
    """429 with a DisruptionBudget cause (upstream's NewTooManyRequests plus the cause)."""
    details: dict[str, Any] = {"causes": [{"reason": DISRUPTION_BUDGET_CAUSE, "message": message}]}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    headers = {"Retry-After": str(retry_after)} if retry_after else {}
    return errors.TooManyRequests(TOO_MANY_REQUESTS, details=details, headers=headers)


def being_processed(name: str) -> errors.TooManyRequests:
    """The budget has a spec the controller has not computed a status for yet."""
    return too_many_requests(f"The disruption budget {name} is still being processed by the server.",
                             retry_after=10)


def unhealthy_pod_may_go(pod: Mapping[str, Any], pdb: Mapping[str, Any]) -> bool:
    """An unready pod is deleted without spending the budget when the budget says AlwaysAllow, or
    (IfHealthyBudget, the default) when the budget is met without it."""
    if is_pod_ready(pod):
        return False
    if _spec(pdb).get("unhealthyPodEvictionPolicy") == ALWAYS_ALLOW:
        return True
    status = _status(pdb)
    current = int(status.get("currentHealthy") or 0)
    desired = int(status.get("desiredHealthy") or 0)
    return current >= desired and desired > 0


def check_and_decrement(pdb: Mapping[str, Any], *, pod_name: str, now: float, dry_run: bool) -> dict[str, Any]:
    """The budget after allowing the eviction of `pod_name`: one disruption fewer and the pod recorded
    in `disruptedPods` (not on a dry run). Raises 429 when no disruption is allowed or the controller
    has not seen the budget's spec yet, 403 for a negative allowance or a disruptedPods map too large."""
    name = str(_meta(pdb).get("name") or "")
    status = _status(pdb)
    if int(status.get("observedGeneration") or 0) < int(_meta(pdb).get("generation") or 0):
        raise being_processed(name)
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise errors.Forbidden.of(group="policy", plural="poddisruptionbudget", name=name,
                                  reason="pdb disruptions allowed is negative")
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
        raise errors.Forbidden.of(group="policy", plural="poddisruptionbudget", name=name,
                                  reason="DisruptedPods map too big - too many evictions not confirmed "
                                         "by PDB controller")
    if allowed == 0:
        raise too_many_requests(
            f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} healthy pods "
            f"and has {int(status.get('currentHealthy') or 0)} currently", retry_after=0)
    new = copy.deepcopy(dict(pdb))
    new_status = new.setdefault("status", {})
    new_status["disruptionsAllowed"] = allowed - 1
    if allowed - 1 == 0:
        update_disruption_allowed_condition(new_status, now=now)
    if not dry_run:
        disrupted = dict(new_status.get("disruptedPods") or {})
        disrupted[pod_name] = clocks.rfc3339(now)
        new_status["disruptedPods"] = disrupted
    return new


def set_condition(status: dict[str, Any], condition: Mapping[str, Any], *, now: float) -> None:
    """`meta.SetStatusCondition`: replace the condition of that type, keeping its transition time
    unless the status changes."""
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    new = dict(condition)
    for i, old in enumerate(conditions):
        if old.get("type") == new["type"]:
            if old.get("status") == new["status"] and old.get("lastTransitionTime"):
                new["lastTransitionTime"] = old["lastTransitionTime"]
            else:
                new["lastTransitionTime"] = clocks.rfc3339(now)
            conditions[i] = new
            break
    else:
        new["lastTransitionTime"] = clocks.rfc3339(now)
        conditions.append(new)
    status["conditions"] = [_condition_order(c) for c in conditions]


def _condition_order(c: Mapping[str, Any]) -> dict[str, Any]:
    """metav1.Condition's fields in Go's order (message is written even when empty)."""
    keys = ("type", "status", "observedGeneration", "lastTransitionTime", "reason", "message")
    out = {k: c[k] for k in keys if k in c and not (k == "observedGeneration" and not c[k])}
    out.setdefault("message", "")
    return out


def update_disruption_allowed_condition(status: dict[str, Any], *, now: float) -> None:
    """`pdbhelper.UpdateDisruptionAllowedCondition`: DisruptionAllowed follows disruptionsAllowed."""
    allowed = int(status.get("disruptionsAllowed") or 0) > 0
    set_condition(status, {"type": DISRUPTION_ALLOWED, "status": "True" if allowed else "False",
                           "observedGeneration": int(status.get("observedGeneration") or 0),
                           "reason": SUFFICIENT_PODS if allowed else INSUFFICIENT_PODS, "message": ""},
                  now=now)


# ---------------------------------------------------------------------------------------- controller


def pods_selected(pdb: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The pods of the budget's namespace its selector matches (the controller's view: an empty
    selector selects every pod of the namespace, as policy/v1 documents; an invalid one raises)."""
    sel = _spec(pdb).get("selector")
    selector = selectors.from_label_selector_object(sel if isinstance(sel, Mapping) else None)
    namespace = _meta(pdb).get("namespace")
    return [p for p in pods if _meta(p).get("namespace") == namespace
            and selector.matches(_meta(p).get("labels") or {})]


def scaled_value(value: Any, total: int, *, round_up: bool) -> int:
    """`intstr.GetScaledValueFromIntOrPercent`: an integer as it is, `N%` of total."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value)
    if not text.endswith("%") or not text[:-1].lstrip("-").isdigit():
        raise ValueError(f'invalid value for IntOrString: invalid type: string is not a percentage: "{text}"')
    product = int(text[:-1]) * total
    return -(-product // 100) if round_up else math.floor(product / 100)


def controller_ref(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in _meta(pod).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def expected_count(pdb: Mapping[str, Any], pods: Sequence[Mapping[str, Any]],
                   scales: Mapping[str, tuple[str, int]]) -> tuple[int, int, list[str]]:
    """(expectedPods, desiredHealthy, unmanaged pod names) as `getExpectedPodCount`. `scales` maps the
    uid of a pod's controller to what scales it (a ReplicaSet of a Deployment: the Deployment) as
    (that controller's uid, its replicas); pods of one such controller count it once. Raises
    ValueError for a pod whose controller has no scale."""
    spec = _spec(pdb)
    max_unavailable = spec.get("maxUnavailable")
    min_available = spec.get("minAvailable")
    if max_unavailable is not None:
        expected, unmanaged = _expected_scale(pods, scales)
        unavailable = scaled_value(max_unavailable, expected, round_up=True)
        return expected, max(expected - unavailable, 0), unmanaged
    if min_available is not None:
        if isinstance(min_available, int) and not isinstance(min_available, bool):
            return len(pods), min_available, []
        expected, unmanaged = _expected_scale(pods, scales)
        return expected, scaled_value(min_available, expected, round_up=True), unmanaged
    return 0, 0, []


def _expected_scale(pods: Sequence[Mapping[str, Any]],
                    scales: Mapping[str, tuple[str, int]]) -> tuple[int, list[str]]:
    seen: dict[str, int] = {}
    unmanaged: list[str] = []
    for pod in pods:
        ref = controller_ref(pod)
        if ref is None:
            unmanaged.append(str(_meta(pod).get("name") or ""))
            continue
        found = scales.get(str(ref.get("uid") or ""))
        if found is None:
            raise ValueError(f'found no controllers for pod "{_meta(pod).get("name")}"')
        seen[found[0]] = found[1]
    return sum(seen.values()), unmanaged


def disrupted_pods(pdb: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], *,
                   now: float) -> tuple[dict[str, str], float | None]:
    """`buildDisruptedPodMap`: the budget's disruptedPods that still exist, are not being deleted yet and
    were disrupted less than DELETION_TIMEOUT ago; and when the next of them expires (None: never)."""
    recorded = _status(pdb).get("disruptedPods") or {}
    by_name = {str(_meta(p).get("name")): p for p in pods}
    kept: dict[str, str] = {}
    recheck: float | None = None
    for name, stamp in recorded.items():
        pod = by_name.get(name)
        if pod is None or _meta(pod).get("deletionTimestamp"):
            continue
        try:
            when = clocks.parse_time(str(stamp))
        except ValueError:
            continue
        expires = when + DELETION_TIMEOUT
        if expires < now:
            continue
        kept[name] = stamp
        recheck = expires if recheck is None else min(recheck, expires)
    return kept, recheck


def count_healthy(pods: Iterable[Mapping[str, Any]], disrupted: Mapping[str, str]) -> int:
    """Pods ready, not being deleted and not disrupted by an eviction the controller has not seen done."""
    return sum(1 for p in pods if not _meta(p).get("deletionTimestamp")
               and str(_meta(p).get("name")) not in disrupted and is_pod_ready(p))


def compute_status(pdb: Mapping[str, Any], *, current_healthy: int, desired_healthy: int, expected: int,
                   disrupted: Mapping[str, str], now: float) -> dict[str, Any]:
    """The status `updatePdbStatus` writes (conditions kept, DisruptionAllowed updated)."""
    allowed = current_healthy - desired_healthy
    if expected <= 0 or allowed <= 0:
        allowed = 0
    status: dict[str, Any] = {
        "observedGeneration": int(_meta(pdb).get("generation") or 0),
        "disruptedPods": dict(disrupted) if disrupted else None,
        "disruptionsAllowed": allowed,
        "currentHealthy": current_healthy,
        "desiredHealthy": desired_healthy,
        "expectedPods": expected,
        "conditions": copy.deepcopy(list(_status(pdb).get("conditions") or [])),
    }
    update_disruption_allowed_condition(status, now=now)
    return _status_order(status)


def failed_status(pdb: Mapping[str, Any], *, message: str, now: float) -> dict[str, Any]:
    """The fail-safe status after a sync error: no disruption allowed, DisruptionAllowed False
    with reason SyncFailed."""
    status = copy.deepcopy(dict(_status(pdb)))
    status["disruptionsAllowed"] = 0
    set_condition(status, {"type": DISRUPTION_ALLOWED, "status": "False",
                           "observedGeneration": int(status.get("observedGeneration") or 0),
                           "reason": SYNC_FAILED, "message": message}, now=now)
    return _status_order(status)


def _status_order(status: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("observedGeneration", "disruptedPods", "disruptionsAllowed", "currentHealthy", "desiredHealthy",
            "expectedPods", "conditions")
    out = {k: status[k] for k in keys if status.get(k) is not None}
    for k in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        out.setdefault(k, 0)
    if not out.get("observedGeneration"):
        out.pop("observedGeneration", None)
    if not out.get("conditions"):
        out.pop("conditions", None)
    return {k: out[k] for k in keys if k in out}
