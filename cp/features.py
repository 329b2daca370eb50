"""Feature gates: which of 1.37's optional behaviours a server (and the components talking to it) run
with, as kube-apiserver's, kube-scheduler's and kube-controller-manager's `--feature-gates`.

Only the gates cplane implements are known (`SPECS`); each has its 1.37 default, stage and
lock-to-default from upstream's versioned specs (`pkg/features/kube_features.go` and the scheduler's
`kube-scheduler/pkg/features`, the 1.37 entry of each gate). A default cluster runs with every gate at
its default, so `FeatureGates()` is what a default 1.37 cluster does. What each gate changes here is in
docs/api.md, "Feature gates".

As component-base's feature gate: a locked gate (GA, `LockToDefault`) cannot be set to its
non-default value; an unknown name is refused; values are Go's `strconv.ParseBool`; `AllAlpha` /
`AllBeta` set every unlocked alpha / beta gate not named explicitly. Dependencies between gates are
upstream's: a gate whose dependency is off is off whatever was asked (`parse` refuses it, `check`).

Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

ALPHA, BETA, GA, DEPRECATED = "ALPHA", "BETA", "GA", "DEPRECATED"

DYNAMIC_RESOURCE_ALLOCATION = "DynamicResourceAllocation"
DRA_ADMIN_ACCESS = "DRAAdminAccess"
DRA_PRIORITIZED_LIST = "DRAPrioritizedList"
DRA_RESOURCE_CLAIM_DEVICE_STATUS = "DRAResourceClaimDeviceStatus"
DRA_EXTENDED_RESOURCE = "DRAExtendedResource"
DRA_DEVICE_TAINTS = "DRADeviceTaints"
DRA_DEVICE_TAINT_RULES = "DRADeviceTaintRules"
DRA_PARTITIONABLE_DEVICES = "DRAPartitionableDevices"
DRA_CONSUMABLE_CAPACITY = "DRAConsumableCapacity"
DRA_FRACTIONAL_CAPACITY_RANGE = "DRAFractionalCapacityRange"
DRA_DEVICE_BINDING_CONDITIONS = "DRADeviceBindingConditions"
DRA_SCHEDULER_FILTER_TIMEOUT = "DRASchedulerFilterTimeout"
DRA_LIST_TYPE_ATTRIBUTES = "DRAListTypeAttributes"
DRA_NODE_ALLOCATABLE_RESOURCES = "DRANodeAllocatableResources"
GENERIC_WORKLOAD = "GenericWorkload"
GANG_SCHEDULING = "GangScheduling"
DRA_WORKLOAD_RESOURCE_CLAIMS = "DRAWorkloadResourceClaims"
HPA_SCALE_TO_ZERO = "HPAScaleToZero"
DRA_OPTIONAL_NODE_OPERATIONS = "DRAOptionalNodeOperations"
DRA_DEVICE_COMPATIBILITY_GROUPS = "DRADeviceCompatibilityGroups"
DRA_DERIVED_ATTRIBUTES = "DRADerivedAttributes"
DRA_RESOURCE_POOL_STATUS = "DRAResourcePoolStatus"
DRA_PARTITIONABLE_DEVICES_TYPE = "DRAPartitionableDevicesType"
DRA_RESOURCE_CLAIM_GRANULAR_STATUS_AUTHORIZATION = "DRAResourceClaimGranularStatusAuthorization"

ALL_ALPHA = "AllAlpha"
ALL_BETA = "AllBeta"


class Spec(msgspec.Struct, frozen=True, kw_only=True):
    """One gate's 1.37 entry: its default, stage and whether it is locked to the default."""

    default: bool
    stage: str
    locked: bool = False


