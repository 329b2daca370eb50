"""VolumeBinding: upstream's volume_binding_test.go cases and the binder's FindPodVolumes checks
(binder_test.go) as far as PersistentVolumeClaims exist: unbound immediate claims, missing claims
and volumes, bound volumes' node affinity, WaitForFirstConsumer claims matched to available volumes
or provisioned, the selected node, and the PreFilterResult of hostname-pinned volumes."""

from __future__ import annotations

from typing import Any

import pytest

from cp.scheduling import framework, plugins
from cp.scheduling.plugins import volumebinding as vb
from tests.cp.scheduling.builders import make_node, make_pod, states

IMMEDIATE = {"metadata": {"name": "immediate-sc"}, "provisioner": "example.com/p", "volumeBindingMode": "Immediate"}
WAIT = {"metadata": {"name": "wait-sc"}, "provisioner": "", "volumeBindingMode": "WaitForFirstConsumer"}
WAIT_PROVISION = {"metadata": {"name": "wait-provision-sc"}, "provisioner": "example.com/p",
                  "volumeBindingMode": "WaitForFirstConsumer"}
WAIT_NO_PROVISIONER = {"metadata": {"name": "wait-none-sc"}, "provisioner": "kubernetes.io/no-provisioner",
                       "volumeBindingMode": "WaitForFirstConsumer"}
WAIT_ZONE = {"metadata": {"name": "wait-zone-sc"}, "provisioner": "example.com/p",
             "volumeBindingMode": "WaitForFirstConsumer",
             "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]}


def pvc(name: str, sc: str, *, volume: str = "", bound: bool = False, size: str = "1Gi",
        annotations: dict[str, str] | None = None, modes: tuple[str, ...] = ("ReadWriteOnce",)) -> dict[str, Any]:
    ann = dict(annotations or {})
    if bound:
        ann["pv.kubernetes.io/bind-completed"] = "yes"
    spec: dict[str, Any] = {"storageClassName": sc, "accessModes": list(modes),
                            "resources": {"requests": {"storage": size}}}
    if volume:
        spec["volumeName"] = volume
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "annotations": ann},
            "spec": spec, "status": {"phase": "Bound" if bound else "Pending"}}


def pv(name: str, sc: str, *, size: str = "1Gi", claim: str = "", hostname: str = "",
       labels: dict[str, str] | None = None, phase: str = "Available") -> dict[str, Any]:
    spec: dict[str, Any] = {"storageClassName": sc, "capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"]}
    if claim:
        spec["claimRef"] = {"namespace": "default", "name": claim}
    if hostname:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [hostname]}]}]}}
    if labels:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": k, "operator": "In", "values": [v]} for k, v in labels.items()]}]}}
    return {"metadata": {"name": name}, "spec": spec, "status": {"phase": phase}}


def claim_pod(*claims: str) -> dict[str, Any]:
    return make_pod(volumes=[{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)])


CLASSES = [IMMEDIATE, WAIT, WAIT_PROVISION, WAIT_NO_PROVISIONER, WAIT_ZONE]
NODE_A = make_node("node-a", labels={"kubernetes.io/hostname": "node-a", "foo": "bar", "zone": "a"})
NODE_B = make_node("node-b", labels={"kubernetes.io/hostname": "node-b", "zone": "b"})


def run(pod: dict[str, Any], claims: list[dict[str, Any]], volumes: list[dict[str, Any]]
        ) -> tuple[Any, frozenset[str] | None, dict[str, Any]]:
    """(PreFilter verdict, PreFilterResult node names, Filter verdict per node)."""
    lookup = vb.StaticVolumes(claims=claims, volumes=volumes, classes=CLASSES)
    nodes = states([NODE_A, NODE_B])
    state = framework.CycleState()
    plugin = vb.VolumeBinding()
    info = framework.PodInfo(pod)
    st = plugin.pre_filter(state, info, framework.Snapshot(nodes, volumes=lookup))
    if st is not None:
        return (st.code if st.code == framework.SKIP else (st.code, st.reasons)), None, {}
    verdicts = {}
    for n in nodes:
        f = plugin.filter(state, info, n)
        verdicts[n.name] = None if f is None else (f.code, f.reasons)
    return None, state.node_names, verdicts


