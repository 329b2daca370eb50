"""Label and field selectors: parsing, validation messages, matching, metav1.LabelSelector.

Expectations come from upstream semantics (apimachinery labels/fields selector parsers and the
per-kind field label conversions). Excluded: how the API layer turns BadRequest into a response.
"""

from __future__ import annotations

import pytest

from cp.errors import BadRequest
from cp.selectors import (
    from_label_selector_object,
    parse_field_selector,
    parse_label_selector,
    to_string,
)

NAME_PART_REGEX = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
    "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_REGEX = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
    "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)

# ---------------------------------------------------------------------------------------------
# Label selectors: parsing and canonical form


@pytest.mark.parametrize(("text", "canonical"), [
    ("a=b", "a=b"),
    ("a==b", "a==b"),
    ("a!=b", "a!=b"),
    ("a in (x,y)", "a in (x,y)"),
    ("a notin (y,x)", "a notin (x,y)"),
    ("a", "a"),
    ("!a", "!a"),
    ("a>5", "a>5"),
    ("a<5", "a<5"),
    ("a=", "a="),
    ("a==", "a=="),
    ("  tier = fe  ,\tapp\n", "app,tier=fe"),              # whitespace tolerant, sorted by key
    ("env in ( prod , dev )", "env in (dev,prod)"),
    ("x in (foo,,baz),y,z notin ()", "x in (,baz,foo),y,z notin ()"),
    ("a in (,)", "a in ()"),
    ("a in (b,)", "a in (,b)"),
    ("in in (in,notin)", "in in (in,notin)"),              # keywords are plain words where values go
    ("example.com/app=web", "example.com/app=web"),
    ("a in (b,b)", "a in (b)"),
])
def test_label_selector_parses_to_canonical_string(text: str, canonical: str) -> None:
    assert str(parse_label_selector(text)) == canonical


@pytest.mark.parametrize("text", ["", "   "])
def test_empty_label_selector_matches_everything(text: str) -> None:
    sel = parse_label_selector(text)
    assert sel.empty
    assert sel.matches(None)
    assert sel.matches({"a": "b"})


