"""Builders and reads for the batch controller tests."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from controllers.fleet import objects as fleet_objects
from controllers.runtime import client as clients
from tests import waiting

JOBS = "jobs.batch"
CRONJOBS = "cronjobs.batch"
eventually = functools.partial(waiting.eventually, within=15.0)


def job(name: str, *, run: float = 10, exit_code: int | None = None, claim_template: str | None = None,
        ns: str = "default", **spec: Any) -> dict[str, Any]:
    """A Job whose pods run `run` seconds of virtual time on the fleet and exit with `exit_code`."""
    annotations = {fleet_objects.RUN_SECONDS: str(run)}
    if exit_code is not None:
        annotations[fleet_objects.EXIT_CODE] = str(exit_code)
    container: dict[str, Any] = {"name": "main", "image": "busybox"}
    pod_spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    if claim_template is not None:
        pod_spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": claim_template}]
        container["resources"] = {"claims": [{"name": "gpu"}]}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
            "spec": {"template": {"metadata": {"annotations": annotations}, "spec": pod_spec}, **spec}}


async def pods_of(client: clients.Client, job_name: str, ns: str = "default") -> list[dict[str, Any]]:
    items = (await client.list("pods", namespace=ns, label_selector=f"batch.kubernetes.io/job-name={job_name}")).items
    return sorted(items, key=lambda p: p["metadata"]["name"])


def phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def condition(obj: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
    return next((dict(c) for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == type_), None)


async def get_job(client: clients.Client, name: str, ns: str = "default") -> dict[str, Any]:
    return await client.get(JOBS, name, namespace=ns)


async def job_condition(client: clients.Client, name: str, type_: str) -> dict[str, Any] | None:
    """The Job once it has condition `type_` True (None before)."""
    obj = await get_job(client, name)
    c = condition(obj, type_)
    return obj if c is not None and c.get("status") == "True" else None


async def running(client: clients.Client, job_name: str, count: int) -> list[dict[str, Any]] | None:
    """The Job's Running pods once there are exactly `count` of them, nothing else active."""
    pods = [p for p in await pods_of(client, job_name) if not p["metadata"].get("deletionTimestamp")
            and phase(p) not in ("Succeeded", "Failed")]
    return pods if len(pods) == count and all(phase(p) == "Running" for p in pods) else None


async def events(client: clients.Client, name: str, ns: str = "default") -> list[tuple[str, str, str]]:
    items = (await client.list("events", namespace=ns)).items
    out = [(e["type"], e["reason"], e["message"]) for e in items
           if e["involvedObject"].get("name") == name]
    return out


async def job_failed_count(client: clients.Client, name: str, count: int) -> bool:
    return int((await get_job(client, name)).get("status", {}).get("failed") or 0) == count


async def no_pods(client: clients.Client, job_name: str, *, terminal_ok: bool = False) -> bool:
    """No pod of the Job left (or, with terminal_ok, none that is not Succeeded/Failed)."""
    pods = await pods_of(client, job_name)
    if terminal_ok:
        pods = [p for p in pods if phase(p) not in ("Succeeded", "Failed")]
    return not pods


async def all_deleting(client: clients.Client, job_name: str) -> bool:
    pods = await pods_of(client, job_name)
    return bool(pods) and all(p["metadata"].get("deletionTimestamp") for p in pods)
