"""ResourceQuota, LimitRange and PriorityClass with the real kubectl: a quota made with
`kubectl create quota` (its generator's manifest) is measured by the quota controller and shown by
`kubectl describe quota` and `kubectl describe namespace` as on a real cluster; `kubectl run`
beyond it gets upstream's Forbidden text; a LimitRange fills in container resources and bounds
them; `kubectl describe priorityclass` shows the system classes; DRA claims count against a
device-class quota.

Out of scope: the charging rules one by one (tests/api/admission).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from api import server as servers
from controllers import registry
from tests.kubectl.conftest import Kubectl
from tests.waiting import eventually

pytestmark = pytest.mark.kubectl


@pytest.fixture
async def quota_controller(server: servers.Running) -> AsyncIterator[None]:
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.ensure_future(registry.run_controllers(kubeconfig=server.kubeconfig, stop_event=stop, ready=ready,
                                                          names=["resourcequota"]))
    await asyncio.wait_for(ready.wait(), 10)
    yield
    stop.set()
    await asyncio.wait_for(task, 10)


@pytest.mark.usefixtures("quota_controller")
async def test_create_and_describe_a_quota(kubectl: Kubectl) -> None:
    manifest = (await kubectl("create", "quota", "compute", "--hard=pods=2,requests.cpu=1,count/configmaps=3",
                              "--dry-run=client", "-o", "yaml")).stdout
    assert (await kubectl("create", "-f", "-", input=manifest)).stdout == "resourcequota/compute created\n"

    async def measured() -> bool:
        return await kubectl.jsonpath("quota", "compute", path="{.status.used.pods}") == "0"

    await eventually(measured, what="the quota controller measures the namespace")
    await kubectl("run", "web", "--image=nginx", "--restart=Never",
                  '--overrides={"spec":{"containers":[{"name":"web","image":"nginx",'
                  '"resources":{"requests":{"cpu":"600m"}}}]}}')
    described = (await kubectl("describe", "quota", "compute")).stdout
    assert described.splitlines() == [
        "Name:             compute",
        "Namespace:        default",
        "Resource          Used  Hard",
        "--------          ----  ----",
        "count/configmaps  0     3",
        "pods              1     2",
        "requests.cpu      600m  1",
    ]
    refused = await kubectl("run", "more", "--image=nginx", "--restart=Never",
                            '--overrides={"spec":{"containers":[{"name":"more","image":"nginx",'
                            '"resources":{"requests":{"cpu":"600m"}}}]}}', check=False)
    assert refused.code == 1
    assert refused.stderr == ('Error from server (Forbidden): pods "more" is forbidden: exceeded quota: compute, '
                              'requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1\n')
    refused = await kubectl("run", "bare", "--image=nginx", "--restart=Never", check=False)
    assert refused.stderr == ('Error from server (Forbidden): pods "bare" is forbidden: failed quota: compute: '
                              'must specify requests.cpu for: bare\n')


async def test_limit_ranges_default_and_bound_containers(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", input="""
apiVersion: v1
kind: LimitRange
metadata: {name: defaults}
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 256Mi}
    defaultRequest: {cpu: 100m, memory: 128Mi}
    max: {cpu: "1"}
""")
    await kubectl("run", "web", "--image=nginx", "--restart=Never")
    assert await kubectl.jsonpath("pod", "web", path="{.spec.containers[0].resources}") == (
        '{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}}')
    assert await kubectl.jsonpath("pod", "web", path="{.metadata.annotations.kubernetes\\.io/limit-ranger}") == (
        "LimitRanger plugin set: cpu, memory request for container web; cpu, memory limit for container web")
    refused = await kubectl("run", "big", "--image=nginx", "--restart=Never",
                            '--overrides={"spec":{"containers":[{"name":"big","image":"nginx",'
                            '"resources":{"limits":{"cpu":"2"}}}]}}', check=False)
    assert refused.stderr == ('Error from server (Forbidden): pods "big" is forbidden: maximum cpu usage per '
                              'Container is 1, but limit is 2\n')
    described = (await kubectl("describe", "namespace", "default")).stdout
    assert " Container  cpu       -    1    100m             500m           -" in described.splitlines()


async def test_system_priority_classes(kubectl: Kubectl) -> None:
    described = (await kubectl("describe", "priorityclass", "system-cluster-critical")).stdout
    assert described.splitlines()[:5] == [
        "Name:              system-cluster-critical",
        "Value:             2000000000",
        "GlobalDefault:     false",
        "PreemptionPolicy:  PreemptLowerPriority",
        "Description:       Used for system critical pods that must run in the cluster, but can be moved to "
        "another node if necessary.",
    ]
    refused = await kubectl("delete", "priorityclass", "system-cluster-critical", check=False)
    assert refused.stderr == ('Error from server (Forbidden): priorityclasses.scheduling.k8s.io '
                              '"system-cluster-critical" is forbidden: this is a system priority class and '
                              'cannot be deleted\n')
    await kubectl("run", "critical", "--image=nginx", "--restart=Never",
                  '--overrides={"spec":{"priorityClassName":"system-cluster-critical"}}')
    assert await kubectl.jsonpath("pod", "critical", path="{.spec.priority}") == "2000000000"


@pytest.mark.usefixtures("quota_controller")
async def test_claims_against_a_device_class_quota(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", input="""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus}
spec:
  hard:
    count/resourceclaims.resource.k8s.io: "5"
    gpu.example.com.deviceclass.resource.k8s.io/devices: "4"
""")

    async def measured() -> bool:
        return await kubectl.jsonpath("quota", "gpus", path="{.status.used}") != ""

    await eventually(measured, what="the quota controller measures the namespace")
    claim = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}}}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {{deviceClassName: gpu.example.com, count: {count}}}
"""
    await kubectl("apply", "-f", "-", input=claim.format(name="three", count=3))
    refused = await kubectl("apply", "-f", "-", input=claim.format(name="two", count=2), check=False)
    assert refused.code == 1
    assert ('resourceclaims.resource.k8s.io "two" is forbidden: exceeded quota: gpus, requested: '
            'gpu.example.com.deviceclass.resource.k8s.io/devices=2, used: '
            'gpu.example.com.deviceclass.resource.k8s.io/devices=3, limited: '
            'gpu.example.com.deviceclass.resource.k8s.io/devices=4') in refused.stderr
    await kubectl("delete", "resourceclaim", "three")

    async def given_back() -> bool:
        return await kubectl.jsonpath(
            "quota", "gpus", path="{.status.used.gpu\\.example\\.com\\.deviceclass\\.resource\\.k8s\\.io/devices}") == "0"

    await eventually(given_back, what="usage goes down when the claim is deleted")
    await kubectl("apply", "-f", "-", input=claim.format(name="two", count=2))
