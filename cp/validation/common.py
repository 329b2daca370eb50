"""The helpers every rule module shares: Go-style value rendering, field-error builders, apimachinery's
string formats (DNS labels and subdomains, qualified names, label values...) and name checks. Pure.

Messages follow upstream apimachinery (`validation.IsDNS1123Label`, `field.Invalid`...) byte for byte.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeGuard

from cp import quantity
from cp.errors import Cause
from cp.errors import GoValue as GoValue  # the rule modules import it with the other helpers
from cp.names import (
    DNS1123_SUBDOMAIN_FMT,
)
from cp.names import (
    is_dns1035_label as is_dns1035_label,
)
from cp.names import (
    is_dns1123_label as is_dns1123_label,
)
from cp.names import (
    is_dns1123_subdomain as is_dns1123_subdomain,
)
from cp.names import (
    is_label_value as is_label_value,
)
from cp.names import (
    is_qualified_name as is_qualified_name,
)
from cp.names import (
    max_len_error as max_len_error,
)
from cp.names import (
    regex_error as regex_error,
)

# ---------------------------------------------------------------- small helpers


def meta_of(obj: dict[str, Any]) -> dict[str, Any]:
    """The object's metadata, read-only (an empty dict when absent; never adds one)."""
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


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


def is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def as_dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def as_str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def parse_quantity(value: Any) -> Any:
    """A Quantity's value, or None when it does not parse."""
    try:
        return quantity.parse(value)
    except (quantity.QuantityError, TypeError):
        return None


def not_supported(errs: list[Cause], path: str, value: Any, valid: list[str] | tuple[str, ...]) -> None:
    errs.append(Cause("NotSupported", path, "supported values: " + ", ".join(f'"{v}"' for v in valid),
                      value))


def too_many(errs: list[Cause], path: str, actual: int, limit: int) -> None:
    errs.append(Cause("TooMany", path, f"must have at most {limit} item{'s' if limit != 1 else ''}", actual))


def too_long(errs: list[Cause], path: str, limit: int) -> None:
    errs.append(Cause("TooLong", path, f"may not be more than {limit} bytes"))


def nonnegative(errs: list[Cause], path: str, value: Any) -> None:
    if is_int(value) and value < 0:
        errs.append(Cause("Invalid", path, "must be greater than or equal to 0", value))


def immutable(errs: list[Cause], path: str, new: Any, old: Any, shown: Any = None) -> None:
    if new != old:
        errs.append(Cause("Invalid", path, "field is immutable", new if shown is None else shown))


# ---------------------------------------------------------------- string formats (apimachinery)

_DNS1123_SUBDOMAIN_CASELESS = re.compile("^" + DNS1123_SUBDOMAIN_FMT + "$", re.IGNORECASE)
_C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER = re.compile("^" + _C_IDENTIFIER_FMT + "$")
_PORT_NAME_CHARS = re.compile("^[-a-z0-9]+$")
_PORT_NAME_LETTER = re.compile("[a-z]")
_CONFIG_MAP_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_MAP_KEY = re.compile("^" + _CONFIG_MAP_KEY_FMT + "$")
PERCENT = re.compile(r"^[0-9]+%$")


_SUBDOMAIN_CASELESS_MSG = regex_error("an RFC 1123 subdomain must consist of alphanumeric characters, '-' or "
                                      "'.', and must start and end with an alphanumeric character",
                                      DNS1123_SUBDOMAIN_FMT, "Example.com")
_C_IDENTIFIER_MSG = regex_error("a valid C identifier must start with alphabetic character or '_', followed by "
                                "a string of alphanumeric characters or '_'", _C_IDENTIFIER_FMT,
                                "my_name", "MY_NAME", "MyName")
_CONFIG_MAP_KEY_MSG = regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                                  _CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name")


def is_dns1123_subdomain_caseless(value: str) -> list[str]:
    """content.IsDNS1123SubdomainCaseless: upper case letters are allowed."""
    out = []
    if len(value) > 253:
        out.append(max_len_error(253))
    if not _DNS1123_SUBDOMAIN_CASELESS.match(value):
        out.append(_SUBDOMAIN_CASELESS_MSG)
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


def each(errs: list[Cause], path: str, value: Any, msgs: list[str]) -> None:
    for m in msgs:
        errs.append(Cause("Invalid", path, m, value))


def validate_label_name(key: str, path: str, errs: list[Cause]) -> None:
    each(errs, path, key, is_qualified_name(key))


