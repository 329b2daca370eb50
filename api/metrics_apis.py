"""The metrics APIs, as read-only views computed from the store (issue #7):

- `metrics.k8s.io/v1beta1` — PodMetrics and NodeMetrics (what metrics-server serves; `kubectl top`
  and the HPA's Resource / ContainerResource metrics read it);
- `custom.metrics.k8s.io/v1beta2` — MetricValueList for one object, for pods by label selector, and
  for a namespace (the HPA's Object and Pods metrics);
- `external.metrics.k8s.io/v1beta1` — ExternalMetricValueList (the HPA's External metrics).

Paths and response shapes are upstream's (`k8s.io/metrics`); the three groups appear in legacy
and aggregated discovery next to the served kinds. Nothing here is stored: every value comes from
objects of the sandbox group `sim.cplane.dev/v1alpha1`, so each metric change is an event in the
log and a replay reproduces what the HPA saw.

**The usage model.** Only pods that run report: `status.phase: Running`, bound to a Node whose
`Ready` condition is True (the kubelet metrics-server would scrape). A pod's containers are
`spec.containers` plus restartable init containers (sidecars). For each container and each of
`cpu` and `memory`:

1. a `PodLoad` in the pod's namespace whose `spec.selector` selects the pod (the first by name
   when several do) decides: `spec.containers[{name, cpu, memory}]` gives one container's usage;
   `spec.cpu` / `spec.memory` give the usage of the pod's *other* containers together, shared in
   proportion to their requests (evenly when none has a request);
2. otherwise the container uses exactly its request (0 without one).

A Node's usage is the sum over the pods that report on it. Samples carry the current (server)
clock as `timestamp` and a 15 s `window`.

**Custom metrics.** An `ObjectMetric` gives one value for one object (`spec.describedObject`,
`spec.metricName`, `spec.value`, optional series `spec.labels` matched by `metricLabelSelector`).
A Pods metric of a pod is an ObjectMetric describing that Pod, else `spec.metrics[name]` of the
PodLoad that selects it. A namespace metric is an ObjectMetric describing the Namespace.
**External metrics.** One `ExternalMetric` is one series: `spec.metricName` (default
`metadata.name`), `spec.labels`, `spec.value`; a query returns every series of the metric in the
namespace whose labels match `labelSelector`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from aiohttp import web

from api import codec, discovery
from api import state as st
from api import store as stores
from cp import clock as clocks
from cp import errors, objects, quantity, selectors
from cp import resources as res
from cp import validation as v
from cp.errors import Cause
from cp.metrics import (  # noqa: F401  (also this module's names, as before)
    CUSTOM_GROUP,
    CUSTOM_VERSION,
    EXTERNAL_GROUP,
    EXTERNAL_VERSION,
    METRICS_GROUP,
    METRICS_VERSION,
    RESOURCES,
    WINDOW_SECONDS,
    container_usage,
    cpu_quantity,
    external_metric_name,
    guess_plural,
    load_for,
    memory_quantity,
    milli,
    node_metrics,
    node_reports,
    pod_custom_value,
    pod_metrics,
    pod_reports,
    resource_for,
    running_containers,
    selector_object,
    series_labels,
    value_quantity,
)

EXTERNAL_METRICS = res.lookup(res.SIM_GROUP, res.SIM_VERSION, "externalmetrics")
OBJECT_METRICS = res.lookup(res.SIM_GROUP, res.SIM_VERSION, "objectmetrics")
POD_LOADS = res.lookup(res.SIM_GROUP, res.SIM_VERSION, "podloads")
assert EXTERNAL_METRICS and OBJECT_METRICS and POD_LOADS

_decode = codec.decoder.decode
_encode = codec.encoder.encode

Obj = Mapping[str, Any]


# ---------------------------------------------------------------------- helpers


def _d(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _name(obj: Obj) -> str:
    return str(objects.meta_of(obj).get("name") or "")




class Snapshot:
    """The objects one response is computed from, all read at one revision."""

    def __init__(self, store: stores.Store) -> None:
        self.store = store
        self.revision: int | None = None

    async def objects(self, group: str, plural: str, namespace: str | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        start: tuple[str, str] | None = None
        while True:
            result = await self.store.log.list_objects(group=group, resource=plural, namespace=namespace,
                                                       revision=self.revision, start_after=start, limit=1000)
            if self.revision is None:
                self.revision = result.revision
            out.extend(dict(_decode(ev.object)) for ev in result.events)
            if not result.more or not result.events:
                return out
            start = (result.events[-1].namespace, result.events[-1].name)

    async def reporting_nodes(self) -> list[dict[str, Any]]:
        return [n for n in await self.objects("", "nodes", None) if node_reports(n)]


def _now(request: web.Request) -> float:
    return request.app[st.CLOCK].now()


def _store(request: web.Request) -> stores.Store:
    return request.app[st.STORE]


def _json(body: Any) -> web.Response:
    return codec.json_response(_encode(body))


def _only_get(request: web.Request) -> None:
    if request.method not in ("GET", "HEAD"):
        raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")


def _not_found() -> errors.NotFound:
    return errors.NotFound("the server could not find the requested resource")


def _label_selector(request: web.Request, key: str = "labelSelector") -> selectors.LabelSelector:
    return selectors.parse_label_selector(request.query.get(key, ""))


# ---------------------------------------------------------------------- discovery


def _group_entry(group: str, version: str) -> dict[str, Any]:
    gv = {"groupVersion": f"{group}/{version}", "version": version}
    return {"name": group, "versions": [gv], "preferredVersion": gv}


METRICS_RESOURCES = (
    {"name": "nodes", "singularName": "", "namespaced": False, "kind": "NodeMetrics", "verbs": ["get", "list"]},
    {"name": "pods", "singularName": "", "namespaced": True, "kind": "PodMetrics", "verbs": ["get", "list"]},
)


async def custom_resources(store: stores.Store) -> list[dict[str, Any]]:
    """`<resource>/<metric>` for every metric an ObjectMetric or a PodLoad provides."""
    snap = Snapshot(store)
    names: dict[str, bool] = {}
    for om in await snap.objects(res.SIM_GROUP, "objectmetrics", None):
        spec = _d(om.get("spec"))
        ref = _d(spec.get("describedObject"))
        kind, metric = str(ref.get("kind") or ""), str(spec.get("metricName") or "")
        if not kind or not metric:
            continue
        if kind == "Namespace" and "/" not in str(ref.get("apiVersion") or "v1"):
            names[f"namespaces/{metric}"] = False
        else:
            names[f"{resource_for(str(ref.get('apiVersion') or ''), kind)}/{metric}"] = True
    for load in await snap.objects(res.SIM_GROUP, "podloads", None):
        for metric in _d(_d(load.get("spec")).get("metrics")):
            names[f"pods/{metric}"] = True
    return [{"name": n, "singularName": "", "namespaced": names[n], "kind": "MetricValueList", "verbs": ["get"]}
            for n in sorted(names)]


async def external_resources(store: stores.Store) -> list[dict[str, Any]]:
    snap = Snapshot(store)
    metrics = sorted({external_metric_name(o) for o in await snap.objects(res.SIM_GROUP, "externalmetrics", None)})
    return [{"name": m, "singularName": "", "namespaced": True, "kind": "ExternalMetricValueList", "verbs": ["get"]}
            for m in metrics]


def _aggregated(group: str, version: str, resources: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": group, "creationTimestamp": None},
        "versions": [{
            "version": version,
            "resources": [{
                "resource": r["name"],
                "responseKind": {"group": group, "version": version, "kind": r["kind"]},
                "scope": "Namespaced" if r["namespaced"] else "Cluster",
                "singularResource": r["singularName"] or str(r["name"]).split("/")[0].rstrip("s"),
                "verbs": list(r["verbs"]),
            } for r in resources],
            "freshness": "Current",
        }],
    }


async def apis_root(request: web.Request) -> web.StreamResponse:
    """GET /apis: the served groups (legacy APIGroupList or aggregated) plus the metrics groups."""
    store = _store(request)
    if discovery.wants_aggregated(request.headers.get("Accept", "")):
        doc = _decode(discovery.aggregated(request.app[st.STORE].registry, False))
        doc["items"] = [
            *(doc.get("items") or []),
            _aggregated(METRICS_GROUP, METRICS_VERSION, METRICS_RESOURCES),
            _aggregated(CUSTOM_GROUP, CUSTOM_VERSION, await custom_resources(store)),
            _aggregated(EXTERNAL_GROUP, EXTERNAL_VERSION, await external_resources(store)),
        ]
        return web.Response(body=_encode(doc), headers={"Content-Type": discovery.AGGREGATED_CT, "Vary": "Accept"})
    doc = _decode(discovery.api_group_list(request.app[st.STORE].registry))
    doc["groups"] = [*(doc.get("groups") or []), _group_entry(METRICS_GROUP, METRICS_VERSION),
                     _group_entry(CUSTOM_GROUP, CUSTOM_VERSION), _group_entry(EXTERNAL_GROUP, EXTERNAL_VERSION)]
    return _json(doc)


def _api_group(group: str, version: str) -> dict[str, Any]:
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, version)}


def _resource_list(group: str, version: str, resources: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}",
            "resources": [dict(r) for r in resources]}


def _segments(request: web.Request) -> list[str]:
    return [s for s in request.match_info.get("tail", "").split("/") if s]


# ---------------------------------------------------------------------- metrics.k8s.io




async def handle_metrics(request: web.Request) -> web.StreamResponse:
    _only_get(request)
    seg = _segments(request)
    if not seg:
        return _json(_api_group(METRICS_GROUP, METRICS_VERSION))
    if seg[0] != METRICS_VERSION:
        raise _not_found()
    seg = seg[1:]
    if not seg:
        return _json(_resource_list(METRICS_GROUP, METRICS_VERSION, METRICS_RESOURCES))
    namespace: str | None = None
    if seg[0] == "namespaces" and len(seg) >= 3:
        namespace, seg = seg[1], seg[2:]
    if seg[0] not in ("pods", "nodes") or len(seg) > 2 or (seg[0] == "nodes" and namespace is not None):
        raise _not_found()
    name = seg[1] if len(seg) == 2 else ""
    if seg[0] == "pods" and name and namespace is None:
        raise _not_found()
    now = _now(request)
    label = _label_selector(request)
    field = selectors.parse_field_selector(request.query.get("fieldSelector", ""), group="", resource=seg[0])
    snap = Snapshot(_store(request))
    nodes = await snap.reporting_nodes()
    node_names = {_name(n) for n in nodes}
    if seg[0] == "nodes":
        pods = [p for p in await snap.objects("", "pods", None) if pod_reports(p, node_names)]
        loads = await snap.objects(res.SIM_GROUP, "podloads", None)
        by_node: dict[str, list[dict[str, Any]]] = {}
        for p in pods:
            by_node.setdefault(str(_d(p.get("spec")).get("nodeName")), []).append(p)
        items = [node_metrics(n, by_node.get(_name(n), []), loads, now) for n in nodes
                 if (not name or _name(n) == name) and label.matches(objects.labels_of(n)) and field.matches(n)]
        if name:
            if not items:
                raise errors.NotFound.of(group=METRICS_GROUP, plural="nodes", name=name)
            return _json({"kind": "NodeMetrics", "apiVersion": f"{METRICS_GROUP}/{METRICS_VERSION}", **items[0]})
        return _json({"kind": "NodeMetricsList", "apiVersion": f"{METRICS_GROUP}/{METRICS_VERSION}",
                      "metadata": {}, "items": items})
    pods = [p for p in await snap.objects("", "pods", namespace) if pod_reports(p, node_names)]
    loads = await snap.objects(res.SIM_GROUP, "podloads", namespace)
    items = [pod_metrics(p, load_for(p, loads), now) for p in pods
             if (not name or _name(p) == name) and label.matches(objects.labels_of(p)) and field.matches(p)]
    if name:
        if not items:  # metrics-server names the pod namespace/name here
            raise errors.NotFound.of(group=METRICS_GROUP, plural="pods", name=f"{namespace}/{name}")
        return _json({"kind": "PodMetrics", "apiVersion": f"{METRICS_GROUP}/{METRICS_VERSION}", **items[0]})
    return _json({"kind": "PodMetricsList", "apiVersion": f"{METRICS_GROUP}/{METRICS_VERSION}",
                  "metadata": {}, "items": items})


# ---------------------------------------------------------------------- custom.metrics.k8s.io


def _metric_value(*, described: dict[str, Any], metric: str, metric_selector: selectors.LabelSelector,
                  value: str, now: float) -> dict[str, Any]:
    ident: dict[str, Any] = {"name": metric}
    sel = selector_object(metric_selector)
    if sel is not None:
        ident["selector"] = sel
    return {"describedObject": described, "metric": ident, "timestamp": clocks.rfc3339(now),
            "value": value_quantity(value)}


def _described(api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any]:
    out = {"kind": kind, "namespace": namespace, "name": name, "apiVersion": api_version}
    if not namespace:
        out.pop("namespace")
    return out


def _object_metric_matches(om: Obj, *, resource: str, name: str | None, metric: str,
                           metric_selector: selectors.LabelSelector) -> bool:
    spec = _d(om.get("spec"))
    ref = _d(spec.get("describedObject"))
    if str(spec.get("metricName") or "") != metric or not metric_selector.matches(series_labels(om)):
        return False
    if name is not None and str(ref.get("name") or "") != name:
        return False
    return resource == resource_for(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))


async def handle_custom(request: web.Request) -> web.StreamResponse:
    _only_get(request)
    seg = _segments(request)
    if not seg:
        return _json(_api_group(CUSTOM_GROUP, CUSTOM_VERSION))
    if seg[0] != CUSTOM_VERSION:
        raise _not_found()
    seg = seg[1:]
    store = _store(request)
    if not seg:
        return _json(_resource_list(CUSTOM_GROUP, CUSTOM_VERSION, await custom_resources(store)))
    now = _now(request)
    metric_selector = _label_selector(request, "metricLabelSelector")
    items: list[dict[str, Any]] = []
    snap = Snapshot(store)
    gv = f"{CUSTOM_GROUP}/{CUSTOM_VERSION}"
    if seg[0] == "namespaces" and len(seg) == 4 and seg[2] == "metrics":
        # A metric of the namespace itself.
        ns, metric = seg[1], seg[3]
        for om in await snap.objects(res.SIM_GROUP, "objectmetrics", ns):
            ref = _d(_d(om.get("spec")).get("describedObject"))
            if ref.get("kind") == "Namespace" and str(ref.get("name") or ns) == ns and \
                    _object_metric_matches(om, resource="namespaces", name=None, metric=metric,
                                           metric_selector=metric_selector):
                items.append(_metric_value(described=_described("v1", "Namespace", "", ns), metric=metric,
                                           metric_selector=metric_selector, value=_d(om.get("spec"))["value"],
                                           now=now))
        if not items:
            raise errors.NotFound(f"the server could not find the metric {metric} for namespaces {ns}",
                                  details={"name": ns, "group": CUSTOM_GROUP, "kind": "namespaces"})
        return _json({"kind": "MetricValueList", "apiVersion": gv, "metadata": {}, "items": items[:1]})
    if seg[0] != "namespaces" or len(seg) != 5:
        raise _not_found()  # cluster-scoped objects have no metrics here
    ns, resource, name, metric = seg[1], seg[2], seg[3], seg[4]
    if resource == "pods" and name == "*":
        label = _label_selector(request)
        node_names = {_name(n) for n in await snap.reporting_nodes()}
        pods = [p for p in await snap.objects("", "pods", ns)
                if pod_reports(p, node_names) and label.matches(objects.labels_of(p))]
        oms = await snap.objects(res.SIM_GROUP, "objectmetrics", ns)
        loads = await snap.objects(res.SIM_GROUP, "podloads", ns)
        for pod in pods:
            value: str | None = None
            for om in oms:
                if _object_metric_matches(om, resource="pods", name=_name(pod), metric=metric,
                                          metric_selector=metric_selector):
                    value = str(_d(om.get("spec"))["value"])
                    break
            if value is None and metric_selector.matches({}):
                value = pod_custom_value(pod, metric, loads)
            if value is not None:
                items.append(_metric_value(described=_described("v1", "Pod", ns, _name(pod)), metric=metric,
                                           metric_selector=metric_selector, value=value, now=now))
        return _json({"kind": "MetricValueList", "apiVersion": gv, "metadata": {}, "items": items})
    oms = await snap.objects(res.SIM_GROUP, "objectmetrics", ns)
    selected_names: set[str] | None = None
    if name == "*":
        selected_names = await _names_by_label(snap, resource, ns, _label_selector(request))
    for om in oms:
        ref = _d(_d(om.get("spec")).get("describedObject"))
        obj_name = str(ref.get("name") or "")
        if not _object_metric_matches(om, resource=resource, name=None if name == "*" else name, metric=metric,
                                      metric_selector=metric_selector):
            continue
        if selected_names is not None and obj_name not in selected_names:
            continue
        items.append(_metric_value(described=_described(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""),
                                                        ns, obj_name),
                                   metric=metric, metric_selector=metric_selector,
                                   value=str(_d(om.get("spec"))["value"]), now=now))
    if name != "*" and not items:
        raise errors.NotFound(f"the server could not find the metric {metric} for {resource} {name}",
                              details={"name": name, "group": CUSTOM_GROUP, "kind": resource})
    return _json({"kind": "MetricValueList", "apiVersion": gv, "metadata": {}, "items": items})


async def _names_by_label(snap: Snapshot, resource: str, namespace: str,
                          label: selectors.LabelSelector) -> set[str] | None:
    """Names of the served objects of `resource` matching `label` (None: not a served kind, so no
    filtering by labels is possible)."""
    plural, _, group = resource.partition(".")
    kind = res.by_group_resource(group, plural)
    if kind is None:
        return None if label.empty else set()
    return {_name(o) for o in await snap.objects(kind.group, kind.plural, namespace if kind.namespaced else None)
            if label.matches(objects.labels_of(o))}


# ---------------------------------------------------------------------- external.metrics.k8s.io


async def handle_external(request: web.Request) -> web.StreamResponse:
    _only_get(request)
    seg = _segments(request)
    if not seg:
        return _json(_api_group(EXTERNAL_GROUP, EXTERNAL_VERSION))
    if seg[0] != EXTERNAL_VERSION:
        raise _not_found()
    seg = seg[1:]
    store = _store(request)
    if not seg:
        return _json(_resource_list(EXTERNAL_GROUP, EXTERNAL_VERSION, await external_resources(store)))
    if len(seg) != 3 or seg[0] != "namespaces":
        raise _not_found()
    ns, metric = seg[1], seg[2]
    label = _label_selector(request)
    now = _now(request)
    items = []
    for obj in await Snapshot(store).objects(res.SIM_GROUP, "externalmetrics", ns):
        if external_metric_name(obj) != metric:
            continue
        labels = series_labels(obj)
        if not label.matches(labels):
            continue
        items.append({"metricName": metric, "metricLabels": labels, "timestamp": clocks.rfc3339(now),
                      "value": value_quantity(_d(obj.get("spec"))["value"])})
    return _json({"kind": "ExternalMetricValueList", "apiVersion": f"{EXTERNAL_GROUP}/{EXTERNAL_VERSION}",
                  "metadata": {}, "items": items})


# ---------------------------------------------------------------------- routes


def routes() -> list[web.RouteDef]:
    """Registered by `api.app.make_app` ahead of the generic `/apis/...` handler."""
    out = [web.get("/apis", apis_root), web.get("/apis/", apis_root)]
    for group, handler in ((METRICS_GROUP, handle_metrics), (CUSTOM_GROUP, handle_custom),
                           (EXTERNAL_GROUP, handle_external)):
        out.append(web.route("*", f"/apis/{group}", handler))
        out.append(web.route("*", f"/apis/{group}/{{tail:.*}}", handler))
    return out


# ---------------------------------------------------------------------- validation of the sim kinds


def _check_quantity(value: Any, path: str, errs: list[Cause], *, required: bool, nonnegative: bool = False) -> None:
    if value is None:
        if required:
            errs.append(Cause("Required", path, "a quantity (e.g. 30, 250m, 64Mi)"))
        return
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        errs.append(Cause("Invalid", path, quantity.FORMAT_ERROR, str(value)))
        return
    try:
        parsed = quantity.parse(value)
    except quantity.QuantityError as exc:
        errs.append(Cause("Invalid", path, str(exc), str(value)))
        return
    if nonnegative and parsed < 0:
        errs.append(Cause("Invalid", path, "must be greater than or equal to 0", str(value)))


def _check_metric_name(value: Any, path: str, errs: list[Cause], *, required: bool = True) -> None:
    if not value:
        if required:
            errs.append(Cause("Required", path, "a metric name"))
        return
    if not isinstance(value, str):
        errs.append(Cause("Invalid", path, "must be a string", str(value)))
        return
    for msg in v.validate_path_segment_name(value, False):
        errs.append(Cause("Invalid", path, msg, value))


def _check_labels(value: Any, path: str, errs: list[Cause]) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping):
        errs.append(Cause("Invalid", path, "must be a map of label names to values", str(value)))
        return
    v.validate_labels(dict(value), path, errs)


def _external_spec(spec: Mapping[str, Any], errs: list[Cause]) -> None:
    _check_metric_name(spec.get("metricName"), "spec.metricName", errs, required=False)
    _check_labels(spec.get("labels"), "spec.labels", errs)
    _check_quantity(spec.get("value"), "spec.value", errs, required=True)


def _object_spec(spec: Mapping[str, Any], errs: list[Cause]) -> None:
    ref = spec.get("describedObject")
    if not isinstance(ref, Mapping):
        errs.append(Cause("Required", "spec.describedObject",
                          "the object the metric describes (apiVersion, kind, name)"))
    else:
        for key in ("kind", "name"):
            if not ref.get(key):
                errs.append(Cause("Required", f"spec.describedObject.{key}", ""))
    _check_metric_name(spec.get("metricName"), "spec.metricName", errs)
    _check_labels(spec.get("labels"), "spec.labels", errs)
    _check_quantity(spec.get("value"), "spec.value", errs, required=True)


def _load_spec(spec: Mapping[str, Any], errs: list[Cause]) -> None:
    sel = spec.get("selector")
    if not isinstance(sel, Mapping):
        errs.append(Cause("Required", "spec.selector", "a label selector for the pods this load applies to"))
    else:
        v.validate_label_selector(dict(sel), "spec.selector", errs)
    for r in RESOURCES:
        _check_quantity(spec.get(r), f"spec.{r}", errs, required=False, nonnegative=True)
    containers = spec.get("containers")
    if containers is not None:
        if not isinstance(containers, list):
            errs.append(Cause("Invalid", "spec.containers", "must be a list of {name, cpu, memory}", str(containers)))
        else:
            for i, c in enumerate(containers):
                c = _d(c)
                if not c.get("name"):
                    errs.append(Cause("Required", f"spec.containers[{i}].name", ""))
                for r in RESOURCES:
                    _check_quantity(c.get(r), f"spec.containers[{i}].{r}", errs, required=False, nonnegative=True)
    metrics = spec.get("metrics")
    if metrics is not None:
        if not isinstance(metrics, Mapping):
            errs.append(Cause("Invalid", "spec.metrics", "must be a map of metric names to quantities", str(metrics)))
        else:
            for k, val in metrics.items():
                _check_metric_name(k, f"spec.metrics[{k}]", errs)
                _check_quantity(val, f"spec.metrics[{k}]", errs, required=True)


def _rules(check_spec: Any) -> Any:
    def create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
        v.validate_object_meta(meta, errs, namespaced=namespaced, name_fn=v.name_is_dns_subdomain)
        check_spec(_d(obj.get("spec")), errs)

    def update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
        check_spec(_d(new.get("spec")), errs)

    return v.Rules(create, update)


v.register(res.SIM_GROUP, "ExternalMetric", _rules(_external_spec))
v.register(res.SIM_GROUP, "ObjectMetric", _rules(_object_spec))
v.register(res.SIM_GROUP, "PodLoad", _rules(_load_spec))
