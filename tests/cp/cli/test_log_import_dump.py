"""`cplane log import --dump`: each dump format (kubectl get -o yaml|json, kubectl cluster-info dump as a
directory and as one stream, kwok's snapshot), the order (definitions and namespaces first), times,
actors, redaction, and malformed input that names the file and line and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cp import cli, dumps

T0 = "2026-03-01T10:00:00Z"
T0_UNIX = 1772359200.0


def cplane(capsys: Any, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def imported(capsys: Any, data_dir: Path, *dump: Path, flags: tuple[str, ...] = ()) -> str:
    code, _, err = cplane(capsys, "log", "import", "--dump", *map(str, dump), "--data-dir", str(data_dir), *flags)
    assert code == 0, err
    return err


def events(capsys: Any, data_dir: Path) -> list[dict[str, Any]]:
    code, out, err = cplane(capsys, "log", "events", "--data-dir", str(data_dir), "-o", "ndjson")
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


def names(evs: list[dict[str, Any]]) -> list[str]:
    return [f"{e['resource']}/{e['name']}" for e in evs]


def pod(name: str, *, namespace: str = "shop", created: str | None = T0, rv: str = "100",
        **meta: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                                "resourceVersion": rv, **meta}
    if created is not None:
        metadata["creationTimestamp"] = created
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            "status": {"phase": "Pending"}}


NAMESPACE = {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": "shop", "uid": "uid-shop", "creationTimestamp": "2026-02-01T00:00:00Z"}}
CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "widgets.example.com", "uid": "uid-crd"},
       "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": True, "storage": True,
                              "schema": {"openAPIV3Schema": {"type": "object",
                                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}
WIDGET = {"apiVersion": "example.com/v1", "kind": "Widget",
          "metadata": {"name": "w", "namespace": "shop", "uid": "uid-w"}, "spec": {"size": 3}}


def test_kubectl_json_list_defines_before_it_uses(capsys: Any, tmp_path: Path) -> None:
    owned = pod("web-1", ownerReferences=[{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                           "uid": "uid-rs", "controller": True}], labels={"app": "web"})
    dump = tmp_path / "all.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                                "items": [WIDGET, owned, NAMESPACE, CRD]}, indent=4))
    err = imported(capsys, tmp_path / "d", dump)
    assert "imported 4 events from 1 files" in err
    evs = events(capsys, tmp_path / "d")
    # The definition and the namespace first, then the rest in the dump's order.
    assert names(evs) == ["namespaces/shop", "customresourcedefinitions/widgets.example.com", "widgets/w",
                          "pods/web-1"]
    assert [e["type"] for e in evs] == ["ADDED"] * 4 and [e["revision"] for e in evs] == [1, 2, 3, 4]
    got = evs[3]["object"]
    assert got["metadata"]["uid"] == "uid-web-1" and got["metadata"]["labels"] == {"app": "web"}
    assert got["metadata"]["ownerReferences"][0]["uid"] == "uid-rs"
    assert got["status"] == {"phase": "Pending"} and got["metadata"]["resourceVersion"] == "4"
    assert evs[3]["actor"] == {"user": "import", "request_id": "source=100"}


def test_yaml_documents_times_and_managers(capsys: Any, tmp_path: Path) -> None:
    early = pod("early", created="2026-01-01T00:00:00Z",
                managedFields=[{"manager": "kubectl", "operation": "Update", "time": "2026-01-01T00:00:00Z"},
                               {"manager": "kube-scheduler", "operation": "Update", "time": "2026-01-01T00:00:09Z"},
                               {"manager": "kubelet", "operation": "Update", "time": "2026-01-01T00:00:05Z"}])
    late = pod("late", created="2026-04-01T00:00:00Z")
    bare = pod("bare", created=None)
    dump = tmp_path / "pods.yaml"
    import yaml

    # A hand-written file: unquoted timestamps stay strings, as Kubernetes reads them.
    dump.write_text("---\n" + yaml.safe_dump(NAMESPACE).replace('"', "") + "---\n"
                    + "---\n".join(yaml.safe_dump(o) for o in (late, early, bare)))
    imported(capsys, tmp_path / "d", dump)
    evs = events(capsys, tmp_path / "d")
    assert names(evs) == ["namespaces/shop", "pods/late", "pods/early", "pods/bare"]
    times = [e["time"] for e in evs]
    # creationTimestamp, raised to the previous event's time: the log's times grow with its revisions.
    assert times == [1769904000.0, 1775001600.0, 1775001600.0, 1775001600.0]
    assert evs[0]["object"]["metadata"]["creationTimestamp"] == "2026-02-01T00:00:00Z"
    assert evs[2]["object"]["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"  # kept as it was
    assert evs[2]["actor"]["field_manager"] == "kube-scheduler"


def test_yaml_lists_in_any_layout(capsys: Any, tmp_path: Path) -> None:
    # kubectl's layout (items at column 0, read one at a time), a typed list (`cluster-info dump -o
    # yaml`), and items indented under `items:` (read as one document).
    kubectl_layout = ("apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: shop\n"
                      "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: one\n    namespace: shop\n"
                      "  spec:\n    containers:\n    - name: c\n      image: nginx\n"
                      "kind: List\nmetadata:\n  resourceVersion: \"\"\n")
    typed = ("apiVersion: v1\nitems:\n-\n  metadata:\n    name: n1\n    uid: uid-n1\n"
             "kind: NodeList\nmetadata:\n  resourceVersion: \"7\"\n")
    indented = ("kind: List\napiVersion: v1\nitems:\n  - apiVersion: v1\n    kind: Pod\n    metadata:\n"
                "      name: two\n      namespace: shop\n")
    for name, text in (("a.yaml", kubectl_layout), ("b.yaml", typed), ("c.yaml", indented)):
        (tmp_path / name).write_text(text)
    imported(capsys, tmp_path / "d", tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "c.yaml")
    evs = events(capsys, tmp_path / "d")
    assert names(evs) == ["namespaces/shop", "pods/one", "nodes/n1", "pods/two"]
    # as the API server would have stored it: the pod's defaults are filled in
    container = evs[1]["object"]["spec"]["containers"][0]
    assert (container["name"], container["image"], container["imagePullPolicy"]) == ("c", "nginx", "Always")
    assert evs[2]["object"]["kind"] == "Node"


def test_a_directory_is_read_recursively_in_order(capsys: Any, tmp_path: Path) -> None:
    root = tmp_path / "dump"
    (root / "b").mkdir(parents=True)
    (root / "a.yaml").write_text(json.dumps(pod("one")))
    (root / "b" / "c.yml").write_text(json.dumps(pod("two")))
    (root / "b" / "notes.md").write_text("not a dump: {{ }}")
    (root / "z.json").write_text(json.dumps(NAMESPACE))
    imported(capsys, tmp_path / "d", root)
    assert names(events(capsys, tmp_path / "d")) == ["namespaces/shop", "pods/one", "pods/two"]


def typed_list(kind: str, api_version: str, *items: dict[str, Any]) -> str:
    """As `kubectl cluster-info dump` prints a typed list: the items without apiVersion and kind."""
    bare = [{k: v for k, v in item.items() if k not in ("apiVersion", "kind")} for item in items]
    return json.dumps({"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": "555"},
                       "items": bare}, indent=4) + "\n"


NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "uid-n1", "creationTimestamp": T0},
        "status": {"allocatable": {"cpu": "4", "pods": "110"}}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "web", "namespace": "shop", "uid": "uid-dep", "creationTimestamp": T0},
              "spec": {"selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}},
                                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def test_cluster_info_dump_directory(capsys: Any, tmp_path: Path) -> None:
    root = tmp_path / "cluster-state"
    (root / "shop" / "web-1").mkdir(parents=True)
    (root / "nodes.json").write_text(typed_list("NodeList", "v1", NODE))
    (root / "shop" / "pods.json").write_text(typed_list("PodList", "v1", pod("web-1")))
    (root / "shop" / "deployments.json").write_text(typed_list("DeploymentList", "apps/v1", DEPLOYMENT))
    for empty, api_version in (("events", "v1"), ("replication-controllers", "v1"), ("services", "v1"),
                               ("daemonsets", "apps/v1"), ("replicasets", "apps/v1")):
        kind = {"events": "EventList", "replication-controllers": "ReplicationControllerList",
                "services": "ServiceList", "daemonsets": "DaemonSetList", "replicasets": "ReplicaSetList"}[empty]
        (root / "shop" / f"{empty}.json").write_text(typed_list(kind, api_version))
    (root / "shop" / "web-1" / "logs.txt").write_text("==== START logs for container c of pod shop/web-1 ====\n"
                                                      "{not json\n==== END logs for container c of pod "
                                                      "shop/web-1 ====\n")
    imported(capsys, tmp_path / "d", root)
    evs = events(capsys, tmp_path / "d")
    assert names(evs) == ["nodes/n1", "deployments/web", "pods/web-1"]
    assert evs[0]["object"]["kind"] == "Node" and evs[1]["object"]["apiVersion"] == "apps/v1"
    assert evs[0]["object"]["status"].items() >= NODE["status"].items()  # kept, with the Go zero fields


def test_cluster_info_dump_stream_skips_the_logs(capsys: Any, tmp_path: Path) -> None:
    stream = (typed_list("NodeList", "v1", NODE) + typed_list("EventList", "v1")
              + typed_list("PodList", "v1", pod("web-1"), pod("web-2"))
              + "==== START logs for container c of pod shop/web-1 ====\n{\"half\": \n"
              + "==== END logs for container c of pod shop/web-1 ====\n"
              + "==== START logs for container c of pod shop/web-2 ====\nRequest log error: gone\n"
              + "==== END logs for container c of pod shop/web-2 ====\n"
              + typed_list("DeploymentList", "apps/v1", DEPLOYMENT))
    dump = tmp_path / "cluster-info.txt"
    dump.write_text(stream)
    imported(capsys, tmp_path / "d", dump)
    assert names(events(capsys, tmp_path / "d")) == ["nodes/n1", "pods/web-1", "pods/web-2", "deployments/web"]


KWOK_SNAPSHOT = """\
apiVersion: v1
kind: Namespace
metadata:
  name: shop
  uid: 3d1c2f3e-0000-4000-8000-000000000001
