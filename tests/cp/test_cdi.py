"""cp/cdi.py: CDI spec files (JSON and YAML, strict), the version each field needs, qualified device
names, a registry of spec directories (priorities and conflicts) and the merged edits of device ids."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cp import cdi


def _spec(version: str = "0.5.0", kind: str = "vendor.com/gpu", **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"cdiVersion": version, "kind": kind,
                           "devices": [{"name": "dev0", "containerEdits": {"env": ["A=1"]}}]}
    doc.update(extra)
    return doc


def _parse(doc: dict[str, Any]) -> cdi.Spec:
    return cdi.parse_spec(json.dumps(doc).encode(), path="/etc/cdi/x.json")


def _error(doc: dict[str, Any] | bytes) -> str:
    data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    with pytest.raises(cdi.CDIError) as info:
        cdi.parse_spec(data, path="/etc/cdi/x.json")
    return str(info.value)


def test_a_yaml_spec_with_every_kind_of_edit() -> None:
    spec = cdi.parse_spec(b"""
cdiVersion: "1.1.0"
kind: nvidia.com/gpu
annotations: {owner: me}
containerEdits:
  env: [NVIDIA_VISIBLE_DEVICES=void]
  hooks:
  - {hookName: createContainer, path: /usr/bin/nvidia-cdi-hook, args: [nvidia-cdi-hook, update-ldcache]}
devices:
- name: "0"
  annotations: {index: "0"}
  containerEdits:
    env: [GPU=0]
    deviceNodes:
    - {path: /dev/nvidia0, hostPath: /dev/nvidia0, type: c, major: 195, minor: 0, permissions: rw}
    mounts:
    - {hostPath: /usr/lib/libcuda.so, containerPath: /usr/lib/libcuda.so, options: [ro, bind], type: bind}
    additionalGids: [44]
    intelRdt: {closID: clos1, schemata: ["L3:0=f"]}
    netDevices: [{hostInterfaceName: eth1, name: net1}]
