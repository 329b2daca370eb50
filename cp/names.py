"""apimachinery's string formats (`util/validation`): DNS-1123 labels and subdomains, DNS-1035 labels,
qualified names and label values, with upstream's messages. A leaf module: the validation rules
(`cp.validation.common` re-exports these) and the CEL format library (`cp.kubecel`) both use it."""

from __future__ import annotations

import re

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_LABEL = re.compile("^" + _DNS1123_LABEL_FMT + "$")
_DNS1123_SUBDOMAIN = re.compile("^" + DNS1123_SUBDOMAIN_FMT + "$")
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL = re.compile("^" + _DNS1035_LABEL_FMT + "$")
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY = re.compile("^" + _LABEL_KEY_FMT + "$")
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"
_LABEL_VALUE = re.compile("^" + _LABEL_VALUE_FMT + "$")


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
                             DNS1123_SUBDOMAIN_FMT, "example.com")
_DNS1035_MSG = regex_error("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                           "with an alphabetic character, and end with an alphanumeric character",
                           _DNS1035_LABEL_FMT, "my-name", "abc-123")
_KEY_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " \
           "alphanumeric character"
_NAME_PART_MSG = "name part " + regex_error(_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
_KEY_FORM = regex_error(_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc") + \
    " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
_LABEL_VALUE_MSG = regex_error("a valid label must be an empty string or consist of alphanumeric characters, "
                               "'-', '_' or '.', and must start and end with an alphanumeric character",
                               _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")


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


def is_qualified_name(value: str, *, what: str = "a valid label key") -> list[str]:
    """`content.IsLabelKey`: an optional DNS-subdomain prefix and '/', then a name part. `what` names
    the value in the message for too many '/' ("a qualified name" in the CEL format library)."""
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
        return [f"{what} {_KEY_FORM}"]
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
