"""Validation rules for flowcontrol.apiserver.k8s.io/v1 FlowSchema and PriorityLevelConfiguration (API
Priority and Fairness).

Behaviour follows upstream `pkg/apis/flowcontrol/validation` for v1 requests (a limited level may have
zero nominal shares; lendable and borrowing percentages). The level's `type`, `limited` and the limit
response's `type` and `queuing` are tagged for beta declarative validation in k8s.io/api 1.37 and are
reported as the declarative validator reports them, after the hand-written errors. Pure.
"""

from __future__ import annotations

import math
from typing import Any

from cp.errors import Cause
from cp.validation.common import (
    as_dict,
    as_list,
    as_str,
    each,
    go_json,
    is_int,
    name_is_dns_label,
    name_is_dns_subdomain,
    not_supported,
)
from cp.validation.meta import validate_object_meta
from cp.validation.registry import Rules

_MAX_MATCHING_PRECEDENCE = 10000
_MAX_QUEUES = 10_000_000
_MAX_HASH_BITS = 60
_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch")
_SUBJECT_KINDS = ("Group", "ServiceAccount", "User")
_DISTINGUISHERS = ("ByNamespace", "ByUser")
_NS_INTRO = "each member of this list must be '*' or a DNS-1123 label; "


# ---------------------------------------------------------------- FlowSchema

def _subject(subject: dict[str, Any], path: str, errs: list[Cause]) -> None:
    kind = subject.get("kind")
    others = {"ServiceAccount": ("serviceAccount", "user", "group"), "User": ("user", "serviceAccount", "group"),
              "Group": ("group", "serviceAccount", "user")}
    if kind not in others:
        not_supported(errs, f"{path}.kind", as_str(kind), _SUBJECT_KINDS)
        return
    own, *forbidden = others[kind]
    value = subject.get(own)
    if value is None:
        word = {"serviceAccount": "serviceAccount", "user": "user", "group": "group"}[own]
        errs.append(Cause("Required", f"{path}.{own}", f"{word} is required when subject kind is '{kind}'"))
    else:
        value = as_dict(value)
        name = as_str(value.get("name"))
        if not name:
            errs.append(Cause("Required", f"{path}.{own}.name", ""))
        elif own == "serviceAccount" and name != "*":
            each(errs, f"{path}.{own}.name", name, name_is_dns_subdomain(name, False))
        if own == "serviceAccount":
            namespace = as_str(value.get("namespace"))
            if namespace:
                each(errs, f"{path}.{own}.namespace", namespace, name_is_dns_label(namespace, False))
            else:
                errs.append(Cause("Required", f"{path}.{own}.namespace", "must specify namespace for service account"))
    for key in forbidden:
        if subject.get(key) is not None:
            expected = {"user": "User", "group": "Group", "serviceAccount": "ServiceAccount"}[key]
            errs.append(Cause("Forbidden", f"{path}.{key}", f"{key} is forbidden when subject kind is not "
                              f"'{expected}'"))


def _verbs(verbs: list[Any], path: str, errs: list[Cause]) -> None:
    if not verbs:
        errs.append(Cause("Required", path, "verbs must contain at least one value"))
    elif "*" in verbs:
        if len(verbs) > 1:
            errs.append(Cause("Invalid", path, "if '*' is present, must not specify other verbs", go_json(verbs)))
    elif not set(verbs) <= set(_VERBS):
        not_supported(errs, path, go_json(verbs), _VERBS)


def _url_path_problem(path: str) -> str | None:
    """ValidateNonResourceURLPath."""
    if not path:
        return "must not be empty"
    if path == "/":
        return None
    if not path.startswith("/"):
        return "must start with slash"
    if " " in path:
        return "must not contain white-space"
    if "//" in path:
        return "must not contain double slash"
    stars = path.count("*")
    if stars > 1 or (stars == 1 and path[-2:] != "/*"):
        return "wildcard can only do suffix matching"
    return None


def _resource_rule(rule: dict[str, Any], path: str, errs: list[Cause]) -> None:
    _verbs(as_list(rule.get("verbs")), f"{path}.verbs", errs)
    for key, what in (("apiGroups", "api group"), ("resources", "resource")):
        values = as_list(rule.get(key))
        if not values:
            errs.append(Cause("Required", f"{path}.{key}", f"resource rules must supply at least one {what}"))
        elif len(values) > 1 and "*" in values:
            errs.append(Cause("Invalid", f"{path}.{key}", f"if '*' is present, must not specify other {what}s",
                              go_json(values)))
    namespaces = as_list(rule.get("namespaces"))
    if not namespaces and rule.get("clusterScope") is not True:
        errs.append(Cause("Required", f"{path}.namespaces",
                          "resource rules that are not cluster scoped must supply at least one namespace"))
    elif "*" in namespaces:
        if len(namespaces) > 1:
            errs.append(Cause("Invalid", f"{path}.namespaces", "if '*' is present, must not specify other namespaces",
                              go_json(namespaces)))
    else:
        for i, ns in enumerate(namespaces):
            ns = as_str(ns)
            for msg in name_is_dns_label(ns, False):
                errs.append(Cause("Invalid", f"{path}.namespaces[{i}]", _NS_INTRO + msg, ns))


