"""ServiceAccount tokens: the `serviceaccounts/token` subresource (TokenRequest), the authenticator
accepting what it issues and rejecting expired, wrong-audience, deleted-account and deleted-bound-object
tokens, TokenReview, SubjectAccessReview and LocalSubjectAccessReview, and the issuer's discovery
documents."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

from api import auth
from api import server as servers
from storage import memory
from tests.api.security.conftest import Secure, binding, call, rbac_path

ISSUER = "https://kubernetes.default.svc.cluster.local"
SA_GROUPS = ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"]


def claims(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


async def setup_team(secure: Secure) -> tuple[Any, str]:
    admin = secure.session("admin")
    assert (await call(admin, "POST", "/api/v1/namespaces", {"metadata": {"name": "team"}}))[0] == 201
    code, sa = await call(admin, "POST", "/api/v1/namespaces/team/serviceaccounts", {"metadata": {"name": "builder"}})
    assert code == 201, sa
    return admin, sa["metadata"]["uid"]


async def request_token(session: Any, spec: dict[str, Any], name: str = "builder") -> tuple[int, Any]:
    return await call(session, "POST", f"/api/v1/namespaces/team/serviceaccounts/{name}/token",
                      {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})


async def review(session: Any, token: str, audiences: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"token": token}
    if audiences is not None:
        spec["audiences"] = audiences
    code, body = await call(session, "POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec})
    assert code == 201, body
    return body["status"]


async def test_token_request_issues_a_token_the_server_accepts(secure: Secure) -> None:
    admin, uid = await setup_team(secure)
    code, body = await request_token(admin, {})
    assert code == 201, body
    assert body["kind"] == "TokenRequest"
    assert body["spec"] == {"audiences": [ISSUER], "expirationSeconds": 3600}
    token = body["status"]["token"]
    c = claims(token)
    assert c["iss"] == ISSUER and c["aud"] == [ISSUER] and c["sub"] == "system:serviceaccount:team:builder"
    assert c["exp"] - c["iat"] == 3600
    assert c["kubernetes.io"]["serviceaccount"] == {"name": "builder", "uid": uid}
    assert token not in json.dumps({k: v for k, v in body.items() if k != "status"})
    sa = secure.session(token=token)
    code, who = await call(sa, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
    assert code == 201
    info = who["status"]["userInfo"]
    assert info["username"] == "system:serviceaccount:team:builder" and info["uid"] == uid
    assert info["groups"] == SA_GROUPS
    # RBAC applies to the account.
    assert (await call(sa, "GET", "/api/v1/namespaces/team/configmaps"))[0] == 403
    assert (await call(admin, "POST", rbac_path("rolebindings", "team"),
                       binding("b-view", "view", kind="ServiceAccount", subject="builder", namespace="team")))[0] == 201
    assert (await call(sa, "GET", "/api/v1/namespaces/team/configmaps"))[0] == 200


async def test_token_request_validation(secure: Secure) -> None:
    admin, _uid = await setup_team(secure)
    code, body = await request_token(admin, {"expirationSeconds": 599})
    assert code == 422
    assert body["message"] == ('TokenRequest.authentication.k8s.io "builder" is invalid: spec.expirationSeconds: '
                               "Invalid value: 599: may not specify a duration less than 10 minutes")
    code, body = await request_token(admin, {}, name="missing")
    assert code == 404 and body["message"] == 'serviceaccounts "missing" not found'
    code, body = await request_token(admin, {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "nope"}})
    assert code == 404 and body["message"] == 'pods "nope" not found'
    code, body = await request_token(admin, {"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1",
                                                                "name": "x"}})
    assert code == 400 and body["message"] == "cannot bind token to object of type /v1, Kind=ConfigMap"
    code, body = await call(admin, "POST", "/api/v1/namespaces/team/serviceaccounts/builder/token",
                            {"metadata": {"name": "other"}, "spec": {}})
    assert code == 422
    assert body["message"] == ('TokenRequest.authentication.k8s.io "builder" is invalid: metadata.name: Invalid '
                               'value: "other": must match the service account name if specified')
    # Who may ask: `create` on serviceaccounts/token.
    assert (await request_token(secure.session("alice"), {}))[0] == 403


async def test_expired_wrong_audience_and_deleted_account_are_rejected(secure: Secure) -> None:
    admin, uid = await setup_team(secure)
    code, body = await request_token(admin, {"audiences": ["vault"], "expirationSeconds": 600})
    assert code == 201
    vault = body["status"]["token"]
    assert (await call(secure.session(token=vault), "GET", "/api/v1/namespaces"))[0] == 401
    status = await review(admin, vault)
    assert status == {"user": {}, "error": f'token audiences ["vault"] is invalid for the target audiences '
                                          f'["{ISSUER}"]'}
    status = await review(admin, vault, ["vault", "other"])
    assert status["authenticated"] is True and status["audiences"] == ["vault"]
    assert status["user"]["username"] == "system:serviceaccount:team:builder"
    assert status["user"]["extra"]["authentication.kubernetes.io/credential-id"][0].startswith("JTI=")
    # Expired (past the minute of leeway).
    assert secure.config.authenticator is not None
    old = auth.Authenticator(sa_key=secure.creds.sa_key, clock=lambda: time.time() - 7200)
    expired = old.mint("team", "builder", uid=uid, ttl=600)
    assert (await call(secure.session(token=expired), "GET", "/version"))[0] == 401
    assert (await review(admin, expired))["error"] == "service account token has expired"
    # Deleted account: its tokens stop working; a new account of the same name has another uid.
    code, body = await request_token(admin, {})
    token = body["status"]["token"]
    assert (await call(secure.session(token=token), "GET", "/version"))[0] == 200
    assert (await call(admin, "DELETE", "/api/v1/namespaces/team/serviceaccounts/builder"))[0] == 200
    assert (await call(secure.session(token=token), "GET", "/version"))[0] == 401
    assert (await review(admin, token))["error"] == 'serviceaccounts "builder" not found'
    code, again = await call(admin, "POST", "/api/v1/namespaces/team/serviceaccounts", {"metadata": {"name": "builder"}})
    assert code == 201
    status = await review(admin, token)
    assert status["error"] == f"service account UID ({again['metadata']['uid']}) does not match claim ({uid})"
    # Nonsense is not authenticated, without an error; static tokens are for the API audiences only.
    assert await review(admin, "not-a-token") == {"user": {}}
    status = await review(admin, secure.tokens["alice"])
    assert status["authenticated"] is True and status["audiences"] == [ISSUER]
    assert status["user"] == {"username": "alice", "uid": "uid-alice", "groups": ["system:authenticated"]}
    assert await review(admin, secure.tokens["alice"], ["vault"]) == {"user": {}}


async def test_tokens_bound_to_a_secret_end_with_it(secure: Secure) -> None:
    admin, _uid = await setup_team(secure)
    code, secret = await call(admin, "POST", "/api/v1/namespaces/team/secrets",
                              {"metadata": {"name": "bound"}, "stringData": {"k": "v"}})
    assert code == 201, secret
    code, body = await request_token(admin, {"boundObjectRef": {"kind": "Secret", "apiVersion": "v1",
                                                                "name": "bound"}})
    assert code == 201, body
    assert body["spec"]["boundObjectRef"]["uid"] == secret["metadata"]["uid"]
    token = body["status"]["token"]
    assert claims(token)["kubernetes.io"]["secret"] == {"name": "bound", "uid": secret["metadata"]["uid"]}
    assert (await call(secure.session(token=token), "GET", "/version"))[0] == 200
    code, body = await request_token(admin, {"boundObjectRef": {"kind": "Secret", "apiVersion": "v1",
                                                                "name": "bound", "uid": "other"}})
    assert code == 409
    assert (await call(admin, "DELETE", "/api/v1/namespaces/team/secrets/bound"))[0] == 200
    assert (await call(secure.session(token=token), "GET", "/version"))[0] == 401
    assert (await review(admin, token))["error"] == "service account token has been invalidated"


async def test_tokens_bound_to_a_pod(secure: Secure) -> None:
    admin, _uid = await setup_team(secure)
    assert (await call(admin, "POST", "/api/v1/namespaces/team/serviceaccounts", {"metadata": {"name": "default"}}))[0] \
        == 201
    pod = {"metadata": {"name": "p"}, "spec": {"serviceAccountName": "builder", "nodeName": "n1",
                                                "containers": [{"name": "c", "image": "busybox"}]}}
    code, created = await call(admin, "POST", "/api/v1/namespaces/team/pods", pod)
    assert code == 201, created
    code, body = await request_token(admin, {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}},
                                     name="default")
    assert code == 400
    assert body["message"] == 'cannot bind token for serviceaccount "default" to pod running with serviceaccount ' \
        '"builder"'
    code, body = await request_token(admin, {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}})
    assert code == 201, body
    token = body["status"]["token"]
    k8s = claims(token)["kubernetes.io"]
    assert k8s["pod"] == {"name": "p", "uid": created["metadata"]["uid"]} and k8s["node"]["name"] == "n1"
    extra = (await review(admin, token))["user"]["extra"]
    assert extra["authentication.kubernetes.io/pod-name"] == ["p"]
    assert extra["authentication.kubernetes.io/node-name"] == ["n1"]


async def test_subject_access_reviews(secure: Secure) -> None:
    admin, _uid = await setup_team(secure)
    assert (await call(admin, "POST", rbac_path("rolebindings", "team"),
                       binding("alice-view", "view", namespace="team")))[0] == 201
    sar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
           "spec": {"user": "alice", "resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "team"}}}
    code, body = await call(admin, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar)
    assert code == 201, body
    assert body["status"]["allowed"] is True
    sar["spec"]["resourceAttributes"]["namespace"] = "default"
    code, body = await call(admin, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar)
    assert body["status"]["allowed"] is False
    code, body = await call(admin, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                            {"spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}})
    assert code == 422
    assert body["message"] == ('SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": '
                               "at least one of user or group must be specified")
    # Groups alone.
    code, body = await call(admin, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                            {"spec": {"groups": ["system:masters"], "nonResourceAttributes": {"verb": "get",
                                                                                              "path": "/metrics"}}})
    assert code == 201 and body["status"]["allowed"] is True
    # Local: the namespace of the path.
    lsar = {"spec": {"user": "alice", "resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "team"}}}
    path = "/apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews"
    code, body = await call(admin, "POST", path, lsar)
    assert code == 201 and body["status"]["allowed"] is True and body["metadata"]["namespace"] == "team"
    lsar["spec"]["resourceAttributes"]["namespace"] = "default"
    code, body = await call(admin, "POST", path, lsar)
    assert code == 400 and body["message"] == "spec.resourceAttributes.namespace must match namespace: team"
    # Who may ask: alice may not (no `create` on subjectaccessreviews).
    assert (await call(secure.session("alice"), "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                       sar))[0] == 403


async def test_issuer_discovery(secure: Secure) -> None:
    admin, _uid = await setup_team(secure)
    code, body = await call(admin, "GET", "/.well-known/openid-configuration")
    assert code == 200
    assert body["issuer"] == ISSUER and body["jwks_uri"] == f"{ISSUER}/openid/v1/jwks"
    assert body["id_token_signing_alg_values_supported"] == ["ES256"]
    code, jwks = await call(admin, "GET", "/openid/v1/jwks")
    assert code == 200
    (key,) = jwks["keys"]
    assert key["kty"] == "EC" and key["alg"] == "ES256" and key["use"] == "sig"
    _code, body = await request_token(admin, {})
    header = body["status"]["token"].split(".")[0]
    assert json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))["kid"] == key["kid"]
    # Readable by ServiceAccounts (system:service-account-issuer-discovery), not by other users.
    sa = secure.session(token=body["status"]["token"])
    assert (await call(sa, "GET", "/openid/v1/jwks"))[0] == 200
    assert (await call(secure.session("alice"), "GET", "/openid/v1/jwks"))[0] == 403


async def test_issuer_and_api_audiences_are_configurable(tmp_path: Path) -> None:
    log = memory.MemoryEventLog()
    await log.start()
    try:
        async with servers.running(data_dir=tmp_path, event_log=log, secure=True,
                                   service_account_issuer="https://issuer.example", api_audiences=("api", "more")) \
                as srv:
            s = Secure(srv, tmp_path)
            try:
                admin = s.session("admin")
                code, body = await call(admin, "GET", "/.well-known/openid-configuration")
                assert body["issuer"] == "https://issuer.example"
                assert (await call(admin, "POST", "/api/v1/namespaces/default/serviceaccounts",
                                   {"metadata": {"name": "x"}}))[0] == 201
                code, body = await call(admin, "POST", "/api/v1/namespaces/default/serviceaccounts/x/token", {})
                token = body["status"]["token"]
                assert claims(token)["iss"] == "https://issuer.example" and claims(token)["aud"] == ["api", "more"]
                assert (await call(s.session(token=token), "GET", "/version"))[0] == 200
                code, body = await call(admin, "POST", "/api/v1/namespaces/default/serviceaccounts/x/token",
                                        {"spec": {"audiences": ["more"]}})
                assert code == 201
                assert (await call(s.session(token=body["status"]["token"]), "GET", "/version"))[0] == 200
            finally:
                await s.close()
    finally:
        await log.close()


async def test_tokens_bound_to_a_node_end_with_it(secure: Secure) -> None:
    """ServiceAccountTokenNodeBindingValidation: valid while the Node exists with the claimed uid."""
    admin, _uid = await setup_team(secure)
    code, node = await call(admin, "POST", "/api/v1/nodes", {"metadata": {"name": "n1"}})
    assert code == 201, node
    code, body = await request_token(admin, {"boundObjectRef": {"kind": "Node", "apiVersion": "v1", "name": "n1"}})
    assert code == 201, body
    token = body["status"]["token"]
    assert claims(token)["kubernetes.io"]["node"] == {"name": "n1", "uid": node["metadata"]["uid"]}
    extra = (await review(admin, token))["user"]["extra"]
    assert extra["authentication.kubernetes.io/node-name"] == ["n1"]
    assert extra["authentication.kubernetes.io/node-uid"] == [node["metadata"]["uid"]]
    assert "authentication.kubernetes.io/pod-name" not in extra
    assert (await call(admin, "DELETE", "/api/v1/nodes/n1"))[0] == 200
    assert (await call(secure.session(token=token), "GET", "/version"))[0] == 401
    assert (await review(admin, token))["error"] == "service account token has been invalidated"
    code, again = await call(admin, "POST", "/api/v1/nodes", {"metadata": {"name": "n1"}})
    assert code == 201, again
    assert (await review(admin, token))["error"] == (
        f"node UID ({again['metadata']['uid']}) does not match service account node ref claim "
        f"({node['metadata']['uid']})")
