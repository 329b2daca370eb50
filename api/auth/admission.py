"""Admission (`AdmittingStore`, an `api.store.Store` whose writes pass through `admit_*`): DRA
`adminAccess` only in namespaces labelled `resource.kubernetes.io/admin-access: "true"`; granular
ResourceClaim status authorization (`resourceclaims/binding` for allocation/reservedFor,
`resourceclaims/driver` per driver for status.devices); RBAC object validation and escalation
prevention (`escalate`/`bind`); nesting depth and encoded size bounds."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from api import store as stores
from api.auth.authentication import NODE_NAME_EXTRA
from api.auth.chain import CURRENT, forbid
from api.auth.config import AuthConfig
from cp import errors, features, rbac
from cp import resources as res
from cp.strategies import dra as dra_strategies
from storage import log

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode

ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"


def _depth_exceeds(obj: Any, limit: int) -> bool:
    """Whether objects/arrays nest deeper than `limit` (recursion is bounded by `limit` itself)."""
    def deeper(value: Any, depth: int) -> bool:
        if depth > limit:
            return True
        for child in (value.values() if type(value) is dict else value):
            kind = type(child)
            if (kind is dict or kind is list) and deeper(child, depth + 1):
                return True
        return False

    kind = type(obj)
    return (kind is dict or kind is list) and deeper(obj, 1)


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, dict) else ""


def _invalid(kind: res.ResourceKind, name: str, causes: list[errors.Cause]) -> errors.Invalid:
    return errors.Invalid(kind=kind.kind, group=kind.group, name=name, causes=causes)


def _admin_requests(obj: Mapping[str, Any], template: bool) -> str | None:
    """The field path of the first request asking for adminAccess, if any."""
    spec = obj.get("spec") or {}
    prefix = "spec"
    if template:
        spec = spec.get("spec") or {} if isinstance(spec, dict) else {}
        prefix = "spec.spec"
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for i, req in enumerate(requests if isinstance(requests, list) else []):
        exactly = req.get("exactly") if isinstance(req, dict) else None
        if isinstance(exactly, dict) and exactly.get("adminAccess") is True:
            return f"{prefix}.devices.requests[{i}].adminAccess"
    return None


def _device_key(entry: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (str(entry.get("driver") or ""), str(entry.get("pool") or ""), str(entry.get("device") or ""),
            str(entry.get("shareID") or ""))


def _changed_drivers(old: list[Any], new: list[Any]) -> set[str]:
    before = {_device_key(e): e for e in old if isinstance(e, dict)}
    after = {_device_key(e): e for e in new if isinstance(e, dict)}
    return {key[0] for key in before.keys() | after.keys() if before.get(key) != after.get(key)}


def _allocated_node(claim: Mapping[str, Any]) -> str:
    """The single node a claim's allocation is restricted to (metadata.name In [node]), else ""."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    terms = ((allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []) if isinstance(
        allocation, dict) else []
    nodes: set[str] = set()
    for term in terms if isinstance(terms, list) else []:
        for req in (term.get("matchFields") or []) if isinstance(term, dict) else []:
            if isinstance(req, dict) and req.get("key") == "metadata.name" and req.get("operator") == "In":
                nodes.update(str(v) for v in req.get("values") or [])
    return next(iter(nodes)) if len(nodes) == 1 else ""


