"""A `PodSchedulingExplanation` (`cp.scheduling.explain.explain_pod`) as text: what `cplane why` prints
and what the server answers to `GET .../pods/NAME/why?output=text` (docs/why.md). Pure."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

MAX_NODE_BLOCKS = 8  # distinct per-node explanations printed in full (the rest in one line each)



def _listing(items: Sequence[str], limit: int = 6) -> str:
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f", … ({len(items) - limit} more)"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _dra_lines(dra: Mapping[str, Any], indent: str) -> list[str]:
    lines: list[str] = []
    if dra.get("message"):
        lines.append(f"{indent}{dra['outcome']}: {dra['message']}")
    for p in dra.get("pools") or []:
        if p.get("state") == "ok":
            lines.append(f"{indent}pool {p['pool']}: {_plural(int(p.get('devices') or 0), 'device')}")
        else:
            lines.append(f"{indent}pool {p['pool']}: {p.get('reason')}")
    if not dra.get("pools"):
        lines.append(f"{indent}no ResourceSlice offers devices to this node")
    for cv in dra.get("claims") or []:
        for rv in cv.get("requests") or []:
            head = f"{indent}claim {cv['claim']}, request {rv['request']} (class {rv.get('class')}"
            if rv.get("mode") == "All":
                head += ", all matching devices"
            else:
                head += f", {rv.get('count')} needed"
            if rv.get("adminAccess"):
                head += ", admin access"
            head += ")"
            if not rv.get("reached"):
                lines.append(f"{head}: not reached (the search failed before it)")
                continue
            lines.append(f"{head}: {rv.get('considered', 0)} considered, {rv.get('usable', 0)} usable")
            for rej in rv.get("rejections") or []:
                lines.append(f"{indent}  - {rej['message']}")
            for stop in rv.get("stops") or []:
                lines.append(f"{indent}  - {stop['message']}")
    for a in dra.get("allocation") or []:
        devs = ", ".join(f"{d['request']} → {d['device']}" for d in a.get("devices") or []) or "(no devices)"
        lines.append(f"{indent}claim {a['claim']}: {devs}")
        for d in a.get("devices") or []:
            if d.get("bindingConditions"):
                lines.append(f"{indent}  {d['device']} has binding conditions {', '.join(d['bindingConditions'])}: the "
                             "pod waits until the driver reports them")
    return lines


def _shape(v: Mapping[str, Any]) -> Any:
    """What makes two nodes' DRA failures "the same" for the text output."""
    dra = v.get("dra") or {}
    pools = tuple((p.get("state"), p.get("devices")) for p in dra.get("pools") or [])
    reqs = tuple((c.get("claim"), r.get("request"), r.get("considered"), r.get("usable"), r.get("reached"),
                  tuple((x.get("reason"), x.get("count"), json.dumps(x.get("detail"), sort_keys=True))
                        for x in r.get("rejections") or []),
                  tuple(x.get("reason") for x in r.get("stops") or []))
                 for c in dra.get("claims") or [] for r in c.get("requests") or [])
    return (dra.get("outcome"), dra.get("message"), pools, reqs)


def _node_block(v: Mapping[str, Any], indent: str) -> list[str]:
    fv = v.get("filter")
    if fv is not None:
        return [f"{indent}{c['plugin']}: {c['message']}" for c in fv.get("checks") or []] or [
            f"{indent}{fv.get('plugin')}: {', '.join(fv.get('reasons') or [])}"]
    dra = v.get("dra")
    if dra is not None:
        return _dra_lines(dra, indent)
    return [f"{indent}fits (no claims to allocate)"]


