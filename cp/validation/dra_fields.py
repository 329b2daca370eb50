"""The field checks that resource.k8s.io/v1 kinds share: limits, names (drivers, pools, qualified
names), list limits and duplicates, CEL selectors, opaque configuration, device tolerations and taints,
binding conditions, metav1 conditions and node selectors.

Behaviour follows upstream `pkg/apis/resource/validation/validation.go` (and the declarative limits of
k8s.io/api resource/v1): field paths, limits and messages as documented in
`../shared/reference/dra-api.md` §2-§8. CEL expressions are length-checked here and compiled with the
allocator's own environment (`cp.dra.celenv`), so that both agree on what compiles; that environment (a
Rust extension) loads on the first selector to check, not at import. Pure.
"""

from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING, Any

from cp.errors import Cause
from cp.validation.common import (
    GoValue,
    as_dict,
    as_list,
    as_str,
    each,
    is_c_identifier,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_int,
    is_label_value,
    not_supported,
    too_long,
    too_many,
    validate_driver_name,
    validate_label_name,
)

if TYPE_CHECKING:
    from cp.dra.celenv import CelCache

MAX_REQUESTS = 32  # DeviceRequestsMaxSize
MAX_FIRST_AVAILABLE = 8
MAX_SELECTORS = 32
MAX_CONSTRAINTS = 32
MAX_CONFIG = 32
MAX_TOLERATIONS = 16
CEL_MAX_LEN = 10 * 1024
OPAQUE_MAX_LEN = 10 * 1024
STATUS_DATA_MAX_LEN = 10 * 1024
MAX_RESULTS = 32
MAX_RESERVED_FOR = 256
MAX_DEVICE_CONDITIONS = 8
MAX_DEVICES = 128
MAX_DEVICES_ADVANCED = 64
MAX_COUNTER_SETS = 8
MAX_COUNTERS_PER_SET = 32
MAX_CONSUMPTIONS_PER_DEVICE = 2
MAX_DERIVED_ATTRIBUTES = 32  # per request (DRADerivedAttributes)
MAX_COMPATIBILITY_GROUPS = 2  # per consumesCounters entry (DRADeviceCompatibilityGroups)
MAX_COUNTERS_PER_CONSUMPTION = 32
MAX_ATTRS_AND_CAPACITY = 32
MAX_ATTRIBUTE_VALUES = 48
MAX_DEVICE_TAINTS = 16
MAX_BINDING_CONDITIONS = 4
MAX_ID_LEN = 32
MAX_DOMAIN_LEN = 63
MAX_ATTR_VALUE_LEN = 64
MAX_POOL_NAME = 253
MAX_IPS = 16
MAX_INTERFACE_NAME = 256
MAX_HARDWARE_ADDRESS = 128
MAX_TAINT_RULE_CONDITIONS = 8
MAX_VALID_VALUES = 10

_TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
_TOLERATION_OPS = ("Equal", "Exists")
_SKIP_NODE_OPS = ("*", "NodePrepareResources", "NodeUnprepareResources")

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


# ---------------------------------------------------------------- names

def dns_label(value: str, path: str, errs: list[Cause]) -> None:
    each(errs, path, value, is_dns1123_label(value))


def driver_name(value: Any, path: str, errs: list[Cause]) -> None:
    validate_driver_name(as_str(value), path, errs)


def pool_name(value: Any, path: str, errs: list[Cause]) -> None:
    name = as_str(value)
    if not name:
        errs.append(Cause("Required", path, ""))
        return
    if len(name) > MAX_POOL_NAME:
        too_long(errs, path, MAX_POOL_NAME)
    for part in name.split("/"):
        each(errs, path, part, is_dns1123_subdomain(part))


def device_class_ref(value: Any, path: str, errs: list[Cause]) -> None:
    name = as_str(value)
    if not name:
        errs.append(Cause("Required", path, ""))
    else:
        each(errs, path, name, is_dns1123_subdomain(name))


def c_identifier(value: str, path: str, errs: list[Cause]) -> None:
    if len(value) > MAX_ID_LEN:
        too_long(errs, path, MAX_ID_LEN)
    each(errs, path, value, is_c_identifier(value))


def qualified_name(name: str, path: str, errs: list[Cause]) -> None:
    for type_, detail, value in qualified_name_problems(name):
        errs.append(Cause(type_, path, detail, value))


