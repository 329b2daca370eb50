"""The Job controller end to end on a VirtualClock: the fleet runs the pods for
`sim.cplane.dev/run-seconds` of virtual time and exits them with `sim.cplane.dev/exit-code`; the
scheduler binds them; the Job controller creates, tracks (finalizers, uncounted pods), backs off,
fails and completes."""

from __future__ import annotations

from controllers.job import rules
from controllers.runtime import client as clients
from cp import clock as clocks
from tests.controllers.job import support as s
from tests.controllers.job.conftest import StartBatch
from tests.controllers.support import START


async def test_non_indexed_job_runs_to_completion(client: clients.Client, clock: clocks.VirtualClock,
                                                  start_batch: StartBatch) -> None:
    cluster = await start_batch()
    await client.create(s.JOBS, s.job("pi", completions=3, parallelism=2), namespace="default")
    first = await s.eventually(lambda: s.running(client, "pi", 2), what="two pods running")
    for pod in first:
        assert rules.TRACKING_FINALIZER in pod["metadata"]["finalizers"]
        assert pod["metadata"]["generateName"] == "pi-"
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
    job = await s.get_job(client, "pi")
    assert job["status"]["active"] == 2 and job["status"]["startTime"] == clocks.rfc3339(START)
    clock.advance(10)
    third = await s.eventually(lambda: s.running(client, "pi", 1), what="the third pod running")
    assert third[0]["metadata"]["name"] not in {p["metadata"]["name"] for p in first}
    clock.advance(10)
    done = await s.eventually(lambda: s.job_condition(client, "pi", rules.COMPLETE), what="Complete")
    status = done["status"]
    assert status["succeeded"] == 3 and "failed" not in status and "active" not in status
    assert status["ready"] == 0 and status["terminating"] == 0 and status["uncountedTerminatedPods"] == {}
    assert status["completionTime"] == clocks.rfc3339(START + 20)
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("SuccessCriteriaMet", "True", "CompletionsReached"), ("Complete", "True", "CompletionsReached")]
    assert s.condition(done, "Complete")["message"] == "Reached expected number of succeeded pods"  # type: ignore[index]
    pods = await s.pods_of(client, "pi")
    assert len(pods) == 3 and all(s.phase(p) == "Succeeded" for p in pods)
    assert all(rules.TRACKING_FINALIZER not in (p["metadata"].get("finalizers") or []) for p in pods)
    await cluster.settle()
    reasons = [e[1] for e in await s.events(client, "pi")]
    assert reasons.count("SuccessfulCreate") == 3 and reasons.count("Completed") == 1
    assert (await s.get_job(client, "pi"))["metadata"]["resourceVersion"] == done["metadata"]["resourceVersion"]


async def test_failed_pods_are_replaced_after_the_backoff_until_the_limit(
        client: clients.Client, clock: clocks.VirtualClock, start_batch: StartBatch) -> None:
    cluster = await start_batch()
    await client.create(s.JOBS, s.job("flaky", run=5, exit_code=1, backoffLimit=2), namespace="default")
    await s.eventually(lambda: s.running(client, "flaky", 1), what="first pod running")
    clock.advance(5)  # fails at +5: the replacement waits 10 s
    await s.eventually(lambda: s.job_failed_count(client, "flaky", 1), what="one failure counted")
    await cluster.settle()
    assert len(await s.pods_of(client, "flaky")) == 1
    clock.advance(9.9)
    await cluster.settle()
    assert len(await s.pods_of(client, "flaky")) == 1
    clock.advance(0.1)  # whole seconds: finishedAt has a precision of one second
    await s.eventually(lambda: s.running(client, "flaky", 1), what="second pod running")
    clock.advance(5)  # second failure: 20 s
    await s.eventually(lambda: s.job_failed_count(client, "flaky", 2), what="two failures counted")
    clock.advance(19.9)
    await cluster.settle()
    assert len(await s.pods_of(client, "flaky")) == 2
    clock.advance(0.1)
    await s.eventually(lambda: s.running(client, "flaky", 1), what="third pod running")
    clock.advance(5)
    failed = await s.eventually(lambda: s.job_condition(client, "flaky", rules.FAILED), what="Failed")
    assert failed["status"]["failed"] == 3
    target = s.condition(failed, "FailureTarget")
    assert target is not None and target["reason"] == "BackoffLimitExceeded"
    assert s.condition(failed, "Failed")["message"] == "Job has reached the specified backoff limit"  # type: ignore[index]
    await cluster.settle()
    assert len(await s.pods_of(client, "flaky")) == 3
    assert ("Warning", "BackoffLimitExceeded", "Job has reached the specified backoff limit") in \
        await s.events(client, "flaky")


async def test_fail_job_rule_of_the_pod_failure_policy(client: clients.Client, clock: clocks.VirtualClock,
                                                       start_batch: StartBatch) -> None:
    await start_batch()
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In",
                                                              "values": [42]}}]}
    await client.create(s.JOBS, s.job("strict", exit_code=42, completions=2, parallelism=2,
                                      podFailurePolicy=policy), namespace="default")
    pods = await s.eventually(lambda: s.running(client, "strict", 2), what="pods running")
    clock.advance(10)
    failed = await s.eventually(lambda: s.job_condition(client, "strict", rules.FAILED), what="Failed")
    cond = s.condition(failed, "Failed")
    assert cond is not None and cond["reason"] == "PodFailurePolicy"
    names = {p["metadata"]["name"] for p in pods}
    assert any(cond["message"] == f"Container main for pod default/{n} failed with exit code 42 matching "
               f"FailJob rule at index 0" for n in names), cond["message"]


