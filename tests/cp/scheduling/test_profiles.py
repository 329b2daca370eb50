"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): decoding, defaults and validation,
`mergePlugins` (cases ported from upstream's default_plugins_test), the expansion of multiPoint to
the extension points, score weights, pluginConfig args reaching the plugin factories, and the
choice between the fused core filters and the individual plugin classes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from cp.scheduling import framework, profiles
from cp.scheduling.profiles import ConfigError, PluginRef, PluginSet

HEAD = {"apiVersion": profiles.API_VERSION, "kind": profiles.KIND}


def config(**fields: Any) -> profiles.SchedulerConfig:
    return profiles.parse_config({**HEAD, **fields})


def refs(*items: str | tuple[str, int]) -> tuple[PluginRef, ...]:
    return tuple(PluginRef(i) if isinstance(i, str) else PluginRef(*i) for i in items)


# ---------------------------------------------------------------------- mergePluginSet

# (default set, custom set, merged) — upstream TestMergePlugins with its synthetic plugin names
MERGE_CASES = [
    pytest.param(PluginSet(refs("DefaultPlugin1", "DefaultPlugin2")), PluginSet(refs("CustomPlugin")),
                 PluginSet(refs("DefaultPlugin1", "DefaultPlugin2", "CustomPlugin")), id="AppendCustomPlugin"),
    pytest.param(PluginSet(refs("DefaultPlugin1", "DefaultPlugin2")),
                 PluginSet(refs("CustomPlugin"), ("DefaultPlugin1",)),
                 PluginSet(refs("DefaultPlugin2", "CustomPlugin"), ("DefaultPlugin1",)),
                 id="InsertAfterDefaultPlugins2"),
    pytest.param(PluginSet(refs("DefaultPlugin1", "DefaultPlugin2")),
                 PluginSet(refs("CustomPlugin", "DefaultPlugin1"), ("DefaultPlugin1",)),
                 PluginSet(refs("DefaultPlugin2", "CustomPlugin", "DefaultPlugin1"), ("DefaultPlugin1",)),
                 id="a disabled default re-enabled goes after the defaults"),
    pytest.param(PluginSet(refs("DefaultPlugin1", "DefaultPlugin2")),
                 PluginSet(refs("DefaultPlugin2", "DefaultPlugin1"), ("*",)),
                 PluginSet(refs("DefaultPlugin2", "DefaultPlugin1"), ("*",)),
                 id="ReorderDefaultPlugins: * then the user's order"),
    pytest.param(PluginSet(refs("DefaultPlugin1", "DefaultPlugin2")), PluginSet(),
                 PluginSet(refs("DefaultPlugin1", "DefaultPlugin2")), id="ApplyNilCustomPlugin"),
    pytest.param(PluginSet(refs("DefaultPlugin1", "DefaultPlugin2")), PluginSet(refs(("DefaultPlugin2", 2))),
                 PluginSet(refs("DefaultPlugin1", ("DefaultPlugin2", 2))),
                 id="CustomPluginOverrideDefaultPlugin: replaced in place"),
    pytest.param(PluginSet(refs(("DefaultPlugin1", 1), ("DefaultPlugin2", 1))),
                 PluginSet(refs(("DefaultPlugin2", 2), ("DefaultPlugin1", 2))),
                 PluginSet(refs(("DefaultPlugin1", 2), ("DefaultPlugin2", 2))),
                 id="OrderPreserving: the default order is kept"),
    pytest.param(PluginSet(refs("DefaultPlugin1", "DefaultPlugin2")),
                 PluginSet(refs("CustomPlugin", "DefaultPlugin2", "CustomPlugin")),
                 PluginSet(refs("DefaultPlugin1", "DefaultPlugin2", "CustomPlugin", "CustomPlugin")),
                 id="RepeatedCustomPlugin: kept (the framework rejects it)"),
    pytest.param(PluginSet(refs("DefaultPlugin1", "DefaultPlugin2")),
                 PluginSet(refs("DefaultPlugin1", "DefaultPlugin1")),
                 PluginSet(refs("DefaultPlugin1", "DefaultPlugin2", "DefaultPlugin1")),
                 id="RepeatedDefaultPlugin: the first replaces, the second is appended"),
    pytest.param(PluginSet(refs("DefaultPlugin1", "DefaultPlugin2")), PluginSet((), ("*",)),
                 PluginSet((), ("*",)), id="DisableAllDefaults"),
    pytest.param(PluginSet(refs("PluginX", "DefaultPlugin2"), ("PluginX",)), PluginSet(refs("CustomPlugin")),
                 PluginSet(refs("DefaultPlugin2", "CustomPlugin"), ("PluginX",)),
                 id="a plugin the default set disables stays disabled"),
]


@pytest.mark.parametrize(("default", "custom", "expected"), MERGE_CASES)
def test_merge_plugin_set(default: PluginSet, custom: PluginSet, expected: PluginSet) -> None:
    assert profiles.merge_plugin_set(default, custom) == expected


def test_merge_plugins_without_custom_plugins_is_the_default() -> None:
    defaults = profiles.default_plugins()
    assert profiles.merge_plugins(defaults, None) == defaults


# ---------------------------------------------------------------------- defaults


def test_an_empty_configuration_is_the_default_profile() -> None:
    cfg = config()
    assert cfg.scheduler_names == ("default-scheduler",)
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1, 10)
    assert cfg.percentage_of_nodes_to_score is None
    resolved = profiles.resolve(cfg.profiles[0])
    assert [r.name for r in resolved["filter"]] == [
        "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
        "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
        "InterPodAffinity", "DynamicResources"]
    assert {r.name: r.weight for r in resolved["score"]} == {
        "TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "VolumeBinding": 1, "PodTopologySpread": 2,
        "InterPodAffinity": 2, "DynamicResources": 1, "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1}
    assert [r.name for r in resolved["queueSort"]] == ["PrioritySort"]
    assert [r.name for r in resolved["postFilter"]] == ["DynamicResources", "DefaultPreemption"]
    assert [r.name for r in resolved["bind"]] == ["DefaultBinder"]
    built = profiles.build_profiles(cfg)
    assert len(built) == 1 and built[0].fused_core and built[0].scheduler_name == "default-scheduler"


def test_profiles_without_a_name_get_the_default_name_and_names_must_differ() -> None:
    cfg = config(profiles=[{}, {"schedulerName": "packer"}])
    assert cfg.scheduler_names == ("default-scheduler", "packer")
    with pytest.raises(ConfigError, match=r"profiles\[1\].schedulerName: Duplicate value: 'packer'"):
        config(profiles=[{"schedulerName": "packer"}, {"schedulerName": "packer"}])


def test_backoff_and_percentage() -> None:
    cfg = config(podInitialBackoffSeconds=2, podMaxBackoffSeconds=30, percentageOfNodesToScore=40,
                 profiles=[{"percentageOfNodesToScore": 70}, {"schedulerName": "b"}])
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2, 30)
    assert cfg.percentage_of_nodes_to_score == 40
    built = profiles.build_profiles(cfg)
    assert [p.percentage_of_nodes_to_score for p in built] == [70, None]


