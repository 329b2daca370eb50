"""LimitRanger's rules (cp.limitranges) beyond the HTTP tests: values compared in milli-units (so
fractional cpu is exact), the ratio printed as Go's %f, errors deduplicated as upstream's aggregate."""

from __future__ import annotations

from typing import Any

from cp import limitranges


def _pod(requests: dict[str, str], limits: dict[str, str]) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "resources": {"requests": requests, "limits": limits}}]}}


def _range(**item: Any) -> dict[str, Any]:
    return {"spec": {"limits": [{"type": "Container", **item}]}}


def test_milli_precision_and_ratio() -> None:
    assert limitranges.validate_pod(_pod({"cpu": "250m"}, {"cpu": "250m"}), _range(min={"cpu": "250m"})) == ""
    assert limitranges.validate_pod(_pod({"cpu": "249m"}, {"cpu": "1"}), _range(min={"cpu": "250m"})) == (
        "minimum cpu usage per Container is 250m, but request is 249m")
    assert limitranges.validate_pod(_pod({"memory": "300Mi"}, {"memory": "1Gi"}),
                                    _range(maxLimitRequestRatio={"memory": "3"})) == (
        "memory max limit to request ratio per Container is 3, but provided ratio is 3.413333")


def test_duplicate_errors_are_reported_once() -> None:
    pod = {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
    assert limitranges.validate_pod(pod, _range(max={"cpu": "1"})) == (
        "maximum cpu usage per Container is 1.  No limit is specified")
