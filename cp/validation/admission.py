"""Validation rules for admissionregistration.k8s.io/v1: Validating/MutatingWebhookConfiguration,
ValidatingAdmissionPolicy(+Binding) and MutatingAdmissionPolicy(+Binding).

Behaviour follows upstream `pkg/apis/admissionregistration/validation` for create requests and for
updates (which tolerate what the stored object already had: side effects, review versions, duplicate
names, label selector values, unchanged match conditions). The CEL expressions of match conditions,
validations, variables, audit annotations and mutations must compile: they are compiled with the
project's CEL environment (`cp.dra.celenv`, loaded on the first expression, not at import) with the
variables kube-apiserver declares for each; the functions of Kubernetes' admission libraries
(authorizer, URL, IP, CIDR, format, optional types...) are known names; the optional syntax the
project's parser lacks (`x.?y`, `m[?k]`) is compiled as plain selection, with compiler messages pointing
into the expression as written. Static type checking of the result (a
validation must evaluate to bool) is not done. Enforcing policies is not part of validation. Pure.
"""

from __future__ import annotations

import re
from typing import Any

from cp.errors import Cause
from cp.validation.common import (
    as_dict,
    as_list,
    as_str,
    each,
    go_json,
    is_dns1035_label,
    is_dns1123_subdomain,
    is_fully_qualified_name,
    name_is_dns_subdomain,
    not_supported,
    too_many,
    validate_path_segment_name,
    validate_qualified_name,
)
from cp.validation.meta import validate_conditions, validate_label_selector, validate_object_meta
from cp.validation.registry import CreateFn, Rules, UpdateFn
from cp.validation.webhook import REVIEW_VERSIONS, validate_client_config, validate_review_versions

GROUP = "admissionregistration.k8s.io"
_FAILURE_POLICIES = ("Fail", "Ignore")
_MATCH_POLICIES = ("Equivalent", "Exact")
_SIDE_EFFECTS = ("None", "NoneOnDryRun", "Some", "Unknown")
_NO_SIDE_EFFECTS = ("None", "NoneOnDryRun")
_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES = ("*", "Cluster", "Namespaced")
_REINVOCATION = ("IfNeeded", "Never")
_VALIDATION_ACTIONS = ("Audit", "Deny", "Warn")
_REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge")
_PATCH_TYPES = ("ApplyConfiguration", "JSONPatch")
_MUTABLE_OPERATIONS = ("*", "CONNECT", "CREATE", "UPDATE")
_MAX_AUDIT_ANNOTATIONS = 20
_MAX_AUDIT_VALUE_EXPRESSION = 5 * 1024
_MAX_MATCH_CONDITIONS = 64
_CEL_IDENT = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")
_CEL_RESERVED = frozenset({"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
                           "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
                           "void", "while"})
_NEWLINES = re.compile(r"[\n\r]+")

# What kube-apiserver's admission CEL environments declare: the request's objects, the authorizer, and
# the `format` and `jsonpatch` namespaces; `params` with a paramKind, `variables` with composition.
_BASE_VARIABLES = frozenset({"object", "oldObject", "request", "namespaceObject", "format", "jsonpatch"})
# Functions of Kubernetes' CEL libraries beyond those the project's environment evaluates (authz, URLs,
# IPs, CIDRs, formats, JSON patch, extended strings/lists/math/sets, two-variable comprehensions).
_LIBRARY_FUNCTIONS = frozenset({
    "path", "group", "serviceAccount", "resource", "subresource", "namespace", "name", "check", "allowed",
    "reason", "errored", "error", "fieldSelector", "labelSelector",
    "url", "isURL", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery",
    "ip", "isIP", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
    "isGlobalUnicast", "isCanonical", "cidr", "isCIDR", "containsIP", "containsCIDR", "masked", "prefixLength",
    "named", "validate", "dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName", "labelValue",
    "dns1123LabelPrefix", "dns1123SubdomainPrefix", "dns1035LabelPrefix", "uri", "uuid", "byte", "date",
    "datetime", "escapeKey",
    "charAt", "lowerAscii", "upperAscii", "replace", "split", "substring", "trim", "join", "quote", "reverse",
    "format", "sum", "min", "max", "slice", "flatten", "distinct", "sort", "sortBy", "range", "first", "last",
    "greatest", "least", "ceil", "floor", "round", "trunc", "abs", "isInf", "isNaN", "isFinite", "equivalent",
    "intersects", "transformList", "transformMap", "transformMapEntry", "optMap", "optFlatMap", "encode",
    "decode",
    # optional types (in the base environment since 1.29): optional.of(x), x.?y.orValue(z), ...
    "of", "ofNonZeroValue", "none", "hasValue", "value", "orValue", "or",
})
_OPTIONAL_NAMESPACE = "optional"
_OPENERS = frozenset(".[{,")


