"""VolumeRestrictions: upstream's volume_restrictions_test.go cases (GCE PD, AWS EBS, RBD and iSCSI
disk conflicts; ReadWriteOncePod claims)."""

from __future__ import annotations

from typing import Any

import pytest

from cp.scheduling import framework, plugins
from cp.scheduling.plugins import volumebinding as vb
from cp.scheduling.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_RWOP_CONFLICT,
    VolumeRestrictions,
)
from tests.cp.scheduling.builders import make_node, make_pod, states


def vol_pod(*volumes: dict[str, Any], name: str = "p", node: str = "") -> dict[str, Any]:
    return make_pod(name=name, node=node, volumes=[{"name": f"v{i}", **v} for i, v in enumerate(volumes)])


GCE_FOO = {"gcePersistentDisk": {"pdName": "foo"}}
GCE_BAR = {"gcePersistentDisk": {"pdName": "bar"}}
AWS_FOO = {"awsElasticBlockStore": {"volumeID": "foo"}}
AWS_BAR = {"awsElasticBlockStore": {"volumeID": "bar"}}
RBD_1 = {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar"}}
RBD_2 = {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar"}}
ISCSI_1 = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01", "lun": 0}}
ISCSI_2 = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01", "lun": 0}}


def _ro(v: dict[str, Any]) -> dict[str, Any]:
    ((kind, src),) = v.items()
    return {kind: {**src, "readOnly": True}}


@pytest.mark.parametrize(("name", "mine", "theirs", "fits"), [
    ("nothing", None, [], True),
    ("one state (GCE PD)", GCE_FOO, [GCE_FOO], False),
    ("same state (GCE PD)", GCE_FOO, [GCE_BAR], True),
    ("different state (GCE PD)", GCE_BAR, [GCE_FOO], True),
    ("both read-only (GCE PD)", _ro(GCE_FOO), [_ro(GCE_FOO)], True),
    ("one state (AWS EBS)", AWS_FOO, [AWS_FOO], False),
    ("different state (AWS EBS)", AWS_BAR, [AWS_FOO], True),
    ("AWS EBS read-only still conflicts", _ro(AWS_FOO), [_ro(AWS_FOO)], False),
    ("one state (RBD)", RBD_1, [RBD_1], False),
    ("different monitors (RBD)", RBD_2, [RBD_1], True),
    ("both read-only (RBD)", _ro(RBD_1), [_ro(RBD_1)], True),
    ("one state (iSCSI)", ISCSI_1, [ISCSI_1], False),
    ("different iqn (iSCSI)", ISCSI_2, [ISCSI_1], True),
])
def test_disk_conflicts(name: str, mine: dict[str, Any] | None, theirs: list[dict[str, Any]], fits: bool) -> None:
    olds = [vol_pod(*theirs, name="old", node="n")] if theirs else []
    node = states([make_node("n")], olds)[0]
    pod = vol_pod(mine) if mine else make_pod()
    plugin = VolumeRestrictions()
    state = framework.CycleState()
    info = framework.PodInfo(pod)
    st = plugin.pre_filter(state, info, framework.Snapshot([node]))
    if st is None:
        st = plugin.filter(state, info, node)
    elif st.code == framework.SKIP:
        st = None
    if fits:
        assert st is None
    else:
        assert st is not None and (st.code, st.reasons) == (plugins.UNSCHEDULABLE, [ERR_REASON_DISK_CONFLICT])


def _claim(name: str, *modes: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"accessModes": list(modes)}}


def _pvc_pod(claim: str, name: str = "p", node: str = "") -> dict[str, Any]:
    return vol_pod({"persistentVolumeClaim": {"claimName": claim}}, name=name, node=node)


@pytest.mark.parametrize(("name", "claims", "existing", "want"), [
    ("nothing", [_claim("claim-with-rwop-1", "ReadWriteOncePod")], [], None),
    ("failed to get PVC", [], [], ("prefilter", plugins.UNRESOLVABLE,
                                   ['persistentvolumeclaim "claim-with-rwop-1" not found'])),
    ("no access mode conflict", [_claim("claim-with-rwop-1", "ReadWriteOnce")],
     [_pvc_pod("claim-with-rwop-1", name="old", node="node-2")], None),
    ("access mode conflict, unschedulable", [_claim("claim-with-rwop-1", "ReadWriteOncePod")],
     [_pvc_pod("claim-with-rwop-1", name="old", node="node-2")],
     (plugins.UNSCHEDULABLE, [ERR_REASON_RWOP_CONFLICT])),
])
def test_read_write_once_pod(name: str, claims: list[dict[str, Any]], existing: list[dict[str, Any]],
                             want: Any) -> None:
    nodes = states([make_node("node-1"), make_node("node-2")], existing)
    lookup = vb.StaticVolumes(claims=claims)
    plugin = VolumeRestrictions()
    state = framework.CycleState()
    info = framework.PodInfo(_pvc_pod("claim-with-rwop-1"))
    st = plugin.pre_filter(state, info, framework.Snapshot(nodes, volumes=lookup))
    if st is not None:
        assert ("prefilter", st.code, st.reasons) == want
        return
    got = plugin.filter(state, info, nodes[0])
    assert (None if got is None else (got.code, got.reasons)) == want
    if want is not None:  # preemption's dry run: removing the other user clears the conflict
        other = framework.PodInfo(existing[0])
        copy = state.clone()
        plugin.remove_pod(copy, info, other, nodes[1])
        assert plugin.filter(copy, info, nodes[0]) is None
        assert plugin.filter(state, info, nodes[0]) is not None
