"""The metrics APIs (`api/metrics_apis.py`): upstream paths and shapes, discovery, the usage model,
validation of the sim kinds, and the real kubectl's `top pod` / `top node` / `get --raw`.

In scope: what a client of metrics.k8s.io, custom.metrics.k8s.io and external.metrics.k8s.io sees.
Out of scope: what the HPA does with it (tests/controllers/hpa/test_story.py, test_controller.py).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import server as servers
from cp import clock as clocks
from tests.controllers.hpa import support
from tests.kubectl.conftest import KUBECTL, Kubectl

START = float(int(time.time()) - 3600)
SIM = "/apis/sim.cplane.dev/v1alpha1/namespaces/default"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[servers.Running]:
    async with servers.running(data_dir=tmp_path / "data", db_url="memory:",
                               clock=clocks.VirtualClock(start=START)) as running:
        yield running


@pytest.fixture
async def http(srv: servers.Running) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=srv.url) as session:
        yield session


async def _call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None,
                **kw: Any) -> tuple[int, Any]:
    async with http.request(method, path, json=body, **kw) as r:
        return r.status, await r.json(content_type=None)


async def _ok(http: aiohttp.ClientSession, method: str, path: str, body: Any = None, **kw: Any) -> Any:
    status, out = await _call(http, method, path, body, **kw)
    assert status < 300, out
    return out


def _pod(name: str, *, labels: dict[str, str], containers: list[dict[str, Any]], node: str = "n1",
         init: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": node, "containers": containers}
    if init:
        spec["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": spec}


def _c(name: str, cpu: str | None = None, memory: str | None = None) -> dict[str, Any]:
    req = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    return {"name": name, "image": "x", "resources": {"requests": req} if req else {}}


async def _run(http: aiohttp.ClientSession, pod: dict[str, Any], phase: str = "Running") -> None:
    created = await _ok(http, "POST", "/api/v1/namespaces/default/pods", pod)
    created["status"] = {"phase": phase, "conditions": [{"type": "Ready", "status": "True"}]}
    await _ok(http, "PUT", f"/api/v1/namespaces/default/pods/{pod['metadata']['name']}/status", created)


async def _fixture_objects(http: aiohttp.ClientSession) -> None:
    await _ok(http, "POST", "/api/v1/nodes", support.node("n1"))
    down = support.node("n2")
    down["status"]["conditions"][0]["status"] = "False"
    await _ok(http, "POST", "/api/v1/nodes", down)
    await _run(http, _pod("web-1", labels={"app": "web"}, containers=[_c("app", "200m", "64Mi"), _c("log", "100m")],
                          init=[{**_c("proxy", "100m", "32Mi"), "restartPolicy": "Always"}, _c("setup", "1")]))
    await _run(http, _pod("web-2", labels={"app": "web"}, containers=[_c("app", "200m", "64Mi"), _c("log", "100m")]))
    await _run(http, _pod("db-1", labels={"app": "db"}, containers=[_c("db", "1", "1Gi")]))
    await _run(http, _pod("pending", labels={"app": "web"}, containers=[_c("app", "1")]), phase="Pending")
    await _run(http, _pod("elsewhere", labels={"app": "web"}, containers=[_c("app", "1")], node="n2"))


def _usage(item: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {c["name"]: c["usage"] for c in item["containers"]}


async def test_discovery_lists_the_metrics_groups(http: aiohttp.ClientSession) -> None:
    groups = await _ok(http, "GET", "/apis")
    names = [g["name"] for g in groups["groups"]]
    assert {"apps", "autoscaling", "metrics.k8s.io", "custom.metrics.k8s.io", "external.metrics.k8s.io"} <= set(names)
    metrics = next(g for g in groups["groups"] if g["name"] == "metrics.k8s.io")
    assert metrics["preferredVersion"] == {"groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"}

    assert await _ok(http, "GET", "/apis/custom.metrics.k8s.io") == {
        "kind": "APIGroup", "apiVersion": "v1", "name": "custom.metrics.k8s.io",
        "versions": [{"groupVersion": "custom.metrics.k8s.io/v1beta2", "version": "v1beta2"}],
        "preferredVersion": {"groupVersion": "custom.metrics.k8s.io/v1beta2", "version": "v1beta2"}}
    rl = await _ok(http, "GET", "/apis/metrics.k8s.io/v1beta1")
    assert rl["groupVersion"] == "metrics.k8s.io/v1beta1"
    assert {(r["name"], r["kind"], r["namespaced"], tuple(r["verbs"])) for r in rl["resources"]} == {
        ("nodes", "NodeMetrics", False, ("get", "list")), ("pods", "PodMetrics", True, ("get", "list"))}

    # Custom and external resources are the metrics that exist.
    await _ok(http, "POST", f"{SIM}/externalmetrics", {
        "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "ExternalMetric", "metadata": {"name": "q"},
        "spec": {"metricName": "queue_depth", "value": "3"}})
    await _ok(http, "POST", f"{SIM}/objectmetrics", {
        "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "ObjectMetric", "metadata": {"name": "rps"},
        "spec": {"describedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "metricName": "requests_per_second", "value": "7"}})
    ext = await _ok(http, "GET", "/apis/external.metrics.k8s.io/v1beta1")
    assert ext["resources"] == [{"name": "queue_depth", "singularName": "", "namespaced": True,
                                 "kind": "ExternalMetricValueList", "verbs": ["get"]}]
    custom = await _ok(http, "GET", "/apis/custom.metrics.k8s.io/v1beta2")
    assert [r["name"] for r in custom["resources"]] == ["deployments.apps/requests_per_second"]

    status, out = await _call(http, "GET", "/apis", headers={"Accept": AGGREGATED})
    assert status == 200
    items = {i["metadata"]["name"]: i for i in out["items"]}
    assert "apps" in items and "autoscaling" in items
    pods = next(r for r in items["metrics.k8s.io"]["versions"][0]["resources"] if r["resource"] == "pods")
    assert pods["responseKind"] == {"group": "metrics.k8s.io", "version": "v1beta1", "kind": "PodMetrics"}
    assert pods["scope"] == "Namespaced" and pods["verbs"] == ["get", "list"]
    assert [r["resource"] for r in items["external.metrics.k8s.io"]["versions"][0]["resources"]] == ["queue_depth"]
    assert await _call(http, "POST", "/apis/metrics.k8s.io/v1beta1/nodes", {}) == (405, await _status405())
    assert (await _call(http, "GET", "/apis/metrics.k8s.io/v1/nodes"))[0] == 404


async def _status405() -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "the server does not allow this method on the requested resource",
            "reason": "MethodNotAllowed", "details": {}, "code": 405}  # NewGenericServerResponse sets details


async def test_pod_and_node_metrics_follow_the_usage_model(http: aiohttp.ClientSession) -> None:
    await _fixture_objects(http)
    got = await _ok(http, "GET", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods")
    assert got["kind"] == "PodMetricsList" and got["apiVersion"] == "metrics.k8s.io/v1beta1"
    by_name = {i["metadata"]["name"]: i for i in got["items"]}
    # Pending pods and pods on a node that is not Ready report nothing.
    assert sorted(by_name) == ["db-1", "web-1", "web-2"]
    web1 = by_name["web-1"]
    assert web1["metadata"]["labels"] == {"app": "web"} and web1["window"] == "15s"
    assert web1["timestamp"] == clocks.rfc3339(START)
    # Without a PodLoad: each running container uses its request (sidecars included, init containers not).
    assert _usage(web1) == {"app": {"cpu": "200m", "memory": "64Mi"}, "log": {"cpu": "100m", "memory": "0"},
                            "proxy": {"cpu": "100m", "memory": "32Mi"}}

    # A PodLoad: per-pod CPU shared in proportion to requests, one container overridden.
    await _ok(http, "POST", f"{SIM}/podloads", {
        "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "PodLoad", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "cpu": "900m", "memory": "96Mi",
                 "containers": [{"name": "log", "cpu": "5m"}]}})
    one = await _ok(http, "GET", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/web-2")
    assert one["kind"] == "PodMetrics" and one["metadata"]["name"] == "web-2"
    assert _usage(one) == {"app": {"cpu": "900m", "memory": "96Mi"}, "log": {"cpu": "5m", "memory": "0"}}
    assert _usage(await _ok(http, "GET", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/web-1")) == {
        "app": {"cpu": "600m", "memory": "64Mi"}, "log": {"cpu": "5m", "memory": "0"},
        "proxy": {"cpu": "300m", "memory": "32Mi"}}

    sel = await _ok(http, "GET", "/apis/metrics.k8s.io/v1beta1/pods", params={"labelSelector": "app=db"})
    assert [i["metadata"]["name"] for i in sel["items"]] == ["db-1"]
    assert _usage(sel["items"][0]) == {"db": {"cpu": "1", "memory": "1Gi"}}
    status, out = await _call(http, "GET", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/pending")
    assert status == 404 and out["message"] == 'pods.metrics.k8s.io "default/pending" not found'

    nodes = await _ok(http, "GET", "/apis/metrics.k8s.io/v1beta1/nodes")
    assert nodes["kind"] == "NodeMetricsList"
    assert [(n["metadata"]["name"], n["usage"]) for n in nodes["items"]] == [
        ("n1", {"cpu": "2810m", "memory": "1216Mi"})]  # 905m + 905m + 1 CPU; 96Mi + 96Mi + 1Gi
    status, out = await _call(http, "GET", "/apis/metrics.k8s.io/v1beta1/nodes/n2")
    assert status == 404 and out["message"] == 'nodes.metrics.k8s.io "n2" not found'


async def test_custom_and_external_metrics(http: aiohttp.ClientSession) -> None:
    await _fixture_objects(http)
    base = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default"
    for name, labels, value in (("orders", {"queue": "orders"}, "30"), ("mails", {"queue": "mails"}, "1500m")):
        await _ok(http, "POST", f"{SIM}/externalmetrics", {
            "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "ExternalMetric", "metadata": {"name": name},
            "spec": {"metricName": "queue_depth", "labels": labels, "value": value}})
    ext = await _ok(http, "GET", "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_depth")
    assert ext["kind"] == "ExternalMetricValueList" and ext["apiVersion"] == "external.metrics.k8s.io/v1beta1"
    assert [(i["metricName"], i["metricLabels"], i["value"]) for i in ext["items"]] == [
        ("queue_depth", {"queue": "mails"}, "1500m"), ("queue_depth", {"queue": "orders"}, "30")]
    one = await _ok(http, "GET", "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_depth",
                    params={"labelSelector": "queue=orders"})
    assert [i["value"] for i in one["items"]] == ["30"] and one["items"][0]["timestamp"] == clocks.rfc3339(START)
    none = await _ok(http, "GET", "/apis/external.metrics.k8s.io/v1beta1/namespaces/other/queue_depth")
    assert none["items"] == []

    # Object metrics: one object, by its group-qualified resource; 404 when there is none.
    await _ok(http, "POST", f"{SIM}/objectmetrics", {
        "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "ObjectMetric", "metadata": {"name": "svc-rps"},
        "spec": {"describedObject": {"apiVersion": "v1", "kind": "Service", "name": "web"},
                 "metricName": "requests_per_second", "labels": {"verb": "GET"}, "value": "120"}})
    got = await _ok(http, "GET", f"{base}/services/web/requests_per_second")
    assert got["kind"] == "MetricValueList" and got["apiVersion"] == "custom.metrics.k8s.io/v1beta2"
    assert got["items"] == [{"describedObject": {"kind": "Service", "namespace": "default", "name": "web",
                                                 "apiVersion": "v1"},
                             "metric": {"name": "requests_per_second"}, "timestamp": clocks.rfc3339(START),
                             "value": "120"}]
    got = await _ok(http, "GET", f"{base}/services/web/requests_per_second", params={"metricLabelSelector": "verb=GET"})
    assert got["items"][0]["metric"] == {"name": "requests_per_second", "selector": {"matchLabels": {"verb": "GET"}}}
    status, out = await _call(http, "GET", f"{base}/services/web/requests_per_second",
                              params={"metricLabelSelector": "verb=PUT"})
    assert status == 404
    assert out["message"] == "the server could not find the metric requests_per_second for services web"

    # Pods metrics: an ObjectMetric describing the pod wins over the PodLoad's metrics.
    await _ok(http, "POST", f"{SIM}/podloads", {
        "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "PodLoad", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "metrics": {"http_requests": "12"}}})
    await _ok(http, "POST", f"{SIM}/objectmetrics", {
        "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "ObjectMetric", "metadata": {"name": "web-2-http"},
        "spec": {"describedObject": {"apiVersion": "v1", "kind": "Pod", "name": "web-2"},
                 "metricName": "http_requests", "value": "20"}})
    got = await _ok(http, "GET", f"{base}/pods/*/http_requests", params={"labelSelector": "app=web"})
    assert [(i["describedObject"]["name"], i["value"]) for i in got["items"]] == [("web-1", "12"), ("web-2", "20")]
    assert all(i["describedObject"]["kind"] == "Pod" for i in got["items"])

    # A namespace metric.
    await _ok(http, "POST", f"{SIM}/objectmetrics", {
        "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "ObjectMetric", "metadata": {"name": "ns-jobs"},
        "spec": {"describedObject": {"apiVersion": "v1", "kind": "Namespace", "name": "default"},
                 "metricName": "pending_jobs", "value": "4"}})
    got = await _ok(http, "GET", f"{base}/metrics/pending_jobs")
    assert got["items"][0]["describedObject"] == {"kind": "Namespace", "name": "default", "apiVersion": "v1"}
    assert got["items"][0]["value"] == "4"


@pytest.mark.parametrize(("plural", "spec", "message"), [
    ("externalmetrics", {"metricName": "q"}, "spec.value: Required value"),
    ("externalmetrics", {"value": "1x"}, "spec.value: Invalid value: \"1x\""),
    ("externalmetrics", {"value": "1", "metricName": "a/b"}, "spec.metricName: Invalid value: \"a/b\""),
    ("externalmetrics", {"value": "1", "labels": {"bad key!": "v"}}, "spec.labels: Invalid value: \"bad key!\""),
    ("objectmetrics", {"metricName": "m", "value": "1", "describedObject": {"kind": "Service"}},
     "spec.describedObject.name: Required value"),
    ("podloads", {"cpu": "100m"}, "spec.selector: Required value"),
    ("podloads", {"selector": {"matchLabels": {"a": "b"}}, "cpu": "-1"},
     "spec.cpu: Invalid value: \"-1\": must be greater than or equal to 0"),
])
async def test_sim_kinds_are_validated(http: aiohttp.ClientSession, plural: str, spec: dict[str, Any],
                                       message: str) -> None:
    kind = {"externalmetrics": "ExternalMetric", "objectmetrics": "ObjectMetric", "podloads": "PodLoad"}[plural]
    status, out = await _call(http, "POST", f"{SIM}/{plural}", {
        "apiVersion": "sim.cplane.dev/v1alpha1", "kind": kind, "metadata": {"name": "x"}, "spec": spec})
    assert status == 422 and out["reason"] == "Invalid", out
    assert message in out["message"], out["message"]


@pytest.mark.kubectl
async def test_kubectl_top(srv: servers.Running, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl not found: run `make test` (tests/tools/fetch-kubectl.sh) or set CPLANE_KUBECTL")
    await _fixture_objects(http)
    kubectl = Kubectl(srv, home=tmp_path / "home", workdir=tmp_path / "work")
    try:
        r = await kubectl("top", "pod")
        assert r.rows() == [["NAME", "CPU(cores)", "MEMORY(bytes)"], ["db-1", "1000m", "1024Mi"],
                            ["web-1", "400m", "96Mi"], ["web-2", "300m", "64Mi"]]
        r = await kubectl("top", "pod", "web-1", "--containers")
        assert r.rows() == [["POD", "NAME", "CPU(cores)", "MEMORY(bytes)"], ["web-1", "app", "200m", "64Mi"],
                            ["web-1", "log", "100m", "0Mi"], ["web-1", "proxy", "100m", "32Mi"]]
        r = await kubectl("top", "pod", "-l", "app=web", "--sort-by=cpu")
        assert [row[0] for row in r.rows()[1:]] == ["web-1", "web-2"]
        r = await kubectl("top", "node")
        assert r.rows()[0][:5] == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
        assert r.rows()[1][:5] == ["n1", "1700m", "42%", "1184Mi", "14%"]
        r = await kubectl("get", "--raw", "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/nothing")
        assert '"items":[]' in r.stdout
    finally:
        await kubectl.close()


async def test_cli_functions_name_and_update_objects(http: aiohttp.ClientSession) -> None:
    from cp.cli import metrics as hpa_cli

    verb, obj = await hpa_cli.set_external(http, metric="queue_depth", value="30", labels={"queue": "orders"})
    assert verb == "created" and obj["metadata"]["name"].startswith("queue-depth-")
    assert obj["spec"] == {"metricName": "queue_depth", "value": "30", "labels": {"queue": "orders"}}
    again = await hpa_cli.set_external(http, metric="queue_depth", value="30", labels={"queue": "orders"})
    assert again[0] == "unchanged" and again[1]["metadata"]["name"] == obj["metadata"]["name"]
    verb, obj = await hpa_cli.set_object(http, target="deployment.apps/web", metric="rps", value="12")
    assert (verb, obj["metadata"]["name"]) == ("created", "deployment-web-rps")
    assert obj["spec"]["describedObject"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    verb, obj = await hpa_cli.set_object(http, target="ingress.networking.k8s.io/main", metric="rps", value="3")
    assert obj["spec"]["describedObject"] == {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"}
    got = await _ok(http, "GET", "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/ingresses.networking.k8s.io"
                                  "/main/rps")
    assert got["items"][0]["value"] == "3"
    verb, obj = await hpa_cli.set_load(http, selector="app=web,tier in (a,b)", cpu="400m",
                                       metrics={"http_requests": "7"})
    assert verb == "created" and obj["spec"] == {
        "selector": {"matchLabels": {"app": "web"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["a", "b"]}]},
        "cpu": "400m", "metrics": {"http_requests": "7"}}
    verb, _ = await hpa_cli.set_load(http, selector="app=web,tier in (a,b)", cpu="500m")
    assert verb == "configured"
    with pytest.raises(hpa_cli.CommandError, match=r"spec\.value"):
        await hpa_cli.set_external(http, metric="x", value="lots")