def render(doc: Mapping[str, Any], *, verbose: bool = False) -> str:
    """The text form of a PodSchedulingExplanation."""
    meta = doc.get("metadata") or {}
    lines = [f"Pod {meta.get('namespace')}/{meta.get('name')} at revision {meta.get('resourceVersion')}: "
             f"{doc.get('verdict')}",
             f"  {doc.get('summary')}"]
    pod = doc.get("pod") or {}
    if doc.get("upstreamMessage"):
        lines.append(f"  upstream message: {doc['upstreamMessage']}")
    elif pod.get("schedulerMessage"):
        lines.append(f"  scheduler said: {pod['schedulerMessage']}")
    for err in doc.get("errors") or []:
        lines.append(f"  error (the scheduler reports SchedulerError and retries): {err}")
    pre = doc.get("preemption")
    if pre and pre.get("node"):
        lines.append(f"  preemption: would evict {', '.join(pre['victims'])} on {pre['node']} "
                     f"({pre['pdbViolations']} PodDisruptionBudget violation(s)); the pod is then nominated there")
    elif pre and pre.get("message"):
        lines.append(f"  {pre['message']}")
    claims = doc.get("claims") or []
    if claims:
        lines.append("")
        lines.append("Claims:")
        for c in claims:
            target = c.get("claim") or (f"template {c['template']}" if c.get("template") else "?")
            extra = f" ({c.get('state')})" if c.get("state") else ""
            devs = f": {', '.join(c['devices'])}" if c.get("devices") else ""
            lines.append(f"  {c.get('name')} → {target}{extra}{devs}")
    bound = doc.get("bound")
    if bound:
        lines.append("")
        lines.append(f"Bound to {bound['node']}" + (" with:" if any(c.get("devices") for c in bound["claims"]) else ""))
        for c in bound.get("claims") or []:
            if c.get("devices"):
                lines.append(f"  claim {c['claim']}: {', '.join(c['devices'])}")
    nodes = doc.get("nodes") or []
    if not nodes:
        return "\n".join(lines) + "\n"
    chosen = doc.get("chosen")
    if chosen:
        lines.append("")
        tied = f" (tied with {_listing(chosen['tiedWith'], 4)}; the scheduler picks at random)" if chosen.get("tiedWith") else ""
        lines.append(f"{'Would choose' if not bound else 'Scheduled again now, would choose'} {chosen['node']}, "
                     f"score {chosen['score']}{tied}:")
        for a in chosen.get("allocation") or []:
            devs = ", ".join(f"{d['request']} → {d['device']}" for d in a.get("devices") or []) or "(no devices)"
            lines.append(f"  claim {a['claim']}: {devs}")
        others = sorted((v for v in nodes if v.get("fits") and v["node"] != chosen["node"]),
                        key=lambda v: -float(v.get("score") or 0))
        if others:
            lines.append(f"Other feasible nodes lost on score ({len(others)}):")
            for v in others[:MAX_NODE_BLOCKS]:
                detail = v.get("scoreDetail") or {}
                parts = ", ".join(f"{k} {x}" for k, x in detail.items())
                lines.append(f"  {v['node']}: score {v.get('score')}" + (f" ({parts})" if parts else ""))
            if len(others) > MAX_NODE_BLOCKS:
                lines.append(f"  … {len(others) - MAX_NODE_BLOCKS} more")
    filtered = [v for v in nodes if v.get("filter") is not None]
    dra_failed = [v for v in nodes if v.get("filter") is None and not v.get("fits")]
    if filtered:
        lines.append("")
        lines.append(f"Filtered before DRA ({_plural(len(filtered), 'node')}):")
        by_plugin: dict[str, list[Mapping[str, Any]]] = {}
        for v in filtered:
            by_plugin.setdefault(str(v["filter"].get("plugin")), []).append(v)
        for plugin, vs in by_plugin.items():
            groups: dict[str, list[str]] = {}
            for v in vs:
                groups.setdefault("; ".join(c["message"] for c in v["filter"].get("checks") or []), []).append(v["node"])
            for text, names in groups.items():
                lines.append(f"  {plugin}: {_listing(names, 4)}: {text}")
    if dra_failed:
        lines.append("")
        lines.append(f"Cannot allocate the claims ({_plural(len(dra_failed), 'node')}):")
        # Nodes that failed the same way (same reasons and counts; the devices and the claims
        # holding them may differ) are shown once, with the first node's details.
        shapes: dict[Any, list[Mapping[str, Any]]] = {}
        for v in dra_failed:
            shapes.setdefault(v["node"] if verbose else _shape(v), []).append(v)
        shown = 0
        rest: dict[str, list[str]] = {}
        for group in shapes.values():
            names = [v["node"] for v in group]
            if shown < MAX_NODE_BLOCKS:
                like = f" (and {_plural(len(names) - 1, 'more node')} like it: {_listing(names[1:], 5)})" \
                    if len(names) > 1 else ""
                lines.append(f"  {names[0]}{like}:")
                lines.extend(_node_block(group[0], "    "))
                shown += 1
            else:
                rest.setdefault(str(group[0]["dra"].get("blocker") or ""), []).extend(names)
        for blocker, names in rest.items():
            lines.append(f"  {_listing(names, 4)}: {blocker}")
    if not chosen:
        lines.append("")
        suggestions = doc.get("suggestions")
        if suggestions:
            lines.append("Smallest change:")
            lines.append(f"  {suggestions[0]['message']}")
            for s in suggestions[1:]:
                lines.append(f"  or: {s['message']}")
        elif suggestions is not None:
            lines.append("Smallest change: none found by relaxing one thing at a time")
    return "\n".join(lines) + "\n"
