"""The upstream example driver's four device-taint demos (kubernetes-sigs/dra-example-driver,
`demo/examples/device-taints-tolerations/`, at 31914ce), run with the real kubectl 1.37.1 against a
sandbox started as their READMEs ask (`--runtime-config resource.k8s.io/v1beta2=true`): `make run`'s
fleet (`gpu.example.com` GPUs on two nodes), the scheduler, the ResourceClaim controller and the
device taint eviction controller, on a virtual clock moved by hand. Each demo's files are applied
in its README's order, with its commands (`apply`, or `create` where the README says so), and the
outcome is read back with kubectl as a user would (`get -o json`, `get events`, `describe`, `wait`).

The manifests are upstream's, document for document and field for field (their comments left
out); they name no node, so nothing is adapted but one file (below). The READMEs' node names
(`taint-tolerate-worker...`) are their kind cluster's; here the pods land on `gpu-node-0`/`gpu-node-1`.

Where a README and Kubernetes 1.37 disagree, these tests hold cplane to 1.37:

- `device-taint-pod-noexecute` (step 6) and `device-taint-pod-toleration` say a pod created after
  the NoExecute rule, without a toleration, is "Scheduled then Evicted". In 1.37 the scheduler sees
  DeviceTaintRules (the allocator skips tainted devices a claim does not tolerate; NoExecute implies
  NoSchedule; kubernetes.io's device-taints page says the same), so that pod stays Pending with
  `FailedScheduling` and is never evicted; what the READMEs show is a scheduler that does not see
  the rule (e.g. one without DRADeviceTaintRules, beta and off by default in 1.36). The toleration
  demo's rule status then reads `NotStarted` (nothing to evict), not "1 pod evicted".
- `device-taint-pod-noschedule` has no README; its manifests' comments say what happens (the running
  pod keeps running, the new one is not scheduled). Its `4-pod-not-scheduled.yaml` has no
  `apiVersion`: kubectl refuses it, as against any cluster, and the test then applies it with
  `apiVersion: v1` added.
- The kubelet's own Events the READMEs list (`Pulled`, `Created`, `Started`, `Killing`) are not
  simulated by the fleet (docs/fleet.md); the scheduler's `Scheduled`/`FailedScheduling` and the
  controller's `DeviceTaintManagerEviction` are checked.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cp import clock as clocks
from cp import testing
from tests.kubectl.conftest import Kubectl, kubectl_on

pytestmark = pytest.mark.kubectl

DEMO = Path(__file__).resolve().parents[2] / "examples/fleets/demo.yaml"
NS = "basic-resourceclaimtemplate"
START = 1783492800.0  # 2026-07-08T06:40:00Z: a whole second, so timeAdded (RFC 3339, seconds) is exact

SANDBOX = pytest.mark.cplane(fleet=DEMO, controllers=["resourceclaim", "scheduler", "device-taint-eviction"],
                             virtual_clock=True, clock_start=START, runtime_config="resource.k8s.io/v1beta2=true")

# ---------------------------------------------------------------------------------- the manifests


def _namespace() -> str:
    return f"""\
apiVersion: v1
kind: Namespace
metadata:
  name: {NS}
"""


def _template(name: str, toleration: str = "") -> str:
    return f"""\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  namespace: {NS}
  name: {name}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
{toleration}"""


TOLERATION = """\
          tolerations:
          - key: gpu.example.com/unhealthy
            operator: Equal
            value: "true"
            effect: NoExecute
"""
TOLERATION_300S = TOLERATION + "            tolerationSeconds: 300\n"


def _pod(name: str, template: str, *, api_version: bool = True) -> str:
    return ("apiVersion: v1\n" if api_version else "") + f"""\
kind: Pod
metadata:
  namespace: {NS}
  name: {name}
  labels:
    app: {name}
spec:
  containers:
  - name: ctr0
    image: ubuntu:22.04
    command: ["bash", "-c"]
    args: ["export; trap 'exit 0' TERM; sleep 9999 & wait"]
    resources:
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: {template}
"""


def _rule(effect: str) -> str:
    return f"""\
apiVersion: resource.k8s.io/v1beta2
kind: DeviceTaintRule
metadata:
  name: example
spec:
  deviceSelector:
    driver: gpu.example.com
  taint:
    key: gpu.example.com/unhealthy
    value: "true"
    effect: {effect}
