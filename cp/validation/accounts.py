"""Validation rules for Secrets and ServiceAccounts (upstream `ValidateSecret`,
`ValidateSecretUpdate`, `ValidateServiceAccount` of `pkg/apis/core/validation`).

A Secret's values never appear in a message: the one rule that reads them (the docker config is
JSON) reports `<secret contents redacted>` as the value, as upstream. Pure.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from cp.errors import Cause
from cp.validation.common import as_dict, as_str, each, is_config_map_key, name_is_dns_subdomain
from cp.validation.meta import validate_object_meta
from cp.validation.registry import Rules

MAX_SECRET_SIZE = 1024 * 1024
REDACTED = "<secret contents redacted>"
SERVICE_ACCOUNT_NAME_KEY = "kubernetes.io/service-account.name"

# type -> data keys it needs (all of them, unless noted in `_validate_type`)
SA_TOKEN = "kubernetes.io/service-account-token"
DOCKERCFG, DOCKERCFG_KEY = "kubernetes.io/dockercfg", ".dockercfg"
DOCKERCONFIGJSON, DOCKERCONFIGJSON_KEY = "kubernetes.io/dockerconfigjson", ".dockerconfigjson"
BASIC_AUTH = "kubernetes.io/basic-auth"
SSH_AUTH = "kubernetes.io/ssh-auth"
TLS = "kubernetes.io/tls"


def _decoded(value: Any) -> bytes:
    """A data value (base64 text, already checked by decoding) as bytes."""
    if isinstance(value, bytes):
        return value
    try:
        return base64.b64decode(as_str(value))
    except (binascii.Error, ValueError):
        return b""


def go_json_error(data: bytes) -> str | None:
    """How Go's `json.Unmarshal` into a `map[string]interface{}` rejects `data` (None: accepted).
    Syntax errors are named by their first offending character, as Go's scanner reports most of them."""
    try:
        text = data.decode()
        value = json.loads(text)
    except UnicodeDecodeError:
        return "invalid character looking for beginning of value"
    except json.JSONDecodeError as exc:
        rest = exc.doc[exc.pos:] if exc.pos < len(exc.doc) else ""
        if not rest.strip():
            return "unexpected end of JSON input"
        ch = rest[0]
        shown = "'\\''" if ch == "'" else f"'{ch}'"
        return f"invalid character {shown} looking for beginning of value"
    if value is None or isinstance(value, dict):
        return None
    kind = ("bool" if isinstance(value, bool) else "number" if isinstance(value, int | float)
            else "string" if isinstance(value, str) else "array")
    return f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"


def validate_secret(obj: dict[str, Any], errs: list[Cause]) -> None:
    """`ValidateSecret` without the metadata: data keys, total size, what each type requires."""
    data = as_dict(obj.get("data"))
    total = 0
    for key, value in data.items():
        each(errs, f"data[{key}]", key, is_config_map_key(key))
        total += len(_decoded(value))
    if total > MAX_SECRET_SIZE:
        errs.append(Cause("TooLong", "data", f"may not be more than {MAX_SECRET_SIZE} bytes"))
    kind = as_str(obj.get("type"))
    if kind == SA_TOKEN:
        annotations = as_dict(as_dict(obj.get("metadata")).get("annotations"))
        if not as_str(annotations.get(SERVICE_ACCOUNT_NAME_KEY)):
            errs.append(Cause("Required", f"metadata.annotations[{SERVICE_ACCOUNT_NAME_KEY}]", ""))
    elif kind in (DOCKERCFG, DOCKERCONFIGJSON):
        key = DOCKERCFG_KEY if kind == DOCKERCFG else DOCKERCONFIGJSON_KEY
        if key not in data:
            errs.append(Cause("Required", f"data[{key}]", ""))
            return
        problem = go_json_error(_decoded(data[key]))
        if problem is not None:
            errs.append(Cause("Invalid", f"data[{key}]", problem, REDACTED))
    elif kind == BASIC_AUTH:
        if "username" not in data and "password" not in data:
            errs.append(Cause("Required", "data[username]", ""))
            errs.append(Cause("Required", "data[password]", ""))
    elif kind == SSH_AUTH:
        if not _decoded(data.get("ssh-privatekey")):
            errs.append(Cause("Required", "data[ssh-privatekey]", ""))
    elif kind == TLS:
        for key in ("tls.crt", "tls.key"):
            if key not in data:
                errs.append(Cause("Required", f"data[{key}]", ""))


def _validate_secret_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause],
                            namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    validate_secret(obj, errs)


def _validate_secret_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    if as_str(new.get("type")) != as_str(old.get("type")):
        errs.append(Cause("Invalid", "type", "field is immutable", as_str(new.get("type"))))
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            errs.append(Cause("Forbidden", "immutable", "field is immutable when `immutable` is set"))
        if as_dict(new.get("data")) != as_dict(old.get("data")):
            errs.append(Cause("Forbidden", "data", "field is immutable when `immutable` is set"))
    validate_secret(new, errs)


def _validate_service_account_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause],
                                     namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)


def _validate_service_account_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    """Only the metadata rules, which every update runs."""


RULES = {
    ("", "Secret"): Rules(_validate_secret_create, _validate_secret_update),
    ("", "ServiceAccount"): Rules(_validate_service_account_create, _validate_service_account_update),
}
