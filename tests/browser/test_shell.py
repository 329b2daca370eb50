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
