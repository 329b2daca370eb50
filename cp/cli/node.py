"""`cplane node stop|start NAME`: stop and restart a simulated Node's kubelet (the fleet controller's,
`controllers/fleet/`). A stopped kubelet renews no Lease, posts no status and leaves its pods as
they are, so that after the grace period (50 s) the node lifecycle controller marks the Node
`Ready=Unknown` and taints it `node.kubernetes.io/unreachable`, and after the pods' default 300 s
toleration the taint eviction controller evicts them. The state is the annotation
`sim.cplane.dev/kubelet: stopped` on the Node (`kubectl annotate` does the same). Only the standard
library is imported at module level, so that `cplane --help` stays fast."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any

from cp.cli import endpoint

if TYPE_CHECKING:
    from controllers.runtime import client as clients


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register `cplane node stop|start NAME` on the top-level `cplane` subparsers."""
    p = subparsers.add_parser("node", help="simulated nodes: stop and start a node's kubelet",
                              description="Simulated nodes of the fleet.")
    nsub = p.add_subparsers(dest="node_command", metavar="COMMAND", required=True)
    stop = nsub.add_parser("stop", help="stop a node's simulated kubelet (no lease renewals, no status)",
                           description="Stop the simulated kubelet of a node: its Lease is no longer renewed "
                                       "and its pods are no longer updated. After 50 s the node becomes "
                                       "Ready=Unknown and is tainted node.kubernetes.io/unreachable; pods "
                                       "are evicted after their toleration (300 s by default).")
    start = nsub.add_parser("start", help="restart a node's simulated kubelet",
                            description="Restart the simulated kubelet of a node stopped with `cplane node stop`.")
    for sp, func in ((stop, _stop), (start, _start)):
        sp.add_argument("name", metavar="NAME", help="the Node's name")
        endpoint.add_args(sp)
        sp.set_defaults(func=func)
    return p


def _client(args: argparse.Namespace) -> clients.Client:
    from controllers.runtime import client as clients

    if args.server:
        return clients.Client(args.server)
    return clients.Client.from_kubeconfig(args.kubeconfig)


async def set_kubelet(client: clients.Client, name: str, *, stopped: bool) -> dict[str, Any]:
    """Stop (`stopped=True`) or start a Node's simulated kubelet: one merge patch of its annotation."""
    from controllers.fleet import objects as objs

    value = objs.KUBELET_STOPPED if stopped else None
    return await client.patch("nodes", name, {"metadata": {"annotations": {objs.KUBELET_STATE: value}}},
                              patch_type="merge", field_manager="cplane")


async def _set_async(args: argparse.Namespace, *, stopped: bool) -> int:
    from controllers.fleet import objects as objs

    async with _client(args) as client:
        node = await set_kubelet(client, args.name, stopped=stopped)
    if not objs.is_simulated(node):
        print(f"cplane node: node/{args.name} is not simulated (sim.cplane.dev/simulated: \"false\"): "
              "no simulated kubelet to stop or start", file=sys.stderr)
    print(f"node/{args.name} kubelet {'stopped' if stopped else 'started'}")
    return 0


def _run(args: argparse.Namespace, *, stopped: bool) -> int:
    from cp import errors

    try:
        return asyncio.run(_set_async(args, stopped=stopped))
    except errors.StatusError as exc:
        print(f"cplane node: {exc.message}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"cplane node: {exc}", file=sys.stderr)
        return 1


def _stop(args: argparse.Namespace) -> int:
    return _run(args, stopped=True)


def _start(args: argparse.Namespace) -> int:
    return _run(args, stopped=False)