@functools.lru_cache(maxsize=8192)
def qualified_name_problems(name: str) -> tuple[tuple[str, str, Any], ...]:
    """Problems of a QualifiedName, cached: the same attribute names repeat on every device."""
    found: list[Cause] = []
    _check_qualified_name(name, "", found)
    return tuple((c.type, c.detail, c.value) for c in found)


def _check_qualified_name(name: str, path: str, errs: list[Cause]) -> None:
    parts = name.split("/")
    if len(parts) == 1:
        c_identifier(parts[0], path, errs)
    elif len(parts) == 2:
        if not parts[0]:
            errs.append(Cause("Invalid", path, "the domain must not be empty", ""))
        else:
            driver_name(parts[0], path, errs)
        if not parts[1]:
            errs.append(Cause("Invalid", path, "the name must not be empty", ""))
        else:
            c_identifier(parts[1], path, errs)
    else:
        errs.append(Cause("Invalid", path, "must not contain more than one slash", name))


def fully_qualified_name(name: Any, path: str, errs: list[Cause]) -> None:
    name = as_str(name)
    qualified_name(name, path, errs)
    if "/" not in name:
        errs.append(Cause("Invalid", path, "a fully qualified name must be a domain and a name separated by a slash",
                          name))


def normalized_uid(value: Any, path: str, errs: list[Cause]) -> None:
    uid = as_str(value)
    if not _UUID.match(uid):
        errs.append(Cause("Invalid", path, f"error validating uid: invalid UUID length: {len(uid)}"
                          if len(uid) not in (32, 36, 38, 45) else "error validating uid: invalid UUID format", uid))
    elif uid != uid.lower():
        errs.append(Cause("Invalid", path, "uid must be in RFC 4122 normalized form, "
                          "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters", uid))


def label_key(value: Any, path: str, errs: list[Cause]) -> None:
    validate_label_name(as_str(value), path, errs)


def label_value(value: Any, path: str, errs: list[Cause]) -> None:
    each(errs, path, as_str(value), is_label_value(as_str(value)))


# ---------------------------------------------------------------- list helpers

def too_many_items(items: list[Any], limit: int, path: str, errs: list[Cause]) -> bool:
    if limit >= 0 and len(items) > limit:
        too_many(errs, path, len(items), limit)
        return True
    return False


def duplicates(keys: list[Any], path: str, errs: list[Cause]) -> None:
    seen: set[Any] = set()
    for i, key in enumerate(keys):
        if key in seen:
            errs.append(Cause("Duplicate", f"{path}[{i}]", "", key))
        else:
            seen.add(key)


# ---------------------------------------------------------------- CEL

def cel_expression(expression: Any, path: str, errs: list[Cause], *, stored: bool) -> None:
    """A CEL expression of the allocator's environment: required, at most 10 Ki, compiling."""
    _cel(expression, path, errs, stored=stored)


def _cel(expression: Any, path: str, errs: list[Cause], *, stored: bool) -> None:
    if stored:
        return
    expr = as_str(expression)
    if len(expr) > CEL_MAX_LEN:
        too_long(errs, path, CEL_MAX_LEN)
        return
    if not expr.strip():
        errs.append(Cause("Required", path, ""))
        return
    problem = cel_compile_error(expr)
    if problem:
        errs.append(Cause("Invalid", path, problem, expr))


_cel_cache: list[CelCache] = []  # one cache for the process, made on the first selector to check


def cel_compile_error(expression: str) -> str | None:
    """None when `expression` compiles in the allocator's CEL environment, else the compiler's message
    (reported as `Invalid` on the `cel.expression` field, as kube-apiserver rejects it at create time).
    The environment (a Rust extension) is imported here, on first use, so that importing the validation
    rules — and starting `cplane serve` — does not load it."""
    if not _cel_cache:
        from cp.dra.celenv import CelCache

        _cel_cache.append(CelCache())
    return _cel_cache[0].compile(expression).error


def device_selectors(selectors: Any, path: str, errs: list[Cause], *, stored: bool) -> None:
    items = as_list(selectors)
    if too_many_items(items, MAX_SELECTORS, path, errs):
        return
    for i, sel in enumerate(items):
        cel = as_dict(sel).get("cel")
        if not isinstance(cel, dict):
            errs.append(Cause("Required", f"{path}[{i}].cel", ""))
        else:
            _cel(cel.get("expression"), f"{path}[{i}].cel.expression", errs, stored=stored)