spec:
  finalizers:
  - kubernetes
status:
  phase: Active
---
apiVersion: v1
kind: Node
metadata:
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    type: kwok
  name: kwok-node-0
  uid: 3d1c2f3e-0000-4000-8000-000000000002
status:
  allocatable:
    cpu: "32"
    pods: "110"
---
apiVersion: v1
kind: Pod
metadata:
  name: web-0
  namespace: shop
  uid: 3d1c2f3e-0000-4000-8000-000000000003
spec:
  containers:
  - image: nginx
    name: nginx
  nodeName: kwok-node-0
status:
  phase: Running
---
apiVersion: kwok.x-k8s.io/internal
kind: ResourcePatch
target:
  type:
    version: v1
    resource: pods
  name: web-0
  namespace: shop
durationNanosecond: 1500000000
delete: true
"""


def test_kwok_snapshot(capsys: Any, tmp_path: Path) -> None:
    dump = tmp_path / "snapshot.yaml"
    dump.write_text(KWOK_SNAPSHOT)
    os_time = 1_780_000_000
    import os

    os.utime(dump, (os_time, os_time))
    err = imported(capsys, tmp_path / "d", dump)
    evs = events(capsys, tmp_path / "d")
    assert names(evs) == ["namespaces/shop", "nodes/kwok-node-0", "pods/web-0"]
    # kwok clears creationTimestamp: the snapshot file's time stands in.
    assert {e["time"] for e in evs} == {float(os_time)}
    assert evs[2]["object"]["spec"]["nodeName"] == "kwok-node-0"
    assert "skipped 1 ResourcePatch.kwok.x-k8s.io (a kind cplane does not serve)" in err


def test_unserved_kinds_are_counted_per_kind(capsys: Any, tmp_path: Path) -> None:
    dump = tmp_path / "all.yaml"
    gadget = {"apiVersion": "example.org/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    dump.write_text("\n---\n".join(json.dumps(o) for o in (gadget, gadget, WIDGET, pod("p"))))
    err = imported(capsys, tmp_path / "d", dump)
    assert "skipped 2 Gadget.example.org" in err and "skipped 1 Widget.example.com" in err
    assert "imported 1 events" in err


def test_secrets_and_configmaps_are_redacted_unless_kept(capsys: Any, tmp_path: Path) -> None:
    last_applied = {"kubectl.kubernetes.io/last-applied-configuration": '{"data":{"password":"aHVudGVy"}}'}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "shop",
                                                                 "annotations": last_applied},
              "type": "Opaque", "data": {"password": "aHVudGVy"}}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "shop"},
              "data": {"url": "postgres://u:p@db"}, "binaryData": {"blob": "AAEC"}}
    dump = tmp_path / "all.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [secret, config]}))
    imported(capsys, tmp_path / "redacted", dump)
    objs = {e["name"]: e["object"] for e in events(capsys, tmp_path / "redacted")}
    assert objs["s"]["data"] == {"password": "REDACTED"} and "annotations" not in objs["s"]["metadata"]
    assert objs["c"]["data"] == {"url": "REDACTED"} and objs["c"]["binaryData"] == {"blob": "REDACTED"}
    imported(capsys, tmp_path / "kept", dump, flags=("--keep-secrets",))
    objs = {e["name"]: e["object"] for e in events(capsys, tmp_path / "kept")}
    assert objs["s"]["data"] == {"password": "aHVudGVy"} and objs["c"]["data"] == {"url": "postgres://u:p@db"}


@pytest.mark.parametrize(("name", "text", "where"), [
    ("bad.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\n"
                 "metadata: [name: x\n", "bad.yaml:8: document 2: invalid YAML"),
    ("list.yaml", "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: a\n"
                  "- apiVersion: v1\n  kind: Pod\n  metadata: {name: x\n  spec: {}\nkind: List\nmetadata:\n"
                  "  resourceVersion: \"\"\n", "list.yaml:10: document 1: item 1: invalid YAML: did not find expected"),
    ("bad.json", '{"apiVersion": "v1", "kind": "List", "items": [\n  {"apiVersion": "v1",\n  "kind": }\n]}',
     "bad.json:3: invalid JSON: Expecting value (column 11)"),
    ("noname.yaml", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: a}\n"
                    "- apiVersion: v1\n  kind: Pod\n  metadata: {namespace: a}\n",
     "noname.yaml:7: document 1: Pod without metadata.name"),
    ("nokind.json", '{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}\n'
                    '{"metadata": {"name": "b"}}\n', "nokind.json:2: document 2: an object needs apiVersion and kind"),
    ("scalar.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\njust text\n",
     "scalar.yaml:5: document 2: not an object (a str)"),
    ("items.json", '{"apiVersion": "v1", "kind": "List", "items": {"a": 1}}', "items.json:1: document 1: "
                                                                               "List.items is not a list"),
])
def test_malformed_input_names_the_place_and_writes_nothing(capsys: Any, tmp_path: Path, name: str, text: str,
                                                            where: str) -> None:
    good = tmp_path / "a-good.yaml"
    good.write_text(json.dumps(NAMESPACE))
    bad = tmp_path / name
    bad.write_text(text)
    code, _, err = cplane(capsys, "log", "import", "--dump", str(good), str(bad), "--data-dir", str(tmp_path / "d"))
    assert code == 1
    assert f"cplane log import: {tmp_path}/{where}" in err and "nothing was written" in err, err
    assert events(capsys, tmp_path / "d") == []
    imported(capsys, tmp_path / "d", good)  # the store is still empty: importable
    assert names(events(capsys, tmp_path / "d")) == ["namespaces/shop"]


def test_usage_errors(capsys: Any, tmp_path: Path) -> None:
    code, _, err = cplane(capsys, "log", "import", "--dump", str(tmp_path / "missing"), "--data-dir",
                          str(tmp_path / "d"))
    assert code == 1 and f"{tmp_path}/missing: no such file or directory" in err
    (tmp_path / "x.yaml").write_text(json.dumps(NAMESPACE))
    code, _, err = cplane(capsys, "log", "import", "events.ndjson", "--dump", str(tmp_path / "x.yaml"),
                          "--data-dir", str(tmp_path / "d"))
    assert code == 2 and "--dump takes no NDJSON input" in err
    imported(capsys, tmp_path / "d", tmp_path / "x.yaml")
    code, _, err = cplane(capsys, "log", "import", "--dump", str(tmp_path / "x.yaml"), "--data-dir",
                          str(tmp_path / "d"))
    assert code == 1 and "not empty" in err


def test_dump_error_text() -> None:
    assert str(dumps.DumpError("bad", file="f.yaml", line=3)) == "f.yaml:3: bad"
    assert str(dumps.DumpError("bad", file="f.yaml", line=0)) == "f.yaml: bad"
