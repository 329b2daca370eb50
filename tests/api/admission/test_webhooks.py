"""The MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins against a real HTTPS webhook
server in the test (`tests.webhook_servers`): a mutating webhook's JSONPatch lands in the stored
object, a validating one's refusal is the answer (and nothing is written), warnings reach the client;
webhooks reached by URL and through a Service's EndpointSlice; failurePolicy, timeoutSeconds,
selectors, matchConditions, sideEffects with dry runs, reinvocation, status writes and deletes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from api import server as servers
from api import state as st
from storage import log
from tests.webhook_servers import WebhookServer, allow, deny, host_address, json_patch

CM = "/api/v1/namespaces/default/configmaps"
MWC = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
VWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
CM_RULE = {"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}


@pytest.fixture
async def hooks() -> AsyncIterator[WebhookServer]:
    async with WebhookServer(hosts=["hooks.default.svc"]) as srv:
        yield srv


def webhook(name: str, client_config: dict[str, Any], *, rules: list[dict[str, Any]] | None = None,
            **more: Any) -> dict[str, Any]:
    return {"name": name, "clientConfig": client_config, "rules": rules or [CM_RULE],
            "sideEffects": "None", "admissionReviewVersions": ["v1"], **more}


async def configure(http: aiohttp.ClientSession, path: str, name: str, *webhooks: dict[str, Any]) -> None:
    async with http.post(path, json={"metadata": {"name": name}, "webhooks": list(webhooks)}) as r:
        assert r.status == 201, await r.text()


async def create_cm(http: aiohttp.ClientSession, name: str, **more: Any) -> tuple[int, dict[str, Any], list[str]]:
    body = {"metadata": {"name": name, **more.pop("metadata", {})}, "data": {"k": "v"}, **more}
    async with http.post(CM, json=body) as r:
        return r.status, await r.json(), r.headers.getall("Warning", [])


def add_label(review: dict[str, Any]) -> dict[str, Any]:
    labels = review["request"]["object"]["metadata"].get("labels")
    ops = [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}] if not labels else \
        [{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]
    return json_patch(review, ops, warnings=["mutated by the test webhook"])


def refuse_bad(review: dict[str, Any]) -> dict[str, Any]:
    if review["request"]["name"].startswith("bad"):
        return deny(review, "bad names are not welcome", code=403, reason="Forbidden")
    return allow(review)


async def test_mutating_patch_validating_denial_and_warnings(api_server: servers.Running,
                                                             http: aiohttp.ClientSession,
                                                             hooks: WebhookServer) -> None:
    hooks.route("/mutate", add_label)
    hooks.route("/validate", refuse_bad)
    await configure(http, MWC, "labels", webhook("label.example.com", {"url": hooks.url("/mutate"),
                                                                       "caBundle": hooks.ca_bundle}))
    await configure(http, VWC, "names", webhook("names.example.com", {"url": hooks.url("/validate"),
                                                                      "caBundle": hooks.ca_bundle}))
    code, body, warnings = await create_cm(http, "good")
    assert code == 201, body
    assert body["metadata"]["labels"] == {"mutated": "yes"}
    assert warnings == ['299 - "mutated by the test webhook"']
    review = hooks.calls["/mutate"][0]
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    request = review["request"]
    assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert request["requestKind"] == request["kind"] and request["requestResource"] == request["resource"]
    assert (request["name"], request["namespace"], request["operation"]) == ("good", "default", "CREATE")
    assert request["dryRun"] is False and request["oldObject"] is None
    assert request["options"]["kind"] == "CreateOptions"
    assert request["userInfo"]["username"]
    # The validating webhook saw the mutated object.
    assert hooks.calls["/validate"][0]["request"]["object"]["metadata"]["labels"] == {"mutated": "yes"}

    store = api_server.app[st.STORE]
    before = store.log.revision
    code, body, _ = await create_cm(http, "bad-one")
    assert code == 403
    assert body["message"] == 'admission webhook "names.example.com" denied the request: bad names are not welcome'
    assert body["reason"] == "Forbidden"
    assert store.log.revision == before  # nothing appended

    # Updates are reviewed with the old object.
    async with http.patch(f"{CM}/good", json={"data": {"k": "w"}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200, await r.text()
    update = hooks.calls["/validate"][-1]["request"]
    assert update["operation"] == "UPDATE" and update["oldObject"]["data"] == {"k": "v"}
    assert update["options"]["kind"] == "UpdateOptions"


async def test_service_reference_resolved_through_endpoint_slices(http: aiohttp.ClientSession) -> None:
    """A Service whose EndpointSlice holds this host's address (loopback ones are refused by
    EndpointSlice validation, as upstream's): the call goes to that endpoint's port, TLS checks the
    name `hooks.default.svc`."""
    address = host_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address for an EndpointSlice")
    async with WebhookServer(hosts=["hooks.default.svc"], bind=address) as hooks:
        hooks.route("/mutate", add_label)
        svc = {"metadata": {"name": "hooks"}, "spec": {"ports": [{"name": "https", "port": 443,
                                                                    "targetPort": hooks.port}]}}
        async with http.post("/api/v1/namespaces/default/services", json=svc) as r:
            assert r.status == 201, await r.text()
        config = webhook("svc.example.com", {"service": {"namespace": "default", "name": "hooks",
                                                         "path": "/mutate"}, "caBundle": hooks.ca_bundle})
        await configure(http, MWC, "by-service", config)
        code, body, _ = await create_cm(http, "before-endpoints")
        assert code == 500
        assert body["message"] == ('Internal error occurred: failed calling webhook "svc.example.com": failed to '
                                   'call webhook: Post "https://hooks.default.svc:443/mutate?timeout=10s": no '
                                   'endpoints available for service "hooks"')
        eps = {"metadata": {"name": "hooks-1", "labels": {"kubernetes.io/service-name": "hooks"}},
               "addressType": "IPv4", "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
               "ports": [{"name": "https", "port": hooks.port, "protocol": "TCP"}]}
        async with http.post("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", json=eps) as r:
            assert r.status == 201, await r.text()
        code, body, _ = await create_cm(http, "through-the-service")
        assert code == 201, body
        assert body["metadata"]["labels"] == {"mutated": "yes"}
        assert len(hooks.calls["/mutate"]) == 1


async def test_external_name_service_reaches_a_local_server(http: aiohttp.ClientSession,
                                                            hooks: WebhookServer) -> None:
    """A webhook server on 127.0.0.1 behind an ExternalName Service (`localhost`): resolved as
    kube-aggregator's cluster resolver does, on the clientConfig's port; TLS checks hooks.default.svc."""
    hooks.route("/mutate", add_label)
    svc = {"metadata": {"name": "hooks"}, "spec": {"type": "ExternalName", "externalName": "localhost"}}
    async with http.post("/api/v1/namespaces/default/services", json=svc) as r:
        assert r.status == 201, await r.text()
    await configure(http, MWC, "local", webhook("local.example.com", {
        "service": {"namespace": "default", "name": "hooks", "path": "/mutate", "port": hooks.port},
        "caBundle": hooks.ca_bundle}))
    code, body, _ = await create_cm(http, "local")
    assert code == 201, body
    assert body["metadata"]["labels"] == {"mutated": "yes"}
    # A Service that does not exist is the call's error.
    await configure(http, VWC, "missing", webhook("missing.example.com", {
        "service": {"namespace": "default", "name": "absent"}}))
    code, body, _ = await create_cm(http, "other")
    assert code == 500
    assert body["message"].endswith('Post "https://absent.default.svc:443?timeout=10s": service "absent" not found')


async def test_failure_policy(http: aiohttp.ClientSession, hooks: WebhookServer) -> None:
    """A webhook that cannot be reached: Fail refuses the write with upstream's internal error,
    Ignore lets it through. A CA that did not sign the server's certificate is a failed call too."""
    closed = hooks.url("/nowhere").replace(f":{hooks.port}", ":1")
    await configure(http, VWC, "ignored", webhook("ignored.example.com", {"url": closed, "caBundle": hooks.ca_bundle},
                                                  failurePolicy="Ignore"))
    code, body, _ = await create_cm(http, "a")
    assert code == 201, body
    await configure(http, VWC, "strict", webhook("strict.example.com", {"url": closed, "caBundle": hooks.ca_bundle},
                                                 failurePolicy="Fail"))
    code, body, _ = await create_cm(http, "b")
    assert code == 500 and body["reason"] == "InternalError"
    assert body["message"] == ('Internal error occurred: failed calling webhook "strict.example.com": failed to call '
                               'webhook: Post "https://127.0.0.1:1/nowhere?timeout=10s": dial tcp 127.0.0.1:1: '
                               'connect: connection refused')
    async with http.delete(f"{VWC}/strict") as r:
        assert r.status == 200
    hooks.route("/ok", allow)
    await configure(http, VWC, "untrusted", webhook("untrusted.example.com", {"url": hooks.url("/ok")}))
    code, body, _ = await create_cm(http, "c")
    assert code == 500
    assert body["message"].endswith("tls: failed to verify certificate: x509: certificate signed by unknown authority")


async def test_timeout(http: aiohttp.ClientSession, hooks: WebhookServer) -> None:
    """A webhook that never answers, with timeoutSeconds 1: a real one-second wait, then upstream's error."""
    hooks.route("/hang", hooks.hang)
    await configure(http, VWC, "slow", webhook("slow.example.com", {"url": hooks.url("/hang"),
                                                                    "caBundle": hooks.ca_bundle}, timeoutSeconds=1))
    code, body, _ = await create_cm(http, "late")
    assert code == 500
    assert body["message"] == ('Internal error occurred: failed calling webhook "slow.example.com": failed to call '
                               f'webhook: Post "https://127.0.0.1:{hooks.port}/hang?timeout=1s": context deadline '
                               'exceeded')


async def test_selectors_and_match_conditions(http: aiohttp.ClientSession, hooks: WebhookServer) -> None:
    hooks.route("/deny", lambda review: deny(review, "no"))
    cc = {"url": hooks.url("/deny"), "caBundle": hooks.ca_bundle}
    await configure(
        http, VWC, "selective",
        webhook("objects.example.com", cc, objectSelector={"matchLabels": {"checked": "yes"}}),
        webhook("namespaces.example.com", cc, namespaceSelector={"matchLabels": {"env": "prod"}}),
        webhook("conditions.example.com", cc, matchConditions=[
            {"name": "named", "expression": "object.metadata.name.startsWith('cel-')"},
            {"name": "not-admin", "expression": "request.userInfo.username != 'nobody'"}]))
    code, _, _ = await create_cm(http, "plain")
    assert code == 201
    code, body, _ = await create_cm(http, "labelled", metadata={"labels": {"checked": "yes"}})
    assert code == 403 and body["message"] == 'admission webhook "objects.example.com" denied the request: no'
    code, body, _ = await create_cm(http, "cel-x")
    assert code == 403 and "conditions.example.com" in body["message"]
    async with http.patch("/api/v1/namespaces/default", json={"metadata": {"labels": {"env": "prod"}}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200
    code, body, _ = await create_cm(http, "in-prod")
    assert code == 403 and "namespaces.example.com" in body["message"]
    # A condition that errors fails the request (failurePolicy Fail) with a 403.
    await configure(http, VWC, "broken", webhook("broken.example.com", cc, matchConditions=[
        {"name": "oops", "expression": "object.data.missing == 'x'"}]))
    code, body, _ = await create_cm(http, "any")
    assert code == 403
    assert body["message"] == ('configmaps "any" is forbidden: expression \'object.data.missing == \'x\'\' '
                               'resulted in error: no such key: missing')


async def test_dry_run_reaches_side_effect_free_webhooks(api_server: servers.Running, http: aiohttp.ClientSession,
                                                        hooks: WebhookServer) -> None:
    hooks.route("/ok", allow)
    cc = {"url": hooks.url("/ok"), "caBundle": hooks.ca_bundle}
    await configure(http, VWC, "effects", webhook("effects.example.com", cc, sideEffects="NoneOnDryRun"))
    async with http.post(f"{CM}?dryRun=All", json={"metadata": {"name": "dry"}}) as r:
        assert r.status == 201
    assert hooks.calls["/ok"][-1]["request"]["dryRun"] is True
    assert hooks.calls["/ok"][-1]["request"]["options"]["dryRun"] == ["All"]
    async with http.get(f"{CM}/dry") as r:
        assert r.status == 404
    # sideEffects Some (v1 no longer accepts it on create: a configuration stored by an older version).
    config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
              "metadata": {"name": "unsafe", "uid": "u-1", "creationTimestamp": "2026-01-01T00:00:00Z"},
              "webhooks": [webhook("unsafe.example.com", cc, sideEffects="Some", failurePolicy="Fail")]}
    await api_server.app[st.STORE].log.append(log.Write(
        type="ADDED", group="admissionregistration.k8s.io", resource="validatingwebhookconfigurations",
        namespace="", name="unsafe", object=config, expected_revision=0, time=0.0, actor=log.Actor(user="test")))
    async with http.post(f"{CM}?dryRun=All", json={"metadata": {"name": "dry"}}) as r:
        assert r.status == 400
        assert (await r.json())["message"] == 'admission webhook "unsafe.example.com" does not support dry run'
    code, _, _ = await create_cm(http, "wet")  # not a dry run: called
    assert code == 201


async def test_reinvocation_if_needed(http: aiohttp.ClientSession, hooks: WebhookServer) -> None:
    """`first` (IfNeeded) runs before `second` changes the object, so it runs once more after."""
    def first(review: dict[str, Any]) -> dict[str, Any]:
        seen = review["request"]["object"]["metadata"].get("labels") or {}
        return json_patch(review, [{"op": "add", "path": "/metadata/annotations",
                                    "value": {"first-saw": ",".join(sorted(seen)) or "nothing"}}])

    hooks.route("/first", first)
    hooks.route("/second", add_label)
    cc = {"caBundle": hooks.ca_bundle}
    await configure(http, MWC, "a-first", webhook("first.example.com", {**cc, "url": hooks.url("/first")},
                                                  reinvocationPolicy="IfNeeded"))
    await configure(http, MWC, "b-second", webhook("second.example.com", {**cc, "url": hooks.url("/second")}))
    code, body, _ = await create_cm(http, "twice")
    assert code == 201, body
    assert body["metadata"]["annotations"] == {"first-saw": "mutated"}
    assert len(hooks.calls["/first"]) == 2 and len(hooks.calls["/second"]) == 1


async def test_status_writes_and_deletes_are_reviewed(http: aiohttp.ClientSession, hooks: WebhookServer) -> None:
    hooks.route("/deny", lambda review: deny(review, f"no {review['request']['operation']}"))
    cc = {"url": hooks.url("/deny"), "caBundle": hooks.ca_bundle}
    await configure(http, VWC, "guard", webhook("status.example.com", cc, rules=[
        {"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments/status"]}]),
        webhook("delete.example.com", cc, rules=[
            {"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]))
    deploy = {"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
        "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    async with http.post(deployments, json=deploy) as r:
        assert r.status == 201, await r.text()
    async with http.patch(f"{deployments}/web/status", json={"status": {"replicas": 1}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 403
        assert (await r.json())["message"] == 'admission webhook "status.example.com" denied the request: no UPDATE'
    assert hooks.calls["/deny"][-1]["request"]["subResource"] == "status"
    code, _, _ = await create_cm(http, "kept")
    assert code == 201
    async with http.delete(f"{CM}/kept") as r:
        assert r.status == 403
        assert (await r.json())["message"] == 'admission webhook "delete.example.com" denied the request: no DELETE'
    request = hooks.calls["/deny"][-1]["request"]
    assert request["object"] is None and request["oldObject"]["metadata"]["name"] == "kept"
    assert request["options"]["kind"] == "DeleteOptions"
    async with http.get(f"{CM}/kept") as r:
        assert r.status == 200


async def test_invalid_answers_and_configurations_are_exempt(http: aiohttp.ClientSession,
                                                             hooks: WebhookServer) -> None:
    """An answer with another uid is a failed call; the webhook configurations themselves are never
    sent to webhooks, so a broken webhook can always be removed."""
    hooks.route("/wrong-uid", lambda review: {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                               "response": {"uid": "nope", "allowed": True}})
    await configure(http, VWC, "wrong", webhook("wrong.example.com", {"url": hooks.url("/wrong-uid"),
                                                                      "caBundle": hooks.ca_bundle}, rules=[
        {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]))
    code, body, _ = await create_cm(http, "x")
    assert code == 500
    assert body["message"].startswith('Internal error occurred: failed calling webhook "wrong.example.com": '
                                      'received invalid webhook response: expected response.uid="')
    async with http.delete(f"{VWC}/wrong") as r:
        assert r.status == 200
    assert len(hooks.calls["/wrong-uid"]) == 1


async def test_equivalent_versions_and_mutating_deletes(http: aiohttp.ClientSession, hooks: WebhookServer) -> None:
    """A rule naming autoscaling/v1 matches a write of the stored autoscaling/v2 HPA (matchPolicy
    Equivalent): the webhook gets the object in v1. A mutating webhook sees deletes, with no object to
    patch: its patch is an error."""
    hooks.route("/ok", allow)
    hooks.route("/patch-delete", lambda review: json_patch(review, [{"op": "add", "path": "/x", "value": 1}]))
    cc = {"caBundle": hooks.ca_bundle}
    await configure(http, VWC, "hpa-v1", webhook("hpa.example.com", {**cc, "url": hooks.url("/ok")}, rules=[
        {"operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": ["v1"],
         "resources": ["horizontalpodautoscalers"]}]))
    hpa = {"metadata": {"name": "web"}, "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 1,
        "maxReplicas": 3, "metrics": [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]}}
    async with http.post("/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers", json=hpa) as r:
        assert r.status == 201, await r.text()
    request = hooks.calls["/ok"][0]["request"]
    assert request["kind"] == {"group": "autoscaling", "version": "v1", "kind": "HorizontalPodAutoscaler"}
    assert request["requestKind"]["version"] == "v2"
    assert request["object"]["apiVersion"] == "autoscaling/v1"
    assert request["object"]["spec"]["targetCPUUtilizationPercentage"] == 50
    await configure(http, MWC, "on-delete", webhook("delete.example.com", {**cc, "url": hooks.url("/patch-delete")},
                                                    rules=[{"operations": ["DELETE"], "apiGroups": [""],
                                                            "apiVersions": ["v1"], "resources": ["configmaps"]}]))
    code, _, _ = await create_cm(http, "doomed")
    assert code == 201
    async with http.delete(f"{CM}/doomed") as r:
        assert r.status == 500
        assert (await r.json())["message"] == ('Internal error occurred: admission webhook "delete.example.com" '
                                               'attempted to modify the object, which is not supported for this '
                                               'operation')
    assert hooks.calls["/patch-delete"][0]["request"]["operation"] == "DELETE"


async def test_evictions_and_bindings_are_reviewed(http: aiohttp.ClientSession, hooks: WebhookServer) -> None:
    """CREATE on pods/eviction and pods/binding reaches webhooks with the subresource's own body
    (policy/v1 Eviction, v1 Binding), as upstream's create handler admits them."""
    hooks.route("/deny", lambda review: deny(review, f"no {review['request']['kind']['kind']}"))
    cc = {"url": hooks.url("/deny"), "caBundle": hooks.ca_bundle}
    await configure(http, VWC, "pods", webhook("pods.example.com", cc, rules=[
        {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
         "resources": ["pods/eviction", "pods/binding"]}]))
    pods = "/api/v1/namespaces/default/pods"
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    async with http.post(pods, json=pod) as r:
        assert r.status == 201, await r.text()
    async with http.post(f"{pods}/p/binding", json={"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}}) as r:
        assert r.status == 403
        assert (await r.json())["message"] == 'admission webhook "pods.example.com" denied the request: no Binding'
    async with http.post(f"{pods}/p/eviction", json={"apiVersion": "policy/v1", "kind": "Eviction",
                                                     "metadata": {"name": "p"}}) as r:
        assert r.status == 403
        assert (await r.json())["message"] == 'admission webhook "pods.example.com" denied the request: no Eviction'
    request = hooks.calls["/deny"][-1]["request"]
    assert request["kind"] == {"group": "policy", "version": "v1", "kind": "Eviction"}
    assert (request["resource"]["resource"], request["subResource"]) == ("pods", "eviction")
    async with http.get(f"{pods}/p") as r:
        assert r.status == 200 and "nodeName" not in (await r.json())["spec"]


async def test_an_if_needed_mutating_policy_runs_again_after_a_webhook_changed_the_object(
        http: aiohttp.ClientSession, hooks: WebhookServer) -> None:
    """upstream's reinvocation across plugins: the policy runs before the webhooks; a webhook's change
    makes the policy's `IfNeeded` mutations run once more, on the changed object."""
    hooks.route("/mutate", add_label)
    adm = "/apis/admissionregistration.k8s.io/v1"
    rules = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                "resources": ["configmaps"]}]}
    counted = ("Object{metadata: Object.metadata{annotations: {'labels-seen': "
               "string(size(object.metadata.?labels.orValue({})))}}}")
    for policy_name, reinvocation in (("counted", "IfNeeded"), ("once", "Never")):
        key = "labels-seen" if policy_name == "counted" else "labels-seen-once"
        expression = counted.replace("'labels-seen'", f"'{key}'")
        async with http.post(f"{adm}/mutatingadmissionpolicies", json={"metadata": {"name": policy_name}, "spec": {
                "matchConstraints": rules, "reinvocationPolicy": reinvocation,
                "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}]}}) as r:
            assert r.status == 201, await r.text()
        async with http.post(f"{adm}/mutatingadmissionpolicybindings",
                             json={"metadata": {"name": policy_name}, "spec": {"policyName": policy_name}}) as r:
            assert r.status == 201, await r.text()
    await configure(http, MWC, "labels", webhook("label.example.com", {"url": hooks.url("/mutate"),
                                                                       "caBundle": hooks.ca_bundle}))
    code, body, _ = await create_cm(http, "c")
    assert code == 201, body
    assert body["metadata"]["labels"] == {"mutated": "yes"}
    # the IfNeeded policy saw the webhook's label on its second run; the Never one only ran first
    assert body["metadata"]["annotations"] == {"labels-seen": "1", "labels-seen-once": "0"}
