"""The namespace controller: empties a terminating namespace, then finalizes it
(kube-controller-manager's `namespace` controller and its `deletion` package).

For a namespace with a deletionTimestamp:
1. make sure `status.phase` is Terminating;
2. for every namespaced kind the server serves: DELETE the collection in the namespace (or, for a
   kind without deletecollection, each listed object), then LIST what remains, counting remaining
   objects per resource and their finalizers;
3. record the outcome as the five upstream status conditions (NamespaceDeletionDiscoveryFailure,
   NamespaceDeletionGroupVersionParsingFailure, NamespaceDeletionContentFailure,
   NamespaceContentRemaining, NamespaceFinalizersRemaining), written only when they change;
4. if some content is left, check again after `estimate / 2 + 1` seconds (estimate: the longest pod
   grace period left, or 15 s when finalizers remain) — or sooner, when an object in the
   namespace is deleted (the controller watches every namespaced kind for that);
5. otherwise `PUT /api/v1/namespaces/{name}/finalize` without the `kubernetes` finalizer; the
   server removes the namespace once `spec.finalizers` and `metadata.finalizers` are empty.

The custom resources of CustomResourceDefinitions are content too: as upstream's
`namespacedResourcesDeleter` discovers the deletable resources on every pass, each pass reads
discovery (`controllers.runtime.discovery`) and empties the namespaced custom resources after the
built-in ones. A discovery failure is reported as `NamespaceDeletionDiscoveryFailure` (the built-in
resources are still emptied) and the namespace is not finalized until discovery succeeds. Deletions
of custom resources are not watched: a pass that leaves some behind looks again after its estimate.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import clock as clocks
from cp import errors
from cp import resources as res

NAME = "namespace"
FINALIZER = "kubernetes"
FINALIZER_ESTIMATE_SECONDS = 15  # upstream's default wait for content with finalizers

NAMESPACES = clients.resolve("namespaces")

CONDITION_TYPES = (
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
)
OK_REASONS = {
    "NamespaceDeletionDiscoveryFailure": "ResourcesDiscovered",
    "NamespaceDeletionGroupVersionParsingFailure": "ParsedGroupVersions",
    "NamespaceDeletionContentFailure": "ContentDeleted",
    "NamespaceContentRemaining": "ContentRemoved",
    "NamespaceFinalizersRemaining": "ContentHasNoFinalizers",
}
OK_MESSAGES = {
    "NamespaceDeletionDiscoveryFailure": "All resources successfully discovered",
    "NamespaceDeletionGroupVersionParsingFailure": "All legacy kube types successfully parsed",
    "NamespaceDeletionContentFailure": "All content successfully deleted, may be waiting on finalization",
    "NamespaceContentRemaining": "All content successfully removed",
    "NamespaceFinalizersRemaining": "All content-preserving finalizers finished",
}

logger = structlog.get_logger("cplane.controllers.namespace")


def deletable(kind: res.ResourceKind) -> bool:
    return kind.namespaced and {"list", "delete"} <= set(kind.verbs)


def content_kinds() -> list[res.ResourceKind]:
    """Namespaced kinds that can be listed and deleted, pods first (their grace periods run longest)."""
    kinds = [k for k in res.KINDS if deletable(k)]
    return sorted(kinds, key=lambda k: (k.group_resource != "pods", res.KINDS.index(k)))


class ContentTotals:
    """What a deletion pass left behind."""

    def __init__(self) -> None:
        self.remaining: dict[res.ResourceKind, int] = {}
        self.finalizers: dict[str, int] = {}
        self.errors: list[str] = []
        self.discovery_error = ""  # why discovery failed this pass ("" = it did not)
        self.estimate = 0

    @property
    def empty(self) -> bool:
        return not self.remaining


def new_conditions(totals: ContentTotals) -> dict[str, tuple[str, str, str]]:
    """Condition type → (status, reason, message) for one pass, failures as upstream words them."""
    out = {t: ("False", OK_REASONS[t], OK_MESSAGES[t]) for t in CONDITION_TYPES}
    if totals.discovery_error:
        # Upstream's text for an error that is not a per-group discovery failure: the error itself.
        out["NamespaceDeletionDiscoveryFailure"] = ("True", "DiscoveryFailed", totals.discovery_error)
    if totals.errors:
        msgs = sorted(totals.errors)
        out["NamespaceDeletionContentFailure"] = (
            "True", "ContentDeletionFailed",
            f"Failed to delete all resource types, {len(msgs)} remaining: {', '.join(msgs)}")
    if totals.remaining:
        parts = sorted(f"{k.plural}.{k.group} has {n} resource instances" for k, n in totals.remaining.items() if n)
        out["NamespaceContentRemaining"] = ("True", "SomeResourcesRemain",
                                           f"Some resources are remaining: {', '.join(parts)}")
    if totals.finalizers:
        parts = sorted(f"{f} in {n} resource instances" for f, n in totals.finalizers.items() if n)
        out["NamespaceFinalizersRemaining"] = ("True", "SomeFinalizersRemain",
                                               f"Some content in the namespace has finalizers remaining: "
                                               f"{', '.join(parts)}")
    return out


def merge_conditions(existing: Sequence[Mapping[str, Any]], wanted: Mapping[str, tuple[str, str, str]],
                     *, now: str) -> tuple[list[dict[str, Any]], bool]:
    """Apply `wanted` to the namespace's conditions; lastTransitionTime moves only when status does."""
    out = [dict(c) for c in existing]
    changed = False
    for ctype in CONDITION_TYPES:
        status, reason, message = wanted[ctype]
        old = next((c for c in out if c.get("type") == ctype), None)
        if old is None:
            out.append({"type": ctype, "status": status, "lastTransitionTime": now, "reason": reason,
                        "message": message})
            changed = True
        elif (old.get("status"), old.get("reason"), old.get("message")) != (status, reason, message):
            if old.get("status") != status:
                old["lastTransitionTime"] = now
            old.update(status=status, reason=reason, message=message)
            changed = True
    return out, changed


