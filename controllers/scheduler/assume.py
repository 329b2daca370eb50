"""The scheduler's view of which devices are in use (upstream's assume cache plus the DRA
manager's allocated-devices tracker): what the claim informer shows, plus the allocations a
scheduling cycle assumed and whose writes the informer has not shown yet, plus the claims being
allocated right now; and the `Allocator` over slices, classes and DeviceTaintRules, rebuilt when
one of them changes.

Changes to the allocated state are held back (`mutate`) while an allocation runs in a thread."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from controllers.runtime import cache as caches
from controllers.runtime import informer as informers
from controllers.scheduler.nodes import NodeCache
from controllers.scheduler.plan import allocation_of
from cp.dra import AllocatedState, Allocator, CelCache, Features
from cp.dra import extended as ext
from cp.objects import meta_of, resource_version_of, spec_of, status_of, uid_of


class AssumeCache:
    def __init__(self, *, claims: informers.Informer, slices: informers.Informer, classes: informers.Informer,
                 rules: informers.Informer, nodes: NodeCache, features: Features, use_taint_rules: bool = True
                 ) -> None:
        self.claims = claims
        self.slices = slices
        self.classes = classes
        self.rules = rules
        # DRADeviceTaintRules off: DeviceTaintRules taint nothing (upstream's slice tracker ignores them).
        self.use_taint_rules = use_taint_rules
        self.node_cache = nodes
        self.features = features
        self.cel_cache = CelCache()
        self.state = AllocatedState(consumable_capacity=features.consumable_capacity)
        self.contrib: dict[str, dict[str, Any]] = {}  # claim uid (or assumption key) -> counted allocation
        self.assumed: dict[str, dict[str, Any]] = {}  # claim uid -> allocation not yet seen by the informer
        self.in_flight: dict[str, tuple[str, str]] = {}  # claim uid -> pod key allocating it right now
        self.written: dict[str, dict[str, Any]] = {}  # claim uid -> our last write, until the informer has it
        self.pool_nodes: dict[str, list[str]] = {}  # pool name -> nodes whose slices publish it
        self.shared_pools: set[str] = set()  # pools of slices without nodeName (any node may see them)
        self.shared_version = 0  # bumped on every allocation change in a shared pool
        self.allocator: Allocator | None = None
        self.allocator_gen = 0
        self.class_map: dict[str, dict[str, Any]] = {}
        self.ext_mapping: dict[str, str] = {}
        self.deferred: list[Callable[[], None]] | None = None

    # ------------------------------------------------------------------ the allocated state

    def mutate(self, fn: Callable[[], None]) -> None:
        """Change the allocated state now, or after the allocation running in a thread."""
        if self.deferred is not None:
            self.deferred.append(fn)
        else:
            fn()

    def _set_contrib(self, key: str, alloc: dict[str, Any] | None) -> None:
        old = self.contrib.get(key)
        if old is alloc or (old is not None and alloc is not None and old == alloc):
            return
        if old is not None:
            self.state.remove_allocation(old)
            self._bump_pools(old)
            del self.contrib[key]
        if alloc is not None:
            self.state.add_allocation(alloc)
            self._bump_pools(alloc)
            self.contrib[key] = alloc

    def _bump_pools(self, alloc: Mapping[str, Any]) -> None:
        """Invalidate the cached DRA answers of the nodes that see the pools of these devices
        (pools by name only: the allocator's shared counters are keyed that way too)."""
        nodes = self.node_cache.nodes
        for r in ((alloc.get("devices") or {}).get("results") or []):
            pool = r.get("pool", "")
            for name in self.pool_nodes.get(pool, ()):
                entry = nodes.get(name)
                if entry is not None:
                    entry.dra_version += 1
                    self.node_cache.dra_changed(name)
            if pool in self.shared_pools or pool not in self.pool_nodes:
                self.shared_version += 1

    def claim_changed(self, claim: dict[str, Any]) -> None:
        uid = uid_of(claim)
        written = self.written.get(uid)
        if written is not None and resource_version_of(claim) >= resource_version_of(written):
            del self.written[uid]

        def apply() -> None:
            alloc = allocation_of(claim)
            if uid in self.assumed:
                if alloc is None:
                    return  # our write is not visible yet: keep the assumption
                del self.assumed[uid]
            self._set_contrib(uid, alloc)
        self.mutate(apply)

    def claim_deleted(self, claim: dict[str, Any]) -> None:
        uid = uid_of(claim)
        self.written.pop(uid, None)

        def apply() -> None:
            self.assumed.pop(uid, None)
            self._set_contrib(uid, None)
        self.mutate(apply)

    def assume(self, key: str, alloc: dict[str, Any]) -> None:
        def apply() -> None:
            self.assumed[key] = alloc
            self._set_contrib(key, alloc)
        self.mutate(apply)

    def forget(self, key: str, claim: Mapping[str, Any] | None) -> None:
        """Drop an assumption; the informer's view of the claim (if any) counts again."""
        def apply() -> None:
            if self.assumed.pop(key, None) is None:
                return
            self._set_contrib(key, None)
            cached = self.claims.cache.get(*caches.key_of(claim)) if claim is not None else None
            if cached is not None and uid_of(cached) == key:
                self._set_contrib(key, allocation_of(cached))
        self.mutate(apply)

    def rekey(self, old_key: str, uid: str) -> None:
        """The extended-resource claim was created: its assumption now goes by the claim uid."""
        def apply() -> None:
            alloc = self.assumed.pop(old_key, None)
            self._set_contrib(old_key, None)
            if alloc is not None:
                self.assumed[uid] = alloc
                self._set_contrib(uid, alloc)
        self.mutate(apply)

    def record_write(self, updated: dict[str, Any]) -> None:
        """Our write of a claim: it is the claim's view until the informer has caught up."""
        cached = self.claims.cache.get(*caches.key_of(updated))
        if cached is None or resource_version_of(cached) < resource_version_of(updated):
            self.written[uid_of(updated)] = updated

    def view(self, ns: str, name: str) -> dict[str, Any] | None:
        """The claim as the informer has it, or as we last wrote it if that is newer (the
        assume cache)."""
        claim = self.claims.cache.get(ns, name)
        if claim is None:
            return None
        written = self.written.get(uid_of(claim))
        if written is not None and resource_version_of(written) > resource_version_of(claim):
            return written
        return claim

    def held_claims(self) -> list[dict[str, Any]]:
        """Every cached claim, with the allocations assumed for it filled in."""
        return [{**c, "status": {**status_of(c), "allocation": self.assumed[uid_of(c)]}}
                if uid_of(c) in self.assumed else c for c in self.claims.cache.list()]

    # ------------------------------------------------------------------ the allocator

    def invalidate_allocator(self) -> None:
        self.allocator = None

    def get_allocator(self) -> Allocator:
        if self.allocator is None:
            slices = self.slices.cache.list()
            self.class_map = {str(meta_of(c).get("name")): c for c in self.classes.cache.list()}
            self.ext_mapping = ext.extended_resource_class_mapping(self.class_map)
            self.allocator = Allocator(slices=slices, classes=self.class_map, allocated=self.state,
                                       taint_rules=self.rules.cache.list() if self.use_taint_rules else (),
                                       features=self.features,
                                       cel_cache=self.cel_cache, deadline=None)
            self.allocator_gen += 1
            shared: set[str] = set()
            pool_nodes: dict[str, set[str]] = {}
            for s in slices:
                spec = spec_of(s)
                pool = str((spec.get("pool") or {}).get("name") or "")
                node = spec.get("nodeName")
                if node:
                    pool_nodes.setdefault(pool, set()).add(str(node))
                else:
                    shared.add(pool)
            self.pool_nodes = {p: sorted(n) for p, n in pool_nodes.items()}
            self.shared_pools = shared
        return self.allocator
