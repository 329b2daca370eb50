"""The health reporter's decisions with recorded writes (fake client, seeded caches): the pod's
`allocatedResourcesStatus`, the claim's device `Ready` condition, staleness (`Unknown` after the
timeout), the remediation DeviceTaintRule, and the DeviceHealth naming, validation and CLI parsing.

Out of scope: the controller running against a server (test_health_integration.py).
"""

from __future__ import annotations

import argparse
import copy
from typing import Any

import pytest

from controllers import health
from controllers import taint_evictor as te
from controllers.runtime import reconcile
from cp.cli import device as health_cli
from tests.controllers.support import seeded_informers
from tests.controllers.taints.fakes import CLAIMS, DRIVER, NOW, PODS, RULES, Fake, claim, pod, ts

DH = health.DEVICE_HEALTHS


def _report(device: str, state: str, message: str = "", *, at: float = 0.0, pool: str = "node-1",
            **extra: Any) -> dict[str, Any]:
    obj = health.health_object(DRIVER, pool, device, state, message, NOW + at)
    obj["metadata"]["uid"] = f"uid-dh-{device}"
    obj["metadata"]["creationTimestamp"] = ts(at)
    obj["spec"].update(extra)
    return obj


def _reporter(fake: Fake, *, taint: str | None = None) -> health.HealthReporter:
    return health.HealthReporter(client=fake, informer_factory=seeded_informers(fake),  # type: ignore[arg-type]
                                 clock=fake.clock, taint_unhealthy=taint)


def _world(*reports: dict[str, Any], containers: list[dict[str, Any]] | None = None,
           devices: tuple[tuple[str, str], ...] = (("node-1", "gpu-0"),), requests: list[str] | None = None) -> Fake:
    p = pod("pod-a", containers=containers)
    fake = Fake((PODS, p), (CLAIMS, claim("claim-a", devices, reserved=[p], requests=requests)),
                *((DH, r) for r in reports))
    fake.clock.set(NOW)
    return fake


def _sync(fake: Fake, reporter: health.HealthReporter) -> None:
    for resource, cache in ((PODS, reporter.pods), (CLAIMS, reporter.claims), (DH, reporter.reports)):
        cache.replace([copy.deepcopy(o) for (gr, _ns, _n), o in fake.objects.items() if gr == resource])
    if reporter.rules is not None:
        reporter.rules.replace([copy.deepcopy(o) for (gr, _ns, _n), o in fake.objects.items() if gr == RULES])


POD = reconcile.Request(resource=te.PODS, namespace="default", name="pod-a")
CLAIM = reconcile.Request(resource=te.CLAIMS, namespace="default", name="claim-a")


def _ars(action: Any, container: str = "app") -> Any:
    for cs in action.body["status"]["containerStatuses"]:
        if cs["name"] == container:
            return cs.get("allocatedResourcesStatus")
    return None


async def test_pod_status_written_once_then_left_alone() -> None:
    fake = _world(_report("gpu-0", "Unhealthy", "ECC errors"))
    reporter = _reporter(fake)
    await reporter.reconcile(POD)
    (write,) = fake.writes
    assert (write.verb, write.resource, write.subresource) == ("update", "pods", "status")
    assert write.body["status"]["containerStatuses"] == [{
        "name": "app", "image": "busybox", "imageID": "", "ready": False, "restartCount": 0,
        "allocatedResourcesStatus": [{"name": "claim:gpu", "resources": [
            {"resourceID": "gpu.example.com/node-1/gpu-0", "health": "Unhealthy", "message": "ECC errors"}]}]}]
    assert write.body["metadata"]["resourceVersion"]  # guarded: the whole list is atomic
    _sync(fake, reporter)
    fake.actions.clear()
    await reporter.reconcile(POD)
    assert fake.writes == []