def _without_optional_markers(expression: str) -> tuple[str, list[int]]:
    """`expression` with the `?` of cel-go's optional syntax dropped (`x.?y`, `m[?k]`, `[?e]`, `{?k: v}`,
    `[a, ?b]`), outside string literals: what the project's parser (which lacks that syntax) can compile.
    Only whether the expression compiles is asked here, and optional selection has the same variables and
    functions as plain selection. Also returns, per character of the result, its index in `expression`."""
    out: list[str] = []
    where: list[int] = []
    i, n = 0, len(expression)
    last = ""  # the last character outside strings and spaces
    while i < n:
        c = expression[i]
        if c in "'\"":
            quote = c * 3 if expression.startswith(c * 3, i) else c
            raw = i > 0 and expression[i - 1] in "rR"
            j = i + len(quote)
            while j < n and not expression.startswith(quote, j):
                j += 2 if expression[j] == "\\" and not raw else 1
            j = min(n, j + len(quote))
            out.append(expression[i:j])
            where.extend(range(i, j))
            last, i = quote[-1], j
            continue
        if c == "?" and last in _OPENERS:
            i += 1
            continue
        out.append(c)
        where.append(i)
        if not c.isspace():
            last = c
        i += 1
    return "".join(out), where


_POSITION = re.compile(r"<input>:(\d+):(\d+):")


def _original_positions(message: str, source: str, where: list[int], expression: str) -> str:
    """`message` with its `<input>:LINE:COLUMN:` positions in `source` moved to those in `expression`, and
    the quoted source line and caret under each (the parser's report) redrawn on `expression`."""
    starts = [0] + [i + 1 for i, c in enumerate(source) if c == "\n"]
    lines = expression.split("\n")
    out: list[str] = []
    caret_at: int | None = None
    quoted: str | None = None
    for text in message.split("\n"):
        if caret_at is not None and text.startswith("| ."):
            out.append("| " + "." * (caret_at - 1) + "^")
            continue
        m = _POSITION.search(text)
        if m is None:
            if caret_at is not None and text.startswith("| ") and quoted is not None:
                text = "| " + quoted
            out.append(text)
            continue
        line, col = int(m.group(1)), int(m.group(2))
        caret_at, quoted = None, None
        if 1 <= line <= len(starts):
            index = starts[line - 1] + col - 1
            original = where[index] if 0 <= index < len(where) else index + len(expression) - len(source)
            before = expression[:original]
            line, col = before.count("\n") + 1, original - (before.rfind("\n") + 1) + 1
            caret_at, quoted = col, lines[line - 1] if line <= len(lines) else None
        out.append(text[:m.start()] + f"<input>:{line}:{col}:" + text[m.end():])
    return "\n".join(out)


def cel_problem(expression: str, *, params: bool, authorizer: bool, variables: bool) -> str | None:
    """None when `expression` compiles in the admission environment with these declarations, else the
    compiler's message. The CEL environment (a Rust extension) is imported on the first expression."""
    from cp.dra.celenv import compile_expression

    declared = set(_BASE_VARIABLES) | {_OPTIONAL_NAMESPACE}
    if params:
        declared.add("params")
    if authorizer:
        declared.add("authorizer")
    if variables:
        declared.add("variables")
    if "?" not in expression:
        return compile_expression(expression, variables=frozenset(declared), functions=_LIBRARY_FUNCTIONS).error
    source, where = _without_optional_markers(expression)
    problem = compile_expression(source, variables=frozenset(declared), functions=_LIBRARY_FUNCTIONS).error
    return _original_positions(problem, source, where, expression) if problem else None