@pytest.mark.parametrize(("text", "message"), [
    ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    ("a=b,", "found '', expected: identifier after ','"),
    ("a,,b", "found ',', expected: identifier after ','"),
    (",a", "found ',', expected: !, identifier, or 'end of string'"),
    ("=a", "found '=', expected: !, identifier, or 'end of string'"),
    ("!a=b", "found '=', expected: ',' or 'end of string'"),
    ("a=b=c", "found '=', expected: ',' or 'end of string'"),
    ("!", "unable to parse requirement: found '', expected: identifier"),
    ("a in b", "unable to parse requirement: found 'b' expected: '('"),
    ("a in", "unable to parse requirement: found '' expected: '('"),
    ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
    ("a in (b,c", "unable to parse requirement: found '', expected: ',' or ')'"),
    ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
    ("a=(b)", "unable to parse requirement: found '(', expected: identifier"),
    ("a_=b", f'unable to parse requirement: <nil>: Invalid value: "a_": {NAME_PART_REGEX}'),
    ("/a", 'unable to parse requirement: <nil>: Invalid value: "/a": prefix part must be non-empty'),
    ("a/", 'unable to parse requirement: <nil>: Invalid value: "a/": name part must be non-empty; '
           + NAME_PART_REGEX),
    ("a=b_", f'unable to parse requirement: values[0][a]: Invalid value: "b_": {VALUE_REGEX}'),
    ("a in (ok,-bad)", 'unable to parse requirement: values[0][a]: Invalid value: "-bad": ' + VALUE_REGEX),
    ("x>y", 'unable to parse requirement: values[0]: Invalid value: "y": '
            "for 'Gt', 'Lt' operators, the value must be an integer"),
    ("a=" + "v" * 64, 'unable to parse requirement: values[0][a]: Invalid value: "' + "v" * 64
     + '": must be no more than 63 bytes'),
])
def test_label_selector_errors_are_bad_requests_with_upstream_messages(text: str, message: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_label_selector(text)
    assert info.value.message == message
    assert info.value.code == 400


def test_label_key_with_too_many_slashes() -> None:
    with pytest.raises(BadRequest, match=r'"a/b/c": a valid label key must consist of') as info:
        parse_label_selector("a/b/c")
    assert info.value.message.endswith("with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")


def test_label_key_with_uppercase_prefix() -> None:
    with pytest.raises(BadRequest, match="prefix part a lowercase RFC 1123 subdomain"):
        parse_label_selector("Example.com/a=b")


# ---------------------------------------------------------------------------------------------
# Label selectors: matching

LABELS = {"app": "web", "tier": "fe", "n": "7", "empty": ""}


@pytest.mark.parametrize(("text", "expected"), [
    ("app=web", True),
    ("app==web", True),
    ("app=db", False),
    ("app!=db", True),
    ("app!=web", False),
    ("missing!=x", True),          # != matches a missing key
    ("missing=x", False),
    ("app in (web,db)", True),
    ("app in (db)", False),
    ("missing in (x)", False),
    ("app notin (db)", True),
    ("app notin (web,db)", False),
    ("missing notin (x)", True),   # notin matches a missing key
    ("app", True),
    ("missing", False),
    ("!missing", True),
    ("!app", False),
    ("empty=", True),
    ("empty", True),
    ("missing=", False),
    ("n>5", True),
    ("n>7", False),
    ("n<8", True),
    ("app>1", False),              # non-integer label value never matches gt/lt
    ("missing<9", False),
    ("app=web,tier in (fe,be),!gone", True),
    ("app=web,tier=be", False),
])
def test_label_selector_matching(text: str, expected: bool) -> None:
    assert parse_label_selector(text).matches(LABELS) is expected


def test_label_selector_matches_none_labels_as_empty() -> None:
    assert parse_label_selector("!a").matches(None)
    assert not parse_label_selector("a").matches(None)
    assert parse_label_selector("a notin (b)").matches(None)


def test_requires_exact_match() -> None:
    sel = parse_label_selector("app=web,tier in (fe),x in (a,b),y!=z")
    assert sel.requires_exact_match("app") == "web"
    assert sel.requires_exact_match("tier") == "fe"
    assert sel.requires_exact_match("x") is None
    assert sel.requires_exact_match("y") is None
    assert sel.requires_exact_match("nope") is None


# ---------------------------------------------------------------------------------------------
# metav1.LabelSelector objects


def test_selector_object_nil_matches_nothing_and_empty_matches_everything() -> None:
    nothing = from_label_selector_object(None)
    assert not nothing.empty
    assert not nothing.matches({})
    assert not nothing.matches({"a": "b"})
    everything = from_label_selector_object({})
    assert everything.empty
    assert everything.matches({"a": "b"})
    assert from_label_selector_object({"matchLabels": {}, "matchExpressions": []}).empty


def test_selector_object_match_labels_and_expressions() -> None:
    sel = from_label_selector_object({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["fe", "be"]},
            {"key": "env", "operator": "NotIn", "values": ["dev"]},
            {"key": "team", "operator": "Exists"},
            {"key": "legacy", "operator": "DoesNotExist"},
        ],
    })
    assert sel.matches({"app": "web", "tier": "fe", "team": "a"})
    assert sel.matches({"app": "web", "tier": "be", "team": "a", "env": "prod"})
    assert not sel.matches({"app": "web", "tier": "fe", "team": "a", "env": "dev"})
    assert not sel.matches({"app": "web", "tier": "fe"})
    assert not sel.matches({"app": "web", "tier": "fe", "team": "a", "legacy": "1"})
    assert not sel.matches({"app": "db", "tier": "fe", "team": "a"})
    assert str(sel) == "app=web,env notin (dev),!legacy,team,tier in (be,fe)"  # sorted by key


@pytest.mark.parametrize(("sel", "message"), [
    ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
     '"Gt" is not a valid label selector operator'),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
     "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"),
    ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x", "y"]}]},
     'values: Invalid value: []string{"x", "y"}: values set must be empty for exists and does not exist'),
    ({"matchLabels": {"a_": "b"}}, f'key: Invalid value: "a_": {NAME_PART_REGEX}'),
    ({"matchLabels": {"a": "b_"}}, f'values[0][a]: Invalid value: "b_": {VALUE_REGEX}'),
])
def test_selector_object_errors(sel: dict, message: str) -> None:
    with pytest.raises(BadRequest) as info:
        from_label_selector_object(sel)
    assert info.value.message == message


