"""The HPA controller against a live in-process server, on the virtual clock: metric types and the
max over metrics, the legacy scale-up cap, behavior policies, min/max, failures (conditions,
events, `currentMetrics`), the target's scale, and scale-from-zero when the metric is gone.

Only the HPA controller runs; `support.Workload` keeps the pods in step when the test asks it to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from cp.cli import metrics as hpa_cli
from tests.controllers.hpa import support
from tests.controllers.hpa.support import condition

SIM = "/apis/sim.cplane.dev/v1alpha1/namespaces/default"


def _hpa(name: str, metrics: list[dict[str, Any]], *, min_replicas: int | None = 1, max_replicas: int = 10,
         target: str | None = None, behavior: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target or name},
                            "maxReplicas": max_replicas, "metrics": metrics}
    if min_replicas is not None:
        spec["minReplicas"] = min_replicas
    if behavior is not None:
        spec["behavior"] = behavior
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


CPU_50 = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}


def _external(metric: str, value: str, *, average: bool = False) -> dict[str, Any]:
    target = {"type": "AverageValue", "averageValue": value} if average else {"type": "Value", "value": value}
    return {"type": "External", "external": {"metric": {"name": metric}, "target": target}}


async def _setup(cl: support.Cluster, name: str, replicas: int, **kw: Any) -> support.Workload:
    await cl.client.create("nodes", support.node())
    await cl.client.create(support.DEPLOYMENTS, support.deployment(name, replicas=replicas, **kw))
    work = support.Workload(cl, name)
    await work.sync()
    return work


async def _post(cl: support.Cluster, plural: str, kind: str, name: str, spec: dict[str, Any]) -> None:
    await cl.client.request("POST", f"{SIM}/{plural}", body={
        "apiVersion": "sim.cplane.dev/v1alpha1", "kind": kind, "metadata": {"name": name}, "spec": spec})


async def _targets(cl: support.Cluster, name: str) -> str:
    """The TARGETS cell `kubectl get hpa` prints (the server-side Table)."""
    async with aiohttp.ClientSession(base_url=cl.srv.url) as http, \
            http.get(f"/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/{name}",
                     headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}) as r:
        table = await r.json()
    return str(table["rows"][0]["cells"][2])


async def test_cpu_utilization_with_the_legacy_scale_up_cap(tmp_path: Path) -> None:
    async with support.cluster(tmp_path) as cl:
        work = await _setup(cl, "web", 2, cpu="250m")
        await _post(cl, "podloads", "PodLoad", "web", {"selector": {"matchLabels": {"app": "web"}}, "cpu": "500m"})
        # Pods that turned Ready less than one metric window (15 s) ago do not count for CPU yet.
        await cl.client.create("horizontalpodautoscalers.autoscaling", _hpa("web", [CPU_50]))
        await cl.synced("web")
        h = await cl.hpa("web")
        assert condition(h, "ScalingActive") == (
            "False", "FailedGetResourceMetric", "the HPA was unable to compute the replica count: failed to get cpu "
            "utilization: did not receive metrics for targeted pods (pods might be unready)")
        assert h["status"]["currentMetrics"] == [{"type": ""}]
        assert await _targets(cl, "web") == "cpu: <unknown>/50%"
        await cl.tick("web")
        assert await cl.replicas("web") == 4  # 200% of 50% wants 8; without behavior at most max(2 x 2, 4)
        h = await cl.hpa("web")
        assert condition(h, "ScalingLimited") == ("True", "ScaleUpLimit", "the desired replica count is increasing "
                                                  "faster than the maximum scale rate")
        assert h["status"]["currentMetrics"] == [{"type": "Resource", "resource": {
            "name": "cpu", "current": {"averageValue": "500m", "averageUtilization": 200}}}]
        assert await _targets(cl, "web") == "cpu: 200%/50%"
        events = [(e["type"], e["reason"], e["message"], e.get("count")) for e in await cl.events("web")]
        assert events == [
            ("Warning", "FailedGetResourceMetric", "failed to get cpu utilization: did not receive metrics for "
             "targeted pods (pods might be unready)", 1),
            ("Warning", "FailedComputeMetricsReplicas", "invalid metrics (1 invalid out of 1), first error is: failed "
             "to get cpu resource metric value: failed to get cpu utilization: did not receive metrics for targeted "
             "pods (pods might be unready)", 1),
            ("Normal", "SuccessfulRescale", "New size: 4; reason: cpu resource utilization (percentage of request) "
             "above target", 1)]
        # A sync later all four pods count (Ready for a full window): 200% wants 16, capped at 2 x 4.
        await work.sync()
        await cl.tick("web")
        assert await cl.replicas("web") == 8


async def test_behavior_policies_limit_the_rate(tmp_path: Path) -> None:
    async with support.cluster(tmp_path) as cl:
        await _setup(cl, "app", 2)
        await _post(cl, "externalmetrics", "ExternalMetric", "jobs", {"metricName": "jobs", "value": "100"})
        behavior = {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]},
                    "scaleDown": {"stabilizationWindowSeconds": 0,
                                  "policies": [{"type": "Percent", "value": 50, "periodSeconds": 30}]}}
        await cl.client.create("horizontalpodautoscalers.autoscaling",
                               _hpa("app", [_external("jobs", "10", average=True)], behavior=behavior))
        await cl.synced("app")
        assert await cl.replicas("app") == 3  # wants 10 (100 / 10 per pod): one pod per minute
        h = await cl.hpa("app")
        assert condition(h, "ScalingLimited")[:2] == ("True", "ScaleUpLimit")
        assert h["status"]["currentMetrics"][0]["external"]["current"] == {"averageValue": "50"}  # 100 / 2 replicas
        for _ in range(3):  # t + 15, 30, 45: the minute has not passed
            await cl.tick("app")
            assert await cl.replicas("app") == 3
        await cl.tick("app")  # t + 60
        assert await cl.replicas("app") == 4
        # Down: at most half per 30 s, no window. (Within 30 s of the last scale-up the period would
        # start at 3, not 4: changes of both directions in the period count.)
        async with aiohttp.ClientSession(base_url=cl.srv.url) as http:
            await hpa_cli.set_external(http, metric="jobs", value="10", name="jobs")
        await cl.tick("app", 30)
        assert await cl.replicas("app") == 2
        h = await cl.hpa("app")
        assert condition(h, "ScalingLimited")[:2] == ("True", "ScaleDownLimit")
        await cl.tick("app")
        assert await cl.replicas("app") == 2  # 15 s later: the period started at 4, 50% of it is 2
        await cl.tick("app")
        assert await cl.replicas("app") == 1
        h = await cl.hpa("app")
        assert condition(h, "ScalingLimited")[:2] == ("False", "DesiredWithinRange")


async def test_max_over_metrics_and_bounds(tmp_path: Path) -> None:
    async with support.cluster(tmp_path) as cl:
        await _setup(cl, "api", 2)
        await _post(cl, "podloads", "PodLoad", "api", {"selector": {"matchLabels": {"app": "api"}},
                                                       "metrics": {"http_requests": "20"}})
        await _post(cl, "objectmetrics", "ObjectMetric", "ingress", {
            "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
            "metricName": "rps", "value": "15"})
        metrics = [{"type": "Object", "object": {
                        "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
                        "metric": {"name": "rps"}, "target": {"type": "Value", "value": "10"}}},
                   {"type": "Pods", "pods": {"metric": {"name": "http_requests"},
                                             "target": {"type": "AverageValue", "averageValue": "10"}}}]
        await cl.client.create("horizontalpodautoscalers.autoscaling", _hpa("api", metrics, min_replicas=3))
        await cl.synced("api")
        # Below minReplicas: straight to the bound, no metrics read.
        assert await cl.replicas("api") == 3
        h = await cl.hpa("api")
        assert "currentMetrics" not in h["status"]
        events = await cl.events("api")
        assert events[-1]["message"] == "New size: 3; reason: Current number of replicas below Spec.MinReplicas"
        await cl.tick("api")
        # Object: ceil(1.5 x 2 ready pods) = 3; Pods: ceil(20 / 10 x 2) = 4 -> 4.
        assert await cl.replicas("api") == 4
        h = await cl.hpa("api")
        assert h["status"]["currentMetrics"] == [
            {"type": "Object", "object": {"describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                                                              "name": "main"},
                                          "metric": {"name": "rps"}, "current": {"value": "15"}}},
            {"type": "Pods", "pods": {"metric": {"name": "http_requests"}, "current": {"averageValue": "20"}}}]
        assert condition(h, "ScalingActive")[2] == ("the HPA was able to successfully calculate a replica count from "
                                                    "pods metric http_requests")
        assert (await cl.events("api"))[-1]["message"] == "New size: 4; reason: pods metric http_requests above target"
        assert await _targets(cl, "api") == "15/10, 20/10"
        # Above maxReplicas (by hand): back to the bound.
        scale = await cl.client.get_scale(support.DEPLOYMENTS, "api", namespace="default")
        scale["spec"]["replicas"] = 12
        await cl.client.update_scale(support.DEPLOYMENTS, scale)
        await cl.tick("api")
        assert await cl.replicas("api") == 10
        assert (await cl.events("api"))[-1]["message"] == \
            "New size: 10; reason: Current number of replicas above Spec.MaxReplicas"


async def test_failures_conditions_and_counted_events(tmp_path: Path) -> None:
    async with support.cluster(tmp_path) as cl:
        await _setup(cl, "q", 1)
        await cl.client.create("horizontalpodautoscalers.autoscaling",
                               _hpa("q", [_external("missing", "10")], min_replicas=0))
        await cl.synced("q")
        h = await cl.hpa("q")
        err = ("unable to get external metric default/missing/nil: no metrics returned from external metrics API")
        assert condition(h, "ScalingActive") == ("False", "FailedGetExternalMetric",
                                                 f"the HPA was unable to compute the replica count: {err}")
        assert h["status"]["currentMetrics"] == [{"type": ""}]
        assert await _targets(cl, "q") == "<unknown>/10"
        await cl.tick("q")
        events = {e["reason"]: e for e in await cl.events("q")}
        assert events["FailedGetExternalMetric"]["message"] == err
        assert events["FailedGetExternalMetric"]["count"] == 2  # the same event, counted
        assert events["FailedComputeMetricsReplicas"]["message"] == (
            "invalid metrics (1 invalid out of 1), first error is: failed to get missing external metric value: "
            f"failed to get external metric missing: {err}")
        assert await cl.replicas("q") == 1

        # A target that does not exist.
        await cl.client.create("horizontalpodautoscalers.autoscaling", _hpa("ghost", [CPU_50], target="nope"))
        await cl.synced("ghost")
        h = await cl.hpa("ghost")
        assert condition(h, "AbleToScale") == ("False", "FailedGetScale", "the HPA controller was unable to get the "
                                               "target's current scale: deployments.apps \"nope\" not found")
        bad = _hpa("kindless", [CPU_50])
        bad["spec"]["scaleTargetRef"] = {"apiVersion": "apps/v1", "kind": "Gadget", "name": "x"}
        await cl.client.create("horizontalpodautoscalers.autoscaling", bad)
        await cl.synced("kindless")
        assert condition(await cl.hpa("kindless"), "AbleToScale")[2].endswith('no matches for kind "Gadget" in '
                                                                               'group "apps"')


async def test_at_zero_a_failing_metric_keeps_zero(tmp_path: Path) -> None:
    async with support.cluster(tmp_path) as cl:
        work = await _setup(cl, "drain", 1)
        await _post(cl, "externalmetrics", "ExternalMetric", "backlog", {"metricName": "backlog", "value": "0"})
        behavior = {"scaleDown": {"stabilizationWindowSeconds": 0}}
        await cl.client.create("horizontalpodautoscalers.autoscaling",
                               _hpa("drain", [_external("backlog", "5")], min_replicas=0, behavior=behavior))
        await cl.synced("drain")
        assert await cl.replicas("drain") == 0  # no window: at once
        h = await cl.hpa("drain")
        assert condition(h, "ScaledToZero")[:2] == ("True", "ScaledToZero")
        await work.sync()
        await cl.client.delete("externalmetrics.sim.cplane.dev", "backlog", namespace="default")
        await cl.tick("drain")
        h = await cl.hpa("drain")
        assert condition(h, "ScalingActive")[:2] == ("False", "FailedGetExternalMetric")
        assert condition(h, "ScaledToZero")[:2] == ("True", "ScaledToZero")
        assert await cl.replicas("drain") == 0
        await _post(cl, "externalmetrics", "ExternalMetric", "backlog", {"metricName": "backlog", "value": "12"})
        await cl.tick("drain")
        assert await cl.replicas("drain") == 3  # ceil(12 / 5)
        h = await cl.hpa("drain")
        assert condition(h, "ScalingActive")[:2] == ("True", "ValidMetricFound")
        assert condition(h, "ScaledToZero")[:2] == ("False", "NotScaledToZero")


async def test_container_resource_average_value(tmp_path: Path) -> None:
    async with support.cluster(tmp_path) as cl:
        await _setup(cl, "mem", 2, memory="64Mi")
        metric = {"type": "ContainerResource", "containerResource": {
            "name": "memory", "container": "worker", "target": {"type": "AverageValue", "averageValue": "32Mi"}}}
        await cl.client.create("horizontalpodautoscalers.autoscaling", _hpa("mem", [metric]))
        await cl.synced("mem")
        assert await cl.replicas("mem") == 4  # each pod uses its request, 64Mi: twice the target
        h = await cl.hpa("mem")
        assert h["status"]["currentMetrics"] == [{"type": "ContainerResource", "containerResource": {
            "name": "memory", "container": "worker", "current": {"averageValue": "67108864"}}}]
        assert (await cl.events("mem"))[-1]["message"] == \
            "New size: 4; reason: memory container resource above target"
        assert await _targets(cl, "mem") == "memory: 67108864/32Mi"


async def test_a_replicaset_target_is_scaled_through_its_scale_subresource(tmp_path: Path) -> None:
    async with support.cluster(tmp_path) as cl:
        rs = support.deployment("rs", replicas=1)
        rs["kind"] = "ReplicaSet"
        await cl.client.create("replicasets.apps", rs)
        hpa = _hpa("rs", [CPU_50], min_replicas=2)
        hpa["spec"]["scaleTargetRef"]["kind"] = "ReplicaSet"
        await cl.client.create("horizontalpodautoscalers.autoscaling", hpa)
        await cl.synced("rs")
        scale = await cl.client.get_scale("replicasets.apps", "rs", namespace="default")
        assert scale["spec"]["replicas"] == 2
        h = await cl.hpa("rs")
        assert condition(h, "AbleToScale") == ("True", "SucceededRescale",
                                               "the HPA controller was able to update the target scale to 2")
        assert h["status"]["currentReplicas"] == 1 and h["status"]["desiredReplicas"] == 2
