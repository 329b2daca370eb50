"""`cplane serve` that cannot start says why in one line (issue #17, item 10): a disk that fails
writes (a full disk), a database it cannot reach — exit 1, no traceback, no password."""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
from pathlib import Path

import pytest

from api import app
from cp.cli import serve

CPLANE = (sys.executable, "-m", "cp.cli")


async def _serve(*args: str, file_size_limit: int | None = None) -> tuple[int, str]:
    def limit() -> None:  # in the child: writes past this size fail, as on a full disk
        if file_size_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))

    proc = await asyncio.create_subprocess_exec(
        *CPLANE, "serve", "--port", "0", "--insecure", "--no-controllers", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, preexec_fn=limit)
    async with asyncio.timeout(60):
        _, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, err.decode()


async def test_a_full_disk_is_one_clear_line(tmp_path: Path) -> None:
    code, err = await _serve("--data-dir", str(tmp_path), file_size_limit=8 * 1024)
    assert code == 1
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("cplane serve: ") and "disk I/O error" in last and str(tmp_path / "cplane.db") in last


async def test_an_unreachable_database_is_one_clear_line_without_its_password(tmp_path: Path) -> None:
    code, err = await _serve("--data-dir", str(tmp_path), "--db", "postgresql+asyncpg://u:hunter2@127.0.0.1:9/x")
    assert code == 1
    assert "Traceback" not in err and "hunter2" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("cplane serve: ") and "unavailable" in last and "u:***@127.0.0.1:9" in last


async def test_bad_service_ranges_are_usage_errors(tmp_path: Path) -> None:
    code, err = await _serve("--data-dir", str(tmp_path), "--service-cluster-ip-range", "10.0.0.0/33")
    assert code == 2 and "argument --service-cluster-ip-range:" in err and "Traceback" not in err
    code, err = await _serve("--data-dir", str(tmp_path), "--service-node-port-range", "32767-30000")
    assert code == 2 and "argument --service-node-port-range: invalid port range: 32767-30000" in err


async def test_unknown_admission_plugins_are_usage_errors(tmp_path: Path) -> None:
    code, err = await _serve("--data-dir", str(tmp_path), "--disable-admission-plugins", "Priority,AlwaysDeny")
    assert code == 2 and "unknown admission plugins: AlwaysDeny" in err and "Traceback" not in err


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    serve.add_parser(parser.add_subparsers())
    return parser.parse_args(["serve", "--data-dir", "d", *argv])


def test_service_account_admission_runs_where_its_controller_does() -> None:
    assert serve._PLUGINS == app.ADMISSION_PLUGINS
    assert serve._service_accounts(_args())  # the serviceaccount controller runs in-process
    assert not serve._service_accounts(_args("--no-controllers"))  # nothing would create `default`
    assert serve._service_accounts(_args("--no-controllers", "--enable-admission-plugins", "ServiceAccount"))
    assert not serve._service_accounts(_args("--disable-admission-plugins", "ServiceAccount,Priority"))
    assert _args("--disable-admission-plugins", "Priority,ResourceQuota").disable_admission_plugins == (
        "Priority", "ResourceQuota")


def test_a_bad_scheduler_config_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "sched.yaml"
    cases = {
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npodMaxBackoffSeconds: 0\n":
            "podMaxBackoffSeconds: must be greater than or equal to PodInitialBackoffSeconds",
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- plugins: {filter: {enabled: [{name: Nope}]}}\n": 'FilterPlugin "Nope" does not exist',
        "profiles: [": "not valid YAML",
    }
    for text, expected in cases.items():
        bad.write_text(text)
        assert serve.run(_args("--scheduler-config", str(bad))) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"cplane serve: scheduler config {bad}: ") and expected in err
    assert serve.run(_args("--scheduler-config", str(tmp_path / "missing.yaml"))) == 2
    assert "cannot read" in capsys.readouterr().err
    assert serve.run(_args("--scheduler-seed", "3", "--no-controllers")) == 2
    assert "need the controllers" in capsys.readouterr().err


def test_scheduler_flags_reach_the_scheduler_factory(tmp_path: Path) -> None:
    from controllers import scheduler
    from cp.cli import controllers as controller_commands

    good = tmp_path / "sched.yaml"
    good.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                    "profiles: [{schedulerName: default-scheduler}, {schedulerName: packer}]\n")
    args = _args("--scheduler-config", str(good), "--scheduler-seed", "5")
    assert controller_commands.load_scheduler_config(args, command="serve")
    assert args.loaded_scheduler_config.scheduler_names == ("default-scheduler", "packer")
    assert scheduler.NAME in controller_commands.fleet_overrides(args)
    assert scheduler.NAME not in controller_commands.fleet_overrides(_args())


async def test_bad_feature_gates_are_usage_errors(tmp_path: Path) -> None:
    code, err = await _serve("--data-dir", str(tmp_path), "--feature-gates", "GangScheduling=true")
    assert code == 2 and "argument --feature-gates: feature gate GangScheduling requires GenericWorkload" in err
    assert "Traceback" not in err
    code, err = await _serve("--data-dir", str(tmp_path), "--feature-gates", "Bogus=true")
    assert code == 2 and "unrecognized feature gate: Bogus" in err


