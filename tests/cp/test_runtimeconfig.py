"""`--runtime-config` as kube-apiserver reads it (`cp.runtimeconfig`): upstream's syntax, precedence
and error texts, and what a `Registry` serves with it (`cp.resources.OPTIONAL`, switched-off kinds).

Out of scope: serving through HTTP (tests/api/test_runtime_config.py)."""

from __future__ import annotations

import pytest

from cp import resources as res
from cp import runtimeconfig as rc


def parse(text: str) -> rc.RuntimeConfig:
    return rc.parse(text, group_versions=res.builtin_group_versions())


def served(config: rc.RuntimeConfig, group: str, version: str, plural: str) -> bool:
    return res.Registry(runtime=config).lookup(group, version, plural) is not None


def test_entries_as_configuration_map() -> None:
    assert rc.entries("a/v1=true, b/v1 ,c/v1=,,a/v1=false") == {"a/v1": "false", "b/v1": "", "c/v1": ""}
    assert rc.entries("") == {}


def test_default_serves_no_optional_version() -> None:
    registry = res.Registry()
    assert registry.lookup("resource.k8s.io", "v1beta2", "resourceclaims") is None
    assert ("resource.k8s.io", "v1beta2") not in registry.group_versions()
    assert all(not k.enabled_by_default for k in res.OPTIONAL)


@pytest.mark.parametrize("text", ["resource.k8s.io/v1beta2=true", "resource.k8s.io/v1beta2",
                                  "resource.k8s.io/v1beta2=1", "resource.k8s.io/v1beta2=T", "api/beta=true",
                                  "api/all=true", "api/all=false,resource.k8s.io/v1beta2=true,api/v1=true"])
def test_switching_v1beta2_on(text: str) -> None:
    assert served(parse(text), "resource.k8s.io", "v1beta2", "resourceclaims")


@pytest.mark.parametrize("text", ["resource.k8s.io/v1beta2=false", "api/alpha=true", "api/ga=true",
                                  "api/beta=true,resource.k8s.io/v1beta2=false",
                                  "resource.k8s.io/v1beta2=true,api/beta=false,resource.k8s.io/v1beta2=0"])
def test_v1beta2_stays_off(text: str) -> None:
    assert not served(parse(text), "resource.k8s.io", "v1beta2", "resourceclaims")


def test_matchers_apply_in_upstream_order() -> None:
    # api/all first, then api/ga, api/beta, api/alpha: whatever order they are written in
    config = parse("api/beta=true,api/all=false,api/v1=true")
    assert served(config, "resource.k8s.io", "v1beta2", "deviceclasses")
    assert not served(config, "apps", "v1", "deployments")
    assert served(config, "", "v1", "pods")  # api/v1 is the core group
    assert not parse("api/ga=false,api/beta=true").enabled(group="apps", version="v1", plural="deployments",
                                                           default=True)


def test_resource_entry_wins_over_its_version() -> None:
    config = parse("resource.k8s.io/v1beta2=true,resource.k8s.io/v1beta2/resourceslices=false")
    assert served(config, "resource.k8s.io", "v1beta2", "resourceclaims")
    assert not served(config, "resource.k8s.io", "v1beta2", "resourceslices")
    only = parse("resource.k8s.io/v1beta2/devicetaintrules=true")
    registry = res.Registry(runtime=only)
    assert [k.plural for k in registry.kinds_in("resource.k8s.io", "v1beta2")] == ["devicetaintrules"]


def test_switching_a_default_version_off() -> None:
    registry = res.Registry(runtime=parse("autoscaling/v1=false"))
    assert registry.lookup("autoscaling", "v1", "horizontalpodautoscalers") is None
    assert registry.lookup("autoscaling", "v2", "horizontalpodautoscalers") is not None
    assert ("autoscaling", "v1") not in registry.group_versions()
    assert ("autoscaling", "v2") in registry.group_versions()
    assert registry.off_group_versions() == {("autoscaling", "v1")}
    assert [k.plural for k in registry.off_kinds()] == ["horizontalpodautoscalers"]
    # the stored resource is still stored (its objects stay), only that version is not served
    assert registry.by_group_resource("autoscaling", "horizontalpodautoscalers") is not None


def test_discovery_order_and_preferred_version() -> None:
    registry = res.Registry(runtime=parse("api/beta=true"))
    versions = [v for g, v in registry.group_versions() if g == "resource.k8s.io"]
    assert versions == ["v1", "v1beta2", "v1beta1"]  # v1 stays the preferred version
    only_beta = res.Registry(runtime=parse("resource.k8s.io/v1=false,resource.k8s.io/v1beta2=true"))
    assert [v for g, v in only_beta.group_versions() if g == "resource.k8s.io"] == ["v1beta2"]


