"""A sandbox for testing your own controllers, and the pytest plugin that provides it.

Like controller-runtime's envtest, but in-process and fast (well under a second): an API server on a
temporary SQLite store, the built-in controllers you choose, an optional simulated fleet, and a
virtual clock you move by hand. Your controller talks to it over HTTP like to any cluster.

    @pytest.mark.cplane(controllers=["resourceclaim", "scheduler", "fleet"], fleet="fleet.yaml",
                        virtual_clock=True)
    async def test_my_controller(cplane_sandbox):
        async with cplane_sandbox.run_controllers(my_controller.new):
            await cplane_sandbox.client.create("pods", pod, namespace="default")
            await cplane_sandbox.wait_for(lambda: ...)

See docs/testing-your-controller.md. The plugin registers itself through the `pytest11` entry point
of the cplane package; it needs pytest-asyncio.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from cp import clock as clocks

DEFAULT_CONTROLLERS = ("garbage-collector", "namespace", "replicaset", "deployment", "resourceclaim",
                       "scheduler")


class NotMet(AssertionError):
    """What `eventually` raises when the condition does not hold in time (a test failure)."""


async def eventually(check: Callable[[], Awaitable[Any] | Any], *, within: float = 5.0, interval: float = 0.01,
                     what: str = "") -> Any:
    """Poll `check` (sync or async) every `interval` seconds until it returns something truthy, and
    return that; raise `NotMet` (an AssertionError) after `within` seconds of the event loop's
    (real) time. The one bounded wait of the sandbox and of cplane's own tests: use it for state
    that has no event to wait on, never a fixed sleep."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        if loop.time() > deadline:
            raise NotMet(f"timed out after {within} s waiting for {what or check}")
        await asyncio.sleep(interval)


@dataclasses.dataclass
class Sandbox:
    """A running sandbox: the server's URL and kubeconfig, an API client, and the clock."""

    url: str
    kubeconfig: Path
    clock: clocks.Clock
    client: Any  # controllers.runtime.client.Client
    event_log: Any  # storage.log.EventLog
    _stack: contextlib.AsyncExitStack
    kubelet_root: Path | None = None  # with a fleet: the nodes' kubelet directories (DATA_DIR/nodes/<node>/)

    async def advance(self, seconds: float) -> None:
        """Move the virtual clock forward (an event in the log, like `cplane clock advance`)."""
        if not isinstance(self.clock, clocks.VirtualClock):
            raise RuntimeError("the sandbox runs on real time: use virtual_clock=True")
        obj = await self.client.get("clocks.sim.cplane.dev", "cluster")
        obj["spec"]["time"] = clocks.rfc3339_micro(self.clock.now() + seconds)
        await self.client.update("clocks.sim.cplane.dev", obj)
        await asyncio.sleep(0)

    async def wait_for(self, condition: Callable[[], Awaitable[Any] | Any], *, timeout: float = 10.0,  # noqa: ASYNC109 (public API)
                       interval: float = 0.01) -> Any:
        """Poll `condition` (sync or async) until it returns something truthy; return that value.
        Raises TimeoutError after `timeout` seconds (`eventually` with the sandbox's defaults)."""
        try:
            return await eventually(condition, within=timeout, interval=interval)
        except NotMet:
            raise TimeoutError(f"condition not met within {timeout} s") from None

    @contextlib.asynccontextmanager
    async def run_controllers(self, *factories: Callable[[Any], Any], workers: int | None = None
                              ) -> AsyncIterator[None]:
        """Run your controllers (factories taking a ControllerContext and returning a Controller, like
        the built-in ones) against the sandbox until the block exits."""
        from controllers.runtime import manager as managers

        manager = managers.Manager(client=self.client, clock=self.clock, name="test-controller-manager")
        ctx = manager.context()
        for factory in factories:
            controller = factory(ctx)
            if workers is not None:
                controller.workers = workers
            manager.add(controller)
        stop = asyncio.Event()
        task = asyncio.create_task(manager.run(stop), name="sandbox:user-controllers")
        try:
            yield
        finally:
            stop.set()
            await task


