"""Semantic versions (semver 2.0.0) as `github.com/blang/semver/v4` parses and orders them.

Used for `version` device attributes in CEL (`semver()`, `isSemver()`, comparisons) and by the
Kubernetes CEL semver library's `normalize` variant. Build metadata is kept but ignored when
comparing, as in blang/semver. Pure; no I/O.
"""

from __future__ import annotations

import functools
import re

__all__ = ["SemverError", "Version", "normalize_and_parse", "parse"]

_NUM = re.compile(r"0|[1-9][0-9]*\Z")
_ALNUM = re.compile(r"[0-9A-Za-z-]+\Z")


class SemverError(ValueError):
    """Not a valid semantic version."""


class Version:
    __slots__ = ("build", "major", "minor", "patch", "pre")

    def __init__(self, major: int, minor: int, patch: int, pre: tuple[int | str, ...] = (),
                 build: tuple[str, ...] = ()) -> None:
        self.major, self.minor, self.patch, self.pre, self.build = major, minor, patch, pre, build

    def compare(self, other: Version) -> int:
        for a, b in ((self.major, other.major), (self.minor, other.minor), (self.patch, other.patch)):
            if a != b:
                return 1 if a > b else -1
        if not self.pre and not other.pre:
            return 0
        if not self.pre:
            return 1
        if not other.pre:
            return -1
        for x, y in zip(self.pre, other.pre, strict=False):
            if x == y:
                continue
            if isinstance(x, int) and isinstance(y, int):
                return 1 if x > y else -1
            if isinstance(x, int):
                return -1
            if isinstance(y, int):
                return 1
            return 1 if x > y else -1
        if len(self.pre) == len(other.pre):
            return 0
        return 1 if len(self.pre) > len(other.pre) else -1

    def key_without_build(self) -> str:
        """A string that is equal for two versions exactly when `compare` returns 0."""
        s = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            s += "-" + ".".join(str(p) for p in self.pre)
        return s

    def __str__(self) -> str:
        s = self.key_without_build()
        if self.build:
            s += "+" + ".".join(self.build)
        return s

    def __repr__(self) -> str:
        return f"Version({str(self)!r})"


@functools.lru_cache(maxsize=4096)
def parse(text: str) -> Version:
    """Strict semver 2.0.0 parse (blang `semver.Parse`); raises `SemverError`."""
    if not isinstance(text, str) or not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major_s, minor_s, rest = parts
    for label, s in (("major", major_s), ("minor", minor_s)):
        if not s.isascii() or not s.isdigit():
            raise SemverError(f"Invalid character(s) found in {label} number {s!r}")
        if len(s) > 1 and s[0] == "0":
            raise SemverError(f"{label.capitalize()} number must not contain leading zeroes {s!r}")
    build: tuple[str, ...] = ()
    pre: tuple[int | str, ...] = ()
    patch_s = rest
    idx = min((i for i in (rest.find("-"), rest.find("+")) if i >= 0), default=-1)
    tail = ""
    if idx >= 0:
        patch_s, tail = rest[:idx], rest[idx:]
    if not patch_s.isascii() or not patch_s.isdigit():
        raise SemverError(f"Invalid character(s) found in patch number {patch_s!r}")
    if len(patch_s) > 1 and patch_s[0] == "0":
        raise SemverError(f"Patch number must not contain leading zeroes {patch_s!r}")
    if tail.startswith("-"):
        pre_s, _, build_s = tail[1:].partition("+")
        has_build = "+" in tail[1:]
        pre = tuple(_parse_prerelease(p) for p in pre_s.split("."))
        if has_build:
            build = _parse_build(build_s)
    elif tail.startswith("+"):
        build = _parse_build(tail[1:])
    return Version(int(major_s), int(minor_s), int(patch_s), pre, build)


def _parse_prerelease(p: str) -> int | str:
    if not p:
        raise SemverError("Prerelease is empty")
    if p.isascii() and p.isdigit():
        if len(p) > 1 and p[0] == "0":
            raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {p!r}")
        return int(p)
    if not _ALNUM.match(p):
        raise SemverError(f"Invalid character(s) found in prerelease {p!r}")
    return p


def _parse_build(s: str) -> tuple[str, ...]:
    out = tuple(s.split("."))
    for b in out:
        if not b:
            raise SemverError("Build meta data is empty")
        if not _ALNUM.match(b):
            raise SemverError(f"Invalid character(s) found in build meta data {b!r}")
    return out


def normalize_and_parse(text: str) -> Version:
    """The Kubernetes CEL semver library's `normalize` mode: drop a leading `v`, fill missing
    minor/patch with zeros, strip leading zeros, then parse strictly."""
    s = text[1:] if text.startswith("v") else text
    parts = s.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or p[0] not in "0123456789":
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        while len(parts) < 3:
            parts.append("0")
    return parse(".".join(parts))
