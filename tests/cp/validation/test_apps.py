"""cp/validation/apps.py: DaemonSet, StatefulSet, ControllerRevision (pkg/apis/apps/validation),
ReplicationController and PodTemplate (pkg/apis/core/validation), with the pod template rules of pods."""

from __future__ import annotations

from typing import Any

import pytest

from cp import errors, validation
from tests.cp.validation.rules import changed, create_errors, update_errors

SELECTOR = {"matchLabels": {"app": "web"}}


def template(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}], **spec}}


def daemon_set(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
            "spec": {"selector": SELECTOR, "template": template(), **spec}}


def stateful_set(name: str = "db", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"selector": SELECTOR, "serviceName": "db", "template": template(), **spec}}


def rc(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"},
            "spec": {"template": template(), **spec}}


def test_valid_samples() -> None:
    for obj in (daemon_set(), stateful_set(), rc(),
                {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": template()},
                {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r-1"},
                 "data": {"spec": {}}, "revision": 1}):
        assert create_errors(obj) == [], obj["kind"]


@pytest.mark.parametrize(("spec", "expected"), [
    ({"selector": {"matchLabels": {"app": "other"}}},
     ['spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: `selector` does not match '
      "template `labels`"]),
    ({"selector": {}},
     ["spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
      "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for daemonset"]),
    ({"template": template(restartPolicy="Never")},
     ['spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"']),
    ({"template": template(activeDeadlineSeconds=10)},
     ["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported"]),
    ({"updateStrategy": {"type": "Rolling"}},
     ['spec.updateStrategy: Unsupported value: {...}: supported values: "RollingUpdate", "OnDelete"']),
    ({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}},
     ["spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"]),
    ({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "150%"}}},
     ['spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be greater than 100%']),
    ({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "10%"}}},
     ['spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "10%": may not be set when maxUnavailable is '
      "non-zero"]),
    ({"minReadySeconds": -1}, ["spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0"]),
])
def test_daemon_set(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(daemon_set(**spec)) == expected


def test_daemon_set_template_is_a_pod_template() -> None:
    obj = daemon_set(template={"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}})
    assert create_errors(obj) == ["spec.template.spec.containers: Required value"]


def test_daemon_set_selector_is_immutable() -> None:
    old = daemon_set()
    new = changed(old, lambda o: o["spec"].update(selector={"matchLabels": {"app": "web", "v": "2"}}))
    new["spec"]["template"]["metadata"]["labels"]["v"] = "2"
    assert update_errors(new, old) == [
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web", "v":"2"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"]


@pytest.mark.parametrize(("spec", "expected"), [
    ({"podManagementPolicy": "Random"},
     ["spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"]),
    ({"updateStrategy": {"type": "OnDelete", "rollingUpdate": {"partition": 1}}},
     ["spec.updateStrategy.rollingUpdate: Invalid value: {...}: only allowed for updateStrategy 'RollingUpdate'"]),
    ({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": -1}}},
     ["spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0"]),
    ({"updateStrategy": {"type": "Sometimes"}},
     ["spec.updateStrategy: Invalid value: {...}: must be 'RollingUpdate' or 'OnDelete'"]),
    ({"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Keep", "whenScaled": "Delete"}},
     ['spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: "Keep": supported values: '
      '"Retain", "Delete"']),
    ({"replicas": -1}, ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]),
    ({"ordinals": {"start": -1}}, ["spec.ordinals.start: Invalid value: -1: must be greater than or equal to 0"]),
    ({"selector": None}, ["spec.selector: Required value"]),
    ({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}}},
     ["spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: cannot be 0"]),
    # Only the template's labels and annotations are checked, at upstream's paths.
    ({"template": {"metadata": {"labels": {"app": "web", "bad key!": "x"}}, "spec": {"containers": []}}},
     ["spec.template.labels: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', "
      "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
      "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]),
    ({"template": template(activeDeadlineSeconds=10)},
     ["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported"]),
])
def test_stateful_set(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(stateful_set(**spec)) == expected


def test_stateful_set_name_is_a_dns_label() -> None:
    assert create_errors(stateful_set("db.v1")) == ['metadata.name: Invalid value: "db.v1": must not contain dots']


def test_stateful_set_allowed_updates() -> None:
    old = stateful_set()
    allowed = changed(old, lambda o: o["spec"].update(
        replicas=3, minReadySeconds=5, revisionHistoryLimit=2, ordinals={"start": 1},
        updateStrategy={"type": "OnDelete"}, template=template(hostname="x"),
        persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete", "whenScaled": "Retain"}))
    assert update_errors(allowed, old) == []
    for field, value in (("serviceName", "other"), ("podManagementPolicy", "Parallel"),
                         ("volumeClaimTemplates", [{"metadata": {"name": "data"}, "spec": {}}])):
        new = changed(old, lambda o, f=field, v=value: o["spec"].update({f: v}))
        assert update_errors(new, old) == [
            "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
            "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' "
            "are forbidden"], field


def test_stateful_set_status() -> None:
    old = stateful_set()
    new = changed(old, lambda o: o.update(status={"replicas": 1, "readyReplicas": 2, "availableReplicas": 0}))
    assert update_errors(new, old, "status") == [
        "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas"]


def test_daemon_set_collision_count_never_decreases() -> None:
    old = {**daemon_set(), "status": {"collisionCount": 2}}
    new = {**daemon_set(), "status": {"collisionCount": 1}}
    try:
        validation.validate_update(new, old, group="apps", version="v1", kind="DaemonSet", subresource="status")
    except errors.Invalid as exc:
        assert [c.text() for c in exc.causes] == ["status.collisionCount: Invalid value: 1: cannot be decremented"]
    else:
        raise AssertionError("accepted")


@pytest.mark.parametrize(("spec", "expected"), [
    ({"selector": {"app": "other"}},
     ['spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: `selector` does not match '
      "template `labels`"]),
    ({"replicas": -1}, ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]),
    ({"template": template(restartPolicy="OnFailure")},
     ['spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"']),
    ({"template": template(activeDeadlineSeconds=5)},
     ["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController is not "
      "Supported"]),
])
def test_replication_controller(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(rc(**spec)) == expected


def test_replication_controller_needs_a_selector_and_template() -> None:
    obj = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"}, "spec": {}}
    assert create_errors(obj) == ["spec.selector: Required value", "spec.template: Required value"]


def test_templates_have_no_ephemeral_containers() -> None:
    tpl = template(ephemeralContainers=[{"name": "debug", "image": "busybox"}])
    obj = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": tpl}
    assert create_errors(obj)[-1] == "template.spec.ephemeralContainers: Forbidden: ephemeral containers not " \
                                     "allowed in pod template"


def test_pod_template() -> None:
    obj = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"},
           "template": {"metadata": {"labels": {"bad key!": "x"}}, "spec": template()["spec"]}}
    assert [e.split(": ")[0] for e in create_errors(obj)] == ["template.labels"]  # upstream's path


def test_controller_revision() -> None:
    obj = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r"}, "revision": -1}
    assert create_errors(obj) == ["data: Required value: data is mandatory",
                                  "revision: Invalid value: -1: must be greater than or equal to 0"]
    old = dict(obj, data={"a": 1}, revision=1)
    assert update_errors(dict(old, data={"a": 2}), old) == ["data: Invalid value: {...}: field is immutable"]
    assert update_errors(dict(old, revision=2), old) == []
