"""README's "Your own kinds and admission" walkthrough, command by command, with the real kubectl and
the files it names (`examples/crds/`): a definition with a default, a CEL rule, printer columns, a
selectable field and the scale subresource; a policy that denies and one that warns; deleting the
definition deletes its widgets."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.kubectl

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "crds"


async def test_the_readme_walkthrough(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", str(EXAMPLES / "widgets.yaml"))
    await kubectl("wait", "--for", "condition=Established", "crd/widgets.example.com", "--timeout=10s")
    await kubectl("apply", "-f", str(EXAMPLES / "widget.yaml"))
    r = await kubectl("get", "widgets")
    assert r.rows()[0] == ["NAME", "COLOR", "REPLICAS", "AGE"]
    assert r.rows()[1][:3] == ["blue", "blue", "1"]  # replicas defaulted by the schema
    r = await kubectl("explain", "widget.spec.color")
    assert "The widget's color." in r.stdout
    r = await kubectl("scale", "widget/blue", "--replicas", "3")
    assert r.stdout.strip() == "widget.example.com/blue scaled"
    r = await kubectl("get", "wd", "--field-selector", "spec.color=blue", "-o", "name")
    assert r.stdout.strip() == "widget.example.com/blue"
    r = await kubectl("patch", "widget", "blue", "--type", "merge", "-p", '{"spec":{"replicas":20}}', check=False)
    assert r.code == 1
    assert 'The Widget "blue" is invalid: spec: Invalid value: replicas must not exceed maxReplicas' in r.stderr

    await kubectl("apply", "-f", str(EXAMPLES / "no-red-widgets.yaml"))
    r = await kubectl("patch", "widget", "blue", "--type", "merge", "-p", '{"spec":{"color":"red"}}', check=False)
    assert r.code == 1
    assert "ValidatingAdmissionPolicy 'widget-rules' with binding 'widget-rules' denied request: " \
           "widget blue may not be red" in r.stderr
    r = await kubectl("patch", "widget", "blue", "--type", "merge", "-p", '{"spec":{"replicas":8}}')
    assert "Warning: Validation failed for ValidatingAdmissionPolicy 'widget-size' with binding 'widget-size': " \
           "more than 5 replicas is a lot" in r.stderr
    assert await kubectl.jsonpath("widget", "blue", path="{.spec.replicas}") == "8"

    await kubectl("delete", "crd", "widgets.example.com", "--wait")
    r = await kubectl("get", "crds", "-o", "name")
    assert "widgets.example.com" not in r.stdout
