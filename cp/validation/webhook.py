"""Webhook client configurations (`url` or `service`), as k8s.io/apiserver's `util/webhook` validates them
for admission webhooks and CustomResourceDefinition conversion webhooks. Pure."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from cp.errors import Cause
from cp.validation.common import (
    as_dict,
    as_str,
    each,
    go_json,
    is_dns1035_label,
    is_dns1123_subdomain,
    is_int,
    is_valid_port_num,
)

_FORM = "; desired format: https://host[/path]"
REVIEW_VERSIONS = ("v1", "v1beta1")


def validate_client_config(cc: Any, path: str, errs: list[Cause], *, with_port: bool = True) -> None:
    """Exactly one of `url` and `service`, each valid."""
    cc = as_dict(cc)
    url, service = cc.get("url"), cc.get("service")
    if (url is None) == (service is None):
        errs.append(Cause("Required", path, "exactly one of url or service is required"))
    elif url is not None:
        validate_url(as_str(url), f"{path}.url", errs)
    else:
        service = as_dict(service)
        validate_service(service, f"{path}.service", errs, with_port=with_port)


def validate_url(url: str, path: str, errs: list[Cause]) -> None:
    """ValidateWebhookURL with https required."""
    try:
        u = urlsplit(url)
        u.port  # noqa: B018 (a malformed port is a parse error, as for Go's url.Parse)
    except ValueError as exc:
        errs.append(Cause("Required", path, f'url must be a valid URL: parse "{url}": {exc}{_FORM}'))
        return
    if u.scheme != "https":
        errs.append(Cause("Invalid", path, "'https' is the only allowed URL scheme" + _FORM, u.scheme))
    host = u.netloc.rpartition("@")[2]
    if not host:
        errs.append(Cause("Invalid", path, "host must be specified" + _FORM, host))
    if "@" in u.netloc:
        errs.append(Cause("Invalid", path, "user information is not permitted in the URL",
                          u.netloc.rpartition("@")[0]))
    if u.fragment:
        errs.append(Cause("Invalid", path, "fragments are not permitted in the URL", u.fragment))
    if u.query:
        errs.append(Cause("Invalid", path, "query parameters are not permitted in the URL", u.query))


def validate_service(service: dict[str, Any], path: str, errs: list[Cause], *, with_port: bool) -> None:
    """ValidateWebhookService: name, namespace, port (once defaulted) and an optional URL path."""
    if not as_str(service.get("name")):
        errs.append(Cause("Required", f"{path}.name", ""))
    if not as_str(service.get("namespace")):
        errs.append(Cause("Required", f"{path}.namespace", ""))
    port = service.get("port")
    if with_port and (is_int(port) or port is None):
        msgs = is_valid_port_num(port if port is not None else 0)
        if msgs:
            errs.append(Cause("Invalid", f"{path}.port", "port is not valid: " + ", ".join(msgs),
                              port if port is not None else 0))
    url_path = service.get("path")
    if not isinstance(url_path, str) or url_path in ("", "/"):
        return
    ppath = f"{path}.path"
    if url_path == "//":
        errs.append(Cause("Invalid", ppath, "segment[0] may not be empty", url_path))
        return
    if not url_path.startswith("/"):
        errs.append(Cause("Invalid", ppath, "must start with a '/'", url_path))
    rest = url_path[1:]
    if rest.endswith("/"):
        rest = rest[:-1]
    for i, step in enumerate(rest.split("/")):
        if not step:
            errs.append(Cause("Invalid", ppath, f"segment[{i}] may not be empty", url_path))
            continue
        for msg in is_dns1123_subdomain(step):
            errs.append(Cause("Invalid", ppath, f"segment[{i}]: {msg}", url_path))


def validate_review_versions(versions: list[Any], path: str, errs: list[Cause], *, require_known: bool) -> None:
    """The AdmissionReview / ConversionReview versions a webhook accepts: at least one, no duplicates, DNS
    labels, and (unless the stored object already lacked one) one that this server sends."""
    if not versions:
        errs.append(Cause("Required", path, "must specify one of " + ", ".join(REVIEW_VERSIONS)))
        return
    seen: set[str] = set()
    known = False
    for i, v in enumerate(versions):
        v = as_str(v)
        if v in seen:
            errs.append(Cause("Invalid", f"{path}[{i}]", "duplicate version", v))
            continue
        seen.add(v)
        each(errs, f"{path}[{i}]", v, is_dns1035_label(v))
        known = known or v in REVIEW_VERSIONS
    if require_known and not known:
        errs.append(Cause("Invalid", path, "must include at least one of " + ", ".join(REVIEW_VERSIONS),
                          go_json(versions)))
