"""The web UI's time (docs/ui.md, issue #26): `?rv=` shows the cluster as it was, the scrubber moves
every view to a past revision and back to live, the diff of two revisions lists the changed objects
and fields. With env `CPLANE_SCREENSHOTS=DIR`, the map and the timeline are saved there as PNGs
(`make screenshots`)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from tests import waiting
from tests.browser.conftest import Cluster, PageFor

CLAIMS = "resourceclaims.resource.k8s.io"


def screenshots_dir() -> Path | None:
    """DIR of env CPLANE_SCREENSHOTS=DIR (made if missing), or None: no screenshots wanted."""
    folder = os.environ.get("CPLANE_SCREENSHOTS")
    if not folder:
        return None
    Path(folder).mkdir(parents=True, exist_ok=True)
    return Path(folder)


async def screenshot(page: Any, name: str, *, selector: str | None = None) -> None:
    """Save the page (or one element of it) as DIR/NAME.png when env CPLANE_SCREENSHOTS=DIR is set."""
    folder = screenshots_dir()
    if folder is None:
        return
    path = str(folder / f"{name}.png")
    if selector:
        await page.locator(selector).screenshot(path=path)
    else:
        await page.screenshot(path=path, full_page=True)


@dataclasses.dataclass
class Allocated:
    """A claim the scheduler allocated and what happened to it afterwards."""

    claim: str  # NAMESPACE/NAME
    device: str  # DRIVER/POOL/DEVICE
    created: int  # the revision at which the claim existed, not yet allocated
    allocated: int  # a revision at which it is allocated to `device`, its pod bound
    deleted: int  # a revision after the pod and claim were deleted


async def newest(cluster: Cluster) -> int:
    return int((await cluster.client.list("namespaces", limit=1)).resource_version)


async def allocate_then_delete(cluster: Cluster, name: str = "trainer") -> Allocated:
    """A pod with a claim for one GPU: scheduled and allocated, then deleted with its claim."""
    client = cluster.client
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
    created = await client.create(CLAIMS, claim, namespace="default")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "train", "image": "registry.example.com/train:1",
                                    "resources": {"claims": [{"name": "gpu"}]}}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimName": name}]}}
    await client.create("pods", pod, namespace="default")

    async def allocated() -> dict[str, Any] | None:
        c = await client.get(CLAIMS, name, namespace="default")
        p = await client.get("pods", name, namespace="default")
        done = (c.get("status") or {}).get("allocation") and p["spec"].get("nodeName")
        return c if done else None

    got = await waiting.eventually(allocated, within=15, what="the claim allocated and its pod bound")
    result = got["status"]["allocation"]["devices"]["results"][0]
    at = await newest(cluster)
    await client.delete("pods", name, namespace="default", grace_period_seconds=0)
    await client.delete(CLAIMS, name, namespace="default")

    async def gone() -> bool:
        names = {c["metadata"]["name"] for c in (await client.list(CLAIMS, namespace="default")).items}
        pods = {p["metadata"]["name"] for p in (await client.list("pods", namespace="default")).items}
        return name not in names and name not in pods

    await waiting.eventually(gone, within=15, what="the pod and claim deleted")
    return Allocated(claim=f"default/{name}", device=f"{result['driver']}/{result['pool']}/{result['device']}",
                     created=int(created["metadata"]["resourceVersion"]), allocated=at, deleted=await newest(cluster))


def device(allocated: Allocated) -> str:
    return f'[data-device="{allocated.device}"]'


async def test_rv_shows_the_earlier_allocation(cluster: Cluster, page_for: PageFor) -> None:
    """`/ui/?rv=R` of a revision where the claim held the device shows it allocated to the claim; live
    shows it free again."""
    a = await allocate_then_delete(cluster)
    page = await page_for(cluster, f"/ui/?rv={a.allocated}")
    await page.wait_for_selector(f'main[data-rendered-rv="{a.allocated}"]', state="attached")
    gpu = page.locator(device(a))
    assert await gpu.get_attribute("data-state") == "allocated"
    assert await gpu.get_attribute("data-claim") == a.claim
    assert a.claim.split("/")[1] in await gpu.inner_text()
    assert await page.locator("#timeline input[type=range]").input_value() == str(a.allocated)

    live = await page_for(cluster, "/ui/")
    gpu = live.locator(device(a))
    assert await gpu.get_attribute("data-state") == "free"
    assert await gpu.get_attribute("data-claim") is None


async def test_scrubber_moves_the_map_to_a_past_revision_and_back_to_live(cluster: Cluster,
                                                                          page_for: PageFor) -> None:
    a = await allocate_then_delete(cluster, "scrubbed")
    page = await page_for(cluster, "/ui/")
    await page.wait_for_function(f"Number(document.querySelector('main').dataset.renderedRv) >= {a.deleted}")
    assert await page.locator(device(a)).get_attribute("data-state") == "free"

    scrubber = page.locator("#timeline input[type=range]")
    await page.wait_for_function(f"Number(document.querySelector('#timeline input[type=range]').max) >= {a.deleted}")
    await scrubber.fill(str(a.allocated))  # sets the value and fires input and change, as a drag's release
    await page.wait_for_selector(f'main[data-rendered-rv="{a.allocated}"]', state="attached")
    assert await page.locator(device(a)).get_attribute("data-state") == "allocated"
    assert await page.locator(device(a)).get_attribute("data-claim") == a.claim
    assert f"rv={a.allocated}" in page.url
    await page.wait_for_selector(f'#timeline .tl-events li[aria-current="true"][data-revision="{a.allocated}"]',
                                 state="attached")
    await screenshot(page, "ui-map-past")
    await screenshot(page, "ui-timeline", selector="#timeline")

    await page.locator('#timeline button[data-action="live"]').click()
    await page.wait_for_function("!new URLSearchParams(location.search).has('rv')")
    await page.wait_for_function(f"Number(document.querySelector('main').dataset.renderedRv) >= {a.deleted}")
    await page.wait_for_selector(f'{device(a)}[data-state="free"]', state="attached")


async def test_step_moves_to_the_previous_and_next_event(cluster: Cluster, page_for: PageFor) -> None:
    a = await allocate_then_delete(cluster, "stepped")
    page = await page_for(cluster, f"/ui/?rv={a.allocated}")
    await page.locator('#timeline button[data-action="prev"]').click()
    await page.wait_for_function(f"Number(document.querySelector('main').dataset.renderedRv) < {a.allocated}")
    before = int(await page.locator("main").get_attribute("data-rendered-rv"))
    await page.locator('#timeline button[data-action="next"]').click()
    await page.wait_for_function(f"Number(document.querySelector('main').dataset.renderedRv) > {before}")
    after = int(await page.locator("main").get_attribute("data-rendered-rv"))
    assert after <= a.allocated  # the next event after the previous one is at most where we were
    # The events around the revision shown are listed as text, the one shown marked.
    await page.wait_for_selector(f'#timeline .tl-events li[aria-current="true"][data-revision="{after}"]',
                                 state="attached")


async def test_diff_of_two_revisions_lists_objects_and_fields(cluster: Cluster, page_for: PageFor) -> None:
    a = await allocate_then_delete(cluster, "diffed")
    claim = f"{CLAIMS}/{a.claim}"
    page = await page_for(cluster, f"/ui/?diff={a.created}..{a.allocated}")
    box = page.locator("#diff[data-ready=true]")
    await box.wait_for(state="visible")
    entry = box.locator(f'[data-diff-object="{claim}"]')
    assert await entry.get_attribute("data-change") == "modified"
    field = entry.locator('[data-path="status.allocation.devices.results[0].device"]')
    assert a.device.rsplit("/", 1)[1] in await field.inner_text()
    pod = box.locator('[data-diff-object="pods/default/diffed"]')
    assert await pod.get_attribute("data-change") in ("added", "modified")

    # From before the claim to after its deletion: created and deleted in between.
    await page.goto(cluster.url + f"/ui/?diff={a.created - 1}..{a.deleted}")
    entry = page.locator(f'#diff[data-ready=true] [data-diff-object="{claim}"]')
    assert await entry.get_attribute("data-change") == "transient"
    # And the whole life in one direction: deleted.
    await page.goto(cluster.url + f"/ui/?diff={a.allocated}..{a.deleted}")
    entry = page.locator(f'#diff[data-ready=true] [data-diff-object="{claim}"]')
    assert await entry.get_attribute("data-change") == "deleted"
    await screenshot(page, "ui-diff", selector="#diff")


async def test_play_steps_through_the_events_to_live(cluster: Cluster, page_for: PageFor) -> None:
    a = await allocate_then_delete(cluster, "played")
    start = a.allocated
    page = await page_for(cluster, f"/ui/?rv={start}")
    await page.evaluate("""() => {
      window.__shown = [];
      new MutationObserver(() => window.__shown.push(Number(document.querySelector("main").dataset.renderedRv)))
        .observe(document.querySelector("main"), {attributes: true, attributeFilter: ["data-rendered-rv"]});
    }""")
    await page.select_option('#timeline select[aria-label="play speed (events per second)"]', "100")
    play = page.locator('#timeline button[data-action="play"]')
    await play.click()
    await page.wait_for_function("!new URLSearchParams(location.search).has('rv')")  # it ends live
    assert await play.get_attribute("aria-pressed") == "false"
    shown = await page.evaluate("window.__shown")
    past = [rv for rv in shown if start < rv < a.deleted]
    assert len(set(past)) >= 2 and past == sorted(past), shown  # forward, one event after another


async def test_a_namespace_user_sees_their_namespace_s_events(secure_cluster: Cluster, page_for: PageFor) -> None:
    """A user refused the whole event log reads their namespace's (the one the page shows)."""
    from tests.browser.test_rbac import _viewer

    token = await _viewer(secure_cluster)
    await secure_cluster.client.create("configmaps", {"metadata": {"name": "theirs"}}, namespace="default")
    await secure_cluster.client.create("configmaps", {"metadata": {"name": "mine"}}, namespace="team")
    page = await page_for(secure_cluster, "/ui/?namespace=team", token=token)
    await page.wait_for_selector('#timeline [data-lane="configmaps"]', state="attached")
    events = page.locator("#timeline .tl-events")
    await events.locator("li", has_text="team/mine").wait_for(state="attached")
    text = await events.inner_text()
    assert "default/theirs" not in text
    assert "kube-system/" not in text  # nor another namespace's


