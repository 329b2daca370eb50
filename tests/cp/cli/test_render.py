"""cp/cli/render.py: pure rendering (names, diffs, tables, histories, progress bars)."""

from __future__ import annotations

import io
from typing import Any

import pytest

from cp import resources as res
from cp.cli import render
from storage import log


def test_resolve_resource_accepts_what_kubectl_users_type() -> None:
    for text in ("pods", "pod", "po", "Pod", "pods."):
        assert res.resolve_resource(text.rstrip(".")).plural == "pods"
    assert res.resolve_resource("deployments.apps").group == "apps"
    assert res.resolve_resource("deploy").kind == "Deployment"
    assert res.resolve_resource("resourceclaim.resource.k8s.io").plural == "resourceclaims"
    assert res.resolve_resource("clocks.sim.cplane.dev").kind == "Clock"
    with pytest.raises(ValueError, match=r'unknown resource "widgets" \(known: .*pods'):
        res.resolve_resource("widgets")


def test_refs() -> None:
    assert res.ref("", "pods", "default", "web") == "pods/default/web"
    assert res.ref("apps", "deployments", "ns", "d") == "deployments.apps/ns/d"
    assert res.ref("", "namespaces", "", "kube-system") == "namespaces/kube-system"
    kind, ns, name = res.parse_ref("po/web")
    assert (kind.plural, ns, name) == ("pods", "default", "web")
    kind, ns, name = res.parse_ref("pods/web", namespace="shop")
    assert (ns, name) == ("shop", "web")
    kind, ns, name = res.parse_ref("ns/shop", namespace="ignored")
    assert (kind.plural, ns, name) == ("namespaces", "", "shop")
    for bad in ("pods", "pods//web", "namespaces/a/b", "pods/a/b/c"):
        with pytest.raises(ValueError):
            res.parse_ref(bad)
    with pytest.raises(ValueError, match="but -n says"):
        res.parse_ref("pods/a/web", namespace="b")


def test_diff_paths_values_and_keyed_lists() -> None:
    old = {"metadata": {"name": "p", "resourceVersion": "1", "labels": {"app.kubernetes.io/name": "x"},
                        "finalizers": ["a", "b"]},
           "spec": {"containers": [{"name": "web", "image": "nginx:1"}, {"name": "side", "image": "busybox"}],
                    "replicas": 1},
           "status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    new = {"metadata": {"name": "p", "resourceVersion": "2", "labels": {"app.kubernetes.io/name": "y"},
                        "finalizers": ["a"]},
           "spec": {"containers": [{"name": "web", "image": "nginx:2"}, {"name": "log", "image": "fluent"}],
                    "replicas": 3},
           "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    text = render.changes_text(render.diff(old, new))
    assert text.splitlines() == [
        '  ~ metadata.labels["app.kubernetes.io/name"]: "x" → "y"',
        '  ~ metadata.finalizers: ["a","b"] → ["a"]',
        '  ~ spec.containers[name=web].image: "nginx:1" → "nginx:2"',
        '  - spec.containers[name=side].name: "side"',
        '  - spec.containers[name=side].image: "busybox"',
        '  + spec.containers[name=log].name: "log"',
        '  + spec.containers[name=log].image: "fluent"',
        "  ~ spec.replicas: 1 → 3",
        '  ~ status.conditions[type=Ready].status: "False" → "True"',
    ]
    assert render.diff(old, new, all_fields=True)[0] == render.Change(
        op="~", path="metadata.resourceVersion", old="1", new="2")
    assert render.diff({"a": 1}, {"a": "1"}) == [render.Change(op="~", path="a", old=1, new="1")]
    assert render.value_text("x" * 500).endswith("…") and len(render.value_text("x" * 500)) == render.VALUE_WIDTH


def test_state_diff() -> None:
    before = {"a": {"v": 1}, "b": {"v": 1}, "c": {"v": 1, "metadata": {"resourceVersion": "1"}}}
    after = {"b": {"v": 2}, "c": {"v": 1, "metadata": {"resourceVersion": "9"}}, "d": {}}
    d = render.state_diff(before, after)
    assert (d.added, d.removed, list(d.changed)) == (["d"], ["a"], ["b"])  # c: only its resourceVersion
    assert render.state_diff_text(d, title="t").splitlines() == [
        "t: 1 added, 1 removed, 1 changed", "+ d", "- a", "~ b", "    ~ v: 1 → 2"]


