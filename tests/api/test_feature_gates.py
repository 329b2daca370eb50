"""`--feature-gates` through the server: `kubernetes_feature_enabled` on /metrics as component-base
writes it, the DRA fields of a disabled gate dropped on create and kept on updates of objects that used
them (upstream's strategies), and `cplane serve --feature-gates` as its own process."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import server as servers
from cp import features
from tests import recordings

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
OFF = "DRAPartitionableDevices=false,DRADeviceTaints=false,DRAConsumableCapacity=false"


@pytest.fixture
def gates() -> features.FeatureGates:
    return features.parse(OFF)


@pytest.fixture
async def http(tmp_path: Path, gates: features.FeatureGates) -> AsyncIterator[aiohttp.ClientSession]:
    async with servers.running(data_dir=tmp_path / "data", db_url="memory:",
                               app_options={"feature_gates": gates}) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as session:
        yield session


async def call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    async with http.request(method, path, json=body) as r:
        return r.status, json.loads(await r.read())


def a_slice(name: str = "s", **device: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                     "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "d0", **device}]}}


def a_claim(name: str = "c", **exactly: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu", **exactly}}]}}}


TAINT = {"key": "broken", "value": "yes", "effect": "NoSchedule"}


def metric_lines(text: str) -> dict[str, str]:
    return {line.rsplit(" ", 1)[0]: line.rsplit(" ", 1)[1] for line in text.splitlines()
            if line.startswith("kubernetes_feature_enabled{")}


async def test_metrics_report_every_gate(http: aiohttp.ClientSession) -> None:
    async with http.get("/metrics") as r:
        text = await r.text()
    assert ("# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and "
            "enablement of a k8s feature.") in text
    assert "# TYPE kubernetes_feature_enabled gauge" in text
    lines = metric_lines(text)
    assert lines['kubernetes_feature_enabled{name="DRAPartitionableDevices",stage="BETA"}'] == "0.0"
    assert lines['kubernetes_feature_enabled{name="DRADeviceTaints",stage=""}'] == "0.0"  # GA: stage ""
    assert lines['kubernetes_feature_enabled{name="DRAPrioritizedList",stage=""}'] == "1.0"
    assert lines['kubernetes_feature_enabled{name="DRADeviceBindingConditions",stage="BETA"}'] == "1.0"
    assert lines['kubernetes_feature_enabled{name="GenericWorkload",stage="BETA"}'] == "0.0"
    assert lines['kubernetes_feature_enabled{name="AllAlpha",stage="ALPHA"}'] == "0.0"
    assert len(lines) == len(features.SPECS) + 2


async def test_slice_fields_of_disabled_gates_are_dropped_on_create(http: aiohttp.ClientSession) -> None:
    body = a_slice(taints=[TAINT], nodeName=None, allowMultipleAllocations=True,
                   capacity={"mem": {"value": "4Gi", "requestPolicy": {"default": "1Gi",
                                                                        "validRange": {"min": "1Gi"}}}})
    body["spec"]["devices"][0].pop("nodeName")
    status, created = await call(http, "POST", SLICES, body)
    assert status == 201, created
    device = created["spec"]["devices"][0]
    assert "taints" not in device and "allowMultipleAllocations" not in device
    assert device["capacity"] == {"mem": {"value": "4Gi"}}


async def test_claim_fields_of_disabled_gates_are_dropped(http: aiohttp.ClientSession) -> None:
    status, created = await call(http, "POST", CLAIMS, a_claim(
        tolerations=[{"key": "broken", "operator": "Exists"}], capacity={"requests": {"mem": "1Gi"}}))
    assert status == 201, created
    assert created["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}


@pytest.mark.parametrize("gates", [features.DEFAULT])
async def test_a_default_server_keeps_them(http: aiohttp.ClientSession) -> None:
    status, created = await call(http, "POST", SLICES, a_slice(taints=[TAINT]))
    assert status == 201 and created["spec"]["devices"][0]["taints"][0]["key"] == "broken"
    async with http.get("/metrics") as r:
        lines = metric_lines(await r.text())
    assert lines['kubernetes_feature_enabled{name="DRAPartitionableDevices",stage="BETA"}'] == "1.0"


async def test_an_update_keeps_what_the_stored_object_used(tmp_path: Path) -> None:
    # Written while the gate was on, updated after it was turned off: the taints stay, as upstream.
    data = tmp_path / "data"
    async with servers.running(data_dir=data, db_url=f"sqlite+aiosqlite:///{tmp_path / 'log.db'}") as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:
        status, created = await call(http, "POST", SLICES, a_slice(taints=[TAINT]))
        assert status == 201
        status, plain = await call(http, "POST", SLICES, a_slice("plain"))
        assert status == 201
    async with servers.running(data_dir=data, db_url=f"sqlite+aiosqlite:///{tmp_path / 'log.db'}",
                               app_options={"feature_gates": features.parse("DRADeviceTaints=false")}) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:
        created["spec"]["devices"].append({"name": "d1", "taints": [TAINT]})
        status, updated = await call(http, "PUT", f"{SLICES}/s", created)
        assert status == 200, updated
        assert [[t["key"] for t in d.get("taints", [])] for d in updated["spec"]["devices"]] == [["broken"]] * 2
        plain["spec"]["devices"][0]["taints"] = [TAINT]
        status, updated = await call(http, "PUT", f"{SLICES}/plain", plain)
        assert status == 200 and "taints" not in updated["spec"]["devices"][0]


async def test_cplane_serve_feature_gates(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    err_path = tmp_path / "serve.err"
    with err_path.open("wb") as err_file:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "cp.cli", "serve", "--port", "0", "--insecure", "--no-controllers",
            "--data-dir", str(tmp_path), "--feature-gates", "DRADeviceTaints=false,AllAlpha=true",
            stdout=asyncio.subprocess.DEVNULL, stderr=err_file)
    try:
        await recordings.eventually(lambda: kubeconfig.exists() or proc.returncode is not None, within=60,
                                    what="the server's kubeconfig")
        assert proc.returncode is None, err_path.read_text()
        server = next(line.split("server:")[1].strip() for line in kubeconfig.read_text().splitlines()
                      if "server:" in line)
        async with aiohttp.ClientSession(base_url=server) as http:
            async with http.get("/metrics") as r:
                lines = metric_lines(await r.text())
            assert lines['kubernetes_feature_enabled{name="DRADeviceTaints",stage=""}'] == "0.0"
            assert lines['kubernetes_feature_enabled{name="DRAListTypeAttributes",stage="ALPHA"}'] == "1.0"
            assert lines['kubernetes_feature_enabled{name="AllAlpha",stage="ALPHA"}'] == "1.0"
            status, created = await call(http, "POST", SLICES, a_slice(taints=[TAINT]))
            assert status == 201 and "taints" not in created["spec"]["devices"][0]
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        async with asyncio.timeout(30):
            await proc.wait()


def test_serve_help_lists_the_gates(capsys: pytest.CaptureFixture[str]) -> None:
    from cp import cli

    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "DRAPartitionableDevices=true|false (BETA - default=true)" in out
    assert "DRAListTypeAttributes=true|false (ALPHA - default=false)" in out
    with pytest.raises(SystemExit):
        cli.main(["controllers", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "GangScheduling=true|false (ALPHA - default=false)" in out


async def test_why_names_the_gate_that_would_make_a_pod_fit(tmp_path: Path) -> None:
    """A slice written while DRADeviceBindingConditions was on, the server restarted with it off:
    the pod cannot get the device, and `why` (with the server's gates) names the gate."""
    from controllers.runtime import client as clients
    from tests.cp.scheduling.explain.support import claim, device_class, gpus, node, pod, rslice

    data, db = tmp_path / "data", f"sqlite+aiosqlite:///{tmp_path / 'log.db'}"
    async with servers.running(data_dir=data, db_url=db) as srv, clients.Client(srv.url) as client:
        n = node("node-1")
        created = await client.create("nodes", {k: v for k, v in n.items() if k != "status"})
        created["status"] = n["status"]
        await client.update_status("nodes", created)
        await client.create("deviceclasses.resource.k8s.io", device_class())
        sl = rslice("node-1-gpus", "node-1", *gpus(1, bindingConditions=["Ready"],
                                                    bindingFailureConditions=["Failed"]))
        await client.create("resourceslices.resource.k8s.io", {"metadata": sl["metadata"], "spec": sl["spec"]})
        mine = claim("web-0-gpu")
        await client.create("resourceclaims.resource.k8s.io",
                            {"metadata": {"name": "web-0-gpu", "namespace": "default"}, "spec": mine["spec"]})
        p = pod("web-0", "web-0-gpu")
        await client.create("pods", {"metadata": {"name": "web-0", "namespace": "default"}, "spec": p["spec"]})
    why = "/apis/sim.cplane.dev/v1alpha1/namespaces/default/pods/web-0/why"
    async with servers.running(data_dir=data, db_url=db, app_options={
            "feature_gates": features.parse("DRADeviceBindingConditions=false")}) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:
        status, doc = await call(http, "GET", why)
        assert status == 200, doc
        assert doc["verdict"] == "Unschedulable"
        assert doc["suggestions"][0]["message"] == "node-1 would fit if the DRADeviceBindingConditions feature were enabled"
    async with servers.running(data_dir=data, db_url=db) as srv, aiohttp.ClientSession(base_url=srv.url) as http:
        status, doc = await call(http, "GET", why)
        assert status == 200 and "DRADeviceBindingConditions" not in json.dumps(doc.get("suggestions", []))


LIST_ATTRIBUTES = {"cores": {"ints": [0, 1]}, "model": {"string": "x"}}


@pytest.mark.parametrize("gates", [features.DEFAULT])
async def test_list_type_attributes_need_their_alpha_gate(http: aiohttp.ClientSession) -> None:
    # A default 1.37 server drops the list values; the attribute left empty is refused, as upstream's
    status, body = await call(http, "POST", SLICES, a_slice(attributes=LIST_ATTRIBUTES))
    assert status == 422, body
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.devices[0].attributes[cores]"]


@pytest.mark.parametrize("gates", [features.parse("DRAListTypeAttributes=true")])
async def test_list_type_attributes_with_the_gate_on(http: aiohttp.ClientSession) -> None:
    status, created = await call(http, "POST", SLICES, a_slice(attributes=LIST_ATTRIBUTES))
    assert status == 201, created
    assert created["spec"]["devices"][0]["attributes"]["cores"] == {"ints": [0, 1]}


DERIVED = [{"name": "derived/numa", "expression": 'device.attributes["gpu.example.com"].numa'}]


@pytest.mark.parametrize("gates", [features.DEFAULT])
async def test_derived_attributes_are_dropped_while_the_gate_is_off(http: aiohttp.ClientSession) -> None:
    body = a_claim(derivedAttributes=DERIVED)
    body["spec"]["devices"]["constraints"] = [{"matchAttribute": "derived/numa"}]
    status, created = await call(http, "POST", CLAIMS, body)
    assert status == 201, created
    assert "derivedAttributes" not in created["spec"]["devices"]["requests"][0]["exactly"]


@pytest.mark.parametrize("gates", [features.parse("DRADerivedAttributes=true")])
async def test_derived_attributes_with_the_gate_on(http: aiohttp.ClientSession) -> None:
    body = a_claim(derivedAttributes=DERIVED)
    status, refused = await call(http, "POST", CLAIMS, body)  # used by no constraint
    assert status == 422
    assert [(c["field"], c["message"]) for c in refused["details"]["causes"]] == [
        ("spec.devices.requests[0].exactly.derivedAttributes[0].name",
         'Invalid value: "derived/numa": must be referenced by at least one matchAttribute or distinctAttribute '
         "constraint")]
    body["spec"]["devices"]["constraints"] = [{"matchAttribute": "derived/numa"}]
    bad = a_claim("bad", derivedAttributes=[{"name": "derived/numa", "expression": "device.("}])
    bad["spec"]["devices"]["constraints"] = [{"matchAttribute": "derived/numa"}]
    status, refused = await call(http, "POST", CLAIMS, bad)
    assert status == 422 and refused["details"]["causes"][0]["field"] == (
        "spec.devices.requests[0].exactly.derivedAttributes[0].expression")
    status, created = await call(http, "POST", CLAIMS, body)
    assert status == 201, created
    assert created["spec"]["devices"]["requests"][0]["exactly"]["derivedAttributes"] == DERIVED
