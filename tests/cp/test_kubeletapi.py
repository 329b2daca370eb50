"""cp/kubeletapi: the committed generated code is what grpcio-tools makes of the .proto files, and
the wire names (gRPC method paths, field numbers) are upstream's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cp import kubeletapi
from cp.kubeletapi import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    drahealth_v1alpha1_pb2,
    drahealth_v1alpha1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "cp" / "kubeletapi"
GENERATED = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")


def test_committed_code_is_what_protoc_generates(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    protos = sorted(str(p.relative_to(ROOT)) for p in PKG.glob("*.proto"))
    assert [Path(p).stem for p in protos] == sorted(kubeletapi.PROTOS)
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I.", f"--python_out={out}", f"--pyi_out={out}",
                    f"--grpc_python_out={out}", *protos], cwd=ROOT, check=True)
    for name in kubeletapi.PROTOS:
        for suffix in GENERATED:
            made = (out / "cp" / "kubeletapi" / f"{name}{suffix}").read_text()
            assert (PKG / f"{name}{suffix}").read_text() == made, f"{name}{suffix}: run `make protos`"


@pytest.mark.parametrize(("module", "service", "methods"), [
    (pluginregistration_v1_pb2, "pluginregistration.Registration", ["GetInfo", "NotifyRegistrationStatus"]),
    (dra_v1_pb2, "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin", ["NodePrepareResources", "NodeUnprepareResources"]),
    (drahealth_v1alpha1_pb2, "v1alpha1.DRAResourceHealth", ["NodeWatchResources"]),
])
def test_service_names_are_upstreams(module: object, service: str, methods: list[str]) -> None:
    desc = module.DESCRIPTOR  # type: ignore[attr-defined]
    (svc,) = desc.services_by_name.values()
    assert svc.full_name == service
    assert [m.name for m in svc.methods] == methods


def test_field_numbers_are_upstreams() -> None:
    info = pluginregistration_v1_pb2.PluginInfo.DESCRIPTOR
    assert {f.name: f.number for f in info.fields} == {
        "type": 1, "name": 2, "endpoint": 3, "supported_versions": 4}
    device = dra_v1_pb2.Device.DESCRIPTOR
    assert {f.name: f.number for f in device.fields} == {
        "request_names": 1, "pool_name": 2, "device_name": 3, "cdi_device_ids": 4}
    claim = dra_v1_pb2.Claim.DESCRIPTOR
    assert {f.name: f.number for f in claim.fields} == {"namespace": 1, "uid": 2, "name": 3}
    health = drahealth_v1alpha1_pb2.DeviceHealth.DESCRIPTOR
    assert {f.name: f.number for f in health.fields} == {"device": 1, "health": 2, "last_updated_time": 3}
    # A message encoded by hand with upstream's numbers decodes here: Claim{namespace: "ns", uid: "u", name: "c"}.
    assert dra_v1_pb2.Claim.FromString(b"\n\x02ns\x12\x01u\x1a\x01c") == dra_v1_pb2.Claim(
        namespace="ns", uid="u", name="c")


def test_stubs_exist() -> None:
    assert pluginregistration_v1_pb2_grpc.RegistrationStub
    assert dra_v1_pb2_grpc.DRAPluginServicer
    assert drahealth_v1alpha1_pb2_grpc.add_DRAResourceHealthServicer_to_server
