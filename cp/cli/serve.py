"""`cplane serve`: the API server over an event log, with the controllers and a simulated fleet in the
same process unless `--no-controllers` (the process entry point: composition root of api, storage and
controllers)."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import re
import signal
import sys
from pathlib import Path
from typing import Any

from cp import features
from cp.cli import controllers as controller_commands

LOOPBACK_NAMES = ("localhost",)


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# kube-apiserver's names of the built-in plugins (api.app.ADMISSION_PLUGINS, kept equal by a test).
_PLUGINS = ("LimitRanger", "ServiceAccount", "Priority", "DefaultStorageClass", "CertificateApproval",
            "MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota")


def _plugins(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in _PLUGINS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown admission plugins: {', '.join(unknown)} "
                                         f"(known: {', '.join(_PLUGINS)})")
    return names


def _service_accounts(args: argparse.Namespace) -> bool:
    """ServiceAccount admission: on, as kube-apiserver's default, while the controller that creates the
    `default` accounts runs; with `--no-controllers` only when enabled explicitly."""
    if "ServiceAccount" in args.disable_admission_plugins:
        return False
    return "ServiceAccount" in args.enable_admission_plugins or not args.no_controllers


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve", help="serve the Kubernetes API (and controllers) over an event log",
        description="Serve the Kubernetes API over an event log in DIR, write DIR/kubeconfig, and answer "
                    "GET /readyz 200 once ready.")
    p.add_argument("--data-dir", type=Path, required=True, help="directory for the SQLite store and kubeconfig")
    p.add_argument("--port", type=int, default=6443, help="TCP port (0 picks a free one; default 6443)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--db", default=None, metavar="URL",
                   help="event-log database URL: sqlite+aiosqlite:///PATH (default DIR/cplane.db) or "
                        "postgresql+asyncpg://USER@HOST:PORT/DB")
    p.add_argument("--insecure", action="store_true",
                   help="serve plain HTTP without authentication (loopback addresses only); by default the "
                        "server speaks TLS (CA and certificate in DIR/pki) and requires credentials")
    p.add_argument("--token-auth-file", default=None, metavar="FILE",
                   help="more users: kube-apiserver's CSV token file, `token,user,uid[,\"group1,group2\"]`")
    p.add_argument("--service-account-issuer", default=None, metavar="URL",
                   help="the `iss` of ServiceAccount tokens (default https://kubernetes.default.svc.cluster.local)")
    p.add_argument("--api-audiences", default=None, metavar="A,B",
                   help="audiences a token must be for to reach the API (default: the issuer)")
    p.add_argument("--no-controllers", action="store_true",
                   help="serve the API only (ServiceAccount admission is then off unless enabled: no "
                        "controller keeps the `default` accounts it requires)")
    p.add_argument("--enable-admission-plugins", type=_plugins, default=(), metavar="NAMES",
                   help="built-in admission plugins to run besides the default ones: " + ", ".join(_PLUGINS))
    p.add_argument("--disable-admission-plugins", type=_plugins, default=(), metavar="NAMES",
                   help="built-in admission plugins to leave out (comma-separated, kube-apiserver's names)")
    p.add_argument("--service-cluster-ip-range", type=_cidr, default="10.0.0.0/24", metavar="CIDR",
                   help="the range Services' cluster IPs come from (default 10.0.0.0/24, as kube-apiserver; "
                        "the `kubernetes` Service takes its first address)")
    p.add_argument("--service-node-port-range", type=_port_range, default="30000-32767", metavar="RANGE",
                   help="the range of NodePort and LoadBalancer Services' node ports, inclusive "
                        "(default 30000-32767)")
    p.add_argument("--advertise-address", default=None, metavar="IP",
                   help="the address the `kubernetes` Service's endpoints name (default: --host unless it is "
                        "a wildcard or loopback, else the host's default-route interface address)")
    p.add_argument("--fleet", type=Path, default=None, metavar="FILE",
                   help="YAML description of simulated nodes and their fake DRA drivers")
    p.add_argument("--clock", choices=("real", "virtual"), default="real",
                   help="real: wall time; virtual: time moves only with `cplane clock advance|set` "
                        "(stored as the sim.cplane.dev Clock object, so replays reproduce it)")
    p.add_argument("--taint-unhealthy", choices=("NoSchedule", "NoExecute"), default=None,
                   help="remediation: taint devices reported unhealthy (DeviceTaintRule), so their pods "
                        "are evicted (NoExecute) and rescheduled on healthy devices")
    controller_commands.add_scheduler_args(p)
    p.add_argument("--feature-gates", type=controller_commands.feature_gates, default=None, metavar="A=true,B=false",
                   help="feature gates of the API server, the scheduler and the controllers (cp/features.py; "
                        "default: 1.37's defaults, e.g. GenericWorkload=true,GangScheduling=true for gang "
                        "scheduling). " + features.help_text())
    p.add_argument("--runtime-config", type=_runtime_config, default=None, metavar="KEY=VALUE,...",
                   help="built-in API versions switched on or off, as kube-apiserver's flag: "
                        "GROUP/VERSION=true|false (a bare GROUP/VERSION is true; the core group is api/v1), "
                        "GROUP/VERSION/RESOURCE=true|false, and api/all, api/ga, api/beta, api/alpha=true|false "
                        "(versions of the form v1, v1beta1, v1alpha1). Off by default, as upstream: "
                        "resource.k8s.io/v1beta2, v1beta1 and v1alpha3, admissionregistration.k8s.io/v1beta1 and "
                        "v1alpha1, certificates.k8s.io/v1beta1, storagemigration.k8s.io/v1beta1, "
                        "scheduling.k8s.io/v1alpha3 (docs/api.md, \"One resource, several versions\"); "
                        "e.g. resource.k8s.io/v1beta2=true")
    p.add_argument("--watch-cache-memory", type=_memory_size, default=None, metavar="SIZE",
                   help="memory budget of the objects kept for LISTs and GETs (the watch cache), a quantity "
                        "such as 512Mi or 4Gi (default 2Gi; 0 keeps none: every read goes to the database). "
                        "Every resource is loaded in the background at start-up, fewest objects first, while "
                        "the budget lasts; the resources listed least recently are dropped to make room. "
                        "The Table rows kept for `kubectl get` get half of it besides (default 1Gi)")
    p.add_argument("--audit-policy-file", default=None, metavar="FILE",
                   help="an audit.k8s.io/v1 Policy (YAML or JSON): which requests --audit-log-path records, at "
                        "which level (None, Metadata, Request, RequestResponse) and stages, as kube-apiserver's")
    p.add_argument("--audit-log-path", default=None, metavar="FILE",
                   help="append the audit.k8s.io/v1 Events of the requests the policy records to FILE, one JSON "
                        "line each, as kube-apiserver writes them ('-': standard output)")
    p.add_argument("--audit-log-maxsize", type=int, default=0, metavar="MB",
                   help="rotate the audit log when it reaches MB megabytes (default 0: 100, as kube-apiserver)")
    p.add_argument("--audit-log-maxbackup", type=int, default=0, metavar="N",
                   help="rotated audit logs to keep (default 0: all)")
    p.add_argument("--audit-log-maxage", type=int, default=0, metavar="DAYS",
                   help="days to keep rotated audit logs, by the time in their names (default 0: no limit)")
    p.add_argument("--audit-log-compress", action="store_true", help="gzip rotated audit logs")
    p.add_argument("--audit-webhook-config-file", default=None, metavar="FILE",
                   help="a kubeconfig naming a webhook (its cluster's server URL, CA, client certificate or "
                        "token): the policy's events are POSTed to it as audit.k8s.io/v1 EventLists")
    p.add_argument("--audit-webhook-mode", default="batch", metavar="MODE",
                   help="batch (the default: buffered, sent asynchronously); blocking modes are not served")
    p.add_argument("--audit-webhook-batch-max-size", type=int, default=400, metavar="N",
                   help="events in one POST at most (default 400)")
    p.add_argument("--audit-webhook-batch-max-wait", default="30s", metavar="DURATION",
                   help="send a batch that is not full after this long (default 30s)")
    p.add_argument("--audit-webhook-batch-buffer-size", type=int, default=10000, metavar="N",
                   help="events waiting to be sent at most; beyond, events are dropped (default 10000)")
    p.add_argument("--audit-webhook-initial-backoff", default="10s", metavar="DURATION",
                   help="wait before retrying a failed POST, 1.5 times longer each retry, 5 attempts (default 10s)")
    p.add_argument("--log-format", choices=("console", "json"), default="console")
    p.add_argument("--log-level", default="info")
    p.set_defaults(func=run)


def _runtime_config(text: str) -> Any:
    """argparse type of `--runtime-config` (`cp.runtimeconfig.parse` against the built-in versions)."""
    from cp import resources, runtimeconfig

    try:
        return runtimeconfig.parse(text, group_versions=resources.builtin_group_versions())
    except runtimeconfig.RuntimeConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _memory_size(text: str) -> int:
    """`--watch-cache-memory`: a Kubernetes quantity of bytes (`512Mi`, `2Gi`, `1500000000`)."""
    from cp import quantity

    try:
        size = quantity.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if size < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text!r}")
    return int(size)


def _cidr(text: str) -> str:
    from cp import allocation

    try:
        allocation.parse_service_cidr(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _port_range(text: str) -> str:
    from cp import allocation

    try:
        allocation.parse_port_range(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


async def _serve_async(args: argparse.Namespace, auditor: Any = None) -> int:
    try:
        return await _serve(args, auditor)
    finally:
        if auditor is not None:
            await auditor.close()


async def _serve(args: argparse.Namespace, auditor: Any) -> int:
    import structlog

    from api import server
    from cp import allocation, collector

    log = structlog.get_logger("cplane")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    from cp import clock as clocks

    the_clock: clocks.Clock = clocks.VirtualClock() if args.clock == "virtual" else clocks.RealClock()
    async with server.running(data_dir=args.data_dir, host=args.host, port=args.port,
                              db_url=args.db, clock=the_clock, secure=not args.insecure,
                              token_auth_file=args.token_auth_file, insecure_limits=args.insecure,
                              advertise_address=args.advertise_address,
                              service_account_issuer=args.service_account_issuer,
                              api_audiences=tuple(a for a in (args.api_audiences or "").split(",") if a),
                              watch_cache_memory=args.watch_cache_memory, warm_cache=True,
                              app_options={"service_accounts": _service_accounts(args),
                                           "disabled_admission": frozenset(args.disable_admission_plugins),
                                           "feature_gates": args.feature_gates,
                                           "runtime_config": args.runtime_config,
                                           "audit": auditor,
                                           "service_ranges": allocation.ServiceRanges(
                                               cluster_ip_range=args.service_cluster_ip_range,
                                               node_port_range=args.service_node_port_range)}) as srv:
        collector.tune(thresholds=collector.SERVER)
        log.info("serving", url=srv.url, kubeconfig=str(srv.kubeconfig), revision=srv.event_log.revision)
        print(f"cplane: serving {srv.url}; export KUBECONFIG={srv.kubeconfig}", file=sys.stderr, flush=True)
        from api import ui

        print(f"cplane: UI: {ui.address(srv.url, secure=not args.insecure)}"
              + ("" if args.insecure else f" (log in with the token of the user in {srv.kubeconfig})"),
              file=sys.stderr, flush=True)
        controllers_task: asyncio.Task[None] | None = None
        tuner: asyncio.Task[None] | None = None
        if not args.no_controllers:
            from controllers import registry

            overrides = controller_commands.fleet_overrides(args)
            if args.taint_unhealthy:
                from controllers import health

                overrides[health.NAME] = health.factory(taint_unhealthy=args.taint_unhealthy)
            from cp import runtimeconfig

            overrides.update(controller_commands.gate_overrides(
                args.feature_gates, args.runtime_config or runtimeconfig.DEFAULT))
            identities = controller_identities(srv) if srv.auth is not None else None
            ready = asyncio.Event()
            tuner = asyncio.create_task(collector.tune_when(ready, thresholds=collector.CONTROLLERS),
                                        name="controllers:tune-gc")
            controllers_task = asyncio.create_task(
                registry.run_controllers(server_url=srv.url, clock=the_clock, stop_event=stop,
                                         names=controller_commands.gated_names(args.feature_gates, None),
                                         overrides=overrides, identities=identities, ready=ready),
                name="controllers")
        await stop.wait()
        log.info("stopping")
        if tuner is not None:
            tuner.cancel()
            await asyncio.gather(tuner, return_exceptions=True)
        if controllers_task is not None:
            await controllers_task
    return 0


def _audit_webhook(args: argparse.Namespace) -> Any:
    """The webhook backend of `--audit-webhook-config-file` (an `api.auditwebhook.AuditWebhook`), None
    without it, False after printing why the flags cannot be used."""
    if args.audit_webhook_config_file is None:
        return None
    from api import auditwebhook
    from cp import clock

    if args.audit_webhook_mode != "batch":
        known = ("blocking", "blocking-strict")
        why = "is not served by cplane (batch is)" if args.audit_webhook_mode in known else \
            "is not one of batch, blocking, blocking-strict"
        print(f"cplane serve: --audit-webhook-mode {args.audit_webhook_mode} {why}", file=sys.stderr)
        return False
    durations = {}
    for flag, text in (("--audit-webhook-batch-max-wait", args.audit_webhook_batch_max_wait),
                       ("--audit-webhook-initial-backoff", args.audit_webhook_initial_backoff)):
        try:
            durations[flag] = clock.parse_duration(text)
        except ValueError as exc:
            print(f"cplane serve: {flag}: {exc}", file=sys.stderr)
            return False
    for flag, value in (("--audit-webhook-batch-max-size", args.audit_webhook_batch_max_size),
                        ("--audit-webhook-batch-buffer-size", args.audit_webhook_batch_buffer_size)):
        if value <= 0:
            print(f"cplane serve: {flag} {value} must be a positive number", file=sys.stderr)
            return False
    try:
        return auditwebhook.load(args.audit_webhook_config_file, max_size=args.audit_webhook_batch_max_size,
                                 max_wait=durations["--audit-webhook-batch-max-wait"],
                                 buffer_size=args.audit_webhook_batch_buffer_size,
                                 initial_backoff=durations["--audit-webhook-initial-backoff"])
    except (OSError, ValueError) as exc:
        print(f"cplane serve: --audit-webhook-config-file: {exc}", file=sys.stderr)
        return False


def _auditor(args: argparse.Namespace) -> Any:
    """The audit policy and log of `--audit-policy-file` and `--audit-log-path` (an `api.audit.Auditor`),
    None without both (as kube-apiserver, either alone records nothing), False after printing why they
    cannot be used."""
    for flag, value in (("--audit-log-maxsize", args.audit_log_maxsize),
                        ("--audit-log-maxbackup", args.audit_log_maxbackup),
                        ("--audit-log-maxage", args.audit_log_maxage)):
        if value < 0:
            print(f"cplane serve: {flag} {value} can't be a negative number", file=sys.stderr)
            return False
    if args.audit_policy_file is None:
        if args.audit_log_path is not None or args.audit_webhook_config_file is not None:
            print("cplane serve: no audit policy file (--audit-policy-file): no audit events will be recorded",
                  file=sys.stderr)
        return None
    from api import audit as audits
    from cp import audit

    webhook = _audit_webhook(args)
    if webhook is False:
        return False
    if args.audit_log_path is None and webhook is None:
        try:
            audit.load_policy(Path(args.audit_policy_file).read_bytes())
        except (OSError, audit.PolicyError) as exc:
            print(f"cplane serve: --audit-policy-file: {exc}", file=sys.stderr)
            return False
        print("cplane serve: no audit log (--audit-log-path) nor webhook (--audit-webhook-config-file): no audit "
              "events will be recorded", file=sys.stderr)
        return None
    try:
        return audits.load(policy_file=args.audit_policy_file, log_path=args.audit_log_path,
                           max_size_mb=args.audit_log_maxsize, max_backups=args.audit_log_maxbackup,
                           max_age_days=args.audit_log_maxage, compress=args.audit_log_compress,
                           webhook=webhook)
    except audit.PolicyError as exc:
        print(f"cplane serve: --audit-policy-file: {exc}", file=sys.stderr)
    except OSError as exc:
        print(f"cplane serve: --audit-log-path: {exc}", file=sys.stderr)
    return False


def controller_identities(srv: Any) -> Any:
    """Clients for in-process components of a secure server, each with its own identity (issue #10);
    the test sandbox's `secure=True` runs its controllers with these too."""
    from api import auth
    from controllers.runtime import client as clients

    ca = srv.auth.credentials.ca_cert

    def identity(name: str) -> clients.Client:
        return clients.Client(srv.url, token=auth.controller_token(srv.auth, name),
                              ssl_context=auth.client_ssl_context(ca), root_ca=ca.decode())

    return identity


def run(args: argparse.Namespace) -> int:
    from cp import logs

    if args.token_auth_file and args.insecure:
        print("cplane serve: --token-auth-file needs authentication (drop --insecure)", file=sys.stderr)
        return 2
    if args.token_auth_file:
        from api import auth

        try:
            auth.parse_token_file(Path(args.token_auth_file).read_text())
        except (OSError, ValueError) as exc:
            print(f"cplane serve: --token-auth-file: {exc}", file=sys.stderr)
            return 2
    if args.insecure and not _is_loopback(args.host):
        print(f"cplane serve: --insecure serves without authentication and only on loopback addresses; "
              f"{args.host!r} is not one", file=sys.stderr)
        return 2
    if args.fleet is not None:
        if args.no_controllers:
            print("cplane serve: --fleet needs the controllers (drop --no-controllers)", file=sys.stderr)
            return 2
        if not controller_commands.load_fleet(args, command="serve"):
            return 2
    if (args.scheduler_config is not None or args.scheduler_seed is not None) and args.no_controllers:
        print("cplane serve: --scheduler-config and --scheduler-seed need the controllers (drop --no-controllers)",
              file=sys.stderr)
        return 2
    if not controller_commands.load_scheduler_config(args, command="serve"):
        return 2
    auditor = _auditor(args)
    if auditor is False:
        return 2
    logs.configure(fmt=args.log_format, level=args.log_level)
    from api import connections
    from storage import log as event_logs

    connections.raise_descriptor_limit()
    try:
        return asyncio.run(_serve_async(args, auditor))
    except (OSError, event_logs.StorageError) as exc:  # a full disk, a port in use, a database it cannot open
        db = re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", args.db) if args.db else args.data_dir / "cplane.db"
        where = f" ({db})" if isinstance(exc, event_logs.StorageError) else ""
        print(f"cplane serve: {exc}{where}", file=sys.stderr)
        return 1
