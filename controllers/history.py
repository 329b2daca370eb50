"""Controller history: ControllerRevisions as upstream's `pkg/controller/history`, shared by the
DaemonSet and StatefulSet controllers.

A revision stores a patch (`data`: the workload's `spec.template` marked `$patch: replace`) and a
`revision` number. Its name is `<parent>-<hash>`, the hash being FNV-1 32 over the patch's JSON
bytes (plus the decimal collision count when one is given), rendered as decimal through
SafeEncodeString's alphabet (upstream `HashControllerRevision`; the parent name is cut to 223
characters). A name already taken by a revision with other data is a collision: the caller's
collision count goes up and the name is hashed again. Revisions are numbered from 1; the current
one takes `max(revisions) + 1` when the template changes (also when it returns to an old template,
which is then renumbered). `truncate` deletes the oldest revisions beyond `revisionHistoryLimit`
that no pod still uses.

The patch bytes are the canonical JSON of the object (sorted keys, no spaces): Go's `json.Marshal`
of the `map[string]interface{}` upstream builds gives the same bytes for the same fields, except
that Go escapes `<`, `>` and `&` in strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec
import structlog

from controllers import replicaset as rsc
from controllers.deployment import rules as drules
from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from cp import errors, selectors
from cp import resources as res

REVISIONS = clients.resolve("controllerrevisions.apps")
HASH_LABEL = "controller.kubernetes.io/hash"  # upstream ControllerRevisionHashLabel
POD_REVISION_LABEL = "controller-revision-hash"  # apps.ControllerRevisionHashLabelKey (pods)
MAX_PREFIX = 223
CREATE_ATTEMPTS = 32  # a bound on collision retries within one pass (upstream loops unbounded)

_canonical = msgspec.json.Encoder(order="sorted")

logger = structlog.get_logger("cplane.controllers.history")


def fnv32(data: bytes, h: int = 0x811C9DC5) -> int:
    """FNV-1 (multiply, then xor), what Go's `hash/fnv.New32` computes."""
    for byte in data:
        h = (h * 0x01000193) & 0xFFFFFFFF
        h ^= byte
    return h


def patch_bytes(data: Any) -> bytes:
    """The bytes a revision's data is hashed and compared as."""
    return _canonical.encode(data)


def template_patch(obj: Mapping[str, Any]) -> dict[str, Any]:
    """upstream `getPatch` of both controllers: `{"spec": {"template": <template + $patch: replace>}}`."""
    template = caches.deep_copy(dict(rsc.spec_of(obj).get("template") or {}))
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def hash_revision(data: Any, probe: int | None = None) -> str:
    """upstream `HashControllerRevision`."""
    h = fnv32(patch_bytes(data))
    if probe is not None:
        h = fnv32(str(probe).encode(), h)
    return drules.safe_encode(str(h))


def revision_name(prefix: str, hash_: str) -> str:
    """upstream `ControllerRevisionName`."""
    return f"{prefix[:MAX_PREFIX]}-{hash_}"


def revision_number(revision: Mapping[str, Any]) -> int:
    return int(revision.get("revision") or 0)


def new_revision(*, parent: Mapping[str, Any], parent_kind: res.ResourceKind, template_labels: Mapping[str, str],
                 data: Mapping[str, Any], revision: int, collision_count: int | None) -> dict[str, Any]:
    """upstream `NewControllerRevision`: the template's labels plus the hash label, a controller
    reference to the parent, the data and the number; named from the parent and the hash."""
    hash_ = hash_revision(data, collision_count)
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": revision_name(rsc.name_of(parent), hash_), "namespace": rsc.namespace_of(parent),
                         "labels": {**template_labels, HASH_LABEL: hash_},
                         "ownerReferences": [rsc.new_controller_ref(parent, parent_kind)]},
            "data": caches.deep_copy(dict(data)), "revision": revision}