async def test_the_canvas_goes_to_a_revision_and_picks_a_diff(cluster: Cluster, page_for: PageFor) -> None:
    a = await allocate_then_delete(cluster, "clicked")
    page = await page_for(cluster, "/ui/")
    # The lanes are text: one per kind, with its count of events.
    lane = page.locator('#timeline [data-lane="resourceclaims"]')
    await lane.wait_for(state="attached")
    assert int((await lane.inner_text()).split()[-1]) >= 3  # created, allocated, deleted at least
    await page.wait_for_function(f"Number(document.querySelector('#timeline input[type=range]').max) >= {a.deleted}")
    canvas = page.locator("#timeline canvas")
    box = await canvas.bounding_box()
    assert box is not None
    await canvas.click(position={"x": box["width"] * 0.5, "y": 2})
    await page.wait_for_function("new URLSearchParams(location.search).has('rv')")
    rv = int(await page.evaluate("new URLSearchParams(location.search).get('rv')"))
    await page.wait_for_selector(f'main[data-rendered-rv="{rv}"]', state="attached")
    # Shift-click two points: the diff between them.
    await canvas.click(position={"x": box["width"] * 0.25, "y": 2}, modifiers=["Shift"])
    await canvas.click(position={"x": box["width"] * 0.75, "y": 2}, modifiers=["Shift"])
    await page.wait_for_selector("#diff[data-ready=true]")
    low, high = map(int, (await page.locator("#diff").get_attribute("data-diff")).split(".."))
    assert low < rv < high
    assert f"diff={low}..{high}" in page.url


async def test_live_the_events_listed_follow_the_page_s_stream(cluster: Cluster, page_for: PageFor) -> None:
    """Live, each new event comes from the page's one event log watch and is appended to the events
    listed (marked as the one shown) without the timeline reading the event log again."""
    page = await page_for(cluster)
    await page.wait_for_selector('#timeline .tl-events li[aria-current="true"]', state="attached")
    reads: list[str] = []
    page.on("request", lambda r: reads.append(r.url) if "/eventlog?" in r.url and "watch=1" not in r.url else None)
    cm = await cluster.client.create("configmaps", {"metadata": {"name": "followed", "namespace": "default"}},
                                     namespace="default")
    rv = cm["metadata"]["resourceVersion"]
    item = page.locator(f'#timeline .tl-events li[data-revision="{rv}"]')
    await item.wait_for(state="attached")
    assert "default/followed" in await item.inner_text()
    assert reads == []
