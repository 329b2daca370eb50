"""The web UI under `cplane replay` (docs/ui.md, docs/replay.md): the replay's status and its controls.
Step, until and fork are buttons that move the replay's cursor, and the page follows it; a user whom
RBAC does not let `create` the replay resource (a viewer) sees the status but none of the buttons."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio

from api import replay
from cp import kubeconfig, testing
from storage import recording
from tests.browser.conftest import Cluster, PageFor
from tests.browser.test_timeline import screenshot

VIEWER_TOKEN = "viewer-token-for-the-ui-tests"
RBAC = "rbac.authorization.k8s.io"


class Replayed:
    def __init__(self, server: replay.ReplayServer, *, start: int) -> None:
        self.server = server
        self.start = start
        self.cluster = Cluster(url=server.url, client=None, sandbox=None, secure=True)  # type: ignore[arg-type]
        self.admin_token = kubeconfig.load(server.kubeconfig).token


async def _record(data_dir: Path) -> int:
    """A secure cluster's log: viewers may read everything and the replay's status; then five
    ConfigMaps. Returns the revision after the RBAC objects (where the replay starts)."""
    async with testing.sandbox(data_dir=data_dir, controllers=(), secure=True) as sb:
        await sb.client.create(f"clusterroles.{RBAC}", {"metadata": {"name": "replay-status"}, "rules": [
            {"apiGroups": ["sim.cplane.dev"], "resources": ["replay"], "verbs": ["get", "list"]}]})
        for role in ("view", "replay-status"):
            await sb.client.create(f"clusterrolebindings.{RBAC}", {
                "metadata": {"name": f"viewers-{role}"},
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
                "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": "viewers"}]})
        start = int((await sb.client.list("namespaces", limit=1)).resource_version)
        for i in range(5):
            await sb.client.create("configmaps", {"metadata": {"name": f"step-{i}"}, "data": {"i": str(i)}},
                                   namespace="default")
    return start


@pytest_asyncio.fixture(loop_scope="session")
async def replayed(tmp_path: Path) -> AsyncIterator[Replayed]:
    """A paused, secure replay of `_record`'s log from after its RBAC objects, forkable (`--fork`)."""
    start = await _record(tmp_path / "recorded")
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(f'{VIEWER_TOKEN},viewer,viewer-uid,"viewers"\n')
    async with recording.opened(str(tmp_path / "recorded")) as source, \
            replay.serving(source, data_dir=tmp_path / "replay", speed=None, start=start, fork=True, secure=True,
                           token_auth_file=str(tokens)) as srv:
        yield Replayed(srv, start=start)


async def _revision(page: Any) -> int:
    return int(await page.locator("#replay").get_attribute("data-revision"))


async def test_step_until_and_fork_move_the_cursor_and_the_page_follows(replayed: Replayed,
                                                                       page_for: PageFor) -> None:
    page = await page_for(replayed.cluster, "/ui/", token=replayed.admin_token)
    await page.wait_for_selector('#replay[data-mode="paused"][data-ready="controls"]')
    at = await _revision(page)
    assert at == replayed.start

    await page.locator('#replay [data-replay-action="step"]').click()
    await page.wait_for_selector(f'#replay[data-revision="{at + 1}"]', state="attached")
    await page.wait_for_selector(f'main[data-rendered-rv="{at + 1}"]', state="attached")
    assert replayed.server.log.revision == at + 1

    await page.locator('#replay input[aria-label="until revision"]').fill(str(at + 3))
    await page.locator('#replay [data-replay-action="until"]').click()
    await page.wait_for_selector(f'#replay[data-revision="{at + 3}"]', state="attached")
    await page.wait_for_selector(f'main[data-rendered-rv="{at + 3}"]', state="attached")
    assert replayed.server.log.revision == at + 3
    await screenshot(page, "ui-replay", selector="#timeline")

    await page.locator('#replay [data-replay-action="fork"]').click()
    await page.wait_for_selector('#replay[data-mode="forked"]', state="attached")
    assert replayed.server.log.forked
    assert await page.locator('#replay [data-replay-action="step"]').is_disabled()


async def test_a_viewer_sees_the_replay_but_no_controls(replayed: Replayed, page_for: PageFor) -> None:
    page = await page_for(replayed.cluster, "/ui/", token=VIEWER_TOKEN)
    await page.wait_for_selector('#replay[data-ready="read-only"]')
    status = page.locator("#replay .rp-status")
    assert f"paused at revision {replayed.start}" in await status.inner_text()
    assert await page.locator("[data-write]").count() == 0
    assert await page.locator("[data-replay-action]").count() == 0


async def test_without_authentication_everyone_has_the_controls(tmp_path: Path, page_for: PageFor) -> None:
    """`cplane replay` serves everyone as the admin: no review endpoint, and the controls are there."""
    start = await _record(tmp_path / "recorded")
    async with recording.opened(str(tmp_path / "recorded")) as source, \
            replay.serving(source, data_dir=tmp_path / "replay", speed=None, start=start) as srv:
        page = await page_for(Cluster(url=srv.url, client=None, sandbox=None), "/ui/")  # type: ignore[arg-type]
        await page.wait_for_selector('#replay[data-ready="controls"]')
        await page.locator('#replay [data-replay-action="step"]').click()
        await page.wait_for_selector(f'main[data-rendered-rv="{start + 1}"]', state="attached")
        assert srv.log.revision == start + 1
        assert await page.locator('#replay [data-replay-action="fork"]').is_disabled()  # no --fork
        await page.context.close()  # before its server stops
