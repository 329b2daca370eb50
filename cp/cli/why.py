"""`cplane why pod/NAME`: why a pod does (not) schedule (issue #12).

    cplane why pod/web-0 [-n NS] [--node NODE] [--at REV] [-o text|json]
                         [--server URL | --kubeconfig FILE]          # ask a running server
                         [--data-dir DIR | --db URL | -f FILE]      # or read an event log directly

The diagnosis itself is `cp.scheduling.explain.explain_pod`; a server serves it at
`GET /apis/sim.cplane.dev/v1alpha1/namespaces/NS/pods/NAME/why` (`api/why.py`, docs/why.md).
`cp/scheduling/explain_text.py` turns its JSON into text. Only the standard library is imported at
module level, so `cplane --help` stays fast; the command imports the rest when it runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from cp.cli import endpoint
from cp.scheduling import explain_text

WHY_PATH = "/apis/sim.cplane.dev/v1alpha1/namespaces/{namespace}/pods/{name}/why"

__all__ = ["WHY_PATH", "add_parser", "run"]


def parse_target(text: str) -> str:
    kind, sep, name = text.partition("/")
    if not sep:
        return text
    if kind.lower() not in ("pod", "pods", "po"):
        raise ValueError(f"only pods can be explained, not {kind!r}")
    if not name:
        raise ValueError("missing the pod name")
    return name


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "why", help="why a pod does not schedule: per node, per claim, per request, per device",
        description="Explain the scheduling verdict for a pod as it is now or as it was at revision REV: "
                    "nodes filtered before DRA (node selector, taints, cpu/memory/pods), and for DRA, per claim "
                    "and request, the devices considered and why each group was rejected, ending with the "
                    "smallest change that would make the pod fit. Asks a server (kubeconfig / --server), or reads "
                    "an event log directly with --data-dir / --db / -f. See docs/why.md.")
    p.add_argument("target", metavar="pod/NAME", help="the pod (pod/NAME or NAME)")
    p.add_argument("-n", "--namespace", default=None, help="the pod's namespace (default: the kubeconfig's, else default)")
    p.add_argument("--node", default=None, help="explain this node only, in full")
    p.add_argument("--at", type=int, default=None, metavar="REV", help="as the cluster was at revision REV")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")
    p.add_argument("-v", "--verbose", action="store_true", help="every node in full, not only the first groups")
    endpoint.add_args(p)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--data-dir", default=None, help="read this cplane data directory's event log instead of a server")
    g.add_argument("--db", default=None, metavar="URL", help="read this event-log database instead of a server")
    g.add_argument("-f", "--file", default=None, metavar="PATH", help="read an NDJSON export or SQLite event log")
    p.set_defaults(func=run)
    return p


async def _fetch(args: argparse.Namespace, name: str) -> dict[str, Any]:
    from controllers.runtime import client as clients
    from cp import kubeconfig

    namespace = args.namespace
    if args.server:
        client = clients.Client(args.server)
    else:
        client = clients.Client.from_kubeconfig(args.kubeconfig)
        if namespace is None:
            try:
                namespace = kubeconfig.load(args.kubeconfig).namespace
            except (OSError, ValueError):
                namespace = None
    namespace = namespace or "default"
    params = {}
    if args.node:
        params["node"] = args.node
    if args.at is not None:
        params["at"] = str(args.at)
    async with client:
        raw = await client.request("GET", WHY_PATH.format(namespace=namespace, name=name), params=params)
    return dict(json.loads(raw))


async def _offline(args: argparse.Namespace, name: str) -> dict[str, Any]:
    from api import why as api_why

    spec = args.data_dir or args.db or args.file
    return await api_why.explain_from_source(spec, namespace=args.namespace or "default", name=name,
                                             node=args.node, at=args.at)


def run(args: argparse.Namespace) -> int:
    """Entry point of `cplane why`."""
    from cp import errors, logs

    logs.configure(level="warning")  # the event log's own lines would go to stderr with the answer

    try:
        name = parse_target(args.target)
    except ValueError as exc:
        print(f"cplane why: {exc}", file=sys.stderr)
        return 2
    offline = bool(args.data_dir or args.db or args.file)
    try:
        doc = asyncio.run(_offline(args, name) if offline else _fetch(args, name))
    except errors.StatusError as exc:
        print(f"cplane why: {exc.message}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"cplane why: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    text = json.dumps(doc, indent=2) + "\n" if args.output == "json" else explain_text.render(doc, verbose=args.verbose)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `| head`: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
