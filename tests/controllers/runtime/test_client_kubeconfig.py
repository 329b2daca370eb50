"""Kubeconfigs as real clusters write them (`cplane record --kubeconfig` reads any): credentials in files
next to the kubeconfig (minikube's), and exec credential plugins (EKS's `aws eks get-token`, GKE's
`gke-gcloud-auth-plugin`): run with KUBERNETES_EXEC_INFO, again when their token expires, and every
failure said plainly; a cluster's `proxy-url`, and HTTPS_PROXY for servers not on this machine. The
cluster is a secure sandbox (TLS and a bearer token)."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.runtime import client as clients
from cp import kubeconfig as kubeconfigs
from cp.testing import sandbox

API = "client.authentication.k8s.io/v1"


def _plugin(tmp_path: Path, *, token: str, expires_in: float | None = None, api_version: str = API,
            fail: bool = False) -> Path:
    """A plugin (a Python script) that records each run's environment and prints an ExecCredential."""
    status: dict[str, Any] = {"token": token}
    if expires_in is not None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + expires_in))
        status["expirationTimestamp"] = stamp
    credential = {"apiVersion": api_version, "kind": "ExecCredential", "status": status}
    script = tmp_path / "bin" / "get-token"
    script.parent.mkdir(exist_ok=True)
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"runs = {str(tmp_path / 'runs.jsonl')!r}\n"
        "with open(runs, 'a') as f:\n"
        "    f.write(json.dumps({'info': json.loads(os.environ['KUBERNETES_EXEC_INFO']),\n"
        "                        'region': os.environ.get('AWS_REGION'), 'args': sys.argv[1:]}) + '\\n')\n"
        + ("sys.stderr.write('error: token expired, run aws sso login\\n'); sys.exit(3)\n" if fail else
           f"print(json.dumps({credential!r}))\n"))
    script.chmod(0o755)
    return script


