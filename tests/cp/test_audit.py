"""The audit policy (audit.k8s.io/v1 Policy): loading and validation as kube-apiserver's
`--audit-policy-file`, and its checker: the first matching rule's level, omitted stages and managed
fields."""

from __future__ import annotations

import pytest

from cp import audit, rbac

ALICE = rbac.UserInfo(name="alice", groups=("devs", rbac.AUTHENTICATED))


def attrs(verb: str = "get", resource: str = "", *, group: str = "", namespace: str = "", name: str = "",
          subresource: str = "", path: str = "", user: rbac.UserInfo = ALICE) -> rbac.Attributes:
    return rbac.Attributes(user=user, verb=verb, resource_request=bool(resource), api_group=group,
                           api_version="v1", resource=resource, subresource=subresource, namespace=namespace,
                           name=name, path=path)


def policy(text: str) -> audit.Checker:
    return audit.Checker(audit.load_policy(b"apiVersion: audit.k8s.io/v1\nkind: Policy\n" + text.encode()))


def test_the_first_matching_rule_decides_and_no_match_is_none() -> None:
    checker = policy("""
rules:
- level: None
  users: [system:kube-proxy]
  verbs: [watch]
- level: RequestResponse
  resources: [{group: resource.k8s.io}]
- level: Request
  userGroups: [ops]
  namespaces: [kube-system]
- level: Metadata
  resources: [{group: "", resources: [pods/log, "*/status", configmaps/*]}]
- level: Metadata
  nonResourceURLs: [/healthz*, /version]
""")
    level = lambda a: checker.evaluate(a).level  # noqa: E731
    proxy = rbac.UserInfo(name="system:kube-proxy")
    assert level(attrs("watch", "endpoints", user=proxy)) == "None"
    assert level(attrs("list", "endpoints", user=proxy)) == "None"  # no later rule matches it either
    assert level(attrs("watch", "resourceclaims", group="resource.k8s.io", user=proxy)) == "None"
    assert level(attrs("create", "resourceclaims", group="resource.k8s.io", namespace="default")) == "RequestResponse"
    assert level(attrs("get", "resourceslices", group="resource.k8s.io")) == "RequestResponse"
    ops = rbac.UserInfo(name="carol", groups=("ops",))
    assert level(attrs("get", "secrets", namespace="kube-system", user=ops)) == "Request"
    assert level(attrs("get", "secrets", namespace="default", user=ops)) == "None"
    assert level(attrs("get", "pods", namespace="default", name="p", subresource="log")) == "Metadata"
    assert level(attrs("get", "pods", namespace="default", name="p")) == "None"  # pods/log is not pods
    assert level(attrs("update", "pods", namespace="default", name="p", subresource="status")) == "Metadata"
    assert level(attrs("get", "configmaps", namespace="default", name="c", subresource="x")) == "Metadata"
    # as upstream's checker: `configmaps/*` matches the resource itself too
    assert level(attrs("get", "configmaps", namespace="default", name="c")) == "Metadata"
    assert level(attrs("get", path="/healthz/etcd")) == "Metadata"
    assert level(attrs("get", path="/version")) == "Metadata"
    assert level(attrs("get", path="/version/x")) == "None"
    # a non-resource rule never matches a resource request, nor a resource rule a path
    assert level(attrs("get", "healthz")) == "None"


def test_resource_names_wildcards_and_cluster_scope() -> None:
    checker = policy("""
rules:
- level: Request
  resources: [{group: "", resources: [configmaps], resourceNames: [controller-leader]}]
- level: Metadata
  namespaces: [""]
- level: RequestResponse
  resources: [{group: "apps", resources: ["*"]}]
""")
    level = lambda a: checker.evaluate(a).level  # noqa: E731
    assert level(attrs("update", "configmaps", namespace="ns", name="controller-leader")) == "Request"
    assert level(attrs("update", "configmaps", namespace="ns", name="other")) == "None"
    assert level(attrs("get", "nodes", name="n1")) == "Metadata"  # "" namespace: cluster-scoped
    assert level(attrs("get", "deployments", group="apps", namespace="ns", name="d", subresource="scale")) \
        == "RequestResponse"
    assert level(attrs("get", "deployments", group="apps/v1", namespace="ns")) == "None"


