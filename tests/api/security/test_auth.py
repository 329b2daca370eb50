"""Authentication and authorization over TLS, as clients see them: 401, 403 with upstream's message,
RBAC objects served and enforced (verbs, subresources, escalation), the self-subject reviews,
impersonation, client certificates and ServiceAccount tokens."""

from __future__ import annotations

import ssl
import time

import aiohttp
import pytest

from api import auth
from cp import certs
from tests.api.security.conftest import Secure, binding, call, rbac_path
from tests.api.test_builtin_manifests import csr_pem

CM = "/api/v1/namespaces/default/configmaps"


async def test_no_or_bad_credentials_are_401_and_anonymous_only_reads_health(secure: Secure) -> None:
    anon = secure.session()
    for path in ("/api/v1/pods", "/api", "/apis", "/openapi/v3", "/metrics", "/nope"):
        code, body = await call(anon, "GET", path)
        assert code == 401, path
        assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": "Unauthorized", "reason": "Unauthorized", "code": 401}
    for path in ("/healthz", "/readyz", "/livez", "/version"):
        code, _ = await call(anon, "GET", path)
        assert code == 200, path
    for token in ("wrong", secure.tokens["alice"] + "x", "a.b.c"):
        code, body = await call(secure.session(token=token), "GET", "/healthz")
        assert code == 401 and body["reason"] == "Unauthorized"
    code, _ = await call(secure.session(headers={"Authorization": "Bearer "}), "GET", "/api/v1/pods")
    assert code == 401
    # Plain HTTP to the TLS port is not served.
    async with aiohttp.ClientSession() as plain:
        with pytest.raises(aiohttp.ClientError):
            await plain.get(secure.url.replace("https://", "http://") + "/healthz")


async def test_authenticated_users_get_discovery_but_nothing_else(secure: Secure) -> None:
    alice = secure.session("alice")
    for path in ("/api", "/apis", "/api/v1", "/apis/apps/v1", "/version", "/openapi/v3"):
        code, _ = await call(alice, "GET", path)
        assert code == 200, path
    code, body = await call(alice, "GET", "/api/v1/namespaces/default/pods")
    assert code == 403
    assert body["message"] == ('pods is forbidden: User "alice" cannot list resource "pods" in API group "" '
                               'in the namespace "default"')
    assert body["details"] == {"kind": "pods"} and body["reason"] == "Forbidden"
    code, body = await call(alice, "GET", "/metrics")
    assert code == 403 and body["message"] == 'forbidden: User "alice" cannot get path "/metrics"'
    code, body = await call(alice, "PATCH", "/apis/apps/v1/namespaces/default/deployments/web/scale",
                            {"spec": {"replicas": 3}}, "application/merge-patch+json")
    assert code == 403
    assert body["message"] == ('deployments.apps "web" is forbidden: User "alice" cannot patch resource '
                               '"deployments/scale" in API group "apps" in the namespace "default"')
    code, body = await call(alice, "GET", "/api/v1/nodes?watch=true")
    assert code == 403 and "cannot watch resource" in body["message"]


