"""Feature gates: 1.37's defaults, `--feature-gates` parsing, dependencies, and the API versions a
registry serves with them."""

from __future__ import annotations

import pytest

from cp import features
from cp import resources as res


def test_defaults_are_those_of_a_default_1_37_cluster() -> None:
    gates = features.FeatureGates()
    for name in (features.GENERIC_WORKLOAD, features.GANG_SCHEDULING, features.DRA_WORKLOAD_RESOURCE_CLAIMS):
        assert not gates.enabled(name)
    assert gates == features.DEFAULT and gates.overrides() == {}


def test_parse() -> None:
    gates = features.parse("GenericWorkload=true, GangScheduling=TRUE")
    assert gates.enabled(features.GANG_SCHEDULING)
    assert gates.overrides() == {"GenericWorkload": True, "GangScheduling": True}
    assert features.parse("") == features.DEFAULT


@pytest.mark.parametrize(("text", "message"), [
    ("Nope=true", "unrecognized feature gate: Nope"),
    ("GenericWorkload", "invalid value of GenericWorkload: want NAME=true|false"),
    ("GenericWorkload=yes", "invalid value of GenericWorkload=yes"),
    ("GangScheduling=true", "feature gate GangScheduling requires GenericWorkload to be enabled"),
])
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(features.FeatureGateError, match=message):
        features.parse(text)


def test_a_gate_whose_dependency_is_off_is_off() -> None:
    assert not features.FeatureGates({features.GANG_SCHEDULING: True}).enabled(features.GANG_SCHEDULING)


def test_workload_api_is_served_only_with_generic_workload() -> None:
    off = res.Registry()
    assert off.lookup("scheduling.k8s.io", "v1beta1", "podgroups") is None
    assert ("scheduling.k8s.io", "v1beta1") not in off.group_versions()
    on = res.Registry(features=features.FeatureGates({features.GENERIC_WORKLOAD: True}))
    assert [k.kind for k in on.kinds_in("scheduling.k8s.io", "v1beta1")] == ["PodGroup", "Workload"]
    gvs = on.group_versions()
    assert gvs.index(("scheduling.k8s.io", "v1beta1")) == gvs.index(("scheduling.k8s.io", "v1")) + 1
    assert on.by_kind("scheduling.k8s.io", "PodGroup") is res.gated_kind("scheduling.k8s.io", "podgroups")
    assert {k.kind for k in on.kinds()} >= {"PodGroup", "Workload", "Pod"}
    # custom resources come and go beside them
    on.set_custom("x", ())
    assert on.lookup("scheduling.k8s.io", "v1beta1", "workloads") is not None