U = plugins.UNRESOLVABLE


@pytest.mark.parametrize(("name", "pod", "claims", "volumes", "want"), [
    ("pod has no pvcs", make_pod(), [], [], (framework.SKIP, None, {})),
    ("all bound", claim_pod("pvc-a"), [pvc("pvc-a", "immediate-sc", volume="pv-a", bound=True)],
     [pv("pv-a", "immediate-sc", claim="pvc-a")], (None, None, {"node-a": None, "node-b": None})),
    ("all bound with local volumes: PreFilterResult", claim_pod("pvc-a", "pvc-b"),
     [pvc("pvc-a", "wait-sc", volume="pv-a", bound=True), pvc("pvc-b", "wait-sc", volume="pv-b", bound=True)],
     [pv("pv-a", "wait-sc", claim="pvc-a", hostname="node-a"), pv("pv-b", "wait-sc", claim="pvc-b", hostname="node-a")],
     (None, frozenset({"node-a"}), {"node-a": None, "node-b": (U, [vb.ERR_REASON_NODE_CONFLICT])})),
    ("PVC does not exist", claim_pod("pvc-a"), [], [],
     ((U, ['persistentvolumeclaim "pvc-a" not found']), None, {})),
    ("Part of PVCs do not exist", claim_pod("pvc-a", "pvc-b"),
     [pvc("pvc-a", "immediate-sc", volume="pv-a", bound=True)], [pv("pv-a", "immediate-sc", claim="pvc-a")],
     ((U, ['persistentvolumeclaim "pvc-b" not found']), None, {})),
    ("immediate claims not bound", claim_pod("pvc-a"), [pvc("pvc-a", "immediate-sc")], [],
     ((U, [vb.ERR_REASON_UNBOUND_IMMEDIATE]), None, {})),
    ("pre-bound but not yet bound counts as immediate", claim_pod("pvc-a"), [pvc("pvc-a", "wait-sc", volume="pv-a")],
     [pv("pv-a", "wait-sc")], ((U, [vb.ERR_REASON_UNBOUND_IMMEDIATE]), None, {})),
    ("unbound claims no matches", claim_pod("pvc-a"), [pvc("pvc-a", "wait-sc")], [],
     (None, None, {"node-a": (U, [vb.ERR_REASON_BIND_CONFLICT]), "node-b": (U, [vb.ERR_REASON_BIND_CONFLICT])})),
    ("bound and unbound unsatisfied", claim_pod("pvc-a", "pvc-b"),
     [pvc("pvc-a", "wait-sc", volume="pv-a", bound=True), pvc("pvc-b", "wait-sc")],
     [pv("pv-a", "wait-sc", claim="pvc-a", labels={"foo": "barbar"})],
     (None, None, {"node-a": (U, [vb.ERR_REASON_NODE_CONFLICT, vb.ERR_REASON_BIND_CONFLICT]),
                   "node-b": (U, [vb.ERR_REASON_NODE_CONFLICT, vb.ERR_REASON_BIND_CONFLICT])})),
    ("pv not found", claim_pod("pvc-a"), [pvc("pvc-a", "wait-sc", volume="pv-a", bound=True)], [],
     (None, None, {"node-a": (U, [vb.ERR_REASON_PV_NOT_EXIST]), "node-b": (U, [vb.ERR_REASON_PV_NOT_EXIST])})),
    ("unbound claim matches an available volume on one node", claim_pod("pvc-a"), [pvc("pvc-a", "wait-sc")],
     [pv("pv-a", "wait-sc", hostname="node-b"), pv("pv-small", "wait-sc", size="100Mi")],
     (None, None, {"node-a": (U, [vb.ERR_REASON_BIND_CONFLICT]), "node-b": None})),
    ("volumes bound to other claims or not available do not match", claim_pod("pvc-a"), [pvc("pvc-a", "wait-sc")],
     [pv("pv-other", "wait-sc", claim="pvc-other"), pv("pv-released", "wait-sc", phase="Released")],
     (None, None, {"node-a": (U, [vb.ERR_REASON_BIND_CONFLICT]), "node-b": (U, [vb.ERR_REASON_BIND_CONFLICT])})),
    ("dynamic provisioning on every node", claim_pod("pvc-a"), [pvc("pvc-a", "wait-provision-sc")], [],
     (None, None, {"node-a": None, "node-b": None})),
    ("no-provisioner classes need a volume", claim_pod("pvc-a"), [pvc("pvc-a", "wait-none-sc")], [],
     (None, None, {"node-a": (U, [vb.ERR_REASON_BIND_CONFLICT]), "node-b": (U, [vb.ERR_REASON_BIND_CONFLICT])})),
    ("allowed topologies limit provisioning", claim_pod("pvc-a"), [pvc("pvc-a", "wait-zone-sc")], [],
     (None, None, {"node-a": None, "node-b": (U, [vb.ERR_REASON_BIND_CONFLICT])})),
    ("a selected node is the only one", claim_pod("pvc-a"),
     [pvc("pvc-a", "wait-provision-sc", annotations={vb.ANN_SELECTED_NODE: "node-b"})], [],
     (None, None, {"node-a": (U, [vb.ERR_REASON_BIND_CONFLICT]), "node-b": None})),
])
def test_volume_binding(name: str, pod: dict[str, Any], claims: list[dict[str, Any]],
                        volumes: list[dict[str, Any]], want: Any) -> None:
    assert run(pod, claims, volumes) == want