@pytest.mark.parametrize(("sel", "text"), [
    (None, "<none>"),
    ({}, "<none>"),
    ({"matchLabels": {"app": "web"}}, "app=web"),
    ({"matchLabels": {"tier": "fe", "app": "web"}}, "app=web,tier=fe"),
    ({"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}]}, "env in (dev,prod)"),
    ({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]}, "env notin (dev)"),
    ({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, "gpu"),
    ({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, "!gpu"),
    ({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "app", "operator": "Exists"}]}, "app=web,app"),
    ({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}, "<error>"),
])
def test_to_string_formats_like_format_label_selector(sel: dict | None, text: str) -> None:
    assert to_string(sel) == text


def test_selector_object_round_trips_through_the_string_syntax() -> None:
    obj = {"matchLabels": {"app": "web"},
           "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe", "be"]}]}
    reparsed = parse_label_selector(to_string(obj))
    for labels in ({"app": "web", "tier": "fe"}, {"app": "web", "tier": "x"}, {"tier": "fe"}):
        assert reparsed.matches(labels) == from_label_selector_object(obj).matches(labels)


# ---------------------------------------------------------------------------------------------
# Field selectors

POD = {
    "metadata": {"name": "web-1", "namespace": "default"},
    "spec": {"nodeName": "n1", "schedulerName": "default-scheduler", "restartPolicy": "Always",
             "serviceAccountName": "default"},
    "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}], "podIP": "10.0.0.5"},
}
EVENT_FOR_NODE = {
    "metadata": {"name": "n1.17", "namespace": "default"},
    "involvedObject": {"kind": "Node", "name": "n1", "uid": "u-1", "apiVersion": "v1"},
    "reason": "NodeReady", "type": "Normal", "source": {"component": "kubelet", "host": "n1"},
    "reportingComponent": "kubelet",
}


@pytest.mark.parametrize(("text", "requirements"), [
    ("status.phase=Running", [("status.phase", "=", "Running")]),
    ("status.phase==Running", [("status.phase", "=", "Running")]),
    ("status.phase!=Failed", [("status.phase", "!=", "Failed")]),
    ("status.phase!=Succeeded,spec.nodeName=n1,status.phase!=Failed",
     [("spec.nodeName", "=", "n1"), ("status.phase", "!=", "Failed"), ("status.phase", "!=", "Succeeded")]),
    ("metadata.name=a\\,b", [("metadata.name", "=", "a,b")]),
    ("metadata.name=a\\=b\\\\c", [("metadata.name", "=", "a=b\\c")]),
    ("metadata.namespace=", [("metadata.namespace", "=", "")]),
    ("spec.host=n1", [("spec.nodeName", "=", "n1")]),          # legacy alias
    (",,", []),
    ("", []),
])
def test_field_selector_parsing(text: str, requirements: list) -> None:
    sel = parse_field_selector(text, group="", resource="pods")
    assert sel.requirements == requirements
    assert sel.empty is (not requirements)