def _expression(expression: str, path: str, errs: list[Cause], *, params: bool, authorizer: bool = True,
                variables: bool = False, shown: str | None = None) -> None:
    problem = cel_problem(expression, params=params, authorizer=authorizer, variables=variables)
    if problem:
        errs.append(Cause("Invalid", path, problem, expression if shown is None else shown))


# ---------------------------------------------------------------- rules

def _resources(resources: list[Any], path: str, errs: list[Cause]) -> None:
    """validateResources: `res`, `res/sub`, `*`, `*/sub`, `res/*`, `*/*` without overlaps."""
    if not resources:
        errs.append(Cause("Required", path, ""))
    with_wildcard_sub: set[str] = set()
    sub_with_wildcard_res: set[str] = set()
    double = single = plain = False
    for i, value in enumerate(resources):
        value = as_str(value)
        if not value:
            errs.append(Cause("Required", f"{path}[{i}]", ""))
            continue
        double = double or value == "*/*"
        single = single or value == "*"
        if "/" not in value:
            plain = value != "*"
            continue
        res, sub = value.split("/", 1)
        if res in with_wildcard_sub:
            errs.append(Cause("Invalid", f"{path}[{i}]", f"if '{res}/*' is present, must not specify {value}", value))
        if sub in sub_with_wildcard_res:
            errs.append(Cause("Invalid", f"{path}[{i}]", f"if '*/{sub}' is present, must not specify {value}", value))
        if sub == "*":
            with_wildcard_sub.add(res)
        if res == "*":
            sub_with_wildcard_res.add(sub)
    if len(resources) > 1 and double:
        errs.append(Cause("Invalid", path, "if '*/*' is present, must not specify other resources", go_json(resources)))
    if single and plain:
        errs.append(Cause("Invalid", path, "if '*' is present, must not specify other resources without "
                          "subresources", go_json(resources)))


def _rule_with_operations(rule: dict[str, Any], path: str, errs: list[Cause]) -> None:
    operations = as_list(rule.get("operations"))
    if not operations:
        errs.append(Cause("Required", f"{path}.operations", ""))
    if len(operations) > 1 and "*" in operations:
        errs.append(Cause("Invalid", f"{path}.operations", "if '*' is present, must not specify other operations",
                          go_json(operations)))
    for i, op in enumerate(operations):
        if op not in _OPERATIONS:
            not_supported(errs, f"{path}.operations[{i}]", op, _OPERATIONS)
    groups, versions = as_list(rule.get("apiGroups")), as_list(rule.get("apiVersions"))
    if not groups:
        errs.append(Cause("Required", f"{path}.apiGroups", ""))
    if len(groups) > 1 and "*" in groups:
        errs.append(Cause("Invalid", f"{path}.apiGroups", "if '*' is present, must not specify other API groups",
                          go_json(groups)))
    if not versions:
        errs.append(Cause("Required", f"{path}.apiVersions", ""))
    if len(versions) > 1 and "*" in versions:
        errs.append(Cause("Invalid", f"{path}.apiVersions", "if '*' is present, must not specify other API "
                          "versions", go_json(versions)))
    for i, version in enumerate(versions):
        if version == "":
            errs.append(Cause("Required", f"{path}.apiVersions[{i}]", ""))
    _resources(as_list(rule.get("resources")), f"{path}.resources", errs)
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        not_supported(errs, f"{path}.scope", scope, _SCOPES)


def _named_rule(rule: dict[str, Any], path: str, errs: list[Cause]) -> None:
    seen: set[str] = set()
    for i, name in enumerate(as_list(rule.get("resourceNames"))):
        name = as_str(name)
        each(errs, f"{path}.resourceNames[{i}]", name, validate_path_segment_name(name, False))
        if name in seen:
            errs.append(Cause("Duplicate", f"{path}.resourceNames[{i}]", "", name))
        seen.add(name)
    _rule_with_operations(rule, path, errs)


