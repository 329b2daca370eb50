"""The device map (docs/ui.md): each pod's devices, taints and health followed live without a reload,
pending pods with `cplane why`'s reason, the details panel, the URL's filters; every node, device,
claim and pod name is text in the page."""

from __future__ import annotations

from typing import Any

from playwright.async_api import expect

from tests import waiting
from tests.browser import support as s
from tests.browser.conftest import NODES, Cluster, PageFor


async def _same_document(page: Any) -> None:
    """Mark the document, to check later that it was not reloaded."""
    await page.evaluate("window.__sameDocument = true")


async def _not_reloaded(page: Any) -> None:
    assert await page.evaluate("window.__sameDocument === true"), "the page was reloaded"


async def test_map_shows_each_pods_devices_live(cluster: Cluster, page_for: PageFor) -> None:
    page = await page_for(cluster)
    await _same_document(page)
    pods = await s.run_deployment(cluster.client, "trainer", replicas=3, count=2)
    for pod in pods:
        claim, devices = await s.devices_of(cluster.client, pod)
        key = f"default/{pod['metadata']['name']}"
        assert len(devices) == 2
        for device in devices:
            element = page.locator(f'[data-node="{pod["spec"]["nodeName"]}"] [data-device="{device}"]')
            await expect(element).to_have_attribute("data-claim", claim)
            await expect(element).to_have_attribute("data-state", "allocated")
            await expect(element.locator(f'.pod[data-pod="{key}"]')).to_have_text(key)
            await expect(element.locator(".claim")).to_have_text(claim)
    await _not_reloaded(page)
    # scaled down: the devices of the pods that went are free again
    await cluster.client.patch("deployments.apps", "trainer", {"spec": {"replicas": 0}}, namespace="default",
                               patch_type="merge")
    await expect(page.locator('[data-device][data-state="allocated"]')).to_have_count(0, timeout=30_000)
    await _not_reloaded(page)


async def test_tainting_a_device_shows_it_tainted_without_reload(cluster: Cluster, page_for: PageFor) -> None:
    page = await page_for(cluster)
    await _same_document(page)
    device = "gpu.example.com/gpu-node-1/gpu-2"
    element = page.locator(f'[data-node="gpu-node-1"] [data-device="{device}"]')
    await expect(element).to_have_attribute("data-state", "free")
    await page.evaluate("document.querySelector('[data-node=\"gpu-node-0\"]').__kept = true")
    await cluster.client.create(s.RULES, s.taint_rule("maintenance", device))
    await expect(element).to_have_attribute("data-state", "tainted")
    # only the node whose text changed was replaced
    assert await page.evaluate("document.querySelector('[data-node=\"gpu-node-0\"]').__kept === true")
    await expect(element).to_have_attribute("data-taint", "NoSchedule")
    await expect(element.locator(".dev-taint")).to_contain_text("from DeviceTaintRule maintenance")
    await expect(page.locator('[data-taint-rule="maintenance"]')).to_contain_text("example.com/maintenance=true:NoSchedule")
    # the other devices are untouched; removing the rule frees the device again
    await expect(page.locator('[data-device][data-state="tainted"]')).to_have_count(1)
    await cluster.client.delete(s.RULES, "maintenance")
    await expect(element).to_have_attribute("data-state", "free")
    await _not_reloaded(page)


async def test_an_unhealthy_device_is_marked_unhealthy(cluster: Cluster, page_for: PageFor) -> None:
    from controllers import health

    page = await page_for(cluster)
    element = page.locator('[data-device="gpu.example.com/gpu-node-0/gpu-1"]')
    await expect(element).to_have_attribute("data-state", "free")
    await health.set_health(cluster.client, "gpu.example.com", "gpu-node-0", "gpu-1", "Unhealthy", "XID 79")
    await expect(element).to_have_attribute("data-state", "unhealthy")
    await expect(element.locator(".dev-health")).to_have_text("Unhealthy: XID 79")


