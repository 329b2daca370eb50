"""The container surface of simulated pods (issue #23): what a run prints (`surface`), the command
set, the environment as the kubelet resolves it, and `pods/log` / `pods/exec` through the API
server to the fleet's kubelet API on the virtual clock — options, `previous`, `follow`, and the
400/422 answers upstream gives."""

from __future__ import annotations

import asyncio
import base64
import json

import aiohttp
import pytest

from api import kubelet_proxy
from controllers.fleet import kubelet_api, lifecycle, surface
from cp import clock as clocks
from cp import errors, testing
from tests.controllers.support import START

# ---------------------------------------------------------------------- pure


def _box(**env: str) -> surface.Container:
    return surface.Container(env=list(env.items()), files={"/etc/hostname": b"web\n"})


def test_commands() -> None:
    box = _box(A="1", B="two words")
    assert surface.run_command(["env"], box).stdout == b"A=1\nB=two words\n"
    assert surface.run_command(["printenv", "B"], box).stdout == b"two words\n"
    missing = surface.run_command(["printenv", "A", "C"], box)
    assert (missing.stdout, missing.code) == (b"1\n", 1)
    assert surface.run_command(["echo", "-n", "x", "y"], box).stdout == b"x y"
    assert surface.run_command(["cat", "/etc/hostname"], box).stdout == b"web\n"
    nofile = surface.run_command(["cat", "/nope"], box)
    assert (nofile.code, nofile.stderr) == (1, b"cat: /nope: No such file or directory\n")
    assert surface.run_command(["cat"], box, stdin=b"in").stdout == b"in"
    assert surface.run_command(["true"], box).code == 0
    assert surface.run_command(["false"], box).code == 1
    unknown = surface.run_command(["ls", "-l"], box)
    assert unknown.code == surface.NOT_FOUND == 127
    assert unknown.stderr.startswith(b"cplane: ls -l: command not found in the simulated container")
    script = surface.run_command(["sh", "-c", "echo $A ${B}; false && echo no || echo 'yes $A'; exit 4"], box)
    assert (script.stdout, script.code) == (b"1 two words\nyes $A\n", 4)
    assert surface.run_command(["sh", "-c", "echo a | cat"], box).code == 2
    assert surface.run_command(["sh"], box, stdin=b"echo one\nprintenv A\nexit 3\necho never\n").stdout == \
        b"one\n1\n"
    assert surface.needs_stdin(["cat"]) and surface.needs_stdin(["sh"]) and not surface.needs_stdin(["sh", "-c", "x"])


def test_interactive_shell_and_cat() -> None:
    box = _box(A="1")
    sh = surface.Interactive(box, shell=True, tty=False)
    assert sh.start().stdout == b""
    assert sh.feed(b"echo o").stdout == b""  # not a whole line yet
    assert sh.feed(b"ne\nprintenv A\n").stdout == b"one\n1\n"
    out = sh.feed(b"exit 3\necho never\n")
    assert (out.stdout, sh.done, sh.code) == (b"", True, 3)
    # a TTY: echo, backspace, Ctrl-C, prompts, \r\n
    tty = surface.Interactive(box, shell=True, tty=True)
    assert tty.start().stdout == b"$ "
    assert tty.feed(b"echo hx\x7fi\r").stdout == b"echo hx\b \bi\r\nhi\r\n$ "
    assert tty.feed(b"junk\x03").stdout == b"junk^C\r\n$ "
    assert tty.feed(b"\x04").stdout == b"" and tty.done
    cat = surface.Interactive(box, shell=False, tty=False)
    assert cat.feed(b"partial").stdout == b"partial"
    assert cat.end().stdout == b"" and cat.done
    last = surface.Interactive(box, shell=True, tty=False)
    assert (last.end().stdout, last.code) == (b"", 0)
    last = surface.Interactive(box, shell=True, tty=False)
    last.feed(b"false")
    assert last.end().code == 1


