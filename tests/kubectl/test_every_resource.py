"""Every served resource through the real kubectl 1.37.1: create -f, get, list (JSON and the table),
watch, replace, patch of all four types (json, merge, strategic, and apply --server-side) and delete,
with every object kubectl got back (watch events included) validated against the strict 1.37 schema
and deserialized by the typed clients (`kubernetes` 37, lightkube). The create-only bindings and the
computed componentstatuses get their own check, the self-subject reviews theirs on a server with
authentication.

In scope: that each verb works on each kind and returns what clients can read. Out of scope: the
semantics of each verb (tests/kubectl/test_write.py, test_get.py...) and per-kind rules (tests/api).
One server, a namespace per namespaced kind, and each verb one kubectl call over every object (a watch
per kind): kubectl reports an error per object and goes on with the others.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from api import server as servers
from cp import resources as res
from tests import samples as sample_objects
from tests.clients import support
from tests.kubectl.conftest import KUBECTL, Kubectl
from tests.waiting import eventually

pytestmark = pytest.mark.kubectl

STORED = [k for k in res.KINDS if k.group != res.SIM_GROUP and k.stored]


def _namespace(kind: res.ResourceKind) -> str:
    return f"crud-{kind.plural}" if kind.namespaced else ""


def _problems(what: str, obj: Any) -> list[str]:
    """Schema and typed-client problems of an object, or of each item of a list (kubectl prints several
    objects as a `kind: List`, which has no schema of its own)."""
    if not isinstance(obj, dict):
        return [f"{what}: not an object: {obj!r:.200}"]
    if obj.get("kind") == "List":
        return [p for i, item in enumerate(obj.get("items") or ()) for p in _problems(f"{what} [{i}]", item)]
    name = (obj.get("metadata") or {}).get("name")
    return [f"{what} {obj.get('kind')} {name}: {p}" for p in support.schema_problems(obj) + support.typed_problems(obj)]


def _events(text: str) -> list[dict[str, Any]]:
    """JSON documents printed one after the other (the events of `kubectl get -w --output-watch-events -o
    json`, or the objects of a write over several)."""
    decoder = json.JSONDecoder()
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        event, end = decoder.raw_decode(text, pos)
        out.append(event)
        pos = end
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


async def _watchers(http: aiohttp.ClientSession) -> float:
    async with http.get("/metrics") as r:
        text = await r.text()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("apiserver_registered_watchers{"))


def _objects() -> list[dict[str, Any]]:
    """Every sample, in its kind's namespace."""
    out = []
    for kind in STORED:
        obj = sample_objects.samples(_namespace(kind))[(kind.group, kind.plural)]
        if kind.namespaced:
            obj["metadata"]["namespace"] = _namespace(kind)
        out.append(obj)
    return out


async def _step(kubectl: Kubectl, what: str, *args: str, problems: list[str], input: str | None = None) -> Any:
    """One kubectl call over every object; an error on any of them is a problem (kubectl goes on with
    the others). Returns the JSON it printed, if any."""
    r = await kubectl(*args, input=input, check=False, timeout=60)
    if r.code != 0:
        problems.append(f"{what}: exit {r.code}: {r.stderr.strip()}")
    # One object, a List, or (some commands) the objects one after the other.
    docs = _events(r.stdout) if r.stdout.lstrip().startswith("{") else []
    out = docs[0] if len(docs) == 1 else {"kind": "List", "items": docs} if docs else None
    if out is not None:
        problems.extend(_problems(what, out))
    return out


