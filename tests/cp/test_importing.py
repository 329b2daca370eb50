"""Another cluster's changes numbered as the log's events (`cp.importing`): stored versions, redaction,
ADDED/MODIFIED/DELETED by key and uid, unserved kinds and missed deletions counted."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from cp import importing


def cm(name: str, uid: str = "u1", **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default", "uid": uid},
            "data": data}


def change(obj: dict[str, Any], *, deleted: bool = False, source: str = "") -> importing.Change:
    return importing.Change(object=obj, deleted=deleted, time=1.0, user="alice", source=source)


def test_events_by_key_and_uid() -> None:
    seq = importing.Sequencer(keep_secrets=True)
    [a] = seq.feed(change(cm("a", x="1"), source="100"))
    assert (a.revision, a.type, a.prev_revision, a.request_id) == (1, "ADDED", 0, "source=100")
    assert json.loads(a.object)["metadata"]["resourceVersion"] == "1"
    assert seq.feed(change(cm("a", x="1"))) == []  # unchanged
    [m] = seq.feed(change(cm("a", x="2")))
    assert (m.type, m.prev_revision) == ("MODIFIED", 1)
    d, added = seq.feed(change(cm("a", uid="u2", x="3")))  # deleted and created again meanwhile
    assert (d.type, d.prev_revision, d.uid, added.type, added.prev_revision, added.uid) == (
        "DELETED", 2, "u1", "ADDED", 3, "u2")
    [gone] = seq.feed(change({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "a", "namespace": "default"}}, deleted=True))
    assert gone.type == "DELETED" and json.loads(gone.object)["data"] == {"x": "3"}
    assert seq.feed(change(cm("a"), deleted=True)) == [] and seq.missed_deletes == 1


def test_values_are_redacted_unless_kept() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default", "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": "{...}"}}, "data": {"password": "c2VjcmV0"}}
    [e] = importing.Sequencer().feed(change(secret))
    obj = json.loads(e.object)
    assert obj["data"] == {"password": "REDACTED"} and "annotations" not in obj["metadata"]
    [kept] = importing.Sequencer(keep_secrets=True).feed(change(secret))
    assert json.loads(kept.object)["data"] == {"password": "c2VjcmV0"}


def test_other_versions_are_stored_and_unknown_kinds_counted() -> None:
    seq = importing.Sequencer()
    claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
             "metadata": {"name": "c", "namespace": "default", "uid": "u"},
             "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.example.com"}]}}}
    [e] = seq.feed(change(claim))
    stored = json.loads(e.object)
    assert stored["apiVersion"] == "resource.k8s.io/v1"
    assert stored["spec"]["devices"]["requests"] == [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]
    assert seq.feed(change({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})) == []
    assert seq.skipped == {"Widget.example.com": 1}
    with pytest.raises(importing.ImportError_):
        seq.feed(change({"kind": "ConfigMap", "metadata": {"name": "x"}}))


def test_custom_resources_follow_their_definition() -> None:
    seq = importing.Sequencer()
    widget = {"apiVersion": "example.com/v1beta1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}}
    assert seq.feed(change(widget)) == []
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                    "versions": [{"name": "v1", "served": True, "storage": True},
                                 {"name": "v1beta1", "served": True, "storage": False}]}}
    seq.feed(change(crd))
    [e] = seq.feed(change(widget))
    assert (e.group, e.resource, e.namespace, json.loads(e.object)["apiVersion"]) == (
        "example.com", "widgets", "ns", "example.com/v1")


def test_defaults_on_request() -> None:
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "c", "namespace": "default", "uid": "u"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
    [plain] = importing.Sequencer().feed(change(claim))
    assert "allocationMode" not in json.loads(plain.object)["spec"]["devices"]["requests"][0]["exactly"]
    [defaulted] = importing.Sequencer(defaults=True).feed(change(claim))
    exactly = json.loads(defaulted.object)["spec"]["devices"]["requests"][0]["exactly"]
    assert (exactly["allocationMode"], exactly["count"]) == ("ExactCount", 1)


def test_a_new_source_version_is_an_event_even_when_redaction_hides_the_change() -> None:
    seq = importing.Sequencer()
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default", "uid": "u"},
              "data": {"k": "MQ=="}}
    seq.feed(change(secret, source="10"))
    assert seq.feed(change({**secret, "data": {"k": "Mg=="}}, source="10")) == []  # the same version again
    [e] = seq.feed(change({**secret, "data": {"k": "Mg=="}}, source="11"))
    assert e.type == "MODIFIED" and json.loads(e.object)["data"] == {"k": "REDACTED"}


def _encoded(obj: dict[str, Any]) -> importing.Encoded:
    peeked = importing.encoded(json.dumps(obj, separators=(",", ":")).encode())
    assert peeked is not None
    return peeked


def test_encoded_objects_give_the_events_decoded_ones_give() -> None:
    """An object peeked from its JSON (an audit log's response) is stored by rewriting its version in
    the text; every kind of change gives the events its decoded form gives."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u1",
                                                           "resourceVersion": "500"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default", "uid": "s1",
                                                                 "resourceVersion": "501"}, "data": {"k": "MQ=="}}
    claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
             "metadata": {"name": "c", "namespace": "default", "uid": "c1", "resourceVersion": "502"},
             "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.example.com"}]}}}
    relabelled = {**pod, "metadata": {**pod["metadata"], "labels": {"a": "b"}, "resourceVersion": "503"}}
    recreated = {**pod, "metadata": {**pod["metadata"], "uid": "u2", "resourceVersion": "504"}}
    names_only = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}}
    steps = [(pod, False, "a1"), (secret, False, "a2"), (claim, False, "a3"), (relabelled, False, "a4"),
             (recreated, False, "a5"), (names_only, True, "a6"), ({**claim, "metadata": {**claim["metadata"],
                                                                  "resourceVersion": "505"}}, True, "a7")]
    plain, peeked = importing.Sequencer(), importing.Sequencer()
    for obj, deleted, source in steps:
        want = plain.feed(change(obj, deleted=deleted, source=source))
        got = peeked.feed(importing.Change(object=_encoded(obj), deleted=deleted, time=1.0, user="alice",
                                           source=source))
        assert [msgspec.structs.replace(e, object=b"") for e in got] == [
            msgspec.structs.replace(e, object=b"") for e in want]
        assert [json.loads(e.object) for e in got] == [json.loads(e.object) for e in want]
    assert dict(peeked.live()) == dict(plain.live()) and len(dict(plain.live())) == 1  # the secret
    assert [e.type for e in peeked.feed(importing.Change(object=_encoded(pod), time=2.0))] == ["ADDED"]
    redacted = json.loads(importing.Sequencer().feed(importing.Change(object=_encoded(secret), time=1.0))[0].object)
    assert redacted["data"] == {"k": "REDACTED"}


