"""Browser tests of the web UI (`/ui/`, docs/ui.md): Playwright for Python driving Debian's Chromium,
headless, against in-process cplane servers on TCP ports.

- `browser`: one Chromium for the session (`executable_path`: env `CPLANE_CHROMIUM`, else `chromium`
  on PATH; `make test` installs Debian's package where it can). No browser, or no Playwright: the
  tests skip with the reason and the run ends with a notice — unless env `CI` is set (or
  `CPLANE_REQUIRE_BROWSER=1`), where they fail, as PostgreSQL's tests do under `CPLANE_REQUIRE_PG=1`.
- `cluster`: a sandbox (`cp.testing.sandbox`) with the default controllers and a small fleet
  (`FLEET`: 2 nodes, 4 GPUs and a NIC, the demo's shape), nodes Ready and slices published.
  `secure_cluster`: the same served with TLS, authentication and RBAC (`Cluster.token_for` makes a
  user with the roles you bind). `empty_cluster`: no controllers, no fleet (for what needs the page only).
- `page_for(cluster, path, token=...)`: a fresh browser context and page on the cluster, logged in
  through `/ui/login` with that token (the `cplane-token` cookie), closed after the test.

Every test here runs on the session's event loop (the browser's Playwright connection lives there,
and an in-process server must serve on the loop the test awaits on). Wait on the DOM contract of
docs/ui.md (`main[data-rendered-rv]`, `[data-device=…]`, …) with Playwright's waits — never sleeps.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from cp import testing

HERE = Path(__file__).resolve().parent
REQUIRE_BROWSER = bool(os.environ.get("CI")) or os.environ.get("CPLANE_REQUIRE_BROWSER") == "1"
TIMEOUT_MS = 15_000  # Playwright's default wait: generous for two shared cores, never reached when green

# The demo fleet's shape (examples/fleets/demo.yaml) with what the map shows besides: 2 nodes, 4 GPUs
# and a NIC each; DeviceClasses gpu.example.com and nic.example.com.
FLEET: dict[str, Any] = {
    "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "ui"},
    "nodePools": [{
        "name": "gpu-node", "count": 2, "instanceType": "sim.gpu-4x-a100",
        "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
        "drivers": [
            {"name": "gpu.example.com", "devices": [{"type": "gpu", "count": 4, "model": "A100-SXM4-80GB",
                                                      "memory": "80Gi"}]},
            {"name": "nic.example.com", "devices": [{"type": "nic", "count": 1, "model": "ConnectX-7"}]},
        ],
    }],
}
NODES = ["gpu-node-0", "gpu-node-1"]
DEVICES_PER_NODE = 5

# Chromium logs every non-2xx fetch as a console error; a refused list is expected (RBAC), not a bug.
REFUSED = "Failed to load resource: the server responded with a status of"

_missing: list[str] = []  # why no browser could be started, once known


def _no_browser(reason: str) -> None:
    if not _missing:
        _missing.append(reason)
    if REQUIRE_BROWSER:
        pytest.fail(f"{reason} (the browser tests are required: CI is set)")
    pytest.skip(reason)


def chromium_path() -> str | None:
    return os.environ.get("CPLANE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every async test of this directory runs on the session's loop, with the browser."""
    session_loop = pytest.mark.asyncio(loop_scope="session")
    for item in items:
        if HERE in Path(str(item.fspath)).parents and pytest_asyncio.is_async_test(item):
            item.add_marker(session_loop, append=False)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _missing and not REQUIRE_BROWSER:
        terminalreporter.write_sep("!", "browser tests SKIPPED", yellow=True, bold=True)
        terminalreporter.write_line(_missing[0])
        terminalreporter.write_line("`make test` installs Debian's chromium where it may (root, apt-get); "
                                    "CI (env CI set) fails instead.")


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[Any]:
    """One headless Chromium for the session (a `playwright.async_api.Browser`)."""
    path = chromium_path()
    if path is None:
        _no_browser("no Chromium found (set CPLANE_CHROMIUM, or install Debian's `chromium`)")
    try:
        from playwright.async_api import async_playwright
    except ImportError as error:
        _no_browser(f"Playwright for Python is not installed ({error}): pip install -e '.[test]'")
    from playwright.async_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    async with async_playwright() as playwright:
        try:
            chromium = await playwright.chromium.launch(executable_path=path, headless=True,
                                                        args=["--no-sandbox", "--disable-gpu"])
        except Exception as error:  # any launch failure means "no browser here"
            _no_browser(f"Chromium at {path} did not start: {error}")
        try:
            yield chromium
        finally:
            await chromium.close()


@pytest_asyncio.fixture(loop_scope="session")
async def _leftover_task_guard(request: pytest.FixtureRequest, browser: Any) -> AsyncIterator[None]:
    """tests/conftest.py's guard, on the session's loop, after the browser's start (the Playwright
    connection's own tasks live as long as the session)."""
    from tests import conftest as root

    async with root.no_leftover_tasks(request):
        yield