@pytest.mark.parametrize(("text", "message"), [
    ("api/all=false", "invalid runtime-config with only api/all=false"),
    ("api/all", "invalid value api/all="),
    ("api/beta=yes", "invalid value api/beta=yes"),
    ("example.com/v1=true", "unknown api groups example.com/v1"),
    ("b.example.com/v1,a.example.com/v2=false", "unknown api groups a.example.com/v2,b.example.com/v1"),
    ("resource.k8s.io/v9=true", "group version resource.k8s.io/v9 that has not been registered"),
    ("resource.k8s.io/v1beta2=yes",
     'invalid value of resource.k8s.io/v1beta2: yes, err: strconv.ParseBool: parsing "yes": invalid syntax'),
    ("resource.k8s.io/v1beta2/ResourceClaims=true",
     'invalid key resource.k8s.io/v1beta2/ResourceClaims: group/version/resource and resource is always '
     'lowercase plural, not "ResourceClaims"'),
    ("v1=true", "runtime-config invalid key v1"),
    ("a/b/c/d=true", "runtime-config invalid key a/b/c/d"),
])
def test_errors_as_upstream(text: str, message: str) -> None:
    with pytest.raises(rc.RuntimeConfigError) as info:
        parse(text)
    assert str(info.value) == message


def test_deprecation_warnings() -> None:
    by_kind = {k.kind: res.deprecation_warning(k) for k in res.OPTIONAL if k.version == "v1beta2"}
    assert by_kind["ResourceClaim"] == ("resource.k8s.io/v1beta2 ResourceClaim is deprecated in v1.36+, "
                                        "unavailable in v1.39+")
    assert by_kind["DeviceTaintRule"] == ""  # deprecated in 1.39 only
    assert all(res.deprecation_warning(k) == "" for k in res.SERVED)


def test_gated_versions_are_known_keys() -> None:
    # scheduling.k8s.io/v1beta1 is served by its feature gate; upstream also needs it in --runtime-config
    assert not parse("scheduling.k8s.io/v1beta1=true").empty


def test_alpha_device_taint_rules() -> None:
    registry = res.Registry(runtime=parse("api/alpha=true"))
    assert [k.plural for k in registry.kinds_in("resource.k8s.io", "v1alpha3")] == ["devicetaintrules"]
    assert not served(parse("api/beta=true"), "resource.k8s.io", "v1alpha3", "devicetaintrules")
    everything = res.Registry(runtime=parse("api/all=true"))
    assert [v for g, v in everything.group_versions() if g == "resource.k8s.io"] == [
        "v1", "v1beta2", "v1beta1", "v1alpha3"]
    (kind,) = everything.kinds_in("resource.k8s.io", "v1alpha3")
    assert res.deprecation_warning(kind) == ("resource.k8s.io/v1alpha3 DeviceTaintRule is deprecated in v1.36+, "
                                             "unavailable in v1.39+")


OTHER = [("admissionregistration.k8s.io", "v1beta1", "mutatingadmissionpolicies"),
         ("admissionregistration.k8s.io", "v1alpha1", "mutatingadmissionpolicybindings"),
         ("certificates.k8s.io", "v1beta1", "podcertificaterequests"),
         ("storagemigration.k8s.io", "v1beta1", "storageversionmigrations"),
         ("scheduling.k8s.io", "v1alpha3", "workloads")]


def test_other_groups_optional_versions_cost_nothing_by_default() -> None:
    from cp import features

    registry = res.Registry(features=features.FeatureGates({features.GENERIC_WORKLOAD: True}))
    assert not registry.gated_kinds() or all(k.enabled_by_default for k in registry.gated_kinds())
    assert all(registry.lookup(*gvr) is None for gvr in OTHER)


def test_other_groups_keys_and_discovery_order() -> None:
    from cp import features

    gates = features.FeatureGates({features.GENERIC_WORKLOAD: True})
    registry = res.Registry(runtime=parse("api/all=true"), features=gates)
    assert all(registry.lookup(*gvr) is not None for gvr in OTHER)
    order = registry.group_versions()
    assert [v for g, v in order if g == "admissionregistration.k8s.io"] == ["v1", "v1beta1", "v1alpha1"]
    assert [v for g, v in order if g == "scheduling.k8s.io"] == ["v1", "v1beta1", "v1alpha3"]
    # the stored resource of each is the default version's (one stored kind per resource)
    kinds = registry.kinds()
    assert len({(k.group, k.plural) for k in kinds}) == len(kinds)
    # scheduling.k8s.io/v1alpha3 also needs its gate, as upstream's storage
    assert res.Registry(runtime=parse("api/all=true")).lookup("scheduling.k8s.io", "v1alpha3", "workloads") is None


def test_deprecation_warnings_name_upstream_replacements() -> None:
    by_key = {(k.group, k.version, k.kind): res.deprecation_warning(k) for k in res.OPTIONAL}
    assert by_key[("certificates.k8s.io", "v1beta1", "ClusterTrustBundle")] == (
        "certificates.k8s.io/v1beta1 ClusterTrustBundle is deprecated in v1.37+, unavailable in v1.40+; "
        "use certificates.k8s.io/v1 ClusterTrustBundle")
    assert by_key[("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicy")] == (
        "admissionregistration.k8s.io/v1alpha1 MutatingAdmissionPolicy is deprecated in v1.35+, "
        "unavailable in v1.38+")
    assert by_key[("scheduling.k8s.io", "v1alpha3", "PodGroup")] == ""