def _non_resource_rule(rule: dict[str, Any], path: str, errs: list[Cause]) -> None:
    _verbs(as_list(rule.get("verbs")), f"{path}.verbs", errs)
    urls = as_list(rule.get("nonResourceURLs"))
    if not urls:
        errs.append(Cause("Required", f"{path}.nonResourceURLs", "nonResourceURLs must contain at least one value"))
    elif "*" in urls:
        if len(urls) > 1:
            errs.append(Cause("Invalid", f"{path}.nonResourceURLs",
                              "if '*' is present, must not specify other non-resource URLs", go_json(urls)))
    else:
        for i, url in enumerate(urls):
            problem = _url_path_problem(as_str(url))
            if problem:
                errs.append(Cause("Invalid", f"{path}.nonResourceURLs[{i}]", problem, as_str(url)))


def _flow_schema_spec(name: str, spec: dict[str, Any], errs: list[Cause]) -> None:
    precedence = spec.get("matchingPrecedence", 0)
    if is_int(precedence):
        if precedence <= 0:
            errs.append(Cause("Invalid", "spec.matchingPrecedence", "must be a positive value", precedence))
        if precedence > _MAX_MATCHING_PRECEDENCE:
            errs.append(Cause("Invalid", "spec.matchingPrecedence",
                              f"must not be greater than {_MAX_MATCHING_PRECEDENCE}", precedence))
        if precedence == 1 and name != "exempt":
            errs.append(Cause("Invalid", "spec.matchingPrecedence",
                              "only the schema named 'exempt' may have matchingPrecedence 1", precedence))
    method = spec.get("distinguisherMethod")
    if isinstance(method, dict) and method.get("type") not in _DISTINGUISHERS:
        not_supported(errs, "spec.distinguisherMethod.type", go_json(method), _DISTINGUISHERS)
    level = as_str(as_dict(spec.get("priorityLevelConfiguration")).get("name"))
    if level:
        each(errs, "spec.priorityLevelConfiguration.name", level, name_is_dns_subdomain(level, False))
    else:
        errs.append(Cause("Required", "spec.priorityLevelConfiguration.name", "must reference a priority level"))
    for i, rule in enumerate(as_list(spec.get("rules"))):
        rule, path = as_dict(rule), f"spec.rules[{i}]"
        subjects = as_list(rule.get("subjects"))
        if not subjects:
            errs.append(Cause("Required", f"{path}.subjects", "subjects must contain at least one value"))
        for j, subject in enumerate(subjects):
            _subject(as_dict(subject), f"{path}.subjects[{j}]", errs)
        resource_rules, non_resource_rules = as_list(rule.get("resourceRules")), as_list(rule.get("nonResourceRules"))
        if not resource_rules and not non_resource_rules:
            errs.append(Cause("Required", path, "at least one of resourceRules and nonResourceRules has to be "
                              "non-empty"))
        for j, r in enumerate(resource_rules):
            _resource_rule(as_dict(r), f"{path}.resourceRules[{j}]", errs)
        for j, r in enumerate(non_resource_rules):
            _non_resource_rule(as_dict(r), f"{path}.nonResourceRules[{j}]", errs)


def _status_conditions(obj: dict[str, Any], errs: list[Cause]) -> None:
    types: set[str] = set()
    for i, c in enumerate(as_list(as_dict(obj.get("status")).get("conditions"))):
        ctype = as_str(as_dict(c).get("type"))
        if ctype in types:
            errs.append(Cause("Duplicate", f"status.conditions[{i}].type", "", ctype))
        types.add(ctype)
        if not ctype:
            errs.append(Cause("Required", f"status.conditions[{i}].type", "must not be empty"))


def _flow_schema_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _flow_schema_spec(as_str(meta.get("name")), as_dict(obj.get("spec")), errs)
    _status_conditions(obj, errs)


def _flow_schema_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _flow_schema_spec(as_str(as_dict(new.get("metadata")).get("name")), as_dict(new.get("spec")), errs)
    _status_conditions(new, errs)


def _status_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _status_conditions(new, errs)


# ---------------------------------------------------------------- PriorityLevelConfiguration

def _required_entropy_bits(deck: int, hand: int) -> int:
    """shufflesharding.RequiredEntropyBits: ceil(log2(deck) * hand)."""
    if deck <= 0 or hand <= 0:
        return 0
    return math.ceil(math.log2(deck) * hand)


