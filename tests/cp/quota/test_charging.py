"""Charging writes to quotas and measuring usage (cp.quota.charging), beyond the HTTP tests: an
update charges only what it adds, and only to quotas that counted the stored object; writes to
`/status` are charged but never refused; negative usage is refused; the controller's measure
counts what matches the scopes and leaves out names no evaluator measures."""

from __future__ import annotations

from typing import Any

import pytest

from cp import quota
from cp import resourcelists as rl

CTX = quota.UsageContext(now=1_800_000_000.0)
SERVICES = quota.evaluator_for("", "services")


def _state(name: str, hard: dict[str, str], used: dict[str, str], **spec: Any) -> quota.QuotaState:
    return quota.QuotaState.of({"metadata": {"name": name, "namespace": "ns", "resourceVersion": "3"},
                                "spec": spec, "status": {"hard": hard, "used": used}})


def _svc(kind: str, ports: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": "s", "namespace": "ns", "resourceVersion": "2"},
            "spec": {"type": kind, "ports": [{"port": 80 + i} for i in range(ports)]}}


def test_an_update_charges_what_it_adds() -> None:
    q = _state("q", {"services": "5", "services.nodeports": "3"}, {"services": "1", "services.nodeports": "0"})
    out = quota.check_request([q], evaluator=SERVICES, operation="UPDATE", subresource="", obj=_svc("NodePort", 2),
                              old=_svc("ClusterIP", 2), ctx=CTX)
    assert rl.render(out[0].used) == {"services": "1", "services.nodeports": "2"}
    back = quota.check_request(out, evaluator=SERVICES, operation="UPDATE", subresource="", obj=_svc("ClusterIP", 2),
                               old=_svc("NodePort", 2), ctx=CTX)
    assert rl.render(back[0].used) == {"services": "1", "services.nodeports": "2"}  # the controller gives back
    with pytest.raises(quota.QuotaRefused, match=r"exceeded quota: q, requested: services\.nodeports=4, used: services\.nodeports=2"):
        quota.check_request(out, evaluator=SERVICES, operation="UPDATE", subresource="",
                            obj=_svc("LoadBalancer", 4), old=_svc("ClusterIP", 4), ctx=CTX)
    status = quota.check_request(out, evaluator=SERVICES, operation="UPDATE", subresource="status",
                                 obj=_svc("LoadBalancer", 4), old=_svc("ClusterIP", 4), ctx=CTX)
    assert rl.render(status[0].used)["services.nodeports"] == "6"  # charged, not refused


def test_negative_usage_is_refused() -> None:
    pods = quota.evaluator_for("", "pods")
    pod = {"metadata": {"name": "p", "namespace": "ns"},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "-1"}}}]}}
    with pytest.raises(quota.QuotaRefused, match=r"quota usage is negative for resource\(s\): cpu,requests.cpu"):
        quota.check_request([_state("q", {"cpu": "1"}, {"cpu": "0"})], evaluator=pods, operation="CREATE",
                            subresource="", obj=pod, old=None, ctx=CTX)


def test_calculate_usage_counts_what_matches_the_scopes() -> None:
    pods = [{"metadata": {"name": n, "namespace": "ns"}, "spec": {"activeDeadlineSeconds": 5} if n == "job" else {},
             "status": {"phase": "Failed" if n == "failed" else "Running"}} for n in ("web", "job", "failed")]
    evaluators = quota.evaluators_for(["pods", "count/pods", "count/widgets.example.com"], ctx=CTX,
                                      countable=lambda g, r: False)
    assert [(e.group, e.resource) for e in evaluators] == [("", "pods")]

    def objects(e: quota.Evaluator) -> list[dict[str, Any]]:
        return pods if e.resource == "pods" else []

    hard = {"pods": "9", "count/pods": "9", "count/widgets.example.com": "1"}
    assert rl.render(quota.calculate_usage(hard=hard, scopes=[], evaluators=evaluators, objects=objects,
                                           ctx=CTX)) == {"count/pods": "3", "pods": "2"}
    scoped = quota.calculate_usage(hard=hard, scopes=[quota.Scope(scope_name="NotTerminating")],
                                   evaluators=evaluators, objects=objects, ctx=CTX)
    assert rl.render(scoped) == {"count/pods": "2", "pods": "1"}