class NamespaceController:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 clock: clocks.Clock, recorder: managers.EventRecorder,
                 kinds: Sequence[res.ResourceKind] | None = None, watch_content: bool = True) -> None:
        self.client = client
        self.informers = informer_factory
        self.clock = clock
        self.recorder = recorder
        self.kinds = list(kinds) if kinds is not None else content_kinds()
        self.watch_content = watch_content
        self._unsupported: set[tuple[str, str]] = set()  # (group-resource, verb) the server refused

    def watches(self) -> list[managers.Watch]:
        assert NAMESPACES is not None
        out = [managers.Watch(kind=NAMESPACES)]
        if self.watch_content:
            out.extend(managers.Watch(kind=k, map=self._content_deleted) for k in self.kinds)
        return out

    def _content_deleted(self, change: managers.Change) -> Iterable[reconcile.Request]:
        """An object went away in a terminating namespace: look at that namespace again."""
        if change.type != "delete":
            return []
        ns = str(caches.meta(change.obj).get("namespace") or "")
        assert NAMESPACES is not None
        owner = self.informers.cache(NAMESPACES).get("", ns) if ns else None
        if owner is None or not caches.meta(owner).get("deletionTimestamp"):
            return []
        return [reconcile.Request(name=ns)]

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        assert NAMESPACES is not None
        try:
            ns = await self.client.get(NAMESPACES, request.name)
        except errors.NotFound:
            return None
        if not caches.meta(ns).get("deletionTimestamp"):
            return None
        if (ns.get("status") or {}).get("phase") != "Terminating":
            ns = caches.deep_copy(ns)
            ns.setdefault("status", {})["phase"] = "Terminating"
            ns = await self.client.update_status(NAMESPACES, ns)
        totals = await self.delete_all_content(request.name)
        ns = await self._write_conditions(ns, totals)
        if totals.discovery_error:
            raise RuntimeError(f"namespace {request.name}: discovery failed: {totals.discovery_error}")
        if totals.errors:
            raise RuntimeError(f"namespace {request.name}: content deletion failed: {'; '.join(totals.errors)}")
        if not totals.empty:
            logger.info("namespace_content_remaining", namespace=request.name, estimate=totals.estimate,
                        remaining={k.group_resource: n for k, n in totals.remaining.items()})
            return reconcile.Result(requeue_after=totals.estimate / 2 + 1)
        await self._finalize(ns)
        return None

    async def delete_all_content(self, namespace: str) -> ContentTotals:
        totals = ContentTotals()
        now = self.clock.now()
        for kind in [*self.kinds, *await self._custom_kinds(totals)]:
            try:
                items = await self._delete_kind(kind, namespace)
            except errors.StatusError as exc:
                totals.errors.append(f"{kind.group_resource}: {exc.message}")
                continue
            if not items:
                continue
            totals.remaining[kind] = len(items)
            for item in items:
                for fin in caches.meta(item).get("finalizers") or []:
                    totals.finalizers[str(fin)] = totals.finalizers.get(str(fin), 0) + 1
                if kind.group_resource == "pods":
                    totals.estimate = max(totals.estimate, _pod_estimate(item, now))
        if totals.finalizers:
            totals.estimate = max(totals.estimate, FINALIZER_ESTIMATE_SECONDS)
        return totals

    async def _custom_kinds(self, totals: ContentTotals) -> list[res.ResourceKind]:
        """The namespaced custom resources discovery lists now (upstream discovers on every pass)."""
        try:
            served = await self.client.mapper.refresh()
        except errors.StatusError as exc:
            totals.discovery_error = exc.message
            return []
        except (OSError, TimeoutError) as exc:
            totals.discovery_error = repr(exc)
            return []
        known = {k.group_resource for k in self.kinds}
        return [k for k in served if deletable(k) and k.group_resource not in known]

    async def _delete_kind(self, kind: res.ResourceKind, namespace: str) -> list[dict[str, Any]]:
        """Delete everything of one kind in the namespace; returns what is still there."""
        gr = kind.group_resource
        if "deletecollection" in kind.verbs and (gr, "deletecollection") not in self._unsupported:
            try:
                await self.client.delete_collection(kind, namespace=namespace, propagation_policy="Background")
            except (errors.MethodNotAllowed, errors.NotFound):
                self._unsupported.add((gr, "deletecollection"))
            else:
                return (await self.client.list(kind, namespace=namespace)).items
        listed = (await self.client.list(kind, namespace=namespace)).items
        for item in listed:
            if caches.meta(item).get("deletionTimestamp"):
                continue
            with contextlib.suppress(errors.NotFound):
                await self.client.delete(kind, str(caches.meta(item).get("name")), namespace=namespace,
                                         propagation_policy="Background")
        return (await self.client.list(kind, namespace=namespace)).items if listed else []

    async def _write_conditions(self, ns: dict[str, Any], totals: ContentTotals) -> dict[str, Any]:
        assert NAMESPACES is not None
        status = ns.get("status") or {}
        conditions, changed = merge_conditions(status.get("conditions") or [], new_conditions(totals),
                                               now=clocks.rfc3339(self.clock.now()))
        if not changed:
            return ns
        updated = caches.deep_copy(ns)
        updated.setdefault("status", {})["conditions"] = conditions
        try:
            return await self.client.update_status(NAMESPACES, updated)
        except errors.NotFound:
            return ns

    async def _finalize(self, ns: dict[str, Any]) -> None:
        spec_finalizers = [str(f) for f in (ns.get("spec") or {}).get("finalizers") or []]
        body = caches.deep_copy(ns)
        body.setdefault("spec", {})["finalizers"] = [f for f in spec_finalizers if f != FINALIZER]
        try:
            await self.client.finalize_namespace(body)
        except errors.NotFound:
            return
        logger.info("namespace_finalized", namespace=caches.meta(ns).get("name"))


def _pod_estimate(pod: Mapping[str, Any], now: float) -> int:
    """Seconds until a terminating pod's grace period ends (its full grace if not deleting yet)."""
    meta = caches.meta(pod)
    stamp = meta.get("deletionTimestamp")
    if stamp:
        try:
            return max(0, math.ceil(clocks.parse_time(str(stamp)) - now))
        except ValueError:
            pass
    grace = meta.get("deletionGracePeriodSeconds")
    if grace is None:
        grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
    try:
        return max(0, int(grace))
    except (TypeError, ValueError):
        return 30


def new(ctx: managers.ControllerContext, *, workers: int = 2) -> managers.Controller:
    nc = NamespaceController(client=ctx.client, informer_factory=ctx.informers, clock=ctx.clock,
                             recorder=ctx.recorder("namespace-controller"))
    return managers.Controller(name=NAME, reconciler=nc, watches=nc.watches(), workers=workers)
