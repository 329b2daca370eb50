"""Scheduler profiles from a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1).

`default_profile()` is the 1.37 default profile. The plugins (`PLUGINS`, name -> factory taking
the plugin's args) beyond the fused core filters are listed in upstream's default order with their
default weights (`DEFAULT_PLUGINS`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cp.scheduling import framework

SCHEDULER_NAME = "default-scheduler"

# The fused core filters (`plugins.PodInfo.filter`), in upstream's order.
CORE_FILTERS = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodeResourcesFit")

PluginFactory = Callable[[Mapping[str, Any]], framework.Plugin]

# name -> factory(args); the plugin modules register themselves here.
PLUGINS: dict[str, PluginFactory] = {}

# upstream's default MultiPoint list (getDefaultPlugins, DynamicResources before DefaultPreemption)
# with weights for those that score (a weight of 0: the plugin has no Score).
DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0), ("PrioritySort", 0), ("NodeUnschedulable", 0), ("NodeName", 0),
    ("TaintToleration", 3), ("NodeAffinity", 2), ("NodePorts", 0), ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0), ("NodeVolumeLimits", 0), ("VolumeBinding", 0), ("VolumeZone", 0),
    ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("DynamicResources", 1), ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), ("DefaultBinder", 0),
)


def _load() -> None:
    """Import the plugin modules (each registers its factory in PLUGINS); one line per module."""
    import importlib

    modules: tuple[str, ...] = (
        "nodeunschedulable",
        "nodename",
        "tainttoleration",
        "nodeaffinity",
        "nodeports",
        "noderesources",
        "imagelocality",
        "volumerestrictions",
        "volumebinding",
    )
    for module in modules:
        importlib.import_module(f"cp.scheduling.plugins.{module}")


def default_profile(*, scheduler_name: str = SCHEDULER_NAME) -> framework.Profile:
    """The default profile: the registered plugins of `DEFAULT_PLUGINS`, the core filters fused."""
    _load()
    filters: list[framework.Plugin] = []
    scores: list[tuple[framework.Plugin, int]] = []
    pre_filters: list[framework.Plugin] = []  # the fused core filters' PreFilters run too
    for name, weight in DEFAULT_PLUGINS:
        factory = PLUGINS.get(name)
        if factory is None:
            continue
        plugin = factory({})
        if "Filter" in plugin.points and name not in CORE_FILTERS:
            filters.append(plugin)
        if "PreFilter" in plugin.points:
            pre_filters.append(plugin)
        if "Score" in plugin.points and weight:
            scores.append((plugin, weight))
    return framework.Profile(scheduler_name=scheduler_name, filters=filters, scores=scores, pre_filters=pre_filters,
                             fused_core=True, enabled=[n for n, _w in DEFAULT_PLUGINS])
