"""`cplane metrics`: write the sandbox objects the metrics APIs serve values from (issue #7).

    cplane metrics set external queue_depth 30 -n default [-l queue=orders]
    cplane metrics set object deployment.apps/web requests_per_second 120 -n default
    cplane metrics set load app=web --cpu 400m --memory 128Mi [--metric http_requests=12] -n default
    cplane metrics get external queue_depth -n default [-l queue=orders]

Each `set` creates or updates one `sim.cplane.dev/v1alpha1` object (ExternalMetric, ObjectMetric,
PodLoad), so every change is an event in the log. Names are derived from the metric (and its
labels) unless `--name` is given; setting the same series again updates the same object.
Only the standard library and aiohttp are imported, and only when a command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import sys
from typing import Any

from cp.cli import endpoint

SIM = "/apis/sim.cplane.dev/v1alpha1"
API_VERSION = "sim.cplane.dev/v1alpha1"


def object_name(*parts: str) -> str:
    """A DNS-1123 subdomain from free text (`queue_depth` -> `queue-depth`)."""
    text = "-".join(p for p in parts if p).lower()
    text = re.sub(r"[^a-z0-9.-]+", "-", text)
    text = re.sub(r"-{2,}", "-", text).strip("-.")
    return text[:253].strip("-.") or "metric"


def labels_suffix(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    text = ",".join(f"{k}={labels[k]}" for k in sorted(labels))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def parse_labels(text: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ValueError(f"labels must be key=value[,key=value]: {part!r}")
        out[key.strip()] = value.strip()
    return out


def selector_object(text: str) -> dict[str, Any]:
    """`app=web,tier in (a,b),!x` -> a metav1.LabelSelector."""
    from cp import errors, selectors

    try:
        sel = selectors.parse_label_selector(text)
    except errors.BadRequest as exc:
        raise CommandError(exc.message) from None
    names = {selectors.OP_IN: "In", selectors.OP_NOT_IN: "NotIn", selectors.OP_EXISTS: "Exists",
             selectors.OP_DOES_NOT_EXIST: "DoesNotExist"}
    match_labels: dict[str, str] = {}
    exprs: list[dict[str, Any]] = []
    for r in sel.requirements:
        if r.operator in (selectors.OP_EQUALS, selectors.OP_DOUBLE_EQUALS):
            match_labels[r.key] = r.values[0]
        elif r.operator == selectors.OP_NOT_EQUALS:
            exprs.append({"key": r.key, "operator": "NotIn", "values": list(r.values)})
        elif r.operator in names:
            e: dict[str, Any] = {"key": r.key, "operator": names[r.operator]}
            if r.values:
                e["values"] = sorted(r.values)
            exprs.append(e)
        else:
            raise ValueError(f"unsupported selector operator in {text!r}")
    out: dict[str, Any] = {}
    if match_labels:
        out["matchLabels"] = match_labels
    if exprs:
        out["matchExpressions"] = exprs
    return out


async def put_sim_object(http: Any, plural: str, kind: str, namespace: str, name: str,
                         spec: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Create the object, or replace its spec when it exists ("created" / "configured" /
    "unchanged"). `http` is an aiohttp ClientSession with the server as base URL."""
    path = f"{SIM}/namespaces/{namespace}/{plural}"
    for _attempt in range(5):
        async with http.get(f"{path}/{name}") as r:
            current = json.loads(await r.read())
            status = r.status
        if status == 404:
            body = {"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": name, "namespace": namespace},
                    "spec": spec}
            async with http.post(path, json=body, params={"fieldManager": "cplane-metrics"}) as r:
                out = json.loads(await r.read())
                if r.status == 409:
                    continue
                _raise_for(r.status, out)
                return "created", out
        _raise_for(status, current)
        if current.get("spec") == spec:
            return "unchanged", current
        current["spec"] = spec
        async with http.put(f"{path}/{name}", json=current, params={"fieldManager": "cplane-metrics"}) as r:
            out = json.loads(await r.read())
            if r.status == 409:
                continue
            _raise_for(r.status, out)
            return "configured", out
    raise RuntimeError("too many concurrent changes; try again")


