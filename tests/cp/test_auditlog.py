"""kube-apiserver audit events (audit.k8s.io/v1, as upstream documents them) read as another cluster's
changes (`cp.auditlog`): which writes become changes, what is counted instead, and the files read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from cp import auditlog, importing

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "web", "namespace": "shop", "uid": "7d0c3f4e-1111-4000-8000-000000000001",
                    "resourceVersion": "5012", "creationTimestamp": "2026-12-01T10:00:00Z"},
       "spec": {"containers": [{"name": "main", "image": "nginx"}]}}


def event(verb: str, *, level: str = "RequestResponse", stage: str = "ResponseComplete", code: int = 200,
          resource: str = "pods", name: str = "web", namespace: str = "shop", group: str = "",
          subresource: str = "", request: Any = None, response: Any = None, uri: str = "",
          audit_id: str = "a-1", at: str = "2026-12-01T10:00:01.000000Z", **ref: str) -> dict[str, Any]:
    """An audit.k8s.io/v1 Event as the log backend writes it (one JSON line)."""
    object_ref: dict[str, Any] = {"resource": resource, "namespace": namespace, "name": name,
                                  "apiVersion": "v1", **ref}
    if group:
        object_ref["apiGroup"] = group
    if subresource:
        object_ref["subresource"] = subresource
    ev: dict[str, Any] = {
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level, "auditID": audit_id, "stage": stage,
        "requestURI": uri or f"/api/v1/namespaces/{namespace}/{resource}/{name}", "verb": verb,
        "user": {"username": "alice", "groups": ["system:authenticated"]}, "sourceIPs": ["10.0.0.9"],
        "userAgent": "kubectl/v1.37.0 (linux/amd64)", "objectRef": object_ref,
        "requestReceivedTimestamp": at, "stageTimestamp": at,
        "annotations": {"authorization.k8s.io/decision": "allow"}}
    if stage == "ResponseComplete":
        ev["responseStatus"] = {"metadata": {}, "code": code}
    if request is not None and level in ("Request", "RequestResponse"):
        ev["requestObject"] = request
    if response is not None and level == "RequestResponse":
        ev["responseObject"] = response
    return ev


def changes(*events: dict[str, Any]) -> tuple[list[importing.Change], auditlog.Translator]:
    translator = auditlog.Translator()
    out: list[importing.Change] = []
    for n, ev in enumerate(events, 1):
        loc = auditlog.Located(time=float(n), path="audit.log", line=n,
                               event=auditlog._decoder.decode(json.dumps(ev).encode()))  # type: ignore[arg-type]
        # (a response the sequencer can store as it is arrives peeked, not decoded: compared decoded here)
        out.extend(msgspec.structs.replace(c, object=importing.decoded(c.object)) for c in translator.changes(loc))
    translator.finish()
    return out, translator


def test_request_response_writes_are_the_response_objects() -> None:
    updated = {**POD, "metadata": {**POD["metadata"], "labels": {"tier": "web"}, "resourceVersion": "5013"}}
    got, tr = changes(
        event("create", code=201, request={**POD, "metadata": {"name": "web"}}, response=POD,
              uri="/api/v1/namespaces/shop/pods?fieldManager=kubectl-client-side-apply"),
        event("patch", request={"metadata": {"labels": {"tier": "web"}}}, response=updated, audit_id="a-2"),
        event("delete", response={"kind": "Status", "apiVersion": "v1", "status": "Success"}, audit_id="a-3"))
    assert [(c.deleted, c.object["metadata"].get("labels"), c.source) for c in got] == [
        (False, None, "a-1"), (False, {"tier": "web"}, "a-2"), (True, None, "a-3")]
    assert got[0].object == POD and got[0].field_manager == "kubectl-client-side-apply"
    assert (got[0].user, got[0].user_agent, got[0].time) == ("alice", "kubectl/v1.37.0 (linux/amd64)", 1.0)
    assert got[2].object == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"}}
    assert tr.report.imported == {"pods": 3} and tr.report.left == {}


def test_request_level_creates_and_updates_are_the_request_objects_and_patches_are_reported() -> None:
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "gpu"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
    got, tr = changes(
        event("create", level="Request", code=201, resource="resourceclaims", group="resource.k8s.io", name="gpu",
              request=claim, at="2026-12-01T10:00:01.250000Z", uid="c-uid"),
        event("patch", level="Request", resource="resourceclaims", group="resource.k8s.io", name="gpu",
              request={"metadata": {"labels": {"a": "b"}}}),
        event("create", level="Request", code=201, name="", request={**POD, "metadata": {"generateName": "web-"}}))
    [created] = got
    assert created.object["metadata"] == {"name": "gpu", "namespace": "shop", "uid": "c-uid",
                                          "creationTimestamp": "2026-12-01T10:00:01Z"}
    assert created.object["spec"] == claim["spec"]
    assert tr.report.left == {"resourceclaims.resource.k8s.io": {auditlog.PATCH_REQUEST: 1},
                              "pods": {auditlog.NO_OBJECT: 1}}


def test_what_the_log_cannot_tell_is_counted_per_resource() -> None:
    got, tr = changes(
        event("create", level="Metadata", code=201, resource="configmaps", name="cfg"),
        event("get", level="Metadata"), event("list", level="Metadata", name=""),
        event("create", code=409, response={"kind": "Status", "apiVersion": "v1", "code": 409}),
        event("create", code=201, response=POD, uri="/api/v1/namespaces/shop/pods?dryRun=All"),
        event("update", stage="RequestReceived", audit_id="lost", resource="configmaps", name="cfg"),
        event("create", code=201, subresource="binding", response={"kind": "Status", "apiVersion": "v1"}),
        event("update", subresource="scale", resource="deployments", group="apps",
              response={"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"}}),
        event("create", code=201, subresource="eviction", request={"kind": "Eviction", "apiVersion": "policy/v1"},
              response={"kind": "Status", "apiVersion": "v1"}))
    assert got == []  # (a binding without its Binding, a Scale without replicas: not applied)
    assert tr.report.left == {
        "configmaps": {auditlog.METADATA: 1, auditlog.NO_COMPLETE: 1},
        "pods": {auditlog.READ: 2, auditlog.FAILED: 1, auditlog.DRY_RUN: 1},
        "pods/binding": {auditlog.SUBRESOURCE: 1}, "deployments.apps/scale": {auditlog.SUBRESOURCE: 1},
        "pods/eviction": {auditlog.SUBRESOURCE: 1}}
    assert "RESOURCE" in tr.report.lines()[0] and "METADATA LEVEL" in tr.report.lines()[0]


def test_status_writes_apply_to_the_parent_and_pending_deletions_are_changes() -> None:
    running = {**POD, "status": {"phase": "Running"}}
    terminating = {**running, "metadata": {**POD["metadata"], "deletionTimestamp": "2026-12-01T10:00:05Z",
                                           "deletionGracePeriodSeconds": 30}}
    gone = {**terminating, "metadata": {**terminating["metadata"], "deletionGracePeriodSeconds": 0}}
    got, _ = changes(event("update", subresource="status", request=running, response=running),
                     event("delete", response=terminating), event("delete", response=gone),
                     event("delete", level="Metadata", resource="configmaps", name="cfg"))
    assert [(c.deleted, c.object.get("status")) for c in got] == [
        (False, {"phase": "Running"}), (False, {"phase": "Running"}), (True, {"phase": "Running"}), (True, None)]
    assert got[3].object["kind"] == "ConfigMap"


def test_deletecollection_deletes_each_returned_item() -> None:
    items = [{"metadata": {"name": n, "namespace": "shop", "uid": n}, "data": {}} for n in ("a", "b")]
    got, _ = changes(event("deletecollection", resource="configmaps", name="", response={
        "kind": "ConfigMapList", "apiVersion": "v1", "metadata": {}, "items": items}))
    assert [(c.deleted, c.object["kind"], c.object["metadata"]["name"]) for c in got] == [
        (True, "ConfigMap", "a"), (True, "ConfigMap", "b")]


def _lines(*events: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(ev).encode() + b"\n" for ev in events)


def test_files_rotated_gzip_and_event_lists_are_merged_by_time(tmp_path: Path) -> None:
    old = tmp_path / "audit-2026-12-01T10-00-00.000.log.gz"
    old.write_bytes(gzip.compress(_lines(event("get", audit_id="1", at="2026-12-01T10:00:01.000000Z"),
                                         event("get", audit_id="3", at="2026-12-01T10:00:03.000000Z"))))
    current = tmp_path / "audit.log"
    current.write_bytes(_lines(event("get", audit_id="2", at="2026-12-01T10:00:02.000000Z"),
                               {"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": {},
                                "items": [event("get", audit_id="4", at="2026-12-01T10:00:04.000000Z")]}))
    document = tmp_path / "batch.json"
    document.write_text(json.dumps({"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "items": [
        event("get", audit_id="5", at="2026-12-01T10:00:05.000000Z")]}, indent=2))
    got = list(auditlog.merged([current, old, document]))
    assert [loc.event.audit_id for loc in got] == ["1", "2", "3", "4", "5"]
    assert [(Path(loc.path).name, loc.line) for loc in got[:4]] == [
        (old.name, 1), ("audit.log", 1), (old.name, 2), ("audit.log", 2)]
    same_time = tmp_path / "same.log"  # ties: the files' order, then each file's
    same_time.write_bytes(_lines(event("get", audit_id="6"), event("get", audit_id="7")))
    got = list(auditlog.merged([same_time, same_time]))
    assert [(loc.event.audit_id, loc.line) for loc in got] == [("6", 1), ("7", 2), ("6", 1), ("7", 2)]


def test_rotated_files_that_do_not_overlap_are_read_in_turn(tmp_path: Path) -> None:
    def log(name: str, *seconds: int) -> Path:
        path = tmp_path / name
        path.write_bytes(_lines(*(event("get", audit_id=f"{name}-{s}", at=f"2026-12-01T10:00:{s:02d}.000000Z")
                                  for s in seconds)))
        return path

    older, newer = log("audit-1.log", 1, 2, 3), log("audit.log", 4, 5)
    assert auditlog._in_sequence([newer, older]) == [older, newer]
    got = [loc.event.audit_id for loc in auditlog.merged([newer, older])]
    assert got == ["audit-1.log-1", "audit-1.log-2", "audit-1.log-3", "audit.log-4", "audit.log-5"]
    overlapping = log("other.log", 2, 6)
    assert auditlog._in_sequence([newer, older, overlapping]) is None  # merged by time instead
    got = [loc.event.audit_id for loc in auditlog.merged([older, overlapping])]
    assert got == ["audit-1.log-1", "audit-1.log-2", "other.log-2", "audit-1.log-3", "other.log-6"]


@pytest.mark.parametrize(("line", "message"), [
    (b'{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "auditID": ', "malformed JSON"),
    (b'{"kind": "Pod", "apiVersion": "v1"}', "not an audit.k8s.io/v1 Event"),
    (b'{"kind": "Event", "apiVersion": "audit.k8s.io/v1beta1", "stageTimestamp": "2026-12-01T10:00:00Z"}',
     "audit.k8s.io/v1beta1"),
    (b'{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "auditID": "x"}', "without stageTimestamp"),
    (b'{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "stageTimestamp": "2026-13-01T10:00:01.000000Z"}',
     '"2026-13-01T10:00:01.000000Z" is not an RFC 3339 time'),
    (b'{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "stageTimestamp": "2026-12-01T10:00:01.00x000Z"}',
     "is not an RFC 3339 time"),
])
def test_malformed_lines_are_named_by_file_and_line(tmp_path: Path, line: bytes, message: str) -> None:
    path = tmp_path / "audit.log"
    path.write_bytes(_lines(event("get")) + b"\n" + line + b"\n")
    with pytest.raises(auditlog.AuditError) as caught:
        list(auditlog.merged([path]))
    assert str(caught.value).startswith(f"{path}:3: ") and message in str(caught.value)


def test_times_in_the_servers_form_and_others(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    at = ["2026-12-01T10:00:01.250000Z", "2026-12-01T10:00:01.500000Z", "2026-12-01T10:00:02Z",
          "2026-12-01T11:00:03.000001+01:00", "2026-12-01T10:00:04.000000Z"]
    path.write_bytes(_lines(*(event("get", at=stamp) for stamp in at)))
    start = 1_796_119_200.0  # 2026-12-01T10:00:00Z
    assert [loc.time - start for loc in auditlog.merged([path])] == pytest.approx([1.25, 1.5, 2.0, 3.000001, 4.0])


def test_an_impersonated_write_is_the_impersonated_users() -> None:
    ev = event("create", code=201, response=POD)
    ev["impersonatedUser"] = {"username": "system:serviceaccount:shop:deployer", "groups": ["system:serviceaccounts"]}
    [got], _ = changes(ev)
    assert got.user == "system:serviceaccount:shop:deployer"


def test_a_write_that_changed_nothing_is_no_event() -> None:
    """An update the server found equal keeps the object's resourceVersion (and writes nothing to
    etcd, so no watch sees it): its response has the version of the last one, and it is dropped."""
    labelled = {**POD, "metadata": {**POD["metadata"], "labels": {"tier": "web"}, "resourceVersion": "5013"}}
    got, tr = changes(
        event("create", code=201, response=POD),
        event("update", request=POD, response=POD, audit_id="a-2"),  # no-op: still 5012
        event("patch", request={"metadata": {"labels": {"tier": "web"}}}, response=labelled, audit_id="a-3"),
        event("update", level="Request", request=labelled, audit_id="a-4"))  # at Request level: not known
    seq = importing.Sequencer()
    events = [e for change in got for e in seq.feed(change)]
    assert [(e.type, e.request_id) for e in events] == [
        ("ADDED", "source=a-1"), ("MODIFIED", "source=a-3"), ("MODIFIED", "source=a-4")]
    assert seq.unchanged == 1 and tr.report.imported == {"pods": 4}


def test_bindings_and_scale_writes_are_applied_to_their_object() -> None:
    """`pods/binding` answers a Status and `deployments/scale` a Scale: their effect on the object (the
    node assigned, the replicas) is applied to the object the log holds, as the server applies it."""
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "web", "namespace": "shop", "uid": "d-1", "resourceVersion": "10"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}}}
    scale = {"kind": "Scale", "apiVersion": "autoscaling/v1",
             "metadata": {"name": "web", "namespace": "shop", "uid": "d-1", "resourceVersion": "11"},
             "spec": {"replicas": 5}, "status": {"replicas": 1}}
    binding = {"kind": "Binding", "apiVersion": "v1", "metadata": {"name": "web", "namespace": "shop"},
               "target": {"kind": "Node", "name": "gpu-node-1"}}
    bind = event("create", code=201, subresource="binding", request=binding, audit_id="b-1",
                 response={"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201},
                 at="2026-12-01T10:00:07.000000Z")
    bind["user"] = {"username": "system:kube-scheduler"}
    deployments = {"resource": "deployments", "group": "apps"}
    got, tr = changes(
        event("create", code=201, response=POD),
        bind,
        event("create", code=201, response=deployment, audit_id="d-1", **deployments),
        event("update", request=scale, response=scale, subresource="scale", audit_id="s-1", **deployments),
        event("patch", request={"spec": {"replicas": 5}}, response=scale, subresource="scale", audit_id="s-2",
              **deployments),  # the same replicas: the server kept the version
        event("create", code=201, subresource="binding", name="gone", request={**binding, "metadata": {
            "name": "gone", "namespace": "shop"}}, audit_id="b-2"))
    seq = importing.Sequencer()
    events = [e for change in got for e in seq.feed(change)]
    assert [(e.type, e.resource, e.user, e.request_id) for e in events] == [
        ("ADDED", "pods", "alice", "source=a-1"), ("MODIFIED", "pods", "system:kube-scheduler", "source=b-1"),
        ("ADDED", "deployments", "alice", "source=d-1"), ("MODIFIED", "deployments", "alice", "source=s-1")]
    pod = json.loads(events[1].object)
    assert pod["spec"]["nodeName"] == "gpu-node-1" and pod["metadata"]["resourceVersion"] == "2"
    assert pod["status"]["conditions"] == [{"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                            "lastTransitionTime": "1970-01-01T00:00:02Z"}]  # (time: the 2nd)
    assert json.loads(events[3].object)["spec"] == {**deployment["spec"], "replicas": 5}
    assert (seq.unchanged, seq.missed_subresources) == (1, 1)
    assert tr.report.imported == {"pods": 1, "pods/binding": 2, "deployments.apps": 1, "deployments.apps/scale": 2}
    assert tr.report.left == {}
