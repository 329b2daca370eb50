"""The kubelet's checks of a plugin's GetInfo answer (controllers.fleet.plugins.registration, pure)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from controllers.fleet.plugins import registration as reg

ROOT = Path("/var/lib/kubelet")
SOCKET = "/var/lib/kubelet/plugins_registry/gpu.example.com-reg.sock"
ENDPOINT = "/var/lib/kubelet/plugins/gpu.example.com/dra.sock"


def _validate(**kwargs: object) -> reg.PluginInfo:
    args: dict[str, object] = {"plugin_type": "DRAPlugin", "name": "gpu.example.com", "endpoint": ENDPOINT,
                               "supported_versions": ["v1.DRAPlugin"], "socket": SOCKET, "root": ROOT}
    args.update(kwargs)
    return reg.validate(**args)  # type: ignore[arg-type]


def test_a_good_registration() -> None:
    info = _validate(supported_versions=["v1beta1.DRAPlugin", "v1.DRAPlugin", "v1alpha1.DRAResourceHealth"])
    assert info.driver == "gpu.example.com" and info.endpoint == ENDPOINT and info.socket == SOCKET
    assert info.dra_service == "v1.DRAPlugin"  # the newest one offered
    assert _validate(supported_versions=["v1beta1.DRAPlugin"]).dra_service == "v1beta1.DRAPlugin"
    assert info.health_service == "v1alpha1.DRAResourceHealth"


def test_an_empty_endpoint_is_the_registration_socket() -> None:
    assert _validate(endpoint="").endpoint == SOCKET


@pytest.mark.parametrize(("supported", "health"), [
    (["v1.DRAPlugin"], ""),
    (["v1.DRAPlugin", "v1alpha1.DRAResourceHealth"], "v1alpha1.DRAResourceHealth"),
    (["v1.DRAPlugin", "v1alpha1.DRAResourceHealth", "v1.DRAResourceHealth"], "v1.DRAResourceHealth"),
    (["v1.DRAPlugin", "v1beta1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"], "v1beta1.DRAResourceHealth"),
])
def test_the_newest_advertised_health_service_is_chosen(supported: list[str], health: str) -> None:
    assert _validate(supported_versions=supported).health_service == health


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"plugin_type": "CSIPlugin"}, f"no handler registered for plugin type: CSIPlugin at socket {SOCKET}"),
    ({"name": ""}, "Required value"),
    ({"name": "../evil"}, "invalid DRA driver name"),
    ({"name": "a" * 64}, "Too long"),
    ({"endpoint": "plugin.sock"}, "must be an absolute path"),
    ({"endpoint": "/var/lib/kubelet/plugins/" + "x" * 100 + ".sock"}, "longer than 107 bytes"),
    ({"endpoint": "/run/other/plugin.sock"}, "is not inside the kubelet directory"),
    ({"endpoint": "/var/lib/kubelet/../../etc/passwd"}, "is not inside the kubelet directory"),
    ({"supported_versions": []}, "empty list of supported gRPC services"),
    ({"supported_versions": ["v1alpha4.Node"]}, "none of services supported by the plugin"),
])
def test_a_bad_registration_is_refused(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(reg.RegistrationError) as raised:
        _validate(**kwargs)
    assert fragment in str(raised.value)
    assert str(raised.value).startswith("RegisterPlugin error -- ")


def test_the_watch_finds_sockets_recursively_and_skips_dot_names(tmp_path: Path) -> None:
    import socket

    from controllers.fleet.plugins.manager import find_sockets

    short = Path(tempfile.mkdtemp(prefix="cpw-", dir="/tmp"))
    try:
        (short / "sub").mkdir()
        (short / ".hidden").mkdir()
        made = []
        for rel in ("a.sock", "sub/b.sock", ".c.sock", ".hidden/d.sock"):
            s = socket.socket(socket.AF_UNIX)
            s.bind(str(short / rel))
            made.append(s)
        (short / "plain-file").write_text("not a socket")
        found = find_sockets(short)
        assert sorted(found) == [str(short / "a.sock"), str(short / "sub" / "b.sock")]
        assert find_sockets(short / "missing") == {}
        for s in made:
            s.close()
    finally:
        shutil.rmtree(short, ignore_errors=True)
