"""A small kopf operator for the cplane sandbox: a `GPUPool` (ops.example.com/v1, crd.yaml) becomes a
ResourceClaimTemplate asking for `spec.count` devices of `spec.deviceClassName`, owned by the pool
(the garbage collector deletes it with the pool), and the pool's status says what was made, written
through the `/status` subresource (kopf patches `status` there when discovery lists it).

Run it against `make run` (README.md):

    kopf run --standalone --all-namespaces examples/gpupool-operator/gpupool_operator.py

It talks to the server twice over: kopf watches GPUPools and patches their status; the cplane client
(`controllers.runtime.client`, from the same kubeconfig) writes the templates.
"""

from __future__ import annotations

from typing import Any

import kopf

from controllers.runtime import client as clients
from cp import errors

GROUP, VERSION, PLURAL = "ops.example.com", "v1", "gpupools"
TEMPLATES = "resourceclaimtemplates.resource.k8s.io"
FIELD_MANAGER = "gpupool-operator"


def template_name(pool: str) -> str:
    return f"{pool}-gpus"


def template_for(pool: kopf.Body) -> dict[str, Any]:
    """The ResourceClaimTemplate a pool stands for: `count` devices of its class, owned by the pool."""
    spec = pool.get("spec") or {}
    meta = pool["metadata"]
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": template_name(meta["name"]), "namespace": meta["namespace"],
            "labels": {"ops.example.com/pool": meta["name"]},
            "ownerReferences": [{"apiVersion": pool["apiVersion"], "kind": pool["kind"], "name": meta["name"],
                                 "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {"spec": {"devices": {"requests": [{
            "name": "gpus",
            "exactly": {"deviceClassName": spec["deviceClassName"], "allocationMode": "ExactCount",
                        "count": int(spec["count"])},
        }]}}},
    }


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """The server and credentials of $KUBECONFIG (`make run` writes .cplane/kubeconfig), read by kopf's
    own parser: no client library needed, and the same file the cplane client below reads."""
    return kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup()
async def connect(memo: kopf.Memo, settings: kopf.OperatorSettings, **_: Any) -> None:
    # Handler progress in annotations only: the pool's status holds what its schema says, nothing else.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage()
    memo.client = clients.Client.from_kubeconfig(user_agent="gpupool-operator")


@kopf.on.cleanup()
async def disconnect(memo: kopf.Memo, **_: Any) -> None:
    await memo.client.close()


@kopf.on.resume(GROUP, VERSION, PLURAL)
@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec")
async def reconcile(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: Any, **_: Any) -> None:
    """Make the pool's template match its spec (a template's spec is immutable: a changed one is
    replaced), then report it in the pool's status."""
    client: clients.Client = memo.client
    wanted = template_for(body)
    name, namespace = wanted["metadata"]["name"], wanted["metadata"]["namespace"]
    try:
        current = await client.get(TEMPLATES, name, namespace=namespace)
    except errors.NotFound:
        current = None
    if current is not None and current.get("spec") != wanted["spec"]:
        await client.delete(TEMPLATES, name, namespace=namespace,
                            preconditions={"uid": current["metadata"]["uid"]})
        current = None
        logger.info(f"replacing template {name}: the pool's spec changed")
    if current is None:
        try:
            await client.create(TEMPLATES, wanted, namespace=namespace, field_manager=FIELD_MANAGER)
        except errors.AlreadyExists:
            raise kopf.TemporaryError("the old template is still being deleted", delay=1) from None
        except errors.Invalid as exc:
            patch.status.update(phase="Failed", message=exc.message, template=None,
                                observedGeneration=body["metadata"].get("generation"))
            raise kopf.PermanentError(exc.message) from None
        kopf.info(body, reason="TemplateCreated", message=f"ResourceClaimTemplate {name} asks for "
                                                          f"{body['spec']['count']} x {body['spec']['deviceClassName']}")
    patch.status.update(phase="Ready", template=name, message=None,
                        observedGeneration=body["metadata"].get("generation"))
