"""Tests for `cp.protobuf`: what Go writes and reads, both ways, for every served kind.

- Golden bytes from a real Go client: the `*.pb` fixtures under `data/` are request bodies captured
  from kubectl 1.37.1 (29 imperative commands) pointed at the small stub server below; the `*.json`
  ones are what the same kubectl prints for the same command with `--dry-run=client -o json`, i.e.
  the JSON body of the JSON path. Each body decodes to that JSON, and encoding it gives kubectl's
  bytes back. The tests marked `kubectl` rerun the commands live and check that the fixtures are
  still what kubectl sends. Regenerate them (all, or the cases named) with:

      .venv/bin/python tests/cp/test_protobuf.py --regen [CASE...]

- Hand-built messages for what kubectl does not send (unknown fields, packed numbers, malformed and
  amplifying bodies, times, maps).
- The table against the published OpenAPI schemas, and every kind's round trip JSON -> protobuf ->
  JSON with every field set, from objects built from those schemas.

Upstream's own serialization fixtures are checked by `tools/protobuf_fixtures.py` (docs/api.md).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from cp import errors, protobuf, resources, schemas
from cp.protobuf import table, wire

DATA = Path(__file__).parent / "data"
KUBECTL = Path(os.environ.get("KUBECTL", Path(__file__).parents[2] / ".venv" / "bin" / "kubectl"))


# ---------------------------------------------------------------------------------------------
# The commands, and what each body must decode to.
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]
    method: str = "POST"
    dry_run: bool = True  # the expected JSON is kubectl's `--dry-run=client -o json` output


CASES = (
    Case("namespace", ("create", "namespace", "foo")),
    Case("deployment", ("create", "deployment", "web", "--image=nginx", "--replicas=2", "--port=80")),
    Case("deployment-command", ("create", "deployment", "job", "--image=busybox:1.36", "--replicas=0",
                                "--", "sh", "-c", "echo hi")),
    Case("deployment-images", ("create", "deployment", "two", "--image=nginx", "--image=redis:7")),
    Case("configmap", ("create", "configmap", "cfg", "--from-literal=a=b", "--from-literal=empty=",
                       "--from-file=hello.txt", "--from-file=blob=blob.bin")),
    Case("hpa-utilization", ("autoscale", "deployment", "web", "--min=1", "--max=5", "--cpu=80%")),
    Case("hpa-average", ("autoscale", "deployment", "web", "--name=web-avg", "--max=8", "--cpu=500m",
                         "--memory=200Mi")),
    # `kubectl debug --copy-to` GETs the pod as JSON and POSTs its copy as protobuf, so this one
    # checks the whole PodSpec round trip: JSON -> Go -> protobuf -> cp.protobuf.
    Case("pod-copy", ("debug", "rich", "--copy-to=rich-copy", "--container=dbg", "--image=busybox",
                      "--keep-labels", "--keep-annotations", "--keep-liveness", "--keep-readiness",
                      "--keep-startup", "--same-node", "--share-processes=false"), dry_run=False),
    Case("pod-node-debug", ("debug", "node/n1", "--image=busybox", "--profile=sysadmin"), dry_run=False),
    # `kubectl drain --disable-eviction` deletes through the typed client: DeleteOptions as protobuf.
    Case("delete-options", ("drain", "n1", "--force", "--disable-eviction", "--grace-period=30"),
         method="DELETE", dry_run=False),
    # The other imperative generators, each a typed client of its group (issue #18).
    Case("secret-generic", ("create", "secret", "generic", "creds", "--from-literal=user=admin",
                            "--from-literal=password=s3cr=t", "--from-file=blob=blob.bin")),
    Case("secret-tls", ("create", "secret", "tls", "site-tls", "--cert=tls.crt", "--key=tls.key")),
    Case("secret-docker-registry", ("create", "secret", "docker-registry", "pull", "--docker-server=registry.example",
                                    "--docker-username=robot", "--docker-password=pa55", "--docker-email=r@x.io")),
    Case("service-clusterip", ("create", "service", "clusterip", "web", "--tcp=80:8080", "--tcp=443:8443")),
    Case("service-headless", ("create", "service", "clusterip", "peers", "--clusterip=None")),
    Case("service-nodeport", ("create", "service", "nodeport", "edge", "--tcp=80:8080", "--node-port=30080")),
    Case("service-externalname", ("create", "service", "externalname", "mail", "--external-name=mx.example.com")),
    Case("serviceaccount", ("create", "serviceaccount", "robot")),
    Case("job", ("create", "job", "once", "--image=busybox:1.36", "--", "echo", "hi")),
    Case("cronjob", ("create", "cronjob", "nightly", "--image=busybox:1.36", "--schedule=0 3 * * *",
                     "--restart=OnFailure", "--", "date")),
    Case("quota", ("create", "quota", "compute", "--hard=cpu=2,memory=4Gi,pods=10,count/deployments.apps=3",
                   "--scopes=NotTerminating")),
    Case("role", ("create", "role", "reader", "--verb=get,list,watch", "--resource=pods,deployments.apps",
                  "--resource-name=web")),
    Case("rolebinding", ("create", "rolebinding", "read", "--role=reader", "--user=alice", "--group=devs",
                         "--serviceaccount=default:robot")),
    Case("clusterrole", ("create", "clusterrole", "node-reader", "--verb=get,list", "--resource=nodes")),
    Case("clusterrole-aggregated", ("create", "clusterrole", "monitoring",
                                    "--aggregation-rule=rbac.example.com/aggregate-to-monitoring=true")),
    Case("clusterrolebinding", ("create", "clusterrolebinding", "ops", "--clusterrole=view", "--group=ops")),
    Case("priorityclass", ("create", "priorityclass", "high", "--value=1000", "--description=batch jobs first",
                           "--preemption-policy=Never")),
    Case("poddisruptionbudget", ("create", "poddisruptionbudget", "web", "--selector=app=web",
                                 "--min-available=50%")),
    Case("ingress", ("create", "ingress", "site", "--class=nginx", "--annotation=team=web",
                     "--rule=site.example.com/api*=web:80,tls=site-tls")),
)
CASE_BY_NAME = {c.name: c for c in CASES}
FILES = {"hello.txt": b"hello\nworld\n", "blob.bin": bytes(range(256)),
         # A throwaway self-signed certificate: `create secret tls` checks the pair.
         "tls.crt": (DATA / "tls.crt").read_bytes(), "tls.key": (DATA / "tls.key").read_bytes()}


def rich_pod() -> dict[str, Any]:
    return json.loads((DATA / "rich-pod.json").read_text())


def expected(case: Case) -> dict[str, Any]:
    if case.dry_run:
        return json.loads((DATA / f"{case.name}.json").read_text())
    if case.name == "pod-copy":
        source = rich_pod()
        meta = source["metadata"]
        spec = copy.deepcopy(source["spec"])
        spec["shareProcessNamespace"] = False
        # The debug container as kubectl's "general" profile makes it.
        spec["containers"].append({"name": "dbg", "image": "busybox", "resources": {},
                                   "terminationMessagePolicy": "File",
                                   "securityContext": {"capabilities": {"add": ["SYS_PTRACE"]}}})
        return {"kind": "Pod", "apiVersion": "v1",
                "metadata": {k: meta[k] for k in ("namespace", "labels", "annotations")} | {
                    "name": "rich-copy"},
                "spec": spec, "status": {}}
    if case.name == "pod-node-debug":
        return {"kind": "Pod", "apiVersion": "v1",
                "metadata": {"name": "node-debugger-n1-XXXXX",
                             "labels": {"app.kubernetes.io/managed-by": "kubectl-debug"}},
                "spec": {"volumes": [{"name": "host-root", "hostPath": {"path": "/"}}],
                         "containers": [{"name": "debugger", "image": "busybox", "resources": {},
                                         "volumeMounts": [{"name": "host-root", "mountPath": "/host"}],
                                         "securityContext": {"privileged": True},
                                         "terminationMessagePolicy": "File"}],
                         "restartPolicy": "Never", "nodeName": "n1", "hostNetwork": True,
                         "hostPID": True, "hostIPC": True, "tolerations": [{"operator": "Exists"}]},
                "status": {}}
    if case.name == "delete-options":
        return {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 30}
    raise AssertionError(case.name)


def normalized(case: Case, obj: dict[str, Any]) -> dict[str, Any]:
    if case.name == "pod-node-debug":  # the name ends in 5 random characters
        obj = copy.deepcopy(obj)
        obj["metadata"]["name"] = obj["metadata"]["name"][:-5] + "XXXXX"
    return obj


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kubectl_body_decodes_to_its_json(case: Case) -> None:
    body = (DATA / f"{case.name}.pb").read_bytes()
    assert normalized(case, protobuf.decode(body)) == expected(case)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_encoding_kubectl_objects_gives_kubectl_bytes(case: Case) -> None:
    """Golden bytes from a real Go client: the objects kubectl 1.37.1 sent, encoded here, are the bytes
    it sent (field order, zero values of non-pointer fields, map order, times, quantities...)."""
    body = (DATA / f"{case.name}.pb").read_bytes()
    obj = protobuf.decode(body)
    assert protobuf.encode(obj, api_version=obj["apiVersion"], kind=obj["kind"]) == body


def test_configmap_binary_data_is_base64() -> None:
    got = protobuf.decode((DATA / "configmap.pb").read_bytes())
    assert got["data"] == {"a": "b", "empty": "", "hello.txt": "hello\nworld\n"}
    assert base64.b64decode(got["binaryData"]["blob"]) == FILES["blob.bin"]


def test_rich_pod_keeps_zero_pointers_and_drops_node_name_only_when_asked() -> None:
    spec = protobuf.decode((DATA / "pod-copy.pb").read_bytes())["spec"]
    main = spec["containers"][0]
    # Pointers set to zero survive; omitempty zeros do not appear.
    assert spec["terminationGracePeriodSeconds"] == 0
    assert spec["automountServiceAccountToken"] is False
    assert spec["priority"] == -5
    assert spec["activeDeadlineSeconds"] == 1 << 40
    assert spec["securityContext"]["supplementalGroups"] == [4000, 5000, 1 << 32]
    assert main["securityContext"]["runAsUser"] == 0
    assert main["livenessProbe"]["httpGet"]["port"] == 8080
    assert main["readinessProbe"]["tcpSocket"]["port"] == "http"
    assert main["env"][1] == {"name": "EMPTY"}
    assert spec["tolerations"][1] == {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0}


# ---------------------------------------------------------------------------------------------
# Hand-built messages: a tiny encoder for what kubectl does not send.
# ---------------------------------------------------------------------------------------------

def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def f(number: int, value: int | bool | str | bytes) -> bytes:
    """One field: ints and bools as varints, str and bytes length-delimited."""
    if isinstance(value, (bool, int)):
        return varint(number << 3) + varint(int(value))
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def entry(number: int, key: str, value: str | bytes) -> bytes:
    return f(number, f(1, key) + f(2, value))


def envelope(api_version: str, kind: str, raw: bytes, *, extra: bytes = b"") -> bytes:
    return protobuf.MAGIC + f(1, f(1, api_version) + f(2, kind)) + f(2, raw) + f(3, "") + f(4, "") + extra


def time_(seconds: int, nanos: int = 0) -> bytes:
    return f(1, seconds) + (f(2, nanos) if nanos else b"")


def intstr(value: int | str) -> bytes:
    return f(1, 1) + f(2, 0) + f(3, value) if isinstance(value, str) else f(1, 0) + f(2, value) + f(3, "")


def meta(name: str, **more: bytes) -> bytes:
    # Like gogo: non-pointer fields are always written, zero or not.
    return (f(1, name) + f(2, "") + f(3, "default") + f(4, "") + f(5, "") + f(6, "") + f(7, 0)
            + f(8, b"") + b"".join(more.values()))


def test_full_deployment_spec() -> None:
    selector = entry(1, "app", "web") + f(2, f(1, "tier") + f(2, "In") + f(3, "a") + f(3, "b"))
    container = (f(1, "web") + f(2, "nginx") + f(8, b"") + f(13, "/dev/termination-log") + f(14, "Always")
                 + f(16, False) + f(17, False) + f(18, False) + f(20, "File"))
    pod_spec = (f(2, container) + f(3, "Always") + f(6, "ClusterFirst") + f(11, False)
                + f(19, "default-scheduler"))
    template = f(1, meta("", labels=entry(11, "app", "web"))) + f(2, pod_spec)
    strategy = f(1, "RollingUpdate") + f(2, f(1, intstr(0)) + f(2, intstr("25%")))
    spec = (f(1, 0) + f(2, selector) + f(3, template) + f(4, strategy) + f(5, 0) + f(6, 0) + f(7, True)
            + f(9, 600))
    status = f(1, 0) + f(2, 0) + f(3, 0) + f(4, 0) + f(5, 0) + f(7, 0)
    got = protobuf.decode(envelope("apps/v1", "Deployment", f(1, meta("web")) + f(2, spec) + f(3, status)))
    assert got == {
        "kind": "Deployment", "apiVersion": "apps/v1",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"},
                         "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
            "template": {"metadata": {"namespace": "default", "labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": "nginx", "resources": {},
                                                  "terminationMessagePath": "/dev/termination-log",
                                                  "imagePullPolicy": "Always",
                                                  "terminationMessagePolicy": "File"}],
                                  "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
                                  "schedulerName": "default-scheduler"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}},
            "revisionHistoryLimit": 0, "paused": True, "progressDeadlineSeconds": 600,
        },
        "status": {},
    }


def test_times() -> None:
    lease_spec = f(1, "me") + f(2, 15) + f(3, time_(1767322245, 123456789)) + f(4, time_(0, 1000)) + f(5, 0)
    got = protobuf.decode(envelope("coordination.k8s.io/v1", "Lease",
                                   f(1, meta("l", deletion=f(9, time_(1767322245, 999_999_999))))
                                   + f(2, lease_spec)))
    assert "creationTimestamp" not in got["metadata"]  # empty: zero time, omitzero
    assert got["metadata"]["deletionTimestamp"] == "2026-01-02T02:50:45Z"  # seconds precision
    assert got["spec"] == {"holderIdentity": "me", "leaseDurationSeconds": 15,
                           "acquireTime": "2026-01-02T02:50:45.123456Z",
                           "renewTime": "1970-01-01T00:00:00.000001Z", "leaseTransitions": 0}
    # A zero time where Go writes `null`.
    condition = f(1, "Available") + f(2, "True") + f(6, b"") + f(7, time_(1767322245)) + f(4, "") + f(5, "")
    status = f(6, condition)
    got = protobuf.decode(envelope("apps/v1", "Deployment", f(1, meta("d")) + f(3, status)))
    assert got["status"]["conditions"] == [{"type": "Available", "status": "True", "lastUpdateTime": None,
                                            "lastTransitionTime": "2026-01-02T02:50:45Z"}]


def test_configmap_immutable_and_maps() -> None:
    raw = (f(1, meta("c")) + entry(2, "k", "v") + entry(2, "k2", "") + f(2, f(1, "nokey-value-missing"))
           + entry(3, "bin", b"\x00\xff") + f(4, False))
    got = protobuf.decode(envelope("v1", "ConfigMap", raw))
    assert got == {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c", "namespace": "default"},
                   "data": {"k": "v", "k2": "", "nokey-value-missing": ""},
                   "binaryData": {"bin": "AP8="}, "immutable": False}


def test_unknown_fields_of_every_wire_type_are_skipped() -> None:
    unknown = (f(99, 7) + varint(98 << 3 | 1) + b"\x01" * 8 + varint(97 << 3 | 5) + b"\x02" * 4
               + f(96, "junk")
               # a group holding a nested group and a varint
               + varint(95 << 3 | 3) + varint(94 << 3 | 3) + f(1, 5) + varint(94 << 3 | 4)
               + varint(95 << 3 | 4))
    ns = f(1, meta("n") + unknown) + unknown + f(2, f(1, "kubernetes") + unknown)
    got = protobuf.decode(envelope("v1", "Namespace", ns, extra=unknown))
    assert got == {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "n", "namespace": "default"},
                   "spec": {"finalizers": ["kubernetes"]}, "status": {}}


def test_repeated_numbers_packed_or_not_and_last_scalar_wins() -> None:
    packed = varint(4 << 3 | 2) + varint(3) + varint(1) + varint(2) + varint(3)
    psc = f(4, 7) + packed + f(2, 5) + f(2, 0)  # runAsUser 5 then 0 (a pointer: the 0 stays)
    spec = f(2, f(1, "c")) + f(14, psc) + f(11, True) + f(11, False) + f(8, "sa") + f(8, "")
    got = protobuf.decode(envelope("v1", "Pod", f(2, spec)))["spec"]
    assert got["securityContext"] == {"supplementalGroups": [7, 1, 2, 3], "runAsUser": 0}
    assert "hostNetwork" not in got and "serviceAccountName" not in got
    # Two occurrences of a singular message merge.
    got = protobuf.decode(envelope("v1", "Pod", f(2, f(8, "a")) + f(2, f(10, "node"))))
    assert got["spec"] == {"serviceAccountName": "a", "nodeName": "node", "containers": None}


def test_negative_numbers() -> None:
    spec = f(25, -5) + f(4, -1) + f(5, -(1 << 40))
    got = protobuf.decode(envelope("v1", "Pod", f(2, spec)))["spec"]
    assert got == {"priority": -5, "terminationGracePeriodSeconds": -1, "activeDeadlineSeconds": -(1 << 40),
                   "containers": None}  # Go writes a nil slice without omitempty as null


def test_resource_slice_and_claim() -> None:
    attribute = f(4, "a100")
    capacity = f(1, f(1, "80Gi"))
    device = (f(1, "gpu-0") + f(2, f(1, "model") + f(2, attribute)) + f(2, f(1, "index") + f(2, f(2, 0)))
              + f(3, f(1, "memory") + f(2, capacity)) + f(3, f(1, "empty") + f(2, f(1, b""))))
    spec = f(1, "gpu.example.com") + f(2, f(1, "node-1") + f(2, 3) + f(3, 1)) + f(3, "node-1") + f(6, device)
    got = protobuf.decode(envelope("resource.k8s.io/v1", "ResourceSlice", f(1, meta("s")) + f(2, spec)))
    assert got["spec"] == {
        "driver": "gpu.example.com", "pool": {"name": "node-1", "generation": 3, "resourceSliceCount": 1},
        "nodeName": "node-1",
        "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}, "index": {"int": 0}},
                     "capacity": {"memory": {"value": "80Gi"}, "empty": {"value": "0"}}}]}
    opaque = f(1, f(1, "gpu.example.com") + f(2, f(1, b'{"mode": "shared", "n": [1, 2]}')))
    request = f(1, "r0") + f(2, f(1, "gpu.example.com") + f(3, "ExactCount") + f(4, 2))
    claim_spec = f(1, f(1, request) + f(3, f(1, "r0") + f(2, opaque)))
    got = protobuf.decode(envelope("resource.k8s.io/v1", "ResourceClaim", f(1, meta("c")) + f(2, claim_spec)))
    assert got["spec"] == {"devices": {
        "requests": [{"name": "r0", "exactly": {"deviceClassName": "gpu.example.com",
                                                "allocationMode": "ExactCount", "count": 2}}],
        "config": [{"requests": ["r0"], "opaque": {"driver": "gpu.example.com",
                                                    "parameters": {"mode": "shared", "n": [1, 2]}}}]}}


def test_invalid_utf8_is_replaced_like_go_json() -> None:
    got = protobuf.decode(envelope("v1", "Namespace", f(1, f(1, b"bad\xffname"))))
    assert got["metadata"]["name"] == "bad\ufffdname"


@pytest.mark.parametrize(("body", "message"), [
    (b'{"kind":"Namespace"}', "must start with the prefix"),
    (protobuf.MAGIC + b"\x0a\x05\x0a", "truncated length-delimited field"),
    (protobuf.MAGIC + b"\x08\xff\xff", "truncated varint"),
    (protobuf.MAGIC + f(2, f(1, "x")), "Object 'Kind' is missing"),
    (protobuf.MAGIC + f(1, f(2, "Namespace")), "Object 'apiVersion' is missing"),
    (envelope("v1", "Namespace", b"") + f(3, "gzip"), "unsupported contentEncoding 'gzip'"),
    (envelope("v1", "Namespace", f(1, f(1, 5))), "at metadata.name: wire type varint where length-delimited"),
    (envelope("v1", "Namespace", f(1, f(8, f(1, "x")))), "at metadata.creationTimestamp: time field 1"),
    (envelope("v1", "Pod", f(2, f(2, f(6, f(3, "eighty"))))), "at spec.containers.ports.containerPort"),
    (envelope("v1", "Pod", f(2, f(1, varint(5 << 3 | 7)))), "at spec.volumes: invalid wire type 7"),
    (envelope("v1", "Namespace", varint(1 << 3 | 3)), "unterminated group"),
    (envelope("resource.k8s.io/v1", "ResourceClaim",
              f(2, f(1, f(3, f(2, f(1, f(1, "d") + f(2, f(1, b"{x")))))))),
     "at spec.devices.config.opaque.parameters: RawExtension does not hold JSON"),
])
def test_malformed_bodies_are_bad_requests(body: bytes, message: str) -> None:
    with pytest.raises(errors.BadRequest) as e:
        protobuf.decode(body)
    assert message in e.value.message
    assert e.value.status()["code"] == 400


def test_unknown_kind_is_unsupported_media_type() -> None:
    with pytest.raises(errors.UnsupportedMediaType) as e:
        protobuf.decode(envelope("sim.cplane.dev/v1alpha1", "Clock", f(1, meta("s"))))
    assert e.value.status()["code"] == 415
    assert e.value.message == ("this server cannot decode Clock (sim.cplane.dev/v1alpha1) from "
                               "application/vnd.kubernetes.protobuf; send it as application/json")


def role(rules: int) -> bytes:
    """A Role with `rules` empty PolicyRules: 2 bytes on the wire each, `{"verbs":null},` in JSON."""
    return envelope("rbac.authorization.k8s.io/v1", "Role", f(1, meta("r")) + f(2, b"") * rules)


def test_decoded_size_is_bounded_before_it_is_built() -> None:
    # A tag and a zero length stand for a dict with a null: a 3 MB body of them was ~290 MB of Python
    # objects and seconds of work; it now stops when the JSON it builds passes 3 MiB, and at once when the
    # body itself nearly fills the bound.
    assert protobuf.decode(role(2))["rules"] == [{"verbs": None}, {"verbs": None}]
    for rules in (300_000, 1_500_000):
        start = time.perf_counter()
        with pytest.raises(errors.RequestEntityTooLarge) as e:
            protobuf.decode(role(rules))
        assert time.perf_counter() - start < 2.0
        assert e.value.code == 413
        assert e.value.message == ("Request entity too large: the protobuf body for Role "
                                   "(rbac.authorization.k8s.io/v1) decodes to more than 3145728 bytes of JSON, "
                                   "limit is 3145728")


def test_a_large_body_without_amplification_decodes() -> None:
    # 2.5 MB of ConfigMap data is 2.5 MB of JSON too.
    raw = f(1, meta("big")) + b"".join(entry(2, f"k{i}", "v" * 2500) for i in range(1000))
    got = protobuf.decode(envelope("v1", "ConfigMap", raw))
    assert len(got["data"]) == 1000 and got["data"]["k999"] == "v" * 2500


def test_delete_options_of_any_group_version() -> None:
    raw = f(1, 0) + f(2, f(1, "uid-1") + f(2, "7")) + f(4, "Foreground") + f(5, "All")
    got = protobuf.decode(envelope("apps/v1", "DeleteOptions", raw))
    assert got == {"kind": "DeleteOptions", "apiVersion": "apps/v1", "gracePeriodSeconds": 0,
                   "preconditions": {"uid": "uid-1", "resourceVersion": "7"},
                   "propagationPolicy": "Foreground", "dryRun": ["All"]}


# ---------------------------------------------------------------------------------------------
# The tables.
# ---------------------------------------------------------------------------------------------

STREAMS = {("pods", "log"), ("pods", "exec"), ("pods", "attach"), ("pods", "portforward")}


def test_every_built_in_kind_has_a_message_with_its_list_and_subresources() -> None:
    for k in resources.KINDS:
        if not k.protobuf:  # the sandbox's own kinds, like custom resources upstream
            assert k.group == resources.SIM_GROUP
            assert not protobuf.supports(api_version=k.api_version, kind=k.kind)
            continue
        assert protobuf.supports(api_version=k.api_version, kind=k.kind), k.kind
        if "list" in k.verbs:
            assert protobuf.supports(api_version=k.api_version, kind=k.list_kind), k.list_kind
        for sub in k.subresources:
            if (k.plural, sub.name) in STREAMS:
                continue  # a stream, not an object: its options are the query's (discovery names their kind)
            api_version = f"{sub.group}/{sub.version}" if sub.group else k.api_version
            assert protobuf.supports(api_version=api_version, kind=sub.kind), (k.kind, sub.name)
    for api_version in ("v1", "apps/v1", "resource.k8s.io/v1"):  # registered in every group version
        assert protobuf.message_for(api_version=api_version, kind="DeleteOptions")


# Fields the 1.37 OpenAPI has that the upstream sources the table was generated from do not (alpha
# fields added after them): their protobuf numbers are unknown, so they are neither read nor written.
KNOWN_GAPS = {
    "io.k8s.api.core.v1.NodeSystemInfo": {"runningInUserNamespace"},
    "io.k8s.api.resource.v1.DeviceCounterConsumption": {"compatibilityGroups"},
    "io.k8s.api.resource.v1.ExactDeviceRequest": {"derivedAttributes"},
    "io.k8s.api.resource.v1.DeviceSubRequest": {"derivedAttributes"},
    # resource.k8s.io/v1beta2 (served with --runtime-config) has v1's shape, and its gaps
    "io.k8s.api.resource.v1beta2.DeviceCounterConsumption": {"compatibilityGroups"},
    "io.k8s.api.resource.v1beta2.ExactDeviceRequest": {"derivedAttributes"},
    "io.k8s.api.resource.v1beta2.DeviceSubRequest": {"derivedAttributes"},
    "io.k8s.api.resource.v1beta1.DeviceCounterConsumption": {"compatibilityGroups"},
    "io.k8s.api.resource.v1beta1.DeviceRequest": {"derivedAttributes"},
    "io.k8s.api.resource.v1beta1.DeviceSubRequest": {"derivedAttributes"},
}
SPECIAL_REFS = {
    table.TIME: "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    table.MICROTIME: "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
    table.QUANTITY: "io.k8s.apimachinery.pkg.api.resource.Quantity",
    table.INTSTR: "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    table.RAWEXT: "io.k8s.apimachinery.pkg.runtime.RawExtension",
    table.FIELDSV1: "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    table.JSON: "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    table.P_ARRAY: "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    table.P_BOOL: "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    table.P_SARRAY: "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
}


def flattened(message: table.Message) -> dict[str, table.Field]:
    out: dict[str, table.Field] = {}
    for field in message.fields.values():
        if field.inline:
            out.update(flattened(protobuf.messages()[field.message]))
        else:
            out[field.name] = field
    return out


def check_type(field: table.Field, prop: dict[str, Any], *, element: bool = False) -> str | None:
    """Why `prop` (an OpenAPI property schema) does not fit the field, or None."""
    if len(prop.get("allOf", ())) == 1:
        prop = prop["allOf"][0]
    types = prop.get("type", [])
    types = [types] if isinstance(types, str) else types
    if not element and field.repeated:
        return check_type(field, prop["items"], element=True) if "array" in types else "not an array"
    if not element and field.map:
        if "object" not in types or "additionalProperties" not in prop:
            return "not a map"
        return check_type(field, prop["additionalProperties"], element=True)
    if field.kind == table.MSG and field.wrapper:  # a named slice type: a bare array
        item = protobuf.messages()[field.message].fields[1]
        return check_type(item, prop["items"], element=True) if "array" in types else "not an array"
    if field.kind == table.MSG:
        return None if prop.get("$ref") == "#/$defs/" + field.message else f"not a $ref to {field.message}"
    if field.kind in SPECIAL_REFS:
        return None if prop.get("$ref") == "#/$defs/" + SPECIAL_REFS[field.kind] else "wrong special type"
    want = {table.STR: ("string", None), table.BYTES: ("string", "byte"),
            table.INT32: ("integer", "int32"), table.INT64: ("integer", "int64"),
            table.BOOL: ("boolean", None), table.F64: ("number", "double")}[field.kind]
    return None if want[0] in types and prop.get("format") == want[1] else f"not {want}"


def _without_definition() -> set[str]:
    """Messages the OpenAPI document has no schema for: structs Go inlines into their parent, named slice
    types (a bare JSON array), and registered kinds that are never served objects (options, proxy
    options, conversion reviews)."""
    from cp.protobuf import descriptors

    out = {f.message for m in protobuf.messages().values() for f in m.fields.values() if f.inline}
    out |= set(descriptors.WRAPPERS)
    out |= {name for kinds in descriptors.KINDS.values() for name in kinds.values()}
    out |= {f"io.k8s.apimachinery.pkg.apis.meta.v1.{verb}Options" for verb in ("Create", "Update", "Patch",
                                                                              "Get", "List")}
    return out


def test_tables_match_the_137_openapi_definitions() -> None:
    """Same JSON names (nothing 1.37 has is dropped) and compatible types, message by message: the table
    (from upstream's .proto files and Go tags) agrees with the OpenAPI schemas the server publishes."""
    definitions = schemas.definitions()
    exempt = _without_definition()
    checked = 0
    for name, message in protobuf.messages().items():
        definition = definitions.get(name)
        if definition is None:
            assert name in exempt, name
            continue
        fields = flattened(message)
        props = definition.get("properties", {})
        want = set(props) - KNOWN_GAPS.get(name, set())
        if "kind" not in fields and "kind" in want:  # a kind: TypeMeta is in the envelope
            want -= {"kind", "apiVersion"}
        assert set(fields) == want, (name, set(fields) ^ want)
        for json_name, field in fields.items():
            problem = check_type(field, props[json_name])
            assert problem is None, (name, json_name, problem)
        checked += 1
    assert checked > 550


def test_tables_cover_every_message_they_reference() -> None:
    compiled = protobuf.messages()
    for message in compiled.values():
        for field in message.fields.values():
            assert field.kind != table.MSG or field.message in compiled


# ---------------------------------------------------------------------------------------------
# Every kind, every field: objects built from the published OpenAPI schemas (an independent source)
# make the round trip JSON -> protobuf -> JSON.
# ---------------------------------------------------------------------------------------------

_SKIP = object()
META = "io.k8s.apimachinery.pkg.apis.meta.v1"
EXTENSIONS = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1"


class Sample:
    """A JSON object with every field set to a non-zero value of its schema's type: strings named after
    their field, negative and 64-bit integers, maps with unsorted keys, both forms of int-or-string and of
    apiextensions' unions. Recursive schemas (JSONSchemaProps, CompositePodGroupTemplate) stop at a depth."""

    def __init__(self) -> None:
        self.defs = schemas.definitions()
        self.turn = 0

    def _flip(self) -> bool:
        self.turn += 1
        return self.turn % 2 == 0

    def of(self, name: str, *, depth: int = 0) -> Any:
        special = {
            f"{META}.Time": "2026-01-02T03:04:05Z",
            f"{META}.MicroTime": "2026-01-02T03:04:05.123456Z",
            f"{META}.FieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
            "io.k8s.apimachinery.pkg.api.resource.Quantity": "1500m" if self._flip() else "2Gi",
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString": 8080 if self._flip() else "http",
            "io.k8s.apimachinery.pkg.runtime.RawExtension": {"kind": "Opaque", "values": [1, "two", None]},
            f"{EXTENSIONS}.JSON": {"anything": [True, 2.5]},
            f"{EXTENSIONS}.JSONSchemaPropsOrStringArray": ["spec", "status"],
        }
        if name in special:
            return special[name]
        if name.startswith(f"{EXTENSIONS}.JSONSchemaPropsOr"):
            if depth > 3:
                return _SKIP
            schema = self.of(f"{EXTENSIONS}.JSONSchemaProps", depth=depth + 1)
            if name.endswith("OrBool"):
                return schema if self._flip() else False
            return schema if self._flip() else [schema]
        if name == f"{EXTENSIONS}.JSONSchemaProps" and depth > 3:
            return _SKIP
        if name.endswith(".CompositePodGroupTemplate"):  # scheduling v1beta1's is recursive too
            if depth > 3:
                return _SKIP
            depth += 1
        definition = self.defs[name]
        is_kind = "x-kubernetes-group-version-kind" in definition
        gaps = KNOWN_GAPS.get(name, set())
        out: dict[str, Any] = {}
        for prop, schema in definition.get("properties", {}).items():
            if prop in gaps or (is_kind and prop in ("kind", "apiVersion")):
                continue  # the envelope's TypeMeta; protobuf has no field for an embedded object's
            value = self.value(schema, name=prop, depth=depth)
            if value is not _SKIP:
                out[prop] = value
        return out

    def value(self, schema: dict[str, Any], *, name: str, depth: int) -> Any:
        if len(schema.get("allOf", ())) == 1:
            schema = schema["allOf"][0]
        if "$ref" in schema:
            return self.of(schema["$ref"].removeprefix("#/$defs/"), depth=depth + 1)
        types = schema.get("type", [])
        types = [types] if isinstance(types, str) else types
        if "array" in types:
            item = self.value(schema["items"], name=name, depth=depth)
            return _SKIP if item is _SKIP else [item, item] if self._flip() else [item]
        if "object" in types:
            item = self.value(schema.get("additionalProperties", {"type": "string"}), name=name, depth=depth)
            return _SKIP if item is _SKIP else {"b-key": item, "a-key": item}
        if "string" in types:
            if "enum" in schema:
                return schema["enum"][0]
            if schema.get("format") == "byte":
                return "AAEC/w=="
            return f"{name}-value"
        if "integer" in types:
            return -7 if schema.get("format") == "int32" else 1 << 40
        if "number" in types:
            return 2.5
        if "boolean" in types:
            return True
        raise AssertionError(f"no sample for {name}: {schema}")


def _served_messages() -> list[tuple[str, str, str]]:
    """(apiVersion, kind, message) of every kind the server reads or writes in protobuf."""
    from cp.protobuf import descriptors

    return [(api_version, kind, message) for api_version, kinds in descriptors.KINDS.items()
            for kind, message in kinds.items()]


def _is_zero(value: Any) -> bool:
    """A value Go's JSON writes for an unset field."""
    if isinstance(value, dict):
        return all(_is_zero(v) for v in value.values())
    return value in (None, "", 0, False, "0")


def assert_kept(original: Any, decoded: Any, path: str = "") -> None:
    """Every value of `original` is in `decoded`; what decoding added is zero values (fields Go's JSON
    writes although unset, like `status: {}` of a nested object the sample stopped short of)."""
    if isinstance(original, dict):
        assert isinstance(decoded, dict), path
        for key, value in original.items():
            assert key in decoded, f"{path}.{key} lost"
            assert_kept(value, decoded[key], f"{path}.{key}")
        for key in set(decoded) - set(original):
            assert _is_zero(decoded[key]), f"{path}.{key} appeared: {decoded[key]!r}"
    elif isinstance(original, list):
        assert isinstance(decoded, list) and len(decoded) == len(original), path
        for i, (a, b) in enumerate(zip(original, decoded, strict=True)):
            assert_kept(a, b, f"{path}[{i}]")
    else:
        assert decoded == original and type(decoded) is type(original), f"{path}: {decoded!r} != {original!r}"


@pytest.mark.parametrize(("api_version", "kind", "message"), _served_messages(), ids=lambda x: str(x))
def test_every_kind_round_trips_with_every_field_set(api_version: str, kind: str, message: str) -> None:
    sample = Sample()

    def one(name: str) -> dict[str, Any]:
        if name == f"{META}.PartialObjectMetadata":  # no OpenAPI schema of its own
            return {"metadata": sample.of(f"{META}.ObjectMeta")}
        return sample.of(name)

    if kind.endswith("List"):
        item = message.removesuffix("List")
        obj = {"metadata": {"resourceVersion": "42", "continue": "token"}, "items": [one(item), one(item)]}
    else:
        obj = one(message)
    body = protobuf.encode(obj, api_version=api_version, kind=kind)
    decoded = protobuf.decode(body)
    assert (decoded.pop("apiVersion"), decoded.pop("kind")) == (api_version, kind)
    assert_kept(obj, decoded)
    # Decoding gives the JSON Go writes, and that encodes to the very same bytes.
    assert protobuf.encode(decoded, api_version=api_version, kind=kind) == body


def test_zero_values_as_go_writes_and_reads_them() -> None:
    # An empty Pod: Go writes every non-pointer field, as zero (`name` "", generation 0, an empty
    # creationTimestamp), and reads the JSON of a zero Pod back from it.
    body = protobuf.encode({}, api_version="v1", kind="Pod")
    _, _, start, end, _, _ = wire.envelope(body)
    meta_zero = f(1, "") + f(2, "") + f(3, "") + f(4, "") + f(5, "") + f(6, "") + f(7, 0) + f(8, b"")
    assert body[start:end].startswith(f(1, meta_zero) + f(2, b"")[:1])  # then the zero PodSpec, PodStatus
    assert protobuf.decode(body) == {"kind": "Pod", "apiVersion": "v1", "metadata": {},
                                     "spec": {"containers": None}, "status": {}}
    # Pointers are written when set, zero or not; omitempty scalars are left out of JSON when zero.
    pod = {"spec": {"containers": [], "terminationGracePeriodSeconds": 0, "hostNetwork": False,
                    "priority": 0, "nodeName": ""}}
    got = protobuf.decode(protobuf.encode(pod, api_version="v1", kind="Pod"))
    assert got["spec"] == {"containers": None, "terminationGracePeriodSeconds": 0, "priority": 0}
    # Quantities are written canonical, as Go's Quantity marshals its String().
    limits = {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1000m", "memory": "1Gi"}}}]}}
    got = protobuf.decode(protobuf.encode(limits, api_version="v1", kind="Pod"))
    assert got["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "1", "memory": "1Gi"}}


def test_values_that_do_not_fit_are_internal_errors() -> None:
    with pytest.raises(errors.InternalError) as e:
        protobuf.encode({"spec": {"replicas": "three"}}, api_version="apps/v1", kind="Deployment")
    assert e.value.message == ("unable to encode Deployment (apps/v1) as application/vnd.kubernetes.protobuf at "
                               "spec.replicas: expected an integer, got a string")
    with pytest.raises(errors.InternalError):
        protobuf.encode({"data": {"k": "not base64!"}}, api_version="v1", kind="Secret")
    with pytest.raises(errors.InternalError):
        protobuf.encode({"spec": {"replicas": 1 << 40}}, api_version="apps/v1", kind="Deployment")
    with pytest.raises(errors.NotAcceptable):
        protobuf.encode({}, api_version="sim.cplane.dev/v1alpha1", kind="Clock")


def test_watch_frame_and_list_layout() -> None:
    item = protobuf.encode_raw({"metadata": {"name": "a"}}, api_version="v1", kind="ConfigMap")
    body = protobuf.encode_list([item], api_version="v1", kind="ConfigMapList", resource_version="9",
                                continue_token="c")
    assert protobuf.decode(body) == {"kind": "ConfigMapList", "apiVersion": "v1",
                                     "metadata": {"resourceVersion": "9", "continue": "c"},
                                     "items": [{"metadata": {"name": "a"}}]}
    frame = protobuf.watch_frame("ADDED", b"OBJECT")
    # 4-byte big-endian length, then WatchEvent{1: type, 2: RawExtension{1: the object's body}}.
    assert frame == bytes([0, 0, 0, 17]) + f(1, "ADDED") + f(2, f(1, b"OBJECT"))


# ---------------------------------------------------------------------------------------------
# Live kubectl against a stub server: keeps the fixtures honest, and regenerates them.
# ---------------------------------------------------------------------------------------------

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SERVED = {
    "v1": [("namespaces", "Namespace", False), ("nodes", "Node", False), ("pods", "Pod", True),
           ("configmaps", "ConfigMap", True), ("secrets", "Secret", True), ("services", "Service", True),
           ("serviceaccounts", "ServiceAccount", True), ("resourcequotas", "ResourceQuota", True)],
    "apps/v1": [("deployments", "Deployment", True), ("deployments/scale", "Scale", True)],
    "autoscaling/v2": [("horizontalpodautoscalers", "HorizontalPodAutoscaler", True)],
    "batch/v1": [("jobs", "Job", True), ("cronjobs", "CronJob", True)],
    "rbac.authorization.k8s.io/v1": [("roles", "Role", True), ("rolebindings", "RoleBinding", True),
                                     ("clusterroles", "ClusterRole", False),
                                     ("clusterrolebindings", "ClusterRoleBinding", False)],
    "scheduling.k8s.io/v1": [("priorityclasses", "PriorityClass", False)],
    "policy/v1": [("poddisruptionbudgets", "PodDisruptionBudget", True)],
    "networking.k8s.io/v1": [("ingresses", "Ingress", True)],
}


def stub_objects() -> dict[str, dict[str, Any]]:
    plain = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p1", "namespace": "default"},
             "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]}}
    return {
        "/apis/apps/v1/namespaces/default/deployments/web": {
            "kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}},
        "/api/v1/namespaces/default/pods/rich": rich_pod(),
        "/api/v1/namespaces/default/pods/p1": plain,
        "/api/v1/pods": {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": [plain]},
        "/api/v1/nodes/n1": {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n1"}, "spec": {}},
    }


def resource(plural: str, kind: str, namespaced: bool) -> dict[str, Any]:
    """An APIResourceList entry."""
    if kind == "Scale":
        return {"name": plural, "singularName": "", "namespaced": namespaced, "group": "autoscaling",
                "version": "v1", "kind": kind, "verbs": ["get", "patch", "update"]}
    return {"name": plural, "singularName": kind.lower(), "namespaced": namespaced, "kind": kind,
            "verbs": VERBS}


class Stub:
    """Answers discovery, serves `objects`, records write bodies and echoes them back."""

    def __init__(self) -> None:
        self.objects = stub_objects()
        self.writes: list[tuple[str, str, str, bytes]] = []  # (method, path, content type, body)

    async def handle(self, request: web.Request) -> web.Response:
        path = request.path.rstrip("/")
        if path == "/api":
            return web.json_response({"kind": "APIVersions", "versions": ["v1"]})
        if path == "/apis":
            versions = [{"groupVersion": gv, "version": gv.split("/")[1]} for gv in SERVED if "/" in gv]
            groups = [{"name": v["groupVersion"].split("/")[0], "versions": [v], "preferredVersion": v}
                      for v in versions]
            return web.json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        for gv, served in SERVED.items():
            if path == ("/api/" if gv == "v1" else "/apis/") + gv:
                return web.json_response({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                                          "resources": [resource(p, k, ns) for p, k, ns in served]})
        body = await request.read()
        if request.method == "GET" or request.method == "PATCH":
            if path in self.objects:
                return web.json_response(self.objects[path])
            return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                      "reason": "NotFound", "code": 404}, status=404)
        self.writes.append((request.method, path, request.content_type, body))
        if request.method == "DELETE":
            self.objects.pop(path, None)
            return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Success"})
        obj = protobuf.decode(body) if request.content_type == protobuf.PROTOBUF else json.loads(body)
        return web.json_response(obj, status=201)


class Kubectl:
    """kubectl with a fresh HOME and a kubeconfig pointing at a running Stub."""

    def __init__(self, *, home: Path, port: int) -> None:
        self.home = home
        (home / ".kube").mkdir()
        (home / ".kube" / "config").write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: stub\n"
            f"clusters: [{{name: stub, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
            "contexts: [{name: stub, context: {cluster: stub, user: stub, namespace: default}}]\n"
            "users: [{name: stub, user: {}}]\n")
        for name, content in FILES.items():
            (home / name).write_bytes(content)

    async def run(self, *argv: str) -> bytes:
        proc = await asyncio.create_subprocess_exec(
            str(KUBECTL), *argv, cwd=self.home, env={"HOME": str(self.home), "PATH": "/usr/bin:/bin"},
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 20)
        assert proc.returncode == 0, (argv, err.decode())
        return out


async def capture(case: Case, *, home: Path) -> tuple[bytes, dict[str, Any] | None]:
    """Run the case: (the protobuf body kubectl sent, its dry-run JSON or None)."""
    stub = Stub()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", stub.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        kubectl = Kubectl(home=home, port=port)
        await kubectl.run(*case.argv)
        bodies = [w for w in stub.writes if w[2] == protobuf.PROTOBUF]
        assert [w[0] for w in bodies] == [case.method], stub.writes
        dry = None
        if case.dry_run:
            cut = case.argv.index("--") if "--" in case.argv else len(case.argv)
            flags = ("--dry-run=client", "-o", "json")
            dry = json.loads(await kubectl.run(*case.argv[:cut], *flags, *case.argv[cut:]))
        return bodies[0][3], dry
    finally:
        await runner.cleanup()


needs_kubectl = pytest.mark.skipif(not KUBECTL.exists(), reason=f"no kubectl at {KUBECTL}")


@pytest.mark.kubectl
@needs_kubectl
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_live_kubectl_matches_fixture(case: Case, tmp_path: Path) -> None:
    body, dry = await capture(case, home=tmp_path)
    decoded = normalized(case, protobuf.decode(body))
    if dry is not None:
        assert decoded == dry  # the JSON path's body, straight from kubectl
    assert decoded == expected(case)
    if case.name != "pod-node-debug":  # random name suffix
        assert body == (DATA / f"{case.name}.pb").read_bytes(), "stale fixture: run with --regen"


async def regen(names: list[str]) -> None:
    for case in CASES:
        if names and case.name not in names:
            continue
        with tempfile.TemporaryDirectory() as home:
            body, dry = await capture(case, home=Path(home))
        (DATA / f"{case.name}.pb").write_bytes(body)
        if dry is not None:
            (DATA / f"{case.name}.json").write_text(json.dumps(dry, indent=2, ensure_ascii=False) + "\n")
        print("wrote", case.name)


if __name__ == "__main__":
    if sys.argv[1:2] != ["--regen"]:
        sys.exit(f"usage: {sys.argv[0]} --regen [CASE...]")
    asyncio.run(regen(sys.argv[2:]))