def validate_labels(labels: Any, path: str, errs: list[Cause]) -> None:
    if not isinstance(labels, dict):
        return
    for k, v in labels.items():
        validate_label_name(k, path, errs)
        if isinstance(v, str):
            each(errs, path, v, is_label_value(v))


def validate_annotations(annotations: Any, path: str, errs: list[Cause]) -> None:
    if not isinstance(annotations, dict):
        return
    total = 0
    for k, v in annotations.items():
        each(errs, path, k, is_qualified_name(k.lower()))
        total += len(k.encode()) + len(v.encode() if isinstance(v, str) else b"")
    if total > 256 * 1024:
        too_long(errs, path, 256 * 1024)


def validate_driver_name(name: str, path: str, errs: list[Cause]) -> None:
    """corevalidation.ValidateCSIDriverName (DRA driver names)."""
    if not name:
        errs.append(Cause("Required", path, ""))
        return
    if len(name) > 63:
        errs.append(Cause("TooLong", path, "may not be more than 63 bytes"))
    for m in ([] if _DNS1123_SUBDOMAIN_CASELESS.match(name.lower()) else [_SUBDOMAIN_CASELESS_MSG]):
        errs.append(Cause("Invalid", path, m, name))



# ---------------------------------------------------------------- more formats (apimachinery util/validation)

_WILDCARD_SUBDOMAIN_FMT = "\\*\\." + DNS1123_SUBDOMAIN_FMT
_WILDCARD_SUBDOMAIN = re.compile("^" + _WILDCARD_SUBDOMAIN_FMT + "$")
_WILDCARD_SUBDOMAIN_MSG = regex_error(
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist "
    "of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character",
    _WILDCARD_SUBDOMAIN_FMT, "*.example.com")
_HTTP_PATH_FMT = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+"
_HTTP_PATH = re.compile("^" + _HTTP_PATH_FMT + "$")


def go_json(value: Any, *, sort_keys: bool = False) -> GoValue:
    """A composite bad value as apimachinery renders it: Go's `json.Marshal` (compact, `<`, `>` and `&`
    escaped; map keys sorted, so `sort_keys` for Go maps). Structs are shown with their v1 JSON field
    names in the order the client sent them."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys)
    return GoValue(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def is_valid_port_num(port: Any) -> list[str]:
    return [] if is_int(port) and 1 <= port <= 65535 else [inclusive_range_error(1, 65535)]


def is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    out = []
    if len(value) > 253:
        out.append(max_len_error(253))
    if not _WILDCARD_SUBDOMAIN.match(value):
        out.append(_WILDCARD_SUBDOMAIN_MSG)
    return out


def validate_qualified_name(value: str, path: str, errs: list[Cause]) -> None:
    """apivalidation.ValidateQualifiedName."""
    each(errs, path, value, is_qualified_name(value))


def is_fully_qualified_name(path: str, name: str) -> list[Cause]:
    """`IsFullyQualifiedName`: a DNS subdomain of at least three segments."""
    if not name:
        return [Cause("Required", path, "")]
    msgs = is_dns1123_subdomain(name)
    if msgs:
        return [Cause("Invalid", path, ",".join(msgs), name)]
    if len(name.split(".")) < 3:
        return [Cause("Invalid", path, "should be a domain with at least three segments separated by dots", name)]
    return []


def is_fully_qualified_domain_name(path: str, name: str) -> list[Cause]:
    """`IsFullyQualifiedDomainName`: a DNS subdomain of at least two segments, a trailing dot allowed."""
    if not name:
        return [Cause("Required", path, "")]
    if name.endswith("."):
        name = name[:-1]
    msgs = is_dns1123_subdomain(name)
    if msgs:
        return [Cause("Invalid", path, ",".join(msgs), name)]
    if len(name.split(".")) < 2:
        return [Cause("Invalid", path, "should be a domain with at least two segments separated by dots", name)]
    for label in name.split("."):
        msgs = is_dns1123_label(label)
        if msgs:
            return [Cause("Invalid", path, ",".join(msgs), label)]
    return []


def is_domain_prefixed_path(path: str, value: str) -> list[Cause]:
    """`IsDomainPrefixedPath`: `example.com/some/path`."""
    if not value:
        return [Cause("Required", path, "")]
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        return [Cause("Invalid", path, 'must be a domain-prefixed path (such as "acme.io/foo")', value)]
    out = [Cause("Invalid", path, m, host) for m in is_dns1123_subdomain(host)]
    if not _HTTP_PATH.match(rest):
        out.append(Cause("Invalid", path, regex_error("Invalid path", _HTTP_PATH_FMT), rest))
    return out
