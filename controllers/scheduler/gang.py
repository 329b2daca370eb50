"""Gang scheduling (GenericWorkload + GangScheduling gates, off by default as in 1.37): the pod group
scheduling cycle of upstream's `schedule_one_podgroup.go` with the GangScheduling plugin
(`cp.scheduling.plugins.gangscheduling`).

- PreEnqueue: a pod of a gang waits, without an attempt or a status, until its PodGroup exists and the
  group has `minCount` pods (`Gang.gate`, consulted by the scheduler's own PreEnqueue).
- When such a pod comes up, every pending pod of its group is tried in one cycle (higher priority
  first, then older), each through the ordinary scheduling cycle and assumed on its node so the next
  one sees it. After each pod, PlacementFeasible: the group is feasible once `minCount` pods have a
  place (pods already on nodes count), and the cycle stops early when the pods left cannot make it.
- Feasible: the pods that found a place go to their binding cycles (concurrently); those that did not
  are unschedulable with their own message. Not feasible: every assumption is dropped and every pod
  goes back to the unschedulable pool (`PodScheduled=False`, reason `Unschedulable`) — the pods that had
  a place with PlacementFeasible's message (`minCount (3) cannot be satisfied: 2 scheduled, 0
  remaining`), the others with theirs. A cluster event that may help (a node added, ...) brings them
  back, and the next attempt tries the group again.
- The PodGroup's `PodGroupInitiallyScheduled` condition: True (reason `Scheduled`) once the group was
  feasible — never set back to False afterwards — else False with reason `Unschedulable`.
- Queueing hints: a pod added to the group, the PodGroup added or its `minCount` lowered, re-check the
  group's waiting pods.

Deviations: no workload-aware preemption (upstream's `runWorkloadAwarePreemption` is behind its own
alpha gate), no placement generators/scorers (TopologyAwareWorkloadScheduling, alpha, off), no
CompositePodGroups (alpha, off).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import structlog

from controllers.runtime import cache as caches
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime.reconcile import Request, Result
from controllers.scheduler.config import COMPONENT, POD_GROUP_INDEX, TERMINAL, UNSCHEDULABLE_MAX
from controllers.scheduler.plan import BindingError, Error, Gate, Gated, Plan, Unschedulable, is_pending
from controllers.scheduler.queue import request_of
from cp import clock as clocks
from cp import errors
from cp import resources as res
from cp.objects import meta_of, spec_of, status_of, uid_of
from cp.scheduling import events as cluster_events
from cp.scheduling.plugins import gangscheduling as gs

logger = structlog.get_logger("cplane.controllers.scheduler")

PODGROUPS = res.gated_kind("scheduling.k8s.io", "podgroups")
INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"

Key = tuple[str, str]


class Gang:
    """The scheduler's gang-scheduling part; exists only while the gates are on."""

    def __init__(self, *, scheduler: Any, informer_factory: informers.InformerFactory) -> None:
        # The `controllers.scheduler.core.Scheduler` this is part of (its queue, caches, cycle, binder
        # and reporting; typed Any as core imports this module).
        self.sched = scheduler
        self.pod_groups = informer_factory.informer(PODGROUPS)
        self._log = logger

    # ------------------------------------------------------------------ lookups

    def pod_group(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.pod_groups.cache.get(namespace, name)

    def members(self, namespace: str, name: str) -> list[dict[str, Any]]:
        """The pods of the group the scheduler knows (pending, assumed or on a node; not finished)."""
        out = []
        for key in self.sched.pods.cache.index_keys(POD_GROUP_INDEX, f"{namespace}/{name}"):
            pod = self.sched.pods.cache.get(*key)
            if pod is not None and status_of(pod).get("phase") not in TERMINAL \
                    and not meta_of(pod).get("deletionTimestamp"):
                out.append(pod)
        return out

    def _placed(self, pod: Mapping[str, Any]) -> bool:
        return bool(spec_of(pod).get("nodeName")) or uid_of(pod) in self.sched.node_cache.assumed_pods

    def _ready(self, pod: Mapping[str, Any]) -> bool:
        """Past the other PreEnqueue checks (scheduling gates, claims); the group's quorum holds."""
        if spec_of(pod).get("schedulingGates"):
            return False
        try:
            self.sched.cycle.pod_claims(pod)
        except Gated:
            return False
        return True

    def gang_of(self, pod: Mapping[str, Any]) -> dict[str, Any] | None:
        """The pod's PodGroup if it has a gang policy."""
        name = gs.pod_group_name(pod)
        if name is None:
            return None
        group = self.pod_group(str(meta_of(pod).get("namespace") or ""), name)
        return group if group is not None and gs.gang_policy(group) is not None else None

    # ------------------------------------------------------------------ PreEnqueue and hints

    def gate(self, pod: Mapping[str, Any]) -> str | None:
        name = gs.pod_group_name(pod)
        if name is None:
            return None
        ns = str(meta_of(pod).get("namespace") or "")
        group = self.pod_group(ns, name)
        members = self.members(ns, name) if group is not None and gs.gang_policy(group) is not None else []
        count = len(members) + (0 if any(uid_of(m) == uid_of(pod) for m in members) else 1)
        return gs.pre_enqueue(pod, pod_group=group, all_pods=count)

    def _nudge_group(self, namespace: str, name: str, hint: Any) -> None:
        for member in self.members(namespace, name):
            if is_pending(member) and hint(member):
                self.sched.queueing.nudge(caches.key_of(member), cluster_events.HINTED)

    def pod_added(self, pod: Mapping[str, Any]) -> None:
        name = gs.pod_group_name(pod)
        if name is not None:
            self._nudge_group(str(meta_of(pod).get("namespace") or ""), name,
                              lambda member: member is not pod and gs.hint_pod_added(member, pod))

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=PODGROUPS, map=self._map_pod_group)]

    def _map_pod_group(self, change: managers.Change) -> list[Request]:
        group, old = change.obj, change.old
        ns, name = caches.key_of(group)
        if change.type == "add" or old is None:
            self._nudge_group(ns, name, lambda member: gs.hint_pod_group_added(member, group))
        elif change.type == "update":
            self._nudge_group(ns, name, lambda member: gs.hint_pod_group_updated(member, old, group))
        return []

    # ------------------------------------------------------------------ the pod group cycle

    async def schedule(self, pod: dict[str, Any], group: Mapping[str, Any]) -> Result | None:
        """One pod group scheduling cycle for the group of `pod` (which passed PreEnqueue)."""
        sched = self.sched
        ns, name = caches.key_of(group)
        minimum = gs.min_count(group)
        async with sched._cycle_lock:
            current = sched.pods.cache.get(*caches.key_of(pod))
            if current is None or not is_pending(current) or uid_of(current) in sched.node_cache.assumed_pods:
                return None
            if caches.key_of(current) in sched.queueing.unschedulable:
                return None  # tried with its group by another worker meanwhile (upstream pops them together)
            members = self.members(ns, name)
            placed = sum(1 for m in members if self._placed(m))
            pending = [m for m in members if is_pending(m) and not self._placed(m) and self._ready(m)]
            if not any(uid_of(m) == uid_of(current) for m in pending):
                pending.append(current)
            queue = gs.group_order(pending)
            keys = [caches.key_of(p) for p in queue]
            for key in keys:
                sched.queueing.popped(key)
                sched.queueing.begin_cycle(key)
            results: list[tuple[dict[str, Any], Any]] = []
            scheduled, code, message = placed, gs.WAIT, ""
            try:
                for i, member in enumerate(queue):
                    outcome = await sched.cycle.run(dict(member))
                    results.append((dict(member), outcome))
                    if isinstance(outcome, Error):
                        code, message = "Error", outcome.message
                        break
                    if isinstance(outcome, Plan):
                        scheduled += 1
                    code, message = gs.placement_feasible(minimum=minimum, scheduled=scheduled,
                                                          remaining=len(queue) - i - 1)
                    if code == gs.UNSCHEDULABLE:
                        break
                if code != gs.SUCCESS:  # not feasible: drop every assumption of this cycle
                    for member, outcome in results:
                        if isinstance(outcome, Plan):
                            sched.binder.unreserve_local(member, outcome)
            finally:
                moved = {key: sched.queueing.end_cycle(key) for key in keys}
            if code != gs.SUCCESS:  # back to the pool before another worker takes the lock
                for key in keys:
                    sched.queueing.park(key, gated=False)
        self._log.info("pod_group_cycle", namespace=ns, pod_group=name, min_count=minimum, scheduled=scheduled,
                       pods=len(queue), result=code, trigger=caches.key_of(pod)[1],
                       events_during=sorted(k[1] for k, v in moved.items() if v))
        tried = {caches.key_of(m) for m, _o in results}
        if code == gs.SUCCESS:
            await self._set_condition(group, status="True", reason="Scheduled", message="")
            binds = []
            for member, outcome in results:
                if isinstance(outcome, Plan):
                    binds.append(self._bind(member, outcome))
                elif isinstance(outcome, Gate):
                    sched.queueing.park(caches.key_of(member), gated=True)
                else:
                    await self._fail(member, outcome, moved.get(caches.key_of(member), []))
            await asyncio.gather(*binds)
            # Pods not tried (the cycle ended early only when unschedulable, so none here).
            return None
        if code == "Error":
            for member, outcome in results:
                if isinstance(outcome, Plan):
                    continue  # assumptions dropped above; retried with the group
                sched.stats.errors += 1
                await sched._report_failure(member, "SchedulerError", message)
            self._requeue_after_backoff(keys)
            return None
        await self._set_condition(group, status="False", reason="Unschedulable", message=message)
        for queued in queue:
            member = dict(queued)
            key = caches.key_of(member)
            found: Any = next((o for m, o in results if caches.key_of(m) == key), None)
            if isinstance(found, Unschedulable):
                await self._fail(member, found, moved.get(key, []))
            elif isinstance(found, Gate):
                sched.queueing.park(key, gated=True)
            else:  # had a place, or was not tried: the group's message
                await self._fail(member, Unschedulable(message=message), moved.get(key, []),
                                 attempted=key in tried)
        return None

    async def _fail(self, pod: dict[str, Any], outcome: Unschedulable | Error | Gate | Plan | None,
                    in_flight: list[str], *, attempted: bool = True) -> None:
        sched = self.sched
        key = caches.key_of(pod)
        assert isinstance(outcome, Unschedulable)
        if attempted:
            sched.stats.attempts += 1
            # its own rejecting plugins, or the group's (GangScheduling: only its hints bring it back)
            sched.queueing.record_attempt(key, outcome.plugins or frozenset({gs.NAME}))
        sched.stats.unschedulable += 1
        sched.queueing.park(key, gated=False)
        if sched.queueing.worth_requeuing(key, in_flight):
            sched.queueing.requeue(key)
        elif sched.queue is not None:
            sched.queue.add_after(request_of(key), UNSCHEDULABLE_MAX)  # the periodic flush
        await sched._report_failure(pod, "Unschedulable", outcome.message)

    def _requeue_after_backoff(self, keys: list[Key]) -> None:
        sched = self.sched
        for key in keys:
            sched.queueing.record_attempt(key)
            if sched.queue is not None:
                sched.queue.add_after(request_of(key), sched.queueing.backoff(key))

    async def _bind(self, pod: dict[str, Any], plan: Plan) -> None:
        """The binding cycle of one pod of a feasible group (as the scheduler's own)."""
        sched = self.sched
        key = caches.key_of(pod)
        sched.stats.attempts += 1
        sched.queueing.record_attempt(key)
        try:
            await sched.binder.bind(pod, plan)
        except asyncio.CancelledError:
            sched.binder.unreserve_local(pod, plan)
            raise
        except Exception as exc:
            sched.stats.binding_failures += 1
            message = str(exc) if isinstance(exc, BindingError) else repr(exc)
            self._log.info("binding_failed", namespace=key[0], name=key[1], node=plan.node, error=message)
            await sched.binder.unreserve(pod, plan)
            if sched.pods.cache.get(*key) is not None:
                await sched._report_failure(pod, "SchedulerError", message)
            if sched.queue is not None:
                sched.queue.add_after(request_of(key), sched.queueing.backoff(key))
            return
        sched._forget_pod(key)
        sched.stats.scheduled += 1
        await sched.recorder.normal(pod, "Scheduled", f"Successfully assigned {key[0]}/{key[1]} to {plan.node}")

    async def _set_condition(self, group: Mapping[str, Any], *, status: str, reason: str, message: str) -> None:
        """`updatePodGroupCondition`: never back from True; written only when it changes."""
        ns, name = caches.key_of(group)
        current = self.pod_group(ns, name) or group
        conditions = [c for c in status_of(current).get("conditions") or [] if isinstance(c, Mapping)]
        existing = next((c for c in conditions if c.get("type") == INITIALLY_SCHEDULED), None)
        if existing is not None and existing.get("status") == "True" and status != "True":
            return
        if existing is not None and existing.get("status") == status and existing.get("reason") == reason \
                and existing.get("message") == message:
            return
        now = clocks.rfc3339(self.sched.clock.now())
        cond = {"type": INITIALLY_SCHEDULED, "status": status,
                "observedGeneration": meta_of(current).get("generation") or 0,
                "lastTransitionTime": (existing.get("lastTransitionTime")
                                       if existing is not None and existing.get("status") == status else now),
                "reason": reason, "message": message}
        new_conditions = [c for c in conditions if c.get("type") != INITIALLY_SCHEDULED] + [cond]
        try:
            await self.sched.client.patch(PODGROUPS, name, {"status": {"conditions": new_conditions}},
                                          namespace=ns, patch_type="merge", subresource="status",
                                          field_manager=COMPONENT)
        except errors.NotFound:
            pass
        except errors.StatusError as exc:
            self._log.info("pod_group_condition_update_failed", namespace=ns, name=name, error=exc.message)
