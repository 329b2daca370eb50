"""The real kubectl against a server started with `--runtime-config resource.k8s.io/v1beta2=true`
(`make_app(runtime_config=...)`): the upstream example driver's DeviceTaintRule demos are written in
v1beta2, applied as they are (client-side apply, then a changed manifest applied again, and
server-side), and read through v1; a v1beta2 ResourceClaim is applied with upstream's deprecation
warning on kubectl's stderr. Without the flag, kubectl finds no v1beta2 kind.

Out of scope: the conversions (tests/api/test_runtime_config.py), eviction by the taint (the
device-taint controller's tests read v1 objects, which these are)."""

from __future__ import annotations

import pytest

from tests.kubectl.conftest import Kubectl

RULE = """\
apiVersion: resource.k8s.io/v1beta2
kind: DeviceTaintRule
metadata:
  name: example
spec:
  deviceSelector:
    driver: gpu.example.com
  taint:
    key: gpu.example.com/unhealthy
    value: "{value}"
    effect: {effect}
"""

CLAIM = """\
apiVersion: resource.k8s.io/v1beta2
kind: ResourceClaim
metadata: {name: single-gpu}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
"""


@pytest.fixture
def runtime() -> str:
    return "resource.k8s.io/v1beta2=true"


async def test_apply_a_v1beta2_device_taint_rule(kubectl: Kubectl) -> None:
    first = kubectl.write("rule.yaml", RULE.replace("{value}", "true").replace("{effect}", "NoSchedule"))
    r = await kubectl("apply", "-f", first)
    assert r.stdout.strip() == "devicetaintrule.resource.k8s.io/example created"
    assert "deprecated" not in r.stderr  # DeviceTaintRule v1beta2 is deprecated in 1.39 only
    beta = (await kubectl("get", "devicetaintrules.v1beta2.resource.k8s.io", "example", "-o", "json")).json()
    assert beta["apiVersion"] == "resource.k8s.io/v1beta2"
    assert beta["spec"]["taint"]["key"] == "gpu.example.com/unhealthy"
    # the demo's next step: the same rule with NoExecute, applied again (a strategic merge patch)
    second = kubectl.write("rule2.yaml", RULE.replace("{value}", "true").replace("{effect}", "NoExecute"))
    r = await kubectl("apply", "-f", second)
    assert r.stdout.strip() == "devicetaintrule.resource.k8s.io/example configured"
    v1 = (await kubectl("get", "devicetaintrules.v1.resource.k8s.io", "example", "-o", "json")).json()
    assert v1["apiVersion"] == "resource.k8s.io/v1"
    assert v1["spec"]["taint"]["effect"] == "NoExecute"
    assert v1["spec"]["deviceSelector"] == {"driver": "gpu.example.com"}
    rows = (await kubectl("get", "devicetaintrules")).rows()
    assert rows[1][0] == "example"
    third = kubectl.write("rule3.yaml", RULE.replace("{value}", "false").replace("{effect}", "NoExecute"))
    # the value client-side apply set is owned by kubectl-client-side-apply: a conflict until forced
    # (managedFields list the stored version's fields, docs/api.md)
    r = await kubectl("apply", "--server-side", "--force-conflicts", "-f", third)
    assert r.stdout.strip() == "devicetaintrule.resource.k8s.io/example serverside-applied"
    assert await kubectl.jsonpath("devicetaintrules", "example", path="{.spec.taint.value}") == "false"
    await kubectl("delete", "-f", third)
    assert await kubectl.gone("devicetaintrules", "example")


async def test_a_v1beta2_claim_warns_as_deprecated(kubectl: Kubectl) -> None:
    r = await kubectl("apply", "-f", kubectl.write("claim.yaml", CLAIM))
    assert r.stdout.strip() == "resourceclaim.resource.k8s.io/single-gpu created"
    assert ("Warning: resource.k8s.io/v1beta2 ResourceClaim is deprecated in v1.36+, unavailable in v1.39+"
            in r.stderr), r.stderr
    got = (await kubectl("get", "resourceclaims", "single-gpu", "-o", "json")).json()
    assert got["apiVersion"] == "resource.k8s.io/v1"  # the preferred version
    assert got["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1


@pytest.mark.parametrize("runtime", [""])
async def test_without_the_flag_kubectl_finds_no_v1beta2(kubectl: Kubectl) -> None:
    rule = kubectl.write("rule.yaml", RULE.replace("{value}", "true").replace("{effect}", "NoSchedule"))
    r = await kubectl("apply", "-f", rule, check=False)
    assert r.code != 0
    assert 'no matches for kind "DeviceTaintRule" in version "resource.k8s.io/v1beta2"' in r.stderr, r.stderr
