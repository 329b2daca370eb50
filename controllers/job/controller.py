"""The Job controller (kube-controller-manager's `job` controller, `pkg/controller/job`).

Per Job key (`namespace/name`), from the informer caches:

1. Jobs whose `spec.managedBy` names another controller are left alone; finished Jobs (Complete or
   Failed) only get the tracking finalizer removed from their remaining pods.
2. **Pods** are claimed as the ReplicaSet controller claims them (selector, controller reference,
   adoption of orphans after a live check). Every pod is created with the finalizer
   `batch.kubernetes.io/job-tracking`.
3. **Tracking** (upstream `trackJobStatusAndRemoveFinalizers`): a finished pod that still has the
   finalizer is first recorded in `status.uncountedTerminatedPods` (Indexed successes in
   `completedIndexes` instead), then its finalizer is removed, then the uids move to the
   `succeeded`/`failed` counters. A pod being deleted before it succeeded counts as failed unless
   only failed pods are replaced (podReplacementPolicy Failed or a pod failure policy: then it
   must reach phase Failed). The pod failure policy decides per failed pod: FailJob, Ignore (not
   counted), Count, FailIndex.
4. **Outcome**: FailureTarget (PodFailurePolicy, BackoffLimitExceeded, MaxFailedIndexesExceeded,
   FailedIndexes, DeadlineExceeded) or SuccessCriteriaMet (SuccessPolicy, CompletionsReached); then
   active pods are deleted, and once none is left terminating the terminal condition (Failed or
   Complete, same reason and message) is added — upstream's delayed terminal conditions.
5. **Pods**: suspended Jobs have their active pods deleted (`Suspended` condition; on resume the
   condition turns False and `startTime` is reset); otherwise missing pods are created (Indexed:
   lowest pending indexes first, with the index annotation and label, `JOB_COMPLETION_INDEX`,
   hostname `<job>-<index>`) after the exponential backoff since the last failure (10 s doubling to
   10 min, per index with backoffLimitPerIndex), and surplus pods are deleted.

Expectations (as the ReplicaSet controller's) keep a lagging informer from causing double
creation; uids whose finalizer was removed are remembered until the informer shows it, so a pod
is never counted twice; and the Job our last status write returned is used instead of the cached
one until the informer delivers that version, so a pass never counts from an older status.

Events (component `job-controller`): SuccessfulCreate, FailedCreate, SuccessfulDelete,
FailedDelete, Completed, Suspended, Resumed, and a Warning with the failure reason and message.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import structlog

from controllers import replicaset as rsc
from controllers.job import rules
from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import clock as clocks
from cp import errors
from cp.objects import labels_of, meta_of, spec_of, status_of, uid_of

NAME = "job"
COMPONENT = "job-controller"
FIELD_MANAGER = "job-controller"
JOBS = clients.resolve("jobs.batch")
PODS = clients.resolve("pods")
ORPHANS = "job-orphans"  # pod index: the namespace of pods without a controller (adoption candidates)
MAX_TRACKED_PER_PASS = 500  # upstream `MaxUncountedPods`: finished pods recorded per status write


def _orphan_namespace(obj: Mapping[str, Any]) -> list[str]:
    return [] if rsc.controller_ref(obj) is not None else [rsc.namespace_of(obj)]


INDEXERS = {caches.OWNER_UID: caches.by_owner_uid, ORPHANS: _orphan_namespace}
POD_RESOURCE = "pods"  # Request.resource of an orphan pod whose finalizer must go

logger = structlog.get_logger("cplane.controllers.job")


def _key(obj: Mapping[str, Any]) -> str:
    return rsc.key_of(obj)


def _phase(pod: Mapping[str, Any]) -> str:
    return str(status_of(pod).get("phase") or "")


def _has_finalizer(pod: Mapping[str, Any]) -> bool:
    return rules.TRACKING_FINALIZER in (meta_of(pod).get("finalizers") or [])


def _terminal(pod: Mapping[str, Any]) -> bool:
    return _phase(pod) in ("Succeeded", "Failed")


def _deleting(obj: Mapping[str, Any]) -> bool:
    return bool(meta_of(obj).get("deletionTimestamp"))


def _succeeded(pod: Mapping[str, Any], stopped_at: float | None = None) -> bool:
    """Succeeded, and not merely stopped by a deletion: the simulated kubelet reports a pod whose
    containers it stopped on delete as Succeeded, which a real container would not be (exit 143);
    a success that finished once the deletion was requested (`stopped_at`, when this controller
    deleted the pod; else the deletionTimestamp less the grace period) is not a completion."""
    if _phase(pod) != "Succeeded":
        return False
    meta = meta_of(pod)
    if not meta.get("deletionTimestamp"):
        return True
    try:
        requested = clocks.parse_time(str(meta["deletionTimestamp"])) - float(meta.get("deletionGracePeriodSeconds") or 0)
    except ValueError:
        requested = float("inf")
    if stopped_at is not None:
        requested = min(requested, stopped_at)
    return rules.finish_time(pod, requested) < requested


def _failed(pod: Mapping[str, Any], job: Mapping[str, Any], stopped_at: float | None = None) -> bool:
    """upstream `isPodFailed`: phase Failed; or, unless only failed pods are replaced, deleted
    before it succeeded (orphaned pods never reach Failed)."""
    if _phase(pod) == "Failed":
        return True
    if rules.only_replace_failed(job):
        return False
    return _deleting(pod) and not _succeeded(pod, stopped_at)


def _generation(obj: Mapping[str, Any]) -> int:
    return int(meta_of(obj).get("generation") or 0)


def _newer_or_same(written: Mapping[str, Any], cached: Mapping[str, Any]) -> bool:
    """Whether our last written copy may stand in for the cached Job: same uid and the spec has not
    moved on since (a user's change bumps the generation; our status writes do not)."""
    return uid_of(written) == uid_of(cached) and _generation(written) >= _generation(cached)


class _Backoff:
    """Failures since the last success and when the last one happened (upstream `backoffRecord`)."""

    __slots__ = ("failures", "last_failure", "seen")

    def __init__(self) -> None:
        self.failures = 0
        self.last_failure: float | None = None
        self.seen: set[str] = set()  # pod uids already accounted (a retried pass sees them again)


class JobController:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 recorder: managers.EventRecorder, clock: clocks.Clock) -> None:
        self.client = client
        self.recorder = recorder
        self.clock = clock
        self.expectations = rsc.Expectations(clock)
        self.removed_finalizers: dict[str, set[str]] = {}  # job key -> pod uids not yet seen without it
        self.backoff: dict[str, _Backoff] = {}
        # The Job as our last status write returned it, until the informer delivers that version: a
        # pass must not count from an older status (it would re-create pods already counted).
        self.written: dict[str, dict[str, Any]] = {}
        self.stopped: dict[str, float] = {}  # pod uid -> when this controller deleted it
        self.job_cache = informer_factory.informer(JOBS).cache
        self.pod_cache = informer_factory.informer(PODS, indexers=INDEXERS).cache

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=JOBS, map=self.map_job),
                managers.Watch(kind=PODS, map=self.map_pod, indexers=INDEXERS)]

    # ------------------------------------------------------------------ event mapping

    @staticmethod
    def _request(obj: Mapping[str, Any]) -> reconcile.Request:
        return reconcile.Request(namespace=rsc.namespace_of(obj), name=rsc.name_of(obj))

    def map_job(self, change: managers.Change) -> list[reconcile.Request]:
        key = _key(change.obj)
        mine = self.written.get(key)
        if mine is not None and (change.type == "delete" or not _newer_or_same(mine, change.obj) or
                                 meta_of(mine).get("resourceVersion") == meta_of(change.obj).get("resourceVersion")):
            del self.written[key]  # the informer caught up with our write, the spec moved on, or it is gone
        if change.type == "delete":
            self.expectations.delete(key)
            self.removed_finalizers.pop(key, None)
            self.backoff.pop(key, None)
        return [self._request(change.obj)]

    def job_of(self, pod: Mapping[str, Any]) -> dict[str, Any] | None:
        ref = rsc.controller_ref(pod)
        if ref is None or ref.get("kind") != "Job" or str(ref.get("apiVersion") or "").partition("/")[0] != "batch":
            return None
        job = self.job_cache.get(rsc.namespace_of(pod), str(ref.get("name") or ""))
        if job is None or uid_of(job) != str(ref.get("uid") or ""):
            return None
        return job

    def _orphan(self, pod: Mapping[str, Any]) -> list[reconcile.Request]:
        """A pod holding our finalizer whose Job is gone: its finalizer must go (upstream
        `handleOrphanPods`... the pod GC would otherwise wait forever)."""
        if _has_finalizer(pod) and rsc.controller_ref(pod) is not None and \
                (rsc.controller_ref(pod) or {}).get("kind") == "Job":
            return [reconcile.Request(namespace=rsc.namespace_of(pod), name=rsc.name_of(pod), resource=POD_RESOURCE)]
        return []

    def map_pod(self, change: managers.Change) -> list[reconcile.Request]:
        pod = change.obj
        job = self.job_of(pod)
        if change.type == "delete":
            if job is None:
                return []
            key = _key(job)
            self.expectations.deletion_observed(key, _key(pod))
            self.removed_finalizers.get(key, set()).discard(uid_of(pod))
            self.stopped.pop(uid_of(pod), None)
            return [self._request(job)]
        if job is None:
            if rsc.controller_ref(pod) is None:  # an orphan some Job may adopt
                return [self._request(j) for j in self.job_cache.list(rsc.namespace_of(pod))
                        if (sel := rsc.selector_of(j)) is not None and not sel.empty and sel.matches(labels_of(pod))]
            return self._orphan(pod)
        key = _key(job)
        if not _has_finalizer(pod):
            self.removed_finalizers.get(key, set()).discard(uid_of(pod))
        if change.type == "add":
            if _deleting(pod):
                self.expectations.deletion_observed(key, _key(pod))
            else:
                self.expectations.creation_observed(key)
        elif _deleting(pod) and not _deleting(change.old or {}):
            self.expectations.deletion_observed(key, _key(pod))
        return [self._request(job)]

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        if request.resource == POD_RESOURCE:
            await self._release_orphan(request.namespace, request.name)
            return None
        key = f"{request.namespace}/{request.name}"
        cached = self.job_cache.get(request.namespace, request.name)
        if cached is None:
            self.expectations.delete(key)
            return None
        mine = self.written.get(key)
        job = caches.deep_copy(mine if mine is not None and _newer_or_same(mine, cached) else cached)
        managed_by = spec_of(job).get("managedBy")
        if managed_by and managed_by != rules.CONTROLLER_NAME:
            return None
        selector = rsc.selector_of(job)
        if selector is None:
            raise reconcile.TerminalError(f"job {key}: invalid selector")
        # Pods we control that still match are ours without a write; the others (to release or to
        # adopt) go through the ReplicaSet's ref manager.
        pods: list[dict[str, Any]] = []
        others: list[dict[str, Any]] = []
        for pod in self.pod_cache.by_index(caches.OWNER_UID, uid_of(job)):
            if (rsc.controller_ref(pod) or {}).get("uid") != uid_of(job):
                continue
            (pods if selector.matches(labels_of(pod)) else others).append(pod)
        others += [p for p in self.pod_cache.by_index(ORPHANS, request.namespace) if not _terminal(p)]
        if others:
            manager = rsc.RefManager(client=self.client, controller=job, controller_kind=JOBS, dependent_kind=PODS,
                                     selector=selector, field_manager=FIELD_MANAGER,
                                     can_adopt=rsc.recheck_controller(self.client, JOBS, job))
            pods += await manager.claim(others)
        if rules.finished(job):
            expected = self.removed_finalizers.get(key, set())
            await self._remove_finalizers(job, [p for p in pods if _has_finalizer(p) and uid_of(p) not in expected])
            return None
        return await _Sync(self, job, pods).run()

    async def _release_orphan(self, namespace: str, name: str) -> None:
        pod = self.pod_cache.get(namespace, name)
        if pod is None or not _has_finalizer(pod) or self.job_of(pod) is not None:
            return
        ref = rsc.controller_ref(pod) or {}
        with contextlib.suppress(errors.NotFound):
            job = await self.client.get(JOBS, str(ref.get("name") or ""), namespace=namespace)
            if uid_of(job) == str(ref.get("uid") or ""):
                return  # the cache lags: the Job is there
        await self._remove_finalizers(None, [pod])

    # ------------------------------------------------------------------ writes

    async def _remove_finalizers(self, job: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]]) -> list[str]:
        """Drop the tracking finalizer from each pod (merge patch of the list, resourceVersion
        guard); returns the uids done (removed now, or the pod is gone)."""
        if not pods:
            return []
        expected = self.removed_finalizers.setdefault(_key(job), set()) if job is not None else set()

        async def one(pod: Mapping[str, Any]) -> str | None:
            finalizers = [f for f in meta_of(pod).get("finalizers") or [] if f != rules.TRACKING_FINALIZER]
            patch = {"metadata": {"resourceVersion": meta_of(pod).get("resourceVersion"),
                                  "finalizers": finalizers or None}}
            try:
                await self.client.patch(PODS, rsc.name_of(pod), patch, namespace=rsc.namespace_of(pod),
                                        field_manager=FIELD_MANAGER)
            except errors.NotFound:
                return uid_of(pod)
            except errors.StatusError as exc:
                logger.info("finalizer_removal_failed", pod=_key(pod), error=exc.message)
                return None
            expected.add(uid_of(pod))
            return uid_of(pod)

        results = await asyncio.gather(*(one(p) for p in pods))
        done = [uid for uid in results if uid is not None]
        if len(done) < len(pods):
            raise errors.Conflict(f"removing the tracking finalizer from {len(pods) - len(done)} pods failed")
        return done

    def pod_from_template(self, job: Mapping[str, Any], index: int | None, *, failures: int = 0,
                          ignored: int = 0) -> dict[str, Any]:
        """upstream `GetPodFromTemplate` plus the Job's additions: the tracking finalizer; for an
        index its annotation and label, the JOB_COMPLETION_INDEX env var, the hostname and the
        per-index failure counts."""
        template = caches.deep_copy(spec_of(job).get("template") or {})
        tmeta = template.get("metadata") or {}
        spec = template.get("spec") or {}
        meta: dict[str, Any] = {"generateName": rules.generate_name(rsc.name_of(job), index),
                                "namespace": rsc.namespace_of(job),
                                "ownerReferences": [rsc.new_controller_ref(job, JOBS)]}
        for field in ("labels", "annotations"):
            if tmeta.get(field):
                meta[field] = dict(tmeta[field])
        meta["finalizers"] = [*(f for f in tmeta.get("finalizers") or [] if f != rules.TRACKING_FINALIZER),
                              rules.TRACKING_FINALIZER]
        if index is not None:
            meta.setdefault("annotations", {})[rules.COMPLETION_INDEX] = str(index)
            meta.setdefault("labels", {})[rules.COMPLETION_INDEX] = str(index)
            if spec_of(job).get("backoffLimitPerIndex") is not None:
                meta["annotations"][rules.INDEX_FAILURE_COUNT] = str(failures)
                if ignored:
                    meta["annotations"][rules.INDEX_IGNORED_FAILURE_COUNT] = str(ignored)
            spec["hostname"] = f"{rsc.name_of(job)}-{index}"
            env_var = {"name": rules.COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
                "fieldPath": f"metadata.annotations['{rules.COMPLETION_INDEX}']"}}}
            for group in ("initContainers", "containers"):
                for container in spec.get(group) or []:
                    env = container.setdefault("env", [])
                    if not any(e.get("name") == rules.COMPLETION_INDEX_ENV for e in env):
                        env.append(dict(env_var))
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}

    async def create_pod(self, job: Mapping[str, Any], index: int | None, failures: int, ignored: int) -> None:
        pod = self.pod_from_template(job, index, failures=failures, ignored=ignored)
        await rsc.create_pod(self.client, self.recorder, job, pod)

    async def delete_pods(self, job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> None:
        if not pods:
            return
        key = _key(job)
        self.expectations.expect_deletions(key, [_key(p) for p in pods])

        async def one(pod: Mapping[str, Any]) -> None:
            self.stopped.setdefault(uid_of(pod), self.clock.now())
            try:
                await self.client.delete(PODS, rsc.name_of(pod), namespace=rsc.namespace_of(pod))
            except errors.NotFound:
                self.expectations.deletion_observed(key, _key(pod))
                return
            except errors.StatusError as exc:
                self.expectations.deletion_observed(key, _key(pod))
                await self.recorder.warning(job, "FailedDelete", f"Error deleting: {exc.message}")
                raise
            await self.recorder.normal(job, "SuccessfulDelete", f"Deleted pod: {rsc.name_of(pod)}")

        results = await asyncio.gather(*(one(p) for p in pods), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def write_status(self, job: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        if status == status_of(job):
            return job
        body = dict(job)
        body["status"] = status
        updated = await self.client.update_status(JOBS, body, field_manager=FIELD_MANAGER)
        self.written[_key(job)] = caches.deep_copy(updated)
        job.clear()
        job.update(updated)
        return job


class _Sync:
    """One pass over one Job (upstream `syncJob`)."""

    def __init__(self, ctl: JobController, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        self.ctl = ctl
        self.job = job
        self.pods = pods
        self.key = _key(job)
        self.now = ctl.clock.now()
        self.spec = spec_of(job)
        self.indexed = rules.is_indexed(job)
        self.completions = rules.completions_of(job)
        self.per_index = self.spec.get("backoffLimitPerIndex")
        self.policy = self.spec.get("podFailurePolicy")
        self.suspended = bool(self.spec.get("suspend"))
        self.status: dict[str, Any] = caches.deep_copy(status_of(job))
        self.conditions: list[dict[str, Any]] = [dict(c) for c in self.status.get("conditions") or []]
        self.events: list[tuple[str, str, str]] = []
        self.requeue: float | None = None

    # ---------------------------------------------------------------- helpers

    def _valid_index(self, ix: int | None) -> bool:
        return ix is not None and self.completions is not None and ix < self.completions

    def _target(self) -> Mapping[str, Any] | None:
        for type_ in (rules.FAILURE_TARGET, rules.SUCCESS_CRITERIA_MET):
            c = rules.condition(self.conditions, type_)
            if c is not None and c.get("status") == "True":
                return c
        return None

    def _add_target(self, type_: str, reason: str, message: str) -> None:
        if self._target() is None:
            rules.set_condition(self.conditions, type_=type_, status="True", reason=reason, message=message,
                                now=self.now)

    # ---------------------------------------------------------------- pass

    async def run(self) -> reconcile.Result | None:
        ctl, job = self.ctl, self.job
        uncounted = self.status.get("uncountedTerminatedPods") or {}
        unc_succeeded = set(uncounted.get("succeeded") or [])
        unc_failed = set(uncounted.get("failed") or [])
        expected = ctl.removed_finalizers.get(self.key, set())
        succeeded_ix = rules.parse_indexes(self.status.get("completedIndexes"), self.completions or 0) \
            if self.indexed else set()
        failed_ix = rules.parse_indexes(self.status.get("failedIndexes"), self.completions or 0) \
            if self.indexed and self.per_index is not None else set()
        target = self._target()
        fail_message: str | None = None
        to_release: list[dict[str, Any]] = []
        new_finished: list[tuple[float, bool, str]] = []  # (finish time, succeeded, uid) for the backoff
        for pod in self.pods:
            if not _has_finalizer(pod) or uid_of(pod) in expected:
                continue
            stopped_at = ctl.stopped.get(uid_of(pod))
            pod_failed = _failed(pod, job, stopped_at)
            if not (_phase(pod) == "Succeeded" or pod_failed or target is not None or _deleting(job)):
                continue  # still running, or terminating towards a verdict (upstream `canRemoveFinalizer`)
            if len(to_release) >= MAX_TRACKED_PER_PASS:
                self.requeue = 0.001  # the rest in the next pass
                break
            to_release.append(pod)
            uid = uid_of(pod)
            ix = rules.completion_index(pod)
            if _succeeded(pod, stopped_at) and uid not in unc_failed:
                if self.indexed:
                    if self._valid_index(ix) and ix not in succeeded_ix:
                        assert ix is not None
                        succeeded_ix.add(ix)
                        new_finished.append((rules.finish_time(pod, self.now), True, uid))
                elif uid not in unc_succeeded:
                    unc_succeeded.add(uid)
                    new_finished.append((rules.finish_time(pod, self.now), True, uid))
            elif pod_failed or (target is not None and not self.suspended) or _deleting(job):
                if uid in unc_failed or (self.indexed and not self._valid_index(ix)):
                    continue
                if self.suspended and _phase(pod) != "Failed":
                    continue  # stopped by the suspension: neither a success nor a failure
                match = rules.match_pod_failure_policy(self.policy, pod)
                if match.action == "FailJob" and fail_message is None and target is None:
                    fail_message = match.message
                if match.action == "FailIndex" and self._valid_index(ix):
                    assert ix is not None
                    failed_ix.add(ix)
                elif self.per_index is not None and self._valid_index(ix) and match.counts:
                    assert ix is not None
                    if rules.index_failure_count(pod) + 1 > int(self.per_index):
                        failed_ix.add(ix)
                if match.counts:
                    unc_failed.add(uid)
                    new_finished.append((rules.finish_time(pod, self.now), False, uid))
        self._record_backoff(new_finished)
        # 1. record the finished pods, 2. drop their finalizers, 3. move them to the counters
        self.status["uncountedTerminatedPods"] = _uncounted(unc_succeeded, unc_failed)
        if self.indexed:
            self.status["completedIndexes"] = rules.format_indexes(succeeded_ix)
            if self.per_index is not None:
                self.status["failedIndexes"] = rules.format_indexes(failed_ix)
        if to_release:
            await ctl.write_status(job, self._compact(self.status))
            done = set(await ctl._remove_finalizers(job, to_release))
        else:
            done = set()
        live_with_finalizer = {uid_of(p) for p in self.pods if _has_finalizer(p) and uid_of(p) not in expected
                               and uid_of(p) not in done}
        flush_s = {u for u in unc_succeeded if u not in live_with_finalizer}
        flush_f = {u for u in unc_failed if u not in live_with_finalizer}
        succeeded = len(succeeded_ix) if self.indexed else int(self.status.get("succeeded") or 0) + len(flush_s)
        failed = int(self.status.get("failed") or 0) + len(flush_f)
        self.status["uncountedTerminatedPods"] = _uncounted(unc_succeeded - flush_s, unc_failed - flush_f)
        self.status["succeeded"] = succeeded
        self.status["failed"] = failed

        active = [p for p in self.pods if not _terminal(p) and not _deleting(p)]
        terminating = [p for p in self.pods if _deleting(p) and not _terminal(p)]
        if _deleting(job):  # being deleted: only the tracking above (upstream skips manageJob)
            self.status.update(active=len(active), ready=sum(1 for p in active if rsc.is_pod_ready(p)),
                               terminating=len(terminating))
            await ctl.write_status(job, self._compact(self.status))
            return None
        # outcome
        if self._target() is None:
            self._judge(fail_message, failed, succeeded, failed_ix, succeeded_ix, active)
        target = self._target()
        if target is not None:
            await ctl.delete_pods(job, active)  # now terminating: the verdict waits for them
            terminating = [*terminating, *active]
            active = []
            unreleased = [p for p in self.pods if _has_finalizer(p) and uid_of(p) not in done]
            if not terminating and not unreleased:
                self._finish(target)
        else:
            active = await self._manage(active, terminating, succeeded_ix, failed_ix)
        self.status["active"] = len(active)
        self.status["ready"] = sum(1 for p in active if rsc.is_pod_ready(p))
        self.status["terminating"] = len(terminating)
        self.status["conditions"] = self.conditions
        await ctl.write_status(job, self._compact(self.status))
        for type_, reason, message in self.events:
            await ctl.recorder.event(job, type_, reason, message)
        return reconcile.Result(requeue_after=self.requeue) if self.requeue else None

    def _record_backoff(self, finished: Iterable[tuple[float, bool, str]]) -> None:
        """upstream `newBackoffRecord`: a success resets the failure count, each failure adds one."""
        record = self.ctl.backoff.setdefault(self.key, _Backoff())
        for when, ok, uid in sorted(finished):
            if uid in record.seen:
                continue
            record.seen.add(uid)
            if ok:
                record.failures = 0
                record.last_failure = None
            else:
                record.failures += 1
                record.last_failure = max(when, record.last_failure or when)

    def _judge(self, fail_message: str | None, failed: int, succeeded: int, failed_ix: set[int],
               succeeded_ix: set[int], active: Sequence[Mapping[str, Any]]) -> None:
        spec = self.spec
        start = self.status.get("startTime")
        if fail_message is not None:
            self._add_target(rules.FAILURE_TARGET, rules.REASON_POD_FAILURE_POLICY, fail_message)
        elif failed > (6 if spec.get("backoffLimit") is None else int(spec["backoffLimit"])):
            self._add_target(rules.FAILURE_TARGET, rules.REASON_BACKOFF_LIMIT, rules.MSG_BACKOFF_LIMIT)
        elif self.per_index is not None and spec.get("maxFailedIndexes") is not None and \
                len(failed_ix) > int(spec["maxFailedIndexes"]):
            self._add_target(rules.FAILURE_TARGET, rules.REASON_MAX_FAILED_INDEXES, rules.MSG_MAX_FAILED_INDEXES)
        elif not self.suspended and start and spec.get("activeDeadlineSeconds") is not None:
            deadline = clocks.parse_time(str(start)) + int(spec["activeDeadlineSeconds"])
            if self.now >= deadline:
                self._add_target(rules.FAILURE_TARGET, rules.REASON_DEADLINE, rules.MSG_DEADLINE)
            else:
                self.requeue = deadline - self.now
        if self._target() is not None:
            return
        if self.indexed and self.completions is not None:
            rule = rules.match_success_policy(spec.get("successPolicy"), succeeded_ix, self.completions)
            if rule is not None:
                self._add_target(rules.SUCCESS_CRITERIA_MET, rules.REASON_SUCCESS_POLICY,
                                 f"Matched rules at index {rule}")
            elif failed_ix and len(failed_ix | succeeded_ix) >= self.completions:
                self._add_target(rules.FAILURE_TARGET, rules.REASON_FAILED_INDEXES, rules.MSG_FAILED_INDEXES)
            elif len(succeeded_ix) >= self.completions:
                self._add_target(rules.SUCCESS_CRITERIA_MET, rules.REASON_COMPLETIONS_REACHED,
                                 rules.MSG_COMPLETIONS_REACHED)
        elif self.completions is None:
            if succeeded > 0 and not active:
                self._add_target(rules.SUCCESS_CRITERIA_MET, rules.REASON_COMPLETIONS_REACHED,
                                 rules.MSG_COMPLETIONS_REACHED)
        elif succeeded >= self.completions:
            self._add_target(rules.SUCCESS_CRITERIA_MET, rules.REASON_COMPLETIONS_REACHED,
                             rules.MSG_COMPLETIONS_REACHED)

    def _finish(self, target: Mapping[str, Any]) -> None:
        reason, message = str(target.get("reason") or ""), str(target.get("message") or "")
        if target.get("type") == rules.SUCCESS_CRITERIA_MET:
            rules.set_condition(self.conditions, type_=rules.COMPLETE, status="True", reason=reason,
                                message=message, now=self.now)
            self.status["completionTime"] = clocks.rfc3339(self.now)
            self.events.append(("Normal", "Completed", "Job completed"))
        else:
            rules.set_condition(self.conditions, type_=rules.FAILED, status="True", reason=reason,
                                message=message, now=self.now)
            self.events.append(("Warning", reason, message))
        self.ctl.backoff.pop(self.key, None)

    async def _manage(self, active: list[dict[str, Any]], terminating: Sequence[Mapping[str, Any]],
                      succeeded_ix: set[int], failed_ix: set[int]) -> list[dict[str, Any]]:
        """Suspend/resume, then create or delete pods (upstream `manageJob`); the active pods after it."""
        ctl, job = self.ctl, self.job
        if self.suspended:
            if rules.set_condition(self.conditions, type_=rules.SUSPENDED, status="True", reason="JobSuspended",
                                   message="Job suspended", now=self.now):
                self.events.append(("Normal", "Suspended", "Job suspended"))
            if active and ctl.expectations.satisfied(self.key):
                await ctl.delete_pods(job, active)
                return []
            return active
        if rules.set_condition(self.conditions, type_=rules.SUSPENDED, status="False", reason="JobResumed",
                               message="Job resumed", now=self.now):
            self.status["startTime"] = clocks.rfc3339(self.now)  # the deadline counts from the resume
            self.events.append(("Normal", "Resumed", "Job resumed"))
        elif not self.status.get("startTime"):
            self.status["startTime"] = clocks.rfc3339(self.now)
        if self.spec.get("activeDeadlineSeconds") is not None and self.requeue is None:
            deadline = clocks.parse_time(str(self.status["startTime"])) + int(self.spec["activeDeadlineSeconds"])
            self.requeue = max(deadline - self.now, 0.01)
        if not ctl.expectations.satisfied(self.key):
            return active
        parallelism = rules.parallelism_of(job)
        blocking = len(terminating) if rules.only_replace_failed(job) else 0
        if self.indexed:
            return await self._manage_indexed(active, terminating, succeeded_ix, failed_ix, parallelism, blocking)
        succeeded = int(self.status.get("succeeded") or 0)
        if self.completions is None:
            want = len(active) if succeeded > 0 else parallelism
        else:
            want = max(min(self.completions - succeeded, parallelism), 0)
        if len(active) > want:
            victims = rsc.rank_pods_for_deletion(active, active, self.now)[:len(active) - want]
            await ctl.delete_pods(job, victims)
            gone = {uid_of(p) for p in victims}
            return [p for p in active if uid_of(p) not in gone]
        count = want - len(active) - blocking
        if count <= 0 or not self._backoff_passed(ctl.backoff.get(self.key)):
            return active
        await self._create(count, [None] * count, {})
        return active

    def _backoff_passed(self, record: _Backoff | None) -> bool:
        if record is None:
            return True
        wait = rules.backoff_remaining(record.failures, record.last_failure, self.now)
        if wait > 0:
            self.requeue = min(self.requeue or wait, wait)
            return False
        return True

    async def _manage_indexed(self, active: list[dict[str, Any]], terminating: Sequence[Mapping[str, Any]],
                              succeeded_ix: set[int], failed_ix: set[int], parallelism: int,
                              blocking: int) -> list[dict[str, Any]]:
        ctl, job = self.ctl, self.job
        assert self.completions is not None
        # Pods of finished or out-of-range indexes, and duplicates of an index, are surplus.
        by_index: dict[int, list[dict[str, Any]]] = {}
        surplus: list[dict[str, Any]] = []
        for pod in active:
            ix = rules.completion_index(pod)
            if not self._valid_index(ix) or ix in succeeded_ix or ix in failed_ix:
                surplus.append(pod)
            else:
                assert ix is not None
                by_index.setdefault(ix, []).append(pod)
        for pods in by_index.values():
            surplus.extend(sorted(pods, key=rsc.by_creation)[1:])
        keep = [p for p in active if p not in surplus]
        if len(keep) > parallelism:
            extra = sorted(keep, key=lambda p: -(rules.completion_index(p) or 0))[:len(keep) - parallelism]
            surplus.extend(extra)
            keep = [p for p in keep if p not in extra]
        if surplus:
            await ctl.delete_pods(job, surplus)
            return keep
        busy = set(by_index)
        if rules.only_replace_failed(job):
            busy |= {ix for p in terminating if (ix := rules.completion_index(p)) is not None}
        room = parallelism - len(keep) - blocking
        pending = [ix for ix in range(self.completions) if ix not in succeeded_ix and ix not in failed_ix
                   and ix not in busy]
        if room <= 0 or not pending:
            return keep
        counts = self._index_failures()
        chosen: list[int | None] = []
        for ix in pending:
            if len(chosen) >= room:
                break
            if self.per_index is not None:
                failures, _ignored, last = counts.get(ix, (0, 0, None))
                wait = rules.backoff_remaining(failures, last, self.now)
                if wait > 0:
                    self.requeue = min(self.requeue or wait, wait)
                    continue
            chosen.append(ix)
        if self.per_index is None and not self._backoff_passed(ctl.backoff.get(self.key)):
            return keep
        await self._create(len(chosen), chosen, counts)
        return keep

    def _index_failures(self) -> dict[int, tuple[int, int, float | None]]:
        """Per index: (failures, ignored failures, last failure time) from its latest failed pod
        (upstream `getNewIndexFailureCounts` over the pod being replaced)."""
        out: dict[int, tuple[int, int, float | None]] = {}
        for pod in self.pods:
            ix = rules.completion_index(pod)
            if ix is None or not _failed(pod, self.job, self.ctl.stopped.get(uid_of(pod))):
                continue
            match = rules.match_pod_failure_policy(self.policy, pod)
            failures = rules.index_failure_count(pod) + (1 if match.counts else 0)
            ignored = rules.index_ignored_failure_count(pod) + (0 if match.counts else 1)
            when = rules.finish_time(pod, self.now)
            prev = out.get(ix)
            if prev is None or (failures, ignored) > prev[:2]:
                out[ix] = (failures, ignored, when if match.counts else (prev[2] if prev else None))
        return out

    async def _create(self, count: int, indexes: Sequence[int | None],
                      counts: Mapping[int, tuple[int, int, float | None]]) -> None:
        if count <= 0:
            return
        ctl = self.ctl
        ctl.expectations.expect_creations(self.key, count)
        todo = list(indexes[:count])

        async def one() -> None:
            ix = todo.pop(0)
            failures, ignored, _ = counts.get(ix, (0, 0, None)) if ix is not None else (0, 0, None)
            await ctl.create_pod(self.job, ix, failures, ignored)

        successes, error = await rsc.slow_start_batch(count, rsc.SLOW_START_INITIAL_BATCH, one)
        for _ in range(count - successes):
            ctl.expectations.creation_observed(self.key)
        if error is not None:
            raise error

    def _compact(self, status: dict[str, Any]) -> dict[str, Any]:
        """Go's omitempty for the int32 and string fields; `ready`, `terminating` (pointers) and
        `uncountedTerminatedPods` are always written, as upstream."""
        out = {k: v for k, v in status.items() if v not in (None, 0, "", [])}
        for keep in ("ready", "terminating"):
            if keep in status:
                out[keep] = status[keep]
        out["uncountedTerminatedPods"] = status.get("uncountedTerminatedPods") or {}
        return out


def _uncounted(succeeded: set[str], failed: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if succeeded:
        out["succeeded"] = sorted(succeeded)
    if failed:
        out["failed"] = sorted(failed)
    return out


def new(ctx: managers.ControllerContext, *, workers: int = 5) -> managers.Controller:
    controller = JobController(client=ctx.client, informer_factory=ctx.informers,
                               recorder=ctx.recorder(COMPONENT), clock=ctx.clock)
    return managers.Controller(name=NAME, reconciler=controller, watches=controller.watches(), workers=workers)
