"""The pure part of admission webhooks (`cp.admission.webhooks`): calling order and defaults, exempt
kinds, which webhooks apply, match conditions and their failure policy, the review sent, how answers
are checked (upstream's VerifyAdmissionResponse messages) and refusals (ToStatusErr)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from cp import errors, rbac
from cp.admission import authz, matching
from cp.admission import webhooks as hooks

REQUEST = matching.Request(group="apps", version="v1", resource="deployments", kind_group="apps", kind_version="v1",
                           kind="Deployment", operation="CREATE", namespace="ns", name="web", namespaced=True)
RULE = {"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}


def hook(**spec: Any) -> hooks.Hook:
    return hooks.Hook(configuration="c", index=0, mutating=False,
                      spec={"name": "h.example.com", "rules": [RULE], "sideEffects": "None",
                            "admissionReviewVersions": ["v1"], **spec})


def test_order_defaults_and_exempt_kinds() -> None:
    configs = [{"metadata": {"name": "b"}, "webhooks": [{"name": "b1"}]},
               {"metadata": {"name": "a"}, "webhooks": [{"name": "a1"}, {"name": "a2"}]}]
    ordered = hooks.hooks_of(configs, mutating=True)
    assert [(h.configuration, h.name) for h in ordered] == [("a", "a1"), ("a", "a2"), ("b", "b1")]
    assert len({h.uid for h in ordered}) == 3
    first = ordered[0]
    assert (first.timeout_seconds, first.failure_policy_ignore, first.reinvoke_if_needed) == (10.0, False, False)
    assert hooks.exempt(group="admissionregistration.k8s.io", kind="ValidatingWebhookConfiguration")
    assert hooks.exempt(group="admissionregistration.k8s.io", kind="MutatingAdmissionPolicyBinding")
    assert not hooks.exempt(group="apps", kind="Deployment")


def test_review_versions_and_side_effects() -> None:
    assert hook(admissionReviewVersions=["v2", "v1beta1", "v1"]).review_version() == "v1beta1"
    assert hook(admissionReviewVersions=["v2"]).review_version() is None
    assert hook(sideEffects="NoneOnDryRun").supports_dry_run() is True
    assert hook(sideEffects="Some").supports_dry_run() is False  # stored by an older version
    assert hook(sideEffects=None).supports_dry_run() is None
    assert hooks.dry_run_unsupported("h").message == 'admission webhook "h" does not support dry run'


def test_invocation_selectors_rules_and_equivalents() -> None:
    def no_namespace() -> dict[str, str]:
        raise errors.NotFound.of(group="", plural="namespaces", name="ns")

    labelled = {"metadata": {"labels": {"team": "a"}}}
    h = hook(objectSelector={"matchLabels": {"team": "a"}})
    assert h.invocation(REQUEST, equivalents=(), obj=labelled, old=None, namespace_labels=dict) is not None
    assert h.invocation(REQUEST, equivalents=(), obj={"metadata": {}}, old=None, namespace_labels=dict) is None
    h = hook(namespaceSelector={"matchLabels": {"env": "prod"}})
    assert h.invocation(REQUEST, equivalents=(), obj=labelled, old=None,
                        namespace_labels=lambda: {"env": "prod"}) is not None
    with pytest.raises(errors.NotFound):  # the namespace error counts because the rules match
        h.invocation(REQUEST, equivalents=(), obj=labelled, old=None, namespace_labels=no_namespace)
    other = matching.Request(**{**{f: getattr(REQUEST, f) for f in REQUEST.__struct_fields__}, "resource": "pods",
                                "group": "", "kind_group": "", "kind": "Pod"})
    assert h.invocation(other, equivalents=(), obj=None, old=None, namespace_labels=no_namespace) is None
    assert hook(rules=[]).invocation(REQUEST, equivalents=(), obj=None, old=None, namespace_labels=dict) is None
    old_version = matching.Request(**{**{f: getattr(REQUEST, f) for f in REQUEST.__struct_fields__},
                                      "version": "v1beta1", "kind_version": "v1beta1"})
    rule = {**RULE, "apiVersions": ["v1beta1"]}
    found = hook(rules=[rule]).invocation(REQUEST, equivalents=[old_version], obj=None, old=None,
                                          namespace_labels=dict)
    assert found is not None and found.request is old_version
    assert hook(rules=[rule], matchPolicy="Exact").invocation(
        REQUEST, equivalents=[old_version], obj=None, old=None, namespace_labels=dict) is None


def test_match_conditions_and_their_failure_policy() -> None:
    conditions = [{"name": "named", "expression": "object.metadata.name == 'web'"},
                  {"name": "label", "expression": "object.metadata.labels.team == 'a'"}]
    activation: dict[str, Any] = {"object": {"metadata": {"name": "web", "labels": {"team": "a"}}},
                                  "oldObject": None, "request": {}}
    assert hook(matchConditions=conditions).conditions_match(activation, group="apps", resource="deployments",
                                                             name="web")
    activation["object"]["metadata"]["name"] = "api"
    assert not hook(matchConditions=conditions).conditions_match(activation, group="apps",
                                                                 resource="deployments", name="api")
    activation["object"] = {"metadata": {"name": "web"}}  # no labels: the second condition errors
    with pytest.raises(errors.Forbidden) as caught:
        hook(matchConditions=conditions).conditions_match(activation, group="apps", resource="deployments",
                                                          name="web")
    assert caught.value.message == ('deployments.apps "web" is forbidden: expression '
                                    "'object.metadata.labels.team == 'a'' resulted in error: no such key: labels")
    assert not hook(matchConditions=conditions, failurePolicy="Ignore").conditions_match(
        activation, group="apps", resource="deployments", name="web")


def test_review_request() -> None:
    user = rbac.UserInfo(name="alice", groups=("devs",), extra={"k": ("v",)})
    request = hooks.admission_request(invocation=REQUEST, requested=REQUEST, user=user, dry_run=False,
                                      options={"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"})
    review = hooks.review_request(version="v1", uid="u-1", request=request, obj={"a": 1}, old=None)
    assert review == {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {
        "uid": "u-1", "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
        "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
        "requestKind": {"group": "apps", "version": "v1", "kind": "Deployment"},
        "requestResource": {"group": "apps", "version": "v1", "resource": "deployments"},
        "name": "web", "namespace": "ns", "operation": "CREATE",
        "userInfo": {"username": "alice", "groups": ["devs"], "extra": {"k": ["v"]}},
        "object": {"a": 1}, "oldObject": None, "dryRun": False,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}}}


def _answer(**response: Any) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u-1", "allowed": True, **response}}


PATCH = base64.b64encode(b'[{"op": "add", "path": "/a", "value": 1}]').decode()


@pytest.mark.parametrize(("answer", "mutating", "message"), [
    ({}, True, "webhook response was absent"),
    (_answer(uid="other"), True, 'expected response.uid="u-1", got "other"'),
    ({**_answer(), "apiVersion": "admission.k8s.io/v1beta1"}, True,
     "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, "
     "Kind=AdmissionReview"),
    (_answer(patch=PATCH), True, "webhook returned response.patch but not response.patchType"),
    (_answer(patchType="JSONPatch"), True, "webhook returned response.patchType but not response.patch"),
    (_answer(patch=PATCH, patchType="JSONPatch"), False, "validating webhook may not return response.patch"),
    (_answer(patchType="JSONPatch"), False, "validating webhook may not return response.patchType"),
])
def test_invalid_answers(answer: dict[str, Any], mutating: bool, message: str) -> None:
    with pytest.raises(hooks.InvalidResponse) as caught:
        hooks.verify_response(answer, uid="u-1", version="v1", mutating=mutating)
    assert str(caught.value) == message


def test_valid_answers() -> None:
    got = hooks.verify_response(_answer(patch=PATCH, patchType="JSONPatch", warnings=["w"]), uid="u-1",
                                version="v1", mutating=True)
    assert got.allowed and got.patch == b'[{"op": "add", "path": "/a", "value": 1}]' and got.warnings == ("w",)
    beta = {"response": {"uid": "anything", "allowed": False, "patch": PATCH}}  # v1beta1: not checked
    got = hooks.verify_response(beta, uid="u-1", version="v1beta1", mutating=True)
    assert not got.allowed and got.patch is not None
    with pytest.raises(hooks.UnsupportedPatch):
        hooks.verify_response(_answer(patch=PATCH, patchType="MergePatch"), uid="u-1", version="v1", mutating=True)


def test_denials() -> None:
    err = hooks.denied("h", {"message": "nope", "code": 422, "reason": "Invalid"})
    assert (err.code, err.reason, err.message) == (422, "Invalid", 'admission webhook "h" denied the request: nope')
    err = hooks.denied("h", {"code": 200, "reason": "Because"})
    assert (err.code, err.message) == (400, 'admission webhook "h" denied the request: Because')
    assert hooks.denied("h", None).message == 'admission webhook "h" denied the request without explanation'
    failed = hooks.calling_failed("h", "failed to call webhook: boom")
    assert failed.status()["message"] == 'Internal error occurred: failed calling webhook "h": failed to call webhook: boom'
    assert failed.code == 500


def test_authorizer_in_match_conditions() -> None:
    """The upstream documentation's break-glass condition: the webhook is skipped for users allowed
    the `breakglass` verb on its configuration; checks ask the given authorizer about the request's user."""
    asked: list[rbac.Attributes] = []

    def authorize(attrs: rbac.Attributes) -> bool:
        asked.append(attrs)
        return attrs.user.name == "admin" or attrs.path == "/healthz"

    conditions = [{"name": "breakglass", "expression":
                   "!authorizer.group('admissionregistration.k8s.io').resource('validatingwebhookconfigurations')"
                   ".name('my-webhook.example.com').check('breakglass').allowed()"}]
    h = hook(matchConditions=conditions)
    root = authz.authorizer_value(group="apps", version="v1", resource="deployments", subresource="",
                                  namespace="default", name="web")

    def matches(user: str) -> bool:
        activation = {"object": None, "oldObject": None, "request": {}, "authorizer": root}
        functions = authz.functions(user=rbac.UserInfo(name=user), authorize=authorize)
        return h.conditions_match(activation, group="apps", resource="deployments", name="web", functions=functions)

    assert matches("alice") and not matches("admin")
    assert asked[0] == rbac.Attributes(user=rbac.UserInfo(name="alice"), verb="breakglass",
                                       api_group="admissionregistration.k8s.io", api_version="*",
                                       resource="validatingwebhookconfigurations", name="my-webhook.example.com")
    path = hook(matchConditions=[{"name": "p", "expression": "authorizer.path('/healthz').check('get').allowed() && "
                                  "authorizer.serviceAccount('ns', 'sa').group('').resource('pods')"
                                  ".namespace('ns').check('list').reason() == ''"}])
    activation = {"object": None, "oldObject": None, "request": {}, "authorizer": root}
    functions = authz.functions(user=rbac.UserInfo(name="bob"), authorize=authorize)
    assert path.conditions_match(activation, group="", resource="pods", name="p", functions=functions)
    assert asked[-1].user.name == "system:serviceaccount:ns:sa" and asked[-1].namespace == "ns"