# ---------------------------------------------------------------- opaque config

def raw_extension(value: Any, path: str, errs: list[Cause], *, stored: bool, limit: int) -> None:
    if value is None:
        errs.append(Cause("Required", path, ""))
        return
    raw = json.dumps(value, separators=(",", ":"))
    if not stored and len(raw.encode()) > limit:
        too_long(errs, path, limit)
    elif not isinstance(value, dict):
        errs.append(Cause("Invalid", path, "must be a valid JSON object", "<value omitted>"))


def device_configuration(config: dict[str, Any], path: str, errs: list[Cause], *, stored: bool) -> None:
    opaque = config.get("opaque")
    if not isinstance(opaque, dict):
        errs.append(Cause("Required", f"{path}.opaque", ""))
        return
    driver_name(opaque.get("driver"), f"{path}.opaque.driver", errs)
    raw_extension(opaque.get("parameters"), f"{path}.opaque.parameters", errs, stored=stored, limit=OPAQUE_MAX_LEN)


# ---------------------------------------------------------------- tolerations and taints

def device_toleration(t: Any, path: str, errs: list[Cause]) -> None:
    t = as_dict(t)
    key = as_str(t.get("key"))
    if key:
        label_key(key, f"{path}.key", errs)
    op = as_str(t.get("operator"))
    value = as_str(t.get("value"))
    if op == "Exists":
        if value:
            errs.append(Cause("Invalid", f"{path}.value", "must be empty for operator `Exists`", value))
    elif op == "Equal":
        label_value(value, f"{path}.value", errs)
    elif op == "":
        errs.append(Cause("Required", f"{path}.operator", ""))
    else:
        not_supported(errs, f"{path}.operator", op, _TOLERATION_OPS)
    effect = as_str(t.get("effect"))
    if effect and effect not in _TAINT_EFFECTS:
        not_supported(errs, f"{path}.effect", effect, _TAINT_EFFECTS)


def device_taint(t: Any, old: Any, path: str, errs: list[Cause]) -> None:
    t = as_dict(t)
    label_key(t.get("key"), f"{path}.key", errs)
    value = as_str(t.get("value"))
    if value:
        label_value(value, f"{path}.value", errs)
    effect = as_str(t.get("effect"))
    if old is None or as_str(as_dict(old).get("effect")) != effect:
        if not effect:
            errs.append(Cause("Required", f"{path}.effect", ""))
        elif effect not in _TAINT_EFFECTS:
            not_supported(errs, f"{path}.effect", effect, _TAINT_EFFECTS)


def device_tolerations(items: Any, path: str, errs: list[Cause]) -> None:
    items = as_list(items)
    if too_many_items(items, MAX_TOLERATIONS, path, errs):
        return
    for i, t in enumerate(items):
        device_toleration(t, f"{path}[{i}]", errs)


def binding_conditions(obj: dict[str, Any], path: str, errs: list[Cause]) -> None:
    conds = as_list(obj.get("bindingConditions"))
    fails = as_list(obj.get("bindingFailureConditions"))
    for key, items in (("bindingConditions", conds), ("bindingFailureConditions", fails)):
        if not too_many_items(items, MAX_BINDING_CONDITIONS, f"{path}.{key}", errs):
            for i, c in enumerate(items):
                label_key(c, f"{path}.{key}[{i}]", errs)
    seen: set[str] = set()
    for i, c in enumerate(conds):
        if c in seen:
            errs.append(Cause("Duplicate", f"{path}.bindingConditions[{i}]", "", c))
        seen.add(c)
    fseen: set[str] = set()
    for i, c in enumerate(fails):
        if c in fseen:
            errs.append(Cause("Duplicate", f"{path}.bindingFailureConditions[{i}]", "", c))
        fseen.add(c)
        if c in conds:
            errs.append(Cause("Invalid", f"{path}.bindingFailureConditions[{i}]",
                              "bindingFailureConditions must not overlap with bindingConditions", c))
    if not conds and fails:
        errs.append(Cause("Invalid", f"{path}.bindingConditions",
                          "bindingConditions are required to use bindingFailureConditions", GoValue("[]string(nil)")))
    if not fails and conds:
        errs.append(Cause("Invalid", f"{path}.bindingFailureConditions",
                          "bindingFailureConditions are required to use bindingConditions", GoValue("[]string(nil)")))


