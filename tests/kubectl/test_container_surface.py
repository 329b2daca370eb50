"""The container surface of simulated pods with the real kubectl 1.37.1 (issue #23): `kubectl logs`
(and `-f`, `--previous`, `--tail`, `--timestamps`, `--limit-bytes`), `kubectl exec` over the
`v5.channel.k8s.io` WebSocket (the command set, exit codes, stdin), `kubectl attach`, `kubectl
debug` with an ephemeral container, through the API server's proxy to the fleet's kubelet API."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from cp import testing
from tests.kubectl.conftest import Kubectl, kubectl_on

pytestmark = pytest.mark.kubectl

FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "surface"},
         "nodePools": [{"name": "node", "count": 1}]}

PODS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {MODE: fast, LEVEL: "3"}
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  nodeName: node-0
  containers:
  - name: main
    image: nginx:1.27
    ports: [{containerPort: 8080}]
    env:
    - {name: GREETING, value: hello}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: APP, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
    - {name: MESSAGE, value: "$(GREETING) from $(POD_NAME)"}
    - {name: MODE, valueFrom: {configMapKeyRef: {name: settings, key: MODE}}}
---
apiVersion: v1
kind: Pod
metadata: {name: two, annotations: {sim.cplane.dev/stop-seconds: "5"}}
spec:
  nodeName: node-0
  containers:
  - {name: a, image: busybox, env: [{name: WHO, value: a}]}
  - {name: b, image: busybox, env: [{name: WHO, value: b}]}
"""


# What the `kubernetes` service of the default namespace gives every container (the kubelet's
# service variables), before the pod's own.
KUBERNETES_VARS = ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KUBERNETES_SERVICE_PORT_HTTPS",
                   "KUBERNETES_PORT", "KUBERNETES_PORT_443_TCP", "KUBERNETES_PORT_443_TCP_PROTO",
                   "KUBERNETES_PORT_443_TCP_PORT", "KUBERNETES_PORT_443_TCP_ADDR"]