"""


def _files(*docs: str) -> str:
    return "\n---\n".join(docs)


NOEXECUTE = {
    "1-basic-resourceclaimtemplate.yaml": _files(_namespace(), _template("single-gpu")),
    "2-pod-to-be-evicted.yaml": _pod("pod-to-be-evicted", "single-gpu"),
    "3-device-taint-rule.yaml": _rule("NoExecute"),
    "4-pod-no-execute.yaml": _pod("pod-no-execute", "single-gpu"),
}
NOSCHEDULE = {
    "1-basic-resourceclaimtemplate.yaml": _files(_namespace(), _template("single-gpu")),
    "2-pod-keeps-running.yaml": _pod("pod-keeps-running", "single-gpu"),
    "3-device-taint-rule.yaml": _rule("NoSchedule"),
    "4-pod-not-scheduled.yaml": _pod("pod-no-schedule", "single-gpu", api_version=False),  # as upstream
}
TOLERATION_DEMO = {
    "1-device-taint-rule.yaml": _rule("NoExecute"),
    "2-basic-resourceclaimtemplate.yaml": _files(
        _namespace(), _template("single-gpu-without-toleration"),
        _template("single-gpu-with-toleration", TOLERATION),
        _pod("pod-without-toleration", "single-gpu-without-toleration"),
        _pod("pod-with-toleration", "single-gpu-with-toleration")),
}
EVICTION_TIME = {
    "1-basic-resourceclaimtemplate.yaml": _files(
        _namespace(), _template("single-gpu-without-toleration"),
        _template("single-gpu-with-toleration", TOLERATION),
        _template("single-gpu-with-300s-toleration", TOLERATION_300S),
        _pod("pod-no-toleration", "single-gpu-without-toleration"),
        _pod("pod-with-toleration", "single-gpu-with-toleration"),
        _pod("pod-with-300s-toleration", "single-gpu-with-300s-toleration")),
    "2-device-taint-rule.yaml": _rule("NoExecute"),
}

# ---------------------------------------------------------------------------------- helpers


@pytest.fixture
async def kubectl(cplane_sandbox: testing.Sandbox, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubectl_on(cplane_sandbox, tmp_path) as k:
        yield k


async def _run(kubectl: Kubectl, verb: str, files: dict[str, str], name: str) -> list[str]:
    """`kubectl VERB -f NAME` on the demo's file; its output lines."""
    return (await kubectl(verb, "-f", kubectl.write(name, files[name]))).lines


async def _pod_json(kubectl: Kubectl, pod: str) -> dict[str, Any]:
    return (await kubectl("get", "pod", "-n", NS, pod, "-o", "json")).json()  # type: ignore[no-any-return]


def _condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), None)


async def _events(kubectl: Kubectl, pod: str = "") -> list[tuple[str, str, str, str, str]]:
    """The namespace's Events (or one pod's) as `kubectl get events` lists them:
    (object, type, reason, message, from)."""
    selector = ("--field-selector", f"involvedObject.name={pod}") if pod else ()
    got = (await kubectl("get", "events", "-n", NS, *selector, "-o", "json")).json()
    return [(e["involvedObject"]["name"], e["type"], e["reason"], e["message"],
             (e.get("source") or {}).get("component", "")) for e in got["items"]]


async def _pods(kubectl: Kubectl) -> dict[str, tuple[str, str]]:
    """`kubectl get pods -n NS`: NAME -> (READY, STATUS)."""
    rows = (await kubectl("get", "pods", "-n", NS)).rows()
    assert rows[0][:3] == ["NAME", "READY", "STATUS"], rows
    return {r[0]: (r[1], r[2]) for r in rows[1:]}


async def _running(kubectl: Kubectl, *pods: str) -> None:
    await kubectl("wait", "-n", NS, "--for=jsonpath={.status.phase}=Running", *(f"pod/{p}" for p in pods),
                  "--timeout=30s")
    items = {p["metadata"]["name"]: p for p in (await kubectl("get", "pods", "-n", NS, "-o", "json")).json()["items"]}
    assert all(_condition(items[p], "DisruptionTarget") is None for p in pods)
    shown = await _pods(kubectl)
    assert {p: shown.get(p) for p in pods} == {p: ("1/1", "Running") for p in pods}, shown


