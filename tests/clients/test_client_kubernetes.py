"""The official `kubernetes` 37.0.2 client (sync, pydantic v2 models) against a live server.

In scope: typed CRUD through CoreV1Api / AppsV1Api / ResourceV1Api (every response must deserialize
into the generated pydantic models, which is the real compatibility check), the `/scale` and
`/status` subresources, `watch.Watch().stream` with `timeout_seconds`, and DynamicClient discovery.
The client is synchronous, so the scenario runs in a worker thread while the server keeps serving
in the test's event loop.
Out of scope: schema validation of the returned objects (test_client_schemas.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, dynamic, watch
from kubernetes.client.exceptions import ApiException

from tests.clients import support
from tests.clients.support import DRIVER

NS = "default"


def _not_found(call: Any, *args: Any, **kwargs: Any) -> ApiException:
    with pytest.raises(ApiException) as info:
        call(*args, **kwargs)
    assert info.value.status == 404, info.value
    return info.value


def _deleted_status(answer: Any, name: str, plural: str) -> None:
    """Deletes of kinds other than pods answer a Status (the 37.x client returns it as a dict)."""
    status = client.V1Status.from_dict(answer)
    assert status is not None and status.kind == "Status" and status.status == "Success"
    assert status.details is not None and (status.details.name, status.details.kind) == (name, plural)


def _core(core: client.CoreV1Api) -> None:
    # Pods: create (the client sends no Content-Type), read, list by label, SMP patch, delete.
    created = core.create_namespaced_pod(NS, client.V1Pod.from_dict(support.pod("web", app="web")))
    assert isinstance(created, client.V1Pod)
    assert created.metadata is not None and created.metadata.uid and created.metadata.resource_version
    assert created.metadata.creation_timestamp is not None
    assert created.status is not None and created.status.phase == "Pending"
    assert created.spec is not None and created.spec.containers[0].image == "registry.example/app:1.0"

    read = core.read_namespaced_pod("web", NS)
    assert read.metadata is not None and read.metadata.uid == created.metadata.uid

    listed = core.list_namespaced_pod(NS, label_selector="app=web")
    assert isinstance(listed, client.V1PodList)
    assert [p.metadata.name for p in listed.items if p.metadata] == ["web"]
    assert listed.metadata is not None and listed.metadata.resource_version
    assert core.list_namespaced_pod(NS, label_selector="app=other").items == []
    assert any(p.metadata and p.metadata.name == "web" for p in core.list_pod_for_all_namespaces().items)

    patched = core.patch_namespaced_pod("web", NS, {"metadata": {"labels": {"tier": "front"}}})
    assert patched.metadata is not None and patched.metadata.labels == {"app": "web", "tier": "front"}
    assert int(patched.metadata.resource_version or 0) > int(created.metadata.resource_version)

    deleted = core.delete_namespaced_pod("web", NS)
    assert isinstance(deleted, client.V1Pod)  # pods return the deleted object
    assert deleted.metadata is not None and deleted.metadata.name == "web"
    err = _not_found(core.read_namespaced_pod, "web", NS)
    assert '"reason":"NotFound"' in (err.body or "").replace(" ", "")

    # ConfigMaps: create, read, list, SMP patch, replace, delete (Status answer).
    cm = core.create_namespaced_config_map(NS, client.V1ConfigMap.from_dict(support.configmap("conf", a="1")))
    assert cm.data == {"a": "1"}
    assert core.read_namespaced_config_map("conf", NS).data == {"a": "1"}
    names = [c.metadata.name for c in core.list_namespaced_config_map(NS).items if c.metadata]
    assert "conf" in names
    cm = core.patch_namespaced_config_map("conf", NS, {"data": {"b": "2"}})
    assert cm.data == {"a": "1", "b": "2"}
    assert cm.metadata is not None
    cm.data = {"c": "3"}
    replaced = core.replace_namespaced_config_map("conf", NS, cm)
    assert replaced.data == {"c": "3"}
    stale = client.V1ConfigMap.from_dict(dict(support.configmap("conf", d="4"),
                                              metadata={"name": "conf",
                                                        "resourceVersion": cm.metadata.resource_version}))
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_config_map("conf", NS, stale)
    assert info.value.status == 409
    _deleted_status(core.delete_namespaced_config_map("conf", NS), "conf", "configmaps")
    _not_found(core.read_namespaced_config_map, "conf", NS)


def _apps(apps: client.AppsV1Api) -> None:
    dep = apps.create_namespaced_deployment(NS, client.V1Deployment.from_dict(support.deployment("api", 1)))
    assert isinstance(dep, client.V1Deployment)
    assert dep.spec is not None and dep.spec.replicas == 1
    assert dep.metadata is not None and dep.metadata.generation == 1

    scale = apps.patch_namespaced_deployment_scale("api", NS, {"spec": {"replicas": 3}})
    assert isinstance(scale, client.V1Scale)
    assert scale.spec is not None and scale.spec.replicas == 3
    assert scale.metadata is not None and scale.metadata.name == "api" and scale.metadata.resource_version
    read_scale = apps.read_namespaced_deployment_scale("api", NS)
    assert read_scale.spec is not None and read_scale.spec.replicas == 3
    assert read_scale.status is not None and read_scale.status.selector == "app=api"

    dep = apps.read_namespaced_deployment("api", NS)
    assert dep.spec is not None and dep.spec.replicas == 3
    assert dep.metadata is not None and dep.metadata.generation == 2
    assert [d.metadata.name for d in apps.list_namespaced_deployment(NS).items if d.metadata] == ["api"]
    _deleted_status(apps.delete_namespaced_deployment("api", NS), "api", "deployments")


def _resource(res: client.ResourceV1Api) -> None:
    # DeviceClass (cluster-scoped).
    dc = res.create_device_class(client.V1DeviceClass.from_dict(support.device_class()))
    assert isinstance(dc, client.V1DeviceClass) and dc.metadata is not None and dc.metadata.name == DRIVER
    assert res.read_device_class(DRIVER).spec is not None
    assert [d.metadata.name for d in res.list_device_class().items if d.metadata] == [DRIVER]
    dc = res.patch_device_class(DRIVER, {"metadata": {"labels": {"vendor": "example"}}})
    assert dc.metadata is not None and dc.metadata.labels == {"vendor": "example"}

    # ResourceClaim: CRUD and an allocation through the status subresource.
    rc = res.create_namespaced_resource_claim(
        NS, client.ResourceV1ResourceClaim.from_dict(support.resource_claim("gpu-claim")))
    assert isinstance(rc, client.ResourceV1ResourceClaim)
    assert rc.spec is not None and rc.spec.devices is not None and rc.spec.devices.requests is not None
    request = rc.spec.devices.requests[0]
    assert request.exactly is not None and request.exactly.device_class_name == DRIVER
    # Defaulted by the server as upstream does, and typed by the client.
    assert request.exactly.allocation_mode == "ExactCount" and request.exactly.count == 1
    assert res.read_namespaced_resource_claim("gpu-claim", NS).metadata is not None
    assert [c.metadata.name for c in res.list_namespaced_resource_claim(NS).items if c.metadata] == ["gpu-claim"]
    assert [c.metadata.name for c in res.list_resource_claim_for_all_namespaces().items
            if c.metadata] == ["gpu-claim"]
    rc = res.patch_namespaced_resource_claim("gpu-claim", NS, {"metadata": {"annotations": {"x": "y"}}})
    assert rc.metadata is not None and rc.metadata.annotations == {"x": "y"}
    rc.metadata.annotations = {"x": "z"}
    rc = res.replace_namespaced_resource_claim("gpu-claim", NS, rc)  # PUT with the current resourceVersion
    assert rc.metadata is not None and rc.metadata.annotations == {"x": "z"}

    rc = res.patch_namespaced_resource_claim_status(
        "gpu-claim", NS, {"status": {"allocation": support.allocation()}})
    assert rc.status is not None and rc.status.allocation is not None
    results = rc.status.allocation.devices.results if rc.status.allocation.devices else None
    assert results is not None and [(r.driver, r.pool, r.device) for r in results] == [
        (DRIVER, "node-1", "gpu-0")]
    selector = rc.status.allocation.node_selector
    assert selector is not None and selector.node_selector_terms[0].match_fields is not None
    st = res.read_namespaced_resource_claim_status("gpu-claim", NS)
    assert st.status is not None and st.status.allocation is not None
    # Writes to the main resource leave the status alone.
    rc = res.patch_namespaced_resource_claim("gpu-claim", NS, {"status": None,
                                                               "metadata": {"labels": {"a": "b"}}})
    assert rc.status is not None and rc.status.allocation is not None

    # ResourceClaimTemplate.
    tpl = res.create_namespaced_resource_claim_template(
        NS, client.V1ResourceClaimTemplate.from_dict(support.resource_claim_template("gpu-tpl")))
    assert tpl.spec is not None and tpl.spec.spec is not None
    assert res.read_namespaced_resource_claim_template("gpu-tpl", NS).metadata is not None
    assert [t.metadata.name for t in res.list_namespaced_resource_claim_template(NS).items
            if t.metadata] == ["gpu-tpl"]
    tpl = res.patch_namespaced_resource_claim_template("gpu-tpl", NS, {"metadata": {"labels": {"k": "v"}}})
    assert tpl.metadata is not None and tpl.metadata.labels == {"k": "v"}

    # ResourceSlice (cluster-scoped; spec.nodeName is a field selector).
    rs = res.create_resource_slice(client.V1ResourceSlice.from_dict(support.resource_slice("node-1-gpu")))
    assert rs.spec is not None and rs.spec.devices is not None and rs.spec.devices[0].name == "gpu-0"
    assert res.read_resource_slice("node-1-gpu").spec is not None
    on_node = res.list_resource_slice(field_selector="spec.nodeName=node-1")
    assert [s.metadata.name for s in on_node.items if s.metadata] == ["node-1-gpu"]
    assert res.list_resource_slice(field_selector="spec.nodeName=node-2").items == []
    rs = res.patch_resource_slice("node-1-gpu", {"metadata": {"labels": {"node": "node-1"}}})
    assert rs.metadata is not None and rs.metadata.labels == {"node": "node-1"}

    # DeviceTaintRule (cluster-scoped, status subresource).
    rule = res.create_device_taint_rule(client.V1DeviceTaintRule.from_dict(support.device_taint_rule("bad-gpu")))
    assert rule.spec is not None and rule.spec.taint.key == "example.com/unhealthy"
    assert rule.spec.taint.effect == "NoSchedule"
    assert res.read_device_taint_rule("bad-gpu").metadata is not None
    assert [r.metadata.name for r in res.list_device_taint_rule().items if r.metadata] == ["bad-gpu"]
    rule = res.patch_device_taint_rule("bad-gpu", {"metadata": {"labels": {"severity": "high"}}})
    assert rule.metadata is not None and rule.metadata.labels == {"severity": "high"}
    assert res.read_device_taint_rule_status("bad-gpu").metadata is not None

    # Deletes: DeviceTaintRule answers a Status; the other DRA kinds answer the deleted object
    # (upstream stores with ReturnDeletedObject, as the generated response types say).
    _deleted_status(res.delete_device_taint_rule("bad-gpu"), "bad-gpu", "devicetaintrules")
    _not_found(res.read_device_taint_rule, "bad-gpu")
    for call, args, read, model in (
        (res.delete_resource_slice, ("node-1-gpu",), res.read_resource_slice, client.V1ResourceSlice),
        (res.delete_namespaced_resource_claim_template, ("gpu-tpl", NS),
         res.read_namespaced_resource_claim_template, client.V1ResourceClaimTemplate),
        (res.delete_namespaced_resource_claim, ("gpu-claim", NS), res.read_namespaced_resource_claim,
         client.ResourceV1ResourceClaim),
        (res.delete_device_class, (DRIVER,), res.read_device_class, client.V1DeviceClass),
    ):
        gone = call(*args)
        assert isinstance(gone, model) and gone.metadata is not None and gone.metadata.name == args[0]
        _not_found(read, *args)


def _watch(core: client.CoreV1Api, res: client.ResourceV1Api) -> None:
    # Replay from a list's resourceVersion: ADDED, MODIFIED, DELETED, typed.
    rv = core.list_namespaced_config_map(NS).metadata.resource_version  # type: ignore[union-attr]
    core.create_namespaced_config_map(NS, client.V1ConfigMap.from_dict(support.configmap("w", a="1")))
    core.patch_namespaced_config_map("w", NS, {"data": {"a": "2"}})
    core.delete_namespaced_config_map("w", NS)
    w = watch.Watch()
    events: list[tuple[str, str | None, dict[str, str] | None]] = []
    for ev in w.stream(core.list_namespaced_config_map, NS, resource_version=rv, timeout_seconds=5):
        obj = ev["object"]
        assert isinstance(obj, client.V1ConfigMap), obj
        events.append((ev["type"], obj.metadata.name if obj.metadata else None, obj.data))
        if ev["type"] == "DELETED":
            w.stop()
    assert events == [("ADDED", "w", {"a": "1"}), ("MODIFIED", "w", {"a": "2"}), ("DELETED", "w", {"a": "2"})]

    # Without a resourceVersion: synthetic ADDED for what exists, ending at the server timeout.
    res.create_namespaced_resource_claim(NS, client.ResourceV1ResourceClaim.from_dict(support.resource_claim("c1")))
    # Client bug: Watch derives the item model "V1ResourceClaim" from "V1ResourceClaimList", but the
    # model is named ResourceV1ResourceClaim; so name it explicitly.
    w = watch.Watch(return_type=client.ResourceV1ResourceClaim)
    got = [(ev["type"], ev["object"]) for ev in
           w.stream(res.list_namespaced_resource_claim, NS, timeout_seconds=1)]
    assert [(t, o.metadata.name) for t, o in got] == [("ADDED", "c1")]
    assert isinstance(got[0][1], client.ResourceV1ResourceClaim)
    res.delete_namespaced_resource_claim("c1", NS)


def _dynamic(api_client: client.ApiClient, cache: Path) -> None:
    dyn = dynamic.DynamicClient(api_client, cache_file=str(cache))
    assert dyn.version["kubernetes"]["minor"] == "37"
    claims = dyn.resources.get(api_version="resource.k8s.io/v1", kind="ResourceClaim")
    assert claims.namespaced and claims.name == "resourceclaims"
    assert claims.subresources["status"] is not None
    dyn.create(claims, body=support.resource_claim("dyn"), namespace=NS)
    one = dyn.get(claims, name="dyn", namespace=NS)
    assert one.kind == "ResourceClaim" and one.metadata.name == "dyn"
    listed = dyn.get(claims, namespace=NS)
    assert listed.kind == "ResourceClaimList" and [i.metadata.name for i in listed.items] == ["dyn"]
    pods = dyn.resources.get(api_version="v1", kind="Pod")
    assert pods.namespaced and pods.short_names == ["po"]
    assert dyn.get(pods, namespace=NS).items == []
    deploys = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    assert set(deploys.subresources) == {"status", "scale"}
    slices = dyn.resources.get(api_version="resource.k8s.io/v1", kind="ResourceSlice")
    assert not slices.namespaced
    dyn.delete(claims, name="dyn", namespace=NS)


def run(kubeconfig: Path, workdir: Path) -> None:
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    with api_client:
        core = client.CoreV1Api(api_client)
        res = client.ResourceV1Api(api_client)
        _core(core)
        _apps(client.AppsV1Api(api_client))
        _resource(res)
        _watch(core, res)
        _dynamic(api_client, workdir / "discovery-cache.json")


async def scenario(cluster: support.Cluster, workdir: Path) -> None:
    await asyncio.to_thread(run, cluster.kubeconfig, workdir)


async def test_kubernetes_client(cluster: support.Cluster, tmp_path: Path) -> None:
    await scenario(cluster, tmp_path)