class CommandError(Exception):
    pass


def _raise_for(status: int, body: dict[str, Any]) -> None:
    if status >= 400:
        raise CommandError(str(body.get("message") or f"HTTP {status}"))


async def set_external(http: Any, *, metric: str, value: str, namespace: str = "default",
                       labels: dict[str, str] | None = None, name: str | None = None) -> tuple[str, dict[str, Any]]:
    labels = labels or {}
    spec: dict[str, Any] = {"metricName": metric, "value": str(value)}
    if labels:
        spec["labels"] = labels
    obj_name = name or object_name(metric, labels_suffix(labels))
    return await put_sim_object(http, "externalmetrics", "ExternalMetric", namespace, obj_name, spec)


async def set_object(http: Any, *, target: str, metric: str, value: str, namespace: str = "default",
                     api_version: str | None = None, labels: dict[str, str] | None = None,
                     name: str | None = None) -> tuple[str, dict[str, Any]]:
    """`target` is KIND/NAME (`deployment.apps/web`, `Service/web`)."""
    kind_part, sep, obj = target.partition("/")
    if not sep or not obj:
        raise CommandError(f"the object must be KIND/NAME, got {target!r}")
    kind_name, _, group = kind_part.partition(".")
    kind, version = _kind_of(kind_name, group)
    labels = labels or {}
    spec: dict[str, Any] = {"describedObject": {"apiVersion": api_version or version, "kind": kind, "name": obj},
                            "metricName": metric, "value": str(value)}
    if labels:
        spec["labels"] = labels
    obj_name = name or object_name(kind.lower(), obj, metric, labels_suffix(labels))
    return await put_sim_object(http, "objectmetrics", "ObjectMetric", namespace, obj_name, spec)


def _kind_of(text: str, group: str) -> tuple[str, str]:
    """(Kind, apiVersion) from `deployment`, `deploy`, `Service`... (served kinds by name, plural
    or short name; others taken as the Kind itself, in the core group unless qualified)."""
    from cp import resources as res

    low = text.lower()
    for k in res.KINDS:
        if (not group or k.group == group) and low in (k.kind.lower(), k.plural, k.singular, *k.short_names):
            return k.kind, k.api_version
    kind = text[:1].upper() + text[1:]
    return kind, f"{group}/v1" if group else "v1"


async def set_load(http: Any, *, selector: str, namespace: str = "default", cpu: str | None = None,
                   memory: str | None = None, metrics: dict[str, str] | None = None,
                   name: str | None = None) -> tuple[str, dict[str, Any]]:
    spec: dict[str, Any] = {"selector": selector_object(selector)}
    if cpu is not None:
        spec["cpu"] = cpu
    if memory is not None:
        spec["memory"] = memory
    if metrics:
        spec["metrics"] = dict(metrics)
    obj_name = name or object_name(selector.replace("=", "-"))
    return await put_sim_object(http, "podloads", "PodLoad", namespace, obj_name, spec)


