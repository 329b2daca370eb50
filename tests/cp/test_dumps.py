"""`cp.dumps`: the pieces of reading a dump — which files, the manager and time of an object, the
cluster-info dump's log blocks, and the place of each object."""

from __future__ import annotations

from pathlib import Path

import pytest

from cp import dumps


def test_files_expand_directories_sorted_and_skip_other_files(tmp_path: Path) -> None:
    (tmp_path / "d" / "ns").mkdir(parents=True)
    for name in ("d/z.json", "d/a.yml", "d/ns/pods.yaml", "d/ns/logs.txt", "d/README.md", "named.txt"):
        (tmp_path / name).write_text("{}")
    got = dumps.files([tmp_path / "named.txt", tmp_path / "d"])
    assert [str(p.relative_to(tmp_path)) for p in got] == ["named.txt", "d/a.yml", "d/ns/pods.yaml", "d/z.json"]
    with pytest.raises(dumps.DumpError, match="no such file or directory"):
        dumps.files([tmp_path / "missing"])


def test_manager_is_the_newest_entrys() -> None:
    def obj(*entries: tuple[str, str]) -> dict[str, object]:
        return {"metadata": {"managedFields": [{"manager": m, "time": t} for m, t in entries]}}

    assert dumps.manager(obj(("a", "2026-01-02T00:00:00Z"), ("b", "2026-01-01T00:00:00Z"))) == "a"
    assert dumps.manager(obj(("a", "2026-01-01T00:00:00Z"), ("b", "2026-01-01T00:00:00Z"))) == "b"
    assert dumps.manager({"metadata": {}}) == "" and dumps.manager({}) == ""


def test_created_reads_the_creation_timestamp() -> None:
    assert dumps.created({"metadata": {"creationTimestamp": "2026-03-01T10:00:00Z"}}) == 1772359200.0
    assert dumps.created({"metadata": {"creationTimestamp": "yesterday"}}) is None
    assert dumps.created({"metadata": {}}) is None and dumps.created({}) is None


def test_objects_know_their_lines_and_documents(tmp_path: Path) -> None:
    dump = tmp_path / "s.yaml"
    dump.write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n\napiVersion: v1\nkind: Namespace\n"
                    "metadata:\n  name: b\n")
    assert [(o.object["metadata"]["name"], o.line, o.document) for o in dumps.objects(dump)] == [
        ("a", 1, 1), ("b", 7, 2)]
    stream = tmp_path / "info.txt"
    stream.write_text('{"kind": "NamespaceList", "apiVersion": "v1", "items": [\n {"metadata": {"name": "a"}}]}\n'
                      "==== START logs for container c of pod a/p ====\n{\n==== END logs for container c of pod a/p"
                      ' ====\n{"kind": "NodeList", "apiVersion": "v1", "items": null}\n'
                      '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}\n')
    got = [(o.object["kind"], o.line, o.document) for o in dumps.objects(stream)]
    assert got == [("Namespace", 1, 1), ("Node", 7, 3)]
    assert [o.object["kind"] for o in dumps.objects(stream, only_first=True)] == ["Namespace"]
