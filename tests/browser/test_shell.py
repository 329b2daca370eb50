"""The page's shell (`/ui/`): it loads without errors, shows the revision it rendered, and every
node and device of the fleet is text in the DOM (docs/ui.md, "DOM contract"); a past revision is read
exactly (and a scrub to another keeps what did not change), live again on request; a watch ended by
410 Gone lists again and keeps following."""

from __future__ import annotations

import re

from playwright.async_api import Route, expect

from tests import waiting
from tests.browser import support as s
from tests.browser.conftest import DEVICES_PER_NODE, NODES, Cluster, PageFor


async def test_page_renders_every_node_and_device_as_text(cluster: Cluster, page_for: PageFor) -> None:
    page = await page_for(cluster)
    rendered = int(await page.get_attribute("main", "data-rendered-rv"))
    assert rendered > 0
    assert await page.text_content("#revision") == str(rendered)
    assert await page.text_content("#mode") == "live"
    slices = (await cluster.client.list("resourceslices.resource.k8s.io")).items
    for node in NODES:
        assert node in await page.text_content(f'[data-node="{node}"] .node-name')
    devices = [(s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]) for s in slices for d in s["spec"]["devices"]]
    assert len(devices) == len(NODES) * DEVICES_PER_NODE
    for driver, pool, name in devices:
        device = page.locator(f'[data-device="{driver}/{pool}/{name}"]')
        assert name in await device.locator(".dev-name").text_content()
        assert await device.get_attribute("data-state") == "free"
    # the node a device's slice names holds it
    node = slices[0]["spec"]["nodeName"]
    first = slices[0]["spec"]["devices"][0]["name"]
    assert await page.locator(
        f'[data-node="{node}"] [data-device="{slices[0]["spec"]["driver"]}/{slices[0]["spec"]["pool"]["name"]}/{first}"]').count() == 1


async def test_a_past_revision_is_read_exactly_and_not_followed(cluster: Cluster, page_for: PageFor) -> None:
    before = int((await cluster.client.list("resourceslices.resource.k8s.io")).metadata.resource_version)
    (pod,) = await s.run_deployment(cluster.client, "later", replicas=1)
    claim, (device,) = await s.devices_of(cluster.client, pod)
    page = await page_for(cluster, f"/ui/?rv={before}")
    assert await page.get_attribute("main", "data-rendered-rv") == str(before)
    assert await page.text_content("#mode") == f"past (rv {before})"
    await expect(page.locator(f'[data-device="{device}"]')).to_have_attribute("data-state", "free")
    assert await page.locator('[data-device][data-state="allocated"]').count() == 0
    # to another past revision: the slices did not change in between, so they are not listed again
    after = int((await cluster.client.list(s.CLAIMS)).metadata.resource_version)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    await page.evaluate(f"window.cplane.setRevision({after})")
    await expect(page.locator("main")).to_have_attribute("data-rendered-rv", str(after))
    await expect(page.locator(f'[data-device="{device}"]')).to_have_attribute("data-claim", claim)
    assert await page.locator("[data-device]").count() == len(NODES) * DEVICES_PER_NODE
    assert any("/eventlog?" in u and "resource=resourceslices" in u for u in requests), requests
    assert any("/resourceclaims?" in u for u in requests) and not any("/resourceslices?" in u for u in requests)
    # back to live (as the timeline's "live" does): the allocation is there
    await page.evaluate("window.cplane.setRevision(null)")
    await expect(page.locator("#mode")).to_have_text("live")
    await expect(page.locator(f'[data-device="{device}"]')).to_have_attribute("data-claim", claim)
    assert "rv=" not in page.url


async def test_a_watch_ended_with_410_lists_again_and_follows(cluster: Cluster, page_for: PageFor) -> None:
    """Live, the page follows ONE watch of the event log (no watch per kind, no polling). When the
    revision it resumes from was compacted (410 Gone, as an ERROR line), the page lists everything
    again and keeps following."""
    gone = '{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired","message":"too old resource version"}}\n'
    answered: list[str] = []
    streams: list[str] = []
    lists: list[str] = []
    watches: list[str] = []

    async def expire_first_stream(route: Route) -> None:
        if "watch=1" in route.request.url:
            streams.append(route.request.url)
            if not answered:
                answered.append(route.request.url)
                await route.fulfill(status=200, content_type="application/json", body=gone)
                return
        await route.continue_()

    def seen(url: str) -> None:
        if "/api/v1/pods?" in url:
            lists.append(url)
        if "watch=" in url and "/eventlog?" not in url:
            watches.append(url)

    page = await page_for(cluster)  # rendered: its stream is open before the route (the reload's is routed)
    page.on("request", lambda request: seen(request.url))
    await page.route("**/eventlog?*", expire_first_stream)
    await page.reload()
    await expect(page.locator("main")).to_have_attribute("data-rendered-rv", re.compile(r"\d+"))
    await waiting.eventually(lambda: len(lists) > 1, what="pods listed again after the 410")
    (pod,) = await s.run_deployment(cluster.client, "after-410", replicas=1)
    claim, (device,) = await s.devices_of(cluster.client, pod)
    await expect(page.locator(f'[data-device="{device}"]')).to_have_attribute("data-claim", claim)
    assert len(answered) == 1 and len(streams) >= 2
    assert "objects=" in streams[-1] and "devicetaintrules.resource.k8s.io" in streams[-1]
    assert watches == [] and len(lists) == 2  # no watch per kind; listed once per load, no polling
    # the revision shown is the newest the stream brought, also of kinds the page does not show
    cm = await cluster.client.create("configmaps", {"metadata": {"name": "unshown", "namespace": "default"}},
                                     namespace="default")
    written = int(cm["metadata"]["resourceVersion"])

    async def rendered() -> bool:
        return int(await page.locator("main").get_attribute("data-rendered-rv") or 0) >= written

    await waiting.eventually(rendered, what="the configmap's revision rendered")