async def test_existing_container_status_is_kept_and_request_filters_devices() -> None:
    containers = [{"name": "app", "image": "busybox", "resources": {"claims": [{"name": "gpu", "request": "a"}]}},
                  {"name": "b", "image": "busybox", "resources": {"claims": [{"name": "gpu", "request": "b"}]}}]
    fake = _world(_report("gpu-0", "Healthy"), _report("gpu-1", "Healthy"), containers=containers,
                  devices=(("node-1", "gpu-0"), ("node-1", "gpu-1")), requests=["a/small", "b"])
    running = {"name": "app", "image": "busybox", "imageID": "docker://x", "ready": True, "restartCount": 2,
               "state": {"running": {"startedAt": ts()}}}
    fake.objects[("pods", "default", "pod-a")]["status"]["containerStatuses"] = [running]
    reporter = _reporter(fake)
    await reporter.reconcile(POD)
    (write,) = fake.writes
    app, b = write.body["status"]["containerStatuses"]
    assert {k: v for k, v in app.items() if k != "allocatedResourcesStatus"} == running
    assert app["allocatedResourcesStatus"] == [{"name": "claim:gpu/a", "resources": [
        {"resourceID": "gpu.example.com/node-1/gpu-0", "health": "Healthy"}]}]
    assert b["allocatedResourcesStatus"] == [{"name": "claim:gpu/b", "resources": [
        {"resourceID": "gpu.example.com/node-1/gpu-1", "health": "Healthy"}]}]


async def test_no_report_is_unknown_and_unallocated_claim_drops_the_entry() -> None:
    fake = _world()
    reporter = _reporter(fake)
    await reporter.reconcile(POD)
    assert _ars(fake.writes[0]) == [{"name": "claim:gpu", "resources": [
        {"resourceID": "gpu.example.com/node-1/gpu-0", "health": "Unknown"}]}]
    _sync(fake, reporter)
    del fake.objects[("resourceclaims.resource.k8s.io", "default", "claim-a")]["status"]["allocation"]
    _sync(fake, reporter)
    fake.actions.clear()
    await reporter.reconcile(POD)
    (write,) = fake.writes
    assert "allocatedResourcesStatus" not in write.body["status"]["containerStatuses"][0]


async def test_unbound_pod_is_not_reported() -> None:
    p = pod("pod-a", node=None)
    fake = Fake((PODS, p), (CLAIMS, claim("claim-a", [("node-1", "gpu-0")])), (DH, _report("gpu-0", "Healthy")))
    await _reporter(fake).reconcile(POD)
    assert fake.writes == []


def test_staleness() -> None:
    fresh = _report("gpu-0", "Unhealthy", "hot")
    assert health.effective_health([fresh], NOW + 29.9) == health.Health(state="Unhealthy", message="hot",
                                                                         expires=NOW + 30)
    stale = health.effective_health([fresh], NOW + 30)
    assert stale.state == "Unknown" and stale.expires is None
    assert stale.message == "no health update since 2027-01-15T08:00:00Z (timeout 30s)"
    # A later write (the server's managedFields time) counts as an update even without lastUpdated.
    patched = copy.deepcopy(fresh)
    patched["metadata"]["managedFields"] = [{"manager": "kubectl-patch", "operation": "Update", "time": ts(25)}]
    assert health.effective_health([patched], NOW + 50).state == "Unhealthy"
    # Per-report timeout, newest report wins, unknown values.
    assert health.effective_health([_report("gpu-0", "Healthy", timeoutSeconds=5)], NOW + 5).state == "Unknown"
    older = _report("gpu-0", "Healthy", at=-10)
    assert health.effective_health([older, fresh], NOW).state == "Unhealthy"
    odd = _report("gpu-0", "Healthy")
    odd["spec"]["health"] = "degraded"
    assert health.effective_health([odd], NOW).state == "Unknown"
    assert health.effective_health([], NOW) == health.Health(state="Unknown")