# ---------------------------------------------------------------------- argparse


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("metrics", help="set the values the metrics APIs serve (external, object, pod load)",
                       description="Write the sim.cplane.dev objects behind metrics.k8s.io, "
                                   "custom.metrics.k8s.io and external.metrics.k8s.io (docs/controllers.md, HPA).")
    msub = p.add_subparsers(dest="metrics_command", metavar="ACTION", required=True)
    set_p = msub.add_parser("set", help="create or update a metric source")
    ssub = set_p.add_subparsers(dest="source", metavar="SOURCE", required=True)
    ext = ssub.add_parser("external", help="an external metric series: METRIC VALUE")
    ext.add_argument("metric")
    ext.add_argument("value")
    ext.add_argument("-l", "--labels", default="", help="series labels, key=value[,key=value]")
    ext.add_argument("--name", help="object name (default: from the metric and labels)")
    endpoint.add_args(ext, namespace=True)
    obj = ssub.add_parser("object", help="a metric of one object: KIND/NAME METRIC VALUE")
    obj.add_argument("target", metavar="KIND/NAME")
    obj.add_argument("metric")
    obj.add_argument("value")
    obj.add_argument("--api-version", help="apiVersion of the described object (default: from the kind)")
    obj.add_argument("-l", "--labels", default="", help="series labels, key=value[,key=value]")
    obj.add_argument("--name", help="object name (default: from the kind, name and metric)")
    endpoint.add_args(obj, namespace=True)
    load = ssub.add_parser("load", help="usage of the pods a label selector selects: SELECTOR")
    load.add_argument("selector", help="label selector, e.g. app=web")
    load.add_argument("--cpu", help="CPU per pod (e.g. 400m), shared by its containers in proportion to requests")
    load.add_argument("--memory", help="memory per pod (e.g. 128Mi)")
    load.add_argument("--metric", action="append", default=[], metavar="NAME=VALUE",
                      help="a per-pod custom metric (Pods metrics); repeatable")
    load.add_argument("--name", help="object name (default: from the selector)")
    endpoint.add_args(load, namespace=True)
    get_p = msub.add_parser("get", help="read a metric through its API")
    gsub = get_p.add_subparsers(dest="source", metavar="SOURCE", required=True)
    gext = gsub.add_parser("external", help="the series of an external metric")
    gext.add_argument("metric")
    gext.add_argument("-l", "--selector", default="", help="label selector on the series labels")
    endpoint.add_args(gext, namespace=True)
    p.set_defaults(func=run)


async def _run(args: argparse.Namespace) -> int:
    import aiohttp

    url, headers = endpoint.url_and_headers(args)
    async with aiohttp.ClientSession(base_url=url, headers=headers) as http:
        if args.metrics_command == "get":
            params = {"labelSelector": args.selector} if args.selector else {}
            async with http.get(f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{args.namespace}/{args.metric}",
                                params=params) as r:
                body = json.loads(await r.read())
                _raise_for(r.status, body)
            items = body.get("items") or []
            if not items:
                print(f"no series of external metric {args.metric} in namespace {args.namespace}", file=sys.stderr)
                return 1
            for item in items:
                labels = ",".join(f"{k}={v}" for k, v in sorted((item.get("metricLabels") or {}).items()))
                print(f"{item.get('metricName')}{{{labels}}} {item.get('value')} {item.get('timestamp')}")
            return 0
        if args.source == "external":
            verb, obj = await set_external(http, metric=args.metric, value=args.value, namespace=args.namespace,
                                           labels=parse_labels(args.labels), name=args.name)
            print(f"externalmetric.sim.cplane.dev/{obj['metadata']['name']} {verb}")
        elif args.source == "object":
            verb, obj = await set_object(http, target=args.target, metric=args.metric, value=args.value,
                                         namespace=args.namespace, api_version=args.api_version,
                                         labels=parse_labels(args.labels), name=args.name)
            print(f"objectmetric.sim.cplane.dev/{obj['metadata']['name']} {verb}")
        else:
            metrics = dict(parse_labels(",".join(args.metric)))
            verb, obj = await set_load(http, selector=args.selector, namespace=args.namespace, cpu=args.cpu,
                                       memory=args.memory, metrics=metrics, name=args.name)
            print(f"podload.sim.cplane.dev/{obj['metadata']['name']} {verb}")
    return 0


def run(args: argparse.Namespace) -> int:
    import aiohttp

    try:
        return asyncio.run(_run(args))
    except (CommandError, ValueError, OSError, aiohttp.ClientError) as exc:
        print(f"cplane metrics: {exc}", file=sys.stderr)
        return 1
