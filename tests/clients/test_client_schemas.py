"""Cross-cutting: every object the server returns validates against the official Kubernetes 1.37
JSON schema of its kind, in strict mode (unknown fields fail), from `kubernetes-validate==1.37.0`, and
deserializes in the typed clients (`kubernetes` 37 with client-side validation, lightkube's models).

In scope: each client scenario re-run behind a recording proxy (`support.Wiretap`) — response bodies
and every watch-event object, Status answers included — and one object, GET, LIST (namespaced and
across namespaces), subresources and DELETE of each stored built-in kind (samples: tests/samples.py),
plus discovery documents.
Out of scope: client behaviour (the test_client_* modules); tables (Python clients never ask).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import kubernetes_validate
import pytest

from cp import resources as res
from tests import samples as sample_objects
from tests.clients import (
    support,
    test_client_kopf,
    test_client_kr8s,
    test_client_kubernetes,
    test_client_kubernetes_asyncio,
    test_client_lightkube,
)

Scenario = Callable[[support.Cluster, Path], Awaitable[None]]
NS = "schemas"


def _report(wiretap: support.Wiretap) -> None:
    assert wiretap.captured, "the proxy recorded nothing"
    problems = wiretap.problems()
    assert not problems, f"{len(problems)} schema violation(s):\n" + "\n".join(problems)


def test_schema_check_agrees_with_kubernetes_validate() -> None:
    good = support.resource_claim("x")
    assert support.schema_problems(good) == []
    support.check_against_library(good)
    bad = support.resource_claim("x")
    bad["spec"]["devices"]["requests"][0]["exactly"]["bogus"] = 1
    assert support.schema_problems(bad) == [
        "spec.devices.requests.0.exactly: Additional properties are not allowed ('bogus' was unexpected)"]
    with pytest.raises(kubernetes_validate.ValidationError):
        support.check_against_library(bad)
    assert support.schema_problems({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                    "status": "Failure", "code": 404, "reason": "NotFound"}) == []
    assert support.schema_problems({"kind": "Nope", "apiVersion": "v1"}) == ["no 1.37 schema for Nope v1"]


def test_every_stored_kind_has_typed_models() -> None:
    """So that `typed_problems` checks every kind: a model in `kubernetes` 37 (object and list) and in
    lightkube."""
    missing = []
    for kind in res.KINDS:
        if kind.group == res.SIM_GROUP or not kind.stored:
            continue
        found = (support.typed_model(kind.api_version, kind.kind), support.typed_model(kind.api_version, kind.list_kind),
                 support.lightkube_model(kind.api_version, kind.kind))
        if not all(found):
            missing.append(f"{kind.kind}: {found}")
    assert not missing
    assert support.typed_model("v1", "Event") == "CoreV1Event"
    assert support.typed_model("resource.k8s.io/v1", "ResourceClaim") == "ResourceV1ResourceClaim"
    assert support.typed_model("resource.k8s.io/v1", "ResourceClaimList") == "V1ResourceClaimList"


@pytest.mark.parametrize("scenario", [
    pytest.param(test_client_kubernetes.scenario, id="kubernetes"),
    pytest.param(test_client_kubernetes_asyncio.scenario, id="kubernetes_asyncio"),
    pytest.param(test_client_lightkube.scenario, id="lightkube"),
    pytest.param(test_client_kr8s.scenario, id="kr8s", marks=test_client_kr8s.KR8S_VERSION_WARNING),
    pytest.param(functools.partial(test_client_kopf.scenario, initial_streaming=False), id="kopf"),
])
async def test_client_scenario_responses_match_schemas(scenario: Scenario, tapped: support.Cluster,
                                                       wiretap: support.Wiretap, tmp_path: Path) -> None:
    await scenario(tapped, tmp_path)
    _report(wiretap)


# ------------------------------------------------------------------------ every served resource


async def _call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None,
                content_type: str | None = None) -> tuple[int, Any]:
    headers = {"Content-Type": content_type} if content_type else None
    async with http.request(method, path, json=body, headers=headers) as r:
        return r.status, await r.json(content_type=None)


async def test_every_served_resource_validates(tapped: support.Cluster, wiretap: support.Wiretap) -> None:
    samples = sample_objects.samples(NS)
    # The sandbox's own kinds have no upstream schema; computed resources and reviews are not objects.
    kinds = [k for k in res.KINDS if k.group != res.SIM_GROUP and k.stored]
    assert not {(k.group, k.plural) for k in kinds} - samples.keys(), "a served kind without a sample (tests/samples.py)"
    async with aiohttp.ClientSession(base_url=tapped.url) as http:
        # Discovery documents.
        for path in ("/api", "/apis", "/api/v1", *{f"/apis/{k.group}" for k in res.KINDS if k.group},
                     *{f"/apis/{k.group_version}" for k in res.KINDS if k.group}):
            code, _ = await _call(http, "GET", path)
            assert code == 200, path
        code, _ = await _call(http, "POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
        assert code == 201

        for kind in kinds:
            base = kind.path_prefix() + (f"/namespaces/{NS}" if kind.namespaced else "") + f"/{kind.plural}"
            obj = samples[(kind.group, kind.plural)]
            name = obj["metadata"]["name"]
            code, created = await _call(http, "POST", base, obj)
            assert code == 201, (base, created)
            for path in (f"{base}/{name}", base, f"{kind.path_prefix()}/{kind.plural}"):
                code, body = await _call(http, "GET", path)
                assert code == 200, (path, body)
            for sub in kind.subresources:
                if "get" not in sub.verbs:  # create-only: binding, eviction
                    continue
                if kind.plural == "pods" and sub.name in ("log", "exec", "attach", "portforward"):
                    continue  # streams from the pod's kubelet, not objects (tests/kubectl/test_container_surface.py)
                code, body = await _call(http, "GET", f"{base}/{name}/{sub.name}")
                assert code == 200, (base, sub.name, body)
            code, body = await _call(http, "PATCH", f"{base}/{name}", {"metadata": {"labels": {"p": "1"}}},
                                     "application/merge-patch+json")
            assert code == 200, body
            code, body = await _call(http, "GET", f"{base}/{name}-missing")
            assert code == 404, body
        for kind in reversed(kinds):
            base = kind.path_prefix() + (f"/namespaces/{NS}" if kind.namespaced else "") + f"/{kind.plural}"
            name = samples[(kind.group, kind.plural)]["metadata"]["name"]
            code, body = await _call(http, "DELETE", f"{base}/{name}")
            assert code in (200, 202), (base, body)
    _report(wiretap)