@pytest.fixture
async def kubectl(cplane_sandbox: testing.Sandbox, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubectl_on(cplane_sandbox, tmp_path) as k:
        await k("apply", "-f", k.write("pods.yaml", PODS))
        await k("wait", "--for=condition=Ready", "pod/web", "pod/two", "--timeout=20s")
        yield k


@pytest.mark.cplane(fleet=FLEET, controllers=[])
async def test_logs(kubectl: Kubectl) -> None:
    out = (await kubectl("logs", "web")).stdout
    lines = out.splitlines()
    assert lines[0] == "[cplane] container main started (image nginx:1.27)"
    # The `kubernetes` service's variables first (every container gets them), then the pod's own.
    assert [ln.split("=")[0] for ln in lines[1:9]] == KUBERNETES_VARS
    assert lines[9:] == ["GREETING=hello", "POD_NAME=web", "APP=web", "MESSAGE=hello from web", "MODE=fast"]
    assert (await kubectl("logs", "web", "--tail=1")).stdout == "MODE=fast\n"
    assert (await kubectl("logs", "web", "--limit-bytes=9")).stdout == "[cplane] "
    stamped = (await kubectl("logs", "web", "--timestamps", "--tail=1")).stdout
    assert stamped.endswith("Z MODE=fast\n") and stamped[:4].isdigit()
    # Multi-container: kubectl defaults to the first one (and says so); -c picks.
    result = await kubectl("logs", "two")
    assert "GREETING" not in result.stdout and "WHO=a" in result.stdout
    assert 'Defaulted container "a" out of: a, b' in result.stderr
    assert "WHO=b" in (await kubectl("logs", "two", "-c", "b")).stdout
    result = await kubectl("logs", "two", "-c", "nope", check=False)
    assert result.code == 1 and "container nope is not valid for pod two" in result.stderr
    result = await kubectl("logs", "web", "--previous", check=False)
    assert result.code == 1 and 'previous terminated container "main" in pod "web" not found' in result.stderr
    result = await kubectl("logs", "web", "--since=-1s", check=False)
    assert result.code != 0


@pytest.mark.cplane(fleet=FLEET, controllers=[])
async def test_logs_follow_until_the_container_stops(kubectl: Kubectl) -> None:
    follow = await kubectl.start("logs", "-f", "web")
    await follow.expect(r"MODE=fast")
    await kubectl("delete", "pod", "web", "--wait=false")
    result = await follow.wait()
    assert result.code == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("[cplane] container main exited with code ")


@pytest.mark.cplane(fleet=FLEET, controllers=[])
async def test_exec(kubectl: Kubectl) -> None:
    out = (await kubectl("exec", "web", "--", "env")).stdout
    assert out.splitlines()[8:] == ["GREETING=hello", "POD_NAME=web", "APP=web", "MESSAGE=hello from web", "MODE=fast"]
    assert (await kubectl("exec", "web", "--", "printenv", "MESSAGE")).stdout == "hello from web\n"
    assert (await kubectl("exec", "web", "--", "echo", "a", "b")).stdout == "a b\n"
    assert (await kubectl("exec", "web", "--", "cat", "/etc/hostname")).stdout == "web\n"
    assert (await kubectl("exec", "web", "--", "sh", "-c", "echo $GREETING; exit 3", check=False)).code == 3
    result = await kubectl("exec", "web", "--", "false", check=False)
    assert result.code == 1 and "command terminated with exit code 1" in result.stderr
    assert (await kubectl("exec", "web", "--", "true")).code == 0
    result = await kubectl("exec", "web", "--", "ls", "/", check=False)
    assert result.code == 127 and "ls /: command not found in the simulated container" in result.stderr
    result = await kubectl("exec", "-i", "web", "--", "echo", "x", input="not read\n")  # stdin unused
    assert (result.code, result.stdout) == (0, "x\n")
    result = await kubectl("exec", "-i", "web", "--", "cat", input="from stdin\n")
    assert result.stdout == "from stdin\n"
    result = await kubectl("exec", "-i", "web", "--", "sh", input="echo one\nprintenv APP\n")
    assert result.stdout == "one\nweb\n"
    result = await kubectl("exec", "-i", "web", "--", "sh", input="echo two\nexit 5\necho never\n", check=False)
    assert (result.code, result.stdout) == (5, "two\n")
    assert (await kubectl("exec", "two", "-c", "b", "--", "printenv", "WHO")).stdout == "b\n"


@pytest.mark.cplane(fleet=FLEET, controllers=[])
async def test_attach(kubectl: Kubectl) -> None:
    result = await kubectl("attach", "-i", "web", input="hello\nworld\n")
    assert result.stdout.endswith("hello\nworld\n"), result
    # Without stdin: nothing until the run ends (the pod takes 5 s to stop), then its exit line.
    attached = await kubectl.start("attach", "two", "-c", "b")
    await kubectl("delete", "pod", "two", "--wait=false")
    result = await attached.wait()
    assert "[cplane] container b exited with code" in result.stdout, result


@pytest.mark.cplane(fleet=FLEET, controllers=[])
async def test_debug_runs_an_ephemeral_container(kubectl: Kubectl) -> None:
    result = await kubectl("debug", "web", "--image=busybox", "-c", "dbg", "--target=main")
    assert result.code == 0, result.stderr
    await kubectl("wait", "pod/web", "--for=jsonpath={.status.ephemeralContainerStatuses[0].state.running}",
                  "--timeout=20s")
    assert (await kubectl("logs", "web", "-c", "dbg")).stdout.startswith(
        "[cplane] container dbg started (image busybox)")
    assert (await kubectl("exec", "web", "-c", "dbg", "--", "echo", "inside")).stdout == "inside\n"


@pytest.mark.cplane(fleet=FLEET, controllers=[])
async def test_port_forward(kubectl: Kubectl) -> None:
    forward = await kubectl.start("port-forward", "pod/web", ":8080", ":9999")
    m = await forward.expect(r"Forwarding from 127\.0\.0\.1:(\d+) -> 8080")
    local = int(m.group(1))
    other = int((await forward.expect(r"Forwarding from 127\.0\.0\.1:(\d+) -> 9999")).group(1))
    try:
        async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{local}/") as resp:
            assert resp.status == 200
            assert await resp.text() == "cplane: simulated pod default/web, container main, port 8080\n"
        reader, writer = await asyncio.open_connection("127.0.0.1", local)
        writer.write(b"ping\n")
        await writer.drain()
        assert await asyncio.wait_for(reader.readline(), 10) == b"ping\n"
        writer.close()
        await writer.wait_closed()
        # A port no container declares: kubectl reports the error the kubelet wrote.
        reader, writer = await asyncio.open_connection("127.0.0.1", other)
        writer.write(b"hello\n")
        await writer.drain()
        # The connection ends with nothing read: a FIN, or a reset when kubectl closes it before reading
        # the "hello" (Linux resets a socket closed with unread data).
        with contextlib.suppress(ConnectionResetError):
            assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
        await forward.expect(r"nothing listens on port 9999 in the simulated pod \(its containers declare: 8080\)",
                             stream="stderr")
    finally:
        await forward.stop()


class Terminal:
    """kubectl on a pseudo-terminal (`-it` needs one): what it printed so far, and keys to type."""

    def __init__(self, kubectl: Kubectl, *args: str) -> None:
        self.kubectl, self.args = kubectl, args
        self.seen = bytearray()
        self._arrived = asyncio.Event()

    async def __aenter__(self) -> Terminal:
        self.master, slave = pty.openpty()
        self.proc = await asyncio.create_subprocess_exec(
            str(self.kubectl.binary), *self.args, stdin=slave, stdout=slave, stderr=slave, env=self.kubectl.env,
            cwd=self.kubectl.workdir)
        os.close(slave)
        asyncio.get_running_loop().add_reader(self.master, self._readable)
        return self

    def _readable(self) -> None:
        try:
            self.seen.extend(os.read(self.master, 65536))
        except OSError:  # the terminal closed with the process
            asyncio.get_running_loop().remove_reader(self.master)
        self._arrived.set()

    async def expect(self, text: bytes) -> None:
        async def found() -> None:
            while text not in self.seen:
                self._arrived.clear()
                await self._arrived.wait()
        try:
            await asyncio.wait_for(found(), 15)
        except TimeoutError:
            raise AssertionError(f"{text!r} not seen in {bytes(self.seen)!r}") from None

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    async def __aexit__(self, *exc: object) -> None:
        asyncio.get_running_loop().remove_reader(self.master)
        os.close(self.master)
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()


@pytest.mark.cplane(fleet=FLEET, controllers=[])
async def test_exec_with_a_terminal(kubectl: Kubectl) -> None:
    """`kubectl exec -it pod -- sh` on a pseudo-terminal: a prompt, typed input echoed, `exit 4`."""
    async with Terminal(kubectl, "exec", "-it", "web", "--", "sh") as term:
        await term.expect(b"$ ")
        term.type(b"printenv GREETING\r")
        await term.expect(b"printenv GREETING\r\nhello\r\n$ ")
        term.type(b"exit 4\r")
        assert await asyncio.wait_for(term.proc.wait(), 15) == 4


@pytest.mark.cplane(fleet=FLEET, controllers=[])
async def test_debug_interactively(kubectl: Kubectl) -> None:
    """`kubectl debug -it`: the ephemeral container runs, kubectl attaches with a terminal, and what is
    typed comes back (the simulated process echoes its input)."""
    async with Terminal(kubectl, "debug", "-it", "web", "--image=busybox", "-c", "shell") as term:
        await term.expect(b"If you don't see a command prompt, try pressing enter.")
        term.type(b"hello\r")
        await term.expect(b"hello\r\n")
    statuses = json.loads(await kubectl.jsonpath("pod", "web", path="{.status.ephemeralContainerStatuses}"))
    assert [s["name"] for s in statuses] == ["shell"] and "running" in statuses[0]["state"]


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: trainer}
spec:
  replicas: 2
  selector: {matchLabels: {app: trainer}}
  template:
    metadata: {labels: {app: trainer}}
    spec:
      nodeName: node-0
      containers:
      - name: main
        image: registry.example.com/trainer:1.0
        env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
"""


@pytest.mark.cplane(fleet=FLEET, controllers=["replicaset", "deployment"])
async def test_the_readme_lines(kubectl: Kubectl) -> None:
    """README's walkthrough: `kubectl logs deploy/trainer`, `kubectl exec deploy/trainer -- env`."""
    await kubectl("apply", "-f", kubectl.write("deploy.yaml", DEPLOYMENT))
    await kubectl("rollout", "status", "deploy/trainer", "--timeout=30s")
    logs = (await kubectl("logs", "deploy/trainer")).stdout.splitlines()
    assert logs[0] == "[cplane] container main started (image registry.example.com/trainer:1.0)"
    assert logs[9].startswith("POD_NAME=trainer-")
    env = (await kubectl("exec", "deploy/trainer", "--", "env")).stdout
    assert env.splitlines()[8].startswith("POD_NAME=trainer-")