async def test_a_pending_pod_shows_its_reason(cluster: Cluster, page_for: PageFor) -> None:
    page = await page_for(cluster)
    # 5 GPUs in one claim: no node has more than 4
    await cluster.client.create(s.TEMPLATES, s.template("five", count=5), namespace="default")
    await cluster.client.create("pods", s.pod("greedy", claim_template="five"), namespace="default")
    pending = page.locator('[data-pending-pod="default/greedy"]')
    await expect(pending.locator(".sched-message")).to_contain_text("cannot allocate all claims")
    await expect(pending.locator(".why-summary")).to_contain_text("Unschedulable")
    await expect(pending.locator(".why-summary")).to_contain_text("0/2 nodes fit")
    await expect(pending).to_contain_text("gpu-node-0")


async def test_names_of_every_node_device_claim_and_pod_are_text(cluster: Cluster, page_for: PageFor) -> None:
    await s.run_deployment(cluster.client, "web", replicas=2)
    await cluster.client.create(s.TEMPLATES, s.template("five", count=5), namespace="default")
    await cluster.client.create("pods", s.pod("greedy", claim_template="five"), namespace="default")

    async def claims_settled() -> list[dict[str, Any]] | None:
        claims = (await cluster.client.list(s.CLAIMS, namespace="default")).items
        return claims if len(claims) == 3 else None

    claims = await cluster.sandbox.wait_for(claims_settled)
    page = await page_for(cluster)
    await expect(page.locator("[data-pending-pod='default/greedy']")).to_have_count(1)
    text = await page.inner_text("main")
    slices = (await cluster.client.list("resourceslices.resource.k8s.io")).items
    pods = (await cluster.client.list("pods")).items
    names = [*NODES, *(d["name"] for sl in slices for d in sl["spec"]["devices"]),
             *(f"default/{c['metadata']['name']}" for c in claims),
             *(f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods)]
    missing = [n for n in names if n not in text]
    assert not missing, missing


async def test_details_panel_shows_yaml_and_events(cluster: Cluster, page_for: PageFor) -> None:
    (pod,) = await s.run_deployment(cluster.client, "one", replicas=1)
    claim, (device,) = await s.devices_of(cluster.client, pod)
    page = await page_for(cluster)
    # a device: its state, claim and pods, its entry in the ResourceSlice
    await page.locator(f'[data-device="{device}"] .dev-name').click()
    details = page.locator("#details")
    await expect(details.locator(f'[data-device-details="{device}"]')).to_contain_text(claim)
    await expect(details.locator(".yaml")).to_contain_text(f"name: {device.split('/')[2]}")
    assert f"device={device}" in page.url.replace("%2F", "/")
    # its claim: YAML of the claim; the pod: YAML and its events (Scheduled)
    await details.locator(f'button.claim[data-open-claim="{claim}"]').click()
    await expect(details.locator("h2")).to_have_text(f"ResourceClaim {claim}")
    await expect(details.locator(".yaml")).to_contain_text("kind: ResourceClaim")
    await expect(details.locator(".yaml")).to_contain_text(f"name: {claim.split('/')[1]}")
    # its history from the event log: created, then allocated (a field-level change), reserved
    await expect(details.locator(".history .version").first).to_contain_text("ADDED")
    await expect(details.locator(".history")).to_contain_text("status.allocation")
    assert await details.locator(".history .version").count() >= 2
    key = f"default/{pod['metadata']['name']}"
    await details.locator(f'button.pod[data-open-pod="{key}"]').click()
    await expect(details.locator("h2")).to_have_text(f"Pod {key}")
    await expect(details.locator(".events")).to_contain_text("Scheduled")
    # a node: its YAML
    await page.locator('[data-node="gpu-node-0"] [data-open-node]').click()
    await expect(details.locator("h2")).to_have_text("Node gpu-node-0")
    await expect(details.locator(".yaml")).to_contain_text("kind: Node")
    await page.go_back()  # the URL's history: the pod again
    await expect(details.locator("h2")).to_have_text(f"Pod {key}")
    # the URL opens the same panel
    page2 = await page_for(cluster, page.url.removeprefix(cluster.url))
    await expect(page2.locator("#details h2")).to_have_text(f"Pod {key}")
    await page2.locator("#details [data-close]").click()
    await expect(page2.locator("#details")).to_be_hidden()


