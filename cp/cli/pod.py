"""`cplane pod devices NAME`: what each container of a pod on a simulated node gets from its
ResourceClaims — the claims and prepared devices, their CDI device ids, and the container edits those
resolve to in the node's CDI directory (env, device nodes, mounts, hooks...), as the kubelet and the
container runtime would apply them (`controllers/fleet/devices.py`).

The pod is read over the API (`--kubeconfig`/`--server`, else DATA_DIR/kubeconfig); the node's
kubelet directory is `ROOT/<node>` with ROOT `--root-dir`, else DATA_DIR/nodes (what `cplane serve`
uses). Only the standard library is imported at module level, so that `cplane --help` stays fast."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from cp.cli import endpoint

if TYPE_CHECKING:
    from controllers.fleet import devices
    from controllers.runtime import client as clients


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register `cplane pod devices NAME` on the top-level `cplane` subparsers."""
    p = subparsers.add_parser("pod", help="pods on simulated nodes: the devices each container gets",
                              description="Pods on simulated nodes.")
    psub = p.add_subparsers(dest="pod_command", metavar="COMMAND", required=True)
    d = psub.add_parser(
        "devices", help="each container's claims, prepared devices, CDI ids and resolved edits",
        description="Show what each container of a pod gets from its ResourceClaims on its simulated node: "
                    "the claims it names (limited to a request if it says one), the devices prepared for "
                    "them with their CDI device ids (the node's checkpoint, ROOT/<node>/dra_manager_state), "
                    "and the container edits those ids resolve to in the node's CDI directory "
                    "(ROOT/<node>/cdi): environment, device nodes, mounts, hooks.")
    d.add_argument("name", metavar="NAME", help="the pod's name")
    d.add_argument("-c", "--container", default=None, help="only this container")
    d.add_argument("--data-dir", type=Path, default=None, metavar="DIR",
                   help="the server's data directory: DIR/kubeconfig, and the nodes' kubelet directories in DIR/nodes")
    d.add_argument("--root-dir", type=Path, default=None, metavar="ROOT",
                   help="the nodes' kubelet directories (default DATA_DIR/nodes; `python -m controllers.fleet "
                        "--root-dir`'s)")
    d.add_argument("-o", "--output", choices=("text", "json"), default="text", help="output format")
    endpoint.add_args(d, namespace=True)
    d.set_defaults(func=_devices)
    return p


def _client(args: argparse.Namespace) -> clients.Client:
    from controllers.runtime import client as clients

    if args.server:
        return clients.Client(args.server)
    if args.kubeconfig is None and args.data_dir is not None:
        return clients.Client.from_kubeconfig(args.data_dir / "kubeconfig")
    return clients.Client.from_kubeconfig(args.kubeconfig)


def _root(args: argparse.Namespace) -> Path:
    if args.root_dir is not None:
        return Path(args.root_dir)
    if args.data_dir is not None:
        return Path(args.data_dir) / "nodes"
    raise ValueError("say where the nodes' kubelet directories are: --data-dir DIR (DIR/nodes) or --root-dir ROOT")


async def show_devices(args: argparse.Namespace, *, out: IO[str]) -> int:
    """The command: 0 when every container's devices resolved, 1 when one did not (it says why)."""
    from controllers.fleet import devices, nodedirs
    from cp.objects import meta_of, spec_of

    root = _root(args)
    async with _client(args) as client:
        pod = await client.get("pods", args.name, namespace=args.namespace)
    node = str(spec_of(pod).get("nodeName") or "")
    ns = str(meta_of(pod).get("namespace") or args.namespace)
    if not node:
        raise ValueError(f"pod {ns}/{args.name} is not bound to a node yet")
    names = devices.pod_containers(pod)
    if args.container is not None:
        if args.container not in names:
            raise ValueError(f"pod {ns}/{args.name} has no container {args.container!r}")
        names = [args.container]
    node_dir = nodedirs.NodeDir(root=root, node=node)
    results: list[tuple[str, devices.ContainerDevices | None, str]] = []
    for name in names:
        try:
            results.append((name, devices.resolve(node_dir=node_dir, pod=pod, container=name), ""))
        except devices.DevicesError as exc:
            results.append((name, None, str(exc)))
    if args.output == "json":
        out.write(_json(ns=ns, name=args.name, node=node, results=results))
    else:
        out.write(_text(ns=ns, name=args.name, node=node, results=results))
    return 1 if any(err for _, _, err in results) else 0


