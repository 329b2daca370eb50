"""`--runtime-config`: which built-in API versions a server serves, as kube-apiserver's flag of that
name (`k8s.io/apiserver/pkg/server/options/api_enablement.go` and `server/resourceconfig/helpers.go`).

The flag is a comma list of `KEY=VALUE` (a bare `KEY` has the empty value). A KEY is

- `api/all`, `api/ga`, `api/beta` or `api/alpha` (every version, those of the form `v1`, `v1beta1`,
  `v1alpha1`), VALUE exactly `true` or `false`; applied in that order, so `api/all=false,api/beta=true`
  serves the beta versions only;
- `GROUP/VERSION` (`resource.k8s.io/v1beta2`; the core group is `api/v1`), VALUE a Go boolean
  (`strconv.ParseBool`: `1`, `t`, `true`, `TRUE`...), empty meaning true;
- `GROUP/VERSION/RESOURCE` (lowercase plural): one resource of a version.

A resource's own entry wins over its version's, a version's over the `api/...` ones, and those over
its default (`ResourceKind.enabled_by_default`: the built-in versions upstream leaves off, beta and
alpha, are off). Errors are upstream's: an unknown group (`unknown api groups ...`), a version the
server does not have (`group version ... that has not been registered`), a malformed key or value,
`api/all=false` alone. Pure; checking needs only the built-in group/versions, no per-kind work.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_GA = re.compile(r"^v\d+$")
_BETA = re.compile(r"^v\d+beta\d+$")
_ALPHA = re.compile(r"^v\d+alpha\d+$")

# The `api/...` keys, in the order upstream applies them.
MATCHERS: dict[str, re.Pattern[str] | None] = {"api/all": None, "api/ga": _GA, "api/beta": _BETA,
                                                "api/alpha": _ALPHA}

_LAST_FIRST = tuple(reversed(MATCHERS.items()))

_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


class RuntimeConfigError(ValueError):
    """An entry kube-apiserver refuses at start-up."""


def _parse_bool(key: str, value: str) -> bool:
    if value == "" or value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise RuntimeConfigError(f'invalid value of {key}: {value}, err: strconv.ParseBool: parsing "{value}": '
                             "invalid syntax")


def _group(token: str) -> str:
    """The group a key's first token names: `api` is the core group, as its path `/api/v1`."""
    return "" if token == "api" else token


class RuntimeConfig:
    """The parsed flag: what it says of the `api/...` matchers, of versions and of resources."""

    __slots__ = ("_matchers", "_resources", "_versions", "text")

    def __init__(self, *, matchers: Mapping[str, bool] | None = None,
                 versions: Mapping[tuple[str, str], bool] | None = None,
                 resources: Mapping[tuple[str, str, str], bool] | None = None, text: str = "") -> None:
        self._matchers = dict(matchers or {})
        self._versions = dict(versions or {})
        self._resources = dict(resources or {})
        self.text = text

    def enabled(self, *, group: str, version: str, plural: str, default: bool) -> bool:
        """Whether the resource `plural` of `group`/`version` is served (`default`: when nothing says)."""
        found = self._resources.get((group, version, plural))
        if found is not None:
            return found
        found = self._versions.get((group, version))
        if found is not None:
            return found
        for key, pattern in _LAST_FIRST:  # the last one applied wins
            if key in self._matchers and (pattern is None or pattern.match(version)):
                return self._matchers[key]
        return default

    @property
    def empty(self) -> bool:
        return not (self._matchers or self._versions or self._resources)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RuntimeConfig) and (self._matchers, self._versions, self._resources) == (
            other._matchers, other._versions, other._resources)

    def __hash__(self) -> int:
        return hash((tuple(sorted(self._matchers.items())), tuple(sorted(self._versions.items())),
                     tuple(sorted(self._resources.items()))))

    def __repr__(self) -> str:
        return f"RuntimeConfig({self.text!r})"


DEFAULT = RuntimeConfig()


def entries(text: str) -> dict[str, str]:
    """The flag as component-base's `ConfigurationMap` reads it: comma-separated, each split at its
    first `=`, keys and values trimmed, the last of a repeated key kept."""
    out: dict[str, str] = {}
    for item in text.split(","):
        if not item:
            continue
        key, sep, value = item.partition("=")
        out[key.strip()] = value.strip() if sep else ""
    return out


def parse(text: str, *, group_versions: Iterable[tuple[str, str]]) -> RuntimeConfig:
    """`--runtime-config TEXT` against the built-in `group_versions` a server has (served by default or
    not). Raises RuntimeConfigError as kube-apiserver refuses the flag."""
    known = set(group_versions)
    groups = {g for g, _v in known}
    found = entries(text)
    if found.get("api/all") == "false" and len(found) == 1:
        raise RuntimeConfigError("invalid runtime-config with only api/all=false")
    matchers: dict[str, bool] = {}
    versions: dict[tuple[str, str], bool] = {}
    resources: dict[tuple[str, str, str], bool] = {}
    unknown: set[str] = set()
    parsed: list[tuple[str, list[str]]] = []
    for key in found:
        if key in MATCHERS:
            continue
        tokens = key.split("/")
        if len(tokens) not in (2, 3) or not tokens[1]:
            raise RuntimeConfigError(f"runtime-config invalid key {key}")
        if _group(tokens[0]) not in groups:
            unknown.add(f"{tokens[0]}/{tokens[1]}")
            continue
        parsed.append((key, tokens))
    if unknown:
        raise RuntimeConfigError(f"unknown api groups {','.join(sorted(unknown))}")
    for key, value in found.items():
        if key not in MATCHERS:
            continue
        if value not in ("true", "false"):
            raise RuntimeConfigError(f"invalid value {key}={value}")
        matchers[key] = value == "true"
    for key, tokens in parsed:
        gv = (_group(tokens[0]), tokens[1])
        if gv not in known:
            raise RuntimeConfigError(f"group version {tokens[0]}/{tokens[1]} that has not been registered")
        enabled = _parse_bool(key, found[key])
        if len(tokens) == 2:
            versions[gv] = enabled
        else:
            if tokens[2].lower() != tokens[2]:
                raise RuntimeConfigError(f"invalid key {key}: group/version/resource and resource is always "
                                         f'lowercase plural, not "{tokens[2]}"')
            resources[(*gv, tokens[2])] = enabled
    return RuntimeConfig(matchers=matchers, versions=versions, resources=resources, text=text)
