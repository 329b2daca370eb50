"""Server-side Table rendering: columns per kind, row cells as upstream's printers compute them,
ages like `duration.HumanDuration`, and the Table envelope (`includeObject`, list metadata).

Expected cells are written from upstream printer semantics. Excluded: content negotiation and
watch framing (the API layer decides when to ask for tables and whether to send headers).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from cp.errors import BadRequest
from cp.tables import RowCache, columns, human_duration, row, table

NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def ago(seconds: float, *, micro: bool = False) -> str:
    dt = datetime.fromtimestamp(NOW - seconds, tz=UTC)
    if micro:
        return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def meta(name: str, *, age: float = 300, **more: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "resourceVersion": "7",
                         "creationTimestamp": ago(age)}
    m.update(more)
    return m


def names(group: str, kind: str) -> list[tuple[str, int]]:
    return [(c["name"], c["priority"]) for c in columns(group=group, kind=kind)]


# ---------------------------------------------------------------------------------------------
# Ages


@pytest.mark.parametrize(("seconds", "text"), [
    (-5, "<invalid>"),
    (-2, "<invalid>"),
    (-1.5, "0s"),           # up to ~2s of clock skew reads as "now"
    (-1, "0s"),
    (0, "0s"),
    (0.9, "0s"),
    (5, "5s"),
    (119, "119s"),
    (120, "2m"),
    (150, "2m30s"),
    (599, "9m59s"),
    (600, "10m"),
    (179 * 60 + 59, "179m"),
    (3 * 3600, "3h"),
    (3 * 3600 + 5 * 60 + 30, "3h5m"),
    (7 * 3600 + 59 * 60, "7h59m"),
    (8 * 3600 + 30 * 60, "8h"),
    (47 * 3600, "47h"),
    (48 * 3600, "2d"),
    (51 * 3600, "2d3h"),
    (7 * 86400 + 23 * 3600, "7d23h"),
    (8 * 86400, "8d"),
    (729 * 86400, "729d"),
    (730 * 86400, "2y"),
    (731 * 86400, "2y1d"),
    (8 * 365 * 86400, "8y"),
    (20 * 365 * 86400, "20y"),
])
def test_human_duration(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def test_missing_or_bad_creation_timestamp_is_unknown() -> None:
    assert row({"metadata": {"name": "x"}}, group="", kind="ConfigMap", now=NOW)[2] == "<unknown>"
    bad = {"metadata": {"name": "x", "creationTimestamp": "yesterday"}}
    assert row(bad, group="", kind="ConfigMap", now=NOW)[2] == "<unknown>"


def test_age_follows_the_given_clock() -> None:
    cm = {"metadata": meta("c", age=300)}
    assert row(cm, group="", kind="ConfigMap", now=NOW)[2] == "5m"
    assert row(cm, group="", kind="ConfigMap", now=NOW + 3600)[2] == "65m"


# ---------------------------------------------------------------------------------------------
# Column definitions


def test_pod_columns() -> None:
    assert names("", "Pod") == [("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0),
                                ("IP", 1), ("Node", 1), ("Nominated Node", 1), ("Readiness Gates", 1)]
    cols = columns(group="", kind="Pod")
    assert cols[0]["format"] == "name"
    assert all(set(c) == {"name", "type", "format", "description", "priority"} for c in cols)
    assert all(c["description"] for c in cols)


@pytest.mark.parametrize(("group", "kind", "expected"), [
    ("", "Namespace", [("Name", 0), ("Status", 0), ("Age", 0)]),
    ("", "Node", [("Name", 0), ("Status", 0), ("Roles", 0), ("Age", 0), ("Version", 0), ("Internal-IP", 1),
                  ("External-IP", 1), ("OS-Image", 1), ("Kernel-Version", 1), ("Container-Runtime", 1)]),
    ("", "Event", [("Last Seen", 0), ("Type", 0), ("Reason", 0), ("Object", 0), ("Subobject", 1),
                   ("Source", 1), ("Message", 0), ("First Seen", 1), ("Count", 1), ("Name", 1)]),
    ("", "ConfigMap", [("Name", 0), ("Data", 0), ("Age", 0)]),
    ("apps", "Deployment", [("Name", 0), ("Ready", 0), ("Up-to-date", 0), ("Available", 0), ("Age", 0),
                            ("Containers", 1), ("Images", 1), ("Selector", 1)]),
    ("apps", "ReplicaSet", [("Name", 0), ("Desired", 0), ("Current", 0), ("Ready", 0), ("Age", 0),
                            ("Containers", 1), ("Images", 1), ("Selector", 1)]),
    ("autoscaling", "HorizontalPodAutoscaler", [("Name", 0), ("Reference", 0), ("Targets", 0),
                                                ("MinPods", 0), ("MaxPods", 0), ("Replicas", 0), ("Age", 0)]),
    ("coordination.k8s.io", "Lease", [("Name", 0), ("Holder", 0), ("Age", 0)]),
    ("resource.k8s.io", "DeviceClass", [("Name", 0), ("Age", 0)]),
    ("resource.k8s.io", "ResourceClaim", [("Name", 0), ("State", 0), ("Age", 0)]),
    ("resource.k8s.io", "ResourceClaimTemplate", [("Name", 0), ("Age", 0)]),
    ("resource.k8s.io", "ResourceSlice", [("Name", 0), ("Node", 0), ("Driver", 0), ("Pool", 0), ("Age", 0)]),
    ("resource.k8s.io", "DeviceTaintRule", [("Name", 0), ("Age", 0)]),
    ("sim.cplane.dev", "Widget", [("Name", 0), ("Age", 0)]),
    ("example.com", "Pod", [("Name", 0), ("Created At", 0)]),  # same kind name, other group: the default table
])
def test_columns_per_kind(group: str, kind: str, expected: list[tuple[str, int]]) -> None:
    assert names(group, kind) == expected


def test_column_types_follow_upstream() -> None:
    rs = {c["name"]: c["type"] for c in columns(group="apps", kind="ReplicaSet")}
    assert rs["Desired"] == rs["Current"] == rs["Ready"] == "integer"
    pod = {c["name"]: c["type"] for c in columns(group="", kind="Pod")}
    assert pod["Restarts"] == "string"
    event = columns(group="", kind="Event")
    assert event[-1]["format"] == "name"


def test_columns_returns_copies() -> None:
    columns(group="", kind="Pod")[0]["name"] = "mutated"
    assert columns(group="", kind="Pod")[0]["name"] == "Name"


# ---------------------------------------------------------------------------------------------
# Pods


def pod(name: str = "web", *, containers: int = 1, statuses: list[dict] | None = None,
        init: list[dict] | None = None, init_statuses: list[dict] | None = None, phase: str = "Running",
        conditions: list[dict] | None = None, node: str = "n1", **status: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}", "image": "nginx"} for i in range(containers)]}
    if node:
        spec["nodeName"] = node
    if init is not None:
        spec["initContainers"] = init
    st: dict[str, Any] = {"phase": phase, **status}
    if statuses is not None:
        st["containerStatuses"] = statuses
    if init_statuses is not None:
        st["initContainerStatuses"] = init_statuses
    if conditions is not None:
        st["conditions"] = conditions
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta(name), "spec": spec, "status": st}


def running(name: str = "c0", *, ready: bool = True, restarts: int = 0, **more: Any) -> dict[str, Any]:
    return {"name": name, "ready": ready, "restartCount": restarts,
            "state": {"running": {"startedAt": ago(60)}}, **more}


def waiting(reason: str, name: str = "c0", **more: Any) -> dict[str, Any]:
    return {"name": name, "ready": False, "restartCount": 0, "state": {"waiting": {"reason": reason}}, **more}


def terminated(name: str = "c0", *, exit_code: int = 0, reason: str | None = None,
               signal: int | None = None) -> dict[str, Any]:
    term: dict[str, Any] = {"exitCode": exit_code, "finishedAt": ago(30)}
    if reason is not None:
        term["reason"] = reason
    if signal is not None:
        term["signal"] = signal
    return {"name": name, "ready": False, "restartCount": 0, "state": {"terminated": term}}


READY = [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}]
NOT_READY = [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "False"}]


def pod_cells(p: dict[str, Any]) -> list[Any]:
    return row(p, group="", kind="Pod", now=NOW)


def test_pending_unscheduled_pod() -> None:
    p = pod(phase="Pending", node="")
    assert pod_cells(p) == ["web", "0/1", "Pending", "0", "5m", "<none>", "<none>", "<none>", "<none>"]


@pytest.mark.parametrize(("p", "ready", "status"), [
    (pod(phase="Pending", statuses=[waiting("ContainerCreating")]), "0/1", "ContainerCreating"),
    (pod(statuses=[running()], conditions=READY), "1/1", "Running"),
    (pod(containers=2, statuses=[running("c0"), running("c1", ready=False)]), "1/2", "Running"),
    (pod(statuses=[waiting("CrashLoopBackOff")]), "0/1", "CrashLoopBackOff"),
    (pod(phase="Pending", statuses=[waiting("ErrImagePull")]), "0/1", "ErrImagePull"),
    (pod(phase="Succeeded", statuses=[terminated(reason="Completed")]), "0/1", "Completed"),
    (pod(phase="Failed", statuses=[terminated(exit_code=1, reason="Error")]), "0/1", "Error"),
    (pod(phase="Failed", statuses=[terminated(exit_code=2)]), "0/1", "ExitCode:2"),
    (pod(phase="Failed", statuses=[terminated(exit_code=137, signal=9)]), "0/1", "Signal:9"),
    (pod(phase="Failed", reason="Evicted"), "0/1", "Evicted"),
    (pod(phase="Unknown"), "0/1", "Unknown"),
    # a container that finished while another still runs: Running when the pod is Ready
    (pod(containers=2, statuses=[running("c0"), terminated("c1", reason="Completed")], conditions=READY),
     "1/2", "Running"),
    (pod(containers=2, statuses=[running("c0"), terminated("c1", reason="Completed")], conditions=NOT_READY),
     "1/2", "NotReady"),
    # a running container that is not ready does not count
    (pod(statuses=[running(ready=False)]), "0/1", "Running"),
])
def test_pod_ready_and_status(p: dict[str, Any], ready: str, status: str) -> None:
    cells = pod_cells(p)
    assert (cells[1], cells[2]) == (ready, status)


def test_scheduling_gated_pod() -> None:
    p = pod(phase="Pending", node="",
            conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}])
    assert pod_cells(p)[2] == "SchedulingGated"


@pytest.mark.parametrize(("init_statuses", "status"), [
    ([waiting("PodInitializing", "i0"), waiting("PodInitializing", "i1")], "Init:0/2"),
    ([terminated("i0", reason="Completed"), running("i1", ready=False)], "Init:1/2"),
    ([terminated("i0", exit_code=1, reason="Error")], "Init:Error"),
    ([terminated("i0", exit_code=3)], "Init:ExitCode:3"),
    ([terminated("i0", exit_code=137, signal=9)], "Init:Signal:9"),
    ([waiting("CrashLoopBackOff", "i0")], "Init:CrashLoopBackOff"),
    ([terminated("i0", reason="Completed"), waiting("ImagePullBackOff", "i1")], "Init:ImagePullBackOff"),
])
def test_pod_init_container_status(init_statuses: list[dict], status: str) -> None:
    p = pod(phase="Pending", init=[{"name": "i0", "image": "busybox"}, {"name": "i1", "image": "busybox"}],
            init_statuses=init_statuses, statuses=[waiting("PodInitializing")],
            conditions=[{"type": "Initialized", "status": "False"}])
    assert pod_cells(p)[1:3] == ["0/1", status]


def test_pod_after_init_containers_finished() -> None:
    p = pod(init=[{"name": "i0", "image": "busybox"}], init_statuses=[terminated("i0", reason="Completed")],
            statuses=[running()], conditions=READY)
    assert pod_cells(p)[1:3] == ["1/1", "Running"]


def test_pod_with_started_sidecar_counts_it_as_a_container() -> None:
    sidecar = {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}
    p = pod(init=[sidecar], init_statuses=[running("proxy", started=True, restarts=2)],
            statuses=[running()], conditions=READY)
    assert pod_cells(p)[1:4] == ["2/2", "Running", "2"]


def test_pod_with_sidecar_not_started_is_initializing() -> None:
    sidecar = {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}
    p = pod(phase="Pending", init=[sidecar], init_statuses=[running("proxy", ready=False, started=False)],
            statuses=[waiting("PodInitializing")], conditions=[{"type": "Initialized", "status": "False"}])
    assert pod_cells(p)[1:3] == ["0/2", "Init:0/1"]


@pytest.mark.parametrize(("phase", "reason", "status"), [
    ("Running", None, "Terminating"),
    ("Pending", None, "Terminating"),
    ("Succeeded", None, "Completed"),
    ("Running", "NodeLost", "Unknown"),
])
def test_pod_being_deleted(phase: str, reason: str | None, status: str) -> None:
    extra = {"reason": reason} if reason else {}
    statuses = [terminated(reason="Completed")] if phase == "Succeeded" else [running()]
    p = pod(phase=phase, statuses=statuses, **extra)
    p["metadata"]["deletionTimestamp"] = ago(1)
    assert pod_cells(p)[2] == status


@pytest.mark.parametrize(("statuses", "restarts"), [
    ([running(restarts=0)], "0"),
    ([running(restarts=3)], "3"),  # no last termination time known
    ([running(restarts=3, lastState={"terminated": {"exitCode": 1, "finishedAt": ago(300)}})], "3 (5m ago)"),
    # restarts add up over containers; the newest termination wins
    ([running("c0", restarts=1, lastState={"terminated": {"exitCode": 1, "finishedAt": ago(7200)}}),
      running("c1", restarts=2, lastState={"terminated": {"exitCode": 1, "finishedAt": ago(90)}})],
     "3 (90s ago)"),
])
def test_pod_restarts(statuses: list[dict], restarts: str) -> None:
    assert pod_cells(pod(containers=len(statuses), statuses=statuses))[3] == restarts


def test_pod_wide_columns() -> None:
    p = pod(statuses=[running()], podIPs=[{"ip": "10.0.0.5"}, {"ip": "fd00::5"}], podIP="10.0.0.5",
            nominatedNodeName="n2",
            conditions=[{"type": "Ready", "status": "True"}, {"type": "example.com/gate", "status": "True"}])
    p["spec"]["readinessGates"] = [{"conditionType": "example.com/gate"}, {"conditionType": "example.com/other"}]
    assert pod_cells(p)[5:] == ["10.0.0.5", "n1", "n2", "1/2"]


def test_pod_ip_falls_back_to_pod_ip_field() -> None:
    assert pod_cells(pod(podIP="10.1.1.1"))[5] == "10.1.1.1"


# ---------------------------------------------------------------------------------------------
# Nodes and namespaces


def node(name: str = "n1", *, ready: str | None = "True", unschedulable: bool = False,
         labels: dict[str, str] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {
        "nodeInfo": {"kubeletVersion": "v1.37.0", "osImage": "Debian GNU/Linux 12 (bookworm)",
                     "kernelVersion": "6.1.0", "containerRuntimeVersion": "containerd://2.1.0"},
        "addresses": [{"type": "Hostname", "address": name}, {"type": "InternalIP", "address": "10.0.0.1"},
                      {"type": "InternalIP", "address": "10.0.0.2"}],
    }
    if ready is not None:
        status["conditions"] = [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": ready}]
    obj: dict[str, Any] = {"metadata": meta(name, age=3 * 86400 + 3600, labels=labels or {}), "status": status}
    if unschedulable:
        obj["spec"] = {"unschedulable": True}
    return obj


def test_node_row() -> None:
    cells = row(node(labels={"node-role.kubernetes.io/control-plane": ""}), group="", kind="Node", now=NOW)
    assert cells == ["n1", "Ready", "control-plane", "3d1h", "v1.37.0", "10.0.0.1", "<none>",
                     "Debian GNU/Linux 12 (bookworm)", "6.1.0", "containerd://2.1.0"]


@pytest.mark.parametrize(("obj", "status", "roles"), [
    (node(ready="False"), "NotReady", "<none>"),
    (node(ready="Unknown"), "NotReady", "<none>"),
    (node(ready=None), "Unknown", "<none>"),
    (node(unschedulable=True), "Ready,SchedulingDisabled", "<none>"),
    (node(labels={"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/gpu": "true"}),
     "Ready", "gpu,worker"),
    (node(labels={"kubernetes.io/role": "infra", "node-role.kubernetes.io/": ""}), "Ready", "infra"),
])
def test_node_status_and_roles(obj: dict[str, Any], status: str, roles: str) -> None:
    assert row(obj, group="", kind="Node", now=NOW)[1:3] == [status, roles]


def test_node_without_info() -> None:
    cells = row({"metadata": meta("bare")}, group="", kind="Node", now=NOW)
    assert cells == ["bare", "Unknown", "<none>", "5m", "", "<none>", "<none>", "<unknown>", "<unknown>",
                     "<unknown>"]


def test_namespace_row() -> None:
    ns = {"metadata": meta("default", age=86400 * 10), "status": {"phase": "Active"}}
    assert row(ns, group="", kind="Namespace", now=NOW) == ["default", "Active", "10d"]
    ns["status"]["phase"] = "Terminating"
    assert row(ns, group="", kind="Namespace", now=NOW)[1] == "Terminating"


# ---------------------------------------------------------------------------------------------
# Events


def test_event_row_core_api() -> None:
    ev = {
        "metadata": meta("web.17a", namespace="default"),
        "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default", "fieldPath": "spec.containers{c0}"},
        "reason": "Pulled", "type": "Normal", "message": "  Successfully pulled image\n",
        "source": {"component": "kubelet", "host": "n1"},
        "firstTimestamp": ago(600), "lastTimestamp": ago(65), "count": 4,
    }
    assert row(ev, group="", kind="Event", now=NOW) == [
        "65s", "Normal", "Pulled", "pod/web", "spec.containers{c0}", "kubelet, n1",
        "Successfully pulled image", "10m", 4, "web.17a"]


def test_event_row_new_api_with_series() -> None:
    ev = {
        "metadata": meta("web.17b", namespace="default"),
        "involvedObject": {"kind": "Deployment", "name": "web"},
        "reason": "ScalingReplicaSet", "type": "Normal", "message": "Scaled up",
        "eventTime": ago(3600, micro=True), "reportingComponent": "deployment-controller",
        "series": {"count": 7, "lastObservedTime": ago(30, micro=True)},
    }
    assert row(ev, group="", kind="Event", now=NOW) == [
        "30s", "Normal", "ScalingReplicaSet", "deployment/web", "", "deployment-controller",
        "Scaled up", "60m", 7, "web.17b"]


def test_event_row_singleton_from_new_api() -> None:
    ev = {"metadata": meta("n.1"), "involvedObject": {"kind": "Node"}, "type": "Warning", "reason": "Boom",
          "eventTime": ago(10, micro=True), "reportingComponent": "sched", "reportingInstance": "sched-1"}
    assert row(ev, group="", kind="Event", now=NOW) == [
        "10s", "Warning", "Boom", "node", "", "sched, sched-1", "", "10s", 1, "n.1"]


def test_event_without_any_time() -> None:
    ev = {"metadata": meta("e"), "involvedObject": {"kind": "Pod", "name": "p"}}
    assert row(ev, group="", kind="Event", now=NOW)[0] == "<unknown>"


# ---------------------------------------------------------------------------------------------
# ConfigMaps, Deployments, ReplicaSets


def test_configmap_row_counts_data_and_binary_data() -> None:
    cm = {"metadata": meta("cfg", age=45), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}
    assert row(cm, group="", kind="ConfigMap", now=NOW) == ["cfg", 3, "45s"]
    assert row({"metadata": meta("e")}, group="", kind="ConfigMap", now=NOW)[1] == 0


def template(*pairs: tuple[str, str]) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": n, "image": i} for n, i in pairs]}}


def test_deployment_row() -> None:
    d = {"metadata": meta("web", age=7200),
         "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                  "template": template(("nginx", "nginx:1.27"), ("sidecar", "envoy:v1"))},
         "status": {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}
    assert row(d, group="apps", kind="Deployment", now=NOW) == [
        "web", "2/3", 3, 2, "120m", "nginx,sidecar", "nginx:1.27,envoy:v1", "app=web"]


@pytest.mark.parametrize(("spec", "ready", "selector"), [
    ({"replicas": 0, "selector": {"matchLabels": {"app": "web"}}}, "0/0", "app=web"),
    ({"selector": {"matchLabels": {"app": "web"}}}, "0/1", "app=web"),     # replicas defaults to 1
    ({"replicas": 2}, "0/2", ""),                                          # no selector
    ({"replicas": 2, "selector": {}}, "0/2", ""),
    ({"replicas": 2, "selector": {"matchExpressions": [{"key": "a", "operator": "Gt"}]}}, "0/2", "<invalid>"),
    ({"replicas": 2, "selector": {"matchLabels": {"app": "web"},
                                  "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe", "be"]}]}},
     "0/2", "app=web,tier in (be,fe)"),
])
def test_deployment_ready_and_selector(spec: dict, ready: str, selector: str) -> None:
    cells = row({"metadata": meta("d"), "spec": spec}, group="apps", kind="Deployment", now=NOW)
    assert (cells[1], cells[2], cells[3], cells[7]) == (ready, 0, 0, selector)
    assert cells[5:7] == ["", ""]


def test_replicaset_row() -> None:
    rs = {"metadata": meta("web-5d4f8", age=30),
          "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d4f8"}},
                   "template": template(("nginx", "nginx:1.27"))},
          "status": {"replicas": 3, "readyReplicas": 2}}
    assert row(rs, group="apps", kind="ReplicaSet", now=NOW) == [
        "web-5d4f8", 3, 3, 2, "30s", "nginx", "nginx:1.27", "app=web,pod-template-hash=5d4f8"]


def test_replicaset_empty_selector_prints_none() -> None:
    rs = {"metadata": meta("r"), "spec": {"replicas": 0, "selector": {}}, "status": {}}
    printed = row(rs, group="apps", kind="ReplicaSet", now=NOW)
    assert [*printed[1:4], printed[7]] == [0, 0, 0, "<none>"]


# ---------------------------------------------------------------------------------------------
# HorizontalPodAutoscalers


def cpu(target: int | None = 80, *, value: str | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {"type": "Utilization" if value is None else "AverageValue"}
    if target is not None and value is None:
        t["averageUtilization"] = target
    if value is not None:
        t["averageValue"] = value
    return {"type": "Resource", "resource": {"name": "cpu", "target": t}}


def pods_metric(target: str) -> dict[str, Any]:
    return {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue",
                                                                             "averageValue": target}}}


def hpa(metrics: list[dict] | None, current: list[dict] | None = None, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                         "minReplicas": 1, "maxReplicas": 10, **spec}
    if metrics is not None:
        s["metrics"] = metrics
    st: dict[str, Any] = {"currentReplicas": 2, "desiredReplicas": 2}
    if current is not None:
        st["currentMetrics"] = current
    return {"metadata": meta("web", age=90), "spec": s, "status": st}


def test_hpa_row() -> None:
    obj = hpa([cpu(80)], [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 30,
                                                                                       "averageValue": "150m"}}}])
    assert row(obj, group="autoscaling", kind="HorizontalPodAutoscaler", now=NOW) == [
        "web", "Deployment/web", "cpu: 30%/80%", "1", 10, 2, "90s"]


@pytest.mark.parametrize(("metrics", "current", "targets"), [
    (None, None, "<none>"),
    ([], None, "<none>"),
    ([cpu(80)], None, "cpu: <unknown>/80%"),
    ([cpu(None)], None, "cpu: <unknown>/<auto>"),
    ([cpu(value="500m")], [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "250m"}}}],
     "cpu: 250m/500m"),
    ([pods_metric("10")], [{"type": "Pods", "pods": {"metric": {"name": "qps"}, "current": {"averageValue": "30"}}}],
     "30/10"),
    ([pods_metric("10")], None, "<unknown>/10"),
    ([{"type": "External", "external": {"metric": {"name": "queue"},
                                         "target": {"type": "AverageValue", "averageValue": "5"}}}],
     [{"type": "External", "external": {"metric": {"name": "queue"}, "current": {"averageValue": "3"}}}],
     "3/5 (avg)"),
    ([{"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "100"}}}],
     [{"type": "External", "external": {"metric": {"name": "queue"}, "current": {"value": "42"}}}],
     "42/100"),
    ([{"type": "Object", "object": {"metric": {"name": "rps"}, "target": {"type": "Value", "value": "2k"}}}],
     None, "<unknown>/2k"),
    ([{"type": "ContainerResource", "containerResource": {"name": "memory", "container": "app",
                                                          "target": {"type": "Utilization",
                                                                     "averageUtilization": 60}}}],
     None, "memory: <unknown>/60%"),
    ([{"type": "Mystery"}], None, "<unknown type>"),
    ([cpu(80), pods_metric("10"), cpu(90)], None, "cpu: <unknown>/80%, <unknown>/10 + 1 more..."),
    ([cpu(80), pods_metric("10"), cpu(90), cpu(95)],
     [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 30}}}],
     "cpu: 30%/80%, <unknown>/10 + 2 more..."),
])
def test_hpa_targets(metrics: list[dict] | None, current: list[dict] | None, targets: str) -> None:
    cells = row(hpa(metrics, current), group="autoscaling", kind="HorizontalPodAutoscaler", now=NOW)
    assert cells[2] == targets


def test_hpa_without_min_replicas() -> None:
    obj = hpa([cpu(80)])
    del obj["spec"]["minReplicas"]
    assert row(obj, group="autoscaling", kind="HorizontalPodAutoscaler", now=NOW)[3] == "<unset>"


# ---------------------------------------------------------------------------------------------
# Leases and DRA kinds


def test_lease_row() -> None:
    lease = {"metadata": meta("n1", namespace="kube-node-lease"), "spec": {"holderIdentity": "n1"}}
    assert row(lease, group="coordination.k8s.io", kind="Lease", now=NOW) == ["n1", "n1", "5m"]
    assert row({"metadata": meta("free"), "spec": {}}, group="coordination.k8s.io", kind="Lease",
               now=NOW)[1] == ""


@pytest.mark.parametrize(("status", "deleted", "state"), [
    ({}, False, "pending"),
    ({"allocation": {"devices": {"results": []}}}, False, "allocated"),
    ({"allocation": {"devices": {}}, "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}, False,
     "allocated,reserved"),
    ({"allocation": {}, "reservedFor": []}, False, "allocated"),
    ({}, True, "deleted"),
    ({"allocation": {}}, True, "deleted,allocated"),
    ({"allocation": {}, "reservedFor": [{"name": "p"}]}, True, "deleted,allocated,reserved"),
])
def test_resource_claim_state(status: dict, deleted: bool, state: str) -> None:
    m = meta("claim", namespace="default")
    if deleted:
        m["deletionTimestamp"] = ago(1)
    claim = {"metadata": m, "spec": {"devices": {"requests": []}}, "status": status}
    assert row(claim, group="resource.k8s.io", kind="ResourceClaim", now=NOW) == ["claim", state, "5m"]


def test_resource_slice_row() -> None:
    s = {"metadata": meta("n1-gpu-abcde"),
         "spec": {"nodeName": "n1", "driver": "gpu.example.com", "pool": {"name": "n1", "generation": 1,
                                                                           "resourceSliceCount": 1}}}
    assert row(s, group="resource.k8s.io", kind="ResourceSlice", now=NOW) == [
        "n1-gpu-abcde", "n1", "gpu.example.com", "n1", "5m"]
    network = {"metadata": meta("net"), "spec": {"allNodes": True, "driver": "net.example.com",
                                                  "pool": {"name": "fabric"}}}
    assert row(network, group="resource.k8s.io", kind="ResourceSlice", now=NOW)[1:4] == [
        "", "net.example.com", "fabric"]


@pytest.mark.parametrize("kind", ["DeviceClass", "ResourceClaimTemplate", "DeviceTaintRule"])
def test_name_and_age_kinds(kind: str) -> None:
    obj = {"metadata": meta("thing", age=86400 * 3), "spec": {}}
    assert row(obj, group="resource.k8s.io", kind=kind, now=NOW) == ["thing", "3d"]


def test_unknown_kind_gets_name_and_age() -> None:
    obj = {"metadata": meta("w", age=5)}
    assert row(obj, group="sim.cplane.dev", kind="Widget", now=NOW) == ["w", "5s"]


# ---------------------------------------------------------------------------------------------
# The Table envelope


def test_table_shape_with_partial_object_metadata() -> None:
    p = pod(statuses=[running()], conditions=READY)
    t = table([p], group="", kind="Pod", now=NOW, resource_version="103")
    assert t["kind"] == "Table"
    assert t["apiVersion"] == "meta.k8s.io/v1"
    assert t["metadata"] == {"resourceVersion": "103"}
    assert [c["name"] for c in t["columnDefinitions"]][:5] == ["Name", "Ready", "Status", "Restarts", "Age"]
    assert t["rows"] == [{
        "cells": ["web", "1/1", "Running", "0", "5m", "<none>", "n1", "<none>", "<none>"],
        "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": p["metadata"]},
    }]


@pytest.mark.parametrize("include", ["", "Metadata"])
def test_include_metadata_is_the_default(include: str) -> None:
    cm = {"metadata": meta("c", namespace="ns", labels={"a": "b"}), "data": {}}
    obj = table([cm], group="", kind="ConfigMap", now=NOW, include_object=include)["rows"][0]["object"]
    assert obj["kind"] == "PartialObjectMetadata"
    assert obj["metadata"]["namespace"] == "ns"
    assert obj["metadata"]["labels"] == {"a": "b"}


def test_include_object_and_none() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("c"), "data": {"k": "v"}}
    full = table([cm], group="", kind="ConfigMap", now=NOW, include_object="Object")
    assert full["rows"][0]["object"] == cm
    bare = table([cm], group="", kind="ConfigMap", now=NOW, include_object="None")
    assert bare["rows"] == [{"cells": ["c", 1, "5m"]}]


def test_unknown_include_object_is_a_bad_request() -> None:
    with pytest.raises(BadRequest, match='unrecognized includeObject value: "Everything"'):
        table([], group="", kind="Pod", now=NOW, include_object="Everything")


def test_table_list_metadata_and_headers() -> None:
    t = table([], group="", kind="Pod", now=NOW, resource_version="9", continue_token="abc")
    assert t["metadata"] == {"resourceVersion": "9", "continue": "abc"}
    assert t["rows"] == []
    assert table([], group="", kind="Pod", now=NOW)["metadata"] == {}
    assert table([], group="", kind="Pod", now=NOW, headers=False)["columnDefinitions"] == []


def test_finished_pods_carry_a_completed_row_condition() -> None:
    done = pod("done", phase="Succeeded", statuses=[terminated(reason="Completed")])
    failed = pod("failed", phase="Failed", statuses=[terminated(exit_code=1, reason="Error")])
    live = pod("live", statuses=[running()])
    rows = table([done, failed, live], group="", kind="Pod", now=NOW)["rows"]
    assert [(c["type"], c["status"], c["reason"]) for c in rows[0]["conditions"]] == [
        ("Completed", "True", "Succeeded")]
    assert [(c["type"], c["status"], c["reason"]) for c in rows[1]["conditions"]] == [
        ("Completed", "True", "Failed")]
    assert "conditions" not in rows[2]


def test_rows_match_column_count_for_every_kind() -> None:
    samples = {
        ("", "Namespace"): {"metadata": meta("ns")},
        ("", "Node"): node(),
        ("", "Pod"): pod(statuses=[running()]),
        ("", "Event"): {"metadata": meta("e"), "involvedObject": {"kind": "Pod", "name": "p"}},
        ("", "ConfigMap"): {"metadata": meta("c")},
        ("apps", "Deployment"): {"metadata": meta("d"), "spec": {}},
        ("apps", "ReplicaSet"): {"metadata": meta("r"), "spec": {}},
        ("autoscaling", "HorizontalPodAutoscaler"): hpa(None),
        ("coordination.k8s.io", "Lease"): {"metadata": meta("l")},
        ("resource.k8s.io", "DeviceClass"): {"metadata": meta("dc")},
        ("resource.k8s.io", "ResourceClaim"): {"metadata": meta("rc")},
        ("resource.k8s.io", "ResourceClaimTemplate"): {"metadata": meta("rct")},
        ("resource.k8s.io", "ResourceSlice"): {"metadata": meta("rs")},
        ("resource.k8s.io", "DeviceTaintRule"): {"metadata": meta("dtr")},
    }
    for (group, kind), obj in samples.items():
        t = table([obj], group=group, kind=kind, now=NOW)
        assert len(t["rows"][0]["cells"]) == len(t["columnDefinitions"]), kind
        for cell in t["rows"][0]["cells"]:
            assert isinstance(cell, str | int), (kind, cell)


# ---------------------------------------------------------------------------------------------
# RowCache: rows of stored objects kept per key and revision


def _stored(obj: dict[str, Any], revision: int) -> bytes:
    obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(revision)}}
    return json.dumps(obj, separators=(",", ":")).encode()


def _pod_obj(name: str, *, restarts: int = 0, phase: str = "Running") -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "containerStatuses": [{
        "name": "app", "ready": True, "restartCount": restarts, "state": {"running": {}},
        **({"lastState": {"terminated": {"finishedAt": ago(90)}}} if restarts else {})}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta(name, managedFields=[{"manager": "m"}]),
            "spec": {"containers": [{"name": "app"}]}, "status": status}


def _via_cache(cache: RowCache, items: list[tuple[str, int, dict[str, Any]]], *, now: float,
               include_object: str = "Metadata") -> dict[str, Any]:
    rendered = cache.table([(("", "pods", "default", name), rev, _stored(obj, rev)) for name, rev, obj in items],
                           group="", kind="Pod", now=now, include_object=include_object, resource_version="9")
    return json.loads(msgspec.json.encode(rendered))


@pytest.mark.parametrize("include_object", ["Metadata", "", "Object", "None"])
def test_cached_rows_are_the_rows_table_renders(include_object: str) -> None:
    pods = [("a", 3, _pod_obj("a", restarts=2)), ("b", 4, _pod_obj("b", phase="Succeeded"))]
    expected = table([json.loads(_stored(obj, rev)) for _, rev, obj in pods], group="", kind="Pod", now=NOW,
                     include_object=include_object, resource_version="9")
    cache = RowCache()
    cold = _via_cache(cache, pods, now=NOW, include_object=include_object)
    warm = _via_cache(cache, pods, now=NOW, include_object=include_object)
    assert cold == warm == json.loads(json.dumps(expected))
    assert (cache.misses, cache.hits) == (2, 2)


def test_cached_rows_age_with_the_tables_time() -> None:
    cache = RowCache()
    pods = [("a", 3, _pod_obj("a", restarts=2))]
    first = _via_cache(cache, pods, now=NOW)["rows"][0]["cells"]
    later = _via_cache(cache, pods, now=NOW + 3600)["rows"][0]["cells"]
    assert (first[3], first[4]) == ("2 (90s ago)", "5m")  # RESTARTS, AGE
    assert (later[3], later[4]) == ("2 (61m ago)", "65m")
    assert cache.hits == 1


def test_a_new_revision_replaces_the_kept_row() -> None:
    cache = RowCache()
    _via_cache(cache, [("a", 3, _pod_obj("a"))], now=NOW)
    rows = _via_cache(cache, [("a", 5, _pod_obj("a", restarts=1))], now=NOW)["rows"]
    assert rows[0]["cells"][3] == "1 (90s ago)"
    assert rows[0]["object"]["metadata"]["resourceVersion"] == "5"
    assert (len(cache), cache.misses, cache.hits) == (1, 2, 0)


def test_the_cache_is_bounded_in_bytes() -> None:
    one = RowCache()
    _via_cache(one, [("p0", 1, _pod_obj("p0"))], now=NOW)
    entry = one.charged  # the names below have the same length: every entry costs the same
    assert entry > RowCache.ENTRY_BYTES
    cache = RowCache(max_bytes=3 * entry + entry // 2)
    _via_cache(cache, [(f"p{i}", i + 1, _pod_obj(f"p{i}")) for i in range(5)], now=NOW)
    assert (len(cache), cache.charged) == (3, 3 * entry)
    _via_cache(cache, [("p4", 5, _pod_obj("p4"))], now=NOW)
    assert cache.hits == 1  # the newest entries are the ones kept
    _via_cache(cache, [("p4", 6, _pod_obj("p4"))], now=NOW)  # a new revision replaces its row
    assert (len(cache), cache.charged) == (3, 3 * entry)


def test_a_list_one_row_larger_than_before_still_hits() -> None:
    cache = RowCache()
    _via_cache(cache, [(f"p{i}", i + 1, _pod_obj(f"p{i}")) for i in range(200)], now=NOW)
    _via_cache(cache, [(f"p{i}", i + 1, _pod_obj(f"p{i}")) for i in range(201)], now=NOW)
    assert (cache.hits, cache.misses) == (200, 201)


def test_bad_include_object_is_rejected_by_the_cache_too() -> None:
    with pytest.raises(BadRequest, match="unrecognized includeObject"):
        RowCache().table([], group="", kind="Pod", now=NOW, include_object="Everything")
