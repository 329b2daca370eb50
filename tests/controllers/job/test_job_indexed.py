"""Indexed Jobs end to end on a VirtualClock: the index annotation, label, env var and hostname; a
failing index under backoffLimitPerIndex and a FailIndex rule; a success policy ending the Job
early. One pod's behaviour is changed by patching its `sim.cplane.dev/...` annotations while it runs
(the fleet reads them when the run ends)."""

from __future__ import annotations

from controllers.fleet import objects as fleet_objects
from controllers.job import rules
from controllers.runtime import client as clients
from cp import clock as clocks
from tests.controllers.job import support as s
from tests.controllers.job.conftest import StartBatch


def by_index(pods: list[dict[str, object]]) -> dict[int, dict[str, object]]:
    return {int(p["metadata"]["annotations"][rules.COMPLETION_INDEX]): p for p in pods}  # type: ignore[index]


async def annotate(client: clients.Client, pod: dict[str, object], **values: str) -> None:
    await client.patch("pods", pod["metadata"]["name"], {"metadata": {"annotations": values}},  # type: ignore[index]
                       namespace="default")


async def test_indexed_pods_carry_their_index(client: clients.Client, clock: clocks.VirtualClock,
                                              start_batch: StartBatch) -> None:
    await start_batch()
    await client.create(s.JOBS, s.job("idx", completions=3, parallelism=3, completionMode="Indexed"),
                        namespace="default")
    pods = by_index(await s.eventually(lambda: s.running(client, "idx", 3), what="three pods"))
    assert sorted(pods) == [0, 1, 2]
    for ix, pod in pods.items():
        meta, spec = pod["metadata"], pod["spec"]  # type: ignore[index]
        assert meta["generateName"] == f"idx-{ix}-" and meta["labels"][rules.COMPLETION_INDEX] == str(ix)
        assert spec["hostname"] == f"idx-{ix}"
        assert {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}} \
            in spec["containers"][0]["env"]
    clock.advance(10)
    done = await s.eventually(lambda: s.job_condition(client, "idx", rules.COMPLETE), what="Complete")
    assert done["status"]["completedIndexes"] == "0-2" and done["status"]["succeeded"] == 3


async def test_a_failing_index_obeys_the_pod_failure_policy(client: clients.Client, clock: clocks.VirtualClock,
                                                            start_batch: StartBatch) -> None:
    cluster = await start_batch()
    policy = {"rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [42]}},
                        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [7]}}]}
    await client.create(s.JOBS, s.job("shards", completions=4, parallelism=4, completionMode="Indexed",
                                      backoffLimitPerIndex=1, podFailurePolicy=policy), namespace="default")
    pods = by_index(await s.eventually(lambda: s.running(client, "shards", 4), what="four pods"))
    await annotate(client, pods[2], **{fleet_objects.EXIT_CODE: "42"})  # FailIndex: no retry
    await annotate(client, pods[3], **{fleet_objects.EXIT_CODE: "7"})  # Ignore: retried, not counted
    clock.advance(10)
    retried = await s.eventually(lambda: s.running(client, "shards", 1), what="index 3 retried")
    assert retried[0]["metadata"]["annotations"][rules.COMPLETION_INDEX] == "3"
    assert retried[0]["metadata"]["annotations"][rules.INDEX_FAILURE_COUNT] == "0"
    assert retried[0]["metadata"]["annotations"][rules.INDEX_IGNORED_FAILURE_COUNT] == "1"
    job = await s.get_job(client, "shards")
    assert job["status"]["failedIndexes"] == "2" and job["status"]["completedIndexes"] == "0,1"
    assert job["status"]["failed"] == 1  # index 2's; index 3's ignored failure is not counted
    clock.advance(10)
    failed = await s.eventually(lambda: s.job_condition(client, "shards", rules.FAILED), what="Failed")
    status = failed["status"]
    assert status["completedIndexes"] == "0,1,3" and status["failedIndexes"] == "2" and status["succeeded"] == 3
    cond = s.condition(failed, "Failed")
    assert cond is not None and (cond["reason"], cond["message"]) == ("FailedIndexes", "Job has failed indexes")
    await cluster.settle()
    assert len(await s.pods_of(client, "shards")) == 5


async def test_success_policy_ends_the_job_early(client: clients.Client, clock: clocks.VirtualClock,
                                                 start_batch: StartBatch) -> None:
    await start_batch()
    await client.create(s.JOBS, s.job("leader", completions=3, parallelism=3, completionMode="Indexed",
                                      successPolicy={"rules": [{"succeededIndexes": "0"}]}), namespace="default")
    pods = by_index(await s.eventually(lambda: s.running(client, "leader", 3), what="three pods"))
    for ix in (1, 2):
        await annotate(client, pods[ix], **{fleet_objects.RUN_SECONDS: "1000"})
    clock.advance(10)
    await s.eventually(lambda: s.job_condition(client, "leader", rules.SUCCESS_CRITERIA_MET), what="SuccessCriteriaMet")
    clock.advance(30)  # the other indexes' pods stop (the kubelet's shutdown)
    done = await s.eventually(lambda: s.job_condition(client, "leader", rules.COMPLETE), what="Complete")
    met = s.condition(done, "SuccessCriteriaMet")
    assert met is not None and (met["reason"], met["message"]) == ("SuccessPolicy", "Matched rules at index 0")
    assert s.condition(done, "Complete")["reason"] == "SuccessPolicy"  # type: ignore[index]
    assert done["status"]["completedIndexes"] == "0" and done["status"]["succeeded"] == 1
    assert done["status"]["failed"] == 2  # the workers stopped by the success count as failed, as upstream
