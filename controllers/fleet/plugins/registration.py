"""What the kubelet checks of a plugin's `GetInfo` answer before it registers it (pure), following
upstream's plugin watcher and DRA plugin manager:

- the plugin type must be `DRAPlugin` (the only handler these kubelets have);
- the name is the DRA driver name: a DNS subdomain of at most 63 characters;
- the endpoint (the socket of the DRA service; the registration socket itself when empty) must be an
  absolute path inside the node's kubelet directory, short enough for a unix socket address;
- `supported_versions` lists the gRPC services the plugin serves as "<package>.<service>"; the DRA
  service chosen is the newest one advertised that the kubelet supports: "v1.DRAPlugin", else
  "v1beta1.DRAPlugin" (upstream's kubelet means to pick the most recent version; the plugin helper
  lists v1 first), and the health service, if any, the newest advertised one
  ("v1.DRAResourceHealth", then v1beta1, then v1alpha1). A plugin without a health service gets no
  health stream.

The error texts are the kubelet's, so a plugin author sees in `NotifyRegistrationStatus` what a real
kubelet would tell them.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from pathlib import Path

from cp import kubeletapi

DRA_SERVICES = (kubeletapi.DRA_V1, kubeletapi.DRA_V1BETA1)  # the kubelet's, newest first
HEALTH_SERVICES = (kubeletapi.HEALTH_V1, kubeletapi.HEALTH_V1BETA1, kubeletapi.HEALTH_V1ALPHA1)
DRIVER_NAME_MAX = 63
UNIX_PATH_MAX = 107  # sun_path holds 108 bytes with the terminating NUL
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class RegistrationError(Exception):
    """Why a plugin is not registered (sent back in `NotifyRegistrationStatus.error`)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PluginInfo:
    """A validated registration: the driver, where its DRA service listens and which services to use."""

    driver: str
    endpoint: str
    dra_service: str  # one of DRA_SERVICES
    health_service: str  # one of HEALTH_SERVICES, or "" (no health stream)
    socket: str  # the registration socket it came from


def pick_dra_service(supported: Sequence[str]) -> str:
    """The newest DRA service the plugin advertises ("" when none the kubelet supports)."""
    return next((s for s in DRA_SERVICES if s in supported), "")


def pick_health_service(supported: Sequence[str]) -> str:
    """The newest health service the plugin advertises ("" when none: no stream is opened)."""
    return next((s for s in HEALTH_SERVICES if s in supported), "")


def driver_name_problem(name: str) -> str:
    if not name:
        return "DRA driver name: Required value"
    if len(name) > DRIVER_NAME_MAX:
        return f"DRA driver name: Too long: may not be more than {DRIVER_NAME_MAX} bytes"
    if len(name) > 253 or not all(_LABEL.match(part) for part in name.split(".")):
        return (f"invalid DRA driver name {name!r}: a lowercase RFC 1123 subdomain must consist of lower case "
                "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character")
    return ""


def endpoint_problem(endpoint: str, *, root: Path) -> str:
    if not endpoint:
        return "empty DRA plugin endpoint"
    if not os.path.isabs(endpoint):
        return f"DRA plugin endpoint {endpoint!r} must be an absolute path"
    if len(os.fsencode(endpoint)) > UNIX_PATH_MAX:
        return f"DRA plugin endpoint {endpoint!r} is longer than {UNIX_PATH_MAX} bytes (a unix socket path)"
    clean, base = os.path.normpath(endpoint), os.path.normpath(str(root))
    if os.path.commonpath([clean, base]) != base:
        return f"DRA plugin endpoint {endpoint!r} is not inside the kubelet directory {base!r}"
    return ""


def validate(*, plugin_type: str, name: str, endpoint: str, supported_versions: Sequence[str], socket: str,
             root: Path) -> PluginInfo:
    """The registration of a `GetInfo` answer, or RegistrationError with the kubelet's message."""
    if plugin_type != kubeletapi.DRA_PLUGIN_TYPE:
        raise RegistrationError(f"RegisterPlugin error -- no handler registered for plugin type: {plugin_type} "
                                f"at socket {socket}")
    endpoint = endpoint or socket
    problem = driver_name_problem(name) or endpoint_problem(endpoint, root=root)
    service = pick_dra_service(supported_versions)
    if not problem and not supported_versions:
        problem = "empty list of supported gRPC services (aka supported versions)"
    elif not problem and not service:
        problem = (f"none of services supported by the plugin ({_quoted(supported_versions)}) are supported by "
                   f"the kubelet ({_quoted(DRA_SERVICES)})")
    if problem:
        raise RegistrationError(
            "RegisterPlugin error -- plugin validation failed with err: invalid supported gRPC versions of DRA "
            f"driver plugin {name} at endpoint {endpoint}: {problem}")
    return PluginInfo(driver=name, endpoint=endpoint, dra_service=service,
                      health_service=pick_health_service(supported_versions), socket=socket)


def _quoted(items: Sequence[str]) -> str:
    return "[" + " ".join(f'"{s}"' for s in items) + "]"
