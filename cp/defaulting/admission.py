"""Defaulting of admissionregistration.k8s.io/v1 kinds: webhook configurations and admission policies.

Source of behaviour (read, not copied): `pkg/apis/admissionregistration/v1/defaults.go`: webhooks fail
closed, match equivalent versions, select every namespace and object, time out after 10 s and (mutating)
are not reinvoked; rules cover every scope; services listen on 443; policies fail closed; parameter
references deny when their parameter is missing. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cp.defaulting.fields import child, dicts, setdefault, sub

WEBHOOK_TIMEOUT_SECONDS = 10


def _rules(rules: Any) -> None:
    for rule in dicts(rules):
        setdefault(rule, "scope", "*")


def _client_config(hook: dict[str, Any]) -> None:
    config = sub(hook, "clientConfig")
    service = sub(config, "service") if config is not None else None
    if service is not None:
        setdefault(service, "port", 443)


def _webhook(hook: dict[str, Any], *, mutating: bool) -> None:
    setdefault(hook, "failurePolicy", "Fail")
    setdefault(hook, "matchPolicy", "Equivalent")
    setdefault(hook, "namespaceSelector", {})
    setdefault(hook, "objectSelector", {})
    setdefault(hook, "timeoutSeconds", WEBHOOK_TIMEOUT_SECONDS)
    if mutating:
        setdefault(hook, "reinvocationPolicy", "Never")
    _rules(hook.get("rules"))
    _client_config(hook)


def _validating_webhooks(obj: dict[str, Any]) -> None:
    for hook in dicts(obj.get("webhooks")):
        _webhook(hook, mutating=False)


def _mutating_webhooks(obj: dict[str, Any]) -> None:
    for hook in dicts(obj.get("webhooks")):
        _webhook(hook, mutating=True)


def _match_resources(match: dict[str, Any] | None) -> None:
    if match is None:
        return
    setdefault(match, "matchPolicy", "Equivalent")
    setdefault(match, "namespaceSelector", {})
    setdefault(match, "objectSelector", {})
    for key in ("resourceRules", "excludeResourceRules"):
        _rules(match.get(key))


def _policy(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    setdefault(spec, "failurePolicy", "Fail")
    _match_resources(sub(spec, "matchConstraints"))


def _binding(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    param_ref = sub(spec, "paramRef")
    if param_ref is not None:
        setdefault(param_ref, "parameterNotFoundAction", "Deny")
    _match_resources(sub(spec, "matchResources"))


DEFAULTERS: dict[tuple[str, str, str], Callable[[dict[str, Any]], None]] = {
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration"): _validating_webhooks,
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"): _mutating_webhooks,
    ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy"): _policy,
    ("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicy"): _policy,
    ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding"): _binding,
    ("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicyBinding"): _binding,
}