async def test_rbac_objects_grant_per_verb_subresource_and_name(secure: Secure) -> None:
    admin, alice = secure.session("admin"), secure.session("alice")
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "cm-reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
                      {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["update"], "resourceNames": ["one"]},
                      {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["get"]}]}
    code, body = await call(admin, "POST", rbac_path("roles", "default"), role)
    assert code == 201, body
    code, body = await call(admin, "POST", rbac_path("rolebindings", "default"),
                            binding("alice-cm", "cm-reader", namespace="default", role_kind="Role"))
    assert code == 201, body
    assert body["subjects"] == [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]
    for name in ("one", "two"):
        code, _ = await call(admin, "POST", CM, {"metadata": {"name": name}, "data": {"k": "v"}})
        assert code == 201
    assert (await call(alice, "GET", CM))[0] == 200
    assert (await call(alice, "GET", f"{CM}/two"))[0] == 200
    assert (await call(alice, "GET", "/api/v1/configmaps"))[0] == 403  # all namespaces: cluster scope
    assert (await call(alice, "GET", "/api/v1/namespaces/kube-system/configmaps"))[0] == 403
    code, one = await call(alice, "GET", f"{CM}/one")
    one["data"]["k"] = "changed"
    assert (await call(alice, "PUT", f"{CM}/one", one))[0] == 200
    code, two = await call(alice, "GET", f"{CM}/two")
    two["data"]["k"] = "changed"
    code, body = await call(alice, "PUT", f"{CM}/two", two)
    assert code == 403 and 'configmaps "two" is forbidden' in body["message"]
    assert (await call(alice, "DELETE", f"{CM}/one"))[0] == 403
    assert (await call(alice, "DELETE", CM))[0] == 403  # deletecollection
    assert (await call(alice, "GET", f"{CM}?fieldSelector=metadata.name%3Done"))[0] == 200
    # pods/status is granted, pods is not.
    assert (await call(alice, "GET", "/api/v1/namespaces/default/pods/p/status"))[0] == 404
    assert (await call(alice, "GET", "/api/v1/namespaces/default/pods/p"))[0] == 403
    # Deleting the binding takes the grant away.
    assert (await call(admin, "DELETE", rbac_path("rolebindings", "default") + "/alice-cm"))[0] == 200
    assert (await call(alice, "GET", CM))[0] == 403
    # The objects are served like any other kind.
    code, body = await call(admin, "GET", rbac_path("clusterroles") + "/view")
    assert code == 200 and body["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}
    code, body = await call(admin, "GET", rbac_path("clusterrolebindings"))
    assert code == 200 and {"cluster-admin", "system:basic-user"} <= {i["metadata"]["name"] for i in body["items"]}


async def test_groups_service_accounts_and_default_roles(secure: Secure) -> None:
    admin = secure.session("admin")
    await call(admin, "POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
    code, body = await call(admin, "POST", rbac_path("rolebindings", "team"),
                            binding("devs-edit", "edit", kind="Group", subject="devs", namespace="team"))
    assert code == 201, body
    code, body = await call(admin, "POST", rbac_path("rolebindings", "team"),
                            binding("builder-view", "view", kind="ServiceAccount", subject="builder",
                                    namespace="team"))
    assert code == 201, body
    bob = secure.session("bob")
    assert (await call(bob, "POST", "/api/v1/namespaces/team/configmaps", {"metadata": {"name": "c"}}))[0] == 201
    assert (await call(bob, "GET", "/api/v1/namespaces/team/secrets"))[0] == 200  # edit reads secrets, as upstream
    assert (await call(bob, "GET", "/api/v1/namespaces/default/configmaps"))[0] == 403
    assert (await call(bob, "POST", rbac_path("roles", "team"), {"metadata": {"name": "x"}, "rules": []}))[0] == 403
    token = secure.config.authenticator.mint("team", "builder")
    sa = secure.session(token=token)
    assert (await call(sa, "GET", "/api/v1/namespaces/team/configmaps"))[0] == 200
    assert (await call(sa, "POST", "/api/v1/namespaces/team/configmaps", {"metadata": {"name": "d"}}))[0] == 403
    code, body = await call(sa, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
    assert body["status"]["userInfo"]["username"] == "system:serviceaccount:team:builder"
    assert set(body["status"]["userInfo"]["groups"]) == {"system:serviceaccounts", "system:serviceaccounts:team",
                                                         "system:authenticated"}
    # A token for another issuer's key is rejected.
    other = auth.Authenticator(sa_key=certs.key_pem(certs.new_key()))
    assert (await call(secure.session(token=other.mint("team", "builder")), "GET", "/version"))[0] == 401
    # An expired token too.
    expired = auth.Authenticator(sa_key=secure.creds.sa_key, clock=lambda: time.time() - 7200)
    assert (await call(secure.session(token=expired.mint("team", "builder", ttl=60)), "GET", "/version"))[0] == 401


async def test_escalation_is_prevented(secure: Secure) -> None:
    admin = secure.session("admin")
    await call(admin, "POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
    assert (await call(admin, "POST", rbac_path("rolebindings", "team"),
                       binding("alice-admin", "admin", namespace="team")))[0] == 201
    alice = secure.session("alice")
    # admin in "team" may hand out what it holds there...
    code, body = await call(alice, "POST", rbac_path("rolebindings", "team"),
                            binding("bob-edit", "edit", subject="bob", namespace="team"))
    assert code == 201, body
    # ...but not cluster-admin, nor a role with more than it holds.
    code, body = await call(alice, "POST", rbac_path("rolebindings", "team"),
                            binding("me-root", "cluster-admin", namespace="team"))
    assert code == 403
    assert body["message"].startswith('rolebindings.rbac.authorization.k8s.io "me-root" is forbidden: user "alice" '
                                      '(groups=["system:authenticated"]) is attempting to grant RBAC permissions '
                                      "not currently held:\n")
    role = {"metadata": {"name": "nodes"}, "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]}
    code, body = await call(alice, "POST", rbac_path("roles", "team"), role)
    assert code == 403 and '{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}' in body["message"]
    ok_role = {"metadata": {"name": "cm"}, "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}
    assert (await call(alice, "POST", rbac_path("roles", "team"), ok_role))[0] == 201
    # Cluster-scoped RBAC is out of reach.
    assert (await call(alice, "POST", rbac_path("clusterrolebindings"), binding("x", "view")))[0] == 403
    # `bind` on a role lets one bind it without holding it; `escalate` lets one write any rules.
    granter = {"metadata": {"name": "granter"}, "rules": [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"],
         "resourceNames": ["cluster-admin"]},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]}]}
    assert (await call(admin, "POST", rbac_path("roles", "team"), granter))[0] == 201
    assert (await call(admin, "POST", rbac_path("rolebindings", "team"),
                       binding("alice-granter", "granter", namespace="team", role_kind="Role")))[0] == 201
    assert (await call(alice, "POST", rbac_path("rolebindings", "team"),
                       binding("me-root", "cluster-admin", namespace="team")))[0] == 201
    assert (await call(alice, "POST", rbac_path("roles", "team"), dict(role, metadata={"name": "n2"})))[0] == 201
    # roleRef is immutable.
    code, rb = await call(admin, "GET", rbac_path("rolebindings", "team") + "/bob-edit")
    rb["roleRef"]["name"] = "view"
    code, body = await call(admin, "PUT", rbac_path("rolebindings", "team") + "/bob-edit", rb)
    assert code == 422 and "cannot change roleRef" in body["message"]


async def test_self_subject_reviews(secure: Secure) -> None:
    admin, bob = secure.session("admin"), secure.session("bob")
    await call(admin, "POST", rbac_path("clusterrolebindings"), binding("devs-view", "view", kind="Group",
                                                                        subject="devs"))
    ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    for verb, resource, sub, allowed in (("list", "pods", "", True), ("create", "pods", "", False),
                                         ("get", "pods", "log", True), ("get", "secrets", "", False)):
        code, body = await call(bob, "POST", ssar, {"apiVersion": "authorization.k8s.io/v1",
                                                    "kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": {
                                                        "namespace": "default", "verb": verb, "resource": resource,
                                                        "subresource": sub}}})
        assert code == 201 and body["status"]["allowed"] is allowed, (verb, resource, body)
        assert body["kind"] == "SelfSubjectAccessReview"
    code, body = await call(bob, "POST", ssar, {"spec": {"nonResourceAttributes": {"verb": "get", "path": "/api"}}})
    assert body["status"]["allowed"] is True
    code, body = await call(bob, "POST", ssar, {"spec": {}})
    assert code == 422 and body["reason"] == "Invalid"
    code, body = await call(bob, "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                            {"spec": {"namespace": "default"}})
    assert code == 201
    assert any("pods" in r.get("resources", []) and "list" in r["verbs"] for r in body["status"]["resourceRules"])
    code, body = await call(bob, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert code == 201
    assert body["status"]["userInfo"] == {"username": "bob", "uid": "uid-bob", "groups": ["devs", "system:authenticated"]}
    code, body = await call(admin, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
    assert body["status"]["userInfo"]["username"] == "cplane-admin"
    assert "system:masters" in body["status"]["userInfo"]["groups"]
    # Anonymous may not even ask.
    assert (await call(secure.session(), "POST", ssar, {"spec": {}}))[0] == 401


async def test_impersonation_needs_the_impersonate_verb(secure: Secure) -> None:
    admin, alice = secure.session("admin"), secure.session("alice")
    code, body = await call(secure.session("admin", headers={"Impersonate-User": "bob",
                                                             "Impersonate-Group": "devs"}),
                            "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
    assert code == 201
    assert body["status"]["userInfo"] == {"username": "bob", "groups": ["devs", "system:authenticated"]}
    imp = secure.session("alice", headers={"Impersonate-User": "cplane-admin", "Impersonate-Group": "system:masters"})
    code, body = await call(imp, "GET", "/api/v1/pods")
    assert code == 403
    assert body["message"] == ('users "cplane-admin" is forbidden: User "alice" cannot impersonate resource "users" '
                               'in API group "" at the cluster scope')
    role = {"metadata": {"name": "imp"}, "rules": [
        {"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["bob"]}]}
    assert (await call(admin, "POST", rbac_path("clusterroles"), role))[0] == 201
    assert (await call(admin, "POST", rbac_path("clusterrolebindings"), binding("alice-imp", "imp")))[0] == 201
    code, body = await call(secure.session("alice", headers={"Impersonate-User": "bob"}), "POST",
                            "/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
    assert code == 201 and body["status"]["userInfo"]["username"] == "bob"
    code, _ = await call(secure.session("alice", headers={"Impersonate-User": "bob", "Impersonate-Group": "system:masters"}),
                         "GET", "/api/v1/pods")
    assert code == 403  # groups need their own grant
    code, _ = await call(alice, "GET", "/api/v1/pods", headers={"Impersonate-Group": "x"})
    assert code == 400


async def test_impersonated_extra_keys_are_percent_decoded(secure: Secure) -> None:
    """client-go escapes an extra key into the header name (`/` as `%2F`) and Go's header
    canonicalisation changes its case: the server lower-cases and percent-decodes it, as upstream's
    impersonation filter; a key that is not valid percent-encoding is kept as it came."""
    headers = {"Impersonate-User": "kubelet", "Impersonate-Extra-Authentication.kubernetes.io%2fnode-Name": "node-1",
               "Impersonate-Extra-Scopes": "a", "Impersonate-Extra-Bad%zz": "b"}
    code, body = await call(secure.session("admin", headers=headers), "POST",
                            "/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
    assert code == 201, body
    assert body["status"]["userInfo"]["extra"] == {"authentication.kubernetes.io/node-name": ["node-1"],
                                                   "scopes": ["a"], "bad%zz": ["b"]}


async def test_client_certificates(secure: Secure) -> None:
    admin = secure.session("admin")
    cert, key = certs.new_client_cert(secure.creds.ca_cert, secure.creds.ca_key, user="dana", groups=["devs"],
                                      now=time.time())
    dana = secure.session(cert=cert, key=key)
    code, body = await call(dana, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
    assert code == 201 and body["status"]["userInfo"] == {"username": "dana", "groups": ["devs", "system:authenticated"]}
    assert (await call(dana, "GET", CM))[0] == 403
    await call(admin, "POST", rbac_path("rolebindings", "default"),
               binding("dana-view", "view", subject="dana", namespace="default"))
    assert (await call(dana, "GET", CM))[0] == 200
    # A certificate from another CA fails the TLS handshake.
    other_ca, other_key = certs.new_ca(now=time.time())
    rogue_cert, rogue_key = certs.new_client_cert(other_ca, other_key, user="cplane-admin",
                                                  groups=["system:masters"], now=time.time())
    rogue = secure.session(cert=rogue_cert, key=rogue_key)
    with pytest.raises((aiohttp.ClientError, ssl.SSLError, ConnectionError)):
        await call(rogue, "GET", "/api/v1/pods")
    # A bearer token wins over the certificate.
    code, body = await call(secure.session("alice", cert=cert, key=key), "POST",
                            "/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
    assert body["status"]["userInfo"]["username"] == "alice"


async def test_a_csr_records_the_authenticated_requester(secure: Secure) -> None:
    """spec.username, uid and groups come from the authenticated user, whatever the body says."""
    csr = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": "c"},
           "spec": {"request": csr_pem(), "signerName": "example.com/signer", "usages": ["client auth"],
                    "username": "someone-else", "groups": ["system:masters"]}}
    code, _ = await call(secure.session("admin"), "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "csr-creator"},
        "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"],
                   "verbs": ["create"]}]})
    assert code == 201
    code, _ = await call(secure.session("admin"), "POST", rbac_path("clusterrolebindings"),
                         binding("bob-csr", "csr-creator", subject="bob"))
    assert code == 201
    code, body = await call(secure.session("bob"), "POST", "/apis/certificates.k8s.io/v1/certificatesigningrequests",
                            csr)
    assert code == 201, body
    spec = body["spec"]
    assert (spec["username"], spec["uid"], spec["groups"]) == ("bob", "uid-bob", ["devs", "system:authenticated"])
