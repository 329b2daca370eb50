"""controllers/history.py: the revision hash (FNV-1 32 + SafeEncodeString, the probe appended as
decimal), names, equality, ordering, numbering, and against an in-process server: create with hash
collisions (the count goes up, the same data is found again), renumbering and truncation."""

from __future__ import annotations

from typing import Any

from controllers import history
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from cp import clock as clocks
from cp import selectors
from tests.waiting import eventually

SETS = clients.resolve("statefulsets.apps")


def test_fnv1_matches_go_hash_fnv_new32() -> None:
    assert history.fnv32(b"") == 0x811C9DC5
    assert history.fnv32(b"a") == 0x050C5D7E
    assert history.fnv32(b"foobar") == 0x31F0B262


def test_hash_and_name() -> None:
    data = {"spec": {"template": {"$patch": "replace", "metadata": {"labels": {"a": "b"}}}}}
    h = history.hash_revision(data)
    assert h == history.hash_revision({"spec": {"template": {"metadata": {"labels": {"a": "b"}}, "$patch": "replace"}}})
    assert h != history.hash_revision(data, 0) != history.hash_revision(data, 1)
    assert set(h) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert history.revision_name("x" * 300, h) == "x" * 223 + "-" + h


def test_equal_sort_and_next() -> None:
    a = {"metadata": {"name": "a", "labels": {}}, "data": {"x": 1}, "revision": 2}
    b = {"metadata": {"name": "b", "labels": {}}, "data": {"x": 1}, "revision": 1}
    c = {"metadata": {"name": "c", "labels": {}}, "data": {"x": 2}, "revision": 3}
    assert history.equal_revision(a, b) and not history.equal_revision(a, c)
    assert history.find_equal([a, b, c], b) == [a, b]
    assert [r["metadata"]["name"] for r in history.sorted_revisions([c, a, b])] == ["b", "a", "c"]
    assert history.next_revision([a, b, c]) == 4 and history.next_revision([]) == 1


def _set(name: str, image: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": name}}, "serviceName": name,
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


async def test_create_collisions_renumber_and_truncate(client: clients.Client) -> None:
    factory = informers.InformerFactory(client, clock=clocks.RealClock())
    informer = factory.informer(history.REVISIONS)
    factory.start()
    try:
        await factory.wait_for_sync()
        parent = await client.create(SETS, _set("web", "a"))
        h = history.History(client=client, cache=informer.cache, field_manager="test")
        patch = history.template_patch(parent)
        rev = history.new_revision(parent=parent, parent_kind=SETS, template_labels={"app": "web"}, data=patch,
                                   revision=1, collision_count=0)
        created, count = await h.create(parent=parent, revision=rev, collision_count=0)
        assert count == 0 and created["metadata"]["name"] == f"web-{history.hash_revision(patch, 0)}"
        assert created["metadata"]["labels"] == {"app": "web", history.HASH_LABEL: history.hash_revision(patch, 0)}
        assert created["metadata"]["ownerReferences"][0]["uid"] == parent["metadata"]["uid"]
        again, count = await h.create(parent=parent, revision=rev, collision_count=0)  # same data: found
        assert count == 0 and again["metadata"]["uid"] == created["metadata"]["uid"]

        # Another template whose name is taken (a squatter under its count-0 name): count goes to 1.
        other = history.template_patch(_set("web", "b"))
        squat = {"metadata": {"name": f"web-{history.hash_revision(other, 0)}", "namespace": "default"},
                 "data": {"something": "else"}, "revision": 9}
        await client.create(history.REVISIONS, squat)
        rev2 = history.new_revision(parent=parent, parent_kind=SETS, template_labels={"app": "web"}, data=other,
                                    revision=2, collision_count=0)
        second, count = await h.create(parent=parent, revision=rev2, collision_count=0)
        assert count == 1 and second["metadata"]["name"] == f"web-{history.hash_revision(other, 1)}"

        renumbered = await h.update_revision(created, 3)
        assert renumbered["revision"] == 3

        sel = selectors.from_label_selector_object({"matchLabels": {"app": "web"}})
        await eventually(lambda: len(h.list_revisions(parent, sel)) == 2)
        owned = h.list_revisions(parent, sel)
        deleted = await h.truncate(revisions=owned, live={renumbered["metadata"]["name"]}, limit=0)
        assert deleted == 1
        names = {r["metadata"]["name"] for r in (await client.list(history.REVISIONS, namespace="default")).items}
        assert names == {renumbered["metadata"]["name"], squat["metadata"]["name"]}
    finally:
        await factory.stop()