def test_columns_align_like_kubectl() -> None:
    text = render.columns_text([["NAME", "AGE"], ["a-very-long-name", "5m"], ["x", "1d"]])
    assert text == "NAME               AGE\na-very-long-name   5m\nx                  1d\n"
    assert render.columns_text([["A", "B"]]) == "A     B\n"  # minimum width 6


def _event(revision: int, type_: str, obj: bytes, *, uid: str = "u1", user: str = "alice") -> log.Event:
    return log.Event(revision=revision, type=type_, group="", resource="configmaps", namespace="d", name="c",
                     uid=uid, object=obj, prev_revision=0, time=1.5e9 + revision, actor=log.Actor(user=user))


def test_history_text() -> None:
    objs = [{"data": {"k": "1"}}, {"data": {"k": "2"}}, {"data": {"k": "2"}}, {"data": {}}]
    events = [_event(1, "ADDED", b""), _event(2, "MODIFIED", b"", user=""), _event(3, "DELETED", b""),
              _event(4, "ADDED", b"", uid="u2")]
    text = render.history_text(events, objs)
    assert text.splitlines() == [
        "configmaps/d/c: 4 versions, revisions 1..4 (2 incarnations: deleted and created again)", "",
        "1  2017-07-14T02:40:01.000Z  ADDED  by user alice", '  + data.k: "1"', "",
        "2  2017-07-14T02:40:02.000Z  MODIFIED  by unknown", '  ~ data.k: "1" → "2"', "",
        "3  2017-07-14T02:40:03.000Z  DELETED  by user alice", "  (deleted)", "",
        "4  2017-07-14T02:40:04.000Z  ADDED  by user alice", "  (created again: new uid)", "  + data: {}"]


def test_progress_draws_only_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    quiet = io.StringIO()
    p = render.Progress(quiet, label="exporting", total=1_000_000)
    p.add(10)
    p.close()
    assert quiet.getvalue() == "" and not p.enabled
    tty = Tty()
    p = render.Progress(tty, label="exporting", total=1_000_000)
    out = io.BytesIO()
    w = render.ProgressWriter(out, p)
    w.write(b"a\nb\n")
    w.write(bytearray(b"c\n"))
    p.close()
    assert p.done == 3 and out.getvalue() == b"a\nb\nc\n"
    assert tty.getvalue().startswith("\rexporting [") and "3/1,000,000 events" in tty.getvalue()
    assert tty.getvalue().endswith(" events/s\n")
    small = render.Progress(Tty(), label="x", total=10)
    assert not small.enabled  # small logs: no bar
    counted = render.Progress(Tty(), label="importing", total=100, unit="bytes", min_total=0)
    assert list(render.progress_lines([b"ab\n", b"c\n"], counted)) == [b"ab\n", b"c\n"]
    assert counted.done == 5


def test_secret_values_are_masked_in_diffs() -> None:
    def secret(data: dict[str, str], applied: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Secret", "metadata": {
            "name": "s", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": applied}},
            "data": data}

    old = secret({"same": "c2FtZQ==", "changed": "b2xk", "gone": "Z29uZQ=="}, '{"data":{"changed":"b2xk"}}')
    new = secret({"same": "c2FtZQ==", "changed": "bmV3", "added": "YWRk"}, '{"data":{"changed":"bmV3"}}')
    text = render.changes_text(render.diff(old, new))
    for value in ("c2FtZQ==", "b2xk", "bmV3", "Z29uZQ==", "YWRk"):
        assert value not in text
    assert '~ data.changed: "*** (before)" → "*** (after)"' in text
    assert '+ data.added: "***"' in text and '- data.gone: "***"' in text
    assert "same" not in text
    assert "last-applied-configuration" in text and "*** (after)" in text
    assert "b2xk" in str(old)  # the objects themselves are left alone
    created = render.changes_text(render.diff(None, new))
    assert "bmV3" not in created and "YWRk" not in created