SPECS: dict[str, Spec] = {
    DYNAMIC_RESOURCE_ALLOCATION: Spec(default=True, stage=GA, locked=True),
    DRA_ADMIN_ACCESS: Spec(default=True, stage=GA, locked=True),
    DRA_PRIORITIZED_LIST: Spec(default=True, stage=GA, locked=True),
    DRA_RESOURCE_CLAIM_DEVICE_STATUS: Spec(default=True, stage=GA, locked=True),
    DRA_EXTENDED_RESOURCE: Spec(default=True, stage=GA, locked=True),
    DRA_DEVICE_TAINTS: Spec(default=True, stage=GA),  # locked from 1.38
    DRA_DEVICE_TAINT_RULES: Spec(default=True, stage=GA),  # locked from 1.38
    DRA_PARTITIONABLE_DEVICES: Spec(default=True, stage=BETA),
    DRA_CONSUMABLE_CAPACITY: Spec(default=True, stage=BETA),
    # Beta in 1.37, on only with --min-compatibility-version 1.37; a 1.37 binary's is 1.36.
    DRA_FRACTIONAL_CAPACITY_RANGE: Spec(default=False, stage=BETA),
    DRA_DEVICE_BINDING_CONDITIONS: Spec(default=True, stage=BETA),
    DRA_SCHEDULER_FILTER_TIMEOUT: Spec(default=True, stage=BETA),
    DRA_RESOURCE_CLAIM_GRANULAR_STATUS_AUTHORIZATION: Spec(default=True, stage=BETA),
    DRA_LIST_TYPE_ATTRIBUTES: Spec(default=False, stage=ALPHA),
    DRA_OPTIONAL_NODE_OPERATIONS: Spec(default=False, stage=ALPHA),
    DRA_DEVICE_COMPATIBILITY_GROUPS: Spec(default=False, stage=ALPHA),
    DRA_DERIVED_ATTRIBUTES: Spec(default=False, stage=ALPHA),
    DRA_NODE_ALLOCATABLE_RESOURCES: Spec(default=False, stage=ALPHA),  # since 1.36
    GENERIC_WORKLOAD: Spec(default=False, stage=BETA),
    GANG_SCHEDULING: Spec(default=False, stage=ALPHA),
    DRA_WORKLOAD_RESOURCE_CLAIMS: Spec(default=False, stage=BETA),
    HPA_SCALE_TO_ZERO: Spec(default=False, stage=ALPHA),
    DRA_RESOURCE_POOL_STATUS: Spec(default=False, stage=ALPHA),
    DRA_PARTITIONABLE_DEVICES_TYPE: Spec(default=False, stage=ALPHA),
}

# gate -> (1.37 default, stage): the older view of `SPECS`, kept for its callers.
DEFAULTS: dict[str, tuple[bool, str]] = {name: (s.default, s.stage) for name, s in SPECS.items()}

# gate -> the gates it needs on
DEPENDENCIES: dict[str, tuple[str, ...]] = {
    GANG_SCHEDULING: (GENERIC_WORKLOAD,),
    DRA_WORKLOAD_RESOURCE_CLAIMS: (GENERIC_WORKLOAD,),
    DRA_DEVICE_BINDING_CONDITIONS: (DRA_RESOURCE_CLAIM_DEVICE_STATUS,),
    DRA_DEVICE_COMPATIBILITY_GROUPS: (DRA_PARTITIONABLE_DEVICES,),
    DRA_PARTITIONABLE_DEVICES_TYPE: (DRA_RESOURCE_POOL_STATUS, DRA_PARTITIONABLE_DEVICES),
}

# The pseudo-gates of component-base, with their stage (both off by default).
_ALL: dict[str, str] = {ALL_ALPHA: ALPHA, ALL_BETA: BETA}


class FeatureGateError(ValueError):
    """A gate that does not exist, a value that is not a boolean, a locked gate set to the other
    value, or a dependency left off. The message is component-base's."""


