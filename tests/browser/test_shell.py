"""The page's shell (`/ui/`): it loads without errors, shows the revision it rendered, and every
node and device of the fleet is text in the DOM (docs/ui.md, "DOM contract")."""

from __future__ import annotations

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
    from playwright.async_api import expect

    from tests.browser import support as s

    before = int((await cluster.client.list("resourceslices.resource.k8s.io")).metadata.resource_version)
    (pod,) = await s.run_deployment(cluster.client, "later", replicas=1)
    claim, (device,) = await s.devices_of(cluster.client, pod)
    page = await page_for(cluster, f"/ui/?rv={before}")
    assert await page.get_attribute("main", "data-rendered-rv") == str(before)
    assert await page.text_content("#mode") == f"past (rv {before})"
    await expect(page.locator(f'[data-device="{device}"]')).to_have_attribute("data-state", "free")
    assert await page.locator('[data-device][data-state="allocated"]').count() == 0
    # back to live (as the timeline's "live" does): the allocation is there
    await page.evaluate("window.cplane.setRevision(null)")
    await expect(page.locator("#mode")).to_have_text("live")
    await expect(page.locator(f'[data-device="{device}"]')).to_have_attribute("data-claim", claim)
    assert "rv=" not in page.url
