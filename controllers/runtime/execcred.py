"""Exec credential plugins (client.authentication.k8s.io ExecCredential), as client-go runs them: the
kubeconfig user's `exec` command (`cp.kubeconfig.ExecConfig`, e.g. `aws eks get-token`,
`gke-gcloud-auth-plugin`, `kubelogin`) is run with its args and env added to ours, and
`KUBERNETES_EXEC_INFO` holding an ExecCredential whose spec says the run is not interactive (and
gives the cluster, with `provideClusterInfo`). It prints an ExecCredential whose status has a bearer
token, or a client certificate and key, and may say when they expire; `Client` runs the plugin again
then (`fresh`).
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
from datetime import datetime

import msgspec

from cp import kubeconfig

DEFAULT_API_VERSION = "client.authentication.k8s.io/v1"
_TIMEOUT = 60.0  # seconds a plugin may take (a cloud CLI fetching a token)


class Credential(msgspec.Struct, frozen=True, kw_only=True):
    token: str = ""
    client_cert_data: str = ""  # PEM
    client_key_data: str = ""
    expires: float | None = None  # unix seconds; None: valid as long as the process runs


class _Status(msgspec.Struct, frozen=True, rename="camel"):
    token: str = ""
    client_certificate_data: str = ""
    client_key_data: str = ""
    expiration_timestamp: str = ""


class _ExecCredential(msgspec.Struct, frozen=True):
    apiVersion: str = ""
    kind: str = ""
    status: _Status | None = None


def _environment(config: kubeconfig.ExecConfig, endpoint: kubeconfig.Endpoint) -> dict[str, str]:
    api_version = config.api_version or DEFAULT_API_VERSION
    spec: dict[str, object] = {"interactive": False}
    if config.provide_cluster_info:
        cluster: dict[str, object] = {"server": endpoint.server}
        if endpoint.ca_data:
            cluster["certificate-authority-data"] = endpoint.ca_data
        if endpoint.insecure_skip_tls_verify:
            cluster["insecure-skip-tls-verify"] = True
        if endpoint.tls_server_name:
            cluster["tls-server-name"] = endpoint.tls_server_name
        spec["cluster"] = cluster
    info = {"apiVersion": api_version, "kind": "ExecCredential", "spec": spec}
    return {**os.environ, **dict(config.env), "KUBERNETES_EXEC_INFO": msgspec.json.encode(info).decode()}


def _credential(config: kubeconfig.ExecConfig, code: int, out: bytes, err: bytes) -> Credential:
    name = config.command
    if code != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        raise ValueError(f"exec plugin {name}: exit status {code}" + (f": {' '.join(tail)}" if tail else ""))
    try:
        got = msgspec.json.decode(out, type=_ExecCredential)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ValueError(f"exec plugin {name}: its output is not an ExecCredential: {exc}") from None
    want = config.api_version or DEFAULT_API_VERSION
    if got.kind != "ExecCredential" or got.apiVersion != want:
        raise ValueError(f"exec plugin {name}: got {got.apiVersion or '?'} {got.kind or '?'}, "
                         f"expected {want} ExecCredential")
    status = got.status or _Status()
    if not status.token and not (status.client_certificate_data and status.client_key_data):
        raise ValueError(f"exec plugin {name}: its ExecCredential has no token nor client certificate and key")
    expires = None
    if status.expiration_timestamp:
        try:
            expires = datetime.fromisoformat(status.expiration_timestamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise ValueError(f"exec plugin {name}: expirationTimestamp {status.expiration_timestamp!r} "
                             "is not an RFC 3339 time") from None
    return Credential(token=status.token, client_cert_data=status.client_certificate_data,
                      client_key_data=status.client_key_data, expires=expires)


def _not_found(config: kubeconfig.ExecConfig, exc: OSError) -> ValueError:
    hint = f"\n{config.install_hint}" if config.install_hint else ""
    return ValueError(f"exec plugin {config.command}: {exc.strerror or exc}{hint}")


def run(config: kubeconfig.ExecConfig, endpoint: kubeconfig.Endpoint) -> Credential:
    """Run the plugin now (before the client's first request). Raises ValueError saying what failed."""
    try:
        done = subprocess.run([config.command, *config.args], env=_environment(config, endpoint),
                              capture_output=True, stdin=subprocess.DEVNULL, timeout=_TIMEOUT, check=False)
    except OSError as exc:
        raise _not_found(config, exc) from None
    except subprocess.TimeoutExpired:
        raise ValueError(f"exec plugin {config.command}: no answer in {_TIMEOUT:.0f} s") from None
    return _credential(config, done.returncode, done.stdout, done.stderr)


async def run_async(config: kubeconfig.ExecConfig, endpoint: kubeconfig.Endpoint) -> Credential:
    """Run the plugin again (a token that expired), without blocking the loop."""
    try:
        proc = await asyncio.create_subprocess_exec(
            config.command, *config.args, env=_environment(config, endpoint), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        raise _not_found(config, exc) from None
    try:
        out, err = await asyncio.wait_for(proc.communicate(), _TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise ValueError(f"exec plugin {config.command}: no answer in {_TIMEOUT:.0f} s") from None
    return _credential(config, proc.returncode or 0, out, err)


def with_credential(endpoint: kubeconfig.Endpoint, cred: Credential) -> kubeconfig.Endpoint:
    """`endpoint` with the plugin's token or client certificate in place of the kubeconfig's."""
    if cred.client_cert_data and cred.client_key_data:
        return msgspec.structs.replace(
            endpoint, token=cred.token or endpoint.token,
            client_cert_data=base64.b64encode(cred.client_cert_data.encode()).decode(),
            client_key_data=base64.b64encode(cred.client_key_data.encode()).decode())
    return msgspec.structs.replace(endpoint, token=cred.token)