async def test_claim_ready_condition_follows_health() -> None:
    fake = _world(_report("gpu-0", "Unhealthy", "ECC errors"))
    reporter = _reporter(fake)
    await reporter.reconcile(CLAIM)
    (write,) = fake.writes
    assert (write.verb, write.resource, write.subresource) == ("update", "resourceclaims.resource.k8s.io", "status")
    assert write.body["status"]["devices"] == [{
        "driver": DRIVER, "pool": "node-1", "device": "gpu-0", "conditions": [{
            "type": "Ready", "status": "False", "observedGeneration": 1, "lastTransitionTime": ts(),
            "reason": "DeviceUnhealthy", "message": "ECC errors"}]}]
    assert write.body["status"]["reservedFor"]  # the rest of the status is kept
    _sync(fake, reporter)
    fake.actions.clear()
    await reporter.reconcile(CLAIM)
    assert fake.writes == []
    # Unknown leaves it alone; Healthy flips it back.
    fake.clock.advance(31)
    await reporter.reconcile(CLAIM)
    assert fake.writes == []
    fake.put(DH, _report("gpu-0", "Healthy", at=31))
    _sync(fake, reporter)
    await reporter.reconcile(CLAIM)
    (write,) = fake.writes
    (cond,) = write.body["status"]["devices"][0]["conditions"]
    assert (cond["status"], cond["reason"], cond["lastTransitionTime"]) == ("True", "DeviceHealthy", ts(31))


async def test_healthy_device_without_our_condition_is_not_touched() -> None:
    fake = _world(_report("gpu-0", "Healthy"))
    await _reporter(fake).reconcile(CLAIM)
    assert fake.writes == []


async def test_remediation_rule_created_then_deleted() -> None:
    fake = _world(_report("gpu-0", "Unhealthy", "XID 79"))
    reporter = _reporter(fake, taint="NoExecute")
    name = health.health_object_name(DRIVER, "node-1", "gpu-0")
    result = await reporter.reconcile(reconcile.Request(resource=DH, name=name))
    assert result == reconcile.Result(requeue_after=30.0)  # when it would turn Unknown
    (create,) = fake.writes
    assert (create.verb, create.resource, create.name) == ("create", RULES, "device-unhealthy." + name)
    assert create.body["spec"] == {"deviceSelector": {"driver": DRIVER, "pool": "node-1", "device": "gpu-0"},
                                   "taint": {"key": "sim.cplane.dev/device-unhealthy", "value": "true",
                                             "effect": "NoExecute"}}
    assert create.body["metadata"]["ownerReferences"] == [{
        "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "DeviceHealth", "name": name, "uid": "uid-dh-gpu-0",
        "controller": True}]
    _sync(fake, reporter)
    fake.actions.clear()
    await reporter.reconcile(reconcile.Request(resource=DH, name=name))
    assert fake.writes == []  # exists already
    fake.clock.advance(40)  # Unknown: left alone
    await reporter.reconcile(reconcile.Request(resource=DH, name=name))
    assert fake.writes == []
    fake.put(DH, _report("gpu-0", "Healthy", at=40))
    _sync(fake, reporter)
    await reporter.reconcile(reconcile.Request(resource=DH, name=name))
    (delete,) = fake.writes
    assert (delete.verb, delete.resource, delete.name) == ("delete", RULES, "device-unhealthy." + name)
    assert delete.body["preconditions"]["uid"]


async def test_no_remediation_by_default_and_foreign_rules_are_kept() -> None:
    fake = _world(_report("gpu-0", "Unhealthy"))
    name = health.health_object_name(DRIVER, "node-1", "gpu-0")
    await _reporter(fake).reconcile(reconcile.Request(resource=DH, name=name))
    assert fake.writes == []
    foreign = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
               "metadata": {"name": health.rule_name_for(name)}, "spec": {}}
    fake = _world(_report("gpu-0", "Healthy"))
    fake.put(RULES, foreign)
    await _reporter(fake, taint="NoSchedule").reconcile(reconcile.Request(resource=DH, name=name))
    assert fake.writes == []


