"""The page under authentication and RBAC (docs/ui.md, "Who sees what"): logged in through `/ui/login`,
everything is read with the user's own rights. A user who may read one namespace (and the devices)
sees the map of what they may read, notes for what they may not, and no write controls; the admin
gets the write controls, and they work (through the login cookie, with the UI's CSRF header)."""

from __future__ import annotations

from playwright.async_api import expect

from tests.browser import support as s
from tests.browser.conftest import Cluster, PageFor

RBAC = "rbac.authorization.k8s.io"
VIEWER = "system:serviceaccount:team:viewer"


async def _viewer(cluster: Cluster) -> str:
    """A ServiceAccount that may read namespace `team` (ClusterRole `view`, bound there) and the
    cluster's devices (nodes, ResourceSlices, DeviceClasses, DeviceTaintRules, DeviceHealth)."""
    client = cluster.client
    await client.create("namespaces", {"metadata": {"name": "team"}})
    token = await cluster.token_for("viewer", namespace="team")
    subject = [{"kind": "ServiceAccount", "name": "viewer", "namespace": "team"}]
    await client.create(f"clusterroles.{RBAC}", {"metadata": {"name": "device-reader"}, "rules": [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices", "deviceclasses", "devicetaintrules"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["sim.cplane.dev"], "resources": ["devicehealths"], "verbs": ["get", "list", "watch"]}]})
    await client.create(f"clusterrolebindings.{RBAC}", {
        "metadata": {"name": "viewer-devices"}, "subjects": subject,
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "device-reader"}})
    await client.create(f"rolebindings.{RBAC}", {
        "metadata": {"name": "viewer-view", "namespace": "team"}, "subjects": subject,
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"}}, namespace="team")
    return token


async def test_a_read_only_user_sees_what_they_may_read_and_no_write_controls(
        secure_cluster: Cluster, page_for: PageFor) -> None:
    token = await _viewer(secure_cluster)
    (mine,) = await s.run_deployment(secure_cluster.client, "mine", replicas=1, namespace="team")
    (theirs,) = await s.run_deployment(secure_cluster.client, "theirs", replicas=1)
    my_claim, (my_device,) = await s.devices_of(secure_cluster.client, mine)
    _, (their_device,) = await s.devices_of(secure_cluster.client, theirs)

    page = await page_for(secure_cluster, "/ui/?namespace=team", token=token)
    await expect(page.locator("main")).to_have_attribute("data-can-write", "no")
    device = page.locator(f'[data-device="{my_device}"]')
    await expect(device).to_have_attribute("data-state", "allocated")
    await expect(device).to_have_attribute("data-claim", my_claim)
    await expect(device.locator(".pod")).to_have_text(f"team/{mine['metadata']['name']}")
    notes = page.locator("#map-notes")
    await expect(notes).to_contain_text("You may not list ResourceClaims in all namespaces: showing namespace team only")
    await expect(notes).to_contain_text("You may not list Pods in all namespaces")
    # the other namespace's claim is not readable: its device is not shown as theirs
    assert "theirs" not in await page.inner_text("main")
    if their_device.split("/")[1] == my_device.split("/")[1]:
        await expect(page.locator(f'[data-device="{their_device}"]')).to_have_attribute("data-state", "free")
    # another namespace in the URL: that one is read instead (and refused: nothing of it shown)
    await page.fill("#map-filters input[name=namespace]", "default")
    await page.locator("#map-filters input[name=namespace]").blur()
    await expect(notes).to_contain_text("You may not list ResourceClaims (not even in namespace default)")
    await expect(page.locator("[data-node]")).to_have_count(0)  # none has a pod or claim of it
    await page.fill("#map-filters input[name=namespace]", "team")
    await page.locator("#map-filters input[name=namespace]").blur()
    await expect(device).to_have_attribute("data-state", "allocated")
    # no write control anywhere, also in a device's details
    await device.locator(".dev-name").click()
    await expect(page.locator(f'#details [data-device-details="{my_device}"]')).to_be_visible()
    await secure_cluster.client.create(s.RULES, s.taint_rule("maintenance", my_device))
    await expect(page.locator('[data-taint-rule="maintenance"]')).to_have_count(1)
    assert await page.locator("[data-write]").count() == 0


async def test_the_admin_taints_and_untaints_a_device_from_the_page(secure_cluster: Cluster, page_for: PageFor) -> None:
    page = await page_for(secure_cluster, token=secure_cluster.client.token)  # the sandbox's client: the admin
    await expect(page.locator("main")).to_have_attribute("data-can-write", "yes")
    device = "gpu.example.com/gpu-node-0/gpu-3"
    element = page.locator(f'[data-device="{device}"]')
    await element.locator(".dev-name").click()
    await page.locator("#details [data-write][data-taint-device]").click()
    await expect(element).to_have_attribute("data-state", "tainted")
    rules = (await secure_cluster.client.list(s.RULES)).items
    (rule,) = rules
    assert rule["spec"]["deviceSelector"] == dict(zip(("driver", "pool", "device"), device.split("/"), strict=True))
    assert rule["spec"]["taint"]["effect"] == "NoSchedule"
    await page.locator(f'[data-taint-rule="{rule["metadata"]["name"]}"] [data-write][data-remove-rule]').click()
    await expect(element).to_have_attribute("data-state", "free")
    assert (await secure_cluster.client.list(s.RULES)).items == []
