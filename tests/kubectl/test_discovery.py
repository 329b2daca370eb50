"""kubectl's discovery-driven commands: version, api-resources, api-versions, explain.

In scope: what the user sees from the real kubectl 1.37.1 (kubectl-compat.md §2, §3).
Out of scope: discovery document shapes over raw HTTP (tests/api/).
"""

from __future__ import annotations

import pytest

from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.kubectl


async def test_version_shows_server_without_skew_warning(kubectl: Kubectl) -> None:
    r = await kubectl("version")
    assert "Client Version: v1.37.1" in r.stdout
    assert "Server Version: v1.37.0-cplane" in r.stdout
    assert "WARNING" not in r.stdout + r.stderr and "skew" not in r.stdout + r.stderr
    r = await kubectl("version", "-o", "json")
    server = r.json()["serverVersion"]
    assert (server["major"], server["minor"]) == ("1", "37")


async def test_api_resources_and_versions(kubectl: Kubectl) -> None:
    r = await kubectl("api-resources")
    assert r.rows()[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    # metrics.k8s.io also serves `pods` and `nodes` (PodMetrics, NodeMetrics): keep the first row of a
    # name, which kubectl prints for the core group.
    rows: dict[str, list[str]] = {}
    for row in r.rows()[1:]:
        rows.setdefault(row[0], row)
    assert rows["pods"] == ["pods", "po", "v1", "true", "Pod"]
    assert rows["nodes"] == ["nodes", "no", "v1", "false", "Node"]
    assert rows["namespaces"] == ["namespaces", "ns", "v1", "false", "Namespace"]
    assert rows["events"] == ["events", "ev", "v1", "true", "Event"]
    assert rows["deployments"] == ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    assert rows["replicasets"] == ["replicasets", "rs", "apps/v1", "true", "ReplicaSet"]
    assert rows["horizontalpodautoscalers"] == ["horizontalpodautoscalers", "hpa", "autoscaling/v2", "true",
                                                "HorizontalPodAutoscaler"]
    # The resource.k8s.io kinds have no short names upstream: the column is blank.
    assert rows["resourceclaims"] == ["resourceclaims", "resource.k8s.io/v1", "true", "ResourceClaim"]
    assert rows["resourceslices"] == ["resourceslices", "resource.k8s.io/v1", "false", "ResourceSlice"]
    assert rows["deviceclasses"] == ["deviceclasses", "resource.k8s.io/v1", "false", "DeviceClass"]
    assert "resourceclaimtemplates" in rows

    r = await kubectl("api-resources", "-o", "wide")
    header = r.rows()[0]
    assert header[-2:] == ["VERBS", "CATEGORIES"]
    wide: dict[str, list[str]] = {}
    for row in r.rows()[1:]:
        wide.setdefault(row[0], row)
    assert wide["pods"][-2:] == ["create,delete,deletecollection,get,list,patch,update,watch", "all"]
    assert wide["namespaces"][-1] == "create,delete,get,list,patch,update,watch"  # no deletecollection
    assert wide["deployments"][-1] == "all"

    r = await kubectl("api-resources", "--namespaced=false", "-o", "name")
    assert {"nodes", "namespaces", "deviceclasses.resource.k8s.io", "resourceslices.resource.k8s.io"} \
        <= set(r.lines)
    assert "pods" not in r.lines

    r = await kubectl("api-resources", "--api-group=resource.k8s.io", "-o", "name")
    assert {"resourceclaims.resource.k8s.io", "resourceclaimtemplates.resource.k8s.io",
            "deviceclasses.resource.k8s.io", "resourceslices.resource.k8s.io"} <= set(r.lines)

    r = await kubectl("api-versions")
    assert {"v1", "apps/v1", "autoscaling/v2", "resource.k8s.io/v1", "coordination.k8s.io/v1"} <= set(r.lines)

    # Short names and categories resolve through discovery.
    r = await kubectl("get", "deploy,po,hpa")
    assert "No resources found in default namespace." in r.stderr
    r = await kubectl("get", "all")  # as on any cluster: only the API server's own Service
    assert [line.split()[0] for line in r.lines[1:]] == ["service/kubernetes"]


async def test_explain_resourceclaim_devices(kubectl: Kubectl) -> None:
    r = await kubectl("explain", "resourceclaim.spec.devices")
    assert "GROUP:      resource.k8s.io" in r.stdout
    assert "KIND:       ResourceClaim" in r.stdout
    assert "VERSION:    v1" in r.stdout
    assert "FIELD: devices <DeviceClaim>" in r.stdout
    assert "DESCRIPTION:" in r.stdout and "Devices defines how to request devices." in r.stdout
    fields = r.stdout.split("FIELDS:", 1)[1]
    for field in ("config\t<[]DeviceClaimConfiguration>", "constraints\t<[]DeviceConstraint>",
                  "requests\t<[]DeviceRequest>"):
        assert field in fields

    r = await kubectl("explain", "resourceclaims.spec.devices.requests.exactly.deviceClassName")
    assert "FIELD: deviceClassName <string>" in r.stdout
    assert "DeviceClassName references a specific DeviceClass" in r.stdout

    r = await kubectl("explain", "deployment.spec.replicas")
    assert "GROUP:      apps" in r.stdout and "FIELD: replicas <integer>" in r.stdout
    assert "Number of desired pods." in r.stdout

    r = await kubectl("explain", "resourceclaim.spec.nosuchfield", check=False)
    assert r.code != 0 and 'field "nosuchfield" does not exist' in r.stderr
