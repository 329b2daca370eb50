"""The controllers' HTTP client against an in-process API server: CRUD, the four patch types,
delete options and preconditions, pagination, typed errors built from Status objects, watch and
watch-list streams (with the initial-events-end bookmark), in-stream 410, subresources
(status, scale, binding, finalize), Events, and construction from a kubeconfig.

Out of scope: the server's own semantics beyond what the client relies on (tests/api/).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from api import server as servers
from controllers.runtime import client as clients
from cp import errors


def _deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


async def test_crud_round_trip(client: clients.Client) -> None:
    created = await client.create("configmaps", {"metadata": {"name": "a", "namespace": "default"},
                                                 "data": {"k": "v"}})
    assert created["metadata"]["uid"] and created["kind"] == "ConfigMap"
    got = await client.get("configmaps", "a", namespace="default")
    assert got["data"] == {"k": "v"}
    got["data"]["k"] = "w"
    updated = await client.update("configmaps", got)
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    deleted = await client.delete("configmaps", "a", namespace="default")
    assert deleted["kind"] == "Status" and deleted["status"] == "Success"
    with pytest.raises(errors.NotFound) as info:
        await client.get("configmaps", "a", namespace="default")
    assert info.value.code == 404 and info.value.details == {"name": "a", "kind": "configmaps"}
    assert info.value.status_body["reason"] == "NotFound"  # type: ignore[attr-defined]


async def test_typed_errors(client: clients.Client) -> None:
    obj = await client.create("configmaps", {"metadata": {"name": "a", "namespace": "default"}})
    with pytest.raises(errors.AlreadyExists):
        await client.create("configmaps", {"metadata": {"name": "a", "namespace": "default"}})
    stale = dict(obj, data={"x": "1"})
    await client.update("configmaps", stale)
    with pytest.raises(errors.Conflict) as conflict:
        await client.update("configmaps", dict(obj, data={"x": "2"}))  # old resourceVersion
    assert conflict.value.code == 409
    with pytest.raises(errors.Invalid) as invalid:
        await client.create("configmaps", {"metadata": {"name": "Not_Valid", "namespace": "default"}})
    assert invalid.value.code == 422 and invalid.value.causes
    assert invalid.value.causes[0].field == "metadata.name"
    with pytest.raises(errors.Conflict, match="Precondition failed"):
        await client.delete("configmaps", "a", namespace="default", preconditions={"uid": "not-the-uid"})
    with pytest.raises(ValueError, match="unknown resource"):
        clients.resolve("widgets.example.com")


async def test_patch_types(client: clients.Client) -> None:
    await client.create("configmaps", {"metadata": {"name": "p", "namespace": "default", "labels": {"a": "1"}}})
    merged = await client.patch("configmaps", "p", {"metadata": {"labels": {"b": "2"}}}, namespace="default")
    assert merged["metadata"]["labels"] == {"a": "1", "b": "2"}
    strategic = await client.patch("configmaps", "p", {"data": {"k": "v"}}, namespace="default",
                                   patch_type="strategic")
    assert strategic["data"] == {"k": "v"}
    jp = await client.patch("configmaps", "p", [{"op": "remove", "path": "/metadata/labels/a"}],
                            namespace="default", patch_type="json")
    assert jp["metadata"]["labels"] == {"b": "2"}
    applied = await client.patch("configmaps", "q", {"apiVersion": "v1", "kind": "ConfigMap",
                                                     "metadata": {"name": "q"}, "data": {"x": "y"}},
                                 namespace="default", patch_type="apply", field_manager="test", force=True)
    assert applied["data"] == {"x": "y"}
    with pytest.raises(errors.Conflict):
        await client.patch("configmaps", "p", {"metadata": {"resourceVersion": "1", "labels": {"c": "3"}}},
                           namespace="default")
    with pytest.raises(ValueError):
        await client.patch("configmaps", "p", {}, namespace="default", patch_type="bogus")


async def test_list_follows_continue_tokens(client: clients.Client) -> None:
    for i in range(7):
        await client.create("configmaps", {"metadata": {"name": f"cm{i}", "namespace": "default",
                                                        "labels": {"even": str(i % 2 == 0).lower()}}})
    first = await client.list_page("configmaps", namespace="default", limit=3)
    assert len(first.items) == 3 and first.metadata.continue_
    everything = await client.list("configmaps", namespace="default", limit=3)
    assert [o["metadata"]["name"] for o in everything.items] == [f"cm{i}" for i in range(7)]
    assert everything.resource_version == first.resource_version  # one snapshot
    even = await client.list("configmaps", namespace="default", label_selector="even=true", limit=2)
    assert len(even.items) == 4
    assert len((await client.list("namespaces")).items) >= 4


async def test_delete_options_and_collection(client: clients.Client) -> None:
    await client.create("configmaps", {"metadata": {"name": "f", "namespace": "default",
                                                    "finalizers": ["example.com/hold"]}})
    kept = await client.delete("configmaps", "f", namespace="default", propagation_policy="Foreground")
    assert kept["metadata"]["deletionTimestamp"]
    assert set(kept["metadata"]["finalizers"]) == {"example.com/hold", "foregroundDeletion"}
    for i in range(3):
        await client.create("configmaps", {"metadata": {"name": f"c{i}", "namespace": "default"}})
    out = await client.delete_collection("configmaps", namespace="default", propagation_policy="Background")
    assert out["kind"] == "ConfigMapList"
    left = await client.list("configmaps", namespace="default")
    assert [o["metadata"]["name"] for o in left.items] == ["f"]


async def test_watch_stream_and_in_stream_410(client: clients.Client, srv: servers.Running) -> None:
    a = await client.create("configmaps", {"metadata": {"name": "a", "namespace": "default"}})
    rv = a["metadata"]["resourceVersion"]
    async with client.watch("configmaps", namespace="default", resource_version=rv) as stream:
        events = aiter(stream)
        await client.patch("configmaps", "a", {"data": {"k": "v"}}, namespace="default")
        ev = await asyncio.wait_for(anext(events), 5)
        assert ev.type == "MODIFIED" and ev.object["data"] == {"k": "v"}
        await client.delete("configmaps", "a", namespace="default")
        ev = await asyncio.wait_for(anext(events), 5)
        assert ev.type == "DELETED"
    await srv.event_log.compact(srv.event_log.revision)
    with pytest.raises(errors.Expired):
        async with client.watch("configmaps", namespace="default", resource_version=rv) as stream:
            async for _ in stream:
                pass


async def test_watch_list_ends_initial_events_with_bookmark(client: clients.Client) -> None:
    for name in ("a", "b"):
        await client.create("configmaps", {"metadata": {"name": name, "namespace": "default"}})
    async with client.watch("configmaps", namespace="default", send_initial_events=True,
                            timeout_seconds=30) as stream:
        events = aiter(stream)
        first = [await asyncio.wait_for(anext(events), 5) for _ in range(3)]
        assert [e.type for e in first] == ["ADDED", "ADDED", "BOOKMARK"]
        assert first[2].object["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
        await client.create("configmaps", {"metadata": {"name": "c", "namespace": "default"}})
        ev = await asyncio.wait_for(anext(events), 5)
        assert ev.type == "ADDED" and ev.object["metadata"]["name"] == "c"


async def test_watch_rejected_parameters_raise_invalid(client: clients.Client) -> None:
    stream = clients.WatchStream(client, "/api/v1/namespaces/default/configmaps",
                                 {"watch": "true", "sendInitialEvents": "true"}, None)
    with pytest.raises(errors.Invalid):
        async with stream:
            pass


async def test_subresources(client: clients.Client) -> None:
    await client.create("deployments.apps", _deployment("web", replicas=1))
    scale = await client.get_scale("deployments.apps", "web", namespace="default")
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1
    scale["spec"]["replicas"] = 3
    scaled = await client.update_scale("deployments.apps", scale)
    assert scaled["spec"]["replicas"] == 3
    dep = await client.get("deployments.apps", "web", namespace="default")
    dep["status"] = {"replicas": 3, "observedGeneration": dep["metadata"]["generation"]}
    with_status = await client.update_status("deployments.apps", dep)
    assert with_status["status"]["replicas"] == 3

    pod = await client.create("pods", {"metadata": {"name": "p", "namespace": "default"},
                                       "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    await client.bind(namespace="default", name="p", node="node-1", uid=pod["metadata"]["uid"])
    assert (await client.get("pods", "p", namespace="default"))["spec"]["nodeName"] == "node-1"

    await client.create("namespaces", {"metadata": {"name": "doomed"}})
    await client.delete("namespaces", "doomed")
    ns = await client.get("namespaces", "doomed")
    ns["spec"]["finalizers"] = []
    await client.finalize_namespace(ns)
    with pytest.raises(errors.NotFound):
        await client.get("namespaces", "doomed")


async def test_create_event(client: clients.Client) -> None:
    ev = await client.create_event({
        "metadata": {"generateName": "thing-", "namespace": "default"},
        "involvedObject": {"kind": "ConfigMap", "apiVersion": "v1", "name": "thing", "namespace": "default"},
        "reason": "Tested", "message": "hello", "type": "Normal", "source": {"component": "tests"}})
    assert ev["metadata"]["name"].startswith("thing-") and ev["reason"] == "Tested"


async def test_from_kubeconfig(srv: servers.Running) -> None:
    async with clients.Client.from_kubeconfig(srv.kubeconfig) as c:
        assert c.base_url == srv.url
        ns = await c.get("namespaces", "default")
        assert ns["metadata"]["name"] == "default"


async def test_event_recorder_is_accepted_by_the_server(client: clients.Client) -> None:
    from controllers.runtime import manager as managers
    from cp import clock as clocks

    obj = await client.create("configmaps", {"metadata": {"name": "thing", "namespace": "default"}})
    recorder = managers.EventRecorder(client, component="test-controller", clock=clocks.VirtualClock(),
                                      instance="host-1")
    await recorder.warning(obj, "SomethingOdd", "it happened")
    await recorder.warning(obj, "SomethingOdd", "it happened again")  # same virtual instant
    events = (await client.list("events", namespace="default",
                                field_selector="involvedObject.name=thing")).items
    assert sorted(e["message"] for e in events) == ["it happened", "it happened again"]
    assert {e["source"]["component"] for e in events} == {"test-controller"}
    assert all(e["involvedObject"]["uid"] == obj["metadata"]["uid"] for e in events)
