"""NodePorts: upstream's node_ports_test.go cases (hostIP / protocol / port conflicts, 0.0.0.0 as a
wildcard), and the sidecar rule of `GetHostPorts`."""

from __future__ import annotations

from typing import Any

import pytest

from cp.scheduling import framework, plugins
from cp.scheduling.plugins.nodeports import ERR_REASON, NodePorts, host_ports
from tests.cp.scheduling.builders import make_node, make_pod, run_filter, states


def ports_pod(*ports: str, name: str = "p", node: str = "") -> dict[str, Any]:
    """Ports as "protocol/hostIP/hostPort" (upstream's newPod)."""
    cps = []
    for p in ports:
        proto, ip, port = p.split("/")
        cps.append({"containerPort": int(port), "hostPort": int(port), "protocol": proto, "hostIP": ip})
    pod = make_pod(name=name, node=node)
    pod["spec"]["containers"] = [{"name": "c", "ports": cps}]
    return pod


CASES = [
    ("nothing running", [], [], True),
    ("other port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], True),
    ("same udp port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], False),
    ("same tcp port", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], False),
    ("different host ip", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.2/8080"], True),
    ("different protocol", ["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], True),
    ("second udp port conflict", ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], False),
    ("first tcp port conflict", ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
     ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"], False),
    ("first tcp port conflict due to 0.0.0.0 hostIP", ["TCP/0.0.0.0/8001"], ["TCP/127.0.0.1/8001"], False),
    ("TCP hostPort conflict due to 0.0.0.0 hostIP", ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
     ["TCP/127.0.0.1/8001"], False),
    ("second tcp port conflict to 0.0.0.0 hostIP", ["TCP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], False),
    ("second different protocol", ["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], True),
    ("UDP hostPort conflict due to 0.0.0.0 hostIP", ["UDP/127.0.0.1/8001"],
     ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"], False),
]


@pytest.mark.parametrize(("name", "wanted", "existing", "fits"), CASES, ids=[c[0] for c in CASES])
def test_filter(name: str, wanted: list[str], existing: list[str], fits: bool) -> None:
    olds = [ports_pod(*existing, name="old", node="n")] if existing else []
    node = states([make_node("n")], olds)[0]
    st = run_filter(NodePorts(), ports_pod(*wanted), node)
    if fits:
        assert st is None
    else:
        assert st is not None and (st.code, st.reasons) == (plugins.UNSCHEDULABLE, [ERR_REASON])


def test_pre_filter_skips_a_pod_without_host_ports() -> None:
    st = NodePorts().pre_filter(framework.CycleState(), framework.PodInfo(make_pod()), framework.Snapshot([]))
    assert st is framework.SKIPPED


def test_host_ports_count_sidecars_only_among_init_containers() -> None:
    pod = make_pod()
    port = [{"containerPort": 80, "hostPort": 80}]
    pod["spec"]["initContainers"] = [{"name": "init", "ports": port},
                                     {"name": "side", "restartPolicy": "Always", "ports": [{"hostPort": 81}]}]
    pod["spec"]["containers"] = [{"name": "c", "ports": [*port, {"containerPort": 90}]}]
    assert host_ports(pod) == [("0.0.0.0", "TCP", 81), ("0.0.0.0", "TCP", 80)]
    assert sorted(framework.PodInfo(pod).host_ports) == sorted(host_ports(pod))