@dataclasses.dataclass
class Cluster:
    """A running sandbox the browser can reach."""

    url: str
    client: Any  # controllers.runtime.client.Client, as the admin
    sandbox: testing.Sandbox
    secure: bool = False

    async def token_for(self, name: str, *, namespace: str = "default") -> str:
        """A bearer token of a new ServiceAccount `name` in `namespace` (bind it roles yourself;
        its user is `system:serviceaccount:NAMESPACE:NAME`)."""
        await self.client.create("serviceaccounts", {"metadata": {"name": name, "namespace": namespace}},
                                 namespace=namespace)
        review = await self.client.create_token(namespace=namespace, name=name, request={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})
        return str(review["status"]["token"])


async def _ready(sb: testing.Sandbox, *, nodes: int, devices: int) -> None:
    """Wait until `nodes` nodes are Ready and their slices list `devices` devices."""
    async def ready() -> bool:
        listed = (await sb.client.list("nodes")).items
        slices = (await sb.client.list("resourceslices.resource.k8s.io")).items
        ready_nodes = [n for n in listed if any(c.get("type") == "Ready" and c.get("status") == "True"
                                                for c in (n.get("status") or {}).get("conditions") or [])]
        return len(ready_nodes) == nodes and sum(len(s["spec"].get("devices") or []) for s in slices) == devices

    await sb.wait_for(ready, timeout=30)


@contextlib.asynccontextmanager
async def running(tmp_path: Path, *, fleet: dict[str, Any] = FLEET, nodes: int = len(NODES),
                  devices: int = len(NODES) * DEVICES_PER_NODE, secure: bool = False) -> AsyncIterator[Cluster]:
    """A cluster of `fleet` (its `nodes` Ready, `devices` published) with the default controllers and
    the device taint evictor."""
    async with testing.sandbox(data_dir=tmp_path / "cplane", fleet=fleet, secure=secure,
                               controllers=(*testing.DEFAULT_CONTROLLERS, "device-taint-eviction")) as sb:
        await _ready(sb, nodes=nodes, devices=devices)
        yield Cluster(url=sb.url, client=sb.client, sandbox=sb, secure=secure)


@pytest_asyncio.fixture(loop_scope="session")
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    """cplane (plain HTTP, no authentication) with controllers and FLEET."""
    async with running(tmp_path) as c:
        yield c


@pytest_asyncio.fixture(loop_scope="session")
async def empty_cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    """cplane (plain HTTP) with no controllers and no fleet: for what needs only the page."""
    async with testing.sandbox(data_dir=tmp_path / "cplane", controllers=()) as sb:
        yield Cluster(url=sb.url, client=sb.client, sandbox=sb)


@pytest_asyncio.fixture(loop_scope="session")
async def secure_cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    """cplane with TLS, authentication and RBAC, controllers and FLEET."""
    async with running(tmp_path, secure=True) as c:
        yield c


PageFor = Callable[..., Awaitable[Any]]


@pytest_asyncio.fixture(loop_scope="session")
async def page_for(browser: Any) -> AsyncIterator[PageFor]:
    """`await page_for(cluster, "/ui/?node=x", token=None)`: a new page (own context: cookies, storage)
    at that path, once its first render is done (`main[data-rendered-rv]`); everything it opened is
    closed after the test. With a `token`: logged in through `/ui/login` (the cookie), or with
    `login=False` the token sent as an Authorization header by the browser. Console errors and
    uncaught page errors fail the test."""
    contexts: list[Any] = []
    errors: list[str] = []

    async def open_page(cluster: Cluster, path: str = "/ui/", *, token: str | None = None,
                        login: bool = True, wait: bool = True) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token and not login else None
        context = await browser.new_context(ignore_https_errors=cluster.secure, extra_http_headers=headers,
                                            viewport={"width": 1400, "height": 900})
        context.set_default_timeout(TIMEOUT_MS)
        contexts.append(context)
        page = await context.new_page()
        page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
        page.on("console", lambda message: errors.append(f"console {message.type}: {message.text}")
                if message.type == "error" and not message.text.startswith(REFUSED) else None)
        if token and login:  # the browser login: the token in the URL fragment, posted, kept in a cookie
            await page.goto(f"{cluster.url}/ui/login?{urllib.parse.urlencode({'next': path})}#token={token}")
            await page.wait_for_url(f"{cluster.url}{path}")
        else:
            await page.goto(cluster.url + path)
        if wait:
            await page.wait_for_selector("main[data-rendered-rv]", state="attached")
        return page

    try:
        yield open_page
    finally:
        for context in contexts:
            await context.close()
    assert not errors, errors