def _json(*, ns: str, name: str, node: str, results: list[tuple[str, devices.ContainerDevices | None, str]]) -> str:
    import msgspec

    containers: list[dict[str, Any]] = []
    for cname, got, err in results:
        if got is None:
            containers.append({"container": cname, "error": err})
            continue
        doc = msgspec.to_builtins(got)
        doc["environment"] = got.edits.environment()
        containers.append(doc)
    body = {"namespace": ns, "name": name, "node": node, "containers": containers}
    return msgspec.json.format(msgspec.json.encode(body), indent=2).decode() + "\n"


def _text(*, ns: str, name: str, node: str, results: list[tuple[str, devices.ContainerDevices | None, str]]) -> str:
    from cp.cli import render

    lines = [f"pod {ns}/{name} on node {node}"]
    rows = [["CONTAINER", "CLAIM", "REQUEST", "RESOURCECLAIM", "DRIVER", "POOL", "DEVICE", "CDI DEVICES"]]
    for cname, got, _ in results:
        for cc in got.claims if got is not None else []:
            if not cc.prepared:
                rows.append([cname, cc.name, cc.request or "<all>", cc.claim, "<not prepared on this node>",
                             "", "", ""])
            for d in cc.devices:
                device = f"{d.device} (share {d.share_id})" if d.share_id else d.device
                rows.append([cname, cc.name, cc.request or "<all>", cc.claim, d.driver, d.pool, device,
                             ",".join(d.cdi_device_ids) or "<none>"])
    if len(rows) > 1:
        lines += ["", render.columns_text(rows).rstrip("\n")]
    for cname, got, err in results:
        lines.append("")
        if got is None:
            lines.append(f"container {cname}: error: {err}")
            continue
        if not got.cdi_device_ids:
            lines.append(f"container {cname}: no devices")
            continue
        lines.append(f"container {cname}:")
        lines.append("  CDI devices:")
        lines += [f"    {i}" + (f" ({got.spec_files[i]})" if i in got.spec_files else "") for i in got.cdi_device_ids]
        e = got.edits
        env = got.edits.environment()
        if env:
            lines.append("  env:")
            lines += [f"    {k}={v}" for k, v in env.items()]
        if e.device_nodes:
            lines.append("  device nodes:")
            for dn in e.device_nodes:
                extra = ", ".join(x for x in (
                    f"host {dn.host_path}" if dn.host_path and dn.host_path != dn.path else "",
                    f"type {dn.type}" if dn.type else "", f"{dn.major}:{dn.minor}" if dn.major or dn.minor else "",
                    f"permissions {dn.permissions}" if dn.permissions else "") if x)
                lines.append(f"    {dn.path}" + (f" ({extra})" if extra else ""))
        if e.mounts:
            lines.append("  mounts:")
            lines += [f"    {m.host_path} -> {m.container_path}" + (f" ({','.join(m.options)})" if m.options else "")
                      for m in e.mounts]
        if e.hooks:
            lines.append("  hooks:")
            lines += [f"    {h.hook_name}: {h.path}" + (f" (args: {' '.join(h.args)})" if h.args else "")
                      for h in e.hooks]
        if e.net_devices:
            lines.append("  net devices:")
            lines += [f"    {n.host_interface_name} -> {n.name}" for n in e.net_devices]
        if e.additional_gids:
            lines.append(f"  additional groups: {', '.join(str(g) for g in e.additional_gids)}")
        if e.intel_rdt is not None:
            lines.append(f"  intelRdt: closID {e.intel_rdt.clos_id or '<none>'}")
    return "\n".join(lines) + "\n"


def _devices(args: argparse.Namespace) -> int:
    from cp import errors

    try:
        return asyncio.run(show_devices(args, out=sys.stdout))
    except errors.StatusError as exc:
        print(f"cplane pod devices: {exc.message}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"cplane pod devices: {exc}", file=sys.stderr)
        return 1
