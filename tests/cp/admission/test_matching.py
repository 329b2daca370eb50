"""cp.admission.matching: rules, selectors and matchPolicy as k8s.io/apiserver matches them."""

from __future__ import annotations

from typing import Any

import pytest

from cp import errors
from cp.admission.matching import (
    Request,
    label_selector_matches,
    namespace_selector_matches,
    object_selector_matches,
    resource_rules_match,
    rule_matches,
)


def pod_request(**over: Any) -> Request:
    fields: dict[str, Any] = {
        "group": "", "version": "v1", "resource": "pods", "kind_group": "", "kind_version": "v1",
        "kind": "Pod", "operation": "CREATE", "namespace": "default", "name": "web", "namespaced": True,
    }
    fields.update(over)
    return Request(**fields)


def rule(**over: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                         "resources": ["pods"]}
    r.update(over)
    return r


NS_REQUEST = Request(group="", version="v1", resource="namespaces", kind_group="", kind_version="v1",
                     kind="Namespace", operation="CREATE", namespace="", name="team", namespaced=False)
NODE_REQUEST = Request(group="", version="v1", resource="nodes", kind_group="", kind_version="v1",
                       kind="Node", operation="UPDATE", name="n1", namespaced=False)


class TestRuleMatches:
    def test_exact(self) -> None:
        assert rule_matches(rule(), pod_request())

    @pytest.mark.parametrize("field,value", [
        ("operations", ["UPDATE"]), ("apiGroups", ["apps"]), ("apiVersions", ["v2"]),
        ("resources", ["services"]), ("operations", []), ("apiGroups", None),
    ])
    def test_each_field_must_match(self, field: str, value: Any) -> None:
        assert not rule_matches(rule(**{field: value}), pod_request())

    def test_wildcards(self) -> None:
        r = rule(operations=["*"], apiGroups=["*"], apiVersions=["*"], resources=["*"])
        assert rule_matches(r, pod_request(operation="DELETE"))
        assert rule_matches(r, NODE_REQUEST)

    def test_bare_resource_does_not_match_a_subresource(self) -> None:
        assert not rule_matches(rule(operations=["UPDATE"]), pod_request(operation="UPDATE", subresource="status"))
        assert not rule_matches(rule(resources=["*"], operations=["UPDATE"]),
                                pod_request(operation="UPDATE", subresource="status"))

    @pytest.mark.parametrize("resources,match", [
        (["pods/status"], True), (["*/status"], True), (["pods/*"], True), (["*/*"], True),
        (["pods/log"], False), (["*/scale"], False), (["pods"], False),
    ])
    def test_subresource_forms(self, resources: list[str], match: bool) -> None:
        req = pod_request(operation="UPDATE", subresource="status")
        assert rule_matches(rule(operations=["UPDATE"], resources=resources), req) is match

    def test_main_resource_with_slash_star(self) -> None:
        assert rule_matches(rule(resources=["pods/*"]), pod_request())  # "*" matches the empty subresource

    @pytest.mark.parametrize("scope,pod,node,ns", [
        (None, True, True, True), ("*", True, True, True),
        ("Namespaced", True, False, False), ("Cluster", False, True, True),
    ])
    def test_scope(self, scope: str | None, pod: bool, node: bool, ns: bool) -> None:
        r = rule(operations=["*"], resources=["*"], apiGroups=["*"], apiVersions=["*"])
        if scope is not None:
            r["scope"] = scope
        assert rule_matches(r, pod_request()) is pod
        assert rule_matches(r, NODE_REQUEST) is node
        assert rule_matches(r, NS_REQUEST) is ns

    def test_resource_names(self) -> None:
        assert rule_matches(rule(resourceNames=["web", "db"]), pod_request())
        assert not rule_matches(rule(resourceNames=["db"]), pod_request())
        assert rule_matches(rule(resourceNames=[]), pod_request())