def _queuing(queuing: dict[str, Any], path: str, errs: list[Cause]) -> None:
    limit, queues, hand = (queuing.get(k, 0) for k in ("queueLengthLimit", "queues", "handSize"))
    if is_int(limit) and limit <= 0:
        errs.append(Cause("Invalid", f"{path}.queueLengthLimit", "must be positive", limit))
    if is_int(queues) and queues <= 0:
        errs.append(Cause("Invalid", f"{path}.queues", "must be positive", queues))
    elif is_int(queues) and queues > _MAX_QUEUES:
        errs.append(Cause("Invalid", f"{path}.queues", f"must not be greater than {_MAX_QUEUES}", queues))
    if not (is_int(hand) and is_int(queues)):
        return
    if hand <= 0:
        errs.append(Cause("Invalid", f"{path}.handSize", "must be positive", hand))
    elif hand > queues:
        errs.append(Cause("Invalid", f"{path}.handSize", f"should not be greater than queues ({queues})", hand))
    elif _required_entropy_bits(queues, hand) > _MAX_HASH_BITS:
        errs.append(Cause("Invalid", f"{path}.handSize", f"required entropy bits of deckSize {queues} and handSize "
                          f"{hand} should not be greater than {_MAX_HASH_BITS}", hand))


def _percent(value: Any, path: str, errs: list[Cause], *, upper: bool) -> None:
    if not is_int(value):
        return
    if upper and not 0 <= value <= 100:
        errs.append(Cause("Invalid", path, "must be between 0 and 100, inclusive", value))
    elif not upper and value < 0:
        errs.append(Cause("Invalid", path, "if specified, must be a non-negative integer", value))


def _limited(limited: dict[str, Any], path: str, errs: list[Cause], dv: list[Cause]) -> None:
    shares = limited.get("nominalConcurrencyShares")
    if is_int(shares) and shares < 0:
        errs.append(Cause("Invalid", f"{path}.nominalConcurrencyShares", "must be a non-negative integer", shares))
    response, rpath = as_dict(limited.get("limitResponse")), f"{path}.limitResponse"
    rtype = response.get("type")
    if not rtype:
        dv.append(Cause("Required", f"{rpath}.type", ""))
    elif rtype == "Reject":
        if response.get("queuing") is not None:
            errs.append(Cause("Forbidden", f"{rpath}.queuing", "must be nil if limited.limitResponse.type is not "
                              "Limited"))
    elif rtype == "Queue":
        if response.get("queuing") is None:
            dv.append(Cause("Required", f"{rpath}.queuing", ""))
        else:
            _queuing(as_dict(response.get("queuing")), f"{rpath}.queuing", errs)
    else:
        not_supported(errs, f"{rpath}.type", rtype, ("Queue", "Reject"))
    _percent(limited.get("lendablePercent"), f"{path}.lendablePercent", errs, upper=True)
    _percent(limited.get("borrowingLimitPercent"), f"{path}.borrowingLimitPercent", errs, upper=False)


def _priority_level_spec(name: str, spec: dict[str, Any], errs: list[Cause]) -> None:
    dv: list[Cause] = []
    ptype = spec.get("type")
    if (name == "exempt") != (ptype == "Exempt"):
        errs.append(Cause("Invalid", "spec.type", "type must be 'Exempt' if and only if name is 'exempt'",
                          as_str(ptype)))
    if ptype == "Exempt":
        if spec.get("limited") is not None:
            errs.append(Cause("Forbidden", "spec.limited", "must be nil if the type is not Limited"))
        exempt = spec.get("exempt")
        if isinstance(exempt, dict):
            shares = exempt.get("nominalConcurrencyShares")
            if is_int(shares) and shares < 0:
                errs.append(Cause("Invalid", "spec.exempt.nominalConcurrencyShares", "must be a non-negative integer",
                                  shares))
            _percent(exempt.get("lendablePercent"), "spec.exempt.lendablePercent", errs, upper=True)
    elif ptype == "Limited":
        if spec.get("exempt") is not None:
            errs.append(Cause("Forbidden", "spec.exempt", "must be nil if the type is Limited"))
        if spec.get("limited") is None:
            dv.append(Cause("Required", "spec.limited", ""))
        else:
            _limited(as_dict(spec.get("limited")), "spec.limited", errs, dv)
    elif not ptype:
        dv.append(Cause("Required", "spec.type", ""))
    else:
        not_supported(errs, "spec.type", ptype, ("Exempt", "Limited"))
    errs.extend(dv)


def _priority_level_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _priority_level_spec(as_str(meta.get("name")), as_dict(obj.get("spec")), errs)
    _status_conditions(obj, errs)


def _priority_level_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _priority_level_spec(as_str(as_dict(new.get("metadata")).get("name")), as_dict(new.get("spec")), errs)
    _status_conditions(new, errs)


RULES = {
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): Rules(_flow_schema_create, _flow_schema_update, _status_update),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): Rules(
        _priority_level_create, _priority_level_update, _status_update),
}