async def _scheduled_once(kubectl: Kubectl, *pods: str) -> None:
    """Each pod has the scheduler's one `Scheduled` Event, naming its node."""
    items = {p["metadata"]["name"]: p for p in (await kubectl("get", "pods", "-n", NS, "-o", "json")).json()["items"]}
    events = await _events(kubectl)
    for pod in pods:
        node = items[pod]["spec"]["nodeName"]
        assert [e[1:] for e in events if e[0] == pod and e[2] == "Scheduled"] == [
            ("Normal", "Scheduled", f"Successfully assigned {NS}/{pod} to {node}", "default-scheduler")], events


async def _evicted(kubectl: Kubectl, sb: testing.Sandbox, pod: str) -> None:
    """"Device Taint Manager marks it for deletion": the Event, the pod's DisruptionTarget condition
    and deletion (Terminating); gone once its container has stopped on TERM (the fleet's
    `podShutdownSeconds`, 1 s on the virtual clock)."""
    await kubectl("wait", "-n", NS, "--for=condition=DisruptionTarget", f"pod/{pod}", "--timeout=30s")

    async def terminating() -> dict[str, Any] | None:
        got = await _pod_json(kubectl, pod)
        return got if got["metadata"].get("deletionTimestamp") else None

    got = await testing.eventually(terminating, what=f"{pod} terminating")
    condition = _condition(got, "DisruptionTarget")
    assert condition is not None
    assert {k: condition.get(k) for k in ("status", "reason", "message")} == {
        "status": "True", "reason": "DeletionByDeviceTaintManager",
        "message": "Device Taint manager: deleting due to NoExecute taint"}
    assert got["metadata"]["deletionGracePeriodSeconds"] == 30  # a plain DELETE, the pod's own grace
    assert (pod, "Normal", "DeviceTaintManagerEviction", "Marking for deletion",
            "device-taint-eviction-controller") in await _events(kubectl, pod)
    assert (await _pods(kubectl))[pod] == ("1/1", "Terminating")
    described = (await kubectl("describe", "pod", "-n", NS, pod)).stdout
    assert "DisruptionTarget" in described and "DeviceTaintManagerEviction" in described, described
    await sb.advance(1)
    await kubectl("wait", "-n", NS, "--for=delete", f"pod/{pod}", "--timeout=30s")


async def _not_scheduled(kubectl: Kubectl, pod: str, taint: str) -> None:
    """Pending: PodScheduled False (Unschedulable) and a Warning FailedScheduling, because every GPU
    carries the rule's taint and the pod's claim does not tolerate it."""
    await kubectl("wait", "-n", NS, "--for=condition=PodScheduled=false", f"pod/{pod}", "--timeout=30s")
    got = await _pod_json(kubectl, pod)
    assert got["status"]["phase"] == "Pending" and not got["spec"].get("nodeName")
    condition = _condition(got, "PodScheduled")
    assert condition is not None and condition["reason"] == "Unschedulable"
    reasons = {e[2]: e for e in await _events(kubectl, pod)}
    assert set(reasons) == {"FailedScheduling"}, reasons  # never scheduled, never evicted
    _, kind, _, message, source = reasons["FailedScheduling"]
    assert (kind, source) == ("Warning", "default-scheduler")
    assert message.startswith("0/2 nodes are available: 2 cannot allocate all claims."), message
    # the condition carries the same message (with cplane's explanation appended, docs/why.md)
    assert message.startswith(condition["message"][:1020]), (message, condition["message"])
    assert f"untolerated taint {taint} from DeviceTaintRule example" in condition["message"]
    assert (await _pods(kubectl))[pod] == ("0/1", "Pending")