@contextlib.asynccontextmanager
async def sandbox(*, data_dir: Path | None = None, controllers: Sequence[str] | None = DEFAULT_CONTROLLERS,
                  fleet: str | os.PathLike[str] | Mapping[str, Any] | None = None,
                  virtual_clock: bool = False, clock_start: float | None = None,
                  db_url: str | None = None, secure: bool = False,
                  runtime_config: str | None = None, feature_gates: str | None = None) -> AsyncIterator[Sandbox]:
    """Start a sandbox; `controllers=None` or `()` runs none; `fleet` is a fleet file or dict
    (docs/fleet.md) and adds the `fleet` controller; `runtime_config` is `cplane serve
    --runtime-config`'s text (e.g. "resource.k8s.io/v1beta1=true"), `feature_gates` its `--feature-gates`
    (e.g. "HPAScaleToZero=true": the server's and the controllers' gates). `secure=True` serves as `cplane serve` does by
    default: TLS, authentication and RBAC, each controller with its own identity and role
    (`cp.cli.serve.controller_identities`); the sandbox's client and kubeconfig are the admin's."""
    from api import server
    from controllers import registry
    from controllers.runtime import client as clients

    clock: clocks.Clock = clocks.VirtualClock(start=clock_start) if virtual_clock else clocks.RealClock()
    async with contextlib.AsyncExitStack() as stack:
        if data_dir is None:
            data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cplane-")))
        app_options: dict[str, Any] = {}
        if runtime_config is not None:
            from cp import resources, runtimeconfig

            app_options["runtime_config"] = runtimeconfig.parse(
                runtime_config, group_versions=resources.builtin_group_versions())
        gates = None
        if feature_gates is not None:
            from cp import features

            gates = app_options["feature_gates"] = features.parse(feature_gates)
        srv = await stack.enter_async_context(server.running(data_dir=data_dir, db_url=db_url, clock=clock,
                                                             secure=secure, app_options=app_options))
        identities = None
        if secure:
            from api import auth
            from cp.cli import serve

            assert srv.auth is not None and srv.auth.credentials is not None
            identities = serve.controller_identities(srv)
            client = clients.Client(srv.url, token=srv.auth.credentials.admin_token,
                                    ssl_context=auth.client_ssl_context(srv.auth.credentials.ca_cert))
        else:
            client = clients.Client(srv.url)
        stack.push_async_callback(client.close)
        names = list(controllers or ())
        overrides: dict[str, Any] = {}
        if gates is not None:
            from controllers import scheduler
            from cp.cli import controllers as controller_commands

            overrides.update(controller_commands.gate_overrides(gates))
            overrides[scheduler.NAME] = scheduler.factory(feature_gates=gates)
            off = {n[1:] for n in controller_commands.gated_names(gates, names) or () if n.startswith("-")}
            names = [n for n in names if n not in off]
        kubelet_root: Path | None = None
        if fleet is not None:
            from controllers import fleet as fleets

            loaded = fleets.fleet_from_dict(dict(fleet)) if isinstance(fleet, Mapping) \
                else fleets.load_fleet(fleet)
            kubelet_root = data_dir / "nodes"  # the kubelets' directories: real plugins register there
            overrides[fleets.NAME] = fleets.factory(loaded, kubelet_root=kubelet_root)
            if fleets.NAME not in names:
                names.append(fleets.NAME)
        if names:
            stop = asyncio.Event()
            ready = asyncio.Event()
            task = asyncio.create_task(registry.run_controllers(
                server_url=srv.url, names=names, clock=clock, stop_event=stop, ready=ready,
                overrides=overrides, identities=identities), name="sandbox:controllers")

            async def _stop() -> None:
                stop.set()
                await task

            stack.push_async_callback(_stop)
            waiter = asyncio.create_task(ready.wait())
            done, _ = await asyncio.wait({waiter, task}, return_when=asyncio.FIRST_COMPLETED)
            if task in done:
                waiter.cancel()
                task.result()  # raises the controllers' start-up error
        yield Sandbox(url=srv.url, kubeconfig=srv.kubeconfig, clock=clock, client=client,
                      event_log=srv.event_log, _stack=stack, kubelet_root=kubelet_root)


# ------------------------------------------------------------------------------------------ pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cplane(controllers=..., fleet=None, virtual_clock=False, clock_start=None, secure=False, "
        "runtime_config=None, feature_gates=None): options of the "
        "cplane_sandbox fixture")


try:
    import pytest_asyncio

    @pytest_asyncio.fixture
    async def cplane_sandbox(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Sandbox]:
        """A sandbox (API server, controllers, optional fleet) on a temporary store; see `sandbox()`.
        Configure it with `@pytest.mark.cplane(...)`."""
        marker = request.node.get_closest_marker("cplane")
        options = dict(marker.kwargs) if marker is not None else {}
        fleet = options.get("fleet")
        if isinstance(fleet, str) and not os.path.isabs(fleet):
            options["fleet"] = str(Path(str(request.node.fspath)).parent / fleet)
        async with sandbox(data_dir=tmp_path / "cplane", **options) as sb:
            yield sb
except ImportError:  # pragma: no cover - pytest-asyncio is required for the fixture only
    pass
