"""Which server a client command talks to: `--kubeconfig FILE` or `--server URL`, shared by every
command that reaches a running server (clock, metrics, device, why, replay control)."""

from __future__ import annotations

import argparse
from typing import Any


def add_args(p: argparse.ArgumentParser, *, namespace: bool = False) -> None:
    """`--kubeconfig` and `--server` (and `-n/--namespace`, default "default", when asked)."""
    if namespace:
        p.add_argument("-n", "--namespace", default="default", help="namespace (default: default)")
    p.add_argument("--kubeconfig", default=None, help="kubeconfig to read the server from (default $KUBECONFIG)")
    p.add_argument("--server", default=None, metavar="URL", help="server URL (overrides the kubeconfig)")


def url_and_headers(args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    """The server URL and the headers (a bearer token) to reach it with."""
    from cp import kubeconfig

    if args.server:
        return str(args.server).rstrip("/"), {}
    ep = kubeconfig.load(args.kubeconfig)
    return ep.server, ({"Authorization": f"Bearer {ep.token}"} if ep.token else {})


def tls(args: argparse.Namespace) -> Any:
    """The TLS settings of the kubeconfig's cluster (CA data, client certificate), None for http."""
    if args.server:
        return None
    from controllers.runtime import client as clients
    from cp import kubeconfig

    return clients._ssl_context(kubeconfig.load(args.kubeconfig))