def test_omitted_stages_are_the_union_of_the_policy_and_the_rule_and_managed_fields_override() -> None:
    checker = policy("""
omitStages: [RequestReceived]
omitManagedFields: true
rules:
- level: Metadata
  users: [alice]
  omitStages: [ResponseStarted]
  omitManagedFields: false
- level: Request
""")
    first = checker.evaluate(attrs("get", "pods"))
    assert first == audit.RequestConfig(level="Metadata", omit_stages=frozenset({"RequestReceived", "ResponseStarted"}),
                                        omit_managed_fields=False)
    bob = checker.evaluate(attrs("get", "pods", user=rbac.UserInfo(name="bob")))
    assert bob == audit.RequestConfig(level="Request", omit_stages=frozenset({"RequestReceived"}),
                                      omit_managed_fields=True)
    assert bob.at_least("Metadata") and bob.at_least("Request") and not bob.at_least("RequestResponse")


@pytest.mark.parametrize(("text", "message"), [
    ("kind: Policy\nrules: [{level: Metadata}]\n", "failed decoding: Object 'apiVersion' is missing"),
    ("apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: Metadata}]\n",
     'failed decoding: no kind "Policy" is registered for version "audit.k8s.io/v1beta1"'),
    ("apiVersion: audit.k8s.io/v1\nkind: Nope\n", 'no kind "Nope" is registered'),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\n", "loaded illegal policy with 0 rules"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{}]\n", "rules[0].level: Required value"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Everything}]\n",
     'rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", '
     '"RequestResponse"'),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [healthz]}]\n",
     "non-resource URL rules must begin with a '/' character"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [/a*/b]}]\n",
     "non-resource URL wildcards '*' must be the final character of the rule"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [/a], namespaces: [x]}]\n",
     "rules cannot apply to both regular resources and non-resource URLs"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, resources: [{group: apps/v1}]}]\n",
     'rules[0].resources.group: Invalid value: "apps/v1"'),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, resources: [{resourceNames: [a]}]}]\n",
     "using resourceNames requires at least one resource"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Done]\nrules: [{level: None, omitStages: [Later]}]\n",
     '[rules[0].omitStages[0]: Invalid value: "Later": allowed stages are RequestReceived,ResponseStarted,'
     'ResponseComplete,Panic, omitStages[0]: Invalid value: "Done"'),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, users: admin}]\n", "failed decoding: Expected"),
    ("rules: [", "failed decoding: "),
])
def test_a_policy_that_cannot_be_used_says_why(text: str, message: str) -> None:
    with pytest.raises(audit.PolicyError) as err:
        audit.load_policy(text.encode())
    assert message in str(err.value)


def test_json_is_a_policy_too_and_unknown_fields_are_ignored() -> None:
    loaded = audit.load_policy(b'{"apiVersion":"audit.k8s.io/v1","kind":"Policy","metadata":{"name":"p"},'
                               b'"rules":[{"level":"Metadata","future":1}]}')
    assert loaded.rules == [audit.PolicyRule(level="Metadata")]


def test_managed_fields_are_dropped_from_objects_lists_and_tables() -> None:
    mf = [{"manager": "kubectl"}]
    obj = {"kind": "Pod", "metadata": {"name": "p", "managedFields": mf}}
    assert audit.without_managed_fields(obj) == {"kind": "Pod", "metadata": {"name": "p"}}
    assert obj["metadata"]["managedFields"] == mf  # a copy: the original is unchanged
    assert audit.without_managed_fields({"kind": "PodList", "metadata": {}, "items": [obj]})["items"] == [
        {"kind": "Pod", "metadata": {"name": "p"}}]
    table = {"kind": "Table", "rows": [{"cells": [], "object": obj}]}
    assert audit.without_managed_fields(table)["rows"][0]["object"] == {"kind": "Pod", "metadata": {"name": "p"}}
