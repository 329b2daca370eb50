"""Printers of the API server's own configuration: FlowSchemas and PriorityLevelConfigurations
(flowcontrol.apiserver.k8s.io), APIServices (the aggregator's printer) and StorageVersionMigrations.
Pure; no I/O."""

from __future__ import annotations

from typing import Any

from cp.printers.common import AGE_COL, NAME_COL, E, Obj, Printer, col, since

__all__ = ["PRINTERS"]


def _flow_schema_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    method = spec.get("distinguisherMethod")
    dangling = "?"
    for c in (o.get("status") or E).get("conditions") or ():
        if c.get("type") == "Dangling":
            dangling = c.get("status") or ""
            break
    return [
        meta.get("name", ""),
        (spec.get("priorityLevelConfiguration") or E).get("name") or "",
        spec.get("matchingPrecedence") or 0,
        "<none>" if method is None else method.get("type") or "",
        since(meta.get("creationTimestamp")),
        dangling,
    ]


def _priority_level_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    shares: Any = "<none>"
    queues: Any = "<none>"
    hand: Any = "<none>"
    length: Any = "<none>"
    limited = spec.get("limited")
    if limited is not None:
        shares = limited.get("nominalConcurrencyShares") or 0
        queuing = (limited.get("limitResponse") or E).get("queuing")
        if queuing is not None:
            queues = queuing.get("queues") or 0
            hand = queuing.get("handSize") or 0
            length = queuing.get("queueLengthLimit") or 0
    return [meta.get("name", ""), spec.get("type") or "", shares, queues, hand, length,
            since(meta.get("creationTimestamp"))]


def _api_service_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    service = (o.get("spec") or E).get("service")
    where = "Local" if service is None else f"{service.get('namespace') or ''}/{service.get('name') or ''}"
    available = "Unknown"
    for c in (o.get("status") or E).get("conditions") or ():
        if c.get("type") == "Available":
            status = c.get("status") or ""
            available = f"{status} ({c['reason']})" if status != "True" and c.get("reason") else status
            break
    return [meta.get("name", ""), where, available, since(meta.get("creationTimestamp"))]


def _migration_row(o: Obj) -> list[Any]:
    resource = (o.get("spec") or E).get("resource") or E
    name, group, version = resource.get("resource") or "", resource.get("group") or "", resource.get("version")
    target = f"{name}.{version}.{group}" if version is not None else (f"{name}.{group}" if group else name)
    return [(o.get("metadata") or E).get("name", ""), target]


PRINTERS: dict[str, Printer] = {
    "FlowSchema": Printer([
        NAME_COL,
        col("PriorityLevel", "string", "The priority level the matching requests are assigned to."),
        col("MatchingPrecedence", "string", "Lower values are matched first."),
        col("DistinguisherMethod", "string", "How flows are told apart (ByUser, ByNamespace)."),
        AGE_COL,
        col("MissingPL", "string", "Whether the priority level is missing (the Dangling condition)."),
    ], _flow_schema_row),
    "PriorityLevelConfiguration": Printer([
        NAME_COL,
        col("Type", "string", "Exempt or Limited."),
        col("NominalConcurrencyShares", "string", "Share of the server's concurrency limit."),
        col("Queues", "string", "Number of queues."),
        col("HandSize", "string", "Queues a flow is shuffle-sharded onto."),
        col("QueueLengthLimit", "string", "Requests a queue may hold."),
        AGE_COL,
    ], _priority_level_row),
    "APIService": Printer([
        NAME_COL,
        col("Service", "string", "The service that serves the API, or Local."),
        col("Available", "string", "The Available condition (with its reason when not True)."),
        AGE_COL,
    ], _api_service_row),
    "StorageVersionMigration": Printer([
        col("Name", "string", "Name of the object."),
        col("Resource", "string", "The resource to migrate, fully qualified."),
    ], _migration_row),
}