class TestSelectors:
    def test_label_selector(self) -> None:
        assert label_selector_matches({}, {"a": "b"})
        assert not label_selector_matches(None, {"a": "b"})
        assert label_selector_matches({"matchLabels": {"a": "b"}}, {"a": "b", "c": "d"})
        assert not label_selector_matches(
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["b"]}]}, {"a": "b"})
        assert label_selector_matches({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}, {})

    def test_invalid_selector_is_a_bad_request(self) -> None:
        with pytest.raises(errors.BadRequest):
            label_selector_matches({"matchExpressions": [{"key": "a", "operator": "Near"}]}, {})

    def test_object_selector_new_or_old(self) -> None:
        sel = {"matchLabels": {"env": "prod"}}
        prod = {"metadata": {"labels": {"env": "prod"}}}
        dev = {"metadata": {"labels": {"env": "dev"}}}
        assert object_selector_matches(sel, obj=prod, old=None)
        assert object_selector_matches(sel, obj=dev, old=prod)  # the old object still matches
        assert object_selector_matches(sel, obj=None, old=prod)  # a delete
        assert not object_selector_matches(sel, obj=dev, old=None)
        assert not object_selector_matches(sel, obj=None, old=None)
        assert object_selector_matches(None, obj=None, old=None)
        assert object_selector_matches({}, obj=dev, old=None)

    def test_object_selector_on_object_without_labels(self) -> None:
        sel = {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}
        assert object_selector_matches(sel, obj={"metadata": {}}, old=None)
        assert object_selector_matches(sel, obj={}, old=None)

    def test_namespace_selector(self) -> None:
        sel = {"matchLabels": {"team": "a"}}
        assert namespace_selector_matches(sel, pod_request(), {"team": "a"})
        assert not namespace_selector_matches(sel, pod_request(), {"team": "b"})
        assert not namespace_selector_matches(sel, pod_request(), None)
        assert namespace_selector_matches({}, pod_request(), None)
        assert namespace_selector_matches(None, pod_request(), {})

    def test_cluster_scoped_objects_always_match(self) -> None:
        assert namespace_selector_matches({"matchLabels": {"team": "a"}}, NODE_REQUEST, None)

    def test_namespace_matches_on_its_own_labels(self) -> None:
        sel = {"matchLabels": {"team": "a"}}
        assert namespace_selector_matches(sel, NS_REQUEST, {"team": "a"})
        assert not namespace_selector_matches(sel, NS_REQUEST, {})


DEPLOY = Request(group="apps", version="v1", resource="deployments", kind_group="apps", kind_version="v1",
                 kind="Deployment", operation="CREATE", namespace="default", name="d", namespaced=True)
DEPLOY_EXT = Request(group="extensions", version="v1beta1", resource="deployments", kind_group="extensions",
                     kind_version="v1beta1", kind="Deployment", operation="CREATE", namespace="default",
                     name="d", namespaced=True)
EXT_RULE = {"operations": ["CREATE"], "apiGroups": ["extensions"], "apiVersions": ["v1beta1"],
            "resources": ["deployments"]}


class TestResourceRulesMatch:
    def test_no_rules_matches_as_is(self) -> None:
        assert resource_rules_match({}, pod_request()) == (True, pod_request())

    def test_rules(self) -> None:
        assert resource_rules_match({"resourceRules": [rule()]}, pod_request()) == (True, pod_request())
        assert resource_rules_match({"resourceRules": [rule(operations=["DELETE"])]}, pod_request()) == (False, None)

    def test_exclude_wins(self) -> None:
        match = {"resourceRules": [rule()], "excludeResourceRules": [rule(resourceNames=["web"])]}
        assert resource_rules_match(match, pod_request()) == (False, None)
        assert resource_rules_match(match, pod_request(name="other"))[0]

    def test_exclude_alone(self) -> None:
        assert resource_rules_match({"excludeResourceRules": [rule()]}, pod_request()) == (False, None)
        assert resource_rules_match({"excludeResourceRules": [rule()]}, NODE_REQUEST) == (True, NODE_REQUEST)

    def test_equivalent_matches_through_another_version(self) -> None:
        match = {"resourceRules": [EXT_RULE], "matchPolicy": "Equivalent"}
        assert resource_rules_match(match, DEPLOY, equivalents=[DEPLOY, DEPLOY_EXT]) == (True, DEPLOY_EXT)
        # the API default is Equivalent
        assert resource_rules_match({"resourceRules": [EXT_RULE]}, DEPLOY, equivalents=[DEPLOY_EXT])[0]

    def test_exact_does_not(self) -> None:
        match = {"resourceRules": [EXT_RULE], "matchPolicy": "Exact"}
        assert resource_rules_match(match, DEPLOY, equivalents=[DEPLOY_EXT]) == (False, None)

    def test_equivalent_exclusion(self) -> None:
        match = {"excludeResourceRules": [EXT_RULE]}
        assert resource_rules_match(match, DEPLOY, equivalents=[DEPLOY_EXT]) == (False, None)
        match["matchPolicy"] = "Exact"
        assert resource_rules_match(match, DEPLOY, equivalents=[DEPLOY_EXT]) == (True, DEPLOY)

    def test_equivalent_resource_names(self) -> None:
        match = {"resourceRules": [{**EXT_RULE, "resourceNames": ["other"]}]}
        assert resource_rules_match(match, DEPLOY, equivalents=[DEPLOY_EXT]) == (False, None)