def test_environment_as_the_kubelet_resolves_it() -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "labels": {"app": "x"}},
           "spec": {"nodeName": "n1", "serviceAccountName": "sa"},
           "status": {"podIP": "10.0.0.5", "hostIP": "172.18.0.2"}}
    container = {
        "name": "c", "resources": {"limits": {"cpu": "1500m", "memory": "64Mi"}},
        "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}, {"secretRef": {"name": "s"}}],
        "env": [{"name": "A", "value": "a"}, {"name": "B", "value": "$(A)-$(MISSING)-$$(A)"},
                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                {"name": "KEY", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
                {"name": "GONE", "valueFrom": {"configMapKeyRef": {"name": "other", "key": "k", "optional": True}}},
                {"name": "PASS", "valueFrom": {"secretKeyRef": {"name": "s", "key": "password"}}},
                {"name": "A", "value": "again"}]}
    assert surface.referenced_objects(container) == ({"cm", "other"}, {"s"})
    env = surface.resolve_env(pod, container, config_maps={"cm": {"data": {"k": "v"}}},
                              secrets={"s": {"data": {"password": base64.b64encode(b"s3cret").decode()}}})
    assert env == [("CM_k", "v"), ("password", "s3cret"), ("A", "again"), ("B", "a-$(MISSING)-$(A)"),
                   ("POD", "p"), ("APP", "x"), ("IP", "10.0.0.5"), ("CPU", "2"), ("MEM", "64"), ("KEY", "v"),
                   ("PASS", "s3cret")]


def test_runs_and_log_options() -> None:
    t0 = START
    status = {"name": "c", "state": {"running": {"startedAt": clocks.rfc3339(t0 + 20)}},
              "lastState": {"terminated": {"startedAt": clocks.rfc3339(t0), "finishedAt": clocks.rfc3339(t0 + 10),
                                           "exitCode": 1, "reason": "Error"}}}
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]},
           "status": {"containerStatuses": [status]}}
    current = surface.run_for_logs(pod, "c", previous=False)
    previous = surface.run_for_logs(pod, "c", previous=True)
    assert (current.started, current.finished) == (t0 + 20, None)
    assert (previous.started, previous.finished, previous.exit_code) == (t0, t0 + 10, 1)
    lines = surface.run_lines(container={"name": "c", "image": "busybox"}, env=[("A", "1")], run=previous)
    assert [ln.text for ln in lines] == ["[cplane] container c started (image busybox)", "A=1",
                                         "[cplane] container c exited with code 1 (Error)"]
    assert surface.render(lines[-1:], timestamps=True) == \
        f"{clocks.rfc3339(t0 + 10)[:-1]}.000000000Z [cplane] container c exited with code 1 (Error)\n".encode()
    opts = surface.LogOptions(since_seconds=5)
    assert [ln.text for ln in surface.select(lines, opts, now=t0 + 12)] == [lines[-1].text]
    assert surface.select(lines, surface.LogOptions(tail_lines=0), now=t0) == []
    assert surface.select(lines, surface.LogOptions(tail_lines=2), now=t0) == lines[1:]
    waiting = {**pod, "status": {"containerStatuses": [{"name": "c", "state": {"waiting": {
        "reason": "ContainerCreating"}}}]}}
    with pytest.raises(surface.SurfaceError, match='container "c" in pod "p" is waiting to start: ContainerCreating'):
        surface.run_for_logs(waiting, "c", previous=False)
    backoff = {**pod, "status": {"containerStatuses": [{**status, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}
    assert surface.run_for_logs(backoff, "c", previous=False) == surface.run_for_logs(backoff, "c", previous=True) \
        == previous  # waiting to restart: both are the run that ended, as the kubelet reads them
    fresh = {**pod, "status": {"containerStatuses": [{"name": "c", "state": status["state"]}]}}
    with pytest.raises(surface.SurfaceError, match='previous terminated container "c" in pod "p" not found'):
        surface.run_for_logs(fresh, "c", previous=True)


# ---------------------------------------------------------------------- through the API server

FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "surface"},
         "nodePools": [{"name": "node", "count": 1}]}


def _pod(name: str, containers: list[dict[str, object]], **annotations: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": annotations},
            "spec": {"nodeName": "node-0", "containers": containers}}


def _own(text: str) -> str:
    """A log without the `kubernetes` service's variables every container gets (tested on their own)."""
    return "".join(ln for ln in text.splitlines(keepends=True) if not ln.startswith("KUBERNETES_"))


async def _log(sb: testing.Sandbox, pod: str, **params: str) -> str:
    raw = await sb.client.request("GET", f"/api/v1/namespaces/default/pods/{pod}/log", params=params)
    return raw.decode()


async def _running(sb: testing.Sandbox, name: str) -> bool:
    pod = await sb.client.get("pods", name, namespace="default")
    return pod.get("status", {}).get("phase") == "Running"


@pytest.mark.cplane(fleet=FLEET, controllers=[], virtual_clock=True, clock_start=START)
async def test_pod_log_options_and_errors(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    await sb.client.create("pods", _pod("two", [{"name": "a", "image": "busybox"}, {"name": "b", "image": "busybox"}]),
                           namespace="default")
    await sb.client.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "unbound"},
                                    "spec": {"containers": [{"name": "c", "image": "busybox"}]}}, namespace="default")
    await sb.wait_for(lambda: _running(sb, "two"))
    with pytest.raises(errors.StatusError) as e:
        await _log(sb, "two")
    assert (e.value.code, e.value.message) == (400, "a container name must be specified for pod two, choose one "
                                                    "of: [a b]")
    with pytest.raises(errors.StatusError) as e:
        await _log(sb, "two", container="c")
    assert (e.value.code, e.value.message) == (400, "container c is not valid for pod two")
    with pytest.raises(errors.StatusError) as e:
        await _log(sb, "two", container="a", tailLines="-1", limitBytes="0")
    assert e.value.code == 422
    assert e.value.message == ('PodLogOptions "two" is invalid: [tailLines: Invalid value: -1: must be greater '
                               "than or equal to 0, limitBytes: Invalid value: 0: must be greater than 0]")
    with pytest.raises(errors.StatusError) as e:
        await _log(sb, "two", container="a", sinceSeconds="10", sinceTime=clocks.rfc3339(START))
    assert e.value.code == 422 and "at most one of `sinceTime` or `sinceSeconds` may be specified" in e.value.message
    with pytest.raises(errors.StatusError) as e:
        await _log(sb, "two", container="a", tailLines="x")
    assert e.value.code == 400
    with pytest.raises(errors.StatusError) as e:
        await _log(sb, "nope")
    assert e.value.code == 404
    assert await _log(sb, "unbound") == ""  # no node yet: an empty log, as upstream
    assert _own(await _log(sb, "two", container="b")) == "[cplane] container b started (image busybox)\n"
    # exec: a command is required, and only over a WebSocket
    with pytest.raises(errors.StatusError) as e:
        await sb.client.request("GET", "/api/v1/namespaces/default/pods/two/exec", params={"container": "a"})
    assert (e.value.code, e.value.message) == (400, "you must specify at least 1 command")
    with pytest.raises(errors.StatusError) as e:
        await sb.client.request("POST", "/api/v1/namespaces/default/pods/two/exec",
                                params={"container": "a", "command": "env"})
    assert (e.value.code, e.value.message) == (400, "Upgrade request required")
    with pytest.raises(errors.StatusError) as e:
        await sb.client.request("POST", "/api/v1/namespaces/default/pods/two/log")
    assert e.value.code == 405
    # a container that has not started: logs say it waits, exec and attach find no container
    await sb.client.create("pods", {**_pod("slow", [{"name": "main", "image": "nginx"}], **{
        f"{lifecycle.RUN_SECONDS}.setup": "600"}), "spec": {
            "nodeName": "node-0", "initContainers": [{"name": "setup", "image": "busybox"}],
            "containers": [{"name": "main", "image": "nginx"}]}}, namespace="default")

    async def initializing() -> bool:
        pod = await sb.client.get("pods", "slow", namespace="default")
        return any("running" in s.get("state", {}) for s in pod["status"].get("initContainerStatuses") or [])
    await sb.wait_for(initializing)
    with pytest.raises(errors.StatusError) as e:
        await _log(sb, "slow", container="main")
    assert (e.value.code, e.value.message) == (400, 'container "main" in pod "slow" is waiting to start: '
                                                    "PodInitializing")
    for sub in ("exec", "attach"):
        with pytest.raises(errors.StatusError) as e:
            await sb.client.request("GET", f"/api/v1/namespaces/default/pods/slow/{sub}",
                                    params={"container": "main", "command": "env", "stdout": "true"})
        assert (e.value.code, e.value.message) == (400, 'container not found ("main")')
    assert (await _log(sb, "slow", container="setup")).startswith("[cplane] container setup started")


