"""An HPA whose scaleTargetRef is a custom resource with a scale subresource (issue #19): the
controller resolves the kind through discovery (the definition made after it started), reads and
writes the Widget's `/scale`; `kubectl scale widget/w` moves it by hand and the HPA brings it back
within its bounds. A kind nobody serves is a `FailedGetScale` with upstream's "no matches" text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.controllers import crds
from tests.controllers.hpa import support
from tests.controllers.hpa.support import condition
from tests.kubectl.conftest import KUBECTL, Kubectl
from tests.waiting import eventually


def _hpa(name: str, target: dict[str, str], *, low: int, high: int) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"scaleTargetRef": target, "minReplicas": low, "maxReplicas": high,
                     "metrics": [{"type": "Resource", "resource": {
                         "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]}}


async def test_an_hpa_scales_a_custom_resource_through_its_scale_subresource(tmp_path: Path) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl not found: run `make test` (tests/tools/fetch-kubectl.sh) or set CPLANE_KUBECTL")
    async with support.cluster(tmp_path) as cl:
        widgets = await crds.establish(cl.client)
        await cl.client.create(widgets, {"apiVersion": "example.com/v1", "kind": "Widget",
                                         "metadata": {"name": "w", "namespace": "default"},
                                         "spec": {"replicas": 1}})
        target = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w"}
        await cl.client.create("horizontalpodautoscalers.autoscaling", _hpa("w", target, low=3, high=5))

        async def replicas() -> int:
            scale = await cl.client.get_scale(widgets, "w", namespace="default")
            return int(scale["spec"].get("replicas") or 0)

        await eventually(lambda: _equals(replicas(), 3), what="raised to minReplicas")
        hpa = await cl.hpa("w")
        assert condition(hpa, "AbleToScale")[:2] == ("True", "SucceededRescale")
        events = [e["message"] for e in await cl.events("w")]
        assert "New size: 3; reason: Current number of replicas below Spec.MinReplicas" in events

        kubectl = Kubectl(cl.srv, home=tmp_path / "home", workdir=tmp_path / "work")
        out = await kubectl("scale", "widget/w", "--replicas", "7")
        assert out.stdout.strip() == "widget.example.com/w scaled"
        assert await replicas() == 7
        await cl.tick("w")
        assert await replicas() == 5
        events = [e["message"] for e in await cl.events("w")]
        assert "New size: 5; reason: Current number of replicas above Spec.MaxReplicas" in events


async def test_a_kind_nobody_serves_fails_to_get_its_scale(tmp_path: Path) -> None:
    async with support.cluster(tmp_path) as cl:
        target = {"apiVersion": "example.com/v1", "kind": "Gadget", "name": "g"}
        await cl.client.create("horizontalpodautoscalers.autoscaling", _hpa("g", target, low=1, high=2))

        async def failed() -> tuple[str, str, str] | None:
            got = condition(await cl.hpa("g"), "AbleToScale")
            return got if got[0] == "False" else None

        _status, reason, message = await eventually(failed, what="FailedGetScale")
        assert reason == "FailedGetScale"
        assert message == ('the HPA controller was unable to get the target\'s current scale: '
                           'no matches for kind "Gadget" in group "example.com"')


async def _equals(value: Any, expected: int) -> bool:
    return bool(await value == expected)
