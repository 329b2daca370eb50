"""docker-compose.yml, checked without Docker: parsed with PyYAML, `${VAR:-default}` interpolated as
Compose does, every cplane service's command run through the real parser (`cp.cli.build_parser()`)
and the checks `cplane serve|controllers` make before starting, and the wiring between services
(load balancer backends, health checks, dependencies, the fleet file) cross-checked."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers import fleet as fleets
from controllers import registry
from cp import cli

ROOT = Path(__file__).resolve().parents[3]
COMPOSE = ROOT / "docker-compose.yml"
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}")


def interpolate(value: Any, env: dict[str, str]) -> Any:
    if isinstance(value, str):
        return VARIABLE.sub(lambda m: env.get(m.group(1)) or (m.group(2) or ""), value.replace("$$", "\0")) \
            .replace("\0", "$")
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    return value


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return interpolate(yaml.safe_load(COMPOSE.read_text()), {})  # type: ignore[no-any-return]


def cplane_services(compose: dict[str, Any]) -> dict[str, argparse.Namespace]:
    parser = cli.build_parser()
    out = {}
    for name, service in compose["services"].items():
        if service.get("image") != "cplane:dev":
            continue
        command = service["command"]
        assert isinstance(command, list) and all(isinstance(a, str) for a in command), (name, command)
        try:
            out[name] = parser.parse_args(command)
        except SystemExit as exc:  # argparse reports to stderr and exits 2
            raise AssertionError(f"{name}: `cplane {' '.join(command)}` is refused by the CLI parser") from exc
    return out


def test_every_cplane_command_is_accepted_by_the_cli(compose: dict[str, Any]) -> None:
    services = cplane_services(compose)
    serve = {name: args for name, args in services.items() if args.command == "serve"}
    managers = {name: args for name, args in services.items() if args.command == "controllers"}
    assert len(serve) >= 2 and len(managers) >= 2, (sorted(serve), sorted(managers))
    for name, args in serve.items():
        assert args.func is cli.serve.run
        assert args.no_controllers, f"{name}: replicas serve the API only; the managers run the controllers"
        assert args.db and args.db.startswith("postgresql+asyncpg://"), f"{name}: replicas share PostgreSQL"
        assert args.insecure and cli.serve._is_loopback(args.host), f"{name}: --insecure only on loopback (cplane serve)"
    assert len({args.db for args in serve.values()}) == 1, "every replica on the same database"
    assert len({args.port for args in serve.values()}) == len(serve), "one port per replica (shared namespace)"
    for name, args in managers.items():
        assert args.func is cli.controllers.run
        assert args.leader_elect, f"{name}: managers must be leader-elected"
        registry.resolve_names([n for n in (args.only or "").split(",") if n] or None)
    # One Lease for the whole manager: every manager must run the same controllers, or one that leads
    # would leave the others' controllers stopped.
    assert len({(a.only, str(a.fleet)) for a in managers.values()}) == 1


def test_the_load_balancer_and_the_health_checks_point_at_the_replicas(compose: dict[str, Any]) -> None:
    services = cplane_services(compose)
    ports = {name: args.port for name, args in services.items() if args.command == "serve"}
    config = compose["configs"]["haproxy"]["content"]
    backends = {int(port) for host, port in re.findall(r"^\s*server\s+\S+\s+([\d.]+):(\d+)", config, re.M)}
    assert backends == set(ports.values())
    assert re.search(r"option httpchk GET /readyz", config)
    assert re.search(r"on-marked-down shutdown-sessions", config), "watches on a dead replica must be cut"
    bind = int(re.search(r"^\s*bind\s+:(\d+)", config, re.M).group(1))  # type: ignore[union-attr]
    lb = compose["services"]["lb"]
    assert any(p.endswith(f":{bind}") and p.startswith("127.0.0.1:") for p in lb["ports"]), \
        "the unauthenticated API is published on the host's loopback only"
    for name, port in ports.items():
        service = compose["services"][name]
        assert service["network_mode"] == "service:lb"
        assert f"127.0.0.1:{port}/readyz" in " ".join(service["healthcheck"]["test"])
    for name, args in services.items():
        if args.command == "controllers":
            assert args.server == f"http://127.0.0.1:{bind}", f"{name} goes through the load balancer"
            assert compose["services"][name]["network_mode"] == "service:lb"
            assert set(compose["services"][name]["depends_on"]) == set(ports)


def test_dependencies_and_the_fleet_file_exist(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        for dependency in service.get("depends_on") or {}:
            assert dependency in services, (name, dependency)
        mode = service.get("network_mode", "")
        if mode.startswith("service:"):
            assert mode.split(":", 1)[1] in services
            assert "ports" not in service, f"{name}: ports belong to the namespace's owner"
    managers = {name: args for name, args in cplane_services(compose).items() if args.command == "controllers"}
    for name, args in managers.items():
        mounts = {target.split(":")[0]: source for source, target in
                  (v.split(":", 1) for v in services[name].get("volumes") or [])}
        source = mounts[str(args.fleet)]
        fleet = fleets.load_fleet(ROOT / source)  # what `cplane controllers --fleet` loads at start
        assert fleet.node_count() > 0
    db = services["postgres"]["environment"]
    replica_db = next(a.db for a in cplane_services(compose).values() if a.command == "serve")
    assert f"{db['POSTGRES_USER']}:{db['POSTGRES_PASSWORD']}@postgres:5432/{db['POSTGRES_DB']}" in replica_db


def test_the_cli_refuses_a_fleet_without_the_fleet_controller(capsys: pytest.CaptureFixture[str]) -> None:
    args = cli.build_parser().parse_args(["controllers", "--server", "http://127.0.0.1:1", "--only", "scheduler",
                                          "--fleet", str(ROOT / "examples" / "fleets" / "demo.yaml")])
    assert args.func(args) == 2
    assert "--fleet needs the fleet controller" in capsys.readouterr().err
