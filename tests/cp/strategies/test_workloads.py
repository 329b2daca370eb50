"""cp/strategies/workloads.py and core.py: initial statuses of the workload, policy and volume kinds as Go
serializes them, a Job's generated selector, a volume's phase transition time."""

from __future__ import annotations

from typing import Any

import pytest

from cp import clock as clocks
from cp import resources as res
from cp import strategies


def kind(group: str, name: str) -> res.ResourceKind:
    found = res.by_kind(group, name)
    assert found is not None
    return found


@pytest.mark.parametrize(("group", "name", "status"), [
    ("", "ReplicationController", {"replicas": 0}),
    ("apps", "StatefulSet", {"replicas": 0, "availableReplicas": 0}),
    ("apps", "DaemonSet", {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                           "numberReady": 0}),
    ("policy", "PodDisruptionBudget", {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                                       "expectedPods": 0}),
    ("", "PersistentVolumeClaim", {"phase": "Pending"}),
    ("batch", "Job", {}),
    ("batch", "CronJob", {}),
    ("", "ResourceQuota", {}),
])
def test_initial_status(group: str, name: str, status: dict[str, Any]) -> None:
    obj: dict[str, Any] = {"metadata": {"name": "x", "uid": "u"}, "spec": {}, "status": {"replicas": 7}}
    strategies.prepare_for_create(kind(group, name), obj, now=0)
    assert obj["status"] == status


def test_job_selector_is_generated_unless_manual() -> None:
    job: dict[str, Any] = {"metadata": {"name": "pi", "uid": "u-1"}, "spec": {"template": {"spec": {}}}}
    strategies.prepare_for_create(kind("batch", "Job"), job, now=0)
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}
    assert job["metadata"]["labels"] == job["spec"]["template"]["metadata"]["labels"]
    manual: dict[str, Any] = {"metadata": {"name": "pi", "uid": "u-1"},
                              "spec": {"manualSelector": True, "selector": {"matchLabels": {"a": "b"}}}}
    strategies.prepare_for_create(kind("batch", "Job"), manual, now=0)
    assert manual["spec"]["selector"] == {"matchLabels": {"a": "b"}}
    assert "labels" not in manual["spec"]["template"]["metadata"]
    assert "labels" not in manual["metadata"]


def test_volume_phase_transition_time() -> None:
    pv_kind = kind("", "PersistentVolume")
    pv: dict[str, Any] = {"metadata": {"name": "pv"}, "spec": {}}
    strategies.prepare_for_create(pv_kind, pv, now=100.0)
    assert pv["status"] == {"phase": "Pending", "lastPhaseTransitionTime": clocks.rfc3339(100.0)}
    written = {**pv, "status": {"phase": "Available", "lastPhaseTransitionTime": clocks.rfc3339(100.0)}}
    new = strategies.status_write(pv_kind, written, pv)
    strategies.prepare_for_update(pv_kind, new, pv, now=200.0, subresource="status")
    assert new["status"] == {"phase": "Available", "lastPhaseTransitionTime": clocks.rfc3339(200.0)}
    same = strategies.status_write(pv_kind, {**new, "status": {**new["status"], "message": "m"}}, new)
    strategies.prepare_for_update(pv_kind, same, new, now=300.0, subresource="status")
    assert same["status"]["lastPhaseTransitionTime"] == clocks.rfc3339(200.0)


def test_claim_data_sources_are_normalized() -> None:
    claim_kind = kind("", "PersistentVolumeClaim")
    source = {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap"}
    claim: dict[str, Any] = {"metadata": {"name": "c"}, "spec": {"dataSource": dict(source)}}
    strategies.prepare_for_create(claim_kind, claim, now=0)
    assert claim["spec"]["dataSourceRef"] == source
    claim = {"metadata": {"name": "c"}, "spec": {"dataSourceRef": dict(source)}}
    strategies.prepare_for_create(claim_kind, claim, now=0)
    assert claim["spec"]["dataSource"] == source
    remote = {**source, "namespace": "other"}
    claim = {"metadata": {"name": "c"}, "spec": {"dataSourceRef": dict(remote)}}
    strategies.prepare_for_create(claim_kind, claim, now=0)
    assert "dataSource" not in claim["spec"]


def test_daemon_set_template_generation() -> None:
    ds_kind = kind("apps", "DaemonSet")
    key = "deprecated.daemonset.template.generation"
    ds: dict[str, Any] = {"metadata": {"name": "agent", "annotations": {key: "7"}},
                          "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x:1"}]}}}}
    strategies.prepare_for_create(ds_kind, ds, now=0)
    assert ds["metadata"]["annotations"][key] == "1"
    same = {**ds, "metadata": {"name": "agent", "annotations": {key: "9"}}, "spec": {**ds["spec"], "minReadySeconds": 5}}
    strategies.prepare_for_update(ds_kind, same, ds, now=0, subresource="")
    assert same["metadata"]["annotations"][key] == "1"
    changed = {**ds, "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x:2"}]}}}}
    strategies.prepare_for_update(ds_kind, changed, ds, now=0, subresource="")
    assert changed["metadata"]["annotations"][key] == "2"