def test_names() -> None:
    assert health.health_object_name("gpu.example.com", "node-1", "gpu-0") == "gpu.example.com.node-1.gpu-0"
    odd = health.health_object_name("GPU.example.com", "rack/a_1", "gpu-0")
    assert odd.startswith("gpu.example.com.rack-a-1.gpu-0-") and len(odd) == len("gpu.example.com.rack-a-1.gpu-0-") + 8
    assert odd != health.health_object_name("GPU.example.com", "rack/a-1", "gpu-0")
    long = health.health_object_name("d.example.com", "p" * 250, "x")
    assert len(long) <= 253
    assert health_cli.parse_device("gpu.example.com/rack/a/gpu-0") == ("gpu.example.com", "rack/a", "gpu-0")
    with pytest.raises(ValueError):
        health_cli.parse_device("gpu.example.com/gpu-0")


def test_validation_and_cli_parsing() -> None:
    ok = health.health_object("d.example.com", "p", "x", "Unhealthy", "m", NOW)
    assert health.validate_device_health(ok) == []
    bad = {"spec": {"driver": "", "health": "Broken", "lastUpdated": "yesterday", "timeoutSeconds": 0}}
    assert sorted(c.field for c in health.validate_device_health(bad)) == [
        "spec.device", "spec.driver", "spec.health", "spec.lastUpdated", "spec.pool", "spec.timeoutSeconds"]
    parser = argparse.ArgumentParser(prog="cplane")
    health_cli.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["device", "health", "set", "d.example.com/p/x", "UNHEALTHY", "-m", "why",
                              "--server", "http://127.0.0.1:1"])
    assert (args.device, args.health, args.message, args.server) == ("d.example.com/p/x", "Unhealthy", "why",
                                                                     "http://127.0.0.1:1")
    with pytest.raises(SystemExit):
        parser.parse_args(["device", "health", "set", "d/p/x", "sick"])
    with pytest.raises(ValueError):
        health.factory(taint_unhealthy="PreferNoSchedule")


async def test_conflict_is_retried_against_the_live_pod() -> None:
    fake = _world(_report("gpu-0", "Healthy"))
    reporter = _reporter(fake)  # caches hold the pod as it was
    running = {"name": "app", "image": "busybox", "imageID": "docker://x", "ready": True, "restartCount": 0,
               "state": {"running": {"startedAt": ts()}}}
    stored = fake.objects[("pods", "default", "pod-a")]
    stored["status"]["containerStatuses"] = [running]  # a kubelet wrote meanwhile
    fake._bump(stored)
    await reporter.reconcile(POD)
    assert [(a.verb, a.subresource) for a in fake.actions] == [("update", "status"), ("get", ""),
                                                               ("update", "status")]
    (app,) = fake.stored(PODS, "pod-a", "default")["status"]["containerStatuses"]
    assert app["ready"] is True and app["state"] == running["state"]
    assert app["allocatedResourcesStatus"][0]["resources"][0]["health"] == "Healthy"


async def test_a_writer_that_keeps_dropping_the_field_is_not_fought_for_ever() -> None:
    fake = _world(_report("gpu-0", "Healthy"))
    reporter = _reporter(fake)
    for _ in range(health.MAX_SAME_WRITES + 3):
        await reporter.reconcile(POD)
        stored = fake.objects[("pods", "default", "pod-a")]
        for cs in stored["status"]["containerStatuses"]:
            cs.pop("allocatedResourcesStatus", None)  # the other writer strips it again
        fake._bump(stored)
        _sync(fake, reporter)
    assert len([a for a in fake.writes if a.resource == "pods"]) == health.MAX_SAME_WRITES
    # New content is written again.
    fake.put(DH, _report("gpu-0", "Unhealthy", "hot"))
    _sync(fake, reporter)
    await reporter.reconcile(POD)
    assert len([a for a in fake.writes if a.resource == "pods"]) == health.MAX_SAME_WRITES + 1
