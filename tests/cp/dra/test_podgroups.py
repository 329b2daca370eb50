"""Claims shared by a PodGroup: the cases of k8s.io/dynamic-resource-allocation's resourceclaim_test.go
(TestResourceClaimIsFor, TestIsReservedForPod, TestBindTo, TestNameFromPodGroup) against
`cp.dra.podgroups`."""

from __future__ import annotations

from typing import Any

import pytest

from cp.dra import podgroups as pg


def pod(name: str, uid: str, ns: str = "kube-system", group: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {} if group is None else {"schedulingGroup": {"podGroupName": group}}
    return {"metadata": {"namespace": ns, "name": name, "uid": uid}, "spec": spec}


def claim(name: str, ns: str = "kube-system", owner: dict[str, Any] | None = None,
          reserved: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": ns, "name": name}
    if owner is not None:
        meta["ownerReferences"] = [{**owner, "controller": True}]
    return {"metadata": meta, "status": {"reservedFor": reserved or []}}


GROUP_OWNER = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "name": "podGroupOwner", "uid": "4"}

# IsForPod with PodGroup owners accepted (the Pod-owner cases are `controllers.resourceclaim.is_for_pod`'s).
IS_FOR = [
    ("owned-by-podgroup", pod("podOwner", "3", group="podGroupOwner"), claim("claimWithPodGroupOwner", owner=GROUP_OWNER),
     True),
    ("owned-by-podgroup-other-api-version", pod("podOwner", "3", group="podGroupOwner"),
     claim("claimWithPodGroupOwner", owner={**GROUP_OWNER, "apiVersion": "scheduling.k8s.io/v25"}), True),
    ("other-podgroup", pod("podOwner", "3", group="podGroupNotOwner"),
     claim("claimWithPodGroupOwner", owner=GROUP_OWNER), False),
    ("no-podgroup-owner", pod("podOwner", "3", group="podGroupOwner"), claim("claimNoOwner"), False),
    ("different-podgroup-namespace", pod("podOwner", "3", group="podGroupOwner"),
     claim("userClaimWithPodGroupOwner", ns="user-namespace", owner={"uid": "4"}), False),
]


@pytest.mark.parametrize(("name", "the_pod", "the_claim", "want"), IS_FOR, ids=[c[0] for c in IS_FOR])
def test_is_for_pod_group_by_pod(name: str, the_pod: dict[str, Any], the_claim: dict[str, Any], want: bool) -> None:
    assert pg.is_for_pod_group_by_pod(the_pod, the_claim) is want


def group_ref(name: str, uid: str) -> dict[str, Any]:
    return {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": name, "uid": uid}


NO_RES = claim("claimNoReservation")
POD_RES = claim("claimWithReservation", reserved=[{"uid": "podReserved"}])
GROUP_RES = claim("claimWithPodGroupReservation", reserved=[group_ref("podGroupReserved", "gr")])
MULTI = claim("claimWithMultipleReservations", reserved=[{"uid": "podReserved"}, {"uid": "podOtherReserved"}])
MULTI_GROUP = claim("claimWithMultiplePodGroupReservations",
                    reserved=[group_ref("podGroupReserved", "gr"), group_ref("podGroupOtherReserved", "gor")])
POD_AND_GROUP = claim("claimWithReservationsForPodAndPodGroup", reserved=[{"uid": "podReserved"}, {"uid": "gr"}])

RESERVED = [
    ("not-reserved", pod("podNotReserved", "podNotReserved"), NO_RES, False, False),
    ("reserved-for-pod", pod("podReserved", "podReserved"), POD_RES, False, True),
    ("reserved-for-other-pod", pod("podNotReserved", "podNotReserved"), POD_RES, False, False),
    ("multiple-reservations-including-pod", pod("podReserved", "podReserved"), MULTI, False, True),
    ("multiple-reservations-excluding-pod", pod("podNotReserved", "podNotReserved"), MULTI, False, False),
    ("reserved-for-podgroup", pod("podNotReserved", "podNotReserved", group="podGroupReserved"), GROUP_RES, True, True),
    ("podgroup-disabled", pod("podNotReserved", "podNotReserved", group="podGroupReserved"), GROUP_RES, False, False),
    ("reserved-for-pod-and-podgroup", pod("podReserved", "podReserved", group="podGroupReserved"), POD_AND_GROUP,
     True, True),
    ("reserved-for-other-podgroup", pod("podNotReserved", "podNotReserved", group="podGroupNotReserved"), POD_RES,
     True, False),
    ("multiple-reservations-including-podgroup", pod("podNotReserved", "podNotReserved", group="podGroupReserved"),
     MULTI_GROUP, True, True),
    ("multiple-reservations-excluding-podgroup", pod("podNotReserved", "podNotReserved", group="podGroupNotReserved"),
     MULTI_GROUP, True, False),
]


@pytest.mark.parametrize(("name", "the_pod", "the_claim", "accept", "want"), RESERVED, ids=[c[0] for c in RESERVED])
def test_is_reserved_for_pod(name: str, the_pod: dict[str, Any], the_claim: dict[str, Any], accept: bool,
                             want: bool) -> None:
    assert pg.is_reserved_for_pod(the_pod, the_claim, accept_pod_group=accept) is want


NS, POD, GROUP = "my-namespace", "my-pod", "my-podgroup"
THE_POD = pod(POD, "pod-uid", ns=NS, group=GROUP)
POD_REF = {"resource": "pods", "name": POD, "uid": "pod-uid"}
GROUP_REF = group_ref(GROUP, "podgroup-uid")


def group_with(*claims: dict[str, Any], ns: str = NS, name: str = GROUP) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name, "uid": "podgroup-uid"}, "spec": {"resourceClaims": list(claims)}}


