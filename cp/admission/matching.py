"""Which admission requests an admission policy or webhook applies to.

Shared by the admission policies (ValidatingAdmissionPolicy, MutatingAdmissionPolicy) and the
admission webhooks. Behaviour follows k8s.io/apiserver:

- `pkg/admission/plugin/webhook/predicates/rules` (`Matcher`): a `RuleWithOperations` matches on its
  operations, apiGroups, apiVersions, resources (`*`, `*/*`, `pods/status`, `*/status`, `pods/*`) and
  scope; the Namespace object itself counts as cluster-scoped;
- `pkg/admission/plugin/webhook/predicates/namespace` and `.../object`: namespaceSelector and
  objectSelector (a cluster-scoped object that is not a Namespace is never excluded by a namespace
  selector; a Namespace is matched on its own labels; the object selector matches the new or the
  old object);
- `pkg/admission/plugin/policy/matching` (`matchesResourceRules`): resourceRules /
  excludeResourceRules with resourceNames, and matchPolicy `Equivalent` trying the same request
  through the other group-versions that serve the same storage.

Pure: the caller gives the namespace's labels and the equivalent requests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from cp import errors, selectors

__all__ = [
    "Request",
    "label_selector_matches",
    "namespace_selector_matches",
    "object_selector_matches",
    "resource_rules_match",
    "rule_matches",
]

ALL = "*"


class Request(msgspec.Struct, frozen=True, kw_only=True):
    """What matching sees of one admission request (k8s.io/apiserver admission.Attributes)."""

    group: str
    version: str
    resource: str
    subresource: str = ""
    kind_group: str
    kind_version: str
    kind: str
    operation: str  # CREATE | UPDATE | DELETE | CONNECT
    namespace: str = ""
    name: str = ""
    namespaced: bool  # the resource's scope

    @property
    def is_namespace(self) -> bool:
        """A request about a core/v1 Namespace (upstream's `namespaceResource` check)."""
        return self.group == "" and self.resource == "namespaces"


def _listed(values: Any, value: str) -> bool:
    """`*` or the exact value among `values` (an absent or empty list matches nothing)."""
    if not isinstance(values, list):
        return False
    return any(v in (ALL, value) for v in values)


def _resource_listed(resources: Any, request: Request) -> bool:
    """`resources` entries are `res` or `res/sub`, either part may be `*`; a bare `res` matches only
    the main resource (no subresource)."""
    if not isinstance(resources, list):
        return False
    for entry in resources:
        if not isinstance(entry, str):
            continue
        res, _, sub = entry.partition("/")
        if (res == ALL or res == request.resource) and (sub == ALL or sub == request.subresource):
            return True
    return False


def _scope_matches(scope: Any, request: Request) -> bool:
    """`Cluster`: cluster-scoped objects and Namespaces; `Namespaced`: objects in a namespace;
    `*` or unset: all."""
    if scope is None or scope == ALL:
        return True
    cluster = request.is_namespace or not request.namespaced or request.namespace == ""
    if scope == "Namespaced":
        return not cluster
    if scope == "Cluster":
        return cluster
    return False


def rule_matches(rule: Mapping[str, Any], request: Request) -> bool:
    """One RuleWithOperations / NamedRuleWithOperations: operations, apiGroups, apiVersions,
    resources, scope and (named rules) resourceNames, as upstream's rules.Matcher plus
    `matchesResourceRules`' name check (an empty resourceNames matches every name)."""
    if not (_listed(rule.get("operations"), request.operation)
            and _listed(rule.get("apiGroups"), request.group)
            and _listed(rule.get("apiVersions"), request.version)
            and _resource_listed(rule.get("resources"), request)
            and _scope_matches(rule.get("scope"), request)):
        return False
    names = rule.get("resourceNames") or []
    return not names or request.name in names


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """`metav1.LabelSelectorAsSelector(selector).Matches(labels)`: None selects nothing, `{}` selects
    everything. An invalid selector raises BadRequest (the API validates them on write)."""
    return selectors.from_label_selector_object(selector).matches(labels)


def _labels_of(obj: Mapping[str, Any] | None) -> dict[str, str] | None:
    if not isinstance(obj, Mapping):
        return None
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return {}
    labels = meta.get("labels")
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}


