"""`kubectl get` of kinds beyond pods: the columns upstream's printers give them (with `-o wide`),
kube-apiserver's default table for kinds without a printer, and field selectors other resources
accept or refuse.

In scope: what kubectl shows. Out of scope: every cell rule (tests/cp/printers/) and the selector
grammar (tests/cp/test_selectors.py, tests/cp/test_fieldlabels.py).
"""

from __future__ import annotations

import re

import pytest

from tests.kubectl import manifests as m
from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.kubectl

SEED = m.docs(
    "apiVersion: v1\nkind: Secret\nmetadata: {name: tls}\ntype: kubernetes.io/tls\n"
    "data: {tls.crt: Y2VydA==, tls.key: a2V5}\n",
    "apiVersion: v1\nkind: Secret\nmetadata: {name: plain}\ntype: Opaque\ndata: {a: Yg==}\n",
    "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n"
    "spec: {type: ClusterIP, selector: {app: web}, ports: [{port: 80, protocol: TCP, targetPort: 8080}]}\n",
    "apiVersion: batch/v1\nkind: Job\nmetadata: {name: once}\n"
    "spec: {template: {spec: {restartPolicy: Never, containers: [{name: w, image: busybox:1.36}]}}}\n",
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n",
    "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: tables-reader}\n"
    "rules: [{apiGroups: [''], resources: [pods], verbs: [get]}]\n",
    "apiVersion: networking.k8s.io/v1\nkind: IPAddress\nmetadata: {name: 10.96.0.77}\n"
    "spec: {parentRef: {group: '', resource: services, namespace: default, name: web}}\n",
)


async def test_get_columns_of_other_kinds(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", kubectl.write("seed.yaml", SEED))

    rows = (await kubectl("get", "secrets")).rows()
    assert rows[0] == ["NAME", "TYPE", "DATA", "AGE"]
    body = {row[0]: row for row in rows[1:]}
    assert body["tls"][1:3] == ["kubernetes.io/tls", "2"]
    assert body["plain"][1:3] == ["Opaque", "1"]

    rows = (await kubectl("get", "services", "web", "-o", "wide")).rows()
    assert rows[0] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
    assert rows[1][0:2] == ["web", "ClusterIP"] and rows[1][3:5] == ["<none>", "80/TCP"]
    assert rows[1][6] == "app=web"

    rows = (await kubectl("get", "jobs", "-o", "wide")).rows()
    assert rows[0] == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert rows[1][0] == "once" and rows[1][2] == "0/1"
    assert rows[1][-3:-1] == ["w", "busybox:1.36"]  # (DURATION is empty before the job starts)

    rows = (await kubectl("get", "priorityclasses", "high", "-o", "wide")).rows()
    assert rows[0] == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    assert rows[1][0:3] == ["high", "1000", "false"] and rows[1][4] == "PreemptLowerPriority"

    # Upstream's IPAddress rows carry an age its table has no column for; kubectl shows the columns.
    rows = (await kubectl("get", "ipaddresses", "10.96.0.77")).rows()
    assert rows == [["NAME", "PARENTREF"], ["10.96.0.77", "services/default/web"]]

    # No printer upstream: kube-apiserver's default table.
    rows = (await kubectl("get", "clusterroles", "tables-reader")).rows()
    assert rows[0] == ["NAME", "CREATED AT"]
    assert rows[1][0] == "tables-reader"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", rows[1][1])


async def test_get_scale_subresource(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", kubectl.write("d.yaml", m.deployment("web", replicas=2)))
    rows = (await kubectl("get", "deployment", "web", "--subresource=scale")).rows()
    assert rows[0] == ["NAME", "DESIRED", "AVAILABLE", "AGE"]
    assert rows[1][0:2] == ["web", "2"]


async def test_field_selectors_of_other_resources(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", kubectl.write("seed.yaml", SEED))

    r = await kubectl("get", "secrets", "--field-selector", "type=kubernetes.io/tls", "-o", "name")
    assert r.lines == ["secret/tls"]
    r = await kubectl("get", "services", "--field-selector", "spec.type=ClusterIP,metadata.name=web", "-o", "name")
    assert r.lines == ["service/web"]
    r = await kubectl("get", "jobs", "--field-selector", "status.successful=0", "-o", "name")
    assert r.lines == ["job.batch/once"]

    r = await kubectl("get", "secrets", "--field-selector", "data=x", check=False)
    assert r.code == 1 and "field label not supported: data" in r.stderr
    r = await kubectl("get", "jobs", "--field-selector", "status.succeeded=1", check=False)
    assert r.code == 1 and 'field label "status.succeeded" not supported for batchv1.Job' in r.stderr
    r = await kubectl("get", "configmaps", "--field-selector", "data.a=b", check=False)
    assert r.code == 1 and "is not a known field selector" in r.stderr
