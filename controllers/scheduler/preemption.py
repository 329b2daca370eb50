"""The scheduler's side of DefaultPreemption (the algorithm is `cp.scheduling.preemption`):

- `Nominator` (upstream's PodNominator): the pending pods nominated to a node — from their
  `status.nominatedNodeName`, and from this scheduler's own nominations until the informer shows
  them — so that other pods' filters count them (`addGENominatedPods`);
- `Preemption`: runs the PostFilter for a pod with the PodDisruptionBudgets of the informer, and
  prepares the chosen candidate as upstream's (asynchronous by default) `prepareCandidateAsync`:
  the nominations of lower-priority pods to the node are cleared, then each victim not already being
  deleted gets the `DisruptionTarget` condition (status patch), is deleted gracefully and a Normal
  `Preempted` event is recorded on it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.scheduler.config import COMPONENT, PODS
from controllers.scheduler.plan import is_pending
from cp import clock as clocks
from cp import errors
from cp.objects import controller_uid_of, meta_of, spec_of, status_of, uid_of
from cp.scheduling import framework, plugins
from cp.scheduling import preemption as preemptions

logger = structlog.get_logger("cplane.controllers.scheduler")

PDBS = clients.resolve("poddisruptionbudgets.policy")


class Nominator:
    """Pods nominated to nodes, by node (`NominatedPodsForNode`)."""

    def __init__(self) -> None:
        self.node_of: dict[str, str] = {}  # pod uid -> node
        self.by_node: dict[str, dict[str, framework.PodInfo]] = {}

    def add(self, pod: Mapping[str, Any], node: str) -> None:
        uid = uid_of(pod)
        self.delete(uid)
        if not node:
            return
        self.node_of[uid] = node
        self.by_node.setdefault(node, {})[uid] = framework.PodInfo(pod, owner=controller_uid_of(pod))

    def delete(self, uid: str) -> None:
        node = self.node_of.pop(uid, None)
        if node is None:
            return
        pods = self.by_node.get(node)
        if pods is not None:
            pods.pop(uid, None)
            if not pods:
                del self.by_node[node]

    def pods_on(self, node: str) -> list[framework.PodInfo]:
        return list(self.by_node.get(node, {}).values())

    # informer handlers -------------------------------------------------------------------------

    def pod_added(self, pod: dict[str, Any]) -> None:
        self.pod_updated(None, pod)

    def pod_updated(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        """`UpdateNominatedPod`: a pending pod of ours counts where its status nominates it; an
        update showing no nomination before and after keeps the one this scheduler made."""
        uid = uid_of(new)
        if not is_pending(new):
            self.delete(uid)
            return
        node = str(status_of(new).get("nominatedNodeName") or "")
        if not node and (old is None or not status_of(old).get("nominatedNodeName")):
            node = self.node_of.get(uid, "")
        self.add(new, node)

    def pod_deleted(self, pod: dict[str, Any]) -> None:
        self.delete(uid_of(pod))


class Preemption:
    """DefaultPreemption's PostFilter and the preparation of its candidate."""

    def __init__(self, *, client: clients.Client, pods: informers.Informer, pdbs: informers.Informer,
                 recorder: managers.EventRecorder, clock: clocks.Clock, rng: random.Random,
                 args: preemptions.Args = preemptions.DEFAULT_ARGS) -> None:
        self.client = client
        self.pods = pods
        self.pdbs = pdbs
        self.recorder = recorder
        self.clock = clock
        self.rng = rng
        self.args = args
        self.nominator = Nominator()
        self._log = logger
        nominator = self.nominator
        pods.add_handler(informers.Handlers(on_add=nominator.pod_added, on_update=nominator.pod_updated,
                                            on_delete=nominator.pod_deleted))

    def budgets(self) -> list[preemptions.PDB]:
        return [preemptions.PDB(obj) for obj in self.pdbs.cache.list()]

    def post_filter(self, *, pod: Mapping[str, Any], state: framework.CycleState,
                    nodes: Sequence[framework.NodeState], statuses: Mapping[str, plugins.Status],
                    absent: plugins.Status, filters: preemptions.Filters,
                    args: preemptions.Args | None = None) -> preemptions.Result:
        """`Evaluator.Preempt` on the informer's latest copy of the pod (`args`: the profile's
        DefaultPreemptionArgs, else the scheduler's)."""
        current = self.pods.cache.get(*caches.key_of(pod))
        if current is None or uid_of(current) != uid_of(pod):
            current = dict(pod)
        return preemptions.preempt(pod=current, state=state, nodes=nodes, statuses=statuses, absent=absent,
                                   filters=filters, pdbs=self.budgets(), rng=self.rng, now=self.clock.now(),
                                   args=args if args is not None else self.args)

    async def prepare(self, *, preemptor: Mapping[str, Any], candidate: preemptions.Candidate) -> None:
        """`prepareCandidateAsync` (run to completion here): clear the nominations of lower-priority
        pods to the node, then preempt each victim not already being deleted."""
        victims = []
        for victim in candidate.victims.pods:
            current = self.pods.cache.get(victim.namespace, victim.name)
            pod = current if current is not None and uid_of(current) == victim.uid else victim.pod
            if not meta_of(pod).get("deletionTimestamp"):  # graceful deletion already started: no call
                victims.append(pod)
        if not victims:
            return
        prio = preemptions.priority_of(preemptor)
        for other in self.nominator.pods_on(candidate.name):
            if other.priority < prio:
                await self.clear_nomination(other.pod)
        for pod in victims:
            await self._preempt_pod(preemptor, pod, candidate.name)

    async def clear_nomination(self, pod: Mapping[str, Any]) -> None:
        """`clearNominatedNodeName`: a status patch; the informer's update drops the nomination."""
        ns, name = caches.key_of(pod)
        current = self.pods.cache.get(ns, name) or pod
        if not status_of(current).get("nominatedNodeName"):
            return
        try:
            await self.client.patch(PODS, name, {"status": {"nominatedNodeName": None}}, namespace=ns,
                                    patch_type="strategic", subresource="status", field_manager=COMPONENT)
        except errors.StatusError as exc:
            self._log.info("clear_nomination_failed", namespace=ns, name=name, error=exc.message)

    async def _preempt_pod(self, preemptor: Mapping[str, Any], victim: Mapping[str, Any], node: str) -> None:
        """`PreemptPod`: DisruptionTarget=True (reason PreemptionByScheduler), delete, event."""
        ns, name = caches.key_of(victim)
        scheduler_name = str(spec_of(preemptor).get("schedulerName") or COMPONENT)
        message = f"{scheduler_name}: preempting to accommodate a higher priority pod"
        existing = next((c for c in status_of(victim).get("conditions") or []
                         if isinstance(c, Mapping) and c.get("type") == preemptions.DISRUPTION_TARGET), None)
        if existing is None or existing.get("status") != "True" or \
                existing.get("reason") != preemptions.REASON_PREEMPTION_BY_SCHEDULER or existing.get("message") != message:
            cond: dict[str, Any] = {
                "type": preemptions.DISRUPTION_TARGET, "status": "True",
                "reason": preemptions.REASON_PREEMPTION_BY_SCHEDULER, "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": (existing.get("lastTransitionTime")
                                       if existing is not None and existing.get("status") == "True"
                                       else clocks.rfc3339(self.clock.now()))}
            generation = meta_of(victim).get("generation")
            if generation:
                cond["observedGeneration"] = generation
            try:
                await self.client.patch(PODS, name, {"status": {"conditions": [cond]}}, namespace=ns,
                                        patch_type="strategic", subresource="status", field_manager=COMPONENT)
            except errors.NotFound:
                self._log.info("victim_already_deleted", namespace=ns, name=name, node=node)
                return
            except errors.StatusError as exc:
                self._log.info("disruption_target_failed", namespace=ns, name=name, node=node, error=exc.message)
                return
        try:
            await self.client.delete(PODS, name, namespace=ns)
        except errors.NotFound:
            self._log.info("victim_already_deleted", namespace=ns, name=name, node=node)
            return
        except errors.StatusError as exc:
            self._log.info("victim_delete_failed", namespace=ns, name=name, node=node, error=exc.message)
            return
        self._log.info("pod_preempted", namespace=ns, name=name, node=node,
                       preemptor=f"{meta_of(preemptor).get('namespace')}/{meta_of(preemptor).get('name')}")
        await self.recorder.normal(victim, "Preempted", f"Preempted by pod {uid_of(preemptor)} on node {node}")
