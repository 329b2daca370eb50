"""Kubeconfigs: reading the current context's server URL and credentials, and writing one. Pure (takes
and gives the text)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import yaml


class Endpoint(msgspec.Struct, frozen=True, kw_only=True):
    server: str
    namespace: str = "default"
    token: str = ""
    ca_data: str = ""  # base64 PEM
    client_cert_data: str = ""
    client_key_data: str = ""
    insecure_skip_tls_verify: bool = False


def _named(items: list[dict[str, Any]] | None, name: str) -> dict[str, Any]:
    for item in items or []:
        if item.get("name") == name:
            return dict(item)
    raise ValueError(f"kubeconfig has no entry named {name!r}")


def parse(text: str, *, context: str | None = None) -> Endpoint:
    doc = yaml.safe_load(text) or {}
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
    )


def load(path: str | Path | None = None, *, context: str | None = None) -> Endpoint:
    """From `path`, else $KUBECONFIG (first entry), else ~/.kube/config."""
    if path is None:
        env = os.environ.get("KUBECONFIG", "")
        path = env.split(os.pathsep)[0] if env else Path.home() / ".kube" / "config"
    return parse(Path(path).read_text(), context=context)


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
