"""cp/validation/batch.py (and the Job strategy): Jobs and CronJobs as pkg/apis/batch/validation checks them,
with pkg/registry/batch/job's generated selector."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cp import strategies
from tests.cp.validation.rules import changed, create_errors, kind_of, prepared, update_errors

UID = "0b5d3a57-6c3e-4d5e-9a0e-2f7f2a2b1c01"


def template(restart: str = "Never", **labels: str) -> dict[str, Any]:
    return {"metadata": {"labels": dict(labels)} if labels else {},
            "spec": {"restartPolicy": restart, "containers": [{"name": "pi", "image": "perl:5.34"}]}}


def job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi", "uid": UID},
            "spec": {"template": template(), **spec}}


def stored(obj: dict[str, Any]) -> dict[str, Any]:
    """As the store keeps a created object: defaulted, then prepared for create."""
    out = prepared(obj)
    strategies.prepare_for_create(kind_of(out), out, now=0.0)
    return out


def test_generated_selector_and_labels() -> None:
    out = stored(job())
    assert out["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}
    labels = {"controller-uid": UID, "batch.kubernetes.io/controller-uid": UID, "job-name": "pi",
              "batch.kubernetes.io/job-name": "pi"}
    assert out["spec"]["template"]["metadata"]["labels"] == labels
    assert out["metadata"]["labels"] == labels  # a Job without labels shows its template's
    assert create_errors(job()) == []
    own = stored({**job(), "metadata": {"name": "pi", "uid": UID, "labels": {"team": "a"}}})
    assert own["metadata"]["labels"] == {"team": "a"}


def test_manual_selector() -> None:
    manual = job(manualSelector=True, selector={"matchLabels": {"app": "pi"}})
    manual["spec"]["template"] = template(app="pi")
    assert create_errors(manual) == []
    assert stored(manual)["spec"]["selector"] == {"matchLabels": {"app": "pi"}}
    manual["spec"]["template"] = template(app="other")
    assert create_errors(manual) == [
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"other"}: '
        "`selector` does not match template `labels`"]
    assert create_errors(job(manualSelector=True)) == ["spec.selector: Required value"]


def test_wrong_generated_labels() -> None:
    obj = job()
    obj["spec"]["template"] = template(**{"controller-uid": "other"})
    assert create_errors(obj) == [
        'spec.template.metadata.labels[controller-uid]: Invalid value: map[string]string{"batch.kubernetes.io/'
        f'controller-uid":"{UID}", "batch.kubernetes.io/job-name":"pi", "controller-uid":"other", "job-name":"pi"}}: '
        f"must be '{UID}'"]


@pytest.mark.parametrize(("spec", "expected"), [
    ({"parallelism": -1}, ["spec.parallelism: Invalid value: -1: must be greater than or equal to 0"]),
    ({"backoffLimit": -1}, ["spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0"]),
    ({"activeDeadlineSeconds": -5},
     ["spec.activeDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0"]),
    ({"completionMode": "Sometimes"},
     ['spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"']),
    ({"completionMode": "Indexed", "parallelism": 3},
     ["spec.completions: Required value: when completion mode is Indexed"]),
    ({"backoffLimitPerIndex": 1, "completions": 3},
     ["spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"]),
    ({"completionMode": "Indexed", "completions": 3, "maxFailedIndexes": 4, "backoffLimitPerIndex": 1},
     ["spec.maxFailedIndexes: Invalid value: 4: must be less than or equal to completions"]),
    ({"completionMode": "Indexed", "completions": 200_000, "parallelism": 20_000, "backoffLimitPerIndex": 1},
     ["spec.maxFailedIndexes: Required value: must be specified when completions is above 100000",
      "spec.parallelism: Invalid value: 20000: must be less than or equal to 10000 when completions are above "
      "100000 and used with backoff limit per index"]),
    ({"successPolicy": {"rules": [{"succeededCount": 1}]}},
     ["spec.successPolicy: Invalid value: {...}: requires indexed completion mode"]),
    ({"completionMode": "Indexed", "completions": 3, "successPolicy": {"rules": [{"succeededIndexes": "0-1,1"}]}},
     ['spec.successPolicy.rules[0].succeededIndexes: Invalid value: "0-1,1": error parsing succeededIndexes: '
      "non-increasing order, previous: 1, current: 1"]),
    ({"podFailurePolicy": {"rules": [{"action": "Ignore"}]}},
     ["spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is "
      "required"]),
    ({"podFailurePolicy": {"rules": [{"onExitCodes": {"values": [3, 1, 3]}}]}},
     ['spec.podFailurePolicy.rules[0].action: Required value: valid values: ["Count" "FailIndex" "FailJob" '
      '"Ignore"]',
      'spec.podFailurePolicy.rules[0].onExitCodes.operator: Required value: valid values: ["In" "NotIn"]',
      "spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 3",
      "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{3, 1, 3}: must be ordered"]),
    ({"completionMode": "Indexed", "completions": 3, "maxFailedIndexes": 1},
     ["spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified"]),
    ({"podReplacementPolicy": "Sometimes"},
     ['spec.podReplacementPolicy: Unsupported value: "Sometimes": supported values: "Failed", '
      '"TerminatingOrFailed"']),
    ({"podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]},
      "podReplacementPolicy": "TerminatingOrFailed"},
     ['spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed"']),
    ({"podFailurePolicy": {"rules": [{"action": "Explode", "onExitCodes": {"operator": "In", "values": [0, 1]}}]}},
     ['spec.podFailurePolicy.rules[0].action: Unsupported value: "Explode": supported values: "Count", '
      '"FailIndex", "FailJob", "Ignore"',
      "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator"]),
])
def test_job_spec(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(job(**spec)) == expected


def test_job_restart_policy() -> None:
    obj = job()
    obj["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    assert create_errors(obj) == ['spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", '
                                  '"Never"']
    policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    obj = job(podFailurePolicy=policy)
    obj["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    assert create_errors(obj) == [
        'spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when '
        "podFailurePolicy is specified"]


def test_job_update_immutable_fields() -> None:
    old = stored(job())
    new = changed(old, lambda o: o["spec"].update(completions=3, completionMode="Indexed"))
    assert update_errors(new, old) == [
        "spec.completions: Invalid value: 3: can only be modified in tandem with spec.parallelism",
        "spec.completionMode: Invalid value: \"Indexed\": field is immutable"]
    new = changed(old, lambda o: o["spec"].update(completions=3))
    assert update_errors(new, old) == ["spec.completions: Invalid value: 3: field is immutable"]
    new = changed(old, lambda o: o["spec"]["template"]["spec"]["containers"][0].update(image="perl:5.36"))
    assert update_errors(new, old) == ["spec.template: Invalid value: {...}: field is immutable"]
    new = changed(old, lambda o: o["spec"]["selector"]["matchLabels"].update(extra="x"))
    # ValidateJob, then ValidateJobUpdate validating the spec again: upstream reports spec errors twice.
    assert [e.split(": ")[0] for e in update_errors(new, old)] == [
        "spec.selector", "spec.template.metadata.labels", "spec.template.metadata.labels", "spec.selector"]
    assert update_errors(new, old)[0].endswith("`selector` not auto-generated")
    assert update_errors(changed(old, lambda o: o["spec"].update(parallelism=5, suspend=True)), old) == []


def test_suspended_job_may_change_scheduling_directives() -> None:
    old = stored(job(suspend=True))
    new = changed(old, lambda o: o["spec"]["template"]["spec"].update(nodeSelector={"zone": "a"}))
    assert update_errors(new, old) == []
    new = changed(old, lambda o: o["spec"]["template"]["spec"].update(hostname="x"))
    assert update_errors(new, old) == ["spec.template: Invalid value: {...}: field is immutable"]


def test_suspended_job_node_affinity_only() -> None:
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"a": "b"}}}]}}
    old = stored(job(suspend=True))
    old["spec"]["template"]["spec"]["affinity"] = affinity
    node = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}
    new = changed(old, lambda o: o["spec"]["template"]["spec"]["affinity"].update(nodeAffinity=node))
    assert update_errors(new, old) == []
    new = changed(old, lambda o: o["spec"]["template"]["spec"].update(affinity={"nodeAffinity": node}))
    assert update_errors(new, old) == ["spec.template: Invalid value: {...}: field is immutable"]


def test_indexed_job_pod_hostnames() -> None:
    name = "a" * 62
    obj = job(completionMode="Indexed", completions=10)
    obj["metadata"]["name"] = name
    assert create_errors(obj)[-1] == (f'metadata.name: Invalid value: "{name}": will not able to create pod with '
                                      f"invalid DNS label: {name}-9")


def test_elastic_indexed_job() -> None:
    old = stored(job(completionMode="Indexed", completions=3, parallelism=3))
    assert update_errors(changed(old, lambda o: o["spec"].update(completions=5, parallelism=5)), old) == []
    assert update_errors(changed(old, lambda o: o["spec"].update(completions=5)), old) == [
        "spec.completions: Invalid value: 5: can only be modified in tandem with spec.parallelism"]


def test_job_status() -> None:
    old = stored(job())
    new = changed(old, lambda o: o.update(status={"active": 1, "ready": 2, "failed": -1}))
    assert update_errors(new, old, "status") == [
        "status.failed: Invalid value: -1: must be greater than or equal to 0",
        "status.ready: Invalid value: 2: cannot set more ready pods than active"]


# ---------------------------------------------------------------- CronJob

def cron_job(name: str = "hello", **spec: Any) -> dict[str, Any]:
    body = {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {"template": template("OnFailure")}}}
    body.update(spec)
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name}, "spec": body}


@pytest.mark.parametrize(("spec", "expected"), [
    ({"schedule": ""}, ["spec.schedule: Required value"]),
    ({"schedule": "not a schedule"},
     ['spec.schedule: Invalid value: "not a schedule": expected exactly 5 fields, found 3: [not a schedule]']),
    ({"schedule": "0 0 31 2-13 *"},
     ['spec.schedule: Invalid value: "0 0 31 2-13 *": end of range (13) above maximum (12): 2-13']),
    ({"schedule": "@fortnightly"}, ['spec.schedule: Invalid value: "@fortnightly": unrecognized descriptor: '
                                    "@fortnightly"]),
    ({"schedule": "TZ=Europe/Paris 0 * * * *"},
     ['spec.schedule: Invalid value: "TZ=Europe/Paris 0 * * * *": cannot use TZ or CRON_TZ in schedule, use '
      "timeZone field instead"]),
    ({"timeZone": "Mars/Olympus"}, ['spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus']),
    ({"timeZone": ""}, ['spec.timeZone: Invalid value: "": timeZone must be nil or non-empty string']),
    ({"timeZone": "Local"},
     ['spec.timeZone: Invalid value: "Local": timeZone must be an explicit time zone as defined in '
      "https://www.iana.org/time-zones"]),
    ({"concurrencyPolicy": "Sometimes"},
     ['spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"']),
    ({"successfulJobsHistoryLimit": -1},
     ["spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0"]),
    ({"startingDeadlineSeconds": -1},
     ["spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0"]),
])
def test_cron_job_spec(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(cron_job(**spec)) == expected


def test_cron_job_valid_schedules() -> None:
    for schedule in ("@hourly", "0 9 * * MON-FRI", "*/15 0-6 1,15 jan-jun ?", "@every 1h30m"):
        assert create_errors(cron_job(schedule=schedule)) == [], schedule
    assert create_errors(cron_job(timeZone="Europe/Paris")) == []


def test_cron_job_template_selector_is_generated() -> None:
    obj = cron_job()
    obj["spec"]["jobTemplate"]["spec"].update(selector={"matchLabels": {"a": "b"}}, manualSelector=True)
    assert create_errors(obj) == [
        'spec.jobTemplate.spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"a":"b"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` will be auto-generated",
        'spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: "nil", "false"']
    obj = cron_job()
    obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    assert create_errors(obj) == ['spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid '
                                  'values: "OnFailure", "Never"']


def test_cron_job_name_and_update() -> None:
    long_name = "a" * 53
    assert create_errors(cron_job(long_name)) == [
        f'metadata.name: Invalid value: "{long_name}": must be no more than 52 characters']
    old = cron_job(long_name)
    new = copy.deepcopy(old)
    new["spec"]["schedule"] = "0 * * * *"
    assert update_errors(new, old) == []  # the name limit is not checked again
    tz_old = cron_job(schedule="TZ=UTC 0 * * * *")
    assert update_errors(cron_job(schedule="CRON_TZ=UTC 5 * * * *"), tz_old) == []
    assert update_errors(cron_job(schedule="TZ=UTC 5 * * * *", timeZone="UTC"), tz_old) == [
        'spec.schedule: Invalid value: "TZ=UTC 5 * * * *": cannot use both timeZone field and TZ or CRON_TZ in '
        "schedule"]