def _selects_everything(selector: Mapping[str, Any] | None) -> bool:
    # An unset selector is defaulted to `{}` by the API: it selects everything.
    return selector is None or (not selector.get("matchLabels") and not selector.get("matchExpressions"))


def object_selector_matches(selector: Mapping[str, Any] | None, *, obj: Mapping[str, Any] | None,
                            old: Mapping[str, Any] | None) -> bool:
    """objectSelector: unset or empty matches every request; otherwise the new object or the old
    one (update, delete) must carry matching labels. A request without either object (a connect)
    does not match a non-empty selector."""
    if _selects_everything(selector):
        return True
    sel = selectors.from_label_selector_object(selector)
    for candidate in (obj, old):
        labels = _labels_of(candidate)
        if labels is not None and sel.matches(labels):
            return True
    return False


def namespace_selector_matches(selector: Mapping[str, Any] | None, request: Request,
                               namespace_labels: Mapping[str, str] | None) -> bool:
    """namespaceSelector: unset or empty matches everything; a cluster-scoped object that is not a
    Namespace always matches; a Namespace (create, update: the caller passes the written object's
    labels, as upstream reads them from the request) and a namespaced object are matched on the
    namespace's labels. `namespace_labels` None: the namespace is not known (it is matched as
    having no labels)."""
    if _selects_everything(selector):
        return True
    if not request.is_namespace and (not request.namespaced or request.namespace == ""):
        return True
    return selectors.from_label_selector_object(selector).matches(dict(namespace_labels or {}))


def _first_matching(rules: Sequence[Any], request: Request) -> bool:
    return any(isinstance(rule, Mapping) and rule_matches(rule, request) for rule in rules)


def _rules_match(rules: Sequence[Any], match_policy: str, request: Request,
                 equivalents: Sequence[Request]) -> tuple[bool, Request | None]:
    """upstream `matchesResourceRules`: the request as it is, then (Equivalent) each equivalent
    request in turn, rule by rule."""
    if _first_matching(rules, request):
        return True, request
    if match_policy != "Equivalent":
        return False, None
    for rule in rules:
        if not isinstance(rule, Mapping):
            continue
        for equivalent in equivalents:
            if (equivalent.group, equivalent.version, equivalent.resource) == (
                    request.group, request.version, request.resource):
                continue
            if rule_matches(rule, equivalent):
                return True, equivalent
    return False, None


def resource_rules_match(match: Mapping[str, Any], request: Request, *,
                         equivalents: Sequence[Request] = ()) -> tuple[bool, Request | None]:
    """A policy's `matchConstraints` or a binding's `matchResources` (resource part): excluded by an
    `excludeResourceRules` entry -> no match; no `resourceRules` -> matches the request as it is;
    else the first rule that matches. `matchPolicy` (API default `Equivalent`) lets a rule match the
    request through another group-version serving the same storage (`equivalents`: the same request
    with that group, version, resource and kind); the returned request is the one matched, whose
    group/version/resource/kind the policy then sees. Selectors are checked by
    `namespace_selector_matches` and `object_selector_matches`."""
    policy = str(match.get("matchPolicy") or "Equivalent")
    excluded, _ = _rules_match(list(match.get("excludeResourceRules") or []), policy, request, equivalents)
    if excluded:
        return False, None
    rules = match.get("resourceRules")
    if not rules:
        return True, request
    if not isinstance(rules, list):
        raise errors.BadRequest("resourceRules must be a list")
    return _rules_match(rules, policy, request, equivalents)