# ---------------------------------------------------------------------- extension points


def test_a_score_entry_overrides_multipoint_and_comes_first() -> None:
    cfg = config(profiles=[{"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": 5}]}}}])
    scores = profiles.resolve(cfg.profiles[0])["score"]
    assert scores[0] == PluginRef("ImageLocality", 5)
    assert [r.name for r in scores].count("ImageLocality") == 1


def test_disabling_all_of_a_point_keeps_only_its_own_plugins() -> None:
    cfg = config(profiles=[{"plugins": {"score": {"disabled": [{"name": "*"}],
                                                  "enabled": [{"name": "NodeResourcesBalancedAllocation"}]}}}])
    assert profiles.resolve(cfg.profiles[0])["score"] == [PluginRef("NodeResourcesBalancedAllocation", 1)]
    assert not profiles.uses_fused_core(cfg.profiles[0])  # the fused scores changed


def test_disabling_one_plugin_on_one_point() -> None:
    cfg = config(profiles=[{"plugins": {"score": {"disabled": [{"name": "ImageLocality"}]}}}])
    resolved = profiles.resolve(cfg.profiles[0])
    assert "ImageLocality" not in [r.name for r in resolved["score"]]
    assert profiles.uses_fused_core(cfg.profiles[0])  # ImageLocality is not among the fused scores


def test_multipoint_weight_and_zero_weight() -> None:
    cfg = config(profiles=[{"plugins": {"multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 7},
                                                                   {"name": "TaintToleration", "weight": 0}]}}}])
    weights = {r.name: r.weight for r in profiles.resolve(cfg.profiles[0])["score"]}
    assert weights["ImageLocality"] == 7
    assert weights["TaintToleration"] == 1  # re-enabled without a weight: 1, not the default 3