def _match_resources(match: Any, path: str, errs: list[Cause]) -> None:
    if not isinstance(match, dict):
        return
    policy = match.get("matchPolicy")
    if policy is None:
        errs.append(Cause("Required", f"{path}.matchPolicy", ""))
    elif policy not in _MATCH_POLICIES:
        not_supported(errs, f"{path}.matchPolicy", policy, _MATCH_POLICIES)
    for key in ("namespaceSelector", "objectSelector"):
        if match.get(key) is None:
            errs.append(Cause("Required", f"{path}.{key}", ""))
        else:
            validate_label_selector(match.get(key), f"{path}.{key}", errs)
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(as_list(match.get(key))):
            _named_rule(as_dict(rule), f"{path}.{key}[{i}]", errs)


# ---------------------------------------------------------------- match conditions

def _match_conditions(conditions: Any, path: str, errs: list[Cause], *, params: bool, check_cel: bool) -> None:
    items = as_list(conditions)
    if len(items) > _MAX_MATCH_CONDITIONS:
        too_many(errs, path, len(items), _MAX_MATCH_CONDITIONS)
    names: set[str] = set()
    for i, mc in enumerate(items):
        mc, mpath = as_dict(mc), f"{path}[{i}]"
        expression = as_str(mc.get("expression")).strip()
        if not expression:
            errs.append(Cause("Required", f"{mpath}.expression", ""))
        elif check_cel:
            _expression(expression, f"{mpath}.expression", errs, params=params)
        name = as_str(mc.get("name"))
        if not name:
            errs.append(Cause("Required", f"{mpath}.name", ""))
        else:
            validate_qualified_name(name, f"{mpath}.name", errs)
            if name in names:
                errs.append(Cause("Duplicate", f"{mpath}.name", "", name))
            names.add(name)


# ---------------------------------------------------------------- webhook configurations

class _HookOptions:
    """What an update tolerates because the stored configuration already had it."""

    __slots__ = ("check_conditions", "known_versions", "no_side_effects", "unique_names")

    def __init__(self, *, check_conditions: bool = True, no_side_effects: bool = True, known_versions: bool = True,
                 unique_names: bool = True) -> None:
        self.check_conditions = check_conditions
        self.no_side_effects = no_side_effects
        self.known_versions = known_versions
        self.unique_names = unique_names


def _webhook(hook: dict[str, Any], path: str, errs: list[Cause], opts: _HookOptions, *, mutating: bool) -> None:
    errs.extend(is_fully_qualified_name(f"{path}.name", as_str(hook.get("name"))))
    for i, rule in enumerate(as_list(hook.get("rules"))):
        _rule_with_operations(as_dict(rule), f"{path}.rules[{i}]", errs)
    failure = hook.get("failurePolicy")
    if failure is not None and failure not in _FAILURE_POLICIES:
        not_supported(errs, f"{path}.failurePolicy", failure, _FAILURE_POLICIES)
    match = hook.get("matchPolicy")
    if match is not None and match not in _MATCH_POLICIES:
        not_supported(errs, f"{path}.matchPolicy", match, _MATCH_POLICIES)
    allowed = _NO_SIDE_EFFECTS if opts.no_side_effects else _SIDE_EFFECTS
    effects = hook.get("sideEffects")
    if effects is None:
        errs.append(Cause("Required", f"{path}.sideEffects", "must specify one of " + ", ".join(allowed)))
    elif effects not in allowed:
        not_supported(errs, f"{path}.sideEffects", effects, allowed)
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not 1 <= timeout <= 30:
        errs.append(Cause("Invalid", f"{path}.timeoutSeconds", "the timeout value must be between 1 and 30 seconds",
                          timeout))
    for key in ("namespaceSelector", "objectSelector"):
        if hook.get(key) is not None:
            validate_label_selector(hook.get(key), f"{path}.{key}", errs)
    if mutating:
        policy = hook.get("reinvocationPolicy")
        if policy is not None and policy not in _REINVOCATION:
            not_supported(errs, f"{path}.reinvocationPolicy", policy, _REINVOCATION)
    validate_client_config(hook.get("clientConfig"), f"{path}.clientConfig", errs)
    if opts.check_conditions:
        _match_conditions(hook.get("matchConditions"), f"{path}.matchConditions", errs, params=False, check_cel=True)


