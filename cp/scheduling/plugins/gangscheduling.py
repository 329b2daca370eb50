"""GangScheduling (1.37, KEP-4671; gates GenericWorkload + GangScheduling, both off by default): the
decisions of upstream's `pkg/scheduler/framework/plugins/gangscheduling` for a pod whose
`spec.schedulingGroup.podGroupName` names a scheduling.k8s.io/v1beta1 PodGroup.

- PreEnqueue (`pre_enqueue`): a pod of a group waits — no attempt, no status — until its PodGroup exists
  and, for a `gang` policy, until the group has at least `minCount` pods (the pod itself included).
- PlacementFeasible (`placement_feasible`): in the pod group scheduling cycle, after each pod of the
  group is tried, the group is feasible once `minCount` pods are scheduled (those already on nodes
  included), still possible (`WAIT`) while the pods left could make up the difference, and
  unschedulable otherwise (which ends the cycle early). A `basic` group needs one pod.
- Queueing hints: a pod added to the same group (`hint_pod_added`), the group added
  (`hint_pod_group_added`) or its `minCount` lowered (`hint_pod_group_updated`) may help a waiting pod.

The pod group cycle itself (all the group's pending pods tried in one cycle, each assumed so the next
sees it, then all bound or all returned) is `controllers.scheduler.gang`. CompositePodGroups (alpha,
CompositePodGroup gate) are not implemented: their gate is off, as in a default 1.37 cluster. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cp.objects import meta_of, spec_of

NAME = "GangScheduling"
SUCCESS, WAIT, UNSCHEDULABLE = "Success", "Wait", "Unschedulable"
WAITING_FOR_QUORUM = "waiting for minCount pods from a gang to appear in scheduling queue"


def pod_group_name(pod: Mapping[str, Any]) -> str | None:
    """`spec.schedulingGroup.podGroupName`, or None for a pod outside any group."""
    group = spec_of(pod).get("schedulingGroup")
    if not isinstance(group, Mapping):
        return None
    name = group.get("podGroupName")
    return str(name) if name else None


def gang_policy(pod_group: Mapping[str, Any]) -> Mapping[str, Any] | None:
    policy = spec_of(pod_group).get("schedulingPolicy")
    gang = policy.get("gang") if isinstance(policy, Mapping) else None
    return gang if isinstance(gang, Mapping) else None


def min_count(pod_group: Mapping[str, Any]) -> int:
    """`getMinCount`: the gang's minCount; 1 for a basic group."""
    gang = gang_policy(pod_group)
    if gang is None:
        return 1
    value = gang.get("minCount")
    return value if isinstance(value, int) and value > 0 else 1


def pre_enqueue(pod: Mapping[str, Any], *, pod_group: Mapping[str, Any] | None, all_pods: int) -> str | None:
    """Why the pod may not enter the scheduling queue yet (None: it may). `pod_group`: its PodGroup
    (None: not found); `all_pods`: how many pods of the group the scheduler knows, the pod included."""
    name = pod_group_name(pod)
    if name is None:
        return None
    if pod_group is None:
        return f'waiting for pod\'s pod group "{name}" to appear in scheduling queue'
    gang = gang_policy(pod_group)
    if gang is None:  # only gangs wait
        return None
    if all_pods < min_count(pod_group):
        return WAITING_FOR_QUORUM
    return None


def placement_feasible(*, minimum: int, scheduled: int, remaining: int) -> tuple[str, str]:
    """(code, message) after one more pod of the group was tried: `scheduled` pods of the group have a
    place (assigned before, or assumed in this cycle), `remaining` are still to be tried."""
    if remaining + scheduled < minimum:
        return UNSCHEDULABLE, (f"minCount ({minimum}) cannot be satisfied: {scheduled} scheduled, "
                               f"{remaining} remaining")
    if scheduled < minimum:
        return WAIT, f"minCount ({minimum}) is not yet satisfied: {scheduled} scheduled, {remaining} remaining"
    return SUCCESS, ""


def _priority(pod: Mapping[str, Any]) -> int:
    value = spec_of(pod).get("priority")
    return value if isinstance(value, int) else 0


def group_order(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The order pods of a group are tried in: higher priority first, then the earlier (upstream: the
    first attempt's time; here the creation time, then the name)."""
    return sorted(pods, key=lambda p: (-_priority(p), str(meta_of(p).get("creationTimestamp") or ""),
                                       str(meta_of(p).get("name") or "")))


def _same_group(pod: Mapping[str, Any], namespace: str, name: str) -> bool:
    return meta_of(pod).get("namespace") == namespace and pod_group_name(pod) == name


def hint_pod_added(pod: Mapping[str, Any], added: Mapping[str, Any]) -> bool:
    """`isSchedulableAfterPodAdded` (unscheduled or assigned): whether to queue `pod` again."""
    name = pod_group_name(added)
    return name is not None and pod_group_name(pod) is not None \
        and _same_group(pod, str(meta_of(added).get("namespace") or ""), name)


def hint_pod_group_added(pod: Mapping[str, Any], added: Mapping[str, Any]) -> bool:
    return _same_group(pod, str(meta_of(added).get("namespace") or ""), str(meta_of(added).get("name") or ""))


def hint_pod_group_updated(pod: Mapping[str, Any], old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Only a gang whose minCount went down may now be feasible."""
    if not _same_group(pod, str(meta_of(new).get("namespace") or ""), str(meta_of(new).get("name") or "")):
        return False
    old_gang, new_gang = gang_policy(old), gang_policy(new)
    if old_gang is None or new_gang is None:
        return False
    return min_count(new) < min_count(old)
