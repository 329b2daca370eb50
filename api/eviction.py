"""`pods/{name}/eviction`: delete a pod unless that would violate its PodDisruptionBudget, as
kube-apiserver's EvictionREST (`pkg/registry/core/pod/storage/eviction.go`).

A pod that is finished, Pending or already terminating is deleted without a budget check. Otherwise
the budgets of its namespace whose selector matches it are read: none, and the pod is deleted; more
than one, and the answer is upstream's Status with code 500; one, and its `status.disruptionsAllowed`
is spent (written through the budget's status with optimistic concurrency, the pod recorded in
`status.disruptedPods` for the disruption controller) before the pod is deleted with the eviction's
DeleteOptions — or the eviction is refused with 429 TooManyRequests and a `DisruptionBudget` cause.
An unready pod does not spend the budget when the budget allows it (`unhealthyPodEvictionPolicy`);
it is then deleted only if it is still the version read (a pod that turned ready meanwhile is a 429).
What is pure (which budgets, the check, the new status) is `cp.disruption`.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import structlog

from api import store as stores
from cp import disruption, errors
from cp import resources as res

logger = structlog.get_logger("cplane.api.eviction")

_decode = msgspec.json.Decoder().decode

PODS = res.lookup("", "v1", "pods")
PDBS = res.lookup("policy", "v1", "poddisruptionbudgets")
ACCEPTED_VERSIONS = ("policy/v1", "policy/v1beta1")


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """What the handler answers: a Status body and its HTTP code."""

    status: dict[str, Any]
    code: int


def check_eviction(eviction: dict[str, Any], *, namespace: str, name: str) -> None:
    """The body is a policy/v1 or policy/v1beta1 Eviction naming the pod of the URL (and its
    namespace, when it names one)."""
    kind = eviction.get("kind")
    api_version = eviction.get("apiVersion")
    if kind and kind != "Eviction":
        raise errors.BadRequest(f'the kind in the data ("{kind}") does not match the expected kind ("Eviction")')
    if api_version and api_version not in ACCEPTED_VERSIONS:
        raise errors.BadRequest(
            f"the API version in the data ({api_version}) does not match the expected API version (policy/v1)")
    meta = eviction.get("metadata")
    got_ns = meta.get("namespace") if isinstance(meta, dict) else None
    if got_ns and got_ns != namespace:
        raise errors.BadRequest("the namespace of the provided object does not match the namespace sent on the "
                                "request")
    got = meta.get("name") if isinstance(meta, dict) else None
    if (got or "") != name:
        raise errors.BadRequest("name in URL does not match name in Eviction object")


def delete_options(eviction: dict[str, Any], *, query_dry_run: list[str]) -> dict[str, Any]:
    """The eviction's DeleteOptions with the request's dryRun propagated into them (upstream's
    `propagateDryRun`): either may name it, both only alike."""
    raw = eviction.get("deleteOptions")
    if raw is None:
        return {"dryRun": list(query_dry_run)} if query_dry_run else {}
    if not isinstance(raw, dict):
        raise errors.BadRequest("invalid Eviction: deleteOptions must be an object")
    opts = copy.deepcopy(raw)
    body_dry = opts.get("dryRun") or []
    if not body_dry:
        if query_dry_run:
            opts["dryRun"] = list(query_dry_run)
        return opts
    if query_dry_run and list(query_dry_run) != list(body_dry):
        raise errors.BadRequest(f"Non-matching dry-run options in request and content: "
                                f"[{' '.join(query_dry_run)}] and [{' '.join(map(str, body_dry))}]")
    return opts


def _rv_unset(opts: dict[str, Any]) -> bool:
    pre = opts.get("preconditions")
    return not isinstance(pre, dict) or pre.get("resourceVersion") is None


def _with_rv(opts: dict[str, Any], rv: str) -> dict[str, Any]:
    out = copy.deepcopy(opts)
    pre = out.get("preconditions")
    out["preconditions"] = {**(pre if isinstance(pre, dict) else {}), "resourceVersion": rv}
    return out


def _success() -> Outcome:
    return Outcome(status={"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                           "code": 201}, code=201)


async def _budgets(store: stores.Store, namespace: str) -> list[dict[str, Any]]:
    assert PDBS is not None
    out: list[dict[str, Any]] = []
    start: tuple[str, str] | None = None
    while True:
        result = await store.log.list_objects(group=PDBS.group, resource=PDBS.plural, namespace=namespace,
                                              start_after=start, limit=1000)
        out.extend(dict(_decode(ev.object)) for ev in result.events)
        if not result.more or not result.events:
            return out
        start = (result.events[-1].namespace, result.events[-1].name)


async def evict(store: stores.Store, *, namespace: str, name: str, eviction: dict[str, Any],
                ctx: stores.WriteContext) -> Outcome:
    """Evict one pod (see the module's text); raises the StatusErrors upstream answers."""
    assert PODS is not None and PDBS is not None
    check_eviction(eviction, namespace=namespace, name=name)
    eviction = await store.admit_subresource_create(PODS, namespace, name, eviction, ctx, subresource="eviction",
                                                    object_kind=("policy", "v1", "Eviction"))
    opts = delete_options(eviction, query_dry_run=["All"] if ctx.dry_run else [])
    dry_run = opts.get("dryRun") == ["All"]
    ctx.dry_run = dry_run
    retry_conflicts = _rv_unset(opts)

    pod: dict[str, Any] = {}
    for attempt in range(disruption.EVICTION_RETRIES):
        pod = await store.get_object(PODS, namespace, name)
        if not disruption.can_ignore_budgets(pod):
            break
        delete_opts = opts
        if disruption.enforces_resource_version(pod) and retry_conflicts:
            delete_opts = _with_rv(opts, str(pod["metadata"].get("resourceVersion") or ""))
        try:
            await _mark_and_delete(store, namespace=namespace, name=name, opts=delete_opts, ctx=ctx)
        except errors.Conflict:
            if retry_conflicts and attempt + 1 < disruption.EVICTION_RETRIES:
                continue
            raise
        logger.info("pod_evicted", namespace=namespace, name=name, budget="", dry_run=dry_run)
        return _success()

    matching = disruption.budgets_for_eviction(pod, await _budgets(store, namespace))
    if len(matching) > 1:
        return Outcome(status={"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                               "message": disruption.MORE_THAN_ONE, "code": 500}, code=500)
    budget = ""
    conditional = False
    if matching:
        budget = str(matching[0]["metadata"].get("name") or "")
        if disruption.unhealthy_pod_may_go(pod, matching[0]):
            conditional = True
        else:
            await _spend(store, namespace=namespace, budget=budget, pod_name=name, ctx=ctx, dry_run=dry_run)

    delete_opts = _with_rv(opts, str(pod["metadata"].get("resourceVersion") or "")) if conditional else opts
    try:
        await _mark_and_delete(store, namespace=namespace, name=name, opts=delete_opts, ctx=ctx)
    except errors.Conflict:
        if conditional and retry_conflicts:
            raise disruption.being_processed(budget) from None
        raise
    logger.info("pod_evicted", namespace=namespace, name=name, budget=budget, dry_run=dry_run)
    return _success()


async def _mark_and_delete(store: stores.Store, *, namespace: str, name: str, opts: dict[str, Any],
                           ctx: stores.WriteContext) -> None:
    """Delete the pod, first marking it with the DisruptionTarget condition (`EvictionByEvictionAPI`)
    through its status, as upstream's `addConditionAndDeletePod` (not on a dry run). The DeleteOptions'
    preconditions hold for the marking too; a resourceVersion precondition then names the marked pod."""
    assert PODS is not None
    if not ctx.dry_run:
        pre = opts.get("preconditions") if isinstance(opts.get("preconditions"), dict) else {}
        assert isinstance(pre, dict)

        def mark(pod: dict[str, Any]) -> dict[str, Any]:
            meta = pod.get("metadata") or {}
            if pre.get("uid") and pre["uid"] != meta.get("uid"):
                raise errors.Conflict(f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
                                      f"{meta.get('uid')}", details={"name": name, "kind": "pods"})
            if pre.get("resourceVersion") and str(pre["resourceVersion"]) != str(meta.get("resourceVersion")):
                raise errors.Conflict(f"Precondition failed: ResourceVersion in precondition: "
                                      f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                                      f"{meta.get('resourceVersion')}", details={"name": name, "kind": "pods"})
            disruption.mark_disruption_target(pod, now=store.clock.now())
            return pod

        result = await store.guaranteed_update(PODS, namespace, name, mark, ctx, subresource="status")
        if pre.get("resourceVersion"):
            marked = _decode(result.body)
            opts = {**opts, "preconditions": {**pre, "resourceVersion": marked["metadata"]["resourceVersion"]}}
    await store.delete(PODS, namespace, name, opts, ctx)


async def _spend(store: stores.Store, *, namespace: str, budget: str, pod_name: str,
                 ctx: stores.WriteContext, dry_run: bool) -> None:
    """Spend one disruption of the budget: check and decrement on the latest budget, written through
    its status subresource at the version read (re-read and re-checked on a conflict)."""
    assert PDBS is not None
    writer = stores.WriteContext(user=ctx.user, user_agent=ctx.user_agent, request_id=ctx.request_id,
                                 field_manager=ctx.field_manager, dry_run=dry_run, user_info=ctx.user_info)
    for _attempt in range(disruption.EVICTION_RETRIES):
        ev = await store.get(PDBS, namespace, budget)
        current = dict(_decode(ev.object))
        updated = disruption.check_and_decrement(current, pod_name=pod_name, now=store.clock.now(),
                                                 dry_run=dry_run)
        if dry_run:
            return
        updated["metadata"]["resourceVersion"] = str(ev.revision)

        def mutate(_current: dict[str, Any], new: dict[str, Any] = updated) -> dict[str, Any]:
            return new

        try:
            await store.guaranteed_update(PDBS, namespace, budget, mutate, writer, subresource="status")
        except errors.Conflict:
            continue
        return
    raise errors.Timeout(f'Timeout: couldn\'t update PodDisruptionBudget "{budget}" due to conflicts',
                         details={"retryAfterSeconds": 10})