class FeatureGates:
    """An immutable set of gate values: the 1.37 defaults overridden by `overrides`."""

    __slots__ = ("_all", "_effective", "_given", "_off", "_values")

    def __init__(self, overrides: Mapping[str, bool] | None = None) -> None:
        values = {name: s.default for name, s in SPECS.items()}
        given = dict(overrides or {})
        errors: list[str] = []
        all_flags = {name: bool(given.pop(name)) for name in list(given) if name in _ALL}
        for name, value in given.items():
            spec = SPECS.get(name)
            if spec is None:
                errors.append(f"unrecognized feature gate: {name}")
                continue
            value = bool(value)
            if spec.locked and value != spec.default:
                errors.append(f"cannot set feature gate {name} to {_go(value)}, feature is locked to "
                              f"{_go(spec.default)}")
                continue
            values[name] = value
        if errors:
            raise FeatureGateError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
        for flag, stage in _ALL.items():
            if all_flags.get(flag) is not None:
                for name, spec in SPECS.items():
                    if spec.stage == stage and not spec.locked and name not in given:
                        values[name] = all_flags[flag]
        self._values = values
        self._given = frozenset(given)
        self._all = {flag: all_flags.get(flag, False) for flag in _ALL}
        # whether each gate is on with every gate it depends on (what `enabled` answers, per write)
        self._effective = {name: self._on(name) for name in SPECS}
        self._off: dict[tuple[str, ...], frozenset[str]] = {}

    def enabled(self, name: str) -> bool:
        """Whether `name` is on (and every gate it depends on)."""
        return self._effective.get(name, False)

    def disabled(self, names: tuple[str, ...]) -> frozenset[str]:
        """Those of `names` that are off (remembered per tuple: the strategies ask on every write)."""
        off = self._off.get(names)
        if off is None:
            off = self._off[names] = frozenset(n for n in names if not self._effective.get(n, False))
        return off

    def _on(self, name: str) -> bool:
        if not self._values.get(name, False):
            return False
        return all(self._on(dep) for dep in DEPENDENCIES.get(name, ()))

    def check(self) -> None:
        """Raise FeatureGateError if a gate is on while one it needs is off (a gate `AllAlpha` or
        `AllBeta` turned on is only off while its dependency is)."""
        for name, deps in DEPENDENCIES.items():
            if self._values[name] and (name in self._given or SPECS[name].default):
                off = [d for d in deps if not self._values[d]]
                if off:
                    raise FeatureGateError(f"feature gate {name} requires {', '.join(off)} to be enabled")

    def with_enabled(self, names: Iterable[str]) -> FeatureGates:
        return FeatureGates({**self.overrides(), **{n: True for n in names}})

    def overrides(self) -> dict[str, bool]:
        """The gates that differ from their defaults."""
        return {n: v for n, v in self._values.items() if v != SPECS[n].default}

    def states(self) -> list[tuple[str, str, bool]]:
        """(name, stage, enabled) of every gate and of `AllAlpha`/`AllBeta`, by name: what
        `kubernetes_feature_enabled` reports."""
        rows = [(n, SPECS[n].stage, self.enabled(n)) for n in SPECS]
        rows += [(flag, stage, self._all[flag]) for flag, stage in _ALL.items()]
        return sorted(rows)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FeatureGates) and other._values == self._values

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._values.items())))

    def __repr__(self) -> str:
        return f"FeatureGates({self.overrides()!r})"


DEFAULT = FeatureGates()


def _go(value: bool) -> str:
    return "true" if value else "false"


def _parse_bool(text: str) -> bool | None:
    """Go's `strconv.ParseBool`."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


def parse(text: str) -> FeatureGates:
    """`--feature-gates A=true,B=false` (as component-base's flag: comma-separated `name=bool`)."""
    overrides: dict[str, bool] = {}
    for item in text.split(","):
        if not item:
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep:
            raise FeatureGateError(f"missing bool value for {name}")
        parsed = _parse_bool(value)
        if parsed is None:
            raise FeatureGateError(f'invalid value of {name}={value}, err: strconv.ParseBool: parsing "{value}": '
                                   f"invalid syntax")
        overrides[name] = parsed
    gates = FeatureGates(overrides)
    gates.check()
    return gates


def stage_label(stage: str) -> str:
    """The `stage` label of `kubernetes_feature_enabled`: component-base writes GA as the empty string."""
    return "" if stage == GA else stage


def known_features() -> list[str]:
    """The help lines of `--feature-gates`, as component-base's `KnownFeatures`: GA and deprecated gates
    are left out, sorted."""
    lines = [f"{flag}=true|false ({stage} - default=false)" for flag, stage in _ALL.items()]
    lines += [f"{name}=true|false ({s.stage} - default={_go(s.default)})"
              for name, s in SPECS.items() if s.stage not in (GA, DEPRECATED)]
    return sorted(lines)


def help_text() -> str:
    """The `--feature-gates` help of kube-apiserver, with cplane's known gates."""
    return ("A set of key=value pairs that describe feature gates for alpha/experimental features. Options are: "
            + ", ".join(known_features()))
