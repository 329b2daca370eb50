"""cp.admission.authz: the CEL authorizer library asks the server's authorizer what upstream's would."""

from __future__ import annotations

from typing import Any

import pytest

from cp import rbac
from cp.admission import cel, matching
from cp.admission import policies as pol

POD = matching.Request(group="", version="v1", resource="pods", kind_group="", kind_version="v1", kind="Pod",
                       operation="CREATE", namespace="default", name="web", namespaced=True)

ALICE = rbac.UserInfo(name="alice", groups=("devs",))


def evaluate(expression: str, asked: list[rbac.Attributes], *, allow: bool = True) -> Any:
    def authorize(attrs: rbac.Attributes) -> bool:
        asked.append(attrs)
        return allow
    policy = pol.compile_validating({"metadata": {"name": "p"}, "spec": {"validations": [{"expression": expression}]}})
    request = pol.request_value(matched=POD, requested=POD, user=ALICE)
    inv = pol.Invocation(policy, obj={}, old=None, request=request, params=None, namespace=None, user=ALICE,
                         authorize=authorize)
    return inv.evaluate(policy.validations[0].expression)


def test_resource_checks() -> None:
    asked: list[rbac.Attributes] = []
    assert evaluate("authorizer.group('apps').resource('deployments').subresource('scale').namespace('ns')"
                    ".name('web').check('update').allowed()", asked) is True
    assert asked == [rbac.Attributes(user=ALICE, verb="update", namespace="ns", api_group="apps", api_version="*",
                                     resource="deployments", subresource="scale", name="web")]
    asked.clear()
    assert evaluate("authorizer.group('').resource('pods').check('delete').allowed()", asked, allow=False) is False
    assert asked[0].resource == "pods" and asked[0].namespace == ""


def test_request_resource_path_and_service_accounts() -> None:
    asked: list[rbac.Attributes] = []
    assert evaluate("authorizer.requestResource.check('create').allowed()", asked)
    assert asked[0] == rbac.Attributes(user=ALICE, verb="create", namespace="default", api_group="",
                                       api_version="v1", resource="pods", name="web")
    asked.clear()
    assert evaluate("authorizer.path('/healthz').check('get').reason() == '' && "
                    "!authorizer.path('/x').check('get').errored()", asked)
    assert asked[0] == rbac.Attributes(user=ALICE, verb="get", resource_request=False, path="/healthz")
    asked.clear()
    evaluate("authorizer.serviceAccount('kube-system', 'robot').group('').resource('nodes').check('get').allowed()",
             asked)
    assert asked[0].user == rbac.UserInfo(name="system:serviceaccount:kube-system:robot",
                                          groups=("system:serviceaccounts", "system:serviceaccounts:kube-system"))


def test_without_an_authorizer_everything_is_allowed() -> None:
    policy = pol.compile_validating({"metadata": {"name": "p"}, "spec": {"validations": [
        {"expression": "authorizer.group('').resource('secrets').check('list').allowed()"}]}})
    request = pol.request_value(matched=POD, requested=POD, user=ALICE)
    inv = pol.Invocation(policy, obj={}, old=None, request=request, params=None, namespace=None)
    assert [d.action for d in inv.validate()] == ["admit"]


def test_misuse_is_a_cel_error() -> None:
    assert cel.compile_admission("object.check('get')", variables=frozenset({"object"})).error is None
    with pytest.raises(pol.PolicyError, match="no such overload"):
        evaluate("authorizer.check('get')", [])