BY_NAME = {"name": "my-claim", "resourceClaimName": "my-resource-claim"}
BY_TEMPLATE = {"name": "my-claim", "resourceClaimTemplateName": "my-resource-claim"}
BIND_TO: list[tuple[str, dict[str, Any] | None, dict[str, Any], dict[str, Any] | str]] = [
    ("unsupported API in Pod", None, {"name": "my-claim"},
     "Pod my-namespace/my-pod claim my-claim: none of the supported fields are set"),
    ("Pod claim with ResourceClaimName", None, BY_NAME, POD_REF),
    ("Pod claim with ResourceClaimTemplateName", None, BY_TEMPLATE, POD_REF),
    ("Pod claim with ResourceClaimName matching PodGroup", group_with(BY_NAME), BY_NAME, GROUP_REF),
    ("Pod claim with ResourceClaimTemplateName matching PodGroup", group_with(BY_TEMPLATE), BY_TEMPLATE, GROUP_REF),
    ("Wrong PodGroup namespace for Pod", group_with(ns="not-" + NS), BY_NAME,
     "Pod my-namespace/my-pod belongs to PodGroup my-namespace/my-podgroup, not PodGroup not-my-namespace/my-podgroup"),
    ("Wrong PodGroup name for Pod", group_with(name="not-" + GROUP), BY_NAME,
     "Pod my-namespace/my-pod belongs to PodGroup my-namespace/my-podgroup, not PodGroup my-namespace/not-my-podgroup"),
    ("No matching claim in PodGroup", group_with({**BY_NAME, "name": "not-my-claim"}, {**BY_NAME, "name": "nor-my-claim"}),
     BY_NAME, POD_REF),
    ("Find matching claim in PodGroup", group_with({**BY_NAME, "name": "not-my-claim"},
                                                   {**BY_NAME, "name": "nor-my-claim"}, BY_NAME), BY_NAME, GROUP_REF),
    ("Claim name mismatch", group_with({**BY_NAME, "name": "not-my-claim"}), BY_NAME, POD_REF),
    ("Claim resourceClaimName mismatch", group_with({**BY_NAME, "resourceClaimName": "not-my-resource-claim"}),
     BY_NAME, POD_REF),
    ("Claim resourceClaimTemplateName mismatch",
     group_with({**BY_TEMPLATE, "resourceClaimTemplateName": "not-my-resource-claim"}), BY_TEMPLATE, POD_REF),
]


@pytest.mark.parametrize(("name", "group", "pod_claim", "want"), BIND_TO, ids=[c[0] for c in BIND_TO])
def test_bind_to(name: str, group: dict[str, Any] | None, pod_claim: dict[str, Any],
                 want: dict[str, Any] | str) -> None:
    if isinstance(want, str):
        with pytest.raises(ValueError, match=want.replace(".", r"\.")):
            pg.consumer_ref(THE_POD, group, pod_claim)
    else:
        assert pg.consumer_ref(THE_POD, group, pod_claim) == want


def test_name_from_pod_group() -> None:
    group = {"metadata": {"name": "g"}, "status": {"resourceClaimStatuses": [
        {"name": "gpu", "resourceClaimName": "g-gpu-abcde"}, {"name": "none"}]}}
    assert pg.name_from_pod_group(group, {"name": "gpu"}) == "g-gpu-abcde"
    assert pg.name_from_pod_group(group, {"name": "none"}) is None  # no claim was needed
    assert pg.name_from_pod_group(group, {"name": "missing"}) is None  # not created yet