@pytest.mark.cplane(fleet=FLEET, controllers=[], virtual_clock=True, clock_start=START)
async def test_previous_and_follow_on_the_virtual_clock(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    await sb.client.create("pods", _pod("crash", [{"name": "c", "image": "busybox", "env": [{"name": "X", "value": "1"}]}],
                                        **{lifecycle.RUN_SECONDS: "30", lifecycle.EXIT_CODE: "3"}), namespace="default")
    await sb.wait_for(lambda: _running(sb, "crash"))
    # follow: the run's lines now, its exit line when the clock reaches it
    url = f"{sb.url}/api/v1/namespaces/default/pods/crash/log?follow=true&timestamps=true"
    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        assert resp.status == 200
        first = await asyncio.wait_for(resp.content.readline(), 10)
        assert first.decode() == f"{clocks.rfc3339(START)[:-1]}.000000000Z [cplane] container c started (image busybox)\n"
        await sb.advance(30)
        rest = (await asyncio.wait_for(resp.read(), 10)).decode().splitlines()
    assert rest[-1] == f"{clocks.rfc3339(START + 30)[:-1]}.000000000Z [cplane] container c exited with code 3 (Error)"
    # restarted after the 10 s back-off: --previous is the run that ended
    await sb.advance(10)

    async def restarted() -> bool:
        pod = await sb.client.get("pods", "crash", namespace="default")
        return any(s.get("restartCount") for s in pod["status"].get("containerStatuses") or [])

    await sb.wait_for(restarted)
    assert _own(await _log(sb, "crash", previous="true")).splitlines() == [
        "[cplane] container c started (image busybox)", "X=1", "[cplane] container c exited with code 3 (Error)"]
    assert _own(await _log(sb, "crash", sinceSeconds="5")) == "[cplane] container c started (image busybox)\nX=1\n"
    await sb.advance(10)  # the current run's lines are 10 s old now
    assert await _log(sb, "crash", sinceSeconds="5") == ""


@pytest.mark.cplane(fleet=FLEET, controllers=[], virtual_clock=True, clock_start=START)
async def test_a_stopped_kubelet_does_not_answer(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    await sb.client.create("pods", _pod("web", [{"name": "c", "image": "nginx"}]), namespace="default")
    await sb.wait_for(lambda: _running(sb, "web"))
    assert kubelet_proxy.ENDPOINT_ANNOTATION == kubelet_api.ENDPOINT_ANNOTATION  # the one the server dials
    node = await sb.client.get("nodes", "node-0")
    endpoint = node["metadata"]["annotations"][kubelet_api.ENDPOINT_ANNOTATION]
    assert endpoint.startswith("127.0.0.1:")
    assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == int(endpoint.split(":")[1])
    await sb.client.patch("nodes", "node-0", {"metadata": {"annotations": {"sim.cplane.dev/kubelet": "stopped"}}})

    async def refused() -> bool:
        try:
            await _log(sb, "web")
        except errors.StatusError as e:
            return e.code == 503 and e.message == 'the kubelet of node "node-0" is not running'
        return False

    await sb.wait_for(refused)


@pytest.mark.cplane(fleet=FLEET, controllers=[], virtual_clock=True, clock_start=START)
async def test_exec_over_the_v5_channel_protocol(cplane_sandbox: testing.Sandbox) -> None:
    """The frames themselves: stdout on 1, stderr on 2, the Status on 3 (NonZeroExitCode with an
    ExitCode cause), stdin on 0 ended by v5's close signal (255, 0)."""
    sb = cplane_sandbox
    await sb.client.create("pods", _pod("web", [{"name": "c", "image": "nginx"}]), namespace="default")
    await sb.wait_for(lambda: _running(sb, "web"))
    base = f"{sb.url.replace('http', 'ws', 1)}/api/v1/namespaces/default/pods/web/exec"

    async def frames(params: list[tuple[str, str]], stdin: bytes = b"") -> list[bytes]:
        async with aiohttp.ClientSession() as session, session.ws_connect(
                base, params=params, protocols=("v5.channel.k8s.io",)) as ws:
            assert ws.protocol == "v5.channel.k8s.io"
            if stdin:
                await ws.send_bytes(b"\x00" + stdin)
                await ws.send_bytes(b"\xff\x00")
            return [msg.data async for msg in ws if msg.type == aiohttp.WSMsgType.BINARY]

    out = await frames([("command", "sh"), ("command", "-c"), ("command", "echo hi; cat /nope; exit 3"),
                        ("stdout", "true"), ("stderr", "true")])
    assert out[0] == b"\x01hi\n" and out[1] == b"\x02cat: /nope: No such file or directory\n"
    assert json.loads(out[2][1:]) == {
        "metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
        "message": "command terminated with non-zero exit code: command 'sh -c echo hi; cat /nope; exit 3' exited with 3",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}}
    out = await frames([("command", "cat"), ("stdin", "true"), ("stdout", "true")], stdin=b"echo me")
    assert out == [b"\x01echo me", b'\x03{"metadata": {}, "status": "Success"}']


@pytest.mark.cplane(fleet=FLEET, controllers=[], secure=True)
async def test_secure_sandbox_logs_through_the_reviewed_kubelet_api(cplane_sandbox: testing.Sandbox) -> None:
    """TLS and RBAC, the fleet with its own identity: the API server's call is reviewed by the kubelet
    API (TokenReview, SubjectAccessReview of nodes/proxy), which answers."""
    sb = cplane_sandbox
    await sb.client.create("pods", _pod("web", [{"name": "c", "image": "nginx"}]), namespace="default")
    await sb.wait_for(lambda: _running(sb, "web"))
    assert _own(await _log(sb, "web")) == "[cplane] container c started (image nginx)\n"


def test_a_shell_script_that_runs_export_prints_the_environment_as_that_shell_does() -> None:
    """Upstream's DRA demos run `bash -c "export; ..."` and grep its output for `GPU_DEVICE_[0-9]+=`."""
    env = [("GPU_DEVICE_0", "gpu-0"), ("A", 'say "$HOME" `x` \\ it\'s')]
    demo = {"name": "ctr0", "command": ["bash", "-c"], "args": ["export; trap 'exit 0' TERM; sleep 9999 & wait"]}
    assert surface.env_lines(container=demo, env=env) == [
        'declare -x A="say \\"\\$HOME\\" \\`x\\` \\\\ it\'s"', 'declare -x GPU_DEVICE_0="gpu-0"']
    dash = {"name": "c", "command": ["/bin/sh", "-c", "export && sleep 10"]}
    assert surface.env_lines(container=dash, env=env) == [
        "export A='say \"$HOME\" `x` \\ it'\\''s'", "export GPU_DEVICE_0='gpu-0'"]
    # Anything else prints `NAME=value` in the kubelet's order.
    for other in ({"name": "c"}, {"name": "c", "command": ["bash", "-c", "exporter; env"]},
                  {"name": "c", "command": ["python", "-c", "export"]}):
        assert surface.env_lines(container=other, env=env) == ["GPU_DEVICE_0=gpu-0", f"A={env[1][1]}"]


def test_service_variables_as_the_kubelet_makes_them() -> None:
    def svc(ns: str, name: str, ip: str, *ports: dict[str, object]) -> dict[str, object]:
        return {"metadata": {"namespace": ns, "name": name}, "spec": {"clusterIP": ip, "ports": list(ports)}}

    services = [
        svc("default", "kubernetes", "10.0.0.1", {"name": "https", "port": 443}),
        svc("shop", "my-db", "10.0.0.7", {"port": 5432}, {"name": "metrics-udp", "port": 9125, "protocol": "UDP"}),
        svc("shop", "headless", "None", {"port": 80}),
        svc("other", "elsewhere", "10.0.0.9", {"port": 80}),
        svc("shop", "v6", "fd00::5", {"port": 80}),
    ]
    env = dict(surface.service_env(namespace="shop", services=services, service_links=True))
    assert env["KUBERNETES_SERVICE_HOST"] == "10.0.0.1" and env["KUBERNETES_SERVICE_PORT_HTTPS"] == "443"
    assert env["KUBERNETES_PORT_443_TCP"] == "tcp://10.0.0.1:443"
    assert {k: v for k, v in env.items() if k.startswith("MY_DB_")} == {
        "MY_DB_SERVICE_HOST": "10.0.0.7", "MY_DB_SERVICE_PORT": "5432", "MY_DB_SERVICE_PORT_METRICS_UDP": "9125",
        "MY_DB_PORT": "tcp://10.0.0.7:5432",
        "MY_DB_PORT_5432_TCP": "tcp://10.0.0.7:5432", "MY_DB_PORT_5432_TCP_PROTO": "tcp",
        "MY_DB_PORT_5432_TCP_PORT": "5432", "MY_DB_PORT_5432_TCP_ADDR": "10.0.0.7",
        "MY_DB_PORT_9125_UDP": "udp://10.0.0.7:9125", "MY_DB_PORT_9125_UDP_PROTO": "udp",
        "MY_DB_PORT_9125_UDP_PORT": "9125", "MY_DB_PORT_9125_UDP_ADDR": "10.0.0.7"}
    assert env["V6_PORT"] == "tcp://[fd00::5]:80"
    assert not any(k.startswith(("HEADLESS_", "ELSEWHERE_")) for k in env)
    # enableServiceLinks: false keeps only the master service's variables.
    assert {k.split("_")[0] for k, _ in surface.service_env(namespace="shop", services=services,
                                                            service_links=False)} == {"KUBERNETES"}
    # The pod's own variables win by name and may refer to the services' with $(VAR).
    container = {"env": [{"name": "MY_DB_SERVICE_PORT", "value": "1"},
                         {"name": "DSN", "value": "pg://$(MY_DB_SERVICE_HOST):$(MY_DB_SERVICE_PORT)"}]}
    resolved = dict(surface.resolve_env({}, container, config_maps={}, secrets={},
                                        services=surface.service_env(namespace="shop", services=services,
                                                                     service_links=True)))
    assert resolved["MY_DB_SERVICE_PORT"] == "1" and resolved["DSN"] == "pg://10.0.0.7:1"
