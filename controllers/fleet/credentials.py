"""The credentials a DRA kubelet plugin on a simulated node uses (issue #23): `ROOT/<node>/kubeconfig`
with the server's URL, its CA and a token of `kube-system/dra-kubelet-plugin` bound to the Node
(`cp.kubeletplugins`), so the `authentication.kubernetes.io/node-name` extra names the node and the
node-scoped rules apply to the plugin as in a cluster (docs/driver-development.md).

The fleet asks for the token with its own identity (RBAC: `create serviceaccounts/token` for that
account only, as a kubelet asks for its pods' tokens). A server without the account or without a
token signer (`cplane serve --insecure` authenticates nobody) gets a kubeconfig without a token.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import structlog

from controllers.fleet.nodedirs import NodeDir
from controllers.runtime import client as clients
from cp import errors, kubeletplugins
from cp.kubeconfig import kubeconfig_text
from cp.objects import meta_of

logger = structlog.get_logger("cplane.controllers.fleet")


class Credentials:
    """Writes the nodes' kubeconfigs for one term of the fleet. Once the server refused a token (no
    account, no signer: `--insecure`), the other nodes' kubeconfigs are written without asking again
    (one warning, not one per node)."""

    def __init__(self, *, client: clients.Client) -> None:
        self.client = client
        self.granted = False  # a token was issued this term: ask for the others' at once
        self.refused: errors.StatusError | None = None
        self._first = asyncio.Lock()  # until then, one question at a time

    async def write(self, *, nodedir: NodeDir, node: Mapping[str, Any]) -> bool:
        """Write the node's kubeconfig (mode 0600, by rename); whether it carries a token."""
        name = str(meta_of(node).get("name") or "")
        if self.granted:
            token = await self._token(node, name)
        else:
            async with self._first:
                token = "" if self.refused is not None else await self._token(node, name)
        return write_kubeconfig(client=self.client, nodedir=nodedir, node_name=name, token=token)

    async def _token(self, node: Mapping[str, Any], name: str) -> str:
        try:
            out = await self.client.create_token(
                namespace=kubeletplugins.NAMESPACE, name=kubeletplugins.ACCOUNT,
                request=kubeletplugins.token_request(node=name, node_uid=str(meta_of(node).get("uid") or "")))
        except (errors.NotFound, errors.Forbidden, errors.Invalid, errors.Conflict, errors.BadRequest) as exc:
            if not isinstance(exc, errors.Conflict):  # a Node made again meanwhile: only this one
                self.refused = exc
            logger.warning("node_credentials_without_token", node=name, code=exc.code, reason=str(exc),
                           hint="a plugin on a simulated node gets no token while the server refuses one")
            return ""
        self.granted = True
        return str((out.get("status") or {}).get("token") or "")


def write_kubeconfig(*, client: clients.Client, nodedir: NodeDir, node_name: str, token: str) -> bool:
    """The kubeconfig naming `client`'s server and CA, with `token` (none: without one)."""
    ca = base64.b64encode(client.root_ca.encode()).decode() if client.root_ca else ""
    text = kubeconfig_text(server=client.base_url, token=token, ca_data=ca, user_name=kubeletplugins.ACCOUNT)
    nodedir.create()
    _write_private(nodedir.kubeconfig, text)
    logger.debug("node_credentials_written", node=node_name, path=str(nodedir.kubeconfig), token=bool(token))
    return bool(token)


def _write_private(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:  # mkstemp makes it 0600
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise
