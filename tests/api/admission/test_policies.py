"""ValidatingAdmissionPolicy and MutatingAdmissionPolicy over HTTP: policies and bindings created
through the API are enforced on the next write (Deny with upstream's message and code, Warn as a
`Warning` header, Audit kept for the audit record), with params, match conditions, variables and
failurePolicy; mutating policies change the object written (apply configurations and JSON patches);
a denied write appends nothing to the log; the dra-example-driver's ResourceSlice policy keeps a
kubelet plugin's service account to its node's slices (node name from its pod-bound token)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from api import server as servers
from api import state as st
from api import store as stores
from cp import resources as res
from tests.api.security.conftest import binding, call, rbac_path, secure_server

ADM = "/apis/admissionregistration.k8s.io/v1"
CM = "/api/v1/namespaces/default/configmaps"


async def _create(http: aiohttp.ClientSession, path: str, body: dict[str, Any]) -> dict[str, Any]:
    async with http.post(path, json=body) as r:
        out = await r.json()
        assert r.status == 201, out.get("message")
        return dict(out)


async def _policy(http: aiohttp.ClientSession, name: str, spec: dict[str, Any], *,
                  actions: tuple[str, ...] = ("Deny",), binding: dict[str, Any] | None = None) -> None:
    await _create(http, f"{ADM}/validatingadmissionpolicies", {"metadata": {"name": name}, "spec": spec})
    bspec: dict[str, Any] = {"policyName": name, "validationActions": list(actions), **(binding or {})}
    await _create(http, f"{ADM}/validatingadmissionpolicybindings", {"metadata": {"name": f"{name}-binding"},
                                                                     "spec": bspec})


CM_RULES = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                               "resources": ["configmaps"]}]}


def _cm(name: str, data: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"metadata": meta, "data": data or {}}


async def test_deny_with_upstreams_message(http: aiohttp.ClientSession, api_server: servers.Running) -> None:
    await _policy(http, "small", {"matchConstraints": CM_RULES,
                                  "validations": [{"expression": "size(object.data) <= 1"}]})
    before = api_server.event_log.revision
    async with http.post(CM, json=_cm("big", {"a": "1", "b": "2"})) as r:
        body = await r.json()
        assert r.status == 422, body
    message = ("ValidatingAdmissionPolicy 'small' with binding 'small-binding' denied request: "
               "failed expression: size(object.data) <= 1")
    assert body["message"] == f'configmaps "big" is forbidden: {message}'
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"] == [{"message": message}]
    assert api_server.event_log.revision == before  # nothing appended
    await _create(http, CM, _cm("ok", {"a": "1"}))


async def test_reason_message_expression_and_dry_run(http: aiohttp.ClientSession, api_server: servers.Running) -> None:
    await _policy(http, "named", {"matchConstraints": CM_RULES, "validations": [
        {"expression": "object.metadata.name.startsWith('app-')", "reason": "Forbidden",
         "messageExpression": "'name ' + object.metadata.name + ' lacks the app- prefix'", "message": "unused"}]})
    before = api_server.event_log.revision
    async with http.post(CM + "?dryRun=All", json=_cm("web")) as r:
        body = await r.json()
        assert r.status == 403, body
    assert body["reason"] == "Forbidden"
    assert body["message"].endswith("denied request: name web lacks the app- prefix")
    assert api_server.event_log.revision == before
    await _create(http, CM, _cm("app-web"))


async def test_updates_and_status_writes_are_seen(http: aiohttp.ClientSession) -> None:
    await _create(http, CM, _cm("app", {"v": "1"}))
    await _policy(http, "frozen", {"matchConstraints": CM_RULES, "validations": [
        {"expression": "request.operation != 'UPDATE' || object.data == oldObject.data",
         "message": "data is frozen"}]})
    async with http.patch(f"{CM}/app", json={"data": {"v": "2"}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        body = await r.json()
        assert r.status == 422 and body["message"].endswith("denied request: data is frozen"), body
    async with http.patch(f"{CM}/app", json={"metadata": {"labels": {"a": "b"}}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200, await r.json()
    # a status write of another kind, matched by `*/status`
    ns = await _create(http, "/api/v1/namespaces", {"metadata": {"name": "team"}})
    await _policy(http, "nostatus", {"matchConstraints": {"resourceRules": [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["*/status"]}]},
        "validations": [{"expression": "false", "message": "no status writes"}]})
    ns["status"] = {"phase": "Active", "conditions": [{"type": "X", "status": "True"}]}
    async with http.put("/api/v1/namespaces/team/status", json=ns) as r:
        body = await r.json()
        assert r.status == 422 and body["message"].endswith("no status writes"), body


async def test_deletes_see_the_old_object(http: aiohttp.ClientSession) -> None:
    await _create(http, CM, _cm("keep", labels={"protected": "true"}))
    await _create(http, CM, _cm("drop"))
    await _policy(http, "protect", {"matchConstraints": {"resourceRules": [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["configmaps"]}]},
        "validations": [{"expression": "object == null && !has(oldObject.metadata.labels)",
                         "message": "protected"}]})
    async with http.delete(f"{CM}/keep") as r:
        assert r.status == 422, await r.json()
    async with http.delete(f"{CM}/drop") as r:
        assert r.status == 200, await r.json()


async def test_warn_and_audit(http: aiohttp.ClientSession) -> None:
    await _policy(http, "warned", {"matchConstraints": CM_RULES, "validations": [
        {"expression": "has(object.data) && 'owner' in object.data",
         "message": "every ConfigMap should name its owner"}]},
        actions=("Warn", "Audit"))
    async with http.post(CM, json=_cm("x")) as r:
        assert r.status == 201, await r.json()
        warnings = r.headers.getall("Warning", [])
    assert warnings == ['299 - "Validation failed for ValidatingAdmissionPolicy \'warned\' with binding '
                        '\'warned-binding\': every ConfigMap should name its owner"']
    async with http.post(CM, json=_cm("y", {"owner": "me"})) as r:
        assert r.status == 201 and not r.headers.getall("Warning", [])


async def test_match_conditions_variables_and_selectors(http: aiohttp.ClientSession) -> None:
    await _policy(http, "limits", {
        "matchConstraints": {**CM_RULES, "objectSelector": {"matchLabels": {"checked": "yes"}}},
        "matchConditions": [{"name": "not-system", "expression": "!object.metadata.name.startsWith('system-')"}],
        "variables": [{"name": "count", "expression": "size(object.data)"},
                      {"name": "limit", "expression": "variables.count <= 2"},
                      {"name": "broken", "expression": "object.data.missing == 'x'"}],
        "validations": [{"expression": "variables.limit",
                         "messageExpression": "'too many keys: ' + string(variables.count)"}]})
    three = {"a": "1", "b": "2", "c": "3"}
    await _create(http, CM, _cm("unlabelled", three))  # objectSelector
    await _create(http, CM, _cm("system-x", three, labels={"checked": "yes"}))  # matchConditions
    async with http.post(CM, json=_cm("labelled", three, labels={"checked": "yes"})) as r:
        body = await r.json()
        assert r.status == 422 and body["message"].endswith("denied request: too many keys: 3"), body
    # the failing variable is never evaluated: it is not used
    await _create(http, CM, _cm("fine", {"a": "1"}, labels={"checked": "yes"}))


async def test_namespace_selector_and_namespace_object(http: aiohttp.ClientSession) -> None:
    await _create(http, "/api/v1/namespaces", {"metadata": {"name": "prod", "labels": {"env": "prod"}}})
    await _create(http, "/api/v1/namespaces", {"metadata": {"name": "dev", "labels": {"env": "dev"}}})
    await _policy(http, "prod-only", {"matchConstraints": CM_RULES, "validations": [
        {"expression": "has(object.metadata.labels) && 'team' in object.metadata.labels",
         "messageExpression": "'configmaps in ' + namespaceObject.metadata.name + ' need a team label'"}]},
        binding={"matchResources": {"namespaceSelector": {"matchLabels": {"env": "prod"}}}})
    await _create(http, "/api/v1/namespaces/dev/configmaps", _cm("x"))
    async with http.post("/api/v1/namespaces/prod/configmaps", json=_cm("x")) as r:
        body = await r.json()
        assert r.status == 422 and body["message"].endswith("configmaps in prod need a team label"), body


async def test_params(http: aiohttp.ClientSession) -> None:
    await _create(http, f"{ADM}/validatingadmissionpolicies", {"metadata": {"name": "max-keys"}, "spec": {
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}, "matchConstraints": {"resourceRules": [
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["secrets"]}]},
        "validations": [{"expression": "size(object.data) <= int(params.data.max)",
                         "messageExpression": "'at most ' + params.data.max + ' keys'"}]}})
    await _create(http, f"{ADM}/validatingadmissionpolicybindings", {"metadata": {"name": "max-keys"}, "spec": {
        "policyName": "max-keys", "validationActions": ["Deny"],
        "paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"}}})
    secret = {"metadata": {"name": "s"}, "data": {"a": "YQ==", "b": "Yg=="}}
    async with http.post("/api/v1/namespaces/default/secrets", json=secret) as r:
        body = await r.json()
        assert r.status == 422, body
    assert body["message"].endswith("denied request: failed to configure binding: no params found for policy "
                                    "binding with `Deny` parameterNotFoundAction")
    await _create(http, CM, _cm("limits", {"max": "1"}))
    async with http.post("/api/v1/namespaces/default/secrets", json=secret) as r:
        body = await r.json()
        assert r.status == 422 and body["message"].endswith("denied request: at most 1 keys"), body
    async with http.put(f"{CM}/limits", json=_cm("limits", {"max": "2"})) as r:
        assert r.status == 200
    await _create(http, "/api/v1/namespaces/default/secrets", secret)


async def test_failure_policy(http: aiohttp.ClientSession) -> None:
    for name, failure in (("strict", "Fail"), ("lenient", "Ignore")):
        await _policy(http, name, {"failurePolicy": failure, "matchConstraints": {**CM_RULES,
                      "objectSelector": {"matchLabels": {"policy": name}}},
                      "validations": [{"expression": "object.data.missing == 'x'"}]})
    await _create(http, CM, _cm("a", {"k": "v"}, labels={"policy": "lenient"}))
    async with http.post(CM, json=_cm("b", {"k": "v"}, labels={"policy": "strict"})) as r:
        body = await r.json()
        assert r.status == 422, body
    assert body["message"].endswith(
        "denied request: expression 'object.data.missing == 'x'' resulted in error: no such key: missing")


async def _mutating(http: aiohttp.ClientSession, name: str, spec: dict[str, Any]) -> None:
    await _create(http, f"{ADM}/mutatingadmissionpolicies", {"metadata": {"name": name}, "spec": spec})
    await _create(http, f"{ADM}/mutatingadmissionpolicybindings", {"metadata": {"name": name},
                                                                   "spec": {"policyName": name}})


async def test_mutating_policies(http: aiohttp.ClientSession) -> None:
    rules = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                "resources": ["configmaps"]}]}
    await _mutating(http, "label", {"matchConstraints": rules, "reinvocationPolicy": "IfNeeded", "mutations": [
        {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
            "Object{metadata: Object.metadata{labels: {'stamped': 'yes'}}, data: {'added': 'by-policy'}}"}}]})
    await _mutating(http, "patch", {"matchConstraints": rules, "reinvocationPolicy": "Never", "mutations": [
        {"patchType": "JSONPatch", "jsonPatch": {"expression":
            "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {}},"
            " JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('example.com/seen'),"
            " value: object.metadata.?labels['stamped'].orValue('no')}]"}}]})
    created = await _create(http, CM, _cm("m", {"mine": "1"}, labels={"own": "x"}))
    assert created["metadata"]["labels"] == {"own": "x", "stamped": "yes"}
    assert created["data"] == {"mine": "1", "added": "by-policy"}
    assert created["metadata"]["annotations"] == {"example.com/seen": "yes"}
    # a failing mutation under failurePolicy Fail refuses the write
    await _mutating(http, "broken", {"matchConstraints": rules, "reinvocationPolicy": "Never", "mutations": [
        {"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: 'remove', path: '/nothing'}]"}}]})
    async with http.post(CM, json=_cm("n")) as r:
        body = await r.json()
        assert r.status == 422, body
    assert body["message"].startswith('configmaps "n" is forbidden: policy \'broken\' with binding \'broken\' '
                                      "denied request: JSON Patch:")
    # a mutation giving a field the wrong type is refused, not stored (as upstream's typed conversion)
    await _mutating(http, "wrongtype", {"matchConstraints": {"resourceRules": [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["secrets"]}]},
        "reinvocationPolicy": "Never", "mutations": [{"patchType": "JSONPatch", "jsonPatch": {
            "expression": "[JSONPatch{op: 'add', path: '/immutable', value: 'yes'}]"}}]})
    async with http.post("/api/v1/namespaces/default/secrets", json={"metadata": {"name": "s"}}) as r:
        body = await r.json()
        assert r.status == 422, body
    assert "denied request: type mismatch: " in body["message"], body


NODE_POLICY = {
    "failurePolicy": "Fail",
    "matchConstraints": {"resourceRules": [{"apiGroups": ["resource.k8s.io"],
                                            "apiVersions": ["v1beta1", "v1beta2", "v1"],
                                            "operations": ["CREATE", "UPDATE", "DELETE"],
                                            "resources": ["resourceslices"]}]},
    "matchConditions": [{"name": "isRestrictedUser", "expression":
                         'request.userInfo.username == "system:serviceaccount:dra:dra-example-driver-service-account"'}],
    "variables": [
        {"name": "userNodeName",
         "expression": "request.userInfo.extra[?'authentication.kubernetes.io/node-name'][0].orValue('')"},
        {"name": "objectNodeName",
         "expression": '(request.operation == "DELETE" ? oldObject : object).spec.?nodeName.orValue("")'}],
    "validations": [
        {"expression": 'variables.userNodeName != ""',
         "message": "no node association found for user, this user must run in a pod on a node and "
                    "ServiceAccountTokenPodNodeInfo must be enabled"},
        {"expression": "variables.userNodeName == variables.objectNodeName",
         "messageExpression": "\"this user running on node '\"+variables.userNodeName+\"' may not modify \" +\n"
                              "(variables.objectNodeName == \"\" ?\"cluster resourceslices\" : "
                              "\"resourceslices on node '\"+variables.objectNodeName+\"'\")"}],
}


def _slice(name: str, node: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": "gpu.example.com", "pool": {"name": "p", "generation": 1,
                                                                  "resourceSliceCount": 1}}
    if node:
        spec["nodeName"] = node
    else:
        spec["allNodes"] = True
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


async def test_dra_example_driver_policy_with_a_pod_bound_token(tmp_path: Path) -> None:
    async with secure_server(tmp_path) as secure:
        admin = secure.session("admin")
        slices = "/apis/resource.k8s.io/v1/resourceslices"
        assert (await call(admin, "POST", "/api/v1/namespaces", {"metadata": {"name": "dra"}}))[0] == 201
        sa = "dra-example-driver-service-account"
        assert (await call(admin, "POST", "/api/v1/namespaces/dra/serviceaccounts", {"metadata": {"name": sa}}))[0] == 201
        role = {"metadata": {"name": "slices"}, "rules": [{"apiGroups": ["resource.k8s.io"],
                "resources": ["resourceslices"], "verbs": ["*"]}]}
        rb = "/apis/rbac.authorization.k8s.io/v1"
        assert (await call(admin, "POST", f"{rb}/clusterroles", role))[0] == 201
        assert (await call(admin, "POST", f"{rb}/clusterrolebindings", {
            "metadata": {"name": "slices"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                        "kind": "ClusterRole", "name": "slices"},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": "dra"}]}))[0] == 201
        code, _ = await call(admin, "POST", f"{ADM}/validatingadmissionpolicies",
                             {"metadata": {"name": "resourceslices-policy"}, "spec": NODE_POLICY})
        assert code == 201
        code, _ = await call(admin, "POST", f"{ADM}/validatingadmissionpolicybindings", {
            "metadata": {"name": "resourceslices-policy"},
            "spec": {"policyName": "resourceslices-policy", "validationActions": ["Deny"]}})
        assert code == 201
        pod = {"metadata": {"name": "plugin"}, "spec": {"serviceAccountName": sa, "nodeName": "node-1",
                                                         "containers": [{"name": "c", "image": "busybox"}]}}
        assert (await call(admin, "POST", "/api/v1/namespaces/dra/pods", pod))[0] == 201
        code, tr = await call(admin, "POST", f"/api/v1/namespaces/dra/serviceaccounts/{sa}/token", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "plugin"}}})
        assert code == 201, tr
        plugin = secure.session(token=tr["status"]["token"])
        code, body = await call(plugin, "POST", slices, _slice("mine", "node-1"))
        assert code == 201, body
        code, body = await call(plugin, "POST", slices, _slice("theirs", "node-2"))
        assert code == 422, body
        assert body["message"] == (
            "resourceslices.resource.k8s.io \"theirs\" is forbidden: ValidatingAdmissionPolicy "
            "'resourceslices-policy' with binding 'resourceslices-policy' denied request: this user running on "
            "node 'node-1' may not modify resourceslices on node 'node-2'")
        code, body = await call(plugin, "POST", slices, _slice("cluster", None))
        assert code == 422 and body["message"].endswith("may not modify cluster resourceslices"), body
        # a token not bound to a pod carries no node name
        code, tr = await call(admin, "POST", f"/api/v1/namespaces/dra/serviceaccounts/{sa}/token", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
        unbound = secure.session(token=tr["status"]["token"])
        code, body = await call(unbound, "DELETE", f"{slices}/mine")
        assert code == 422 and body["message"].endswith("no node association found for user, this user must run "
                                                        "in a pod on a node and ServiceAccountTokenPodNodeInfo must "
                                                        "be enabled"), body
        # the admin is not the restricted user (matchConditions)
        assert (await call(admin, "POST", slices, _slice("admins", "node-9")))[0] == 201
        assert (await call(plugin, "DELETE", f"{slices}/mine"))[0] == 200


async def test_type_checking_status(http: aiohttp.ClientSession) -> None:
    rules = {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"],
                                "resources": ["deployments"]}]}
    await _create(http, f"{ADM}/validatingadmissionpolicies", {"metadata": {"name": "typo"}, "spec": {
        "matchConstraints": rules, "validations": [{"expression": "object.spec.replicaz <= 5"}]}})
    async with http.get(f"{ADM}/validatingadmissionpolicies/typo") as r:
        policy = await r.json()
    assert policy["status"] == {"observedGeneration": 1, "typeChecking": {"expressionWarnings": [{
        "fieldRef": "spec.validations[0].expression",
        "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicaz'\n"
                   " | object.spec.replicaz <= 5\n | ...........^\n"}]}}
    policy["spec"]["validations"][0]["expression"] = "object.spec.replicas <= 5"
    async with http.put(f"{ADM}/validatingadmissionpolicies/typo", json=policy) as r:
        assert r.status == 200, await r.json()
    async with http.get(f"{ADM}/validatingadmissionpolicies/typo") as r:
        assert (await r.json())["status"] == {"observedGeneration": 2, "typeChecking": {}}


async def test_audit_annotations_reach_the_write_context(api_server: servers.Running,
                                                         http: aiohttp.ClientSession) -> None:
    await _policy(http, "audited", {"matchConstraints": CM_RULES, "validations": [
        {"expression": "has(object.data)", "message": "no data"}],
        "auditAnnotations": [{"key": "keys", "valueExpression": "string(size(object.metadata.name))"}]},
        actions=("Audit",))
    store = api_server.app[st.STORE]
    kind = res.lookup("", "v1", "configmaps")
    assert kind is not None
    ctx = stores.WriteContext()
    await store.create(kind, "default", _cm("abc"), ctx)
    assert ctx.audit_annotations == {
        "audited/keys": "3",
        "validation.policy.admission.k8s.io/validation_failure":
            '[{"message":"no data","policy":"audited","binding":"audited-binding","expressionIndex":0,'
            '"validationActions":["Audit"]}]'}


async def test_the_authorizer_library_asks_rbac(tmp_path: Path) -> None:
    async with secure_server(tmp_path) as secure:
        admin, alice = secure.session("admin"), secure.session("alice")
        code, _ = await call(admin, "POST", f"{ADM}/validatingadmissionpolicies", {
            "metadata": {"name": "readers-only"}, "spec": {"matchConstraints": CM_RULES, "validations": [{
                "expression": "authorizer.group('').resource('secrets').namespace(request.namespace)"
                              ".check('list').allowed()",
                "messageExpression": "request.userInfo.username + ' may not list secrets'"}]}})
        assert code == 201
        code, _ = await call(admin, "POST", f"{ADM}/validatingadmissionpolicybindings", {
            "metadata": {"name": "readers-only"}, "spec": {"policyName": "readers-only",
                                                           "validationActions": ["Deny"]}})
        assert code == 201
        assert (await call(admin, "POST", rbac_path("rolebindings", "default"),
                           binding("alice-edit", "edit", namespace="default")))[0] == 201
        code, body = await call(alice, "POST", CM, _cm("a"))
        assert code == 201, body  # `edit` may list secrets
        assert (await call(admin, "DELETE", rbac_path("rolebindings", "default") + "/alice-edit"))[0] == 200
        role = {"metadata": {"name": "cm-writer"}, "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                                                             "verbs": ["create"]}]}
        assert (await call(admin, "POST", rbac_path("roles", "default"), role))[0] == 201
        rb = binding("alice-cm", "cm-writer", namespace="default", role_kind="Role")
        assert (await call(admin, "POST", rbac_path("rolebindings", "default"), rb))[0] == 201
        code, body = await call(alice, "POST", CM, _cm("b"))
        assert code == 422 and body["message"].endswith("denied request: alice may not list secrets"), body