def _webhooks(obj: dict[str, Any], errs: list[Cause], opts: _HookOptions, *, mutating: bool) -> None:
    names: set[str] = set()
    for i, hook in enumerate(as_list(obj.get("webhooks"))):
        hook, path = as_dict(hook), f"webhooks[{i}]"
        _webhook(hook, path, errs, opts, mutating=mutating)
        validate_review_versions(as_list(hook.get("admissionReviewVersions")), f"{path}.admissionReviewVersions",
                                 errs, require_known=opts.known_versions)
        name = as_str(hook.get("name"))
        if opts.unique_names and name:
            if name in names:
                errs.append(Cause("Duplicate", f"{path}.name", "", name))
            names.add(name)


def _webhooks_create(mutating: bool) -> CreateFn:
    def create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
        validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
        _webhooks(obj, errs, _HookOptions(), mutating=mutating)
    return create


def _webhooks_update(mutating: bool) -> UpdateFn:
    def update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
        hooks, old_hooks = as_list(new.get("webhooks")), [as_dict(h) for h in as_list(old.get("webhooks"))]
        unchanged_conditions = len(hooks) == len(old_hooks) and all(
            as_dict(a).get("matchConditions") == b.get("matchConditions") for a, b in zip(hooks, old_hooks, strict=True))
        old_names = [as_str(h.get("name")) for h in old_hooks]
        opts = _HookOptions(
            check_conditions=not unchanged_conditions,
            no_side_effects=all(h.get("sideEffects") in _NO_SIDE_EFFECTS for h in old_hooks),
            known_versions=all(not as_list(h.get("admissionReviewVersions")) or
                               any(v in REVIEW_VERSIONS for v in as_list(h.get("admissionReviewVersions")))
                               for h in old_hooks),
            unique_names=len(set(old_names)) == len(old_names))
        _webhooks(new, errs, opts, mutating=mutating)
    return update


# ---------------------------------------------------------------- admission policies

def _param_kind(kind: dict[str, Any], path: str, errs: list[Cause]) -> None:
    api_version = as_str(kind.get("apiVersion"))
    if not api_version:
        errs.append(Cause("Required", f"{path}.apiVersion", ""))
    elif api_version.count("/") > 1:
        errs.append(Cause("Invalid", f"{path}.apiVersion", f"unexpected GroupVersion string: {api_version}",
                          api_version))
    elif api_version != "/":
        group, _, version = api_version.rpartition("/")
        if group:
            msgs = is_dns1123_subdomain(group)
            if msgs:
                errs.append(Cause("Invalid", f"{path}.apiVersion", ",".join(msgs), group))
        if not version:
            errs.append(Cause("Invalid", f"{path}.apiVersion", "version must be specified", api_version))
        else:
            msgs = is_dns1035_label(version)
            if msgs:
                errs.append(Cause("Invalid", f"{path}.apiVersion", ",".join(msgs), version))
    kind_name = as_str(kind.get("kind"))
    if not kind_name:
        errs.append(Cause("Required", f"{path}.kind", ""))
    else:
        msgs = is_dns1035_label(kind_name.lower())
        if msgs:
            errs.append(Cause("Invalid", f"{path}.kind", "may have mixed case, but should otherwise match: " +
                              ",".join(msgs), kind_name))


def _variables(items: Any, path: str, errs: list[Cause], *, params: bool, check_cel: bool) -> None:
    for i, var in enumerate(as_list(items)):
        var, vpath = as_dict(var), f"{path}[{i}]"
        name = as_str(var.get("name"))
        if not name.strip():
            errs.append(Cause("Required", f"{vpath}.name", "name is not specified"))
        elif not _CEL_IDENT.match(name) or name in _CEL_RESERVED:
            errs.append(Cause("Invalid", f"{vpath}.name", "name is not a valid CEL identifier", name))
        expression = as_str(var.get("expression"))
        if not expression.strip():
            errs.append(Cause("Required", f"{vpath}.expression", "expression is not specified"))
        elif check_cel:
            _expression(expression, f"{vpath}.expression", errs, params=params, variables=True)


