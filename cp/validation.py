"""Structural checks and semantic validation of served objects, as kube-apiserver performs them.

`check_structure` decodes against the official schema (see `cp/structure.py`); `validate_create`
and `validate_update` run the per-kind rules of upstream's `pkg/apis/*/validation` and raise one
`errors.Invalid` that carries every cause found (upstream aggregates). Field paths, error types and
messages follow upstream (`field.Invalid`, `Required`, `NotSupported`...). Pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from cp import errors, structure
from cp.errors import Cause

# ---------------------------------------------------------------- the CEL hook

_cel_checker: Callable[[str], str | None] | None = None


def set_cel_checker(fn: Callable[[str], str | None] | None) -> None:
    """Install the CEL compile check used for device selector expressions.

    `fn(expression)` returns None when the expression compiles, else an error message (reported as
    `Invalid` on the `cel.expression` field).
    """
    global _cel_checker
    _cel_checker = fn


# ---------------------------------------------------------------- entry points


def check_structure(obj: dict[str, Any], *, group: str, version: str, kind: str,
                    field_validation: str) -> tuple[dict[str, Any], list[str]]:
    """Type-check `obj` against the kind's schema; handle unknown fields per `field_validation`.

    Returns the (possibly cleaned) object and warnings. Raises `errors.BadRequest`.
    """
    return structure.check(obj, group=group, version=version, kind=kind, field_validation=field_validation)


def validate_create(obj: dict[str, Any], *, group: str, version: str, kind: str, namespaced: bool) -> None:
    errs: list[Cause] = []
    rules = _RULES.get((group, kind))
    meta = _meta(obj)
    if rules is None:
        validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    else:
        rules.create(obj, meta, errs, namespaced)
    _raise(errs, obj, group=group, kind=kind)


def validate_update(new: dict[str, Any], old: dict[str, Any], *, group: str, version: str, kind: str,
                    subresource: str = "") -> None:
    errs: list[Cause] = []
    rules = _RULES.get((group, kind))
    meta, old_meta = _meta(new), _meta(old)
    validate_object_meta_update(meta, old_meta, errs)
    if rules is not None:
        if subresource == "status":
            if rules.status_update is not None:
                rules.status_update(new, old, errs)
        elif rules.update is not None:
            rules.update(new, old, errs)
    _raise(errs, new, group=group, kind=kind)


def _raise(errs: list[Cause], obj: dict[str, Any], *, group: str, kind: str) -> None:
    if errs:
        name = str(_meta(obj).get("name") or "")
        raise errors.Invalid(kind=kind, group=group, name=name, causes=errs)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


# ---------------------------------------------------------------- small helpers


class GoValue:
    """A value rendered the way Go's `%#v` shows it in upstream messages (not quoted)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text


def go_string_map(m: Any) -> GoValue:
    if not isinstance(m, dict) or not m:
        return GoValue("map[string]string(nil)" if not m else "map[string]string{}")
    body = ", ".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in sorted(m.items()))
    return GoValue("map[string]string{" + body + "}")


