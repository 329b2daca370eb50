"""`cplane controllers`: run controllers as their own process against a server, over HTTP only; and
loading `--fleet` for it and for `cplane serve`."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

from cp import features
from cp.cli import endpoint


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("controllers", help="run controllers as their own process against a server",
                       description="Run controllers against an API server, over HTTP only. Names as in "
                                   "docs/controllers.md; an unknown name lists the known ones.")
    endpoint.add_args(p)
    p.add_argument("--only", default=None, metavar="NAMES",
                   help="comma-separated controller names (default all; -name excludes one)")
    p.add_argument("--leader-elect", action="store_true",
                   help="take part in leader election through the Lease kube-system/cplane-controller-manager")
    p.add_argument("--fleet", type=Path, default=None, metavar="FILE",
                   help="YAML description of simulated nodes and their fake DRA drivers (run by the fleet "
                        "controller, as with `cplane serve --fleet`)")
    p.add_argument("--root-dir", type=Path, default=None, metavar="DIR",
                   help="the simulated kubelets' root directory: per node DIR/<node>/plugins_registry, plugins/, "
                        "cdi/ — where real DRA kubelet plugins register (docs/fleet.md, \"Kubelet plugins\"); "
                        "`cplane serve` uses DATA_DIR/nodes")
    add_scheduler_args(p)
    p.add_argument("--feature-gates", type=feature_gates, default=None, metavar="A=true,B=false",
                   help="feature gates of the scheduler and the ResourceClaim controller (as the API server's; "
                        "cp/features.py). " + features.help_text())
    p.add_argument("--log-format", choices=("console", "json"), default="console")
    p.add_argument("--log-level", default="info")
    p.set_defaults(func=run)


def feature_gates(text: str) -> Any:
    """argparse type of `--feature-gates` (`cp.features.parse`)."""
    try:
        return features.parse(text)
    except features.FeatureGateError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def gate_overrides(gates: Any, runtime: Any = None) -> dict[str, Any]:
    """The controllers bound to `gates`, as `run_controllers` overrides (the scheduler gets them
    through `fleet_overrides`, with its other flags). `runtime`: the API server's `--runtime-config`
    (`cp.runtimeconfig.RuntimeConfig`; None when unknown, as for `cplane controllers`): the
    ResourcePoolStatusRequest controller runs with DRAResourcePoolStatus on and, where known, its
    version served."""
    if gates is None:
        return {}
    import functools

    from controllers import resourceclaim, resourcepoolstatusrequest, taint_evictor
    from cp import resources

    pool_status = gates.enabled(features.DRA_RESOURCE_POOL_STATUS)
    if pool_status and runtime is not None:
        kind = resourcepoolstatusrequest.REQUESTS
        pool_status = resources.Registry(features=gates, runtime=runtime).lookup(
            kind.group, kind.version, kind.plural) is not None
    return {resourceclaim.NAME: functools.partial(resourceclaim.new, feature_gates=gates),
            taint_evictor.NAME: functools.partial(
                taint_evictor.new, use_rules=gates.enabled(features.DRA_DEVICE_TAINT_RULES)),
            resourcepoolstatusrequest.NAME: functools.partial(
                resourcepoolstatusrequest.new, enabled=pool_status,
                taint_rules=gates.enabled(features.DRA_DEVICE_TAINT_RULES),
                partition_types=gates.enabled(features.DRA_PARTITIONABLE_DEVICES_TYPE))}


def gated_names(gates: Any, names: list[str] | None) -> list[str] | None:
    """`names` (None: every controller) without those kube-controller-manager does not start with
    `gates`: the device taint eviction controller needs DRADeviceTaints."""
    if gates is None or gates.enabled(features.DRA_DEVICE_TAINTS):
        return names
    from controllers import taint_evictor

    return [*(names or ["*"]), f"-{taint_evictor.NAME}"]


def load_fleet(args: argparse.Namespace, *, command: str) -> bool:
    """Load `--fleet` into `args.loaded_fleet`; on a bad file print one error line and return False."""
    from controllers import fleet

    try:
        args.loaded_fleet = fleet.load_fleet(args.fleet)
    except (OSError, fleet.FleetError) as exc:
        print(f"cplane {command}: fleet {args.fleet}: {exc}", file=sys.stderr)
        return False
    return True


def kubelet_root(args: argparse.Namespace) -> Path | None:
    """The simulated kubelets' root directory: `--root-dir`, else DATA_DIR/nodes (`cplane serve`)."""
    root = getattr(args, "root_dir", None)
    if root is None and getattr(args, "data_dir", None) is not None:
        root = Path(args.data_dir) / "nodes"
    return None if root is None else Path(root)