async def test_filters_are_url_parameters(cluster: Cluster, page_for: PageFor) -> None:
    page = await page_for(cluster, "/ui/?node=gpu-node-1&driver=nic.example.com")
    await expect(page.locator("[data-node]")).to_have_count(1)
    await expect(page.locator("[data-device]")).to_have_count(1)
    await expect(page.locator('[data-device="nic.example.com/gpu-node-1/nic-0"]')).to_have_count(1)
    # a class: its `device.driver == "…"` selector filters by driver
    await page.select_option("#map-filters select[name=driver]", "")
    await page.select_option("#map-filters select[name=class]", "gpu.example.com")
    await expect(page.locator("[data-device]")).to_have_count(4)
    assert "class=gpu.example.com" in page.url and "driver=" not in page.url
    # a class whose selector is more than a driver: filtered by its driver, with a note
    await cluster.client.create("deviceclasses.resource.k8s.io", {"metadata": {"name": "a100"}, "spec": {"selectors": [
        {"cel": {"expression": 'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "A100-SXM4-80GB"'}}]}})
    await page.goto(f"{cluster.url}/ui/?class=a100")
    await expect(page.locator("[data-device]")).to_have_count(8)
    await expect(page.locator("#map-notes")).to_contain_text("DeviceClass a100: filtered by its driver gpu.example.com only")
    # a namespace with nothing in it: every node hidden, and said so
    await page.goto(f"{cluster.url}/ui/?namespace=nothing-here")
    await expect(page.locator("[data-node]")).to_have_count(0)
    await expect(page.locator("#map-notes")).to_contain_text("2 node(s) hidden: no pod or claim of namespace nothing-here")
    await page.goto(f"{cluster.url}/ui/?class=gpu.example.com")
    # a glob of nodes
    await page.fill("#map-filters input[name=node]", "gpu-node-*")
    await page.press("#map-filters input[name=node]", "Enter")
    await page.locator("#map-filters input[name=node]").blur()
    await expect(page.locator("[data-node]")).to_have_count(2)
    await expect(page.locator("[data-device]")).to_have_count(8)


SCROLL_TO = "(key) => document.querySelector(`[data-pending-pod=\"${key}\"]`).scrollIntoView()"


async def test_every_pending_pod_is_explained_once_on_screen(cluster: Cluster, page_for: PageFor) -> None:
    """`why` is asked only for the pending pods on screen, a few at a time; scrolled to, every pod is
    explained, and every pending pod's name and scheduler message are text from the start."""
    await cluster.client.create(s.TEMPLATES, s.template("five", count=5), namespace="default")
    names = [f"greedy-{i:02d}" for i in range(40)]
    for name in names:
        await cluster.client.create("pods", s.pod(name, claim_template="five"), namespace="default")

    async def all_tried() -> bool:
        pods = (await cluster.client.list("pods", namespace="default")).items
        tried = [p for p in pods if any(c.get("type") == "PodScheduled" and c.get("message")
                                        for c in (p.get("status") or {}).get("conditions") or [])]
        return len(tried) == len(names)

    await cluster.sandbox.wait_for(all_tried)
    asked: list[str] = []
    page = await page_for(cluster, wait=False)
    await page.set_viewport_size({"width": 1200, "height": 700})
    page.on("request", lambda r: asked.append(r.url) if r.url.split("?")[0].endswith("/why") else None)
    await page.reload()
    items = page.locator("[data-pending-pod]")
    await expect(items).to_have_count(len(names))
    for name in names:  # every name and scheduler message, as text, explained or not
        item = page.locator(f'[data-pending-pod="default/{name}"]')
        await expect(item.locator(".sched-message")).to_contain_text("cannot allocate all claims")
    first = page.locator(f'[data-pending-pod="default/{names[0]}"]')
    await page.evaluate(SCROLL_TO, f"default/{names[0]}")  # (items are re-rendered: no element handles)
    await expect(first.locator(".why-summary")).to_contain_text("Unschedulable")
    assert 0 < len(asked) < len(names), asked  # only what is on screen
    last = page.locator(f'[data-pending-pod="default/{names[-1]}"]')

    async def explained_on_screen() -> bool:
        # scrolled to again while the explanations above it arrive (each one makes its item taller)
        await page.evaluate(SCROLL_TO, f"default/{names[-1]}")
        return await last.locator(".why-summary").count() > 0

    await waiting.eventually(explained_on_screen, within=20, interval=0.2, what="the last pod explained")
    await expect(last.locator(".why-summary")).to_contain_text("Unschedulable")
    assert any(u.split("?")[0].endswith(f"/{names[-1]}/why") for u in asked)
