"""The authorization matrix: users x verbs x resources x namespaces against expected allow/deny,
checked both through real requests (403 or not) and through SelfSubjectAccessReview.

The expectation is written from the default roles' documented meaning (view ⊂ edit ⊂ admin), not
computed by cp/rbac.py.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from tests.api.security.conftest import Secure, binding, call, rbac_path

R, W = {"get", "list", "watch"}, {"create", "update", "patch", "delete", "deletecollection"}
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
# (group, resource, subresource, namespaced)
RESOURCES = (("", "pods", "", True), ("", "pods", "status", True), ("", "configmaps", "", True),
             ("apps", "deployments", "", True), ("resource.k8s.io", "resourceclaims", "", True),
             ("rbac.authorization.k8s.io", "rolebindings", "", True), ("", "nodes", "", False))
NAMESPACES = ("a", "b", "")
USERS = ("admin", "alice", "bob", "carol", "dana", "builder")

VIEW = {("", "pods", ""), ("", "pods", "status"), ("", "configmaps", ""), ("apps", "deployments", ""),
        ("resource.k8s.io", "resourceclaims", "")}
EDIT_WRITES = {("", "pods", ""), ("", "configmaps", ""), ("apps", "deployments", ""),
               ("resource.k8s.io", "resourceclaims", "")}
ADMIN_EXTRA = {("rbac.authorization.k8s.io", "rolebindings", "")}


def role_allows(role: str, verb: str, key: tuple[str, str, str]) -> bool:
    if verb in R and key in VIEW:
        return True
    if role in ("edit", "admin") and verb in W and key in EDIT_WRITES:
        return True
    return role == "admin" and key in ADMIN_EXTRA and verb in R | W


def expected(user: str, verb: str, group: str, resource: str, sub: str, ns: str) -> bool:
    key = (group, resource, sub)
    if user == "admin":
        return True
    if resource == "nodes":
        return False
    if user == "alice":  # view in a
        return ns == "a" and role_allows("view", verb, key)
    if user == "bob":  # group devs: edit in b
        return ns == "b" and role_allows("edit", verb, key)
    if user == "carol":  # group ops: view everywhere, admin in a
        return role_allows("view", verb, key) or (ns == "a" and role_allows("admin", verb, key))
    if user == "builder":  # ServiceAccount b/builder: create configmaps in b
        return ns == "b" and verb == "create" and key == ("", "configmaps", "")
    return False


def request_for(verb: str, group: str, resource: str, sub: str, namespaced: bool, ns: str) -> tuple[str, str] | None:
    """(method, path) of a request with these attributes, None where there is no such request."""
    prefix = f"/apis/{group}/v1" if group else "/api/v1"
    if namespaced and not ns:
        if verb not in ("list", "watch") or sub:
            return None
        base = f"{prefix}/{resource}"
    else:
        base = f"{prefix}/namespaces/{ns}/{resource}" if namespaced else f"{prefix}/{resource}"
        if not namespaced and ns:
            return None
    if sub:
        if verb not in ("get", "update", "patch"):
            return None
        return {"get": "GET", "update": "PUT", "patch": "PATCH"}[verb], f"{base}/x/{sub}"
    return {"get": ("GET", f"{base}/x"), "list": ("GET", base), "watch": ("GET", f"{base}?watch=true"),
            "create": ("POST", base), "update": ("PUT", f"{base}/x"), "patch": ("PATCH", f"{base}/x"),
            "delete": ("DELETE", f"{base}/x"),
            # A selector that matches nothing: authorization ignores it, and the grants survive.
            "deletecollection": ("DELETE", f"{base}?labelSelector=matrix%3Dnone")}[verb]


def body_for(group: str, resource: str, namespace: str) -> Any:
    if resource == "rolebindings":
        return binding("x", "view", subject="nobody", namespace=namespace or "a")
    return {"metadata": {"name": "x"}}


async def _setup(secure: Secure) -> None:
    admin = secure.session("admin")
    for ns in ("a", "b"):
        assert (await call(admin, "POST", "/api/v1/namespaces", {"metadata": {"name": ns}}))[0] == 201
    grants = [
        ("a", binding("alice-view", "view", namespace="a")),
        ("b", binding("devs-edit", "edit", kind="Group", subject="devs", namespace="b")),
        ("", binding("ops-view", "view", kind="Group", subject="ops")),
        ("a", binding("ops-admin", "admin", kind="Group", subject="ops", namespace="a")),
    ]
    role = {"metadata": {"name": "cm-creator"}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]}
    assert (await call(admin, "POST", rbac_path("roles", "b"), role))[0] == 201
    builder = binding("builder", "cm-creator", kind="ServiceAccount", subject="builder", namespace="b",
                      role_kind="Role")
    grants.append(("b", builder))
    for ns, obj in grants:
        code, body = await call(admin, "POST", rbac_path("rolebindings" if ns else "clusterrolebindings", ns), obj)
        assert code == 201, body


async def test_authorization_matrix(secure: Secure) -> None:
    await _setup(secure)
    secure.tokens["builder"] = secure.config.authenticator.mint("b", "builder")
    sessions = {u: secure.session(u) for u in USERS}
    ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    checked = mismatches = 0
    problems: list[str] = []
    for (group, resource, sub, namespaced), verb, ns, user in itertools.product(RESOURCES, VERBS, NAMESPACES, USERS):
        req = request_for(verb, group, resource, sub, namespaced, ns)
        if req is None:
            continue
        want = expected(user, verb, group, resource, sub, ns)
        method, path = req
        body = body_for(group, resource, ns) if method in ("POST", "PUT") else (
            {"metadata": {"labels": {"x": "y"}}} if method == "PATCH" else None)
        if verb == "watch":  # look at the status only; the stream stays open otherwise
            async with sessions[user].get(path) as r:
                code = r.status
                answer = await r.json() if code != 200 else {}
        else:
            code, answer = await call(sessions[user], method, path, body,
                                      "application/merge-patch+json" if method == "PATCH" else None)
        got = code != 403
        if code == 403:
            assert answer["reason"] == "Forbidden" and "is forbidden: User " in answer["message"], answer
        attrs = {"verb": verb, "group": group, "resource": resource, "subresource": sub, "namespace": ns,
                 "name": "x" if verb in ("get", "update", "patch", "delete") else ""}
        _, review = await call(sessions[user], "POST", ssar, {"spec": {"resourceAttributes": attrs}})
        checked += 1
        if got != want or review["status"]["allowed"] != want or code >= 500:
            mismatches += 1
            problems.append(f"{user} {verb} {group}/{resource}/{sub} ns={ns!r}: want {want}, http {code}, "
                            f"review {review['status']['allowed']}: {json.dumps(answer)[:200]}")
    assert not problems, "\n".join(problems[:30])
    assert checked >= 500, checked
