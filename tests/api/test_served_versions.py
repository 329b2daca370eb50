"""Kinds served in a second version from one storage, as kube-apiserver: events.k8s.io/v1 Events are
core/v1 Events, autoscaling/v1 HorizontalPodAutoscalers are autoscaling/v2 ones. A write through
either version is read (and watched) through both; discovery keeps autoscaling/v2 preferred.

Out of scope: the field mapping case by case (tests/cp/test_conversions.py).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

CORE = "/api/v1/namespaces/default/events"
EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"
HPA2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
HPA1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"


async def _json(resp: aiohttp.ClientResponse) -> Any:
    return json.loads(await resp.read())


async def test_discovery(http: aiohttp.ClientSession) -> None:
    async with http.get("/apis/autoscaling") as r:
        group = await _json(r)
    assert [v["version"] for v in group["versions"]] == ["v2", "v1"]
    assert group["preferredVersion"]["version"] == "v2"
    async with http.get("/apis/events.k8s.io/v1") as r:
        resources = (await _json(r))["resources"]
    assert [(x["name"], x["kind"], x["shortNames"]) for x in resources] == [("events", "Event", ["ev"])]
    async with http.get("/apis/autoscaling/v1") as r:
        names = [x["name"] for x in (await _json(r))["resources"]]
    assert names == ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]


async def test_events_through_both_versions(http: aiohttp.ClientSession) -> None:
    core = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "web.1"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "apiVersion": "v1"},
            "reason": "Started", "message": "Started container web", "type": "Normal",
            "source": {"component": "kubelet", "host": "node-0"}, "count": 2,
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:01:00Z",
            "reportingComponent": "kubelet", "reportingInstance": "node-0"}
    async with http.post(CORE, json=core) as r:
        assert r.status == 201, await r.text()
    async with http.get(f"{EVENTS}/web.1") as r:
        assert r.status == 200
        v1 = await _json(r)
    assert v1["apiVersion"] == "events.k8s.io/v1"
    assert v1["regarding"] == core["involvedObject"]
    assert v1["note"] == "Started container web"
    assert v1["deprecatedSource"] == {"component": "kubelet", "host": "node-0"}
    assert v1["deprecatedCount"] == 2
    assert v1["deprecatedFirstTimestamp"] == "2026-01-01T00:00:00Z"
    assert v1["reportingController"] == "kubelet"
    assert v1["eventTime"] is None
    assert "message" not in v1 and "involvedObject" not in v1

    new = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "web.2"},
           "eventTime": "2026-01-01T00:02:00.123456Z", "reportingController": "example.com/ctl",
           "reportingInstance": "ctl-1", "action": "Scaling", "reason": "Scaled", "type": "Normal",
           "regarding": {"kind": "Deployment", "namespace": "default", "name": "web"}, "note": "scaled to 3",
           "series": {"count": 2, "lastObservedTime": "2026-01-01T00:03:00.000000Z"}}
    async with http.post(EVENTS, json=new) as r:
        assert r.status == 201, await r.text()
        created = await _json(r)
    assert created["apiVersion"] == "events.k8s.io/v1" and created["note"] == "scaled to 3"
    async with http.get(f"{CORE}/web.2") as r:
        stored = await _json(r)
    assert stored["message"] == "scaled to 3"
    assert stored["involvedObject"] == new["regarding"]
    assert stored["reportingComponent"] == "example.com/ctl"
    assert stored["series"] == new["series"]

    async with http.get(EVENTS) as r:
        listed = await _json(r)
    assert listed["kind"] == "EventList" and listed["apiVersion"] == "events.k8s.io/v1"
    assert [i["note"] for i in listed["items"]] == ["Started container web", "scaled to 3"]

    async with http.patch(f"{EVENTS}/web.2", data=json.dumps({"note": "scaled to 4"}),
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200, await r.text()
    async with http.get(f"{CORE}/web.2") as r:
        assert (await _json(r))["message"] == "scaled to 4"


async def test_watch_through_the_other_version(http: aiohttp.ClientSession) -> None:
    async with http.get(EVENTS) as r:
        rv = (await _json(r))["metadata"]["resourceVersion"]
    async with http.get(EVENTS, params={"watch": "1", "resourceVersion": rv, "timeoutSeconds": "5"}) as w:
        async with http.post(CORE, json={"metadata": {"name": "e"}, "message": "hello",
                                         "involvedObject": {"kind": "Pod", "name": "p"}}) as r:
            assert r.status == 201
        line = await asyncio.wait_for(w.content.readline(), 5)
    event = json.loads(line)
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == "events.k8s.io/v1"
    assert event["object"]["note"] == "hello"


HPA_V2 = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
          "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                   "minReplicas": 1, "maxReplicas": 5,
                   "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                       "type": "Utilization", "averageUtilization": 60}}},
                       {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {
                           "type": "AverageValue", "averageValue": "10"}}}]}}


async def test_hpa_through_both_versions(http: aiohttp.ClientSession) -> None:
    async with http.post(HPA2, json=HPA_V2) as r:
        assert r.status == 201, await r.text()
    async with http.get(f"{HPA1}/web") as r:
        v1 = await _json(r)
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"] == {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                          "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60}
    assert json.loads(v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]) == [
        {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}}]

    # an update through v1 changes the CPU target and keeps the other metric (from the annotation)
    v1["spec"]["targetCPUUtilizationPercentage"] = 70
    async with http.put(f"{HPA1}/web", json=v1) as r:
        assert r.status == 200, await r.text()
        assert "annotations" in (await _json(r))["metadata"]
    async with http.get(f"{HPA2}/web") as r:
        v2 = await _json(r)
    assert v2["spec"]["metrics"] == [
        {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                     "averageUtilization": 70}}}]
    assert "annotations" not in v2["metadata"]

    # created through v1 without a target: the implicit 80% CPU utilization
    async with http.post(HPA1, json={"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
                                     "metadata": {"name": "api"},
                                     "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "api"},
                                              "maxReplicas": 3}}) as r:
        assert r.status == 201, await r.text()
        created = await _json(r)
    assert created["spec"]["targetCPUUtilizationPercentage"] == 80
    async with http.get(HPA2 + "/api") as r:
        assert (await _json(r))["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 80
    async with http.delete(f"{HPA1}/api") as r:
        assert r.status == 200
        assert (await _json(r))["details"] == {"name": "api", "group": "autoscaling",
                                               "kind": "horizontalpodautoscalers", "uid": created["metadata"]["uid"]}


async def test_new_events_are_held_to_the_v1_rules(http: aiohttp.ClientSession) -> None:
    bad = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "bad"},
           "eventTime": "2026-01-01T00:00:00.000000Z", "reportingInstance": "i", "action": "A", "reason": "R",
           "type": "Odd", "deprecatedCount": 3, "series": {"count": 1, "lastObservedTime": "2026-01-01T00:00:00.000000Z"}}
    async with http.post(EVENTS, json=bad) as r:
        assert r.status == 422
        body = await _json(r)
    # (an empty reportingController is also not a qualified name: two more causes, as upstream)
    assert list(dict.fromkeys((c["reason"], c["field"]) for c in body["details"]["causes"])) == [
        ("FieldValueRequired", "reportingController"), ("FieldValueInvalid", "reportingController"),
        ("FieldValueInvalid", "series.count"), ("FieldValueInvalid", "type"), ("FieldValueInvalid", "count")]
    # the same event through core/v1 is held to the legacy rules only
    core = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "old"}, "type": "Odd", "count": 3,
            "involvedObject": {"kind": "Pod", "name": "p"}}
    async with http.post(CORE, json=core) as r:
        assert r.status == 201, await r.text()


async def test_protobuf_both_ways(http: aiohttp.ClientSession) -> None:
    from cp import protobuf

    pb = "application/vnd.kubernetes.protobuf"
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "pb"},
             "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "example.com/ctl",
             "reportingInstance": "i", "action": "Do", "reason": "Did", "type": "Normal", "note": "in protobuf",
             "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}}
    body = protobuf.encode(event, api_version="events.k8s.io/v1", kind="Event")
    async with http.post(EVENTS, data=body, headers={"Content-Type": pb, "Accept": pb}) as r:
        assert r.status == 201, await r.read()
        created = protobuf.decode(await r.read())
    assert (created["apiVersion"], created["note"]) == ("events.k8s.io/v1", "in protobuf")
    async with http.get(EVENTS, headers={"Accept": pb}) as r:
        listed = protobuf.decode(await r.read())
    assert listed["kind"] == "EventList"
    assert [i["note"] for i in listed["items"]] == ["in protobuf"]
    async with http.get(f"{CORE}/pb") as r:
        assert (await _json(r))["message"] == "in protobuf"


async def test_field_selectors_of_each_version(http: aiohttp.ClientSession) -> None:
    for name, pod in (("a", "web"), ("b", "db")):
        async with http.post(CORE, json={"metadata": {"name": name}, "reason": "Started", "type": "Normal",
                                         "involvedObject": {"kind": "Pod", "name": pod}}) as r:
            assert r.status == 201
    async with http.get(EVENTS, params={"fieldSelector": "regarding.name=db,type=Normal"}) as r:
        assert [i["metadata"]["name"] for i in (await _json(r))["items"]] == ["b"]
    async with http.get(CORE, params={"fieldSelector": "involvedObject.name=web"}) as r:
        assert [i["metadata"]["name"] for i in (await _json(r))["items"]] == ["a"]
    async with http.get(EVENTS, params={"fieldSelector": "involvedObject.name=web"}) as r:
        assert r.status == 400
        assert (await _json(r))["message"] == "field label not supported: involvedObject.name"


async def test_server_side_apply_through_the_other_version(http: aiohttp.ClientSession) -> None:
    """An events.k8s.io/v1 apply configuration is merged in its version and stored as the core Event:
    the answer is in v1, the stored object in core's names, the manager's fields in v1's (its entry at
    events.k8s.io/v1, read so through core/v1 too); a configuration of another kind is a 400."""
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "applied.1"},
             "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "example.com/ctl",
             "reportingInstance": "ctl-1", "action": "Scale", "reason": "Scaled", "type": "Normal",
             "regarding": {"kind": "Deployment", "namespace": "default", "name": "web"}, "note": "scaled up"}
    headers = {"Content-Type": "application/apply-patch+yaml"}
    url = f"{EVENTS}/applied.1?fieldManager=ctl"
    async with http.patch(url, data=json.dumps(event), headers=headers) as r:
        assert r.status == 201, await r.text()
        assert (await _json(r))["note"] == "scaled up"
    async with http.patch(url, data=json.dumps({**event, "note": "scaled up again"}), headers=headers) as r:
        assert r.status == 200, await r.text()
        assert (await _json(r))["apiVersion"] == "events.k8s.io/v1"
    async with http.get(f"{CORE}/applied.1") as r:
        core = await _json(r)
    assert core["message"] == "scaled up again"
    assert [(m["manager"], m["apiVersion"]) for m in core["metadata"]["managedFields"]] == [
        ("ctl", "events.k8s.io/v1")]
    assert "f:note" in core["metadata"]["managedFields"][0]["fieldsV1"]
    wrong = {**event, "apiVersion": "v1"}
    async with http.patch(url, data=json.dumps(wrong), headers=headers) as r:
        assert r.status == 400
        assert (await _json(r))["message"] == "invalid object type: /v1, Kind=Event"