@pytest.mark.parametrize("text", [
    # the version's text twice: the event's involvedObject has the same resourceVersion
    b'{"apiVersion":"v1","kind":"Event","metadata":{"name":"e","namespace":"d","resourceVersion":"7"},'
    b'"involvedObject":{"kind":"Pod","name":"p","resourceVersion":"7"}}',
    # the metadata's written with spaces, another field's compactly: the text matched is not the metadata's
    b'{"apiVersion":"v1","kind":"Event","metadata":{"name":"e","namespace":"d","resourceVersion" : "7"},'
    b'"involvedObject":{"kind":"Pod","name":"p","resourceVersion":"7"}}',
    # an escaped key
    b'{"apiVersion":"v1","kind":"Event","metadata":{"name":"e","namespace":"d","resource\\u0056ersion":"7"},'
    b'"involvedObject":{"kind":"Pod","name":"p","resourceVersion":"7"}}',
])
def test_a_version_that_cannot_be_rewritten_exactly_in_the_text_is_decoded(text: bytes) -> None:
    peeked = importing.encoded(text)
    assert peeked is not None
    [e] = importing.Sequencer().feed(importing.Change(object=peeked, time=1.0))
    stored = json.loads(e.object)
    assert stored["metadata"]["resourceVersion"] == "1" and stored["involvedObject"]["resourceVersion"] == "7"


def test_what_does_not_peek_is_decoded() -> None:
    assert importing.encoded(b"null") is None and importing.encoded(b"[1]") is None
    assert importing.encoded(b'{"kind":5}') is None  # (decoded, it gives the error it always gave)
    with pytest.raises(importing.ImportError_):
        importing.Sequencer().feed(importing.Change(object=_encoded({"apiVersion": "v1", "kind": "ConfigMap",
                                                                     "metadata": {"namespace": "d"}}), time=1.0))


@pytest.mark.parametrize("obj", [
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "d", "resourceVersion": "9",
     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": '{"data":{"k":"c2VjcmV0"}}', "team": "a"}},
     "type": "Opaque", "data": {"k": "c2VjcmV0", "j": "eA=="}},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "d", "resourceVersion": "9",
     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}}, "stringData": {"p": "hunter2"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "d", "resourceVersion": "9"},
     "data": None, "binaryData": {"b": "AAE="}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "d", "resourceVersion": "9",
     "annotations": None}, "data": {"a": "1"}},
])
def test_values_are_redacted_in_the_json_as_in_the_decoded_object(obj: dict[str, Any]) -> None:
    [want] = importing.Sequencer().feed(change(obj))
    [got] = importing.Sequencer().feed(importing.Change(object=_encoded(obj), time=1.0, user="alice"))
    assert json.loads(got.object) == json.loads(want.object)
    assert "hunter2" not in got.object.decode() and "c2VjcmV0" not in got.object.decode()
