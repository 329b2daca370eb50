"""Helm v4 installs a chart that brings its own CustomResourceDefinition (`crds/`) and custom resources
of it (`templates/`): Helm creates the definition, waits until the server serves it, then creates the
resources; deleting the definition with kubectl deletes its resources (upstream's cleanup finalizer).

Out of scope: what the definitions' schemas check (tests/api/crds/, tests/cp/crd/).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.kubectl

DRIVER = {"HELM_DRIVER": "configmap"}
CHART = """apiVersion: v2
name: widgets
version: 0.1.0
"""
CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              color: {type: string}
    subresources: {status: {}}
"""
WIDGET = """apiVersion: example.com/v1
kind: Widget
metadata:
  name: {{ .Release.Name }}-widget
spec:
  size: {{ .Values.size | default 1 }}
  color: blue
"""


def _chart(root: Path) -> str:
    (root / "templates").mkdir(parents=True, exist_ok=True)
    (root / "crds").mkdir(parents=True, exist_ok=True)
    (root / "Chart.yaml").write_text(CHART)
    (root / "crds" / "widgets.yaml").write_text(CRD)
    (root / "templates" / "widget.yaml").write_text(WIDGET)
    return str(root)


async def test_a_chart_with_its_own_crd_installs_upgrades_and_uninstalls(helm: Kubectl, kubectl: Kubectl) -> None:
    chart = _chart(helm.workdir / "widgets")
    r = await helm("install", "demo", chart, "--wait", env=DRIVER)
    assert "STATUS: deployed" in r.stdout
    assert await kubectl.jsonpath("widget", "demo-widget", path="{.spec.size}") == "1"
    assert await kubectl.jsonpath("crd", "widgets.example.com",
                                  path='{.status.conditions[?(@.type=="Established")].status}') == "True"
    r = await helm("upgrade", "demo", chart, "--set", "size=3", env=DRIVER)
    assert "REVISION: 2" in r.stdout
    assert await kubectl.jsonpath("wd", "demo-widget", path="{.spec.size}") == "3"
    await helm("uninstall", "demo", "--wait", env=DRIVER)
    assert await kubectl.gone("widget", "demo-widget")
    # Helm leaves the definitions it installed from crds/
    assert await kubectl.jsonpath("crd", "widgets.example.com", path="{.metadata.name}") == "widgets.example.com"


async def test_deleting_the_crd_with_kubectl_deletes_its_resources(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", kubectl.write("crd.yaml", CRD))
    await kubectl("wait", "--for", "condition=Established", "crd/widgets.example.com", "--timeout=10s")
    await kubectl("create", "-f", kubectl.write("w.yaml", WIDGET.replace("{{ .Release.Name }}", "a")
                                                 .replace("{{ .Values.size | default 1 }}", "2")))
    r = await kubectl("get", "widgets")
    assert r.rows()[1][0] == "a-widget"
    await kubectl("delete", "crd", "widgets.example.com", "--wait")
    r = await kubectl("get", "widgets", check=False)
    assert r.code == 1  # kubectl's discovery cache still names the resource: the list is what fails
    assert 'Unable to list "example.com/v1, Resource=widgets": the server could not find the requested resource' \
        in r.stderr
    r = await kubectl("get", "crds", "-o", "name")
    assert "widgets.example.com" not in r.stdout
