"""NodeUnschedulable and NodeName: upstream's node_unschedulable_test.go and node_name_test.go."""

from __future__ import annotations

import pytest

from cp.scheduling import plugins
from cp.scheduling.plugins.nodename import NodeName
from cp.scheduling.plugins.nodeunschedulable import NodeUnschedulable
from tests.cp.scheduling.builders import make_node, make_pod, run_filter, states

TOLERATE = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]


@pytest.mark.parametrize(("unschedulable", "tolerations", "fits"), [
    (False, [], True),
    (True, [], False),
    (False, [], True),  # spec.unschedulable false
    (True, TOLERATE, True),
    (True, [{"operator": "Exists"}], True),
    (True, [{"key": "node.kubernetes.io/unschedulable", "effect": "NoExecute"}], False),
])
def test_node_unschedulable(unschedulable: bool, tolerations: list[dict[str, str]], fits: bool) -> None:
    node = states([make_node("n", unschedulable=unschedulable)])[0]
    st = run_filter(NodeUnschedulable(), make_pod(tolerations=tolerations), node)
    if fits:
        assert st is None
    else:
        assert st is not None and (st.code, st.reasons) == (plugins.UNRESOLVABLE, [plugins.ERR_REASON_UNSCHEDULABLE])


@pytest.mark.parametrize(("wanted", "node", "fits"), [
    ("", "foo", True),  # no host specified
    ("foo", "foo", True),  # host matches
    ("bar", "foo", False),  # host doesn't match
])
def test_node_name(wanted: str, node: str, fits: bool) -> None:
    pod = make_pod(node=wanted)
    st = run_filter(NodeName(), pod, states([make_node(node)])[0])
    if fits:
        assert st is None
    else:
        assert st is not None and (st.code, st.reasons) == (plugins.UNRESOLVABLE, [plugins.ERR_REASON_NODE_NAME])
