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
    ("GenericWorkload", "missing bool value for GenericWorkload"),
    ("GenericWorkload=yes", 'invalid value of GenericWorkload=yes, err: strconv.ParseBool: parsing "yes": invalid syntax'),
    ("DRAAdminAccess=false", "cannot set feature gate DRAAdminAccess to false, feature is locked to true"),
    ("DynamicResourceAllocation=false", "cannot set feature gate DynamicResourceAllocation to false, feature is locked "
                                        "to true"),
    ("DRADeviceBindingConditions=true,DRAExtendedResource=false,Nope=1",
     r"\[cannot set feature gate DRAExtendedResource to false, feature is locked to true, unrecognized feature gate: "
     r"Nope\]"),
    ("GangScheduling=true", "feature gate GangScheduling requires GenericWorkload to be enabled"),
])
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(features.FeatureGateError, match=message):
        features.parse(text)


def test_1_37_specs() -> None:
    specs = features.SPECS
    assert specs["DRAPrioritizedList"] == features.Spec(default=True, stage="GA", locked=True)
    assert specs["DRADeviceTaints"] == features.Spec(default=True, stage="GA", locked=False)
    assert specs["DRAPartitionableDevices"] == features.Spec(default=True, stage="BETA")
    assert specs["DRAConsumableCapacity"] == features.Spec(default=True, stage="BETA")
    assert specs["DRAListTypeAttributes"] == features.Spec(default=False, stage="ALPHA")
    assert features.DEFAULTS["GenericWorkload"] == (False, "BETA")


def test_values_as_go_parse_them_and_locked_gates_at_their_default() -> None:
    gates = features.parse("DRAPartitionableDevices=0,DRAListTypeAttributes=T,DRAAdminAccess=true")
    assert not gates.enabled(features.DRA_PARTITIONABLE_DEVICES)
    assert gates.enabled(features.DRA_LIST_TYPE_ATTRIBUTES) and gates.enabled(features.DRA_ADMIN_ACCESS)
    assert gates.overrides() == {"DRAPartitionableDevices": False, "DRAListTypeAttributes": True}


def test_all_alpha_and_all_beta() -> None:
    gates = features.parse("AllBeta=false,DRAConsumableCapacity=true")
    assert not gates.enabled(features.DRA_PARTITIONABLE_DEVICES)  # beta, set by AllBeta
    assert gates.enabled(features.DRA_CONSUMABLE_CAPACITY)  # named explicitly
    assert gates.enabled(features.DRA_PRIORITIZED_LIST)  # GA: not touched
    alpha = features.parse("AllAlpha=true,GenericWorkload=true")
    assert alpha.enabled(features.GANG_SCHEDULING) and alpha.enabled(features.DRA_LIST_TYPE_ATTRIBUTES)
    assert ("AllAlpha", "ALPHA", True) in alpha.states()


def test_help_lists_alpha_and_beta_gates_as_component_base() -> None:
    lines = features.known_features()
    assert lines == sorted(lines)
    assert "DRAPartitionableDevices=true|false (BETA - default=true)" in lines
    assert "DRAListTypeAttributes=true|false (ALPHA - default=false)" in lines
    assert "AllAlpha=true|false (ALPHA - default=false)" in lines
    assert not any(line.startswith(("DRAAdminAccess=", "DRADeviceTaints=")) for line in lines)  # GA: hidden


def test_binding_conditions_need_device_status() -> None:
    assert features.DEPENDENCIES[features.DRA_DEVICE_BINDING_CONDITIONS] == (
        features.DRA_RESOURCE_CLAIM_DEVICE_STATUS,)


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


def test_docs_table_lists_every_gate() -> None:
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "api.md").read_text()
    section = text[text.index("### Feature gates"):text.index("### One resource, several versions")]
    for name, spec in features.SPECS.items():
        row = next((line for line in section.splitlines() if line.startswith(f"| `{name}` |")), None)
        assert row is not None, name
        assert f"| {'true' if spec.default else 'false'} |" in row, name