def go_label_selector(sel: Any) -> GoValue:
    if not isinstance(sel, dict):
        return GoValue("nil")
    labels = sel.get("matchLabels")
    exprs = sel.get("matchExpressions")
    ml = go_string_map(labels) if labels else GoValue("map[string]string(nil)")
    if exprs:
        parts = []
        for e in exprs if isinstance(exprs, list) else []:
            e = e if isinstance(e, dict) else {}
            vals = e.get("values")
            vs = ("[]string{" + ", ".join(json.dumps(v) for v in vals) + "}") if vals else "[]string(nil)"
            parts.append(f'v1.LabelSelectorRequirement{{Key:{json.dumps(e.get("key", ""))}, '
                         f'Operator:{json.dumps(e.get("operator", ""))}, Values:{vs}}}')
        me = "[]v1.LabelSelectorRequirement{" + ", ".join(parts) + "}"
    else:
        me = "[]v1.LabelSelectorRequirement(nil)"
    return GoValue(f"v1.LabelSelector{{MatchLabels:{ml}, MatchExpressions:{me}}}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _not_supported(errs: list[Cause], path: str, value: Any, valid: list[str] | tuple[str, ...]) -> None:
    errs.append(Cause("NotSupported", path, "supported values: " + ", ".join(f'"{v}"' for v in valid),
                      value))


def _too_many(errs: list[Cause], path: str, actual: int, limit: int) -> None:
    errs.append(Cause("TooMany", path, f"must have at most {limit} item{'s' if limit != 1 else ''}", actual))


def _too_long(errs: list[Cause], path: str, limit: int) -> None:
    errs.append(Cause("TooLong", path, f"may not be more than {limit} bytes"))


def _nonnegative(errs: list[Cause], path: str, value: Any) -> None:
    if _is_int(value) and value < 0:
        errs.append(Cause("Invalid", path, "must be greater than or equal to 0", value))


def _immutable(errs: list[Cause], path: str, new: Any, old: Any, shown: Any = None) -> None:
    if new != old:
        errs.append(Cause("Invalid", path, "field is immutable", new if shown is None else shown))


# ---------------------------------------------------------------- string formats (apimachinery)

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_LABEL = re.compile("^" + _DNS1123_LABEL_FMT + "$")
_DNS1123_SUBDOMAIN = re.compile("^" + _DNS1123_SUBDOMAIN_FMT + "$")
_DNS1123_SUBDOMAIN_CASELESS = re.compile("^" + _DNS1123_SUBDOMAIN_FMT + "$", re.IGNORECASE)
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL = re.compile("^" + _DNS1035_LABEL_FMT + "$")
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY = re.compile("^" + _LABEL_KEY_FMT + "$")
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"
_LABEL_VALUE = re.compile("^" + _LABEL_VALUE_FMT + "$")
_C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER = re.compile("^" + _C_IDENTIFIER_FMT + "$")
_PORT_NAME_CHARS = re.compile("^[-a-z0-9]+$")
_PORT_NAME_LETTER = re.compile("[a-z]")
_CONFIG_MAP_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_MAP_KEY = re.compile("^" + _CONFIG_MAP_KEY_FMT + "$")
_PERCENT = re.compile(r"^[0-9]+%$")


def max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    ex = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {ex}regex used for validation is '{fmt}')"


_LABEL_MSG = regex_error("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                         "and must start and end with an alphanumeric character", _DNS1123_LABEL_FMT,
                         "my-name", "123-abc")
_SUBDOMAIN_MSG = regex_error("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                             "'-' or '.', and must start and end with an alphanumeric character",
                             _DNS1123_SUBDOMAIN_FMT, "example.com")
_SUBDOMAIN_CASELESS_MSG = regex_error("an RFC 1123 subdomain must consist of alphanumeric characters, '-' or "
                                      "'.', and must start and end with an alphanumeric character",
                                      _DNS1123_SUBDOMAIN_FMT, "Example.com")
_DNS1035_MSG = regex_error("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                           "with an alphabetic character, and end with an alphanumeric character",
                           _DNS1035_LABEL_FMT, "my-name", "abc-123")
_KEY_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " \
           "alphanumeric character"
