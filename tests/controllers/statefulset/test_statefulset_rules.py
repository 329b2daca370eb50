"""controllers/statefulset/rules.py: names and ordinals, a new pod's identity and storage, the
versioned pod below and above the partition, claims and their owner references under each retention
policy, stale claims, maxUnavailable, the status numbers and the completed rolling update."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.statefulset import rules

UID = "set-uid"


def _set(*, replicas: int = 3, start: int | None = None, policy: dict[str, str] | None = None,
         partition: int | None = 0, image: str = "i", max_unavailable: Any = None) -> dict[str, Any]:
    rolling: dict[str, Any] = {}
    if partition is not None:
        rolling["partition"] = partition
    if max_unavailable is not None:
        rolling["maxUnavailable"] = max_unavailable
    spec: dict[str, Any] = {
        "replicas": replicas, "serviceName": "svc", "selector": {"matchLabels": {"app": "web"}},
        "updateStrategy": {"type": "RollingUpdate", **({"rollingUpdate": rolling} if partition is not None
                                                       or max_unavailable is not None else {})},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "c", "image": image}],
                              "volumes": [{"name": "data", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}]}},
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}],
        "persistentVolumeClaimRetentionPolicy": policy or {"whenDeleted": "Retain", "whenScaled": "Retain"}}
    if start is not None:
        spec["ordinals"] = {"start": start}
    return {"metadata": {"name": "web", "namespace": "ns", "uid": UID}, "spec": spec, "status": {}}


def test_names_and_ordinals() -> None:
    assert rules.parent_and_ordinal({"metadata": {"name": "my-web-12"}}) == ("my-web", 12)
    assert rules.parent_and_ordinal({"metadata": {"name": "web"}}) == ("", -1)
    s = _set(start=5, replicas=2)
    assert (rules.start_ordinal(s), rules.end_ordinal(s)) == (5, 6)
    assert rules.in_range(s, {"metadata": {"name": "web-6"}}) and not rules.in_range(s, {"metadata": {"name": "web-4"}})
    assert rules.is_member(s, {"metadata": {"name": "web-0"}}) and not rules.is_member(s, {"metadata": {"name": "web2-0"}})


def test_new_pod() -> None:
    pod = rules.new_pod(_set(), 1)
    assert pod["metadata"]["name"] == "web-1" and pod["spec"]["hostname"] == "web-1"
    assert pod["spec"]["subdomain"] == "svc"
    assert pod["metadata"]["labels"] == {"app": "web", rules.POD_NAME_LABEL: "web-1", rules.POD_INDEX_LABEL: "1"}
    assert pod["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
                                                   "uid": UID, "controller": True, "blockOwnerDeletion": True}]
    # The claim replaces the template's volume of the same name; other volumes stay.
    assert pod["spec"]["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-1"}},
                                      {"name": "tmp", "emptyDir": {}}]
    assert rules.identity_matches(_set(), pod) and rules.storage_matches(_set(), pod)
    pod["metadata"]["labels"].pop(rules.POD_INDEX_LABEL)
    assert not rules.identity_matches(_set(), pod)


def test_versioned_pod_and_partition() -> None:
    current, update = _set(partition=2, image="old"), _set(partition=2, image="new")
    low = rules.versioned_pod(current, update, "r1", "r2", 1)
    high = rules.versioned_pod(current, update, "r1", "r2", 2)
    assert (low["spec"]["containers"][0]["image"], low["metadata"]["labels"][rules.REVISION_LABEL]) == ("old", "r1")
    assert (high["spec"]["containers"][0]["image"], high["metadata"]["labels"][rules.REVISION_LABEL]) == ("new", "r2")


def test_apply_revision() -> None:
    rev = {"data": {"spec": {"template": {"$patch": "replace", "metadata": {"labels": {"app": "web"}},
                                          "spec": {"containers": [{"name": "c", "image": "rev"}]}}}}}
    applied = rules.apply_revision(_set(), rev)
    assert applied["spec"]["template"] == {"metadata": {"labels": {"app": "web"}},
                                           "spec": {"containers": [{"name": "c", "image": "rev"}]}}


def _pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "uid": f"uid-{name}"}}


@pytest.mark.parametrize(("deleted", "scaled", "in_range_owner", "scaled_owner"), [
    ("Retain", "Retain", None, None),
    ("Delete", "Retain", "StatefulSet", "StatefulSet"),
    ("Retain", "Delete", None, "Pod"),
    ("Delete", "Delete", "StatefulSet", "Pod"),
])
def test_claim_owner_refs(deleted: str, scaled: str, in_range_owner: str | None, scaled_owner: str | None) -> None:
    s = _set(replicas=2, policy={"whenDeleted": deleted, "whenScaled": scaled})
    foreign = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "cm"}
    claim = {"metadata": {"name": "data-web-1", "ownerReferences": [foreign]}}
    for pod, owner in ((_pod("web-1"), in_range_owner), (_pod("web-5"), scaled_owner)):
        refs = rules.wanted_claim_refs(s, pod, claim)
        assert refs[0] == foreign
        assert [r["kind"] for r in refs[1:]] == ([owner] if owner else [])
        assert all(r["controller"] is True for r in refs[1:])
        assert not rules.claim_refs_match(s, pod, claim) or owner is None
        assert rules.claim_refs_match(s, pod, {"metadata": {"ownerReferences": refs}})
    # Someone else's controller: ours are scrubbed, nothing added.
    other = {"apiVersion": "v1", "kind": "Thing", "name": "t", "uid": "t", "controller": True}
    assert rules.wanted_claim_refs(s, _pod("web-1"), {"metadata": {"ownerReferences": [other]}}) == [other]


def test_claims_and_staleness() -> None:
    claims = rules.claims_for(_set(), 2)
    assert list(claims) == ["data"]
    assert claims["data"]["metadata"] == {"name": "data-web-2", "namespace": "ns", "labels": {"app": "web"}}
    old_owner = {"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "web-2", "uid": "x"}]}}
    assert rules.claim_is_stale(old_owner, "web-2")
    assert rules.claim_is_stale({"metadata": {"deletionTimestamp": "2027-01-01T00:00:00Z"}}, "web-2")
    assert not rules.claim_is_stale({"metadata": {}}, "web-2")


def test_max_unavailable() -> None:
    assert rules.max_unavailable(_set(), 10) == 1
    assert rules.max_unavailable(_set(max_unavailable=3), 10) == 3
    assert rules.max_unavailable(_set(max_unavailable="25%"), 10) == 2  # rounds down
    assert rules.max_unavailable(_set(max_unavailable="5%"), 10) == 1  # at least one


def _status_pod(rev: str, *, phase: str = "Running", ready: bool = True, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": {rules.REVISION_LABEL: rev}}
    if deleting:
        meta["deletionTimestamp"] = "2027-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False"}]}}


def test_status() -> None:
    pods = [_status_pod("r1"), _status_pod("r2"), _status_pod("r2", ready=False), _status_pod("r1", deleting=True),
            {"metadata": {"labels": {rules.REVISION_LABEL: "r2"}}}]  # not created yet
    numbers = rules.replica_status(pods, min_ready=0, now=0.0, current="r1", update="r2")
    assert numbers == {"replicas": 4, "readyReplicas": 3, "availableReplicas": 3, "currentReplicas": 1,
                       "updatedReplicas": 2}
    s = _set(replicas=2)
    status = {"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2, "currentReplicas": 0,
              "currentRevision": "r1", "updateRevision": "r2"}
    rules.complete_rolling_update(s, status)
    assert status["currentRevision"] == "r2" and status["currentReplicas"] == 2
