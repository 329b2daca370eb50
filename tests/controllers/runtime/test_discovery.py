"""The discovery-backed REST mapper: built-in resources resolve with no request, custom ones once
discovery has been read (the client then takes their names), a version served from another's storage
is built-in, and a lookup that misses reads discovery again, at most once a second."""

from __future__ import annotations

import msgspec
import pytest

from api import server as servers
from controllers.runtime import client as clients
from controllers.runtime import discovery
from cp import resources as res
from tests.controllers import crds


async def test_custom_resources_resolve_after_discovery(srv: servers.Running) -> None:
    async with clients.Client(srv.url) as client:
        assert client.mapper.by_kind("apps", "Deployment") is res.by_kind("apps", "Deployment")
        assert client.mapper.refreshes == 0  # built-in: no request
        with pytest.raises(ValueError, match="unknown resource"):
            client.resolve("widgets.example.com")
        widgets = await crds.establish(client)
        assert (widgets.group, widgets.version, widgets.kind, widgets.plural, widgets.singular) == (
            "example.com", "v1", "Widget", "widgets", "widget")
        assert widgets.namespaced and widgets.short_names == ("wd",)
        scale = widgets.subresource("scale")
        assert scale is not None and (scale.group, scale.version, scale.kind) == ("autoscaling", "v1", "Scale")
        assert widgets.subresource("status") is not None
        assert client.mapper.by_kind("example.com", "Widget") == widgets
        assert client.resolve("widgets.example.com") == widgets
        assert [k.group_resource for k in client.mapper.custom_kinds() if k.group == "example.com"] == [
            "widgets.example.com"]
        # events.k8s.io/v1 Events are core Events served in another version: built-in, not custom.
        assert "events.events.k8s.io" not in {k.group_resource for k in client.mapper.custom_kinds()}
        assert client.mapper.resolve("events.events.k8s.io") is not None


async def test_a_miss_reads_discovery_again_at_most_once_a_second() -> None:
    docs = {"/api": {"items": []}, "/apis": {"items": []}}
    fetched: list[str] = []

    async def fetch(path: str, accept: str) -> bytes:
        assert accept == discovery.AGGREGATED
        fetched.append(path)
        return msgspec.json.encode(docs[path])

    mapper = discovery.RESTMapper(fetch)
    assert await mapper.kind_for("example.com", "Gadget") is None
    assert fetched == ["/api", "/apis"]
    assert await mapper.kind_for("example.com", "Gadget") is None  # within the second: no request
    assert fetched == ["/api", "/apis"]
    docs["/apis"] = {"items": [{"metadata": {"name": "example.com"}, "versions": [
        {"version": "v2", "resources": [{"resource": "gadgets", "responseKind": {
            "group": "example.com", "version": "v2", "kind": "Gadget"}, "scope": "Cluster",
            "singularResource": "gadget", "verbs": ["get", "list"]}]},
        {"version": "v1", "resources": [{"resource": "gadgets", "responseKind": {
            "group": "example.com", "version": "v1", "kind": "Gadget"}, "scope": "Cluster",
            "singularResource": "gadget", "verbs": ["get"]}]}]}]}
    assert mapper.refreshed_at is not None
    mapper.refreshed_at -= discovery.MISS_REFRESH_INTERVAL
    found = await mapper.kind_for("example.com", "Gadget")
    assert found is not None and found.version == "v2" and not found.namespaced  # the preferred version
    assert found.verbs == ("get", "list")
