"""Helm v4 (the binary shipped with kubectl 1.37.1, fetched by `make test`) against the server: a chart
whose templates hold a `kind: List` installs, upgrades, rolls back and uninstalls; a chart naming a kind
the server does not serve fails as upstream Helm fails, before touching anything.

Helm validates the manifests as kubectl does (the v3 documents, then `/openapi/v2` for List items and
unknown kinds), so these need the v2 document. Releases are kept in ConfigMaps (`HELM_DRIVER=configmap`):
Helm's default Secret storage, written and read in protobuf, is tests/kubectl/test_protobuf.py's; the
lifecycle of DRA charts with it, tests/kubectl/test_helm_dra_chart.py's.

Out of scope: chart features (Helm's own business), other clients (tests/kubectl/test_openapi.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.kubectl

DRIVER = {"HELM_DRIVER": "configmap"}
CHART = """apiVersion: v2
name: demo
version: 0.1.0
"""
TEMPLATES = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  value: {{ .Values.value | default "one" | quote }}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: {{ .Release.Name }}-listed
  data:
    value: {{ .Values.value | default "one" | quote }}
- apiVersion: resource.k8s.io/v1
  kind: DeviceClass
  metadata:
    name: {{ .Release.Name }}.example.com
  spec:
    selectors:
    - cel:
        expression: device.driver == "gpu.example.com"
"""
WIDGET = """apiVersion: example.com/v1
kind: Widget
metadata:
  name: {{ .Release.Name }}-widget
"""


def _chart(root: Path, **templates: str) -> str:
    (root / "templates").mkdir(parents=True, exist_ok=True)
    (root / "Chart.yaml").write_text(CHART)
    for name, text in templates.items():
        (root / "templates" / f"{name}.yaml").write_text(text)
    return str(root)


async def test_a_chart_with_a_list_installs_upgrades_rolls_back_and_uninstalls(helm: Kubectl,
                                                                              kubectl: Kubectl) -> None:
    chart = _chart(helm.workdir / "demo", main=TEMPLATES)
    r = await helm("install", "demo", chart, "--wait", "-v=6", env=DRIVER)
    assert "STATUS: deployed" in r.stdout and "REVISION: 1" in r.stdout
    assert "/openapi/v2" in r.stderr  # the List's items were validated against it
    assert await kubectl.jsonpath("configmap", "demo-listed", path="{.data.value}") == "one"
    assert await kubectl.jsonpath("deviceclass", "demo.example.com", path="{.metadata.name}") == "demo.example.com"

    r = await helm("upgrade", "demo", chart, "--set", "value=two", env=DRIVER)
    assert "REVISION: 2" in r.stdout
    assert await kubectl.jsonpath("configmap", "demo-listed", path="{.data.value}") == "two"
    await helm("rollback", "demo", "1", env=DRIVER)
    assert await kubectl.jsonpath("configmap", "demo-listed", path="{.data.value}") == "one"
    r = await helm("history", "demo", env=DRIVER)
    assert [row[0] for row in r.rows()[1:]] == ["1", "2", "3"]

    await helm("uninstall", "demo", "--wait", env=DRIVER)
    assert await kubectl.gone("configmap", "demo-listed")
    assert await kubectl.gone("deviceclass", "demo.example.com")


async def test_an_unknown_kind_fails_the_release_before_anything_is_written(helm: Kubectl,
                                                                           kubectl: Kubectl) -> None:
    chart = _chart(helm.workdir / "demo", main=TEMPLATES, widget=WIDGET)
    r = await helm("install", "demo", chart, env=DRIVER, check=False)
    assert r.code == 1
    assert ('Error: INSTALLATION FAILED: unable to build kubernetes objects from release manifest: resource '
            'mapping not found for name: "demo-widget" namespace: "" from "": no matches for kind "Widget" in '
            'version "example.com/v1"\nensure CRDs are installed first') in r.stderr
    assert await kubectl.gone("configmap", "demo-settings")
