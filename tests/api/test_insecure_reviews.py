"""A server with no authentication set up (a plain `cplane replay`, an in-process sandbox) serves
everyone as the admin: the access and rules reviews say everything is allowed, as kube-apiserver's
AlwaysAllow answers them (`kubectl auth can-i`, the web UI's write controls); with no token signer,
TokenReviews are not served."""

from __future__ import annotations

import aiohttp

AUTHZ = "/apis/authorization.k8s.io/v1"


async def test_access_reviews_allow_everything(http: aiohttp.ClientSession) -> None:
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"verb": "create", "group": "resource.k8s.io",
                                              "resource": "devicetaintrules"}}}
    async with http.post(f"{AUTHZ}/selfsubjectaccessreviews", json=review) as r:
        assert r.status == 201
        assert (await r.json())["status"] == {"allowed": True}
    async with http.post(f"{AUTHZ}/selfsubjectaccessreviews", json={"spec": {}}) as r:
        assert r.status == 422 and (await r.json())["kind"] == "Status"
    subject = {"spec": {"user": "jane", "nonResourceAttributes": {"verb": "get", "path": "/metrics"}}}
    async with http.post(f"{AUTHZ}/subjectaccessreviews", json=subject) as r:
        assert r.status == 201 and (await r.json())["status"]["allowed"] is True


async def test_rules_and_self_reviews_name_the_admin(http: aiohttp.ClientSession) -> None:
    async with http.post(f"{AUTHZ}/selfsubjectrulesreviews", json={"spec": {"namespace": "default"}}) as r:
        assert r.status == 201
        status = (await r.json())["status"]
    assert {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]} in status["resourceRules"]
    async with http.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", json={}) as r:
        assert r.status == 201
        assert (await r.json())["status"]["userInfo"]["username"] == "system:admin"
    async with http.post("/apis/authentication.k8s.io/v1/tokenreviews", json={"spec": {"token": "x"}}) as r:
        assert r.status in (404, 405) and (await r.json())["kind"] == "Status"
