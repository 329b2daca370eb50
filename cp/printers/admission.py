"""Printers of admissionregistration.k8s.io: webhook configurations, admission policies and their
bindings (upstream's `printValidatingWebhook`, `printValidatingAdmissionPolicy`, ...). Pure; no I/O."""

from __future__ import annotations

from typing import Any

from cp.printers.common import AGE_COL, NAME_COL, E, Obj, Printer, col, since

__all__ = ["PRINTERS"]


def _webhooks_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), len(o.get("webhooks") or ()), since(meta.get("creationTimestamp"))]


def _policy_row(rules: str) -> Any:
    def row(o: Obj) -> list[Any]:
        meta = o.get("metadata") or E
        spec = o.get("spec") or E
        kind = spec.get("paramKind")
        param = "<unset>" if kind is None else f"{kind.get('apiVersion') or ''}/{kind.get('kind') or ''}"
        return [meta.get("name", ""), len(spec.get(rules) or ()), param, since(meta.get("creationTimestamp"))]

    return row


def _go_label_selector(sel: Obj) -> str:
    """Go's `%v` of a *metav1.LabelSelector (its generated String method)."""
    labels = sel.get("matchLabels") or E
    label_text = "".join(f"{k}: {labels[k]}," for k in sorted(labels))
    exprs = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key') or ''},Operator:{e.get('operator') or ''},"
        f"Values:[{' '.join(e.get('values') or ())}],}},"
        for e in sel.get("matchExpressions") or ())
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{label_text}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}")


def _binding_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    ref = spec.get("paramRef")
    param = "<unset>"
    if ref is not None:
        if ref.get("name"):
            param = f"{ref.get('namespace') or '*'}/{ref['name']}"
        elif ref.get("selector") is not None:
            param = _go_label_selector(ref["selector"])
    return [meta.get("name", ""), spec.get("policyName") or "", param, since(meta.get("creationTimestamp"))]


def _webhooks_printer() -> Printer:
    return Printer([
        NAME_COL,
        col("Webhooks", "integer", "Number of webhooks in the configuration."),
        AGE_COL,
    ], _webhooks_row)


def _policy_printer(column: str, field: str) -> Printer:
    return Printer([
        NAME_COL,
        col(column, "integer", f"Number of {field} of the policy."),
        col("ParamKind", "string", "Kind of the policy's parameters, as apiVersion/kind."),
        AGE_COL,
    ], _policy_row(field))


def _binding_printer() -> Printer:
    return Printer([
        NAME_COL,
        col("PolicyName", "string", "The policy the binding binds."),
        col("ParamRef", "string", "The parameter resource(s) of the binding."),
        AGE_COL,
    ], _binding_row)


PRINTERS: dict[str, Printer] = {
    "MutatingWebhookConfiguration": _webhooks_printer(),
    "ValidatingWebhookConfiguration": _webhooks_printer(),
    "ValidatingAdmissionPolicy": _policy_printer("Validations", "validations"),
    "MutatingAdmissionPolicy": _policy_printer("Mutations", "mutations"),
    "ValidatingAdmissionPolicyBinding": _binding_printer(),
    "MutatingAdmissionPolicyBinding": _binding_printer(),
}