def _runs(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "runs.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _with_user(source: Path, target: Path, user: dict[str, Any], *, cluster: dict[str, Any] | None = None) -> Path:
    doc = yaml.safe_load(source.read_text())
    doc["users"][0]["user"] = user
    if cluster is not None:
        doc["clusters"][0]["cluster"] = cluster
    target.write_text(yaml.safe_dump(doc))
    return target


async def test_an_exec_plugin_gives_the_token_and_runs_again_when_it_expires(tmp_path: Path) -> None:
    async with sandbox(data_dir=tmp_path / "cluster", controllers=(), secure=True) as sb:
        token = kubeconfigs.load(sb.kubeconfig).token
        plugin = _plugin(tmp_path, token=token, expires_in=5)  # within the 10 s margin: fetched again each time
        config = _with_user(sb.kubeconfig, tmp_path / "kubeconfig", {"exec": {
            "apiVersion": API, "command": "bin/get-token", "args": ["--cluster", "prod"],
            "env": [{"name": "AWS_REGION", "value": "eu-west-1"}], "provideClusterInfo": True,
            "interactiveMode": "Never"}})
        assert plugin.exists()
        async with clients.Client.from_kubeconfig(config) as client:
            assert [n["metadata"]["name"] for n in (await client.list("namespaces")).items if
                    n["metadata"]["name"] == "default"] == ["default"]
            await client.get("namespaces", "default")
        runs = _runs(tmp_path)
        assert len(runs) == 3  # at start, then before each request (it expires in 5 s)
        info = runs[0]["info"]
        assert info["kind"] == "ExecCredential" and info["apiVersion"] == API
        assert info["spec"]["interactive"] is False
        assert info["spec"]["cluster"]["server"] == kubeconfigs.load(sb.kubeconfig).server
        assert info["spec"]["cluster"]["certificate-authority-data"]
        assert (runs[0]["region"], runs[0]["args"]) == ("eu-west-1", ["--cluster", "prod"])


async def test_a_token_that_does_not_expire_is_fetched_once(tmp_path: Path) -> None:
    async with sandbox(data_dir=tmp_path / "cluster", controllers=(), secure=True) as sb:
        _plugin(tmp_path, token=kubeconfigs.load(sb.kubeconfig).token, expires_in=3600)
        config = _with_user(sb.kubeconfig, tmp_path / "kubeconfig",
                            {"exec": {"apiVersion": API, "command": str(tmp_path / "bin" / "get-token")}})
        async with clients.Client.from_kubeconfig(config) as client:
            for _ in range(3):
                await client.get("namespaces", "default")
        assert len(_runs(tmp_path)) == 1
        assert "cluster" not in _runs(tmp_path)[0]["info"]["spec"]  # (provideClusterInfo not asked)


def test_a_failing_or_missing_plugin_is_said_plainly(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.write_text(kubeconfigs.kubeconfig_text(server="https://127.0.0.1:1", ca_data=base64.b64encode(b"x").decode()))
    _plugin(tmp_path, token="t", fail=True)
    failing = _with_user(base, tmp_path / "failing", {"exec": {"apiVersion": API, "command": "bin/get-token"}})
    with pytest.raises(ValueError, match=r"get-token: exit status 3: error: token expired, run aws sso login"):
        clients.Client.from_kubeconfig(failing)
    missing = _with_user(base, tmp_path / "missing", {"exec": {
        "apiVersion": API, "command": "no-such-plugin-4c1e", "installHint": "install it with: brew install it"}})
    with pytest.raises(ValueError, match=r"(?s)no-such-plugin-4c1e: No such file.*brew install it"):
        clients.Client.from_kubeconfig(missing)
    (tmp_path / "runs.jsonl").unlink()
    _plugin(tmp_path, token="t", api_version="client.authentication.k8s.io/v1beta1")
    mismatched = _with_user(base, tmp_path / "mismatched", {"exec": {"apiVersion": API, "command": "bin/get-token"}})
    with pytest.raises(ValueError, match=r"expected client.authentication.k8s.io/v1 ExecCredential"):
        clients.Client.from_kubeconfig(mismatched)


async def test_credentials_in_files_next_to_the_kubeconfig(tmp_path: Path) -> None:
    """minikube's form: `certificate-authority: ca.crt` and a token file, relative to the kubeconfig."""
    async with sandbox(data_dir=tmp_path / "cluster", controllers=(), secure=True) as sb:
        inline = kubeconfigs.load(sb.kubeconfig)
        profile = tmp_path / "profile"
        profile.mkdir()
        (profile / "ca.crt").write_bytes(base64.b64decode(inline.ca_data))
        (profile / "token").write_text(inline.token + "\n")
        config = _with_user(sb.kubeconfig, profile / "config", {"tokenFile": "token"},
                            cluster={"server": inline.server, "certificate-authority": "ca.crt"})
        async with clients.Client.from_kubeconfig(config) as client:
            assert (await client.get("namespaces", "default"))["metadata"]["name"] == "default"
        (profile / "ca.crt").unlink()
        with pytest.raises(OSError, match=r"kubeconfig: certificate-authority ca.crt: No such file"):
            clients.Client.from_kubeconfig(config)


def test_a_relative_kubeconfig_resolves_a_relative_command_from_its_directory(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "kubeconfig").write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://k.example"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "users": [{"name": "u", "user": {"exec": {"apiVersion": API, "command": "./get-token"}}}]}))
    monkeypatch.chdir(tmp_path)
    endpoint = kubeconfigs.load("conf/kubeconfig")
    assert endpoint.exec is not None and endpoint.exec.command == str(tmp_path / "conf" / "get-token")


class ConnectProxy:
    """An HTTP proxy for TLS (CONNECT only), counting the tunnels it opened."""

    def __init__(self) -> None:
        self.tunnels: list[str] = []
        self.url = ""
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> ConnectProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
        if method != "CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            writer.close()
            return
        self.tunnels.append(target)
        host, port = target.rsplit(":", 1)
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


async def test_a_clusters_proxy_url_is_used_and_the_environments_proxy_not_for_loopback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with sandbox(data_dir=tmp_path / "cluster", controllers=(), secure=True) as sb, ConnectProxy() as proxy:
        inline = kubeconfigs.load(sb.kubeconfig)
        proxied = _with_user(sb.kubeconfig, tmp_path / "proxied", {"token": inline.token}, cluster={
            "server": inline.server, "certificate-authority-data": inline.ca_data, "proxy-url": proxy.url})
        async with clients.Client.from_kubeconfig(proxied) as client:
            assert (await client.get("namespaces", "default"))["metadata"]["name"] == "default"
        assert proxy.tunnels == [inline.server.removeprefix("https://")]
        # HTTPS_PROXY is for remote servers: a server on this machine is reached directly (client-go's rule).
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        async with clients.Client.from_kubeconfig(sb.kubeconfig) as client:
            await client.get("namespaces", "default")
        assert len(proxy.tunnels) == 1
    socks = _with_user(sb.kubeconfig, tmp_path / "socks", {"token": "t"}, cluster={
        "server": "https://k.example", "proxy-url": "socks5://127.0.0.1:1080"})
    with pytest.raises(ValueError, match="only http and https proxies"):
        clients.Client.from_kubeconfig(socks)


async def test_tls_server_name_is_the_name_the_certificate_is_checked_against(tmp_path: Path) -> None:
    import aiohttp

    async with sandbox(data_dir=tmp_path / "cluster", controllers=(), secure=True) as sb:
        inline = kubeconfigs.load(sb.kubeconfig)
        cluster = {"server": inline.server, "certificate-authority-data": inline.ca_data}
        named = _with_user(sb.kubeconfig, tmp_path / "named", {"token": inline.token},
                           cluster={**cluster, "tls-server-name": "localhost"})  # a name in the certificate
        async with clients.Client.from_kubeconfig(named) as client:
            assert (await client.get("namespaces", "default"))["metadata"]["name"] == "default"
            async with client.watch("namespaces", resource_version="0", timeout_seconds=30) as stream:
                async for event in stream:  # (the first: the watch went through too)
                    assert event.type == "ADDED"
                    break
        wrong = _with_user(sb.kubeconfig, tmp_path / "wrong", {"token": inline.token},
                           cluster={**cluster, "tls-server-name": "api.other.example"})
        async with clients.Client.from_kubeconfig(wrong) as client:
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await client.get("namespaces", "default")


async def test_requests_that_find_the_token_expired_together_run_the_plugin_once(tmp_path: Path) -> None:
    async with sandbox(data_dir=tmp_path / "cluster", controllers=(), secure=True) as sb:
        token = kubeconfigs.load(sb.kubeconfig).token
        _plugin(tmp_path, token=token, expires_in=5)  # the first token is about to expire
        config = _with_user(sb.kubeconfig, tmp_path / "kubeconfig",
                            {"exec": {"apiVersion": API, "command": "bin/get-token"}})
        async with clients.Client.from_kubeconfig(config) as client:
            _plugin(tmp_path, token=token, expires_in=3600)  # the next one lasts
            await asyncio.gather(*(client.get("namespaces", "default") for _ in range(5)))
            await client.get("namespaces", "default")
        assert len(_runs(tmp_path)) == 2  # at start, then once for the five
