"""Scheduler profiles from a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1).

`default_profile()` is the 1.37 default profile. The plugins (`PLUGINS`, name -> factory taking
the plugin's args) beyond the fused core filters are listed in upstream's default order with their
default weights (`DEFAULT_PLUGINS`).

`load_config` / `parse_config` decode, default and validate a configuration (`ConfigError` names
the field and the reason); each profile's plugins are merged with the defaults as upstream's
`mergePlugins` (`merge_plugin_set`), expanded from multiPoint to the extension points as the
framework does (`resolve`, `score_weights`), and built into a `framework.Profile` with the plugins
made by their factories from `pluginConfig` (`build_profiles`). A profile whose core plugins are
configured as by default runs them fused (`uses_fused_core`). `event_map` gathers which plugin
registered which cluster events, for the scheduling queue's hints."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from cp.scheduling import events, framework
from cp.scheduling import preemption as preemptions

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
        "interpodaffinity",
        "podtopologyspread",
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


# ---------------------------------------------------------------------- KubeSchedulerConfiguration

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DYNAMIC_RESOURCES = "DynamicResources"
DEFAULT_INITIAL_BACKOFF = 1  # podInitialBackoffSeconds
DEFAULT_MAX_BACKOFF = 10  # podMaxBackoffSeconds
MAX_TOTAL_SCORE = (1 << 63) - 1  # framework.MaxTotalScore
MAX_NODE_SCORE = 100

# the extension points of `plugins` (besides multiPoint), and the Plugin.points name of each
EXTENSION_POINTS: Mapping[str, str] = {
    "preEnqueue": "PreEnqueue", "queueSort": "QueueSort", "preFilter": "PreFilter", "filter": "Filter",
    "postFilter": "PostFilter", "preScore": "PreScore", "score": "Score", "reserve": "Reserve",
    "permit": "Permit", "preBind": "PreBind", "bind": "Bind", "postBind": "PostBind",
}

# The extension points of the in-tree plugins this scheduler knows by name, whether they run as a
# Plugin (registered in PLUGINS, whose instances say their own points), fused into the cycle (the
# core filters, DynamicResources) or built into the queue and binder.
KNOWN_POINTS: Mapping[str, frozenset[str]] = {
    "PrioritySort": frozenset({"QueueSort"}),
    "SchedulingGates": frozenset({"PreEnqueue"}),
    "NodeUnschedulable": frozenset({"Filter"}),
    "NodeName": frozenset({"Filter"}),
    "TaintToleration": frozenset({"Filter", "PreScore", "Score"}),
    "NodeAffinity": frozenset({"PreFilter", "Filter", "PreScore", "Score"}),
    "NodePorts": frozenset({"PreFilter", "Filter"}),
    "NodeResourcesFit": frozenset({"PreFilter", "Filter", "PreScore", "Score"}),
    "VolumeRestrictions": frozenset({"PreFilter", "Filter"}),
    "NodeVolumeLimits": frozenset({"Filter"}),
    "VolumeBinding": frozenset({"PreFilter", "Filter", "Reserve", "PreBind", "PreScore", "Score"}),
    "VolumeZone": frozenset({"PreFilter", "Filter"}),
    "PodTopologySpread": frozenset({"PreFilter", "Filter", "PreScore", "Score"}),
    "InterPodAffinity": frozenset({"PreFilter", "Filter", "PreScore", "Score"}),
    DYNAMIC_RESOURCES: frozenset({"PreEnqueue", "PreFilter", "Filter", "PostFilter", "PreScore", "Score",
                                  "Reserve", "PreBind"}),
    "DefaultPreemption": frozenset({"PostFilter"}),
    "NodeResourcesBalancedAllocation": frozenset({"PreScore", "Score"}),
    "ImageLocality": frozenset({"Score"}),
    "DefaultBinder": frozenset({"Bind"}),
}

# What the fused path (`plugins.PodInfo.filter` and the cycle's built-in scores) decides: used only
# when these plugins are configured exactly as by default.
FUSED_SCORES = ("TaintToleration", "NodeAffinity", "NodeResourcesFit", "NodeResourcesBalancedAllocation",
                "PodTopologySpread")


class ConfigError(ValueError):
    """A KubeSchedulerConfiguration that cannot be used; the message says where and why (one line)."""


@dataclasses.dataclass(frozen=True, slots=True)
class PluginRef:
    """One entry of a plugin set: a name and its weight (0: not given)."""

    name: str
    weight: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class PluginSet:
    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ProfileConfig:
    """One profile after defaulting: `plugins` merged with the defaults (by extension point, plus
    `multiPoint`), `plugin_config` the args per plugin name."""

    scheduler_name: str
    plugins: Mapping[str, PluginSet]
    plugin_config: Mapping[str, Mapping[str, Any]]
    percentage_of_nodes_to_score: int | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerConfig:
    profiles: tuple[ProfileConfig, ...]
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: int = DEFAULT_INITIAL_BACKOFF
    pod_max_backoff_seconds: int = DEFAULT_MAX_BACKOFF

    @property
    def scheduler_names(self) -> tuple[str, ...]:
        return tuple(p.scheduler_name for p in self.profiles)


def default_plugins() -> dict[str, PluginSet]:
    """`getDefaultPlugins`: everything on multiPoint, with the scoring plugins' weights."""
    return {"multiPoint": PluginSet(enabled=tuple(PluginRef(name, weight) for name, weight in DEFAULT_PLUGINS))}


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """`mergePluginSet`: the default plugins in their order, minus the disabled ones (the user's
    and the default set's; all of them with `*`), a default re-enabled by the user replaced in
    place by the user's entry; then the user's other enabled plugins, in their order."""
    disabled = {*custom.disabled, *default.disabled}  # the default set may disable some (multiPoint)
    custom_index = {ref.name: (i, ref) for i, ref in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled:
        for ref in default.enabled:
            if ref.name in disabled:
                continue
            found = custom_index.get(ref.name)
            if found is not None:
                ref = found[1]
                replaced.add(found[0])
            enabled.append(ref)
    enabled.extend(ref for i, ref in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(enabled=tuple(enabled), disabled=(*custom.disabled, *default.disabled))


def merge_plugins(default: Mapping[str, PluginSet], custom: Mapping[str, PluginSet] | None) -> dict[str, PluginSet]:
    """`mergePlugins`: each extension point (and multiPoint) merged on its own."""
    if custom is None:
        return dict(default)
    return {point: merge_plugin_set(default.get(point, PluginSet()), custom.get(point, PluginSet()))
            for point in ("multiPoint", *EXTENSION_POINTS)}


# ---------------------------------------------------------------------- decoding


def _where(path: str) -> str:
    return path or "the configuration"


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{_where(path)}: must be a mapping, not {type(value).__name__}")
    return value


def _strict(obj: Mapping[str, Any], known: Iterable[str], path: str) -> None:
    allowed = set(known)
    for key in obj:
        if key not in allowed:
            raise ConfigError(f'{_where(path)}: unknown field "{key}"')


def _int(value: Any, path: str, *, default: int | None) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{path}: must be an integer, not {value!r}")
    return value


def _named_entries(items: Any, path: str, fields: tuple[str, ...], *, missing: str
                   ) -> Iterator[tuple[str, Mapping[str, Any], str]]:
    """The entries of a list of objects with a `name` (plugins, pluginConfig): (path, entry, name),
    each checked for unknown fields and a name (`missing`: the error's wording)."""
    if items is None:
        return
    if not isinstance(items, list):
        raise ConfigError(f"{path}: must be a list")
    for i, item in enumerate(items):
        where = f"{path}[{i}]"
        entry = _mapping(item, where)
        _strict(entry, fields, where)
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{where}.name: {missing}")
        yield where, entry, name


def _plugin_set(raw: Any, path: str) -> PluginSet:
    obj = _mapping(raw, path)
    _strict(obj, ("enabled", "disabled"), path)
    enabled: list[PluginRef] = []
    disabled: list[str] = []
    for kind in ("enabled", "disabled"):
        for where, entry, name in _named_entries(obj.get(kind), f"{path}.{kind}", ("name", "weight"),
                                                 missing="required"):
            weight = _int(entry.get("weight"), f"{where}.weight", default=0) or 0
            if weight < 0:
                raise ConfigError(f"{where}.weight: must be non-negative, not {weight}")
            if kind == "enabled":
                enabled.append(PluginRef(name, weight))
            else:
                disabled.append(name)
    return PluginSet(enabled=tuple(enabled), disabled=tuple(disabled))


def _percentage(value: Any, path: str) -> int | None:
    pct = _int(value, path, default=None)
    if pct is not None and not 0 <= pct <= 100:
        raise ConfigError(f"{path}: not in valid range [0-100]: {pct}")
    return pct


_TOP_FIELDS = ("apiVersion", "kind", "profiles", "percentageOfNodesToScore", "podInitialBackoffSeconds",
               "podMaxBackoffSeconds", "parallelism", "leaderElection", "clientConnection",
               "enableProfiling", "enableContentionProfiling", "extenders", "delayCacheUntilActive",
               "featureGates")
_PROFILE_FIELDS = ("schedulerName", "plugins", "pluginConfig", "percentageOfNodesToScore")


def parse_config(doc: Any) -> SchedulerConfig:
    """Decode, default and validate a KubeSchedulerConfiguration (a mapping as YAML gives it).
    Raises ConfigError with the field and the reason."""
    obj = _mapping(doc, "")
    if obj.get("apiVersion") != API_VERSION:
        raise ConfigError(f'apiVersion: must be "{API_VERSION}", not {obj.get("apiVersion")!r}')
    if obj.get("kind") != KIND:
        raise ConfigError(f'kind: must be "{KIND}", not {obj.get("kind")!r}')
    _strict(obj, _TOP_FIELDS, "")
    pct = _percentage(obj.get("percentageOfNodesToScore"), "percentageOfNodesToScore")
    initial = _int(obj.get("podInitialBackoffSeconds"), "podInitialBackoffSeconds", default=DEFAULT_INITIAL_BACKOFF)
    maximum = _int(obj.get("podMaxBackoffSeconds"), "podMaxBackoffSeconds", default=DEFAULT_MAX_BACKOFF)
    assert initial is not None and maximum is not None
    if initial <= 0:
        raise ConfigError(f"podInitialBackoffSeconds: must be greater than 0, not {initial}")
    if maximum < initial:
        raise ConfigError(f"podMaxBackoffSeconds: must be greater than or equal to PodInitialBackoffSeconds "
                          f"({maximum} < {initial})")
    raw_profiles = obj.get("profiles")
    if raw_profiles is None:
        raw_profiles = [{}]
    if not isinstance(raw_profiles, list):
        raise ConfigError("profiles: must be a list")
    if not raw_profiles:
        raw_profiles = [{}]
    profiles = tuple(_parse_profile(p, f"profiles[{i}]") for i, p in enumerate(raw_profiles))
    seen: dict[str, int] = {}
    for i, prof in enumerate(profiles):
        if prof.scheduler_name in seen:
            raise ConfigError(f"profiles[{i}].schedulerName: Duplicate value: {prof.scheduler_name!r}")
        seen[prof.scheduler_name] = i
    first_sort = [r.name for r in _resolve_point(profiles[0], "queueSort")]
    for i, prof in enumerate(profiles[1:], start=1):
        if [r.name for r in _resolve_point(prof, "queueSort")] != first_sort:
            raise ConfigError(f"profiles[{i}].plugins.queueSort: queueSort must be the same for all profiles")
    return SchedulerConfig(profiles=profiles, percentage_of_nodes_to_score=pct,
                           pod_initial_backoff_seconds=initial, pod_max_backoff_seconds=maximum)


def _parse_profile(raw: Any, path: str) -> ProfileConfig:
    obj = _mapping(raw, path)
    _strict(obj, _PROFILE_FIELDS, path)
    name = obj.get("schedulerName", SCHEDULER_NAME)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{path}.schedulerName: Required value")
    custom: dict[str, PluginSet] | None = None
    if obj.get("plugins") is not None:
        plugins_obj = _mapping(obj["plugins"], f"{path}.plugins")
        _strict(plugins_obj, ("multiPoint", *EXTENSION_POINTS), f"{path}.plugins")
        custom = {point: _plugin_set(plugins_obj.get(point), f"{path}.plugins.{point}")
                  for point in ("multiPoint", *EXTENSION_POINTS)}
    merged = merge_plugins(default_plugins(), custom)
    args: dict[str, Mapping[str, Any]] = {}
    for where, entry, pname in _named_entries(obj.get("pluginConfig") or [], f"{path}.pluginConfig",
                                              ("name", "args"), missing="Required value"):
        if pname in args:
            raise ConfigError(f"{where}: Duplicate value: repeated config for plugin {pname!r}")
        plugin_args = dict(_mapping(entry.get("args"), f"{where}.args"))
        plugin_args.pop("apiVersion", None)
        plugin_args.pop("kind", None)
        args[pname] = plugin_args
    pct = _percentage(obj.get("percentageOfNodesToScore"), f"{path}.percentageOfNodesToScore")
    prof = ProfileConfig(scheduler_name=name, plugins=merged, plugin_config=args, percentage_of_nodes_to_score=pct)
    resolved = resolve(prof, path=path)  # unknown or duplicate plugins are errors now, not at start
    if not resolved["queueSort"]:
        raise ConfigError(f"{path}: no queue sort plugin is enabled")
    if len(resolved["queueSort"]) > 1:
        raise ConfigError(f"{path}: only one queue sort plugin can be enabled")
    if not resolved["bind"]:
        raise ConfigError(f"{path}: at least one bind plugin is needed")
    return prof


def load_config(text: str, *, source: str = "<scheduler config>") -> SchedulerConfig:
    """Parse a KubeSchedulerConfiguration from YAML (or JSON) text."""
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(f"{source}: not valid YAML: {detail}") from None
    try:
        return parse_config(doc)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


# ---------------------------------------------------------------------- expanding to extension points


def _make(name: str, args: Mapping[str, Mapping[str, Any]], *, path: str = "") -> framework.Plugin | None:
    """The plugin from its factory and pluginConfig args (None: not implemented as a Plugin)."""
    factory = PLUGINS.get(name)
    if factory is None:
        return None
    try:
        return factory(args.get(name, {}))
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"{path or 'profile'}.pluginConfig: plugin {name!r}: {exc}") from None


def _points_of(name: str, args: Mapping[str, Mapping[str, Any]], *, path: str = "") -> frozenset[str]:
    known = KNOWN_POINTS.get(name)
    if known is not None:
        return known
    plugin = _make(name, args, path=path)
    if plugin is None:
        raise ConfigError(f'plugin "{name}" does not exist')
    return plugin.points


def _resolve_point(prof: ProfileConfig, point: str, *, path: str = "") -> list[PluginRef]:
    """`expandMultiPointPlugins` for one extension point: the plugins enabled there explicitly
    that multiPoint also lists (in the point's order), then multiPoint's others that implement the
    point and are not disabled there, then the point's remaining ones; `disabled: *` on the point
    leaves multiPoint out."""
    where = f"{path}.plugins" if path else "plugins"
    specific = prof.plugins.get(point, PluginSet())
    kind = EXTENSION_POINTS[point]
    enabled: dict[str, PluginRef] = {}
    for ref in specific.enabled:  # `updatePluginList`
        try:
            points = _points_of(ref.name, prof.plugin_config, path=path)
        except ConfigError as exc:
            if str(exc) == f'plugin "{ref.name}" does not exist':
                raise ConfigError(f'{where}.{point}: {kind}Plugin "{ref.name}" does not exist') from None
            raise
        if kind not in points:
            raise ConfigError(f'{where}.{point}: plugin "{ref.name}" does not extend {kind}Plugin plugin')
        if ref.name in enabled:
            raise ConfigError(f'{where}.{point}: plugin "{ref.name}" already registered as "{kind}Plugin"')
        enabled[ref.name] = ref
    disabled = set(specific.disabled)
    if "*" in disabled:
        return list(enabled.values())
    overrides: dict[str, PluginRef] = {}
    multi: dict[str, PluginRef] = {}
    for ref in prof.plugins.get("multiPoint", PluginSet()).enabled:
        try:
            points = _points_of(ref.name, prof.plugin_config, path=path)
        except ConfigError as exc:
            raise ConfigError(f"{where}.multiPoint: {exc}") from None
        if kind not in points:
            continue
        if ref.name in disabled:
            continue
        if ref.name in enabled:
            overrides[ref.name] = enabled[ref.name]
            continue
        if ref.name in multi:
            raise ConfigError(f'{where}.multiPoint: plugin "{ref.name}" already registered as "{kind}Plugin"')
        multi[ref.name] = ref
    ordered = [enabled[n] for n in enabled if n in overrides]
    ordered.extend(multi.values())
    ordered.extend(ref for n, ref in enabled.items() if n not in overrides)
    return ordered


def score_weights(prof: ProfileConfig, *, path: str = "") -> dict[str, int]:
    """`getScoreWeights`: the weight of each Score plugin — the score point's own entry wins over
    multiPoint's; 0 (not given) means 1; the sum times 100 must not overflow."""
    weights: dict[str, int] = {}
    specific = {ref.name: ref for ref in prof.plugins.get("score", PluginSet()).enabled}
    multi = {ref.name: ref for ref in prof.plugins.get("multiPoint", PluginSet()).enabled}
    total = 0
    for ref in _resolve_point(prof, "score", path=path):
        entry = specific.get(ref.name) or multi.get(ref.name) or ref
        weight = entry.weight or 1
        if weight * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
            raise ConfigError(f"{path or 'profile'}: total score of Score plugins could overflow")
        total += weight * MAX_NODE_SCORE
        weights[ref.name] = weight
    return weights


def resolve(prof: ProfileConfig, *, path: str = "") -> dict[str, list[PluginRef]]:
    """Every extension point's plugins in order (score entries carry their weight)."""
    out = {point: _resolve_point(prof, point, path=path) for point in EXTENSION_POINTS}
    weights = score_weights(prof, path=path)
    out["score"] = [PluginRef(ref.name, weights[ref.name]) for ref in out["score"]]
    return out


_DEFAULT_RESOLVED: dict[str, list[PluginRef]] | None = None


def _default_resolved() -> dict[str, list[PluginRef]]:
    global _DEFAULT_RESOLVED
    if _DEFAULT_RESOLVED is None:
        _DEFAULT_RESOLVED = resolve(ProfileConfig(scheduler_name=SCHEDULER_NAME, plugins=default_plugins(),
                                                  plugin_config={}))
    return _DEFAULT_RESOLVED


def _fused_view(resolved: Mapping[str, list[PluginRef]]) -> tuple[Any, ...]:
    filters = tuple(r.name for r in resolved["filter"] if r.name in CORE_FILTERS)
    scores = tuple(sorted((r.name, r.weight) for r in resolved["score"] if r.name in FUSED_SCORES))
    return filters, scores


def uses_fused_core(prof: ProfileConfig) -> bool:
    """The core filters (and the scores computed beside them) run as by default, without args."""
    if any(name in prof.plugin_config and prof.plugin_config[name] for name in (*CORE_FILTERS, *FUSED_SCORES)):
        return False
    return _fused_view(resolve(prof)) == _fused_view(_default_resolved())


def build_profile(prof: ProfileConfig, *, path: str = "") -> framework.Profile:
    """A framework.Profile from one profile configuration; the plugins are made by their
    factories from `pluginConfig`'s args. Plugins known by name but not implemented as a Plugin
    here (NodeVolumeLimits, VolumeZone, ...) are left out, as by default."""
    _load()
    resolved = resolve(prof, path=path)
    fused = uses_fused_core(prof)
    instances: dict[str, framework.Plugin] = {}

    def instance(name: str) -> framework.Plugin | None:
        if name not in instances:
            plugin = _make(name, prof.plugin_config, path=path)
            if plugin is None:
                return None
            instances[name] = plugin
        return instances[name]

    if not fused:
        wanted = {r.name for r in resolved["filter"] if r.name in CORE_FILTERS}
        wanted |= {r.name for r in resolved["score"] if r.name in FUSED_SCORES}
        missing = sorted(n for n in wanted if n not in PLUGINS)
        if missing:
            raise ConfigError(
                f"{path or 'profile'} ({prof.scheduler_name}): a non-default configuration of the core plugins "
                f"({', '.join((*CORE_FILTERS, *FUSED_SCORES))}) needs their individual plugin classes; "
                f"not available: {', '.join(missing)}")

    def required(name: str) -> framework.Plugin:
        plugin = instance(name)
        assert plugin is not None  # checked above
        return plugin

    filters: list[framework.Plugin] = []
    for ref in resolved["filter"]:
        if ref.name == DYNAMIC_RESOURCES or (fused and ref.name in CORE_FILTERS):
            continue
        plugin = required(ref.name) if ref.name in CORE_FILTERS else instance(ref.name)
        if plugin is not None and "Filter" in plugin.points:
            filters.append(plugin)
    pre_filters: list[framework.Plugin] = []
    for ref in resolved["preFilter"]:  # the fused core filters' PreFilters run too
        if ref.name == DYNAMIC_RESOURCES:
            continue
        plugin = instance(ref.name)
        if plugin is not None and "PreFilter" in plugin.points:
            pre_filters.append(plugin)
    scores: list[tuple[framework.Plugin, int]] = []
    dra_weight = 0
    for ref in resolved["score"]:
        if ref.name == DYNAMIC_RESOURCES:
            dra_weight = ref.weight
            continue
        plugin = required(ref.name) if (not fused and ref.name in FUSED_SCORES) else instance(ref.name)
        if plugin is not None and "Score" in plugin.points:
            scores.append((plugin, ref.weight))
    enabled = {ref.name for refs in resolved.values() for ref in refs}
    preemption_args = prof.plugin_config.get(preemptions.PLUGIN)
    if preemption_args is not None:
        try:
            preemptions.Args.of(preemption_args)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{path or 'profile'} ({prof.scheduler_name}): pluginConfig {preemptions.PLUGIN}: "
                              f"{exc}") from None
    return framework.Profile(scheduler_name=prof.scheduler_name, filters=filters, scores=scores,
                             pre_filters=pre_filters, fused_core=fused,
                             percentage_of_nodes_to_score=prof.percentage_of_nodes_to_score,
                             enabled=sorted(enabled), dra_weight=dra_weight, plugin_args=prof.plugin_config)


def build_profiles(config: SchedulerConfig) -> list[framework.Profile]:
    """One framework.Profile per configured profile."""
    return [build_profile(p, path=f"profiles[{i}]") for i, p in enumerate(config.profiles)]


def event_map(profiles: Iterable[framework.Profile]) -> events.EventMap:
    """Which plugin registered which cluster events, over all profiles: each Plugin's own
    `events`, the fused core filters' and DynamicResources'."""
    registrations: dict[str, tuple[str, ...]] = {name: evs for name, evs in events.CORE_EVENTS.items()}
    registrations[DYNAMIC_RESOURCES] = events.DRA_EVENTS
    for profile in profiles:
        for plugin in [*profile.pre_filters, *profile.filters, *(p for p, _w in profile.scores)]:
            if plugin.events:
                registrations[plugin.name] = plugin.events
    return events.EventMap(registrations)
