"""A ValidatingAdmissionPolicy's `status.typeChecking`, as the upstream policy status controller
writes it (k8s.io/apiserver `pkg/admission/plugin/policy/validating/typechecking.go`): each
validation's `expression` and `messageExpression` is checked against every kind its
matchConstraints name explicitly (rules with a `*` group, version or resource are skipped, as
upstream gives up on wildcards; at most 10 kinds), and each problem is an expression warning
`{fieldRef: spec.validations[i].expression, warning: "<group>/<version>, Kind=<Kind>: ERROR: ..."}`.

Best effort: cel-go type-checks whole expressions against the kinds' OpenAPI schemas; this checker
follows field selections rooted at `object` and `oldObject` (`object.spec.replicaz`) through the
kind's schema and reports the undefined fields of structs, with cel-go's message and caret. Map
values, untyped or preserved-unknown parts, and everything else (types of operands, function
overloads) are not checked. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cp import resources as res
from cp import schemas, typed

__all__ = ["expression_warnings", "status"]

MAX_TYPES = 10  # upstream maxTypesToCheck

_STRING = re.compile(r"""(?:[rRbB]{0,2})(?:'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^\\'])*'|"(?:\\.|[^\\"])*")""", re.DOTALL)
_PATH = re.compile(r"(?<![\w.])(object|oldObject)((?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)+)")
_SEGMENT = re.compile(r"\.\s*([A-Za-z_][A-Za-z0-9_]*)")


def _kinds(spec: Mapping[str, Any]) -> list[res.ResourceKind]:
    found: dict[tuple[str, str, str], res.ResourceKind] = {}
    for rule in (spec.get("matchConstraints") or {}).get("resourceRules") or []:
        if not isinstance(rule, Mapping):
            continue
        groups = list(rule.get("apiGroups") or [])
        versions = list(rule.get("apiVersions") or [])
        resources = [r for r in rule.get("resources") or [] if isinstance(r, str) and "/" not in r]
        if "*" in groups or "*" in versions or "*" in resources:
            continue
        for g in sorted(groups):
            for v in sorted(versions):
                for r in sorted(resources):
                    kind = res.lookup(g, v, r)
                    if kind is not None and len(found) < MAX_TYPES:
                        found[(kind.group, kind.version, kind.kind)] = kind
    return [found[k] for k in sorted(found)]


def _blank_strings(expression: str) -> str:
    """The expression with string literals blanked (same length), so paths inside them are ignored."""
    return _STRING.sub(lambda m: " " * len(m.group()), expression)


def _undefined(expression: str, root: typed.Type) -> list[tuple[int, str]]:
    """(offset of the `.`, field) of each selection of an undefined struct field."""
    out: list[tuple[int, str]] = []
    for m in _PATH.finditer(_blank_strings(expression)):
        t: typed.Type | None = root
        for seg in _SEGMENT.finditer(m.group(2)):
            if t is None or t.kind != typed.KIND_MAP or t.deduced:
                break
            field = seg.group(1)
            child = t.fields.get(field)
            if child is None:
                if t.elem is None and t.fields:
                    out.append((m.start(2) + seg.start(), field))
                break
            t = child if child.kind == typed.KIND_MAP else None
    return out


def _issue(expression: str, offset: int, field: str) -> str:
    line_no = expression.count("\n", 0, offset) + 1
    line_start = expression.rfind("\n", 0, offset) + 1
    line_end = expression.find("\n", offset)
    line = expression[line_start:] if line_end < 0 else expression[line_start:line_end]
    col = offset - line_start
    return f"ERROR: <input>:{line_no}:{col + 1}: undefined field '{field}'\n | {line}\n | {'.' * col}^"


def _check(expression: str, kinds: list[res.ResourceKind]) -> str:
    messages: list[str] = []
    for kind in kinds:
        name = schemas.name_for(kind.group, kind.version, kind.kind)
        if name is None:
            continue
        issues = [_issue(expression, offset, field) for offset, field in _undefined(expression, typed.definition(name))]
        if issues:
            messages.append(f"{kind.group}/{kind.version}, Kind={kind.kind}: " + "\n".join(issues) + "\n")
    return "\n".join(messages)


def expression_warnings(policy: Mapping[str, Any]) -> list[dict[str, str]]:
    """`status.typeChecking.expressionWarnings` of a ValidatingAdmissionPolicy."""
    spec = policy.get("spec") or {}
    kinds = _kinds(spec)
    if not kinds:
        return []
    out: list[dict[str, str]] = []
    for i, v in enumerate(spec.get("validations") or []):
        if not isinstance(v, Mapping):
            continue
        for field in ("expression", "messageExpression"):
            expression = v.get(field)
            if not isinstance(expression, str) or not expression:
                continue
            warning = _check(expression, kinds)
            if warning:
                out.append({"fieldRef": f"spec.validations[{i}].{field}", "warning": warning})
    return out


def status(policy: Mapping[str, Any]) -> dict[str, Any]:
    """The status the policy controller writes: observedGeneration and typeChecking (an empty
    `typeChecking` says the check ran and found nothing), conditions kept."""
    meta = policy.get("metadata") or {}
    out: dict[str, Any] = dict(policy.get("status") or {})
    out["observedGeneration"] = int(meta.get("generation") or 0)
    warnings = expression_warnings(policy)
    out["typeChecking"] = {"expressionWarnings": warnings} if warnings else {}
    return out