class AdmittingStore(stores.Store):
    """The generic store plus this module's admission checks. `config` None: only the checks that
    do not depend on who writes (DRA adminAccess, RBAC object validation)."""

    config: AuthConfig | None = None

    async def _append(self, write: log.Write) -> log.Event:
        event = await super()._append(write)
        if self.config is not None and event.group == rbac.GROUP:
            self.config.cache.apply(event)
        return event

    async def create(self, kind: res.ResourceKind, namespace: str, obj: dict[str, Any],
                     ctx: stores.WriteContext, **kw: Any) -> stores.Result:
        self._bounds(obj)
        if kind.group == rbac.GROUP:
            rbac.default_subjects(obj)
            self._admit_rbac(kind, namespace, obj, None)
        if kind.group == "resource.k8s.io" and kind.plural in ("resourceclaims", "resourceclaimtemplates"):
            path = _admin_requests(obj, template=kind.plural == "resourceclaimtemplates")
            if path is not None:
                await self._admit_admin_access(kind, namespace, obj, path)
        return await super().create(kind, namespace, obj, ctx, **kw)

    def _prepare_update(self, kind: res.ResourceKind, new: dict[str, Any], old: dict[str, Any],
                        ctx: stores.WriteContext, **kw: Any) -> dict[str, Any]:
        if kind.group == rbac.GROUP:
            rbac.default_subjects(new)
        out = super()._prepare_update(kind, new, old, ctx, **kw)
        self._bounds(out)
        if kind.group == rbac.GROUP:
            raw_meta = old.get("metadata")
            old_meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
            self._admit_rbac(kind, str(old_meta.get("namespace") or ""), out, old)
        if kind.group == "resource.k8s.io" and kind.plural == "resourceclaims" and kw.get("subresource") == "status":
            self._admit_claim_status(kind, out, old)
        return out

    async def update_scale(self, kind: res.ResourceKind, namespace: str, name: str,
                           scale_mutate: Callable[[dict[str, Any]], dict[str, Any]],
                           ctx: stores.WriteContext) -> dict[str, Any]:
        """A patched Scale must still be shaped like one (a hostile patch can make metadata a list)."""
        def checked(scale: dict[str, Any]) -> dict[str, Any]:
            out = scale_mutate(scale)
            if not isinstance(out, dict) or not all(isinstance(out.get(k) or {}, dict) for k in ("metadata", "spec")):
                raise errors.BadRequest("the body of the request was not a valid autoscaling/v1 Scale")
            return out

        return await super().update_scale(kind, namespace, name, checked, ctx)

    # -- bounds

    def _bounds(self, obj: dict[str, Any]) -> None:
        if self.config is None:
            return
        limits = self.config.limits
        if _depth_exceeds(obj, limits.max_depth):
            raise errors.BadRequest(f"the object is nested too deeply (more than {limits.max_depth} levels)")
        size = len(_encode(obj))
        if size > limits.max_object_bytes:
            raise errors.RequestEntityTooLarge(
                f"Request entity too large: the object is {size} bytes, limit is {limits.max_object_bytes}")

    # -- DRA

    async def _admit_admin_access(self, kind: res.ResourceKind, namespace: str, obj: dict[str, Any],
                                  path: str) -> None:
        ns = await self.log.get(group="", resource="namespaces", namespace="", name=namespace)
        labels = ((_decode(ns.object).get("metadata") or {}).get("labels") or {}) if ns is not None else {}
        if labels.get(ADMIN_ACCESS_LABEL) != "true":
            raise _invalid(kind, _name(obj), [errors.Cause(
                "Forbidden", path, f"admin access to devices requires the `{ADMIN_ACCESS_LABEL}: true` label "
                "on the containing namespace")])

    def _admit_claim_status(self, kind: res.ResourceKind, new: dict[str, Any], old: dict[str, Any]) -> None:
        """Granular status authorization (DRAResourceClaimGranularStatusAuthorization; with the gate off
        `resourceclaims/status` alone decides, as before it)."""
        current = CURRENT.get()
        if self.config is None or not self.config.secure or current is None:
            return
        if not self.registry.features.enabled(features.DRA_RESOURCE_CLAIM_GRANULAR_STATUS_AUTHORIZATION):
            return
        user, verb = current
        if rbac.MASTERS in user.groups:
            return
        verb = verb if verb in ("update", "patch") else "update"
        meta = new.get("metadata") or {}
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        new_status, old_status = new.get("status") or {}, old.get("status") or {}
        if new_status.get("allocation") != old_status.get("allocation") or \
                new_status.get("reservedFor") != old_status.get("reservedFor"):
            attrs = rbac.Attributes(user=user, verb=verb, api_group=kind.group, resource="resourceclaims",
                                    subresource="binding", namespace=ns, name=name)
            if not self.config.authorize(attrs).allowed:
                raise forbid(attrs)
        # Entries of devices this write deallocates are dropped by the server itself (the claim
        # strategy, upstream's dropDeallocatedStatusDevices): they are not the caller's change to a
        # driver's entries, so deallocating needs `resourceclaims/binding` only (issue #23).
        old_kept = dra_strategies.still_allocated_status_devices(list(old_status.get("devices") or []),
                                                                 new_status.get("allocation"))
        drivers = _changed_drivers(old_kept, list(new_status.get("devices") or []))
        if not drivers:
            return
        node = _allocated_node(new) or _allocated_node(old)
        user_nodes = user.extra.get(NODE_NAME_EXTRA, ())
        for driver in sorted(drivers):
            arbitrary = rbac.Attributes(user=user, verb=f"arbitrary-node:{verb}", api_group=kind.group,
                                        resource="resourceclaims", subresource="driver", namespace=ns,
                                        name=driver)
            if self.config.authorize(arbitrary).allowed:
                continue
            if node and node in user_nodes:
                associated = rbac.Attributes(user=user, verb=f"associated-node:{verb}", api_group=kind.group,
                                             resource="resourceclaims", subresource="driver", namespace=ns,
                                             name=driver)
                if self.config.authorize(associated).allowed:
                    continue
            raise forbid(arbitrary)

    # -- RBAC

    def _admit_rbac(self, kind: res.ResourceKind, namespace: str, obj: dict[str, Any],
                    old: dict[str, Any] | None) -> None:
        obj.setdefault("kind", kind.kind)
        name = _name(obj)
        current = CURRENT.get()
        if self.config is None or not self.config.secure or current is None:
            return
        user, _verb = current
        if rbac.MASTERS in user.groups:
            return
        if old is not None and _only_gc_fields(obj, old):
            return
        policy = self.config.cache.policy
        if kind.kind in ("Role", "ClusterRole"):
            if self.config.allowed(user, "escalate", group=rbac.GROUP, resource=kind.plural, namespace=namespace,
                                   name=name):
                return
            listed = obj.get("rules")
            rules = [r for r in listed if isinstance(r, dict)] if isinstance(listed, list) else []
        else:
            raw_ref = obj.get("roleRef")
            ref: dict[str, Any] = raw_ref if isinstance(raw_ref, dict) else {}
            ref_resource = "roles" if ref.get("kind") == "Role" else "clusterroles"
            if self.config.allowed(user, "bind", group=rbac.GROUP, resource=ref_resource,
                                   namespace=namespace,
                                   name=str(ref.get("name") or "")):
                return
            try:
                rules = policy.role_ref_rules(ref, namespace)
            except KeyError as exc:
                raise errors.Forbidden(f'{kind.group_resource} "{name}" is forbidden: {exc.args[0]}',
                                       details={"name": name, "group": kind.group, "kind": kind.plural}) from None
        owner, _errs = policy.rules_for(user, namespace)
        ok, missing = rbac.covers(owner, rules)
        if not ok:
            raise errors.Forbidden(f'{kind.group_resource} "{name}" is forbidden: '
                                   f"{rbac.escalation_message(user, missing)}",
                                   details={"name": name, "group": kind.group, "kind": kind.plural})


def _only_gc_fields(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """Upstream skips escalation checks for updates that touch only finalizers/ownerReferences."""
    a, b = dict(new), dict(old)
    ma, mb = dict(a.pop("metadata", None) or {}), dict(b.pop("metadata", None) or {})
    for m in (ma, mb):
        for key in ("finalizers", "ownerReferences", "resourceVersion", "managedFields", "generation"):
            m.pop(key, None)
    return a == b and ma == mb


def store_class(config: AuthConfig | None) -> type[stores.Store]:
    return type("AdmittingStore", (AdmittingStore,), {"config": config})
