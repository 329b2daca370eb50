"""CustomResourceDefinitions served by the API server (`api/crds.py`): names accepted and the definition
established, its resources served at once (CRUD, status, scale, discovery), its instances deleted with
it, and it all with no controller running, as kube-apiserver's own apiextensions controllers do."""

from __future__ import annotations

import copy
import json
from typing import Any

import aiohttp

from tests import waiting
from tests.crds import WIDGETS

AGG = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"



async def _json(resp: aiohttp.ClientResponse) -> Any:
    return json.loads(await resp.read())


async def establish(http: aiohttp.ClientSession, crd: dict[str, Any]) -> dict[str, Any]:
    async with http.post(CRDS, json=crd) as resp:
        assert resp.status == 201, await resp.text()
    name = crd["metadata"]["name"]

    async def established() -> dict[str, Any] | None:
        async with http.get(f"{CRDS}/{name}") as resp:
            got = await _json(resp)
        conds = {c["type"]: c["status"] for c in (got.get("status") or {}).get("conditions") or []}
        return got if conds.get("Established") == "True" else None

    return await waiting.eventually(established, within=5.0)


async def test_a_definition_is_named_established_and_served(http: aiohttp.ClientSession) -> None:
    crd = await establish(http, WIDGETS)
    status = crd["status"]
    assert status["acceptedNames"]["kind"] == "Widget"
    assert status["acceptedNames"]["shortNames"] == ["wd"]
    assert status["storedVersions"] == ["v1"]
    conds = {c["type"]: c for c in status["conditions"]}
    assert conds["NamesAccepted"]["reason"] == "NoConflicts"
    assert conds["Established"]["reason"] == "InitialNamesAccepted"

    base = "/apis/example.com/v1/namespaces/default/widgets"
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
              "spec": {"replicas": 2, "color": "blue"}, "status": {"replicas": 9}}
    async with http.post(base, json=widget) as resp:
        assert resp.status == 201, await resp.text()
        created = await _json(resp)
    assert "status" not in created  # status is a subresource: not set on create
    assert created["metadata"]["generation"] == 1
    async with http.get(f"{base}/w1") as resp:
        assert (await _json(resp))["spec"] == {"replicas": 2, "color": "blue"}
    async with http.get("/apis/example.com/v1/widgets") as resp:
        listed = await _json(resp)
    assert listed["kind"] == "WidgetList" and [i["metadata"]["name"] for i in listed["items"]] == ["w1"]

    # status subresource: only status changes; the main resource keeps status
    current = copy.deepcopy(created)
    current["status"] = {"replicas": 2, "selector": "app=w1"}
    current["spec"]["color"] = "red"
    async with http.put(f"{base}/w1/status", json=current) as resp:
        assert resp.status == 200, await resp.text()
        written = await _json(resp)
    assert written["status"] == {"replicas": 2, "selector": "app=w1"}
    assert written["spec"]["color"] == "blue" and written["metadata"]["generation"] == 1
    async with http.patch(f"{base}/w1", data=json.dumps({"spec": {"color": "green"}, "status": {"replicas": 0}}),
                          headers={"Content-Type": "application/merge-patch+json"}) as resp:
        patched = await _json(resp)
    assert patched["spec"]["color"] == "green" and patched["status"]["replicas"] == 2
    assert patched["metadata"]["generation"] == 2

    # scale subresource
    async with http.get(f"{base}/w1/scale") as resp:
        scale = await _json(resp)
    assert scale["spec"]["replicas"] == 2 and scale["status"] == {"replicas": 2, "selector": "app=w1"}
    async with http.patch(f"{base}/w1/scale", data=json.dumps({"spec": {"replicas": 5}}),
                          headers={"Content-Type": "application/merge-patch+json"}) as resp:
        assert resp.status == 200, await resp.text()
    async with http.get(f"{base}/w1") as resp:
        assert (await _json(resp))["spec"]["replicas"] == 5


async def test_discovery_lists_the_new_resource(http: aiohttp.ClientSession) -> None:
    await establish(http, WIDGETS)
    async with http.get("/apis", headers={"Accept": AGG}) as resp:
        doc = await _json(resp)
    groups = {g["metadata"]["name"]: g for g in doc["items"]}
    (version,) = groups["example.com"]["versions"]
    (widgets,) = version["resources"]
    assert widgets["resource"] == "widgets" and widgets["shortNames"] == ["wd"]
    assert widgets["categories"] == ["all"]
    assert {s["subresource"] for s in widgets["subresources"]} == {"status", "scale"}
    async with http.get("/apis/example.com/v1") as resp:
        legacy = await _json(resp)
    assert [r["name"] for r in legacy["resources"]] == ["widgets", "widgets/scale", "widgets/status"]


async def test_conflicting_names_are_not_accepted(http: aiohttp.ClientSession) -> None:
    await establish(http, WIDGETS)
    other = copy.deepcopy(WIDGETS)
    other["metadata"]["name"] = "gadgets.example.com"
    other["spec"]["names"] = {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "shortNames": ["wd"]}
    async with http.post(CRDS, json=other) as resp:
        assert resp.status == 201

    async def named() -> dict[str, Any] | None:
        async with http.get(f"{CRDS}/gadgets.example.com") as resp:
            got = await _json(resp)
        conds = {c["type"]: c for c in (got.get("status") or {}).get("conditions") or []}
        return conds if "NamesAccepted" in conds else None

    conds = await waiting.eventually(named, within=5.0)
    assert conds["NamesAccepted"]["status"] == "False"
    assert conds["NamesAccepted"]["reason"] == "ShortNamesConflict"
    assert conds["NamesAccepted"]["message"] == '"wd" is already in use'
    assert conds["Established"]["status"] == "False"
    async with http.get("/apis/example.com/v1/gadgets") as resp:
        assert resp.status == 404


