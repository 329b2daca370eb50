"""Matching a core/v1 `NodeSelector` against a node, as `component-helpers` `nodeaffinity` does.

Terms are ORed; inside a term all `matchExpressions` (on labels) and all `matchFields` (only
`metadata.name`) must match; a term with neither matches nothing. Operators: `In`, `NotIn`,
`Exists`, `DoesNotExist`, `Gt`, `Lt` for labels (`NotIn`/`DoesNotExist` match an absent label;
`Gt`/`Lt` compare integers and never match a non-integer label value); `In`/`NotIn` with
exactly one value for fields. A malformed selector raises `NodeSelectorError`. Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["NodeSelectorError", "node_matches", "node_selector_matches"]


class NodeSelectorError(ValueError):
    pass


def _int64(s: str) -> int | None:
    try:
        v = int(s, 10)
    except (TypeError, ValueError):
        return None
    if s.strip() != s or not -(2**63) <= v < 2**63:
        return None
    return v


def _check_label_requirement(req: Mapping[str, Any]) -> None:
    op = req.get("operator")
    values = req.get("values") or []
    key = req.get("key") or ""
    if not key:
        raise NodeSelectorError("key: Invalid value: \"\": name part must be non-empty")
    if op in ("In", "NotIn"):
        if not values:
            raise NodeSelectorError("values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty")
    elif op in ("Exists", "DoesNotExist"):
        if values:
            raise NodeSelectorError("values: Invalid value: values set must be empty for exists and does not exist")
    elif op in ("Gt", "Lt"):
        if len(values) != 1 or _int64(values[0]) is None:
            raise NodeSelectorError(f"values: Invalid value: {list(values)}: for 'Gt', 'Lt' operators, "
                                    "exactly one value is required which must be an integer")
    else:
        raise NodeSelectorError(f"{op!r} is not a valid label selector operator")


def _label_match(req: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    op = req["operator"]
    key = req["key"]
    values = req.get("values") or []
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if not present:
        return False
    lv = _int64(labels[key])
    if lv is None:
        return False
    rv = _int64(values[0])
    assert rv is not None
    return lv > rv if op == "Gt" else lv < rv


def _check_field_requirement(req: Mapping[str, Any]) -> None:
    if req.get("key") != "metadata.name":
        raise NodeSelectorError(f"key: Invalid value: {req.get('key')!r}: field label not supported")
    op = req.get("operator")
    if op not in ("In", "NotIn"):
        raise NodeSelectorError(f"operator: Invalid value: {op!r}: not a valid selector operator")
    if len(req.get("values") or []) != 1:
        raise NodeSelectorError(f"values: Invalid value: {req.get('values')}: must have one element")


def node_selector_matches(selector: Mapping[str, Any] | None, node: Mapping[str, Any]) -> bool:
    """True if the node matches the selector; raises NodeSelectorError for a malformed one."""
    if selector is None:
        return False
    terms = selector.get("nodeSelectorTerms") or []
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    name = meta.get("name") or ""
    # Parse (validate) everything first, like NewNodeSelector.
    for term in terms:
        for req in (term or {}).get("matchExpressions") or []:
            _check_label_requirement(req)
        for req in (term or {}).get("matchFields") or []:
            _check_field_requirement(req)
    for term in terms:
        term = term or {}
        exprs = term.get("matchExpressions") or []
        fields = term.get("matchFields") or []
        if not exprs and not fields:
            continue
        if not all(_label_match(r, labels) for r in exprs):
            continue
        if fields and name:
            ok = True
            for r in fields:
                eq = name == r["values"][0]
                if (r["operator"] == "In") != eq:
                    ok = False
                    break
            if not ok:
                continue
        return True
    return False


def node_matches(node: Mapping[str, Any] | None, node_name: str, all_nodes: bool,
                 selector: Mapping[str, Any] | None) -> bool:
    """`NodeMatches` of the allocator: nodeName, else allNodes, else the node selector."""
    if node_name:
        return node is not None and (node.get("metadata") or {}).get("name") == node_name
    if all_nodes:
        return True
    if selector is not None:
        return node_selector_matches(selector, node or {})
    return False
