"""The informer cache: keys, the standard index functions, indexes kept in step with updates and
removals, indexers added late, and `replace` (a relist) reporting added / updated / deleted.

Out of scope: filling the cache from a server (test_informer_*.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from controllers.runtime import cache as caches


def _pod(name: str, *, node: str = "", owner: str = "", claims: tuple[str, ...] = (), rv: str = "1",
         ns: str = "default") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{name}", "resourceVersion": rv}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                    "uid": f"uid-{owner}"}]
    spec: dict[str, Any] = {}
    if node:
        spec["nodeName"] = node
    if claims:
        spec["resourceClaims"] = [{"name": c, "resourceClaimName": c} for c in claims]
    return {"metadata": meta, "spec": spec}


def test_indexes_follow_updates_and_removals() -> None:
    cache = caches.Cache(caches.STANDARD_INDEXERS)
    cache.upsert(_pod("a", node="n1", owner="rs1", claims=("c1",)))
    cache.upsert(_pod("b", node="n1", owner="rs1"))
    cache.upsert(_pod("c", node="n2", ns="other"))
    assert [p["metadata"]["name"] for p in cache.by_index(caches.NODE, "n1")] == ["a", "b"]
    assert [p["metadata"]["name"] for p in cache.by_index(caches.OWNER_UID, "uid-rs1")] == ["a", "b"]
    assert [p["metadata"]["name"] for p in cache.list("other")] == ["c"]
    assert cache.index_keys(caches.CLAIM_NAME, "c1") == {("default", "a")}
    assert cache.index_keys(caches.UID, "uid-c") == {("other", "c")}

    old = cache.upsert(_pod("a", node="n2", rv="2"))  # moved node, lost owner and claim
    assert old is not None and old["metadata"]["resourceVersion"] == "1"
    assert cache.index_keys(caches.NODE, "n1") == {("default", "b")}
    assert cache.index_keys(caches.NODE, "n2") == {("default", "a"), ("other", "c")}
    assert cache.index_keys(caches.OWNER_UID, "uid-rs1") == {("default", "b")}
    assert cache.index_keys(caches.CLAIM_NAME, "c1") == set()

    assert cache.remove(("default", "b")) is not None
    assert cache.index_keys(caches.OWNER_UID, "uid-rs1") == set()
    assert caches.OWNER_UID in cache.indexers and "uid-rs1" not in cache.index_values(caches.OWNER_UID)
    assert cache.remove(("default", "b")) is None
    assert len(cache) == 2


def test_claim_names_come_from_spec_and_status() -> None:
    pod = _pod("p")
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
    pod["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-x7k2"}]}
    assert caches.by_claim_name(pod) == ["p-gpu-x7k2"]


def test_indexer_added_late_indexes_existing_objects() -> None:
    cache = caches.Cache()
    cache.upsert(_pod("a", node="n1"))
    cache.add_indexers({caches.NODE: caches.by_node})
    cache.add_indexers({caches.NODE: caches.by_node})  # same function again: fine
    assert cache.index_keys(caches.NODE, "n1") == {("default", "a")}
    with pytest.raises(ValueError, match="already registered"):
        cache.add_indexers({caches.NODE: caches.by_uid})
    with pytest.raises(KeyError):
        cache.index_keys("nope", "x")


def test_replace_reports_the_difference() -> None:
    cache = caches.Cache(caches.STANDARD_INDEXERS)
    cache.upsert(_pod("keep", rv="1"))
    cache.upsert(_pod("change", rv="1"))
    cache.upsert(_pod("gone", rv="1", owner="rs1"))
    diff = cache.replace([_pod("keep", rv="1"), _pod("change", rv="5"), _pod("new", rv="6")], "6")
    assert [o["metadata"]["name"] for o in diff.added] == ["new"]
    assert [(o["metadata"]["resourceVersion"], n["metadata"]["resourceVersion"]) for o, n in diff.updated] == \
        [("1", "5")]
    assert [o["metadata"]["name"] for o in diff.deleted] == ["gone"]
    assert cache.resource_version == "6"
    assert sorted(caches.key_of(o)[1] for o in cache) == ["change", "keep", "new"]
    assert cache.index_keys(caches.OWNER_UID, "uid-rs1") == set()


def test_deep_copy_is_independent() -> None:
    obj = _pod("a", node="n1")
    copied = caches.deep_copy(obj)
    copied["spec"]["nodeName"] = "n9"
    assert obj["spec"]["nodeName"] == "n1"
