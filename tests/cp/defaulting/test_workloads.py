"""cp/defaulting/workloads.py: ReplicationController, PodTemplate, DaemonSet, StatefulSet, Job and CronJob
(pkg/apis/core/v1, apps/v1 and batch/v1 defaults.go with 1.37's feature gates)."""

from __future__ import annotations

from typing import Any

from tests.cp.defaulting.support import defaulted, twice_is_once


def template(**labels: str) -> dict[str, Any]:
    return {"metadata": {"labels": dict(labels) or {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}



def test_replication_controller_takes_selector_and_labels_from_template() -> None:
    obj = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"},
           "spec": {"template": template(app="web")}}
    out = defaulted(obj)
    assert out["spec"]["selector"] == {"app": "web"}
    assert out["metadata"]["labels"] == {"app": "web"}
    assert out["spec"]["replicas"] == 1
    assert out["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 30
    assert twice_is_once(obj)
    own = defaulted({**obj, "metadata": {"name": "rc", "labels": {"team": "a"}},
                     "spec": {"selector": {"app": "web"}, "replicas": 0, "template": template(app="web", v="2")}})
    assert (own["metadata"]["labels"], own["spec"]["selector"], own["spec"]["replicas"]) == \
        ({"team": "a"}, {"app": "web"}, 0)


def test_pod_template() -> None:
    obj = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": template()}
    out = defaulted(obj)
    assert out["template"]["spec"]["schedulerName"] == "default-scheduler"
    assert twice_is_once(obj)


def test_daemon_set() -> None:
    obj = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds"},
           "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template()}}
    out = defaulted(obj)
    assert out["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                             "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert out["spec"]["revisionHistoryLimit"] == 10
    assert out["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    assert twice_is_once(obj)
    on_delete = defaulted({**obj, "spec": {**obj["spec"], "updateStrategy": {"type": "OnDelete"}}})
    assert on_delete["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_stateful_set() -> None:
    claim = {"metadata": {"name": "data"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    obj = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
           "spec": {"selector": {"matchLabels": {"app": "web"}}, "serviceName": "db", "template": template(),
                    "volumeClaimTemplates": [claim]}}
    out = defaulted(obj)
    spec = out["spec"]
    assert (spec["podManagementPolicy"], spec["replicas"], spec["revisionHistoryLimit"]) == ("OrderedReady", 1, 10)
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert spec["volumeClaimTemplates"][0]["spec"]["volumeMode"] == "Filesystem"
    assert spec["volumeClaimTemplates"][0]["status"] == {"phase": "Pending"}
    assert twice_is_once(obj)
    on_delete = defaulted({**obj, "spec": {**obj["spec"], "updateStrategy": {"type": "OnDelete"}}})
    assert on_delete["spec"]["updateStrategy"] == {"type": "OnDelete"}


def job(**spec: Any) -> dict[str, Any]:
    tpl = template()
    tpl["spec"]["restartPolicy"] = "Never"
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"}, "spec": {"template": tpl, **spec}}


def test_job() -> None:
    out = defaulted(job())
    spec = out["spec"]
    assert {k: spec[k] for k in ("completions", "parallelism", "backoffLimit", "completionMode", "suspend",
                                 "podReplacementPolicy", "manualSelector")} == {
        "completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False,
        "podReplacementPolicy": "TerminatingOrFailed", "manualSelector": False}
    assert out["metadata"]["labels"] == {"app": "web"}
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert twice_is_once(job())


def test_job_parallel_and_per_index_backoff() -> None:
    spec = defaulted(job(parallelism=3))["spec"]
    assert "completions" not in spec and spec["parallelism"] == 3
    spec = defaulted(job(completions=5))["spec"]
    assert (spec["completions"], spec["parallelism"]) == (5, 1)
    spec = defaulted(job(completionMode="Indexed", completions=3, backoffLimitPerIndex=1))["spec"]
    assert spec["backoffLimit"] == 2**31 - 1


def test_job_pod_failure_policy() -> None:
    policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    spec = defaulted(job(podFailurePolicy=policy))["spec"]
    assert spec["podFailurePolicy"]["rules"][0]["onPodConditions"] == [{"type": "DisruptionTarget", "status": "True"}]
    assert spec["podReplacementPolicy"] == "Failed"


def test_cron_job() -> None:
    tpl = template()
    tpl["spec"]["restartPolicy"] = "OnFailure"
    obj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "hello"},
           "spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {"template": tpl}}}}
    out = defaulted(obj)
    spec = out["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"], spec["successfulJobsHistoryLimit"],
            spec["failedJobsHistoryLimit"]) == ("Allow", False, 3, 1)
    # The job template's spec keeps what the Job defaults would add; its pod template is defaulted.
    assert set(spec["jobTemplate"]["spec"]) == {"template"}
    assert spec["jobTemplate"]["spec"]["template"]["spec"]["schedulerName"] == "default-scheduler"
    assert twice_is_once(obj)