def test_claim_states_that_reject_the_pod() -> None:
    lost = pvc("pvc-a", "wait-sc", volume="pv-gone")
    lost["status"]["phase"] = "Lost"
    assert run(claim_pod("pvc-a"), [lost], [])[0] == (
        U, ['persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-gone"'])
    deleting = pvc("pvc-a", "wait-sc")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert run(claim_pod("pvc-a"), [deleting], [])[0] == (U, ['persistentvolumeclaim "pvc-a" is being deleted'])
    pod = make_pod(name="web", volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}])
    assert run(pod, [], [])[0] == (
        U, ['waiting for ephemeral volume controller to create the persistentvolumeclaim "web-scratch"'])
    foreign = pvc("web-scratch", "wait-provision-sc")
    assert run(pod, [foreign], [])[0] == (
        U, ["PVC default/web-scratch was not created for pod default/web (pod is not owner)"])
    foreign["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "web", "uid": pod["metadata"]["uid"],
                                               "controller": True}]
    assert run(pod, [foreign], [])[0] is None


def test_without_volume_data_the_plugin_skips() -> None:
    st = vb.VolumeBinding().pre_filter(framework.CycleState(), framework.PodInfo(claim_pod("pvc-a")),
                                       framework.Snapshot([]))
    assert st is framework.SKIPPED


def test_reserve_chooses_the_smallest_matching_volume_or_provisions() -> None:
    """`AssumePodVolumes` on the chosen node: static volumes for the claims that match one (the
    smallest), provisioning for the others; claims each get their own volume."""
    claims = [pvc("pvc-a", "wait-provision-sc", size="1Gi"), pvc("pvc-b", "wait-provision-sc", size="1Gi"),
              pvc("pvc-c", "wait-provision-sc", size="5Gi")]
    volumes = [pv("pv-big", "wait-provision-sc", size="10Gi", hostname="node-a"),
               pv("pv-1g", "wait-provision-sc", size="1Gi", hostname="node-a"),
               pv("pv-elsewhere", "wait-provision-sc", size="1Gi", hostname="node-b")]
    lookup = vb.StaticVolumes(claims=claims, volumes=volumes, classes=CLASSES)
    nodes = states([NODE_A, NODE_B])
    plugin = vb.VolumeBinding()
    state = framework.CycleState()
    info = framework.PodInfo(claim_pod("pvc-a", "pvc-b", "pvc-c"))
    assert plugin.pre_filter(state, info, framework.Snapshot(nodes, volumes=lookup)) is None
    chosen = plugin.bindings(state, nodes[0])
    assert chosen is not None
    assert [(c["metadata"]["name"], v["metadata"]["name"]) for c, v in chosen.static] == [
        ("pvc-a", "pv-1g"), ("pvc-b", "pv-big")]
    assert [c["metadata"]["name"] for c in chosen.provision] == ["pvc-c"]
    on_b = plugin.bindings(state, nodes[1])
    assert on_b is not None and [v["metadata"]["name"] for _c, v in on_b.static] == ["pv-elsewhere"]