async def test_deleting_the_definition_deletes_its_instances(http: aiohttp.ClientSession) -> None:
    await establish(http, WIDGETS)
    base = "/apis/example.com/v1/namespaces/default/widgets"
    for name in ("a", "b"):
        async with http.post(base, json={"apiVersion": "example.com/v1", "kind": "Widget",
                                         "metadata": {"name": name}}) as resp:
            assert resp.status == 201
    async with http.delete(f"{CRDS}/widgets.example.com") as resp:
        assert resp.status == 200, await resp.text()
        deleting = await _json(resp)
    assert "customresourcecleanup.apiextensions.k8s.io" in deleting["metadata"]["finalizers"]

    async def gone() -> bool:
        async with http.get(f"{CRDS}/widgets.example.com") as resp:
            return resp.status == 404

    await waiting.eventually(gone, within=5.0)
    async with http.get("/apis/example.com/v1/widgets") as resp:
        assert resp.status == 404
    # its instances went first: the log holds their deletion
    async with http.post(CRDS, json=WIDGETS) as resp:
        assert resp.status == 201


async def test_several_versions_are_served_from_one_storage(http: aiohttp.ClientSession) -> None:
    crd = copy.deepcopy(WIDGETS)
    v1 = crd["spec"]["versions"][0]
    beta = {**copy.deepcopy(v1), "name": "v1beta1", "storage": False}
    crd["spec"]["versions"] = [beta, v1]
    await establish(http, crd)
    async with http.post("/apis/example.com/v1beta1/namespaces/default/widgets",
                         json={"apiVersion": "example.com/v1beta1", "kind": "Widget", "metadata": {"name": "old"},
                               "spec": {"replicas": 1}}) as resp:
        assert resp.status == 201, await resp.text()
        assert (await _json(resp))["apiVersion"] == "example.com/v1beta1"
    async with http.get("/apis/example.com/v1/namespaces/default/widgets/old") as resp:
        stored = await _json(resp)
    assert stored["apiVersion"] == "example.com/v1" and stored["spec"] == {"replicas": 1}
    async with http.get("/apis/example.com/v1beta1/widgets") as resp:
        listed = await _json(resp)
    assert [i["apiVersion"] for i in listed["items"]] == ["example.com/v1beta1"]
    async with http.get("/apis/example.com") as resp:
        group = await _json(resp)
    assert group["preferredVersion"]["version"] == "v1"
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]


async def test_objects_keep_their_version_after_the_storage_version_changes(http: aiohttp.ClientSession) -> None:
    crd = copy.deepcopy(WIDGETS)
    v1 = crd["spec"]["versions"][0]
    crd["spec"]["versions"] = [{**copy.deepcopy(v1), "name": "v1beta1"}]
    await establish(http, crd)
    async with http.post("/apis/example.com/v1beta1/namespaces/default/widgets",
                         json={"apiVersion": "example.com/v1beta1", "kind": "Widget",
                               "metadata": {"name": "w"}}) as resp:
        assert resp.status == 201
    async with http.get(f"{CRDS}/widgets.example.com") as resp:
        current = await _json(resp)
    current["spec"]["versions"] = [{**copy.deepcopy(v1), "name": "v1beta1", "storage": False}, v1]
    async with http.put(f"{CRDS}/widgets.example.com", json=current) as resp:
        assert resp.status == 200, await resp.text()

    async def served() -> dict[str, Any] | None:
        async with http.get("/apis/example.com/v1/namespaces/default/widgets/w") as resp:
            return await _json(resp) if resp.status == 200 else None

    got = await waiting.eventually(served, within=5.0)
    assert got["apiVersion"] == "example.com/v1"  # stored as v1beta1, served as v1
    async with http.get(f"{CRDS}/widgets.example.com") as resp:
        assert (await _json(resp))["status"]["storedVersions"] == ["v1beta1", "v1"]


async def test_a_list_is_of_the_definitions_list_kind(http: aiohttp.ClientSession) -> None:
    crd = copy.deepcopy(WIDGETS)
    crd["spec"]["names"]["listKind"] = "WidgetCollection"
    await establish(http, crd)
    async with http.get("/apis/example.com/v1/widgets") as resp:
        assert (await _json(resp))["kind"] == "WidgetCollection"


async def test_a_protected_group_needs_the_approval_annotation(http: aiohttp.ClientSession) -> None:
    crd = copy.deepcopy(WIDGETS)
    crd["metadata"]["name"] = "widgets.example.k8s.io"
    crd["spec"]["group"] = "example.k8s.io"  # (x-k8s.io is the unprotected one)
    async with http.post(CRDS, json=crd) as resp:
        assert resp.status == 422
        status = await _json(resp)
    assert status["details"]["causes"] == [{
        "reason": "FieldValueRequired", "field": "metadata.annotations[api-approved.kubernetes.io]",
        "message": 'Required value: protected groups must have approval annotation "api-approved.kubernetes.io", '
                   "see https://github.com/kubernetes/enhancements/pull/1111"}]
    crd["metadata"]["annotations"] = {"api-approved.kubernetes.io": "unapproved, experimental-only"}
    got = await establish(http, crd)
    conds = {c["type"]: c for c in got["status"]["conditions"]}
    assert conds["KubernetesAPIApprovalPolicyConformant"]["status"] == "False"
    assert conds["KubernetesAPIApprovalPolicyConformant"]["reason"] == "UnapprovedAnnotation"
    assert conds["KubernetesAPIApprovalPolicyConformant"]["message"] == 'not approved: "unapproved, experimental-only"'