def test_feature_gates_reach_the_scheduler_and_the_claim_controller() -> None:
    from controllers import resourceclaim, resourcepoolstatusrequest, scheduler, taint_evictor
    from cp import features, runtimeconfig
    from cp.cli import controllers

    args = _args("--feature-gates", "GenericWorkload=true,GangScheduling=true")
    assert args.feature_gates.enabled(features.GANG_SCHEDULING)
    overrides = controllers.gate_overrides(args.feature_gates)
    assert set(overrides) == {resourceclaim.NAME, taint_evictor.NAME, resourcepoolstatusrequest.NAME}
    assert overrides[resourceclaim.NAME].keywords == {"feature_gates": args.feature_gates}
    assert overrides[resourcepoolstatusrequest.NAME].keywords["enabled"] is False
    assert controllers.gate_overrides(_args().feature_gates) == {}
    # The pool status controller runs with its gate and, where the server's flag is known, its version.
    both = _args("--feature-gates", "DRAResourcePoolStatus=true", "--runtime-config", "resource.k8s.io/v1alpha3=true")
    assert controllers.gate_overrides(both.feature_gates, both.runtime_config)[
        resourcepoolstatusrequest.NAME].keywords["enabled"] is True
    gate = _args("--feature-gates", "DRAResourcePoolStatus=true")
    assert controllers.gate_overrides(gate.feature_gates, runtimeconfig.DEFAULT)[
        resourcepoolstatusrequest.NAME].keywords["enabled"] is False
    assert controllers.gate_overrides(gate.feature_gates)[resourcepoolstatusrequest.NAME].keywords["enabled"] is True
    # the scheduler takes them with --scheduler-config / --scheduler-seed, in one override
    assert scheduler.NAME in controllers.fleet_overrides(args)
    assert scheduler.NAME not in controllers.fleet_overrides(_args())


@pytest.mark.parametrize(("text", "size"), [("2Gi", 2 << 30), ("512Mi", 512 << 20), ("1500000000", 1_500_000_000),
                                            ("0", 0), ("1.5Gi", 3 << 29)])
def test_the_watch_cache_budget_is_a_quantity_of_bytes(text: str, size: int) -> None:
    assert serve._memory_size(text) == size


@pytest.mark.parametrize("text", ["-1Gi", "lots", "2GB"])
def test_a_bad_watch_cache_budget_is_a_usage_error(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        serve._memory_size(text)


def test_the_kubelets_root_directory_reaches_the_fleet_factory() -> None:
    """`cplane serve` roots the simulated kubelets' directories at DATA_DIR/nodes; `cplane
    controllers` takes `--root-dir` (and has none without it)."""
    from controllers import fleet
    from cp.cli import controllers

    overrides = controllers.fleet_overrides(_args())
    assert overrides[fleet.NAME].keywords["kubelet_root"] == Path("d") / "nodes"
    parser = argparse.ArgumentParser()
    controllers.add_parser(parser.add_subparsers())
    args = parser.parse_args(["controllers", "--root-dir", "/srv/kubelets"])
    assert controllers.fleet_overrides(args)[fleet.NAME].keywords["kubelet_root"] == Path("/srv/kubelets")
    assert fleet.NAME not in controllers.fleet_overrides(parser.parse_args(["controllers"]))


async def test_bad_runtime_config_is_a_usage_error(tmp_path: Path) -> None:
    code, err = await _serve("--data-dir", str(tmp_path), "--runtime-config", "example.com/v1=true")
    assert code == 2 and "argument --runtime-config: unknown api groups example.com/v1" in err
    assert "Traceback" not in err


def test_runtime_config_reaches_the_server(capsys: pytest.CaptureFixture[str]) -> None:
    from cp import resources

    args = _args("--runtime-config", "resource.k8s.io/v1beta2=true")
    registry = resources.Registry(runtime=args.runtime_config)
    assert registry.lookup("resource.k8s.io", "v1beta2", "resourceclaims") is not None
    assert _args().runtime_config is None
    with pytest.raises(SystemExit):
        _args("--help")
    assert "--runtime-config" in capsys.readouterr().out


async def test_serve_prints_the_ui_url_once_ready(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        *CPLANE, "serve", "--port", "0", "--insecure", "--no-controllers", "--data-dir", str(tmp_path),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(60):
            while not lines or not lines[-1].startswith("cplane: UI: "):
                line = await proc.stderr.readline()
                assert line, "".join(lines)
                lines.append(line.decode())
    finally:
        proc.terminate()
        async with asyncio.timeout(30):
            await proc.communicate()
    serving = next(line for line in lines if line.startswith("cplane: serving "))
    url = serving.removeprefix("cplane: serving ").split(";")[0]
    assert lines[-1] == f"cplane: UI: {url}/ui/\n"
