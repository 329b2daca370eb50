"""cp/validation/storage.py: StorageClass, VolumeAttachment, CSINode, CSIDriver, CSIStorageCapacity and
VolumeAttributesClass rules (pkg/apis/storage/validation; StorageClass and VolumeAttachment fields that
k8s.io/api 1.37 tags for beta declarative validation as the declarative validator reports them)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cp.validation.rules import changed, create_errors, update_errors

V1 = "storage.k8s.io/v1"


def storage_class(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "StorageClass", "metadata": {"name": "fast"},
            "provisioner": "ebs.csi.aws.com", **fields}


def attachment(**spec: Any) -> dict[str, Any]:
    body = {"attacher": "ebs.csi.aws.com", "nodeName": "node-1", "source": {"persistentVolumeName": "pv-1"}}
    body.update(spec)
    return {"apiVersion": V1, "kind": "VolumeAttachment", "metadata": {"name": "va"}, "spec": body}


def csi_node(*drivers: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "CSINode", "metadata": {"name": "node-1"}, "spec": {"drivers": list(drivers)}}


def driver(**fields: Any) -> dict[str, Any]:
    return {"name": "ebs.csi.aws.com", "nodeID": "i-123", "topologyKeys": ["topology.ebs.csi.aws.com/zone"],
            **fields}


@pytest.mark.parametrize(("fields", "expected"), [
    ({"provisioner": ""}, ["provisioner: Required value"]),
    ({"provisioner": "not a name"},
     ["provisioner: Invalid value: \"not a name\": name part must consist of alphanumeric characters, '-', '_' or "
      "'.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
      "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]),
    ({"parameters": {"": "x"}}, ['parameters: Invalid value: "": field can not be empty.']),
    ({"parameters": {f"k{i}": "v" for i in range(513)}}, ["parameters: Too long: may not be more than 512 bytes"]),
    ({"volumeBindingMode": "Later"},
     ['volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"']),
    ({"allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": []}]}]},
     ["allowedTopologies[0].matchLabelExpressions[0].values: Required value"]),
    ({"allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]},
                            {"matchLabelExpressions": [{"key": "zone", "values": ["a", "a"]}]}]},
     ['allowedTopologies[1].matchLabelExpressions[0].values[1]: Duplicate value: "a"',
      'allowedTopologies[1].matchLabelExpressions: Duplicate value: ""']),
])
def test_storage_class(fields: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(storage_class(**fields)) == expected


def test_storage_class_update_keeps_what_provisioning_used() -> None:
    old = storage_class(parameters={"type": "gp3"})
    new = changed(old, lambda o: o.update(provisioner="other.csi", parameters={"type": "io2"},
                                          reclaimPolicy="Retain", volumeBindingMode="WaitForFirstConsumer",
                                          allowVolumeExpansion=True))
    assert update_errors(new, old) == [f"{f}: Invalid value: null: field is immutable" for f in (
        "provisioner", "parameters", "reclaimPolicy", "volumeBindingMode")]
    assert update_errors(changed(old, lambda o: o.update(allowVolumeExpansion=True)), old) == []


@pytest.mark.parametrize(("spec", "expected"), [
    ({"attacher": ""}, ["spec.attacher: Required value"]),
    ({"attacher": "Not_A_Driver"},
     ['spec.attacher: Invalid value: "Not_A_Driver": an RFC 1123 subdomain must consist of alphanumeric characters, '
      "'-' or '.', and must start and end with an alphanumeric character (e.g. 'Example.com', regex used for "
      "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
    ({"attacher": "a" * 64 + ".io"}, ["spec.attacher: Too long: may not be more than 63 characters"]),
    ({"source": {}}, ["spec.source: Required value: must specify exactly one of inlineVolumeSpec and "
                      "persistentVolumeName"]),
    ({"source": {"persistentVolumeName": "pv", "inlineVolumeSpec": {}}},
     ["spec.source: Forbidden: must specify exactly one of inlineVolumeSpec and persistentVolumeName"]),
    ({"source": {"persistentVolumeName": ""}},
     ["spec.source.persistentVolumeName: Required value: must specify non empty persistentVolumeName"]),
])
def test_volume_attachment(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(attachment(**spec)) == expected


def test_volume_attachment_spec_is_immutable_and_status_checked() -> None:
    old = attachment()
    assert update_errors(changed(old, lambda o: o["spec"].update(nodeName="node-2")), old) == [
        "spec: Invalid value: null: field is immutable"]
    status = changed(old, lambda o: o.update(status={"attached": True, "attachError": {
        "message": "x" * 1025, "errorCode": -1}}))
    assert update_errors(status, old, subresource="status") == [
        "status.attachError.message: Too long: may not be more than 262144 bytes",
        "status.attachError.errorCode: Invalid value: -1: must be between 0 and 2147483647, inclusive"]


def test_csi_node() -> None:
    assert create_errors(csi_node(driver(), driver(nodeID="", topologyKeys=["", "a", "a"]))) == [
        "spec.drivers[1].nodeID: Required value",
        'spec.drivers[1].name: Duplicate value: "ebs.csi.aws.com"',
        "spec.drivers[1]: Required value",
        'spec.drivers[1]: Invalid value: "": name part must be non-empty',
        "spec.drivers[1]: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and "
        "must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
        "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        'spec.drivers[1]: Duplicate value: "a"']
    assert create_errors(csi_node(driver(nodeID="n" * 193))) == [
        f'spec.drivers[0].nodeID: Invalid value: "{"n" * 193}": must be 192 characters or less']


def test_csi_node_driver_entries_are_immutable_but_allocatable() -> None:
    old = csi_node(driver())
    assert update_errors(csi_node(driver(allocatable={"count": 25})), old) == []
    assert update_errors(csi_node(driver(nodeID="i-456")), old) == [
        'spec.drivers: Invalid value: {"name":"ebs.csi.aws.com","nodeID":"i-456","topologyKeys":'
        '["topology.ebs.csi.aws.com/zone"]}: field is immutable']


def csi_driver(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "CSIDriver", "metadata": {"name": "ebs.csi.aws.com"}, "spec": spec}


def test_csi_driver() -> None:
    assert create_errors(csi_driver()) == []
    assert create_errors(csi_driver(fsGroupPolicy="Always", volumeLifecycleModes=["Persistent", "Shared"],
                                    tokenRequests=[{"audience": "a", "expirationSeconds": 60}, {"audience": "a"}],
                                    nodeAllocatableUpdatePeriodSeconds=5)) == [
        'spec.fsGroupPolicy: Unsupported value: "Always": supported values: "File", "None", "ReadWriteOnceWithFSType"',
        "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
        'spec.tokenRequests[1].audience: Duplicate value: "a"',
        'spec.volumeLifecycleModes: Unsupported value: "Shared": supported values: "Persistent", "Ephemeral"',
        "spec.nodeAllocatableUpdatePeriodSeconds: Invalid value: 5: must be greater than or equal to 10 seconds"]
    old = csi_driver()
    assert update_errors(csi_driver(attachRequired=False), old) == [
        "spec.attachedRequired: Invalid value: false: field is immutable"]
    assert update_errors(csi_driver(podInfoOnMount=True), old) == []


def test_csi_storage_capacity() -> None:
    cap = {"apiVersion": V1, "kind": "CSIStorageCapacity", "metadata": {"name": "c"}, "storageClassName": "fast",
           "capacity": "-1Gi", "nodeTopology": {"matchLabels": {"zone": "a"}}}
    assert create_errors(cap) == ['capacity: Invalid value: "-1Gi": must be greater than or equal to 0']
    old = changed(cap, lambda o: o.update(capacity="1Gi"))
    assert update_errors(changed(old, lambda o: o.update(storageClassName="slow", capacity="2Gi")), old) == [
        'storageClassName: Invalid value: "slow": field is immutable']


def test_volume_attributes_class() -> None:
    vac = {"apiVersion": V1, "kind": "VolumeAttributesClass", "metadata": {"name": "gold"},
           "driverName": "ebs.csi.aws.com", "parameters": {"iops": "3000"}}
    assert create_errors(changed(vac, lambda o: o.update(driverName="", parameters={}))) == [
        "driverName: Required value", "parameters: Required value: must contain at least one key/value pair"]
    assert update_errors(changed(vac, lambda o: o.update(parameters={"iops": "4000"})), vac) == [
        "parameters: Forbidden: updates to parameters are forbidden."]
