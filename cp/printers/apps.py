"""Printers of apps/v1: Deployments, ReplicaSets, StatefulSets, DaemonSets and ControllerRevisions
(upstream's `printDeployment`, `printReplicaSet`, ...). Pure; no I/O."""

from __future__ import annotations

from typing import Any

from cp.printers.common import (
    AGE_COL,
    CONTAINERS_COL,
    IMAGES_COL,
    NAME_COL,
    E,
    Obj,
    Printer,
    col,
    containers_images,
    format_labels,
    replicas_row,
    selector_format,
    selector_text,
    since,
)

__all__ = ["PRINTERS"]



def _selector_col(what: str) -> dict[str, Any]:
    return col("Selector", "string", f"Label selector of the pods this {what} manages.", priority=1)


def _template_spec(spec: Obj) -> Obj:
    return (spec.get("template") or E).get("spec") or E


def _deployment_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    status = o.get("status") or E
    replicas = spec.get("replicas")
    names, images = containers_images(_template_spec(spec))
    return [
        meta.get("name", ""),
        f"{status.get('readyReplicas') or 0}/{1 if replicas is None else replicas}",
        status.get("updatedReplicas") or 0,
        status.get("availableReplicas") or 0,
        since(meta.get("creationTimestamp")),
        names,
        images,
        selector_text(spec.get("selector")),
    ]


def _replicaset_row(o: Obj) -> list[Any]:
    return replicas_row(o, selector=selector_format((o.get("spec") or E).get("selector")))


def _statefulset_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    replicas = spec.get("replicas")
    names, images = containers_images(_template_spec(spec))
    return [
        meta.get("name", ""),
        f"{(o.get('status') or E).get('readyReplicas') or 0}/{1 if replicas is None else replicas}",
        since(meta.get("creationTimestamp")),
        names,
        images,
    ]


def _daemonset_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    status = o.get("status") or E
    pod_spec = _template_spec(spec)
    names, images = containers_images(pod_spec)
    return [
        meta.get("name", ""),
        status.get("desiredNumberScheduled") or 0,
        status.get("currentNumberScheduled") or 0,
        status.get("numberReady") or 0,
        status.get("updatedNumberScheduled") or 0,
        status.get("numberAvailable") or 0,
        format_labels(pod_spec.get("nodeSelector")),
        since(meta.get("creationTimestamp")),
        names,
        images,
        selector_format(spec.get("selector")),
    ]


def _controller_text(meta: Obj) -> str:
    """The controlling owner as `kind.group/name` in lower case (`kind/name` for the core group)."""
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller"):
            api_version = ref.get("apiVersion") or ""
            group = api_version.split("/", 1)[0] if "/" in api_version else ""
            kind = ref.get("kind") or ""
            qualified = f"{kind}.{group}" if group else kind
            return f"{qualified.lower()}/{ref.get('name') or ''}" if qualified else ref.get("name") or ""
    return "<none>"


def _controller_revision_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), _controller_text(meta), o.get("revision") or 0,
            since(meta.get("creationTimestamp"))]


PRINTERS: dict[str, Printer] = {
    "Deployment": Printer([
        NAME_COL,
        col("Ready", "string", "Ready pods out of desired replicas."),
        col("Up-to-date", "string", "Pods running the current pod template."),
        col("Available", "string", "Pods available for at least minReadySeconds."),
        AGE_COL,
        CONTAINERS_COL,
        IMAGES_COL,
        _selector_col("deployment"),
    ], _deployment_row),
    "ReplicaSet": Printer([
        NAME_COL,
        col("Desired", "integer", "Desired number of replicas."),
        col("Current", "integer", "Most recently observed number of replicas."),
        col("Ready", "integer", "Number of ready replicas."),
        AGE_COL,
        CONTAINERS_COL,
        IMAGES_COL,
        _selector_col("replica set"),
    ], _replicaset_row),
    "StatefulSet": Printer([
        NAME_COL,
        col("Ready", "string", "Ready pods out of desired replicas."),
        AGE_COL,
        CONTAINERS_COL,
        IMAGES_COL,
    ], _statefulset_row),
    "DaemonSet": Printer([
        NAME_COL,
        col("Desired", "integer", "Nodes that should run the daemon pod."),
        col("Current", "integer", "Nodes running at least one daemon pod."),
        col("Ready", "integer", "Nodes whose daemon pod is ready."),
        col("Up-to-date", "integer", "Nodes running the current pod template."),
        col("Available", "integer", "Nodes whose daemon pod is available."),
        col("Node Selector", "string", "Node selector of the pod template."),
        AGE_COL,
        CONTAINERS_COL,
        IMAGES_COL,
        _selector_col("daemon set"),
    ], _daemonset_row),
    "ControllerRevision": Printer([
        NAME_COL,
        col("Controller", "string", "The controlling owner, as kind.group/name."),
        col("Revision", "string", "Revision number of the state."),
        AGE_COL,
    ], _controller_revision_row),
}