async def _rule_condition(kubectl: Kubectl, version: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
    """`kubectl get devicetaintrule example -o json`: the rule and its EvictionInProgress condition."""
    resource = f"devicetaintrules.{version}.resource.k8s.io" if version else "devicetaintrule"
    rule = (await kubectl("get", resource, "example", "-o", "json")).json()
    condition = _condition(rule, "EvictionInProgress")
    assert condition is not None, rule
    return rule, condition


def _summary(condition: dict[str, Any]) -> tuple[str, str, str, int]:
    return condition["status"], condition["reason"], condition["message"], condition["observedGeneration"]


# ---------------------------------------------------------------------------------- the demos


@SANDBOX
async def test_noexecute_evicts_the_running_pod(kubectl: Kubectl, cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    files = NOEXECUTE
    assert await _run(kubectl, "apply", files, "1-basic-resourceclaimtemplate.yaml") == [
        f"namespace/{NS} created", "resourceclaimtemplate.resource.k8s.io/single-gpu created"]
    assert await _run(kubectl, "apply", files, "2-pod-to-be-evicted.yaml") == ["pod/pod-to-be-evicted created"]
    await _running(kubectl, "pod-to-be-evicted")
    await _scheduled_once(kubectl, "pod-to-be-evicted")

    assert await _run(kubectl, "apply", files, "3-device-taint-rule.yaml") == [
        "devicetaintrule.resource.k8s.io/example created"]
    await _evicted(kubectl, sb, "pod-to-be-evicted")
    # The rule's status, refreshed every 10 s: nothing left to evict. Read as applied, in v1beta2.
    await sb.advance(10)
    await kubectl("wait", "--for=condition=EvictionInProgress=false", "devicetaintrule/example", "--timeout=30s")
    rule, condition = await _rule_condition(kubectl, "v1beta2")
    assert rule["apiVersion"] == "resource.k8s.io/v1beta2"
    assert rule["spec"]["taint"]["timeAdded"] == clocks.rfc3339(START)
    assert _summary(condition) == ("False", "Completed", "1 pod evicted since starting the controller.", 1)

    # Step 6. The README: "Scheduled then Evicted"; 1.37: not scheduled (module docstring).
    assert await _run(kubectl, "apply", files, "4-pod-no-execute.yaml") == ["pod/pod-no-execute created"]
    await _not_scheduled(kubectl, "pod-no-execute", "gpu.example.com/unhealthy=true:NoExecute")
    _, condition = await _rule_condition(kubectl)
    assert _summary(condition) == ("False", "Completed", "1 pod evicted since starting the controller.", 1)


@SANDBOX
async def test_noschedule_keeps_the_running_pod_and_schedules_no_new_one(
        kubectl: Kubectl, cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    files = NOSCHEDULE
    await _run(kubectl, "apply", files, "1-basic-resourceclaimtemplate.yaml")
    assert await _run(kubectl, "apply", files, "2-pod-keeps-running.yaml") == ["pod/pod-keeps-running created"]
    await _running(kubectl, "pod-keeps-running")

    assert await _run(kubectl, "apply", files, "3-device-taint-rule.yaml") == [
        "devicetaintrule.resource.k8s.io/example created"]
    await kubectl("wait", "--for=condition=EvictionInProgress=false", "devicetaintrule/example", "--timeout=30s")
    _, condition = await _rule_condition(kubectl)
    assert _summary(condition) == ("False", "OtherEffect", "Eviction only happens for the NoExecute effect.", 1)

    # Upstream's file has no apiVersion: kubectl refuses it before asking the server.
    r = await kubectl("apply", "-f", kubectl.write("4-pod-not-scheduled.yaml", files["4-pod-not-scheduled.yaml"]),
                      check=False)
    assert r.code == 1 and "apiVersion not set" in r.stderr, r.stderr
    fixed = "apiVersion: v1\n" + files["4-pod-not-scheduled.yaml"]
    r = await kubectl("apply", "-f", kubectl.write("4-pod-not-scheduled-v1.yaml", fixed))
    assert r.lines == ["pod/pod-no-schedule created"]
    await _not_scheduled(kubectl, "pod-no-schedule", "gpu.example.com/unhealthy=true:NoSchedule")

    # A NoSchedule taint never evicts: the running pod is still running well after the taint.
    await sb.advance(600)
    await _running(kubectl, "pod-keeps-running")
    assert [e[2] for e in await _events(kubectl, "pod-keeps-running")] == ["Scheduled"]


@SANDBOX
async def test_toleration_keeps_the_tolerating_pod(kubectl: Kubectl, cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    files = TOLERATION_DEMO
    assert await _run(kubectl, "apply", files, "1-device-taint-rule.yaml") == [
        "devicetaintrule.resource.k8s.io/example created"]
    # Step 2, `kubectl get devicetaintrule -o yaml`: created, nothing to evict yet.
    await kubectl("wait", "--for=condition=EvictionInProgress=false", "devicetaintrule/example", "--timeout=30s")
    rules = (await kubectl("get", "devicetaintrule", "-o", "json")).json()["items"]
    assert [r["metadata"]["name"] for r in rules] == ["example"]
    assert _summary(_condition(rules[0], "EvictionInProgress") or {}) == ("False", "NotStarted", "", 1)

    assert await _run(kubectl, "apply", files, "2-basic-resourceclaimtemplate.yaml") == [
        f"namespace/{NS} created",
        "resourceclaimtemplate.resource.k8s.io/single-gpu-without-toleration created",
        "resourceclaimtemplate.resource.k8s.io/single-gpu-with-toleration created",
        "pod/pod-without-toleration created",
        "pod/pod-with-toleration created"]
    await _running(kubectl, "pod-with-toleration")
    await _scheduled_once(kubectl, "pod-with-toleration")
    claim = (await kubectl("get", "resourceclaims", "-n", NS, "-o", "json")).json()["items"]
    tolerating = [c for c in claim if c["metadata"]["name"].startswith("pod-with-toleration-")]
    assert len(tolerating) == 1
    result = tolerating[0]["status"]["allocation"]["devices"]["results"][0]
    assert result["tolerations"] == [{"key": "gpu.example.com/unhealthy", "operator": "Equal", "value": "true",
                                      "effect": "NoExecute"}]  # the toleration travels into the allocation
    # The README: scheduled, then evicted; 1.37: not scheduled (module docstring).
    await _not_scheduled(kubectl, "pod-without-toleration", "gpu.example.com/unhealthy=true:NoExecute")

    # The tolerating pod keeps running, however long the taint stays.
    await sb.advance(600)
    await _running(kubectl, "pod-with-toleration")
    _, condition = await _rule_condition(kubectl)
    assert _summary(condition) == ("False", "NotStarted", "", 1)


@SANDBOX
async def test_configurable_pod_eviction_time(kubectl: Kubectl, cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    files = EVICTION_TIME
    # Step 1, with `kubectl create` and the README's expected output.
    assert await _run(kubectl, "create", files, "1-basic-resourceclaimtemplate.yaml") == [
        f"namespace/{NS} created",
        "resourceclaimtemplate.resource.k8s.io/single-gpu-without-toleration created",
        "resourceclaimtemplate.resource.k8s.io/single-gpu-with-toleration created",
        "resourceclaimtemplate.resource.k8s.io/single-gpu-with-300s-toleration created",
        "pod/pod-no-toleration created",
        "pod/pod-with-toleration created",
        "pod/pod-with-300s-toleration created"]
    # Step 2: all three Running.
    pods = ("pod-no-toleration", "pod-with-300s-toleration", "pod-with-toleration")
    await _running(kubectl, *pods)
    await _scheduled_once(kubectl, *pods)

    # Step 3, at T = the rule's creation (the clock stands still until moved).
    t = sb.clock.now()
    assert await _run(kubectl, "create", files, "2-device-taint-rule.yaml") == [
        "devicetaintrule.resource.k8s.io/example created"]
    # Step 4: the pod without a toleration goes at once; the other two keep running.
    await _evicted(kubectl, sb, "pod-no-toleration")
    assert await _pods(kubectl) == {"pod-with-300s-toleration": ("1/1", "Running"),
                                    "pod-with-toleration": ("1/1", "Running")}
    # Step 5 (T+10 s, the next status refresh): one pod still to evict, one evicted.
    await sb.advance(t + 10 - sb.clock.now())

    async def pending_one() -> Any:
        _, condition = await _rule_condition(kubectl)
        return condition if condition["message"].endswith("1 pod evicted since starting the controller.") else None

    condition = await testing.eventually(pending_one, what="the rule's status after the first eviction")
    assert _summary(condition) == ("True", "PodsPendingEviction", "1 pod needs to be evicted in 1 namespace. "
                                   "1 pod evicted since starting the controller.", 1)

    # Step 6: tolerationSeconds 300 counts from the taint's timeAdded: still running at T+299 s...
    rule, _ = await _rule_condition(kubectl)
    assert rule["spec"]["taint"]["timeAdded"] == clocks.rfc3339(t)
    await sb.advance(t + 299 - sb.clock.now())
    await _running(kubectl, "pod-with-300s-toleration", "pod-with-toleration")
    # ...evicted at T+300 s.
    await sb.advance(1)
    await _evicted(kubectl, sb, "pod-with-300s-toleration")
    assert await _pods(kubectl) == {"pod-with-toleration": ("1/1", "Running")}

    # Step 7 (the next refresh): all evictions done.
    await sb.advance(10)
    await kubectl("wait", "--for=condition=EvictionInProgress=false", "devicetaintrule/example", "--timeout=30s")
    _, condition = await _rule_condition(kubectl)
    assert _summary(condition) == ("False", "Completed", "2 pods evicted since starting the controller.", 1)
    assert [e[2] for e in await _events(kubectl, "pod-with-toleration")] == ["Scheduled"]
