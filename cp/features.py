"""Feature gates: which of 1.37's optional behaviours a server (and the components talking to it) run
with, as kube-apiserver's and kube-scheduler's `--feature-gates`.

Only the gates cplane implements are known; each has its 1.37 default (`DEFAULTS`, from upstream
`pkg/features/kube_features.go` and the gate pages of the 1.37 documentation). A default cluster runs
with every gate at its default, so a `FeatureGates()` is what a default 1.37 cluster does.

Dependencies between gates are upstream's: a gate whose dependency is off is off whatever was asked
(upstream refuses to start; we report it with `check`).

- `GenericWorkload` (beta, off): the scheduling.k8s.io/v1beta1 Workload and PodGroup API and the pod's
  `spec.schedulingGroup`. Upstream also needs `--runtime-config=scheduling.k8s.io/v1beta1=true` (a beta
  API is off by default); here the gate serves the version.
- `GangScheduling` (alpha, off; needs GenericWorkload): the scheduler's GangScheduling plugin.
- `DRAWorkloadResourceClaims` (beta, off; needs GenericWorkload): a PodGroup's `spec.resourceClaims`,
  one claim shared by the group and reserved for it.

Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

GENERIC_WORKLOAD = "GenericWorkload"
GANG_SCHEDULING = "GangScheduling"
DRA_WORKLOAD_RESOURCE_CLAIMS = "DRAWorkloadResourceClaims"

# gate -> (1.37 default, stage)
DEFAULTS: dict[str, tuple[bool, str]] = {
    GENERIC_WORKLOAD: (False, "BETA"),
    GANG_SCHEDULING: (False, "ALPHA"),
    DRA_WORKLOAD_RESOURCE_CLAIMS: (False, "BETA"),
}

# gate -> the gates it needs on
DEPENDENCIES: dict[str, tuple[str, ...]] = {
    GANG_SCHEDULING: (GENERIC_WORKLOAD,),
    DRA_WORKLOAD_RESOURCE_CLAIMS: (GENERIC_WORKLOAD,),
}


class FeatureGateError(ValueError):
    """A gate that does not exist, a value that is not a boolean, or a dependency left off."""


class FeatureGates:
    """An immutable set of gate values: the 1.37 defaults overridden by `overrides`."""

    __slots__ = ("_values",)

    def __init__(self, overrides: Mapping[str, bool] | None = None) -> None:
        values = {name: default for name, (default, _stage) in DEFAULTS.items()}
        for name, value in (overrides or {}).items():
            if name not in DEFAULTS:
                raise FeatureGateError(f"unrecognized feature gate: {name} (known: {', '.join(sorted(DEFAULTS))})")
            values[name] = bool(value)
        self._values = values

    def enabled(self, name: str) -> bool:
        """Whether `name` is on (and every gate it depends on)."""
        if not self._values.get(name, False):
            return False
        return all(self.enabled(dep) for dep in DEPENDENCIES.get(name, ()))

    def check(self) -> None:
        """Raise FeatureGateError if a gate is on while one it needs is off."""
        for name, deps in DEPENDENCIES.items():
            if self._values[name]:
                off = [d for d in deps if not self._values[d]]
                if off:
                    raise FeatureGateError(f"feature gate {name} requires {', '.join(off)} to be enabled")

    def with_enabled(self, names: Iterable[str]) -> FeatureGates:
        return FeatureGates({**self._values, **{n: True for n in names}})

    def overrides(self) -> dict[str, bool]:
        """The gates that differ from their defaults."""
        return {n: v for n, v in self._values.items() if v != DEFAULTS[n][0]}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FeatureGates) and other._values == self._values

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._values.items())))

    def __repr__(self) -> str:
        return f"FeatureGates({self.overrides()!r})"


DEFAULT = FeatureGates()


def parse(text: str) -> FeatureGates:
    """`--feature-gates A=true,B=false` (as upstream's flag: comma-separated `name=bool`)."""
    overrides: dict[str, bool] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip().lower()
        if not sep or value not in ("true", "false"):
            raise FeatureGateError(f"invalid value of {item}: want NAME=true|false")
        overrides[name] = value == "true"
    gates = FeatureGates(overrides)
    gates.check()
    return gates
