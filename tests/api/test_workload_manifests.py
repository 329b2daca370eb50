"""Workload, volume and policy kinds over HTTP: what kube-apiserver answers to typical manifests of Jobs,
CronJobs, StatefulSets, DaemonSets, ReplicationControllers, PodDisruptionBudgets and persistent volumes
(defaults, generated selector, initial status), and upstream's 422 Status with causes for invalid creates
and forbidden updates.

In scope: the store applying defaulting, strategy and validation of these kinds. Out of scope: the rule
tables (tests/cp/validation) and the controllers that act on these objects.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp

NS = "/api/v1/namespaces/default"
BATCH = "/apis/batch/v1/namespaces/default"
APPS = "/apis/apps/v1/namespaces/default"


def template(restart: str = "Always") -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "web"}},
            "spec": {"restartPolicy": restart, "containers": [{"name": "web", "image": "nginx:1.27"}]}}


async def _send(http: aiohttp.ClientSession, method: str, path: str, obj: dict[str, Any]) -> tuple[int, Any]:
    async with http.request(method, path, json=obj) as r:
        return r.status, json.loads(await r.read())


async def test_job_created_with_generated_selector(http: aiohttp.ClientSession) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
           "spec": {"template": {"spec": {"restartPolicy": "Never",
                                          "containers": [{"name": "pi", "image": "perl:5.34"}]}}}}
    code, body = await _send(http, "POST", f"{BATCH}/jobs", job)
    assert code == 201, body
    uid = body["metadata"]["uid"]
    spec = body["spec"]
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert spec["template"]["metadata"]["labels"] == body["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "pi", "controller-uid": uid,
        "job-name": "pi"}
    assert {k: spec[k] for k in ("backoffLimit", "completions", "parallelism", "completionMode", "suspend",
                                 "manualSelector", "podReplacementPolicy")} == {
        "backoffLimit": 6, "completions": 1, "parallelism": 1, "completionMode": "NonIndexed", "suspend": False,
        "manualSelector": False, "podReplacementPolicy": "TerminatingOrFailed"}
    assert body["status"] == {} and body["metadata"]["generation"] == 1

    # The stored Job written back with a new image: the template of a running Job is immutable.
    body["spec"]["template"]["spec"]["containers"][0]["image"] = "perl:5.36"
    code, status = await _send(http, "PUT", f"{BATCH}/jobs/pi", body)
    assert code == 422, status
    assert (status["reason"], status["details"]["kind"], status["details"]["group"]) == ("Invalid", "Job", "batch")
    assert status["message"] == 'Job.batch "pi" is invalid: spec.template: Invalid value: {...}: field is immutable'
    assert status["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "spec.template",
                                            "message": "Invalid value: {...}: field is immutable"}]


async def test_invalid_cron_job(http: aiohttp.ClientSession) -> None:
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
            "spec": {"schedule": "TZ=UTC 0 3 * * *", "jobTemplate": {"spec": {"template": template("OnFailure")}}}}
    code, status = await _send(http, "POST", f"{BATCH}/cronjobs", cron)
    assert code == 422
    assert status["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.schedule",
        "message": 'Invalid value: "TZ=UTC 0 3 * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field '
                   "instead"}]
    cron["spec"].update(schedule="0 3 * * *", timeZone="Etc/UTC")
    code, body = await _send(http, "POST", f"{BATCH}/cronjobs", cron)
    assert code == 201, body
    assert (body["spec"]["concurrencyPolicy"], body["spec"]["successfulJobsHistoryLimit"]) == ("Allow", 3)


async def test_stateful_set_updates_only_what_upstream_allows(http: aiohttp.ClientSession) -> None:
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
           "spec": {"selector": {"matchLabels": {"app": "web"}}, "serviceName": "db", "template": template()}}
    code, body = await _send(http, "POST", f"{APPS}/statefulsets", sts)
    assert code == 201, body
    assert body["status"] == {"replicas": 0, "availableReplicas": 0}
    assert body["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    body["spec"]["replicas"] = 3
    code, body = await _send(http, "PUT", f"{APPS}/statefulsets/db", body)
    assert code == 200, body
    assert body["metadata"]["generation"] == 2
    body["spec"]["serviceName"] = "other"
    code, status = await _send(http, "PUT", f"{APPS}/statefulsets/db", body)
    assert code == 422
    assert status["message"] == (
        'StatefulSet.apps "db" is invalid: spec: Forbidden: updates to statefulset spec for fields other than '
        "'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', "
        "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")


async def test_initial_statuses(http: aiohttp.ClientSession) -> None:
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
          "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template()}}
    code, body = await _send(http, "POST", f"{APPS}/daemonsets", ds)
    assert code == 201, body
    assert body["status"] == {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                              "numberReady": 0}
    assert body["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "1"}
    body["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    code, body = await _send(http, "PUT", f"{APPS}/daemonsets/agent", body)
    assert code == 200, body
    assert body["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "2"}
    assert body["metadata"]["generation"] == 2
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"},
          "spec": {"template": template()}}
    code, body = await _send(http, "POST", f"{NS}/replicationcontrollers", rc)
    assert code == 201, body
    assert (body["spec"]["selector"], body["status"]) == ({"app": "web"}, {"replicas": 0})
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
           "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}
    code, body = await _send(http, "POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb)
    assert code == 201, body
    assert body["status"] == {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
    assert "unhealthyPodEvictionPolicy" not in body["spec"]
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"},
          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/d"}}}
    code, body = await _send(http, "POST", "/api/v1/persistentvolumes", pv)
    assert code == 201, body
    assert body["status"]["phase"] == "Pending" and body["status"]["lastPhaseTransitionTime"]
    assert body["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    # Volumes, claims and quotas keep no generation (their strategies never set one).
    assert "generation" not in body["metadata"]
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    code, body = await _send(http, "POST", f"{NS}/persistentvolumeclaims", claim)
    assert code == 201, body
    assert body["status"] == {"phase": "Pending"} and "generation" not in body["metadata"]


async def test_invalid_pod_disruption_budget(http: aiohttp.ClientSession) -> None:
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "both"},
           "spec": {"minAvailable": 1, "maxUnavailable": "10%"}}
    code, status = await _send(http, "POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb)
    assert code == 422
    assert [c["field"] for c in status["details"]["causes"]] == ["spec"]
