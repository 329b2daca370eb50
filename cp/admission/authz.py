"""The CEL authorizer library of admission expressions (k8s.io/apiserver `pkg/cel/library/authz.go`):
`authorizer.group(g).resource(r).subresource(s).namespace(ns).name(n).check(verb)`,
`authorizer.path(p).check(verb)`, `authorizer.serviceAccount(ns, name)...` (checks as that account),
`authorizer.requestResource.check(verb)` (the request's own resource), and a decision's `allowed()`,
`reason()`, `errored()`, `error()`.

The engine holds no foreign objects, so each step is a map tagged `__authz__` and the library's
functions (receiver-style: `x.f(y)` is `f(x, y)`) build the next one; `check` asks the server's
authorizer (`authorize`; None: every check is allowed, as an authorization-less server's
AlwaysAllow). `fieldSelector`/`labelSelector` are accepted and not part of the check. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cp import rbac
from cp.dra import celenv

__all__ = ["Authorize", "authorizer_value", "functions"]

Authorize = Callable[[rbac.Attributes], bool]
TAG = "__authz__"


def authorizer_value(*, group: str, version: str, resource: str, subresource: str, namespace: str,
                     name: str) -> dict[str, Any]:
    """The `authorizer` variable, with `requestResource` for the request's resource."""
    return {TAG: "authorizer", "serviceAccount": "", "requestResource": {
        TAG: "resource", "serviceAccount": "", "group": group, "version": version, "resource": resource,
        "subresource": subresource, "namespace": namespace, "name": name}}


def _tagged(x: Any, *kinds: str) -> dict[str, Any]:
    if isinstance(x, Mapping) and x.get(TAG) in kinds:
        return dict(x)
    raise celenv.CelFunctionError("no such overload")


def _text(x: Any) -> str:
    if not isinstance(x, str):
        raise celenv.CelFunctionError("no such overload")
    return x


def functions(*, user: rbac.UserInfo | None, authorize: Authorize | None) -> dict[str, Callable[..., Any]]:
    """The library's functions for one request's user."""
    requester = user or rbac.UserInfo(name="")

    def who(step: Mapping[str, Any]) -> rbac.UserInfo:
        account = str(step.get("serviceAccount") or "")
        if not account:
            return requester
        ns, _, name = account.partition("/")
        return rbac.UserInfo(name=rbac.service_account_user(ns, name),
                             groups=("system:serviceaccounts", f"system:serviceaccounts:{ns}"))

    def path(a: Any, p: Any) -> dict[str, Any]:
        base = _tagged(a, "authorizer")
        return {TAG: "path", "serviceAccount": base["serviceAccount"], "path": _text(p)}

    def group(a: Any, g: Any) -> dict[str, Any]:
        base = _tagged(a, "authorizer")
        return {TAG: "group", "serviceAccount": base["serviceAccount"], "group": _text(g)}

    def service_account(a: Any, ns: Any, name: Any) -> dict[str, Any]:
        _tagged(a, "authorizer")
        return {TAG: "authorizer", "serviceAccount": f"{_text(ns)}/{_text(name)}"}

    def resource(g: Any, r: Any) -> dict[str, Any]:
        step = _tagged(g, "group")
        return {**step, TAG: "resource", "resource": _text(r), "subresource": "", "namespace": "", "name": ""}

    def setter(field: str) -> Callable[[Any, Any], dict[str, Any]]:
        def set_field(r: Any, value: Any) -> dict[str, Any]:
            step = _tagged(r, "resource")
            step[field] = _text(value)
            return step
        return set_field

    def selector(r: Any, _value: Any) -> dict[str, Any]:
        return _tagged(r, "resource")

    def check(step: Any, verb: Any) -> dict[str, Any]:
        s = _tagged(step, "path", "resource")
        v = _text(verb)
        if s[TAG] == "path":
            attrs = rbac.Attributes(user=who(s), verb=v, resource_request=False, path=str(s["path"]))
        else:
            attrs = rbac.Attributes(user=who(s), verb=v, namespace=str(s.get("namespace") or ""),
                                    api_group=str(s.get("group") or ""), api_version=str(s.get("version") or "*"),
                                    resource=str(s.get("resource") or ""),
                                    subresource=str(s.get("subresource") or ""), name=str(s.get("name") or ""))
        ok = True if authorize is None else bool(authorize(attrs))
        return {TAG: "decision", "allowed": ok, "reason": "", "error": ""}

    def allowed(d: Any) -> bool:
        return bool(_tagged(d, "decision")["allowed"])

    def reason(d: Any) -> str:
        return str(_tagged(d, "decision")["reason"])

    def errored(d: Any) -> bool:
        return bool(_tagged(d, "decision")["error"])

    def error(d: Any) -> str:
        return str(_tagged(d, "decision")["error"])

    return {"path": path, "group": group, "serviceAccount": service_account, "resource": resource,
            "subresource": setter("subresource"), "namespace": setter("namespace"), "name": setter("name"),
            "fieldSelector": selector, "labelSelector": selector, "check": check, "allowed": allowed,
            "reason": reason, "errored": errored, "error": error}