def skip_node_operations(ops: Any, path: str, errs: list[Cause]) -> None:
    items = as_list(ops)
    for i, op in enumerate(items):
        if op not in _SKIP_NODE_OPS:
            not_supported(errs, f"{path}[{i}]", op, _SKIP_NODE_OPS)
    if "NodePrepareResources" in items and "NodeUnprepareResources" not in items and "*" not in items:
        errs.append(Cause("Invalid", path, "NodePrepareResources cannot be skipped unless NodeUnprepareResources is "
                          "also skipped", GoValue("[...]")))


_CONDITION_STATUSES = ("False", "True", "Unknown")
_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
_REASON_MSG = ("a condition reason must start with alphabetic character, optionally followed by a string of "
               "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. "
               "'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used "
               "for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')")


def metav1_conditions(conditions: list[Any], path: str, errs: list[Cause]) -> None:
    """metav1 ValidateConditions: unique types, then each condition's fields."""
    seen: set[str] = set()
    for i, c in enumerate(conditions):
        c = as_dict(c)
        ipath = f"{path}[{i}]"
        ctype = as_str(c.get("type"))
        if ctype in seen:
            errs.append(Cause("Duplicate", f"{ipath}.type", "", ctype))
        seen.add(ctype)
        label_key(ctype, f"{ipath}.type", errs)
        status = as_str(c.get("status"))
        if status not in _CONDITION_STATUSES:
            not_supported(errs, f"{ipath}.status", status, _CONDITION_STATUSES)
        og = c.get("observedGeneration")
        if is_int(og) and og < 0:
            errs.append(Cause("Invalid", f"{ipath}.observedGeneration", "must be greater than or equal to zero", og))
        if not c.get("lastTransitionTime"):
            errs.append(Cause("Required", f"{ipath}.lastTransitionTime", "must be set"))
        reason = as_str(c.get("reason"))
        if not reason:
            errs.append(Cause("Required", f"{ipath}.reason", "must be set"))
        else:
            if not _REASON.match(reason):
                errs.append(Cause("Invalid", f"{ipath}.reason", _REASON_MSG, reason))
            if len(reason) > 1024:
                too_long(errs, f"{ipath}.reason", 1024)
        if len(as_str(c.get("message"))) > 32768:
            too_long(errs, f"{ipath}.message", 32768)


# ---------------------------------------------------------------- node selectors

_NODE_SELECTOR_OPS = ("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn")


def node_selector(selector: dict[str, Any], path: str, errs: list[Cause]) -> None:
    terms = as_list(selector.get("nodeSelectorTerms"))
    if not terms:
        errs.append(Cause("Required", f"{path}.nodeSelectorTerms", "must have at least one node selector term"))
    for i, term in enumerate(terms):
        term = as_dict(term)
        tpath = f"{path}.nodeSelectorTerms[{i}]"
        for j, req in enumerate(as_list(term.get("matchExpressions"))):
            _node_selector_requirement(as_dict(req), f"{tpath}.matchExpressions[{j}]", errs, fields=False)
        for j, req in enumerate(as_list(term.get("matchFields"))):
            _node_selector_requirement(as_dict(req), f"{tpath}.matchFields[{j}]", errs, fields=True)


def _node_selector_requirement(req: dict[str, Any], path: str, errs: list[Cause], *, fields: bool) -> None:
    op = as_str(req.get("operator"))
    values = as_list(req.get("values"))
    if op in ("In", "NotIn"):
        if not values:
            errs.append(Cause("Required", f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(Cause("Forbidden", f"{path}.values",
                              "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(Cause("Required", f"{path}.values",
                              "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(Cause("Invalid", f"{path}.operator", "not a valid selector operator", op))
    key = as_str(req.get("key"))
    if fields:
        if key != "metadata.name":
            not_supported(errs, f"{path}.key", key, ("metadata.name",))
        elif op in ("In", "NotIn") and len(values) != 1:
            errs.append(Cause("Required", f"{path}.values", "must be only one value when `operator` is 'In' or "
                              "'NotIn' for node field selector"))
    else:
        label_key(key, f"{path}.key", errs)