_NAME_PART_MSG = "name part " + regex_error(_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
_BAD_KEY_MSG = "a valid label key " + regex_error(_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc") + \
    " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
_LABEL_VALUE_MSG = regex_error("a valid label must be an empty string or consist of alphanumeric characters, "
                               "'-', '_' or '.', and must start and end with an alphanumeric character",
                               _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
_C_IDENTIFIER_MSG = regex_error("a valid C identifier must start with alphabetic character or '_', followed by "
                                "a string of alphanumeric characters or '_'", _C_IDENTIFIER_FMT,
                                "my_name", "MY_NAME", "MyName")
_CONFIG_MAP_KEY_MSG = regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                                  _CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name")


def is_dns1123_label(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append(max_len_error(63))
    if not _DNS1123_LABEL.match(value):
        out.append("must not contain dots" if _DNS1123_SUBDOMAIN.match(value) else _LABEL_MSG)
    return out


def is_dns1123_subdomain(value: str) -> list[str]:
    out = []
    if len(value) > 253:
        out.append(max_len_error(253))
    if not _DNS1123_SUBDOMAIN.match(value):
        out.append(_SUBDOMAIN_MSG)
    return out


def is_dns1035_label(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append(max_len_error(63))
    if not _DNS1035_LABEL.match(value):
        out.append(_DNS1035_MSG)
    return out


def is_qualified_name(value: str) -> list[str]:
    """`content.IsLabelKey`: an optional DNS-subdomain prefix and '/', then a name part."""
    parts = value.split("/")
    out: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            out.append("prefix part must be non-empty")
        else:
            out.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [_BAD_KEY_MSG]
    if not name:
        out.append("name part must be non-empty")
    elif len(name) > 63:
        out.append("name part " + max_len_error(63))
    if not _LABEL_KEY.match(name):
        out.append(_NAME_PART_MSG)
    return out


def is_label_value(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append(max_len_error(63))
    if not _LABEL_VALUE.match(value):
        out.append(_LABEL_VALUE_MSG)
    return out


def is_c_identifier(value: str) -> list[str]:
    return [] if _C_IDENTIFIER.match(value) else [_C_IDENTIFIER_MSG]


def is_valid_port_name(port: str) -> list[str]:
    out = []
    if len(port) > 15:
        out.append(max_len_error(15))
    if not _PORT_NAME_CHARS.match(port):
        out.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER.search(port):
        out.append("must contain at least one letter (a-z)")
    if "--" in port:
        out.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        out.append("must not begin or end with a hyphen")
    return out


def is_config_map_key(value: str) -> list[str]:
    out = []
    if len(value) > 253:
        out.append(max_len_error(253))
    if not _CONFIG_MAP_KEY.match(value):
        out.append(_CONFIG_MAP_KEY_MSG)
    if value == ".":
        out.append("must not be '.'")
    elif value == "..":
        out.append("must not be '..'")
    elif value.startswith(".."):
        out.append("must not start with '..'")
    return out


def _mask_trailing_dash(name: str) -> str:
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool) -> list[str]:
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool) -> list[str]:
    return is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


def validate_path_segment_name(name: str, prefix: bool) -> list[str]:
    if not prefix and name in (".", ".."):
        return [f"may not be '{name}'"]
    out = []
    for bad in ("/", "%"):
        if bad in name:
            out.append(f"may not contain '{bad}'")
    return out


def _each(errs: list[Cause], path: str, value: str, msgs: list[str]) -> None:
    for m in msgs:
        errs.append(Cause("Invalid", path, m, value))


def validate_label_name(key: str, path: str, errs: list[Cause]) -> None:
    _each(errs, path, key, is_qualified_name(key))


def validate_labels(labels: Any, path: str, errs: list[Cause]) -> None:
    if not isinstance(labels, dict):
        return
    for k, v in labels.items():
        validate_label_name(k, path, errs)
        if isinstance(v, str):
            _each(errs, path, v, is_label_value(v))


def validate_annotations(annotations: Any, path: str, errs: list[Cause]) -> None:
    if not isinstance(annotations, dict):
        return
    total = 0
    for k, v in annotations.items():
        _each(errs, path, k, is_qualified_name(k.lower()))
        total += len(k.encode()) + len(v.encode() if isinstance(v, str) else b"")
    if total > 256 * 1024:
        _too_long(errs, path, 256 * 1024)


def _driver_name_errors(name: str, path: str, errs: list[Cause]) -> None:
    """corevalidation.ValidateCSIDriverName (DRA driver names)."""
    if not name:
        errs.append(Cause("Required", path, ""))
        return
    if len(name) > 63:
        errs.append(Cause("TooLong", path, "may not be more than 63 bytes"))
    for m in ([] if _DNS1123_SUBDOMAIN_CASELESS.match(name.lower()) else [_SUBDOMAIN_CASELESS_MSG]):
        errs.append(Cause("Invalid", path, m, name))


# ---------------------------------------------------------------- object metadata

_STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")
NameFn = Callable[[str, bool], list[str]]


def validate_object_meta(meta: dict[str, Any], errs: list[Cause], *, namespaced: bool, name_fn: NameFn,
                         path: str = "metadata") -> None:
    """apimachinery ValidateObjectMeta + core's finalizer-name check (create)."""
    generate = _str(meta.get("generateName"))
    if generate:
        _each(errs, f"{path}.generateName", generate, name_fn(generate, True))
    name = _str(meta.get("name"))
    if not name:
        errs.append(Cause("Required", f"{path}.name", "name or generateName is required"))
    else:
        _each(errs, f"{path}.name", name, name_fn(name, False))
    _validate_meta_common(meta, errs, namespaced=namespaced, path=path)


def _validate_meta_common(meta: dict[str, Any], errs: list[Cause], *, namespaced: bool, path: str) -> None:
    ns = _str(meta.get("namespace"))
    if namespaced:
        if not ns:
            errs.append(Cause("Required", f"{path}.namespace", ""))
        else:
            _each(errs, f"{path}.namespace", ns, is_dns1123_label(ns))
    elif ns:
        errs.append(Cause("Forbidden", f"{path}.namespace", "not allowed on this type"))
    _nonnegative(errs, f"{path}.generation", meta.get("generation"))
    validate_labels(meta.get("labels"), f"{path}.labels", errs)
    validate_annotations(meta.get("annotations"), f"{path}.annotations", errs)
    _validate_owner_references(meta.get("ownerReferences"), f"{path}.ownerReferences", errs)
    _validate_finalizers(meta.get("finalizers"), f"{path}.finalizers", errs)


def _validate_owner_references(refs: Any, path: str, errs: list[Cause]) -> None:
    first_controller = ""
    for ref in _list(refs):
        ref = _dict(ref)
        api_version = _str(ref.get("apiVersion"))
        kind = _str(ref.get("kind"))
        version = api_version.rsplit("/", 1)[-1] if api_version else ""
        if not version:
            errs.append(Cause("Invalid", f"{path}.apiVersion", "version must not be empty", api_version))
        if not kind:
            errs.append(Cause("Invalid", f"{path}.kind", "must not be empty", kind))
        if not ref.get("name"):
            errs.append(Cause("Invalid", f"{path}.name", "must not be empty", _str(ref.get("name"))))
        if not ref.get("uid"):
            errs.append(Cause("Invalid", f"{path}.uid", "must not be empty", _str(ref.get("uid"))))
        if api_version == "v1" and kind == "Event":
            errs.append(Cause("Invalid", path, "/v1, Kind=Event is disallowed from being an owner",
                              GoValue("v1.OwnerReference{...}")))
        if ref.get("controller") is True:
            current = f"{kind}/{_str(ref.get('name'))}"
            if first_controller:
                errs.append(Cause("Invalid", path,
                                  "Only one reference can have Controller set to true. Found \"true\" in "
                                  f"references for {first_controller} and {current}", GoValue("[...]")))
            else:
                first_controller = current


def _validate_finalizers(finalizers: Any, path: str, errs: list[Cause]) -> None:
    items = _list(finalizers)
    for f in items:
        if isinstance(f, str):
            _each(errs, path, f, is_qualified_name(f))
    if "orphan" in items and "foregroundDeletion" in items:
        errs.append(Cause("Invalid", path, "finalizer orphan and foregroundDeletion cannot be both set",
                          GoValue("[]string{" + ", ".join(json.dumps(f) for f in items) + "}")))
    for i, f in enumerate(items):
        if isinstance(f, str) and "/" not in f and f not in _STANDARD_FINALIZERS and not is_qualified_name(f):
            errs.append(Cause("Invalid", f"{path}[{i}]",
                              "name is neither a standard finalizer name nor is it fully qualified", f))


def validate_object_meta_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause],
                                path: str = "metadata") -> None:
    """apimachinery ValidateObjectMetaUpdate (plus the label/annotation/owner/finalizer checks)."""
    if old.get("deletionTimestamp"):
        added = sorted(set(_list(new.get("finalizers"))) - set(_list(old.get("finalizers"))))
        if added:
            shown = "[]string{" + ", ".join(json.dumps(f) for f in added) + "}"
            errs.append(Cause("Forbidden", f"{path}.finalizers",
                              f"no new finalizers can be added if the object is being deleted, found new "
                              f"finalizers {shown}"))
    gen_new, gen_old = new.get("generation"), old.get("generation")
    if _is_int(gen_new) and _is_int(gen_old) and gen_new < gen_old:
        errs.append(Cause("Invalid", f"{path}.generation", "must not be decremented", gen_new))
    for key in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                "deletionGracePeriodSeconds"):
        nv, ov = new.get(key), old.get(key)
        if nv != ov and not (key == "namespace" and not nv and not ov):
            errs.append(Cause("Invalid", f"{path}.{key}", "field is immutable",
                              nv if nv is not None else GoValue("null")))
    validate_labels(new.get("labels"), f"{path}.labels", errs)
    validate_annotations(new.get("annotations"), f"{path}.annotations", errs)
    _validate_owner_references(new.get("ownerReferences"), f"{path}.ownerReferences", errs)
    _validate_finalizers(new.get("finalizers"), f"{path}.finalizers", errs)


def validate_template_object_meta(meta: Any, path: str, errs: list[Cause]) -> None:
    """ValidateTemplateObjectMeta: only labels and annotations are checked."""
    meta = _dict(meta)
    validate_labels(meta.get("labels"), f"{path}.labels", errs)
    validate_annotations(meta.get("annotations"), f"{path}.annotations", errs)


# ---------------------------------------------------------------- label selectors

def validate_label_selector(sel: Any, path: str, errs: list[Cause]) -> None:
    if not isinstance(sel, dict):
        return
    for i, req in enumerate(_list(sel.get("matchExpressions"))):
        req = _dict(req)
        rpath = f"{path}.matchExpressions[{i}]"
        op = req.get("operator")
        values = _list(req.get("values"))
        if op in ("In", "NotIn"):
            if not values:
                errs.append(Cause("Required", f"{rpath}.values",
                                  "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(Cause("Forbidden", f"{rpath}.values",
                                  "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            errs.append(Cause("Invalid", f"{rpath}.operator", "not a valid selector operator", op))
        validate_label_name(_str(req.get("key")), f"{rpath}.key", errs)
    validate_labels(sel.get("matchLabels"), f"{path}.matchLabels", errs)


def selector_matches(sel: dict[str, Any], labels: dict[str, Any]) -> bool:
    for k, v in _dict(sel.get("matchLabels")).items():
        if labels.get(k) != v:
            return False
    for req in _list(sel.get("matchExpressions")):
        req = _dict(req)
        key, op, values = req.get("key"), req.get("operator"), _list(req.get("values"))
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


# ---------------------------------------------------------------- per-kind rules


class _Rules:
    __slots__ = ("create", "status_update", "update")

    def __init__(self, create: Callable[[dict[str, Any], dict[str, Any], list[Cause], bool], None],
                 update: Callable[[dict[str, Any], dict[str, Any], list[Cause]], None] | None = None,
                 status_update: Callable[[dict[str, Any], dict[str, Any], list[Cause]], None] | None = None
                 ) -> None:
        self.create = create
        self.update = update
        self.status_update = status_update


# The kind-specific rule sets live in the modules below; they register into _RULES.
_RULES: dict[tuple[str, str], _Rules] = {}


def register(group: str, kind: str, rules: _Rules) -> None:
    _RULES[(group, kind)] = rules


from cp import validation_core as _core  # noqa: E402
from cp import validation_dra as _dra  # noqa: E402

_core.install()
_dra.install()

__all__ = [
    "GoValue", "check_structure", "is_dns1123_label", "is_dns1123_subdomain", "is_qualified_name",
    "set_cel_checker", "validate_create", "validate_update",
]