async def test_suspended_job_starts_no_pod_until_resumed(client: clients.Client, clock: clocks.VirtualClock,
                                                         start_batch: StartBatch) -> None:
    cluster = await start_batch()
    await client.create(s.JOBS, s.job("held", run=100, suspend=True, completions=2, parallelism=2),
                        namespace="default")
    await s.eventually(lambda: s.job_condition(client, "held", rules.SUSPENDED), what="Suspended")
    clock.advance(30)
    await cluster.settle()
    assert await s.pods_of(client, "held") == []
    job = await s.get_job(client, "held")
    assert "startTime" not in job["status"]
    assert s.condition(job, "Suspended")["reason"] == "JobSuspended"  # type: ignore[index]
    await client.patch(s.JOBS, "held", {"spec": {"suspend": False}}, namespace="default")
    await s.eventually(lambda: s.running(client, "held", 2), what="pods running after resume")
    job = await s.get_job(client, "held")
    resumed = s.condition(job, "Suspended")
    assert resumed is not None and (resumed["status"], resumed["reason"]) == ("False", "JobResumed")
    assert job["status"]["startTime"] == clocks.rfc3339(START + 30)
    # Suspending again removes the running pods; they count neither as succeeded nor as failed.
    clock.advance(10)
    await client.patch(s.JOBS, "held", {"spec": {"suspend": True}}, namespace="default")
    await s.eventually(lambda: s.all_deleting(client, "held"), what="pods being deleted")
    clock.advance(30)  # the kubelet's shutdown (the pods' grace period)
    await s.eventually(lambda: s.no_pods(client, "held"), what="pods removed")
    await cluster.settle()
    job = await s.get_job(client, "held")
    assert "succeeded" not in job["status"] and "failed" not in job["status"] and "active" not in job["status"]
    reasons = [e[1] for e in await s.events(client, "held")]
    assert reasons.count("Suspended") == 2 and reasons.count("Resumed") == 1
    assert reasons.count("SuccessfulDelete") == 2


async def test_active_deadline_fails_the_job(client: clients.Client, clock: clocks.VirtualClock,
                                             start_batch: StartBatch) -> None:
    await start_batch()
    await client.create(s.JOBS, s.job("slow", run=1000, activeDeadlineSeconds=30), namespace="default")
    await s.eventually(lambda: s.running(client, "slow", 1), what="pod running")
    clock.advance(30)
    # FailureTarget first; the pod is deleted, and Failed follows once its containers have stopped
    # (on the clock: the kubelet's shutdown time).
    target = await s.eventually(lambda: s.job_condition(client, "slow", rules.FAILURE_TARGET), what="FailureTarget")
    assert s.condition(target, "FailureTarget")["reason"] == "DeadlineExceeded"  # type: ignore[index]
    await s.eventually(lambda: s.all_deleting(client, "slow"), what="pod being deleted")
    clock.advance(30)
    failed = await s.eventually(lambda: s.job_condition(client, "slow", rules.FAILED), what="Failed")
    assert s.condition(failed, "FailureTarget")["reason"] == "DeadlineExceeded"  # type: ignore[index]
    assert s.condition(failed, "Failed")["message"] == "Job was active longer than specified deadline"  # type: ignore[index]
    assert failed["status"]["failed"] == 1 and failed["status"]["terminating"] == 0

    async def warned() -> bool:
        return ("Warning", "DeadlineExceeded", "Job was active longer than specified deadline") in \
            await s.events(client, "slow")
    await s.eventually(warned, what="the DeadlineExceeded Event")
    await s.eventually(lambda: s.no_pods(client, "slow"), what="pod removed")



async def test_deleted_job_releases_its_pods(client: clients.Client, clock: clocks.VirtualClock,
                                             start_batch: StartBatch) -> None:
    """Background deletion: the garbage collector deletes the pods, and the Job controller removes
    the tracking finalizer of pods whose Job is gone, so they do not linger."""
    await start_batch(extra=("garbage-collector",))
    await client.create(s.JOBS, s.job("gone", run=1000, completions=2, parallelism=2), namespace="default")
    await s.eventually(lambda: s.running(client, "gone", 2), what="pods running")
    await client.delete(s.JOBS, "gone", namespace="default", propagation_policy="Background")

    async def released() -> bool:
        pods = await s.pods_of(client, "gone")
        return bool(pods) and all(rules.TRACKING_FINALIZER not in (p["metadata"].get("finalizers") or [])
                                  and p["metadata"].get("deletionTimestamp") for p in pods)
    await s.eventually(released, what="pods deleting without the tracking finalizer")
    clock.advance(30)
    await s.eventually(lambda: s.no_pods(client, "gone"), what="pods removed")


async def test_job_managed_by_another_controller_is_left_alone(client: clients.Client, clock: clocks.VirtualClock,
                                                               start_batch: StartBatch) -> None:
    cluster = await start_batch()
    await client.create(s.JOBS, s.job("theirs", managedBy="example.com/multikueue"), namespace="default")
    await client.create(s.JOBS, s.job("ours", managedBy="kubernetes.io/job-controller"), namespace="default")
    await s.eventually(lambda: s.running(client, "ours", 1), what="our Job's pod")
    await cluster.settle()
    assert await s.pods_of(client, "theirs") == []
    status = (await s.get_job(client, "theirs")).get("status") or {}
    assert "startTime" not in status and not status.get("conditions") and "uncountedTerminatedPods" not in status
