"""cp/validation/core.py: coordination.k8s.io Lease rules (durations, transitions, coordinated leader
election strategy and preferred holder), as pkg/apis/coordination/validation reports them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cp.validation.rules import create_errors


def lease(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
            "spec": {"holderIdentity": "a", **spec}}


@pytest.mark.parametrize(("spec", "expected"), [
    ({"leaseDurationSeconds": 15, "strategy": "OldestEmulationVersion", "preferredHolder": "b"}, []),
    ({"leaseDurationSeconds": 0, "leaseTransitions": -1},
     ["spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
      "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"]),
    ({"strategy": "Newest"},
     ['spec.strategy.strategy: Unsupported value: "Newest": supported values: "OldestEmulationVersion"']),
    ({"strategy": "example.com/mine"}, []),
    ({"preferredHolder": "b"}, ["spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"]),
])
def test_lease(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(lease(**spec)) == expected
