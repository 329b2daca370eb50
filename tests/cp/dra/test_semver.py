"""cp/dra/semver.py: semantic versions (order, invalid forms, normalization) as DRA attributes use them."""

from __future__ import annotations

import itertools

import pytest

from cp.dra import semver


def test_semver_order() -> None:
    ordered = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
               "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.2.0", "1.10.0", "2.0.0"]
    versions = [semver.parse(v) for v in ordered]
    for a, b in itertools.pairwise(versions):
        assert a.compare(b) == -1 and b.compare(a) == 1
    assert semver.parse("1.0.0+x").compare(semver.parse("1.0.0+y")) == 0


@pytest.mark.parametrize("text", ["1.0", "01.0.0", "1.0.0-", "1.0.0-01", "v1.0.0", "1.0.0+", "a.b.c"])
def test_semver_invalid(text: str) -> None:
    with pytest.raises(semver.SemverError):
        semver.parse(text)


def test_semver_normalize() -> None:
    assert str(semver.normalize_and_parse("v1")) == "1.0.0"
    assert str(semver.normalize_and_parse("01.02.03")) == "1.2.3"
    with pytest.raises(semver.SemverError):
        semver.normalize_and_parse("1.0-rc")