def _policy_common(spec: dict[str, Any], errs: list[Cause], *, check_conditions: bool, mutating: bool = False
                   ) -> bool:
    """failurePolicy, paramKind, matchConstraints, matchConditions and variables; True with a paramKind."""
    failure = spec.get("failurePolicy")
    if failure is None:
        errs.append(Cause("Required", "spec.failurePolicy", ""))
    elif failure not in _FAILURE_POLICIES:
        not_supported(errs, "spec.failurePolicy", failure, _FAILURE_POLICIES)
    params = spec.get("paramKind") is not None
    if params:
        _param_kind(as_dict(spec.get("paramKind")), "spec.paramKind", errs)
    constraints = spec.get("matchConstraints")
    if constraints is None:
        errs.append(Cause("Required", "spec.matchConstraints", ""))
    else:
        _match_resources(constraints, "spec.matchConstraints", errs)
        if not as_list(as_dict(constraints).get("resourceRules")):
            errs.append(Cause("Required", "spec.matchConstraints.resourceRules", ""))
        if mutating:
            _mutable_operations(constraints, "spec.matchConstraints.resourceRules.operations", errs)
    if check_conditions:
        _match_conditions(spec.get("matchConditions"), "spec.matchConditions", errs, params=params, check_cel=True)
    _variables(spec.get("variables"), "spec.variables", errs, params=params, check_cel=True)
    return params


def _validation(v: dict[str, Any], path: str, errs: list[Cause], *, params: bool, composed: bool) -> None:
    expression, message = as_str(v.get("expression")), as_str(v.get("message"))
    message_expression = as_str(v.get("messageExpression"))
    if not expression.strip():
        errs.append(Cause("Required", f"{path}.expression", "expression is not specified"))
    else:
        _expression(expression, f"{path}.expression", errs, params=params, variables=composed)
    if message_expression and not message_expression.strip():
        errs.append(Cause("Invalid", f"{path}.messageExpression", "must be non-empty if specified", message_expression))
    elif message_expression.strip():
        _expression(message_expression, f"{path}.messageExpression", errs, params=params, authorizer=False,
                    variables=composed)
    if message and not message.strip():
        errs.append(Cause("Invalid", f"{path}.message", "message must be non-empty if specified", message))
    elif _NEWLINES.search(message.strip()):
        errs.append(Cause("Invalid", f"{path}.message", "message must not contain line breaks", message))
    reason = v.get("reason")
    if reason is not None and reason not in _REASONS:
        not_supported(errs, f"{path}.reason", reason, _REASONS)


def _audit_annotation(a: dict[str, Any], policy_name: str, path: str, errs: list[Cause], *, params: bool,
                      composed: bool) -> None:
    key = as_str(a.get("key"))
    if policy_name:
        validate_qualified_name(f"{policy_name}/{key}", f"{path}.key", errs)
    else:
        errs.append(Cause("Invalid", f"{path}.key", "requires metadata.name be non-empty", key))
    value = as_str(a.get("valueExpression"))
    trimmed = value.strip()
    if not trimmed:
        errs.append(Cause("Required", f"{path}.valueExpression", "valueExpression is not specified"))
    elif len(trimmed) > _MAX_AUDIT_VALUE_EXPRESSION:
        errs.append(Cause("Required", f"{path}.valueExpression",
                          f"must not exceed {_MAX_AUDIT_VALUE_EXPRESSION} bytes in length"))
    else:
        _expression(trimmed, f"{path}.valueExpression", errs, params=params, variables=composed, shown=value)