async def test_every_stored_resource_through_kubectl(kubectl: Kubectl) -> None:
    problems: list[str] = []
    namespaces = sorted({_namespace(k) for k in STORED if k.namespaced})
    await kubectl("create", "-f", "-", input=yaml.safe_dump_all(
        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces]))
    objects = _objects()
    path = kubectl.write("all.yaml", yaml.safe_dump_all(objects))

    # A watch per kind (kubectl watches one type at a time), open before the first write.
    watches = {}
    for kind in STORED:
        ns = ["-n", _namespace(kind)] if kind.namespaced else []
        watches[kind.group_resource] = await kubectl.start(
            "get", kind.group_resource, *ns, "-w", "--output-watch-events", "-o", "json", "--request-timeout=90s")
    async with aiohttp.ClientSession(base_url=kubectl.server.url) as http:
        async def all_open() -> bool:
            return await _watchers(http) >= len(STORED)

        await eventually(all_open, within=30, interval=0.05, what="every watch open")

    created = await _step(kubectl, "create", "create", "-f", path, "-o", "json", problems=problems)
    assert created is not None and len(created["items"]) == len(objects), problems
    got = await _step(kubectl, "get", "get", "-f", path, "-o", "json", problems=problems)
    assert got is not None, problems
    # Lists: JSON across namespaces, and the tables (one request per type, upstream's printer columns).
    types = ",".join(k.group_resource for k in STORED)
    await _step(kubectl, "list", "get", types, "-A", "-o", "json", problems=problems)
    table = await kubectl("get", types, "-A", check=False, timeout=60)
    if table.code != 0:
        problems.append(f"table: exit {table.code}: {table.stderr}")
    for item in got["items"]:
        item["metadata"].setdefault("labels", {})["replaced"] = "1"
    await _step(kubectl, "replace", "replace", "-f", "-", "-o", "json", input=json.dumps(got), problems=problems)
    for patch_type, patch in (("json", '[{"op": "add", "path": "/metadata/labels/json", "value": "1"}]'),
                              ("merge", '{"metadata": {"labels": {"merge": "1"}}}'),
                              ("strategic", '{"metadata": {"labels": {"strategic": "1"}}}')):
        await _step(kubectl, f"patch --type={patch_type}", "patch", "-f", path, f"--type={patch_type}", "-p", patch,
                    "-o", "json", problems=problems)
    for obj in objects:
        obj["metadata"].setdefault("labels", {})["applied"] = "1"
    # --force-conflicts: what the server defaulted in atomic lists, or set itself (a CSR's requester),
    # conflicts with the applied values, as upstream (tests/kubectl/test_apply_server_side.py has those).
    applied = await _step(kubectl, "apply", "apply", "--server-side", "--force-conflicts", "--field-manager=crud",
                          "-f", "-", "-o", "json", input=yaml.safe_dump_all(objects), problems=problems)
    for item in (applied or {}).get("items") or ():
        labels = item["metadata"].get("labels") or {}
        if not {"replaced", "json", "merge", "strategic", "applied"} <= labels.keys():
            problems.append(f"labels of {item['kind']} {item['metadata']['name']} after the writes: {labels}")
    await _step(kubectl, "delete", "delete", "-f", path, "--wait=false", problems=problems)

    for kind in STORED:
        watch = watches[kind.group_resource]
        # Namespaces stay Terminating (no namespace controller here): their last event is that update.
        with contextlib.suppress(AssertionError):  # reported below, with the events seen
            await watch.expect('"deletionTimestamp"' if kind.kind == "Namespace" else '"type":"DELETED"',
                               timeout=30)
        await watch.stop()
        events = _events(watch.stdout)
        kinds = [e.get("type") for e in events]
        if kinds[:1] != ["ADDED"] or kinds.count("MODIFIED") < 5 or \
                (kind.kind != "Namespace" and kinds[-1:] != ["DELETED"]):
            problems.append(f"watch {kind.group_resource}: {kinds} {watch.stderr.strip()}")
        for event in events:
            problems += _problems(f"watch {event.get('type')}", event.get("object"))
    assert not problems, "\n".join(problems)


async def test_bindings_and_componentstatuses_through_kubectl(kubectl: Kubectl) -> None:
    """A Binding (create-only) assigns a pod; componentstatuses are computed. Both answers are
    strict-schema-checked and typed-client-read."""
    problems: list[str] = []
    cs = await _step(kubectl, "componentstatuses", "get", "componentstatuses", "-o", "json", problems=problems)
    assert cs is not None and cs["items"], problems
    await kubectl("get", "cs")
    await kubectl("create", "-f", "-", input=yaml.safe_dump(support.pod("bound")))
    await kubectl("create", "-f", "-", input=yaml.safe_dump(
        {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "bound"},
         "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}))
    pod = await _step(kubectl, "bound pod", "get", "pod", "bound", "-o", "json", problems=problems)
    assert pod is not None and pod["spec"]["nodeName"] == "node-1", problems
    assert not problems, "\n".join(problems)


async def test_self_subject_reviews_through_kubectl(tmp_path: Path) -> None:
    """The reviews a server with authentication answers (`kubectl auth can-i`, `auth whoami`, and
    `create -f` of each), each answer strict-schema-checked and typed-client-read."""
    if KUBECTL is None:
        pytest.skip("kubectl not found: run `make test` (tests/tools/fetch-kubectl.sh) or set CPLANE_KUBECTL")
    async with servers.running(data_dir=tmp_path / "data", secure=True) as srv:
        kubectl = Kubectl(srv, home=tmp_path / "home", workdir=tmp_path / "work")
        try:
            problems: list[str] = []
            authz = "authorization.k8s.io/v1"
            for kind, spec in (
                    ("SelfSubjectAccessReview", {"resourceAttributes": {"verb": "list", "resource": "pods",
                                                                        "namespace": "default"}}),
                    ("SelfSubjectRulesReview", {"namespace": "default"})):
                out = await _step(kubectl, kind, "create", "-f", "-", "-o", "json", problems=problems,
                                  input=yaml.safe_dump({"apiVersion": authz, "kind": kind, "spec": spec}))
                if not isinstance(out, dict) or out.get("kind") != kind or "status" not in out:
                    problems.append(f"{kind}: answered {out}")
            whoami = await _step(kubectl, "whoami", "auth", "whoami", "-o", "json", problems=problems)
            assert whoami is not None and whoami["kind"] == "SelfSubjectReview", problems
            assert (await kubectl("auth", "can-i", "list", "pods")).stdout == "yes\n"
            assert not problems, "\n".join(problems)
        finally:
            await kubectl.close()
