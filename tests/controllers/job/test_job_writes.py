"""The Job controller's reconcile against a fake client, sample-controller style: the finalizer
tracking protocol's order of writes (record in uncountedTerminatedPods, remove the finalizer, move
to the counters), never counting a pod twice while the informer lags, and the expectations that
keep a lagging informer from causing a second creation."""

from __future__ import annotations

from typing import Any

from controllers import job as jobs
from controllers.job import rules
from controllers.runtime import reconcile
from tests.controllers.support import seeded_informers
from tests.controllers.workload_support import START, WorkloadFakeClient, controller_ref, recorder, replay

UID_LABEL = "batch.kubernetes.io/controller-uid"


def job_obj(**spec: Any) -> dict[str, Any]:
    labels = {UID_LABEL: "job-uid", "batch.kubernetes.io/job-name": "pi"}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "pi", "namespace": "default", "uid": "job-uid", "labels": dict(labels)},
            "spec": {"completions": 2, "parallelism": 2, "backoffLimit": 6, "completionMode": "NonIndexed",
                     "selector": {"matchLabels": {UID_LABEL: "job-uid"}},
                     "template": {"metadata": {"labels": dict(labels)},
                                  "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "b"}]}},
                     **spec},
            "status": {}}


def _controller(fake: WorkloadFakeClient) -> tuple[jobs.JobController, Any]:
    factory = seeded_informers(fake)
    ctl = jobs.JobController(client=fake, informer_factory=factory,  # type: ignore[arg-type]
                             recorder=recorder(fake, jobs.COMPONENT), clock=fake.clock)
    return ctl, factory


def _maps(ctl: jobs.JobController) -> dict[str, Any]:
    return {"pods": ctl.map_pod, "jobs.batch": ctl.map_job}


REQ = reconcile.Request(namespace="default", name="pi")


async def test_finished_pods_are_recorded_then_released_then_counted() -> None:
    fake = WorkloadFakeClient()
    job = fake.put("jobs.batch", job_obj())
    ctl, factory = _controller(fake)
    replay(fake, factory, _maps(ctl))
    await ctl.reconcile(REQ)
    created = fake.creates("pods")
    assert len(created) == 2
    assert created[0]["metadata"]["finalizers"] == [rules.TRACKING_FINALIZER]
    assert created[0]["metadata"]["ownerReferences"] == [controller_ref(job)]
    replay(fake, factory, _maps(ctl))
    pods = sorted((o for (gr, _ns, _n), o in fake.objects.items() if gr == "pods"), key=lambda p: p["metadata"]["name"])
    for p in pods:
        p["status"] = {"phase": "Succeeded", "containerStatuses": [{"name": "c", "state": {"terminated": {
            "exitCode": 0, "finishedAt": "2027-01-15T08:00:05Z"}}}]}
    fake.actions.clear()
    replay(fake, factory, _maps(ctl))
    await ctl.reconcile(REQ)
    writes = [(a.verb, a.resource, a.subresource) for a in fake.non_event_writes()]
    assert writes == [("update", "jobs.batch", "status"), ("patch", "pods", ""), ("patch", "pods", ""),
                      ("update", "jobs.batch", "status")]
    first, last = fake.non_event_writes()[0].body["status"], fake.non_event_writes()[-1].body["status"]
    uids = sorted(p["metadata"]["uid"] for p in pods)
    assert first["uncountedTerminatedPods"] == {"succeeded": uids} and "succeeded" not in first
    assert last["uncountedTerminatedPods"] == {} and last["succeeded"] == 2
    assert [c["type"] for c in last["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert last["completionTime"] == "2027-01-15T08:00:00Z" and START == 1_800_000_000.0
    for p in pods:
        assert not fake.stored("pods", p["metadata"]["name"], "default")["metadata"].get("finalizers")  # type: ignore[index]

    # The informer still shows the pods with the finalizer and the Job before its status: no pod is
    # recorded, released or counted again.
    # Nothing is created either: the pass counts from the status it wrote, not the cached one.
    fake.actions.clear()
    await ctl.reconcile(REQ)
    assert fake.non_event_writes() == []
    replay(fake, factory, _maps(ctl))
    fake.actions.clear()
    await ctl.reconcile(REQ)
    assert fake.non_event_writes() == []


async def test_expectations_hold_creation_until_the_informer_sees_the_pods() -> None:
    fake = WorkloadFakeClient()
    fake.put("jobs.batch", job_obj(completions=3, parallelism=3))
    ctl, factory = _controller(fake)
    replay(fake, factory, _maps(ctl))
    await ctl.reconcile(REQ)
    assert len(fake.creates("pods")) == 3
    await ctl.reconcile(REQ)  # the informer has not reported them: nothing more
    assert len(fake.creates("pods")) == 3
    replay(fake, factory, _maps(ctl))
    await ctl.reconcile(REQ)
    assert len(fake.creates("pods")) == 3