def _vap_spec(obj: dict[str, Any], errs: list[Cause], *, check_conditions: bool) -> None:
    spec = as_dict(obj.get("spec"))
    params = _policy_common(spec, errs, check_conditions=check_conditions)
    composed = bool(as_list(spec.get("variables")))
    validations, annotations = as_list(spec.get("validations")), spec.get("auditAnnotations")
    if not validations and not as_list(annotations):
        msg = "validations or auditAnnotations must contain at least one item"
        errs.append(Cause("Required", "spec.validations", msg))
        errs.append(Cause("Required", "spec.auditAnnotations", msg))
        return
    for i, v in enumerate(validations):
        _validation(as_dict(v), f"spec.validations[{i}]", errs, params=params, composed=composed)
    if annotations is not None:
        items = as_list(annotations)
        if len(items) > _MAX_AUDIT_ANNOTATIONS:
            errs.append(Cause("Invalid", "spec.auditAnnotations",
                              f"must not have more than {_MAX_AUDIT_ANNOTATIONS} auditAnnotations", go_json(items)))
        keys: set[str] = set()
        name = as_str(as_dict(obj.get("metadata")).get("name"))
        for i, a in enumerate(items):
            a = as_dict(a)
            _audit_annotation(a, name, f"spec.auditAnnotations[{i}]", errs, params=params, composed=composed)
            key = as_str(a.get("key"))
            if key in keys:
                errs.append(Cause("Duplicate", f"spec.auditAnnotations[{i}].key", "", key))
            keys.add(key)


def _vap_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _vap_spec(obj, errs, check_conditions=True)


