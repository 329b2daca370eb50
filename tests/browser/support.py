"""Objects the browser tests create: a claim template, a Deployment using it, a lone pod with a claim,
DeviceTaintRules; and reads of what the cluster allocated, to compare the page with."""

from __future__ import annotations

from typing import Any

from cp import testing

TEMPLATES = "resourceclaimtemplates.resource.k8s.io"
CLAIMS = "resourceclaims.resource.k8s.io"
RULES = "devicetaintrules.resource.k8s.io"


def template(name: str, *, count: int = 1, namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": count}}]}}}}


def deployment(name: str, *, replicas: int, claim_template: str, namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {
                         "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": claim_template}],
                         "containers": [{"name": "main", "image": "registry.example.com/app:1",
                                         "resources": {"claims": [{"name": "gpus"}]}}]}}}}


def pod(name: str, *, claim_template: str, namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {
        "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": claim_template}],
        "containers": [{"name": "main", "image": "registry.example.com/app:1",
                        "resources": {"claims": [{"name": "gpus"}]}}]}}


def taint_rule(name: str, device_id: str, *, effect: str = "NoSchedule") -> dict[str, Any]:
    driver, pool, device = device_id.split("/")
    return {"metadata": {"name": name}, "spec": {
        "deviceSelector": {"driver": driver, "pool": pool, "device": device},
        "taint": {"key": "example.com/maintenance", "value": "true", "effect": effect}}}


async def run_deployment(client: Any, name: str, *, replicas: int, count: int = 1,
                         namespace: str = "default") -> list[dict[str, Any]]:
    """Create a Deployment of `replicas` pods, each with a claim of `count` GPUs, and wait until every
    pod is bound with its claim allocated; its pods."""
    await client.create(TEMPLATES, template(name, count=count, namespace=namespace), namespace=namespace)
    await client.create("deployments.apps", deployment(name, replicas=replicas, claim_template=name,
                                                       namespace=namespace), namespace=namespace)

    async def bound() -> list[dict[str, Any]] | None:
        pods = [p for p in (await client.list("pods", namespace=namespace)).items
                if p["metadata"]["name"].startswith(f"{name}-")]
        done = [p for p in pods if p["spec"].get("nodeName") and p["status"].get("resourceClaimStatuses")]
        return done if len(done) == replicas == len(pods) else None

    result: list[dict[str, Any]] = await testing.eventually(bound, within=30, what=f"{replicas} pods of {name} bound")
    return result


async def devices_of(client: Any, pod: dict[str, Any]) -> tuple[str, list[str]]:
    """A bound pod's claim ("NS/NAME") and its allocated devices ("DRIVER/POOL/DEVICE")."""
    namespace = pod["metadata"]["namespace"]
    claim_name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    claim = await client.get(CLAIMS, claim_name, namespace=namespace)
    results = claim["status"]["allocation"]["devices"]["results"]
    return f"{namespace}/{claim_name}", [f"{r['driver']}/{r['pool']}/{r['device']}" for r in results]
