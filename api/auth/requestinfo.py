"""Request info (step 1 of the chain): verb, API group, resource, subresource, namespace, name, or a
non-resource path, parsed from the URL alone, before routing; and the RBAC attributes of a request."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from api import codec
from cp import errors, rbac

LONG_RUNNING_VERBS = frozenset({"watch", "proxy"})
# Subresources served as long-running requests (upstream's long-running check): no request timeout.
LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})
# A pod's streaming subresources opened with a WebSocket GET are authorized as `create` (upstream's
# AuthorizePodWebsocketUpgradeCreatePermission, on by default): `get pods/exec` alone opens nothing.
CREATE_ON_GET = frozenset({"attach", "exec", "portforward"})


class RequestInfo(msgspec.Struct, kw_only=True):
    """kube-apiserver's RequestInfo (endpoints/request/requestinfo.go), from the URL alone."""

    resource_request: bool
    path: str
    verb: str
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""

    @property
    def long_running(self) -> bool:
        return self.resource_request and (self.verb in LONG_RUNNING_VERBS or
                                          self.subresource in LONG_RUNNING_SUBRESOURCES)

    @property
    def mutating(self) -> bool:
        return self.verb in ("create", "update", "patch", "delete", "deletecollection", "post", "put")


_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch",
                 "DELETE": "delete"}
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


def _name_from_field_selector(selector: str) -> str:
    for term in selector.split(","):
        for op in ("==", "="):
            key, sep, value = term.partition(op)
            if sep and key.strip() == "metadata.name" and not key.endswith("!"):
                value = value.strip()
                if value and value not in (".", "..") and "/" not in value and "%" not in value:
                    return value
                return ""
    return ""


def request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    parts = [p for p in path.split("/") if p]
    non_resource = RequestInfo(resource_request=False, path=path, verb=method.lower())
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return non_resource
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix == "apis":
        if len(parts) < 3:
            return non_resource
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]
    if parts[0] in ("watch", "proxy"):
        if len(parts) < 2:
            return non_resource
        verb, parts, via_method = parts[0], parts[1:], False
    else:
        verb, via_method = _METHOD_VERBS.get(method.upper(), ""), True
    namespace = ""
    if parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in _NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
    info = RequestInfo(resource_request=True, path=path, verb=verb, api_group=group, api_version=version,
                       namespace=namespace)
    if len(parts) >= 3 and verb not in ("proxy",):
        info.subresource = parts[2]
    if len(parts) >= 2:
        info.name = parts[1]
    info.resource = parts[0]
    if via_method and not info.name and info.verb == "get":
        watch = query.get("watch")
        watching = False
        if watch is not None:
            try:
                watching = bool(codec.parse_bool("watch", watch))
            except errors.StatusError:
                watching = watch.lower() not in ("false", "0")
        info.verb = "watch" if watching else "list"
        selector = query.get("fieldSelector", "")
        if selector:
            info.name = _name_from_field_selector(selector)
    if via_method and info.verb == "get" and info.resource == "pods" and info.subresource in CREATE_ON_GET \
            and not group:
        info.verb = "create"
    if via_method and not info.name and info.verb == "delete":
        info.verb = "deletecollection"
    return info


def attributes(user: rbac.UserInfo, info: RequestInfo) -> rbac.Attributes:
    return rbac.Attributes(user=user, verb=info.verb, resource_request=info.resource_request,
                           namespace=info.namespace, api_group=info.api_group, api_version=info.api_version,
                           resource=info.resource, subresource=info.subresource, name=info.name,
                           path=info.path)
