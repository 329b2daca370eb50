"""Kubeconfigs: reading the current context's server URL and credentials, and writing one. `parse` is
pure (takes the text); `load` reads the file and what it refers to.

A credential can be given inline (`certificate-authority-data`, `client-certificate-data`,
`client-key-data`, `token`), as files (`certificate-authority`, `client-certificate`, `client-key`,
`tokenFile`: relative paths are relative to the kubeconfig's directory, as client-go resolves them;
`load` reads them into the inline form), or by an `exec` credential plugin (`ExecConfig`: the client
runs it, `controllers.runtime.execcred`), as EKS, GKE and AKS kubeconfigs do."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import msgspec
import yaml


class ExecConfig(msgspec.Struct, frozen=True, kw_only=True):
    """A user's `exec` credential plugin (client.authentication.k8s.io ExecConfig)."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    api_version: str = ""
    install_hint: str = ""
    provide_cluster_info: bool = False


class Endpoint(msgspec.Struct, frozen=True, kw_only=True):
    server: str
    namespace: str = "default"
    token: str = ""
    ca_data: str = ""  # base64 PEM
    client_cert_data: str = ""
    client_key_data: str = ""
    insecure_skip_tls_verify: bool = False
    tls_server_name: str = ""
    proxy_url: str = ""  # the cluster's `proxy-url`
    exec: ExecConfig | None = None


def _named(items: list[dict[str, Any]] | None, name: str) -> dict[str, Any]:
    for item in items or []:
        if item.get("name") == name:
            return dict(item)
    raise ValueError(f"kubeconfig has no entry named {name!r}")


def parse(text: str, *, context: str | None = None) -> Endpoint:
    return _endpoint(yaml.safe_load(text) or {}, context=context)


def _endpoint(doc: dict[str, Any], *, context: str | None) -> Endpoint:
    ctx_name = context or doc.get("current-context") or ""
    ctx = _named(doc.get("contexts"), ctx_name).get("context") or {}
    cluster = _named(doc.get("clusters"), ctx.get("cluster", "")).get("cluster") or {}
    user: dict[str, Any] = {}
    if ctx.get("user"):
        user = _named(doc.get("users"), ctx["user"]).get("user") or {}
    return Endpoint(
        server=str(cluster.get("server", "")).rstrip("/"),
        namespace=str(ctx.get("namespace") or "default"),
        token=str(user.get("token") or ""),
        ca_data=str(cluster.get("certificate-authority-data") or ""),
        client_cert_data=str(user.get("client-certificate-data") or ""),
        client_key_data=str(user.get("client-key-data") or ""),
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify", False)),
        tls_server_name=str(cluster.get("tls-server-name") or ""),
        proxy_url=str(cluster.get("proxy-url") or ""),
        exec=_exec(user.get("exec")),
    )


def _exec(spec: Any) -> ExecConfig | None:
    if not isinstance(spec, dict):
        return None
    if not spec.get("command"):
        raise ValueError("kubeconfig: exec plugin has no command")
    env = tuple((str(e.get("name")), str(e.get("value") or "")) for e in spec.get("env") or ()
                if isinstance(e, dict) and e.get("name"))
    return ExecConfig(command=str(spec["command"]), args=tuple(str(a) for a in spec.get("args") or ()), env=env,
                      api_version=str(spec.get("apiVersion") or ""), install_hint=str(spec.get("installHint") or ""),
                      provide_cluster_info=bool(spec.get("provideClusterInfo", False)))


def load(path: str | Path | None = None, *, context: str | None = None) -> Endpoint:
    """From `path`, else $KUBECONFIG (first entry), else ~/.kube/config; the files it names are read
    (relative to its directory). Raises OSError or ValueError naming what cannot be read."""
    if path is None:
        env = os.environ.get("KUBECONFIG", "")
        path = env.split(os.pathsep)[0] if env else Path.home() / ".kube" / "config"
    path = Path(path)
    doc = yaml.safe_load(path.read_text()) or {}
    if isinstance(doc, dict):
        _inline_files(doc, base=path.absolute().parent)
    return _endpoint(doc if isinstance(doc, dict) else {}, context=context)


def _inline_files(doc: dict[str, Any], *, base: Path) -> None:
    """The credentials given as files, read into their inline fields (unless those are set)."""
    def read(name: Any, field: str) -> bytes:
        target = Path(os.path.expanduser(str(name)))
        try:
            return (target if target.is_absolute() else base / target).read_bytes()
        except OSError as exc:
            raise OSError(f"kubeconfig: {field} {name}: {exc.strerror or exc}") from None

    for entry in doc.get("clusters") or ():
        cluster = entry.get("cluster") if isinstance(entry, dict) else None
        if isinstance(cluster, dict) and cluster.get("certificate-authority") \
                and not cluster.get("certificate-authority-data"):
            data = read(cluster["certificate-authority"], "certificate-authority")
            cluster["certificate-authority-data"] = base64.b64encode(data).decode()
    for entry in doc.get("users") or ():
        user = entry.get("user") if isinstance(entry, dict) else None
        if not isinstance(user, dict):
            continue
        for field in ("client-certificate", "client-key"):
            if user.get(field) and not user.get(f"{field}-data"):
                user[f"{field}-data"] = base64.b64encode(read(user[field], field)).decode()
        if user.get("tokenFile") and not user.get("token"):
            user["token"] = read(user["tokenFile"], "tokenFile").decode().strip()
        spec = user.get("exec")
        if isinstance(spec, dict) and isinstance(spec.get("command"), str) and os.sep in spec["command"] \
                and not os.path.isabs(spec["command"]):
            spec["command"] = str(base / spec["command"])  # (a bare name is looked up on PATH)


def kubeconfig_text(*, server: str, token: str = "", ca_data: str = "", client_cert_data: str = "",
                    client_key_data: str = "", user_name: str = "cplane-admin") -> str:
    """A kubeconfig for `server`; with TLS, `ca_data` (base64 PEM) and a token or a client certificate.

    A plain-HTTP server's cluster entry says `insecure-skip-tls-verify: true`: @kubernetes/client-node
    refuses an `http://` server without it ("HTTP protocol is not allowed when skipTLSVerify is not
    set or false"); client-go and the Python clients use no TLS for `http://` either way. Never
    together with a CA (client-go rejects that pair)."""
    lines = [f"    token: {token}\n"] if token else []
    if client_cert_data:
        lines.append(f"    client-certificate-data: {client_cert_data}\n")
        lines.append(f"    client-key-data: {client_key_data}\n")
    user = "".join(lines) or "    {}\n"
    ca = f"    certificate-authority-data: {ca_data}\n" if ca_data else ""
    if server.startswith("http://") and not ca_data:
        ca = "    insecure-skip-tls-verify: true\n"
    return (
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        "- name: cplane\n"
        "  cluster:\n"
        + ca +
        f"    server: {server}\n"
        "contexts:\n"
        "- name: cplane\n"
        "  context:\n"
        "    cluster: cplane\n"
        "    namespace: default\n"
        f"    user: {user_name}\n"
        "current-context: cplane\n"
        "preferences: {}\n"
        "users:\n"
        f"- name: {user_name}\n"
        "  user:\n" + user
    )
