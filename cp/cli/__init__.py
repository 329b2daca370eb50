"""The `cplane` command: one module per command group, each with `add_parser(sub)` and `run(args)`.

    serve        the API server over an event log, with controllers and a simulated fleet  (serve.py)
    controllers  controllers as their own process, over HTTP                               (controllers.py)
    clock        the virtual clock                                                         (clock.py)
    log          export, import, show, history, diff, events                              (log.py)
    replay       serve a recording that replays; control a running replay                 (replay.py)
    kubeconfig   client certificates for new identities                                    (kubeconfig.py)
    metrics      the values the metrics APIs serve                                         (metrics.py)
    device       simulated device health                                                  (device.py)
    node         stop and start a simulated node's kubelet                                (node.py)
    pod          the devices each container of a pod gets (claims, CDI ids, edits)         (pod.py)
    why          why a pod does (not) schedule                                             (why.py)
    record       record a live cluster into an event log                                   (record.py)

`render.py` is the terminal rendering, `target.py` how a client command finds its server. This package
is a composition root: the commands wire `api`, `storage` and `controllers` together. Every module
imports only the standard library at module level and the layers when its command runs, so that
`cplane --help` and `cplane serve`'s start-up stay fast.
"""

from __future__ import annotations

import argparse

from cp.cli import clock, controllers, device, kubeconfig, log, metrics, node, pod, record, replay, serve, why

COMMANDS = (serve, clock, log, controllers, replay, kubeconfig, metrics, device, node, pod, why, record)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cplane",
        description="cplane: an event-sourced replica of the Kubernetes control plane, for Dynamic "
                    "Resource Allocation. Every write is an event in a SQL log; kubectl and client "
                    "libraries talk to it as to a real cluster.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from cp import logs  # noqa: F401  (first: structlog then loads without `rich`, whoever imports it)

    return int(args.func(args))
