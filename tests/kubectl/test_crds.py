"""The real kubectl on custom resources: `get` with the definition's printer columns (`-o wide` adds
the priority ones, `-w` prints rows as they change), short names and categories (`get wd`, `get all`),
field selectors on selectable fields, `explain` from the published OpenAPI, and `apply` twice (client-side three-way merge, then
server-side) — all at once after the definition is established.

Out of scope: the Table and OpenAPI documents over raw HTTP (tests/api/crds/).
"""

from __future__ import annotations

import pytest

from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.kubectl

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList, shortNames: [wd], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    selectableFields: [{jsonPath: .spec.color}]
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Color, type: string, jsonPath: .spec.color, priority: 1}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        description: A widget of the tests.
        properties:
          spec:
            type: object
            description: What the widget should be.
            properties:
              replicas: {type: integer, description: How many copies of the widget.}
              color: {type: string, description: The color the widget is painted.}
              labels: {type: object, additionalProperties: {type: string}}
          status:
            type: object
            properties:
              conditions:
                type: array
                items:
                  type: object
                  properties: {type: {type: string}, status: {type: string}}
"""

WIDGET = """\
apiVersion: example.com/v1
kind: Widget
metadata: {{name: {name}}}
spec: {{replicas: {replicas}, color: {color}, labels: {{{labels}}}}}
"""


async def _establish(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", kubectl.write("crd.yaml", CRD))
    await kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=10s")


async def test_get_prints_the_columns(kubectl: Kubectl) -> None:
    await _establish(kubectl)
    await kubectl("apply", "-f", kubectl.write("a.yaml", WIDGET.format(name="a", replicas=2, color="blue",
                                                                          labels="tier: web")))
    await kubectl("apply", "-f", kubectl.write("b.yaml", WIDGET.format(name="b", replicas=5, color="red",
                                                                          labels="")))
    await kubectl("patch", "widget", "a", "--subresource=status", "--type=merge",
                  "-p", '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}')

    rows = (await kubectl("get", "widgets")).rows()
    assert rows[0] == ["NAME", "REPLICAS", "READY", "AGE"]
    assert rows[1][:3] == ["a", "2", "True"]
    assert rows[2][:2] == ["b", "5"] and len(rows[2]) == 3  # a null cell prints blank, as upstream's
    assert rows[1][3].endswith("s")  # the age the server rendered

    rows = (await kubectl("get", "widgets", "-o", "wide")).rows()
    assert rows[0] == ["NAME", "REPLICAS", "COLOR", "READY", "AGE"]
    assert rows[1][:4] == ["a", "2", "blue", "True"]

    assert (await kubectl("get", "wd", "b", "--no-headers")).rows()[0][:2] == ["b", "5"]
    out = (await kubectl("get", "all")).stdout
    assert "widget.example.com/a" in out and "widget.example.com/b" in out

    rows = (await kubectl("get", "widgets", "--field-selector", "spec.color=red")).rows()
    assert [r[0] for r in rows[1:]] == ["b"]
    r = await kubectl("get", "widgets", "--field-selector", "spec.size=M", check=False)
    assert r.code == 1 and "field label not supported: spec.size" in r.stderr

    watch = await kubectl.start("get", "widgets", "-w", "--field-selector", "spec.color=red")
    await watch.expect(r"^b\s+5\s+")
    await kubectl("patch", "widget", "b", "--type=merge", "-p", '{"spec":{"replicas":7}}')
    await watch.expect(r"^b\s+7\s+")
    await watch.stop()


async def test_explain_and_apply(kubectl: Kubectl) -> None:
    await _establish(kubectl)
    out = (await kubectl("explain", "widgets.spec")).stdout
    assert "What the widget should be." in out
    assert "replicas\t<integer>" in out and "How many copies of the widget." in out
    assert "color\t<string>" in out

    path = kubectl.write("w.yaml", WIDGET.format(name="w", replicas=1, color="blue", labels="a: one, b: two"))
    await kubectl("apply", "-f", path)
    # Client-side apply again: a three-way JSON merge patch drops the label the file no longer has.
    path = kubectl.write("w.yaml", WIDGET.format(name="w", replicas=3, color="blue", labels="a: one"))
    r = await kubectl("apply", "-f", path)
    assert "widget.example.com/w configured" in r.stdout
    assert await kubectl.jsonpath("widget", "w", path="{.spec.replicas} {.spec.labels}") == '3 {"a":"one"}'

    path = kubectl.write("w2.yaml", WIDGET.format(name="w", replicas=4, color="green", labels="a: one"))
    await kubectl("apply", "--server-side", "--force-conflicts", "-f", path)
    assert await kubectl.jsonpath("widget", "w", path="{.spec.replicas} {.spec.color}") == "4 green"
    managers = await kubectl.jsonpath("widget", "w", path="{.metadata.managedFields[*].manager}")
    assert "kubectl" in managers