def fleet_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The fleet controller bound to the loaded `--fleet` and the kubelets' root directory, and the
    scheduler bound to `--scheduler-config` / `--scheduler-seed` / `--feature-gates`, as
    `run_controllers` overrides."""
    out: dict[str, Any] = {}
    root = kubelet_root(args)
    if getattr(args, "fleet", None) is not None or root is not None:
        from controllers import fleet

        out[fleet.NAME] = fleet.factory(getattr(args, "loaded_fleet", None), kubelet_root=root)
    config = getattr(args, "loaded_scheduler_config", None)
    seed = getattr(args, "scheduler_seed", None)
    gates = getattr(args, "feature_gates", None)
    if config is not None or seed is not None or gates is not None:
        from controllers import scheduler

        out[scheduler.NAME] = scheduler.factory(config=config, seed=seed, feature_gates=gates)
    return out


def add_scheduler_args(p: argparse.ArgumentParser) -> None:
    """`--scheduler-config FILE` and `--scheduler-seed N` (cplane serve, cplane controllers and
    python -m controllers)."""
    p.add_argument("--scheduler-config", type=Path, default=None, metavar="FILE",
                   help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) for the scheduler: profiles "
                        "by schedulerName, plugins enabled/disabled per extension point and multiPoint, weights, "
                        "pluginConfig args, percentageOfNodesToScore, podInitialBackoffSeconds, "
                        "podMaxBackoffSeconds")
    p.add_argument("--scheduler-seed", type=int, default=None, metavar="N",
                   help="seed the scheduler's choice among equally scored nodes (reproducible placements)")


def load_scheduler_config(args: argparse.Namespace, *, command: str) -> bool:
    """Load and check `--scheduler-config` into `args.loaded_scheduler_config`; on a bad file print
    one error line and return False."""
    args.loaded_scheduler_config = None
    if getattr(args, "scheduler_config", None) is None:
        return True
    from cp.scheduling import profiles

    path = Path(args.scheduler_config)
    try:
        config = profiles.load_config(path.read_text(), source=str(path))
        profiles.build_profiles(config)  # plugin args are checked by the factories now, not at start
    except OSError as exc:
        print(f"cplane {command}: scheduler config {path}: cannot read: {exc.strerror or exc}", file=sys.stderr)
        return False
    except profiles.ConfigError as exc:
        message = " ".join(str(exc).split())
        prefix = "" if message.startswith(str(path)) else f"{path}: "
        print(f"cplane {command}: scheduler config {prefix}{message}", file=sys.stderr)
        return False
    args.loaded_scheduler_config = config
    return True


async def _controllers_async(args: argparse.Namespace) -> int:
    from controllers import registry
    from cp import collector

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    names = gated_names(args.feature_gates, [n for n in (args.only or "").split(",") if n] or None)
    kwargs: dict[str, object] = {"server_url": args.server} if args.server else {"kubeconfig": args.kubeconfig}
    ready = asyncio.Event()
    tuner = asyncio.create_task(collector.tune_when(ready, thresholds=collector.CONTROLLERS), name="controllers:tune-gc")
    try:
        await registry.run_controllers(**kwargs, names=names, stop_event=stop,  # type: ignore[arg-type]
                                       leader_election=args.leader_elect,
                                       overrides={**fleet_overrides(args), **gate_overrides(args.feature_gates)},
                                       ready=ready)
    finally:
        tuner.cancel()
        await asyncio.gather(tuner, return_exceptions=True)
    return 0


def run(args: argparse.Namespace) -> int:
    from cp import logs

    if args.fleet is not None:
        from controllers import fleet, registry

        try:
            selected = registry.resolve_names([n for n in (args.only or "").split(",") if n] or None)
        except ValueError as exc:
            print(f"cplane controllers: {exc}", file=sys.stderr)
            return 2
        if fleet.NAME not in selected:
            print("cplane controllers: --fleet needs the fleet controller (add it to --only)", file=sys.stderr)
            return 2
        if not load_fleet(args, command="controllers"):
            return 2
    if not load_scheduler_config(args, command="controllers"):
        return 2
    logs.configure(fmt=args.log_format, level=args.log_level)
    if not args.server and not args.kubeconfig:
        import os

        args.kubeconfig = os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    try:
        return asyncio.run(_controllers_async(args))
    except ValueError as exc:
        print(f"cplane controllers: {exc}", file=sys.stderr)
        return 2