@pytest.mark.parametrize(("text", "message"), [
    ("status.phase", "invalid selector: 'status.phase'; can't understand 'status.phase'"),
    ("a=b,nonsense", "invalid selector: 'a=b,nonsense'; can't understand 'nonsense'"),
    ("metadata.name=a\\x", "invalid field selector: invalid escape sequence: \\x"),
    ("metadata.name=a\\", "invalid field selector: invalid escape sequence: \\"),
    ("metadata.name!==x", "invalid field selector: unescaped character in value: 61"),
    ("metadata.name=a,b=c=d", "invalid field selector: unescaped character in value: 61"),
    ("foo=bar", "field label not supported: foo"),
    ("spec.nodeName=n1, status.phase=x", "field label not supported:  status.phase"),
    ("zzz=1,aaa=2", "field label not supported: aaa"),     # terms are checked in sorted order
])
def test_field_selector_errors_for_pods(text: str, message: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_field_selector(text, group="", resource="pods")
    assert info.value.message == message


@pytest.mark.parametrize(("group", "resource", "text", "message"), [
    ("", "configmaps", "data.x=1",
     '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ("apps", "deployments", "spec.replicas=1",
     '"spec.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ("", "nodes", "metadata.namespace=x", "field label not supported: metadata.namespace"),
    ("", "namespaces", "spec.finalizers=x", "field label not supported: spec.finalizers"),
    ("", "events", "message=x", "field label not supported: message"),
    ("resource.k8s.io", "resourceslices", "spec.devices=x",
     "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.devices"),
])
def test_field_selector_unsupported_fields_per_resource(group: str, resource: str, text: str,
                                                        message: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_field_selector(text, group=group, resource=resource)
    assert info.value.message == message


@pytest.mark.parametrize(("text", "expected"), [
    ("metadata.name=web-1", True),
    ("metadata.name=web-2", False),
    ("metadata.namespace=default", True),
    ("metadata.namespace!=default", False),
    ("spec.nodeName=n1", True),
    ("spec.nodeName=", False),
    ("status.phase!=Succeeded,status.phase!=Failed,spec.nodeName=n1", True),
    ("status.phase=Pending,metadata.name=web-1", False),
    ("status.podIP=10.0.0.5", True),
    ("status.nominatedNodeName=", True),                    # missing reads as ""
    ("spec.schedulerName=default-scheduler", True),
    ("spec.restartPolicy=Always", True),
    ("spec.serviceAccountName=default", True),
    ("spec.hostNetwork=false", True),
])
def test_field_selector_matching_pods(text: str, expected: bool) -> None:
    assert parse_field_selector(text, group="", resource="pods").matches(POD) is expected


@pytest.mark.parametrize(("text", "expected"), [
    # kubectl describe node sends an empty namespace for cluster-scoped objects
    ("involvedObject.kind=Node,involvedObject.name=n1,involvedObject.namespace=", True),
    ("involvedObject.namespace=default", False),
    ("involvedObject.uid=u-1", True),
    ("involvedObject.apiVersion=v1,involvedObject.resourceVersion=,involvedObject.fieldPath=", True),
    ("reason=NodeReady,type=Normal", True),
    ("type=Warning", False),
    ("source=kubelet", True),
    ("reportingComponent=kubelet", True),
    ("metadata.namespace=default,metadata.name=n1.17", True),
])
def test_field_selector_matching_events(text: str, expected: bool) -> None:
    assert parse_field_selector(text, group="", resource="events").matches(EVENT_FOR_NODE) is expected


@pytest.mark.parametrize(("group", "resource", "obj", "text", "expected"), [
    ("", "nodes", {"metadata": {"name": "n1"}, "spec": {"unschedulable": True}}, "spec.unschedulable=true", True),
    ("", "nodes", {"metadata": {"name": "n1"}, "spec": {}}, "spec.unschedulable=false", True),
    ("", "nodes", {"metadata": {"name": "n1"}}, "metadata.name=n1", True),
    ("", "namespaces", {"metadata": {"name": "x"}, "status": {"phase": "Terminating"}},
     "status.phase=Terminating", True),
    ("resource.k8s.io", "resourceslices",
     {"metadata": {"name": "s"}, "spec": {"nodeName": "n1", "driver": "gpu.example.com", "pool": {"name": "p1"}}},
     "spec.nodeName=n1,spec.driver=gpu.example.com", True),
    ("resource.k8s.io", "resourceslices", {"metadata": {"name": "s"}, "spec": {"allNodes": True}},
     "spec.nodeName=n1", False),
    ("", "configmaps", {"metadata": {"name": "c", "namespace": "ns"}}, "metadata.namespace=ns", True),
    ("resource.k8s.io", "deviceclasses", {"metadata": {"name": "gpu"}}, "metadata.namespace=", True),
])
def test_field_selector_matching_other_resources(group: str, resource: str, obj: dict, text: str,
                                                 expected: bool) -> None:
    assert parse_field_selector(text, group=group, resource=resource).matches(obj) is expected


def test_field_selector_exact_match_hint() -> None:
    sel = parse_field_selector("metadata.name=web,metadata.namespace!=kube-system", group="", resource="pods")
    assert sel.requires_exact_match("metadata.name") == "web"
    assert sel.requires_exact_match("metadata.namespace") is None
