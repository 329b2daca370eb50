"""Real kubectl 1.37.1 and Helm v4 speaking protobuf to the server: kubectl's imperative generators POST
protobuf bodies, its typed clients (describe, events, drain, rollout...) ask for protobuf first
(`Accept: application/vnd.kubernetes.protobuf,application/json`) and decode what the server writes, and
Helm keeps its releases in Secrets it writes and reads in protobuf.

In scope: that Go decodes every protobuf answer (objects, lists, Status errors, watch frames) and that the
objects it created read back right. Out of scope: the bytes themselves (tests/cp/test_protobuf.py pins
them to what kubectl sends), negotiation details (tests/api/test_content_negotiation.py).
"""

from __future__ import annotations

import base64
import datetime
import json
import re

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.kubectl import manifests as m
from tests.kubectl.conftest import Kubectl
from tests.kubectl.test_helm import TEMPLATES, _chart

pytestmark = pytest.mark.kubectl

PB = "application/vnd.kubernetes.protobuf"


def tls_pair() -> tuple[str, str]:
    """A throwaway self-signed certificate and its key, PEM (`create secret tls` checks that they match)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "site.example.com")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(datetime.datetime(2026, 1, 1))
            .not_valid_after(datetime.datetime(2036, 1, 1)).sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM).decode(),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()).decode())


def exchanges(stderr: str) -> list[tuple[str, str, str, str]]:
    """(method, URL, request Content-Type, response Content-Type) of each request kubectl -v=8 logged."""
    out: list[tuple[str, str, str, str]] = []
    pattern = r'"(Request|Response)" (?:verb="(\w+)" url="([^"]+)"|status="[^"]*") headers=<\n(.*?)\n >'
    for what, verb, url, headers in re.findall(pattern, stderr, re.DOTALL):
        found = re.search(r"^\s*Content-Type: (\S+)$", headers, re.MULTILINE)
        content_type = found.group(1) if found else ""
        if what == "Request":
            out.append((verb, url, content_type, ""))
        elif out:
            out[-1] = (*out[-1][:3], content_type)
    return out


def resources(stderr: str) -> list[tuple[str, str, str, str]]:
    """`exchanges` on resources (not discovery)."""
    return [e for e in exchanges(stderr) if re.search(r"/(api|apis/[^/]+)/v\d[^/?]*/[a-z]", e[1])]


async def test_imperative_creates_send_protobuf_and_read_back(kubectl: Kubectl) -> None:
    (kubectl.workdir / "blob.bin").write_bytes(b"\xff\xfe not UTF-8")  # kubectl puts it in binaryData
    commands = [
        ("create", "namespace", "shop"),
        ("create", "configmap", "settings", "-n", "shop", "--from-literal=mode=fast", "--from-file=blob=blob.bin"),
        ("create", "secret", "generic", "creds", "-n", "shop", "--from-literal=password=s3cr=t"),
        ("create", "secret", "docker-registry", "pull", "-n", "shop", "--docker-server=registry.example",
         "--docker-username=robot", "--docker-password=pa55"),
        ("create", "serviceaccount", "robot", "-n", "shop"),
        ("create", "service", "clusterip", "web", "-n", "shop", "--tcp=80:8080"),
        ("create", "service", "externalname", "mail", "-n", "shop", "--external-name=mx.example.com"),
        ("create", "deployment", "web", "-n", "shop", "--image=nginx:1.27", "--replicas=2", "--port=8080"),
        ("create", "job", "once", "-n", "shop", "--image=busybox:1.36", "--", "echo", "hi"),
        ("create", "cronjob", "nightly", "-n", "shop", "--image=busybox:1.36", "--schedule=0 3 * * *",
         "--", "date"),
        ("create", "quota", "compute", "-n", "shop", "--hard=cpu=2,memory=4Gi,pods=10"),
        ("create", "role", "reader", "-n", "shop", "--verb=get,list", "--resource=pods,deployments.apps"),
        ("create", "rolebinding", "read", "-n", "shop", "--role=reader", "--serviceaccount=shop:robot"),
        ("create", "clusterrole", "node-reader", "--verb=get,list", "--resource=nodes"),
        ("create", "clusterrolebinding", "ops", "--clusterrole=node-reader", "--group=ops"),
        ("create", "priorityclass", "high", "--value=1000", "--description=first"),
        ("create", "poddisruptionbudget", "web", "-n", "shop", "--selector=app=web", "--min-available=1"),
        ("create", "ingress", "site", "-n", "shop", "--class=nginx", "--rule=site.example.com/*=web:80"),
    ]
    for command in commands:
        cut = command.index("--") if "--" in command else len(command)
        r = await kubectl(*command[:cut], "-v=8", *command[cut:])
        (post,) = [e for e in exchanges(r.stderr) if e[0] == "POST"]
        assert post[2:] == (PB, PB), (command, post)  # a protobuf body, and the protobuf 201 it decoded
        assert r.stdout.endswith("created\n"), (command, r.stdout)

    cm = (await kubectl("get", "cm", "settings", "-n", "shop", "-o", "json")).json()
    assert cm["data"] == {"mode": "fast"} and base64.b64decode(cm["binaryData"]["blob"]) == b"\xff\xfe not UTF-8"
    secret = (await kubectl("get", "secret", "creds", "-n", "shop", "-o", "json")).json()
    assert base64.b64decode(secret["data"]["password"]) == b"s3cr=t"
    pull = (await kubectl("get", "secret", "pull", "-n", "shop", "-o", "json")).json()
    assert pull["type"] == "kubernetes.io/dockerconfigjson"
    auths = json.loads(base64.b64decode(pull["data"][".dockerconfigjson"]))["auths"]
    assert auths["registry.example"]["username"] == "robot"
    svc = (await kubectl("get", "svc", "web", "-n", "shop", "-o", "json")).json()
    assert svc["spec"]["ports"] == [{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}]
    assert (await kubectl.jsonpath("svc", "mail", "-n", "shop", path="{.spec.externalName}")) == "mx.example.com"
    cron = (await kubectl("get", "cronjob", "nightly", "-n", "shop", "-o", "json")).json()
    assert cron["spec"]["schedule"] == "0 3 * * *"
    assert cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"] == ["date"]
    quota = (await kubectl("get", "quota", "compute", "-n", "shop", "-o", "json")).json()
    assert quota["spec"]["hard"] == {"cpu": "2", "memory": "4Gi", "pods": "10"}
    role = (await kubectl("get", "role", "reader", "-n", "shop", "-o", "json")).json()
    assert {(tuple(r["apiGroups"]), tuple(r["resources"])) for r in role["rules"]} == {
        (("",), ("pods",)), (("apps",), ("deployments",))}
    assert (await kubectl.jsonpath("pdb", "web", "-n", "shop", path="{.spec.minAvailable}")) == "1"
    assert (await kubectl.jsonpath("priorityclass", "high", path="{.value}")) == "1000"
    ingress = (await kubectl("get", "ingress", "site", "-n", "shop", "-o", "json")).json()
    assert ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"] == {
        "name": "web", "port": {"number": 80}}

    # Errors come back as protobuf Statuses, which kubectl prints as it prints JSON ones.
    r = await kubectl("create", "secret", "generic", "creds", "-n", "shop", "--from-literal=a=b", "-v=8",
                      check=False)
    assert r.code == 1 and exchanges(r.stderr)[-1][3] == PB
    assert 'secrets "creds" already exists' in r.stderr


async def test_typed_reads_decode_protobuf(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", input=m.docs(m.NODE, m.pod("web", labels={"app": "web"}, node="n1")))
    await kubectl("create", "deployment", "shop", "--image=nginx:1.27", "--replicas=3")
    cert, key = tls_pair()
    await kubectl("create", "secret", "tls", "site-tls", "--cert", kubectl.write("tls.crt", cert),
                  "--key", kubectl.write("tls.key", key))

    # describe reads through the dynamic client (JSON) first, then its typed describer asks for protobuf.
    r = await kubectl("describe", "pod", "web", "-v=8")
    typed = [e for e in resources(r.stderr) if e[3] == PB]
    assert [e[1].split("?")[0].rsplit("/", 1)[-1] for e in typed] == ["web", "events"]  # the pod, its events
    assert re.search(r"^Node:\s+n1", r.stdout, re.MULTILINE) and re.search(r"^Labels:\s+app=web", r.stdout,
                                                                            re.MULTILINE)
    r = await kubectl("describe", "deployment", "shop", "-v=8")
    assert {e[1].split("?")[0].rsplit("/", 1)[-1] for e in resources(r.stderr) if e[3] == PB} >= {
        "shop", "events", "replicasets"}
    assert re.search(r"^Replicas:\s+3 desired", r.stdout, re.MULTILINE)
    r = await kubectl("describe", "node", "n1", "-v=8")
    assert {e[1].split("?")[0].rsplit("/", 1)[-1] for e in resources(r.stderr) if e[3] == PB} >= {
        "n1", "pods", "events", "resourceslices"}
    assert re.search(r"^Name:\s+n1", r.stdout, re.MULTILINE)
    r = await kubectl("describe", "secret", "site-tls")
    assert re.search(r"^Type:\s+kubernetes.io/tls", r.stdout, re.MULTILINE)
    assert re.search(r"^tls.crt:\s+\d+ bytes", r.stdout, re.MULTILINE)


async def test_events_watch_in_protobuf(kubectl: Kubectl, api: aiohttp.ClientSession) -> None:
    # `kubectl events --watch` lists and watches through the typed client: protobuf watch frames.
    bg = await kubectl.start("events", "--watch", "-v=8")
    await bg.expect(rf"Content-Type: {re.escape(PB)};stream=watch", stream="stderr")
    body = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "web.1", "namespace": "default"},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "web", "namespace": "default",
                               "uid": "u-1"},
            "reason": "Scheduled", "message": "Successfully assigned default/web to n1", "type": "Normal",
            "count": 1, "source": {"component": "default-scheduler"},
            "firstTimestamp": "2026-12-01T00:00:00Z", "lastTimestamp": "2026-12-01T00:00:00Z"}
    async with api.post("/api/v1/namespaces/default/events", json=body) as r:
        assert r.status == 201
    line = await bg.expect(r"^.*Scheduled\s+Pod/web\s+Successfully assigned default/web to n1$")
    assert "Normal" in line.group(0)
    await bg.stop()


async def test_helm_keeps_its_releases_in_protobuf_secrets(helm: Kubectl, kubectl: Kubectl) -> None:
    # Helm v4's default storage: one Secret per revision, written and read by client-go in protobuf.
    chart = _chart(helm.workdir / "demo", main=TEMPLATES)
    r = await helm("install", "demo", chart, "--wait", "-v=8")
    assert "STATUS: deployed" in r.stdout
    posts = [e for e in exchanges(r.stderr) if e[0] == "POST" and "/secrets" in e[1]]
    assert [e[2:] for e in posts] == [(PB, PB)]  # the release, sent and answered in protobuf
    release = (await kubectl("get", "secret", "-l", "owner=helm,name=demo", "-o", "json")).json()["items"]
    assert [(s["metadata"]["name"], s["type"]) for s in release] == [("sh.helm.release.v1.demo.v1",
                                                                      "helm.sh/release.v1")]
    assert release[0]["metadata"]["labels"]["status"] == "deployed"

    await helm("upgrade", "demo", chart, "--set", "value=two")
    assert await kubectl.jsonpath("configmap", "demo-listed", path="{.data.value}") == "two"
    await helm("rollback", "demo", "1")
    assert await kubectl.jsonpath("configmap", "demo-listed", path="{.data.value}") == "one"
    r = await helm("history", "demo", "-v=8")  # lists the release's Secrets by label, in protobuf
    statuses = [re.findall(r"\b(superseded|deployed)\b", line) for line in r.lines[1:]]
    assert [row[0] for row in r.rows()[1:]] == ["1", "2", "3"]
    assert statuses == [["superseded"], ["superseded"], ["deployed"]]
    assert any(e[0] == "GET" and "/secrets" in e[1] and e[3] == PB for e in exchanges(r.stderr))
    r = await helm("get", "values", "demo", "--revision", "2", "-o", "json")
    assert json.loads(r.stdout) == {"value": "two"}
    r = await helm("list")
    assert r.lines[1].split()[:2] == ["demo", "default"] and "deployed" in r.lines[1].split()

    await helm("uninstall", "demo", "--wait")
    assert await kubectl.gone("configmap", "demo-listed")
    assert (await kubectl("get", "secret", "-l", "owner=helm", "-o", "name")).stdout == ""
