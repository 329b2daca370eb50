"""Hostile input: random methods, paths, query strings, headers and bodies against a secure server
in-process (TLS, authentication, RBAC). Every answer must be below 500, every error a valid
`Status` whose code matches the HTTP status, and a rejected request must leave the event log as
it was.

Default: 10,000 requests (about 10 s; `FUZZ_REQUESTS` overrides). A 100,000-request run is opt-in:
`pytest -m slow tests/api/security/test_fuzz.py`. Hypothesis draws the seeds of a fast generator
(`Gen`), so a failure names a reproducible seed and lists the failing requests.

Not generated: resourceVersion values above the log's revision — kube-apiserver waits 3 s for
those and answers 504 Timeout (`ResourceVersionTooLarge`), which is upstream behaviour, not a
fault; tests/api cover it.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
import yarl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cp import errors, protobuf
from tests.api.security.conftest import TOKENS, Secure, secure_server

PREFIXES = ["/api/v1", "/apis/apps/v1", "/apis/resource.k8s.io/v1", "/apis/rbac.authorization.k8s.io/v1",
            "/apis/authorization.k8s.io/v1", "/apis/authentication.k8s.io/v1", "/apis/autoscaling/v2",
            "/apis/coordination.k8s.io/v1", "/apis/sim.cplane.dev/v1alpha1", "/api", "/apis", "/openapi/v3",
            "/openapi/v3/api/v1", "/version", "/healthz", "/readyz", "/metrics", "/apis/metrics.k8s.io/v1beta1", ""]
WORDS = ["namespaces", "default", "kube-system", "fuzz", "pods", "configmaps", "deployments", "replicasets",
         "resourceclaims", "resourceclaimtemplates", "resourceslices", "deviceclasses", "nodes", "events",
         "roles", "rolebindings", "clusterroles", "clusterrolebindings", "selfsubjectaccessreviews",
         "selfsubjectreviews", "selfsubjectrulesreviews", "status", "scale", "binding", "finalize", "watch",
         "proxy", "x", "web", "view", "admin", "..", ".", "%2F", "a%00b", "*", "leases", "devicetaintrules"]
QUERY_KEYS = ["watch", "labelSelector", "fieldSelector", "limit", "continue", "resourceVersion",
              "resourceVersionMatch", "dryRun", "fieldManager", "fieldValidation", "timeoutSeconds",
              "propagationPolicy", "gracePeriodSeconds", "force", "allowWatchBookmarks", "sendInitialEvents",
              "includeObject", "orphanDependents", "pretty"]
CONTENT_TYPES = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf",
                 "application/merge-patch+json", "application/json-patch+json",
                 "application/strategic-merge-patch+json", "application/apply-patch+yaml", "text/plain", "",
                 "application/json; charset=utf-8", "multipart/form-data; boundary=x"]
ACCEPTS = ["application/json", "application/json;as=Table;v=v1;g=meta.k8s.io", "application/yaml",
           "application/vnd.kubernetes.protobuf", "*/*", "text/html",
           "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"]

PRINTABLE = [chr(c) for c in range(0x20, 0x7f)]
SAFE_CHARS = [c for c in PRINTABLE if c not in " ?#/%"]
SPECIAL_STRINGS = ["", "0", "-1", "1e309", "null", "true", "\u0000", "é", "\U0001F600", "a" * 300, "../..",
                   "${x}", "<script>", "'; DROP TABLE events; --", "%00", "\\", '"']


class Gen:
    """Random hostile requests from a seeded `random.Random`: hypothesis hands out the seeds (cheap
    to draw, reproducible — a failure names its seed — and every failing request is printed)."""

    def __init__(self, rng: Any) -> None:
        self.r = rng

    def text(self, n: int = 40, alphabet: list[str] = PRINTABLE) -> str:
        if self.r.random() < 0.2:
            return self.r.choice(SPECIAL_STRINGS)
        return "".join(self.r.choice(alphabet) for _ in range(self.r.randint(0, n)))

    def scalar(self) -> Any:
        return self.r.choice([None, True, False, self.r.randint(-(2**70), 2**70), self.r.random() * 1e6,
                              self.r.randint(-5, 5), self.text()])

    def value(self, depth: int = 0) -> Any:
        roll = self.r.random()
        if depth > 3 or roll < 0.5:
            return self.scalar()
        if roll < 0.75:
            return [self.value(depth + 1) for _ in range(self.r.randint(0, 4))]
        return {self.text(12): self.value(depth + 1) for _ in range(self.r.randint(0, 4))}

    def k8s_object(self) -> dict[str, Any]:
        r = self.r
        obj: dict[str, Any] = {
            "apiVersion": r.choice(["v1", "apps/v1", "resource.k8s.io/v1", "rbac.authorization.k8s.io/v1",
                                    "authorization.k8s.io/v1", "x/y", ""]),
            "kind": r.choice(["Pod", "ConfigMap", "Namespace", "Deployment", "ResourceClaim", "Role", "RoleBinding",
                              "ClusterRole", "ClusterRoleBinding", "Node", "Lease", "SelfSubjectAccessReview",
                              "Foo"]),
            "metadata": {"name": r.choice(["x", "web", "fuzz", "", "A_B", "a" * 300, self.text(20)])}}
        if r.random() < 0.4:
            obj["metadata"]["labels"] = {self.text(10): self.text(10) for _ in range(r.randint(0, 3))}
        if r.random() < 0.2:
            obj["metadata"]["namespace"] = r.choice(["default", "kube-system", "other", ""])
        for field in r.sample(["spec", "status", "data", "rules", "roleRef", "subjects"], r.randint(0, 3)):
            obj[field] = self.value()
        if r.random() < 0.3:
            obj["rules"] = [{"apiGroups": [r.choice(["", "*", "apps"])], "resources": [r.choice(["*", "pods"])],
                             "verbs": [r.choice(["*", "get", "escalate"])]}]
            obj["roleRef"] = {"apiGroup": "rbac.authorization.k8s.io", "kind": r.choice(["ClusterRole", "Role"]),
                              "name": r.choice(["cluster-admin", "view", "x"])}
            obj["subjects"] = [{"kind": r.choice(["User", "Group", "ServiceAccount"]), "name": "alice",
                                "namespace": "default"}]
        return obj

    def body(self) -> bytes | None:
        r = self.r
        choice = r.randint(0, 6)
        if choice == 0:
            return None
        if choice == 1:
            return r.randbytes(r.randint(0, 200))
        if choice == 2:
            return json.dumps(self.value()).encode()
        if choice == 3:
            ops = [{"op": r.choice(["add", "remove", "replace", "move", "copy", "test", "bad"]),
                    "path": r.choice(["/metadata/labels/a", "/spec", "/", "", "/metadata/name", "/x/-", self.text(10)]),
                    "value": self.value(), "from": r.choice(["/metadata", "/x", ""])} for _ in range(r.randint(0, 3))]
            return json.dumps(ops).encode()
        if choice == 4:
            depth = r.choice([120, 900, 3000, 50_000])
            open_, close = r.choice([(b"[", b"]"), (b'{"a":', b"}")])
            return b'{"metadata":{"name":"deep"},"spec":' + open_ * depth + (b"1" if open_ != b"[" else b"") + \
                close * depth + b"}"
        if choice == 5:
            return self.text(200).encode()
        return json.dumps(self.k8s_object()).encode()

    def path(self) -> str:
        r = self.r
        if r.random() < 0.1:
            return "/" + "/".join(self.text(12, SAFE_CHARS) or "x" for _ in range(r.randint(0, 6)))
        return r.choice(PREFIXES) + "".join(
            "/" + (r.choice(WORDS) if r.random() < 0.8 else (self.text(10, SAFE_CHARS) or "y"))
            for _ in range(r.randint(0, 5)))

    def plausible(self) -> dict[str, Any]:
        """A request that is nearly right: a served path and an object of its kind, then mutated."""
        r = self.r
        ns = r.choice(["default", "kube-system", "fuzz-ns", "missing"])
        name = r.choice(["x", "web", "y", self.text(12, SAFE_CHARS) or "z"])
        templates = [
            ("/api/v1/namespaces", {"metadata": {"name": r.choice(["fuzz-ns", name])}}),
            (f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": name}, "data": {"k": self.text(30)}}),
            (f"/api/v1/namespaces/{ns}/pods", {"metadata": {"name": name}, "spec": {"containers": [
                {"name": "c", "image": r.choice(["nginx", "", self.text(10)])}]}}),
            (f"/apis/apps/v1/namespaces/{ns}/deployments", {"metadata": {"name": name}, "spec": {
                "replicas": r.choice([1, -1, 0, "x"]), "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": r.choice(["b", "c"])}},
                             "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
            (f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims", {"metadata": {"name": name}, "spec": {
                "devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu.example.com",
                                                                   "adminAccess": r.choice([True, False])}}]}}}),
            (f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", {
                "metadata": {"name": name}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                       "kind": r.choice(["ClusterRole", "Role", "Pod"]),
                                                       "name": r.choice(["view", "cluster-admin", "nope"])},
                "subjects": [{"kind": r.choice(["User", "Group", "ServiceAccount", "Robot"]), "name": "alice"}]}),
            ("/apis/rbac.authorization.k8s.io/v1/clusterroles", {"metadata": {"name": name}, "rules": [
                {"apiGroups": [r.choice(["", "*"])], "resources": [r.choice(["pods", "*"])],
                 "verbs": [r.choice(["get", "*", "escalate"])]}]}),
            ("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {"spec": {"resourceAttributes": {
                "verb": r.choice(["get", "list", self.text(5)]), "resource": r.choice(["pods", self.text(5)]),
                "namespace": ns}}}),
        ]
        path, obj = r.choice(templates)
        if r.random() < 0.5:
            target = obj
            for _ in range(r.randint(1, 3)):
                key = r.choice(list(target) or ["x"])
                if isinstance(target.get(key), dict) and r.random() < 0.6:
                    target = target[key]
                else:
                    target[r.choice([key, self.text(8)])] = self.value()
                    break
        method = r.choice(["POST", "POST", "PUT", "PATCH", "DELETE", "GET"])
        if method != "POST":
            meta = obj.get("metadata")
            path = f"{path}/{meta.get('name', name) if isinstance(meta, dict) else name}"
            if r.random() < 0.2:
                path += "/" + r.choice(["status", "scale", "binding", "finalize"])
        ct = "application/merge-patch+json" if method == "PATCH" else r.choice(
            ["application/json", "application/json", "application/yaml"])
        body = json.dumps(obj).encode()
        query = {"fieldManager": "fuzz"} if r.random() < 0.5 else {}
        if method == "PATCH" and r.random() < 0.3:
            ct, query = "application/apply-patch+yaml", {"fieldManager": "fuzz", "force": r.choice(["true", "x"])}
        return {"method": method, "path": path, "query": query, "body": body,
                "headers": {"Content-Type": ct, "Accept": "application/json"},
                "auth": r.choice(["admin"] * 5 + ["alice", "bob", "none"])}

    def request(self) -> dict[str, Any]:
        r = self.r
        if r.random() < 0.35:
            return self.plausible()
        query: dict[str, str] = {}
        for _ in range(r.randint(0, 4)):
            key = r.choice(QUERY_KEYS) if r.random() < 0.85 else (self.text(8, SAFE_CHARS) or "k")
            if key == "resourceVersion":
                query[key] = r.choice(["", "0", "1", "2", "-1", "abc", "1e3"])
            else:
                query[key] = r.choice(["true", "false", "1", "0", "All", "Strict", "-5", "", "a=b",
                                       "metadata.name=x", "!x", "NotOlderThan", "Exact", "Foreground",
                                       self.text(20)])
        headers = {"Content-Type": r.choice(CONTENT_TYPES), "Accept": r.choice(ACCEPTS)}
        if r.random() < 0.1:
            headers[r.choice(["Impersonate-User", "Impersonate-Group", "Impersonate-Uid", "Impersonate-Extra-scopes",
                              "X-Request-Id", "Kubectl-Command", "User-Agent"])] = self.text(20)
        return {"method": r.choice(["GET", "POST", "PUT", "PATCH", "DELETE", "GET", "POST", "HEAD", "OPTIONS"]),
                "path": self.path(), "query": query, "headers": headers, "body": self.body(),
                "auth": r.choice(["admin"] * 6 + ["alice", "none", "bad", "basic"])}


class Harness:
    """The secure server on an event loop in a thread; hypothesis drives it synchronously."""

    def __init__(self, tmp_path: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self._stop: asyncio.Event | None = None
        self.ready = threading.Event()
        self.server_task = asyncio.run_coroutine_threadsafe(self._serve(tmp_path), self.loop)
        if not self.ready.wait(30):
            raise RuntimeError("server did not start")
        self.sent = 0
        self.codes: dict[int, int] = {}
        self.failures: list[str] = []

    async def _serve(self, tmp_path: Path) -> None:
        self._stop = asyncio.Event()
        async with secure_server(tmp_path) as s:
            self.secure: Secure = s
            self.sessions = {user: s.session(token=token) for user, token in
                             {**TOKENS, "admin": s.creds.admin_token, "bad": "bad-token"}.items()}
            self.sessions["none"] = s.session()
            self.sessions["basic"] = s.session(headers={"Authorization": "Basic YWRtaW46YWRtaW4="})
            self.ready.set()
            await self._stop.wait()

    def close(self) -> None:
        assert self._stop is not None
        self.loop.call_soon_threadsafe(self._stop.set)
        self.server_task.result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()

    def send(self, req: dict[str, Any]) -> None:
        asyncio.run_coroutine_threadsafe(self._send(req), self.loop).result(60)

    async def _send(self, req: dict[str, Any]) -> None:
        query = dict(req["query"])
        if "watch" in query:  # watches the server accepts end after a second instead of piling up
            query["timeoutSeconds"] = "1"
        try:
            url = yarl.URL.build(path=req["path"] or "/", query=query or None)
        except (ValueError, TypeError):
            return  # not a request a client can send
        event_log = self.secure.srv.event_log
        before = event_log.revision
        session = self.sessions[req["auth"]]
        try:
            async with session.request(req["method"], url, data=req["body"], headers=req["headers"],
                                       timeout=aiohttp.ClientTimeout(total=30)) as r:
                status = r.status
                streaming = (status == 200 and "watch" in r.headers.get("Content-Type", "")) or \
                    (r.headers.get("Transfer-Encoding") == "chunked" and req["method"] == "GET" and status == 200)
                raw = b"" if streaming or req["method"] == "HEAD" else await r.read()
                content_type = r.headers.get("Content-Type", "")
        except (aiohttp.InvalidURL, ValueError) as exc:
            if not isinstance(exc, aiohttp.ClientResponseError):
                return  # the client refused to send it (bad header value...): not the server's fault
            self.failures.append(f"{req['method']} {url}: bad response {exc!r}")
            return
        except (aiohttp.ClientError, TimeoutError) as exc:
            self.failures.append(f"{req['method']} {url} {req['headers']}: broken response {exc!r}")
            return
        self.sent += 1
        self.codes[status] = self.codes.get(status, 0) + 1
        where = f"{req['method']} {url} ({req['auth']}, {req['headers'].get('Content-Type')})"
        if status >= 500:
            self.failures.append(f"{where}: {status} {raw[:300]!r}")
            return
        if status >= 400:
            if req["method"] != "HEAD":
                try:  # a Status in the media type the request accepts (JSON when nothing else fits)
                    body = status_body(raw, content_type)
                except (ValueError, errors.StatusError, yaml.YAMLError):
                    self.failures.append(f"{where}: {status} not a {content_type} Status: {raw[:200]!r}")
                    return
                if not (isinstance(body, dict) and body.get("kind") == "Status" and body.get("apiVersion") == "v1"
                        and body.get("status") == "Failure" and body.get("code") == status
                        and isinstance(body.get("reason"), str) and isinstance(body.get("message"), str)):
                    self.failures.append(f"{where}: {status} not a Status: {raw[:300]!r}")
            await asyncio.sleep(0)
            if event_log.revision != before:
                self.failures.append(f"{where}: rejected ({status}) but the log moved {before} -> {event_log.revision}")


def status_body(raw: bytes, content_type: str) -> Any:
    """An error body as the client decodes it, by its Content-Type."""
    if content_type.startswith(protobuf.PROTOBUF):
        return protobuf.decode(raw)
    if content_type.startswith("application/yaml"):
        return yaml.safe_load(raw)
    if not content_type.startswith("application/json"):
        raise ValueError(content_type)
    return json.loads(raw)


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    h = Harness(tmp_path)
    try:
        yield h
    finally:
        h.close()


def _run(harness: Harness, total: int) -> None:
    batch = 50

    @settings(max_examples=max(1, total // batch), deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(st.integers(min_value=0, max_value=2**32 - 1))
    def run(seed: int) -> None:
        gen = Gen(random.Random(seed))
        for _ in range(batch):
            harness.send(gen.request())

    start = time.monotonic()
    run()
    elapsed = time.monotonic() - start
    print(f"\nfuzz: {harness.sent} requests in {elapsed:.1f}s; status codes {dict(sorted(harness.codes.items()))}")
    assert not harness.failures, "\n".join(harness.failures[:20])
    assert harness.sent >= total * 0.95, harness.sent
    assert set(harness.codes) & {200, 201} and {401, 403, 404} <= set(harness.codes)


def test_fuzz_10000(harness: Harness) -> None:
    _run(harness, int(os.environ.get("FUZZ_REQUESTS", "10000")))


@pytest.mark.slow
def test_fuzz_100000(harness: Harness) -> None:
    _run(harness, 100_000)