""", path="/etc/cdi/nvidia.yaml")
    assert (spec.vendor, spec.device_class) == ("nvidia.com", "gpu")
    dev = spec.devices[0]
    assert dev.container_edits.device_nodes[0].major == 195
    assert dev.container_edits.mounts[0].type == "bind"
    assert dev.container_edits.intel_rdt is not None and dev.container_edits.intel_rdt.clos_id == "clos1"
    assert dev.container_edits.net_devices[0].host_interface_name == "eth1"
    assert spec.container_edits.hooks[0].hook_name == "createContainer"
    assert cdi.minimum_required_version(spec) == "1.1.0"
    # What a driver writes reads back the same.
    again = cdi.parse_spec(json.dumps(cdi.encode_spec(spec)).encode(), path="again.json")
    assert again == spec


@pytest.mark.parametrize(("version", "field", "needs"), [
    ("0.3.0", {"mounts": [{"hostPath": "/a", "containerPath": "/b", "type": "bind"}]}, "0.4.0"),
    ("0.4.0", {"deviceNodes": [{"path": "/dev/x", "hostPath": "/dev/y"}]}, "0.5.0"),
    ("0.6.0", {"additionalGids": [5]}, "0.7.0"),
    ("0.6.0", {"intelRdt": {"closID": "c"}}, "0.7.0"),
    ("1.0.0", {"netDevices": [{"hostInterfaceName": "eth0", "name": "n0"}]}, "1.1.0"),
    ("0.8.0", {"intelRdt": {"enableMonitoring": True}}, "1.1.0"),
])
def test_a_field_newer_than_the_spec_version_is_an_error(version: str, field: dict[str, Any], needs: str) -> None:
    doc = _spec(version)
    doc["devices"][0]["containerEdits"].update(field)
    assert _error(doc) == f"invalid CDI Spec '/etc/cdi/x.json': the spec version must be at least v{needs}"
    doc["cdiVersion"] = needs
    assert cdi.minimum_required_version(_parse(doc)) == needs
    doc["cdiVersion"] = "v" + cdi.CURRENT  # a leading v is accepted
    _parse(doc)


def test_versions_gated_by_names_and_annotations() -> None:
    digit = _spec("0.4.0")
    digit["devices"][0]["name"] = "0"
    assert "at least v0.5.0" in _error(digit)
    dotted = _spec("0.5.0", kind="vendor.com/gpu.shared")
    assert "at least v0.6.0" in _error(dotted)
    annotated = _spec("0.5.0", annotations={"a": "b"})
    assert "at least v0.6.0" in _error(annotated)
    assert cdi.minimum_required_version(_parse(_spec("0.3.0"))) == "0.3.0"
    for v in ("0.8.0", "1.0.0"):  # versions that added no field
        _parse(_spec(v))
    assert _error(_spec("0.9.0")) == "invalid CDI Spec '/etc/cdi/x.json': invalid version '0.9.0'"
    assert "invalid version ''" in _error({"kind": "a/b", "devices": []})


@pytest.mark.parametrize(("change", "message"), [
    ({"kind": "gpu"}, "invalid vendor. empty name"),
    ({"kind": "1vendor/gpu"}, "invalid vendor. '1vendor', should start with letter"),
    ({"kind": "vendor/gpu-"}, "invalid class. 'gpu-', should end with a letter or digit"),
    ({"devices": []}, "invalid spec, no devices"),
    ({"devices": [{"name": "x", "containerEdits": {}}]}, "failed add device 'x': invalid device, empty device edits"),
    ({"devices": [{"name": "x!y", "containerEdits": {"env": ["A=1"]}}]},
     "failed add device 'x!y': invalid character '!' in device name 'x!y'"),
    ({"devices": [{"name": "x", "containerEdits": {"env": ["=1"]}}]},
     "failed add device 'x': invalid device 'x': invalid container edits: invalid environment variable '=1'"),
    ({"devices": [{"name": "x", "containerEdits": {"env": ["A=1"]}}, {"name": "x", "containerEdits": {"env": ["B=1"]}}]},
     "invalid spec, multiple device 'x'"),
    ({"containerEdits": {"deviceNodes": [{"path": "/dev/x", "type": "z"}]}}, "device '/dev/x': invalid type 'z'"),
    ({"containerEdits": {"deviceNodes": [{"path": "/dev/x", "permissions": "rwx"}]}},
     "device '/dev/x': invalid permissions 'rwx'"),
    ({"containerEdits": {"deviceNodes": [{"type": "c"}]}}, "invalid (empty) device path"),
    ({"containerEdits": {"hooks": [{"hookName": "preStart", "path": "/x"}]}}, "invalid hook name 'preStart'"),
    ({"containerEdits": {"hooks": [{"hookName": "poststop"}]}}, "invalid hook 'poststop' with empty path"),
    ({"containerEdits": {"mounts": [{"containerPath": "/x"}]}}, "invalid mount, empty host path"),
    ({"containerEdits": {"mounts": [{"hostPath": "/x"}]}}, "invalid mount, empty container path"),
])
def test_invalid_specs(change: dict[str, Any], message: str) -> None:
    doc = _spec("0.5.0")
    doc.update(change)
    assert _error(doc) == f"invalid CDI Spec '/etc/cdi/x.json': {message}"


def test_net_devices_and_rdt_are_checked() -> None:
    dup = _spec("1.1.0", containerEdits={"netDevices": [{"hostInterfaceName": "eth0", "name": "a"},
                                                        {"hostInterfaceName": "eth0", "name": "b"}]})
    assert "duplicate HostInterfaceName 'eth0'" in _error(dup)
    rdt = _spec("0.7.0", containerEdits={"intelRdt": {"closID": "a/b"}})
    assert _error(rdt).endswith("invalid ClosID")


def test_decoding_is_strict() -> None:
    unknown = _spec()
    unknown["devices"][0]["containerEdits"]["envs"] = ["A=1"]
    assert _error(unknown) == ("failed to parse CDI Spec '/etc/cdi/x.json': Object contains unknown field `envs` "
                               "- at `$.devices[0].containerEdits`")
    wrong = _spec()
    wrong["devices"][0]["containerEdits"]["deviceNodes"] = [{"path": "/dev/x", "major": "1"}]
    assert "Expected `int`, got `str`" in _error(wrong)
    assert _error(b"cdiVersion: [").startswith("failed to parse CDI Spec '/etc/cdi/x.json': ")
    assert _error(b"") == "failed to parse CDI Spec '/etc/cdi/x.json', no Spec data"
    assert _error(b"[1]") == "failed to parse CDI Spec '/etc/cdi/x.json': not an object"
    # JSON null leaves a field at its default, as Go's decoder does.
    nulls = _spec()
    nulls["annotations"] = None
    assert _parse(nulls).annotations == {}


def test_qualified_names() -> None:
    q = cdi.parse_qualified_name("k8s.gpu.example.com/gpu=1234-gpu-0:a.b_c")
    assert (q.vendor, q.device_class, q.name) == ("k8s.gpu.example.com", "gpu", "1234-gpu-0:a.b_c")
    assert str(q) == "k8s.gpu.example.com/gpu=1234-gpu-0:a.b_c"
    assert cdi.qualified_name("v", "c", "n") == "v/c=n"
    bad = {
        "/dev/nvidia0": "unqualified device '/dev/nvidia0', missing vendor",
        "vendor.com/gpu": "unqualified device 'vendor.com/gpu', missing vendor",
        "gpu=0": "unqualified device 'gpu=0', missing vendor",
        "vendor.com/gpu=": "unqualified device 'vendor.com/gpu=', missing vendor",
        "vendor.com/gpu=-0": "invalid device 'vendor.com/gpu=-0': invalid device name '-0', "
                             "should start with a letter or digit",
        "vendor.com/g$u=0": "invalid device 'vendor.com/g$u=0': invalid class. invalid character '$' in name 'g$u'",
        "_v/gpu=0": "invalid device '_v/gpu=0': invalid vendor. '_v', should start with letter",
    }
    for text, message in bad.items():
        with pytest.raises(cdi.CDIError) as info:
            cdi.parse_qualified_name(text)
        assert str(info.value) == message


def _write(path: Path, doc: dict[str, Any] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def test_registry_priorities_conflicts_and_bad_files(tmp_path: Path) -> None:
    etc, run = tmp_path / "etc", tmp_path / "run"
    _write(etc / "a.json", _spec(devices=[{"name": "x", "containerEdits": {"env": ["FROM=etc"]}},
                                          {"name": "y", "containerEdits": {"env": ["Y=etc"]}}]))
    _write(run / "b.yaml", "cdiVersion: 0.5.0\nkind: vendor.com/gpu\ndevices:\n"
                           "- {name: x, containerEdits: {env: [FROM=run]}}\n")
    _write(run / "c.json", _spec(devices=[{"name": "z", "containerEdits": {"env": ["Z=1"]}}]))
    _write(run / "d.json", _spec(devices=[{"name": "z", "containerEdits": {"env": ["Z=2"]}}]))
    _write(run / "broken.json", "{")
    _write(run / "notes.txt", "not a spec")
    (run / "sub.json").mkdir()
    reg = cdi.Registry.load([etc, run, tmp_path / "missing"])
    assert reg.devices() == ["vendor.com/gpu=x", "vendor.com/gpu=y"]
    x = reg.device("vendor.com/gpu=x")
    assert x is not None and x.path == str(run / "b.yaml") and x.edits.env == ["FROM=run"]  # the later dir wins
    assert reg.device("vendor.com/gpu=z") is None  # the same priority twice: a conflict
    conflict = f"conflicting device 'vendor.com/gpu=z' (specs '{run / 'd.json'}', '{run / 'c.json'}')"
    assert reg.errors[str(run / "c.json")] == [conflict] and reg.errors[str(run / "d.json")] == [conflict]
    assert reg.errors[str(run / "broken.json")][0].startswith(
        f"failed to load CDI Spec failed to parse CDI Spec '{run / 'broken.json'}'")
    assert sorted(reg.errors) == [str(run / n) for n in ("broken.json", "c.json", "d.json")]
    assert reg.vendors() == ["vendor.com"]
    with pytest.raises(cdi.CDIError) as info:
        reg.container_edits(["vendor.com/gpu=x", "vendor.com/gpu=z", "other.com/nic=0"])
    message = str(info.value)
    assert message.startswith("unresolvable CDI devices vendor.com/gpu=z, other.com/nic=0 (")
    assert "broken.json" in message and "conflicting device" in message


def test_merging_puts_each_spec_s_edits_before_its_first_device(tmp_path: Path) -> None:
    _write(tmp_path / "gpu.json", _spec("0.7.0", kind="vendor.com/gpu", containerEdits={
        "env": ["SPEC=gpu"], "intelRdt": {"closID": "first"}}, devices=[
        {"name": "a", "containerEdits": {"env": ["A=1"], "deviceNodes": [{"path": "/dev/a"}]}},
        {"name": "b", "containerEdits": {"env": ["B=1", "A=2"], "mounts": [{"hostPath": "/h", "containerPath": "/c"}]}},
    ]))
    _write(tmp_path / "nic.json", _spec("0.7.0", kind="vendor.com/nic", containerEdits={"env": ["SPEC=nic"]}, devices=[
        {"name": "n", "containerEdits": {"env": ["N=1"], "intelRdt": {"closID": "second"}, "additionalGids": [7],
                                         "hooks": [{"hookName": "poststart", "path": "/bin/true"}]}}]))
    reg = cdi.Registry.load([tmp_path])
    edits = reg.container_edits(["vendor.com/gpu=b", "vendor.com/nic=n", "vendor.com/gpu=a"])
    assert edits.env == ["SPEC=gpu", "B=1", "A=2", "SPEC=nic", "N=1", "A=1"]
    assert [d.path for d in edits.device_nodes] == ["/dev/a"]
    assert [m.container_path for m in edits.mounts] == ["/c"]
    assert [h.path for h in edits.hooks] == ["/bin/true"]
    assert edits.additional_gids == [7]
    assert edits.intel_rdt is not None and edits.intel_rdt.clos_id == "second"  # the last one wins
    assert edits.environment() == {"SPEC": "nic", "B": "1", "A": "1", "N": "1"}
    # Merging does not change the registry's devices.
    assert reg.container_edits(["vendor.com/gpu=a"]).env == ["SPEC=gpu", "A=1"]
    assert reg.container_edits([]) == cdi.ContainerEdits()


def test_transient_spec_names() -> None:
    assert cdi.transient_spec_name("k8s.gpu.example.com", "gpu", "a/b") == "k8s.gpu.example.com-gpu_a_b"