def equal_revision(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """upstream `EqualRevision`: the same data (hash labels, when both are numbers, must agree)."""
    if a is None or b is None:
        return a is b
    ha, hb = rsc.labels_of(a).get(HASH_LABEL), rsc.labels_of(b).get(HASH_LABEL)
    if ha is not None and hb is not None and ha.isdigit() and hb.isdigit() and ha != hb:
        return False
    return patch_bytes(a.get("data")) == patch_bytes(b.get("data"))


def find_equal(revisions: Iterable[Mapping[str, Any]], needle: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [r for r in revisions if equal_revision(r, needle)]


def sort_key(revision: Mapping[str, Any]) -> tuple[int, float, str]:
    """upstream `byRevision`: by number, then creation time, then name."""
    return (revision_number(revision), rsc.creation_time(revision), rsc.name_of(revision))


def sorted_revisions(revisions: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(revisions, key=sort_key)


def next_revision(revisions: Sequence[Mapping[str, Any]]) -> int:
    """One past the highest number (1 for none), upstream `nextRevision`/`maxRevision + 1`."""
    return max((revision_number(r) for r in revisions), default=0) + 1


class History:
    """Reads revisions from an informer cache, writes them through the client (upstream `realHistory`)."""

    def __init__(self, *, client: clients.Client, cache: caches.Cache, field_manager: str) -> None:
        self.client = client
        self.cache = cache
        self.field_manager = field_manager

    def list_revisions(self, parent: Mapping[str, Any], selector: selectors.LabelSelector) -> list[dict[str, Any]]:
        """Revisions in the parent's namespace matching `selector`, controlled by the parent or by nobody."""
        out = []
        for rev in self.cache.list(rsc.namespace_of(parent)):
            if not selector.matches(rsc.labels_of(rev)):
                continue
            ref = rsc.controller_ref(rev)
            if ref is None or str(ref.get("uid") or "") == rsc.uid_of(parent):
                out.append(rev)
        return out

    async def claim(self, *, parent: Mapping[str, Any], parent_kind: res.ResourceKind,
                    selector: selectors.LabelSelector) -> list[dict[str, Any]]:
        """The parent's revisions after adopting matching orphans and releasing ones that stopped
        matching (upstream `ControllerRevisionControllerRefManager.ClaimControllerRevisions`)."""
        manager = rsc.RefManager(client=self.client, controller=parent, controller_kind=parent_kind,
                                 dependent_kind=REVISIONS, selector=selector, field_manager=self.field_manager,
                                 can_adopt=rsc.recheck_controller(self.client, parent_kind, parent))
        candidates = [r for r in self.cache.list(rsc.namespace_of(parent))
                      if (rsc.controller_ref(r) or {}).get("uid") in (None, rsc.uid_of(parent))]
        return await manager.claim(candidates)

    async def create(self, *, parent: Mapping[str, Any], revision: Mapping[str, Any],
                     collision_count: int) -> tuple[dict[str, Any], int]:
        """upstream `CreateControllerRevision`: create under `<parent>-<hash(data, collisionCount)>`;
        a name taken by the same data is that revision; taken by other data bumps the count and
        hashes again. Returns (revision, the collision count used)."""
        body = caches.deep_copy(dict(revision))
        namespace = rsc.namespace_of(parent)
        for _ in range(CREATE_ATTEMPTS):
            hash_ = hash_revision(body.get("data"), collision_count)
            body["metadata"]["name"] = revision_name(rsc.name_of(parent), hash_)
            body["metadata"].setdefault("labels", {})[HASH_LABEL] = hash_
            try:
                return await self.client.create(REVISIONS, body, namespace=namespace,
                                                field_manager=self.field_manager), collision_count
            except errors.AlreadyExists:
                existing = await self.client.get(REVISIONS, body["metadata"]["name"], namespace=namespace)
                if patch_bytes(existing.get("data")) == patch_bytes(body.get("data")):
                    return existing, collision_count
                collision_count += 1
                logger.info("revision_hash_collision", parent=rsc.key_of(parent), collision_count=collision_count)
        raise errors.Conflict(f"could not find a free revision name for {rsc.key_of(parent)} "
                              f"after {CREATE_ATTEMPTS} hash collisions")

    async def update_revision(self, revision: Mapping[str, Any], number: int) -> dict[str, Any]:
        """upstream `UpdateControllerRevision`: set `revision`, retrying on conflict with a fresh copy."""
        current = caches.deep_copy(dict(revision))
        for attempt in range(5):
            if revision_number(current) == number:
                return current
            current["revision"] = number
            try:
                return await self.client.update(REVISIONS, current, field_manager=self.field_manager)
            except errors.Conflict:
                if attempt == 4:
                    raise
                current = await self.client.get(REVISIONS, rsc.name_of(revision), namespace=rsc.namespace_of(revision))
        return current

    async def delete(self, revision: Mapping[str, Any]) -> None:
        try:
            await self.client.delete(REVISIONS, rsc.name_of(revision), namespace=rsc.namespace_of(revision))
        except errors.NotFound:
            return

    async def truncate(self, *, revisions: Sequence[Mapping[str, Any]], live: set[str], limit: int) -> int:
        """Delete the oldest revisions not in `live` (names) beyond `limit` (upstream
        `truncateHistory` / `cleanupHistory`). Returns how many were deleted."""
        candidates = [r for r in sorted_revisions(revisions) if rsc.name_of(r) not in live]
        surplus = len(candidates) - max(limit, 0)
        deleted = 0
        for rev in candidates[:max(surplus, 0)]:
            await self.delete(rev)
            deleted += 1
        return deleted