# (configuration fields, the error's text)
ERROR_CASES = [
    pytest.param({"apiVersion": "kubescheduler.config.k8s.io/v1beta3"}, "apiVersion: must be", id="apiVersion"),
    pytest.param({"kind": "Nope"}, "kind: must be", id="kind"),
    pytest.param({"bogus": 1}, 'unknown field "bogus"', id="unknown field"),
    pytest.param({"percentageOfNodesToScore": 101}, r"percentageOfNodesToScore: not in valid range \[0-100\]",
                 id="percentage"),
    pytest.param({"profiles": [{"percentageOfNodesToScore": -1}]},
                 r"profiles\[0\].percentageOfNodesToScore: not in valid range", id="profile percentage"),
    pytest.param({"podInitialBackoffSeconds": 0}, "podInitialBackoffSeconds: must be greater than 0",
                 id="initial backoff"),
    pytest.param({"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 2},
                 "podMaxBackoffSeconds: must be greater than or equal to PodInitialBackoffSeconds", id="max backoff"),
    pytest.param({"podMaxBackoffSeconds": "ten"}, "podMaxBackoffSeconds: must be an integer", id="type"),
    pytest.param({"profiles": [{"plugins": {"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}}]},
                 'plugins.filter: FilterPlugin "NoSuchPlugin" does not exist', id="unknown plugin"),
    pytest.param({"profiles": [{"plugins": {"score": {"enabled": [{"name": "NodePorts"}]}}}]},
                 'plugins.score: plugin "NodePorts" does not extend ScorePlugin plugin', id="wrong extension point"),
    pytest.param({"profiles": [{"plugins": {"filter": {"enabled": [{"name": "NodePorts"}, {"name": "NodePorts"}]}}}]},
                 'plugin "NodePorts" already registered as "FilterPlugin"', id="duplicate in a point"),
    pytest.param({"profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "CustomX"}]}}}]},
                 r'profiles\[0\].plugins.multiPoint: plugin "CustomX" does not exist', id="unknown multiPoint plugin"),
    pytest.param({"profiles": [{"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": -1}]}}}]},
                 "weight: must be non-negative", id="negative weight"),
    pytest.param({"profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {}},
                                                 {"name": "NodeResourcesFit", "args": {}}]}]},
                 "repeated config for plugin 'NodeResourcesFit'", id="repeated pluginConfig"),
    pytest.param({"profiles": [{}, {"schedulerName": "b", "plugins": {"queueSort": {"disabled": [{"name": "*"}]}}}]},
                 r"profiles\[1\]: no queue sort plugin is enabled", id="no queueSort"),
    pytest.param({"profiles": [{"schedulerName": ""}]}, r"profiles\[0\].schedulerName: Required value",
                 id="empty schedulerName"),
    pytest.param({"profiles": [{"plugins": {"fliter": {}}}]}, r'profiles\[0\].plugins: unknown field "fliter"',
                 id="misspelt extension point"),
]


@pytest.mark.parametrize(("fields", "message"), ERROR_CASES)
def test_configuration_errors(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config(**fields)


def test_multipoint_replaced_entirely() -> None:
    """`multiPoint: disabled: [*]` drops every default; only the user's plugins remain (no core
    filters at all, so nothing runs fused); a queue sort and a bind plugin are still needed."""
    mine = [{"name": "PrioritySort"}, {"name": "NodePorts"}, {"name": "DefaultBinder"}]
    cfg = config(profiles=[{"plugins": {"multiPoint": {"enabled": mine, "disabled": [{"name": "*"}]}}}])
    resolved = profiles.resolve(cfg.profiles[0])
    assert [r.name for r in resolved["filter"]] == ["NodePorts"]
    assert resolved["score"] == [] and [r.name for r in resolved["queueSort"]] == ["PrioritySort"]
    assert not profiles.build_profile(cfg.profiles[0]).fused_core
    with pytest.raises(ConfigError, match=r"profiles\[0\]: no queue sort plugin is enabled"):
        config(profiles=[{"plugins": {"multiPoint": {"enabled": mine[1:], "disabled": [{"name": "*"}]}}}])
    with pytest.raises(ConfigError, match=r"profiles\[0\]: at least one bind plugin is needed"):
        config(profiles=[{"plugins": {"multiPoint": {"enabled": mine[:2], "disabled": [{"name": "*"}]}}}])


def test_load_config_from_yaml_and_its_errors() -> None:
    text = f"""
apiVersion: {profiles.API_VERSION}
kind: {profiles.KIND}
profiles:
- schedulerName: default-scheduler
- schedulerName: packer
"""
    assert profiles.load_config(text).scheduler_names == ("default-scheduler", "packer")
    with pytest.raises(ConfigError, match=r"^sched\.yaml: not valid YAML: ") as bad:
        profiles.load_config("profiles: [\n  - {", source="sched.yaml")
    assert "\n" not in str(bad.value)
    with pytest.raises(ConfigError, match=r"^sched\.yaml: kind: must be"):
        profiles.load_config(f"apiVersion: {profiles.API_VERSION}\nkind: Pod\n", source="sched.yaml")


# ---------------------------------------------------------------------- building profiles


class _Example(framework.Plugin):
    """A score plugin whose args say its constant score."""

    name = "ExampleScore"
    points = frozenset({"Score"})
    events = ("Node/Add",)

    def __init__(self, args: Mapping[str, Any]) -> None:
        if "score" in args and not isinstance(args["score"], int):
            raise ValueError("score: must be an integer")
        self.args = dict(args)


@pytest.fixture
def example_plugin() -> Iterator[None]:
    profiles.PLUGINS["ExampleScore"] = _Example
    try:
        yield
    finally:
        profiles.PLUGINS.pop("ExampleScore", None)


@pytest.mark.usefixtures("example_plugin")
def test_plugin_args_reach_the_factory() -> None:
    cfg = config(profiles=[{"schedulerName": "x",
                            "plugins": {"multiPoint": {"enabled": [{"name": "ExampleScore", "weight": 4}]}},
                            "pluginConfig": [{"name": "ExampleScore", "args": {
                                "apiVersion": profiles.API_VERSION, "kind": "ExampleScoreArgs", "score": 9}}]}])
    built = profiles.build_profile(cfg.profiles[0])
    plugin = built.plugin("ExampleScore")
    assert isinstance(plugin, _Example) and plugin.args == {"score": 9}
    assert (plugin, 4) in built.scores
    assert built.fused_core
    assert profiles.event_map([built]).worth_requeuing(frozenset({"ExampleScore"}), "Node/Add")


@pytest.mark.usefixtures("example_plugin")
def test_bad_plugin_args_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"profiles\[0\].pluginConfig: plugin 'ExampleScore': score: must be an int"):
        config(profiles=[{"plugins": {"multiPoint": {"enabled": [{"name": "ExampleScore"}]}},
                          "pluginConfig": [{"name": "ExampleScore", "args": {"score": "high"}}]}])