def _conditions_unchanged(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Match conditions are checked again only when they or the paramKind changed."""
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    return spec.get("paramKind") == old_spec.get("paramKind") and \
        spec.get("matchConditions") == old_spec.get("matchConditions")


def _vap_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _vap_spec(new, errs, check_conditions=not _conditions_unchanged(new, old))


def _vap_status_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    status = as_dict(new.get("status"))
    checking = status.get("typeChecking")
    if isinstance(checking, dict):
        for i, w in enumerate(as_list(checking.get("expressionWarnings"))):
            w, path = as_dict(w), f"status.typeChecking.expressionWarnings[{i}]"
            if not as_str(w.get("warning")):
                errs.append(Cause("Required", f"{path}.warning", ""))
            if not as_str(w.get("fieldRef")).strip():
                errs.append(Cause("Required", f"{path}.fieldRef", ""))
    validate_conditions(status.get("conditions"), "status.conditions", errs)


def _mutation(m: dict[str, Any], path: str, errs: list[Cause], *, params: bool, composed: bool) -> None:
    """validateMutation: `patchType` chooses which of `jsonPatch` and `applyConfiguration` is given."""
    patch_type = as_str(m.get("patchType"))
    if not patch_type:
        errs.append(Cause("Required", f"{path}.patchType", ""))
        return
    if patch_type not in _PATCH_TYPES:
        not_supported(errs, f"{path}.patchType", patch_type, _PATCH_TYPES)
        return
    own, other = ("jsonPatch", "applyConfiguration") if patch_type == "JSONPatch" else \
        ("applyConfiguration", "jsonPatch")
    body = m.get(own)
    if body is None:
        errs.append(Cause("Required", f"{path}.{own}", f"must be specified when patchType is {patch_type}"))
    else:
        expression = as_str(as_dict(body).get("expression")).strip()
        if not expression:
            errs.append(Cause("Required", f"{path}.{own}.expression", ""))
        else:
            _expression(expression, f"{path}.{own}.expression", errs, params=params, variables=composed)
    if m.get(other) is not None:
        errs.append(Cause("Invalid", f"{path}.{other}", f"must not be specified when patchType is {patch_type}",
                          "{" + other + "}"))


def _mutable_operations(match: Any, path: str, errs: list[Cause]) -> None:
    """Only creates, updates and connects can be mutated: a DELETE rule is reported at `path` (no index)."""
    for rule in as_list(as_dict(match).get("resourceRules")):
        for op in as_list(as_dict(rule).get("operations")):
            if op not in _MUTABLE_OPERATIONS:
                not_supported(errs, path, op, _MUTABLE_OPERATIONS)


def _map_spec(obj: dict[str, Any], errs: list[Cause], *, check_conditions: bool) -> None:
    spec = as_dict(obj.get("spec"))
    params = _policy_common(spec, errs, check_conditions=check_conditions, mutating=True)
    composed = bool(as_list(spec.get("variables")))
    mutations = as_list(spec.get("mutations"))
    if not mutations:
        errs.append(Cause("Required", "spec.mutations", "mutations must contain at least one item"))
    for i, m in enumerate(mutations):
        _mutation(as_dict(m), f"spec.mutations[{i}]", errs, params=params, composed=composed)
    policy = spec.get("reinvocationPolicy")
    if not policy:
        errs.append(Cause("Required", "spec.reinvocationPolicy", ""))
    elif policy not in _REINVOCATION:
        not_supported(errs, "spec.reinvocationPolicy", policy, _REINVOCATION)


def _map_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _map_spec(obj, errs, check_conditions=True)


def _map_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _map_spec(new, errs, check_conditions=not _conditions_unchanged(new, old))


# ---------------------------------------------------------------- bindings

def _param_ref(ref: Any, path: str, errs: list[Cause]) -> None:
    if not isinstance(ref, dict):
        return
    name, selector = as_str(ref.get("name")), ref.get("selector")
    if name:
        each(errs, f"{path}.name", name, validate_path_segment_name(name, False))
        if selector is not None:
            errs.append(Cause("Forbidden", f"{path}.name", "name and selector are mutually exclusive"))
    if selector is not None:
        validate_label_selector(selector, f"{path}.selector", errs)
        if name:
            errs.append(Cause("Forbidden", f"{path}.selector", "name and selector are mutually exclusive"))
    if not name and selector is None:
        errs.append(Cause("Required", path, "one of name or selector must be specified"))
    action = ref.get("parameterNotFoundAction")
    if not action:
        errs.append(Cause("Required", f"{path}.parameterNotFoundAction", ""))
    elif action not in ("Deny", "Allow"):
        not_supported(errs, f"{path}.parameterNotFoundAction", action, ("Deny", "Allow"))


def _binding_spec(obj: dict[str, Any], errs: list[Cause], *, validating: bool) -> None:
    dv: list[Cause] = []
    spec = as_dict(obj.get("spec"))
    policy = as_str(spec.get("policyName"))
    if not policy:
        (dv if validating else errs).append(Cause("Required", "spec.policyName", ""))
    else:
        each(errs, "spec.policyName", policy, name_is_dns_subdomain(policy, False))
    _param_ref(spec.get("paramRef"), "spec.paramRef", errs)
    if validating:
        # Upstream's path for a validating binding's match resources is spelled `matchResouces`.
        _match_resources(spec.get("matchResources"), "spec.matchResouces", errs)
    else:
        _match_resources(spec.get("matchResources"), "spec.matchResources", errs)
        if spec.get("matchResources") is not None:
            _mutable_operations(spec.get("matchResources"), "spec.matchResources.resourceRules.operations", errs)
    if validating:
        actions = as_list(spec.get("validationActions"))
        seen: set[str] = set()
        for i, action in enumerate(actions):
            if action not in _VALIDATION_ACTIONS:
                not_supported(errs, f"spec.validationActions[{i}]", action, _VALIDATION_ACTIONS)
            if action in seen:
                errs.append(Cause("Duplicate", f"spec.validationActions[{i}]", "", action))
            seen.add(as_str(action))
        if "Deny" in seen and "Warn" in seen:
            errs.append(Cause("Invalid", "spec.validationActions", "must not contain both Deny and Warn (repeating "
                              "the same validation failure information in the API response and headers serves no "
                              "purpose)", go_json(actions)))
        if not seen:
            dv.append(Cause("Required", "spec.validationActions", ""))
    errs.extend(dv)


def _binding_create(validating: bool) -> CreateFn:
    def create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
        validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
        _binding_spec(obj, errs, validating=validating)
    return create


def _binding_update(validating: bool) -> UpdateFn:
    def update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
        _binding_spec(new, errs, validating=validating)
    return update


RULES = {
    (GROUP, "ValidatingWebhookConfiguration"): Rules(_webhooks_create(False), _webhooks_update(False)),
    (GROUP, "MutatingWebhookConfiguration"): Rules(_webhooks_create(True), _webhooks_update(True)),
    (GROUP, "ValidatingAdmissionPolicy"): Rules(_vap_create, _vap_update, _vap_status_update),
    (GROUP, "ValidatingAdmissionPolicyBinding"): Rules(_binding_create(True), _binding_update(True)),
    (GROUP, "MutatingAdmissionPolicy"): Rules(_map_create, _map_update),
    (GROUP, "MutatingAdmissionPolicyBinding"): Rules(_binding_create(False), _binding_update(False)),
}