def test_non_default_core_plugins_need_their_classes() -> None:
    """Args for NodeResourcesFit leave the fused path; without its Plugin class that is an error,
    never a silent fallback to the defaults."""
    cfg = config(profiles=[{"pluginConfig": [{"name": "NodeResourcesFit", "args": {
        "scoringStrategy": {"type": "MostAllocated"}}}]}])
    assert not profiles.uses_fused_core(cfg.profiles[0])
    if "NodeResourcesFit" in profiles.PLUGINS:
        assert not profiles.build_profiles(cfg)[0].fused_core
        return
    with pytest.raises(ConfigError, match=r"needs their individual plugin classes; not available: .*NodeResourcesFit"):
        profiles.build_profiles(cfg)


def test_individual_core_classes_replace_the_fused_filters(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []

    def fake(name: str, points: frozenset[str]) -> profiles.PluginFactory:
        cls = type(name, (framework.Plugin,), {"name": name, "points": points})

        def factory(args: Mapping[str, Any]) -> framework.Plugin:
            made.append(name)
            plugin: framework.Plugin = cls()
            return plugin
        return factory

    for name in (*profiles.CORE_FILTERS, *profiles.FUSED_SCORES):
        monkeypatch.setitem(profiles.PLUGINS, name, fake(name, profiles.KNOWN_POINTS[name] - {"PreFilter"}))
    cfg = config(profiles=[{"plugins": {"filter": {"disabled": [{"name": "NodeName"}]}}}])
    built = profiles.build_profile(cfg.profiles[0])
    assert not built.fused_core
    assert [p.name for p in built.filters] == ["NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts",
                                              "NodeResourcesFit", "VolumeRestrictions", "VolumeBinding",
                                              "PodTopologySpread", "InterPodAffinity"]
    assert {p.name: w for p, w in built.scores} == {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1,
                                                    "PodTopologySpread": 2, "InterPodAffinity": 2,
                                                    "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1}
    assert built.dra_weight == 1


def test_default_preemption_args_reach_the_profile_and_are_validated() -> None:
    from cp.scheduling import preemption

    cfg = config(profiles=[{"pluginConfig": [{"name": "DefaultPreemption", "args": {
        "minCandidateNodesPercentage": 50, "minCandidateNodesAbsolute": 3}}]}])
    built = profiles.build_profile(cfg.profiles[0])
    args = preemption.Args.of(built.plugin_args["DefaultPreemption"])
    assert (args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute) == (50, 3)
    assert preemption.num_candidates(40, args) == 20  # max(40 * 50 %, 3), at most the nodes
    bad = config(profiles=[{"pluginConfig": [{"name": "DefaultPreemption", "args": {
        "minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}}]}])
    with pytest.raises(ConfigError, match="pluginConfig DefaultPreemption: minCandidateNodesPercentage and "
                                          "minCandidateNodesAbsolute cannot both be zero"):
        profiles.build_profile(bad.profiles[0])
