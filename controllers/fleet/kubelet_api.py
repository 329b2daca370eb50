"""The simulated kubelets' HTTP API (issue #23): one aiohttp server on loopback for every node the
fleet process simulates, serving what kube-apiserver proxies to a kubelet — `containerLogs`,
`exec`, `attach` and `portForward` — for the pods in the fleet's cache (`controllers/fleet/surface.py`
says what a simulated container prints and answers).

Where it listens: `127.0.0.1` on a free port (the one its nodes already name, when a restarted
fleet finds it free); each node it simulates carries the address in the annotation
`sim.cplane.dev/kubelet-endpoint` (`HOST:PORT`) and the port in
`status.daemonEndpoints.kubeletEndpoint.Port`. The API server dials that annotation (its
InternalIPs are made up), and only a loopback address (`api/kubelet_proxy.py`).

Who may call it: when the fleet's own client authenticates to the API server (TLS, a token), every
request is authenticated and authorized as upstream's kubelet does in webhook mode — its bearer
token through a TokenReview, then a SubjectAccessReview of `nodes/proxy` on the pod's node (`get` for
logs, `create` for exec, attach and port-forward); no token is `system:anonymous`, which RBAC
refuses. The API server calls with a token of its own (user `kube-apiserver-kubelet-client`,
bound to `system:kubelet-api-admin`). Against an insecure API server the kubelet is as open as it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import structlog
from aiohttp import WSMsgType, web

from controllers.fleet import spdy, surface
from controllers.runtime import client as clients
from cp import clock as clocks
from cp import errors

logger = structlog.get_logger("cplane.controllers.fleet.kubelet")

ENDPOINT_ANNOTATION = "sim.cplane.dev/kubelet-endpoint"
PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
PORT_FORWARD_PROTOCOL = "SPDY/3.1+portforward.k8s.io"  # kubectl's WebSocket tunnel of SPDY (PortForwardWebsockets)
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
AUTH_CACHE_SECONDS = 60.0  # TokenReview and SubjectAccessReview answers kept (upstream: 2 and 5 minutes)
LIVENESS_CHECK = 1.0  # seconds between checks that a following client is still there
TOKEN_REVIEWS = "tokenreviews.authentication.k8s.io"
ACCESS_REVIEWS = "subjectaccessreviews.authorization.k8s.io"


class Host(Protocol):
    """What the server needs of the Simulator."""

    client: clients.Client
    clock: clocks.Clock

    def cached_pod(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def kubelet_running(self, node: str) -> bool: ...

    async def container_environment(self, pod: Mapping[str, Any],
                                    container: Mapping[str, Any]) -> list[tuple[str, str]]: ...

    async def container_files(self, pod: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, bytes]: ...


class PodChanges:
    """Wakes the handlers following a pod when the fleet's cache sees it change."""

    def __init__(self) -> None:
        self._waiters: dict[tuple[str, str], set[asyncio.Event]] = {}

    def notify(self, key: tuple[str, str]) -> None:
        for event in self._waiters.get(key, ()):
            event.set()

    @contextlib.contextmanager
    def watching(self, key: tuple[str, str]) -> Any:
        event = asyncio.Event()
        self._waiters.setdefault(key, set()).add(event)
        try:
            yield event
        finally:
            waiters = self._waiters.get(key)
            if waiters is not None:
                waiters.discard(event)
                if not waiters:
                    del self._waiters[key]


def _status(code: int, message: str, reason: str) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    return web.json_response(body, status=code)


class KubeletServer:
    """The kubelet API of every simulated node of one fleet process."""

    def __init__(self, *, host: Host, secure: bool, port: int = 0, address: str = "127.0.0.1") -> None:
        self.host = host
        self.secure = secure
        self.changes = PodChanges()
        self._bind = (address, port)
        self._runner: web.AppRunner | None = None
        self.endpoint = ""  # "HOST:PORT" once started
        self.port = 0
        self.started = asyncio.Event()
        self._wanted = asyncio.Event()
        self._authn: dict[str, tuple[float, dict[str, Any] | None]] = {}
        self._authz: dict[tuple[str, str, str], tuple[float, bool]] = {}
        self._log = logger

    # ------------------------------------------------------------------ lifecycle

    def request_start(self, port: int) -> None:
        """Ask `serve` to start, on `port` if it is free (the port a previous incarnation advertised:
        a restarted fleet then rewrites no node), else on any free one."""
        if not self._wanted.is_set():
            self._bind = (self._bind[0], port or self._bind[1])
            self._wanted.set()

    async def serve(self) -> None:
        """Started once asked (`request_start`), serving until cancelled, then stopped."""
        await self._wanted.wait()
        wanted = self._bind[1]
        try:
            try:
                await self.start()
            except OSError:
                if not wanted:
                    raise
                self._bind = (self._bind[0], 0)
                await self.start()
        except OSError as e:  # no port: the fleet runs on, without logs, exec or port-forward
            self._log.error("kubelet_api_failed", error=str(e))
            self.started.set()
            return
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop()

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._logs)
        app.router.add_route("*", "/exec/{namespace}/{pod}/{container}", self._exec)
        app.router.add_route("*", "/attach/{namespace}/{pod}/{container}", self._attach)
        app.router.add_route("*", "/portForward/{namespace}/{pod}", self._port_forward)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self._bind[0], self._bind[1])
        try:
            await site.start()
        except OSError:
            await runner.cleanup()
            raise
        self._runner = runner
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = int(sockets[0].getsockname()[1]) if sockets else self._bind[1]
        self.endpoint = f"{self._bind[0]}:{self.port}"
        self._bind = (self._bind[0], self.port)  # the next term (a regained leadership) listens here again
        self.started.set()
        self._log.info("kubelet_api_started", endpoint=self.endpoint, secure=self.secure)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.started.clear()

    # ------------------------------------------------------------------ authentication, authorization

    async def _user(self, request: web.Request) -> dict[str, Any] | None:
        header = request.headers.get("Authorization", "")
        if not header.startswith("Bearer "):
            return {"username": "system:anonymous", "groups": ["system:unauthenticated"]}
        token = header.removeprefix("Bearer ").strip()
        now = time.monotonic()
        cached = self._authn.get(token)
        if cached is not None and cached[0] > now:
            return cached[1]
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        out = await self.host.client.create(TOKEN_REVIEWS, review)
        status = out.get("status") or {}
        user = dict(status.get("user") or {}) if status.get("authenticated") else None
        if len(self._authn) > 1024:
            self._authn.clear()
        self._authn[token] = (now + AUTH_CACHE_SECONDS, user)
        return user

    async def _authorize(self, request: web.Request, *, node: str, verb: str) -> web.Response | None:
        """None when the caller may; else the kubelet's 401 or 403."""
        if not self.secure:
            return None
        try:
            user = await self._user(request)
        except errors.StatusError as e:
            self._log.warning("kubelet_token_review_failed", error=str(e))
            return _status(401, "Unauthorized", "Unauthorized")
        if user is None:
            return _status(401, "Unauthorized", "Unauthorized")
        name = str(user.get("username") or "")
        key = (name + "\x00" + ",".join(user.get("groups") or []), verb, node)
        now = time.monotonic()
        cached = self._authz.get(key)
        if cached is not None and cached[0] > now:
            allowed = cached[1]
        else:
            review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                      "spec": {"user": name, "groups": user.get("groups") or [], "uid": user.get("uid") or "",
                               "extra": user.get("extra") or {},
                               "resourceAttributes": {"verb": verb, "resource": "nodes", "subresource": "proxy",
                                                      "name": node, "version": "v1"}}}
            try:
                out = await self.host.client.create(ACCESS_REVIEWS, review)
            except errors.StatusError as e:
                self._log.warning("kubelet_access_review_failed", error=str(e))
                return _status(403, "Forbidden", "Forbidden")
            allowed = bool((out.get("status") or {}).get("allowed"))
            if len(self._authz) > 1024:
                self._authz.clear()
            self._authz[key] = (now + AUTH_CACHE_SECONDS, allowed)
        if not allowed:
            return _status(403, f"Forbidden (user={name}, verb={verb}, resource=nodes, subresource=proxy)",
                           "Forbidden")
        return None

    # ------------------------------------------------------------------ shared

    async def _target(self, request: web.Request, *, verb: str
                      ) -> tuple[dict[str, Any], Mapping[str, Any]] | web.Response:
        ns, name = request.match_info["namespace"], request.match_info["pod"]
        pod = self.host.cached_pod(ns, name)
        if pod is None:
            return _status(404, f'pod "{name}" not found', "NotFound")
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        refused = await self._authorize(request, node=node, verb=verb)
        if refused is not None:
            return refused
        if not self.host.kubelet_running(node):  # `cplane node stop`, or not a node of this process
            return _status(503, f'the kubelet of node "{node}" is not running', "ServiceUnavailable")
        cname = request.match_info.get("container", "")
        container = surface.find_container(pod, cname) if cname else None
        if cname and container is None:
            return _status(400, f"container {cname} is not valid for pod {name}", "BadRequest")
        return pod, container or {}

    async def _healthz(self, request: web.Request) -> web.StreamResponse:
        return web.Response(text="ok")

    def _follow_pod(self, pod: Mapping[str, Any]) -> tuple[tuple[str, str], str]:
        meta = pod.get("metadata") or {}
        return (str(meta.get("namespace") or ""), str(meta.get("name") or "")), str(meta.get("uid") or "")

    async def _wait_run_end(self, pod: Mapping[str, Any], container: str, run: surface.Run,
                            gone: Callable[[], bool]) -> surface.Run | None:
        """Wait until the container's run ends (its ended run) or the pod goes or the client leaves (None)."""
        key, uid = self._follow_pod(pod)
        with self.changes.watching(key) as changed:
            while True:
                current = self.host.cached_pod(*key)
                if current is None or str((current.get("metadata") or {}).get("uid") or "") != uid:
                    return None
                status = surface.container_status(current, container)
                now_run = surface.current_run(status)
                if now_run is not None and surface.same_run(now_run, run) and now_run.finished is not None:
                    return now_run
                if now_run is not None and not surface.same_run(now_run, run):
                    last = surface.previous_run(status) or now_run
                    return last if surface.same_run(last, run) else surface.Run(
                        started=run.started, finished=now_run.started, exit_code=None, reason="")
                if gone():
                    return None
                changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), LIVENESS_CHECK)

    # ------------------------------------------------------------------ containerLogs

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        target = await self._target(request, verb="get")
        if isinstance(target, web.Response):
            return target
        pod, container = target
        try:
            opts = log_options(request.query)
            run = surface.run_for_logs(pod, str(container.get("name")), previous=opts.previous)
        except surface.SurfaceError as e:
            return _status(400, str(e), "BadRequest")
        env = await self.host.container_environment(pod, container)
        lines = surface.select(surface.run_lines(container=container, env=env, run=run), opts,
                               now=self.host.clock.now())
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await resp.prepare(request)
        budget = opts.limit_bytes

        async def write(data: bytes) -> bool:
            nonlocal budget
            if budget is not None:
                data = data[:budget]
                budget -= len(data)
            if data:
                await resp.write(data)
            return budget is None or budget > 0

        more = await write(surface.render(lines, timestamps=opts.timestamps))
        if more and opts.follow and not opts.previous and run.finished is None:
            transport = request.transport

            def gone() -> bool:
                return transport is None or transport.is_closing()

            ended = await self._wait_run_end(pod, str(container.get("name")), run, gone)
            if ended is not None and ended.exit_code is not None:
                await write(surface.render([surface.exit_line(container=container, run=ended)],
                                           timestamps=opts.timestamps))
        with contextlib.suppress(ConnectionError):
            await resp.write_eof()
        return resp

    # ------------------------------------------------------------------ exec, attach

    async def _websocket(self, request: web.Request, *, protocols: tuple[str, ...] = PROTOCOLS
                         ) -> web.WebSocketResponse | web.Response:
        """The upgraded connection (closed at once when the client offers none of `protocols`), or
        the 400 of a request that is not an upgrade."""
        ws = web.WebSocketResponse(protocols=protocols, max_msg_size=0)
        if not ws.can_prepare(request).ok:
            return _status(400, "Upgrade request required", "BadRequest")
        await ws.prepare(request)
        if ws.ws_protocol is None:
            wanted = f"one of the subprotocols {', '.join(protocols)}" if len(protocols) > 1 \
                else f"the subprotocol {protocols[0]}"
            await ws.close(message=f"{wanted} is required".encode())
        return ws

    async def _read_stdin(self, ws: web.WebSocketResponse, on_data: Callable[[bytes], Awaitable[None]] | None
                          ) -> bytes:
        """Stdin frames until the client closes stdin (v5's close signal) or the connection."""
        data = b""
        async for msg in ws:
            if msg.type != WSMsgType.BINARY or not msg.data:
                continue
            raw: bytes = msg.data
            if raw[0] == STDIN:
                data += raw[1:]
                if on_data is not None and len(raw) > 1:
                    await on_data(raw[1:])
            elif raw[0] == CLOSE and raw[1:2] == bytes([STDIN]):
                break
        return data

    @staticmethod
    def _flags(query: Mapping[str, str]) -> dict[str, bool]:
        return {k: query.get(k, "").lower() in ("1", "true") for k in ("stdin", "stdout", "stderr", "tty")}

    @staticmethod
    async def _finish(ws: web.WebSocketResponse, code: int, command: list[str]) -> None:
        if code == 0:
            status: dict[str, Any] = {"metadata": {}, "status": "Success"}
        else:
            status = {"metadata": {}, "status": "Failure",
                      "message": f"command terminated with non-zero exit code: command '{' '.join(command)}' "
                                 f"exited with {code}",
                      "reason": "NonZeroExitCode",
                      "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}
        with contextlib.suppress(ConnectionError):
            await ws.send_bytes(bytes([ERROR]) + json.dumps(status).encode())
            await ws.close()

    async def _exec(self, request: web.Request) -> web.StreamResponse:
        target = await self._target(request, verb="create")
        if isinstance(target, web.Response):
            return target
        pod, container = target
        command = request.query.getall("command", [])
        if not command:
            return _status(400, "you must specify at least 1 command", "BadRequest")
        refused = _not_running(pod, str(container.get("name")))
        if refused is not None:
            return refused
        flags = self._flags(request.query)
        ws = await self._websocket(request)
        if isinstance(ws, web.Response) or ws.closed:
            return ws
        env = await self.host.container_environment(pod, container)
        files = await self.host.container_files(pod, container)
        box = surface.Container(env=env, files=files)

        async def send(outcome: surface.Outcome) -> None:
            with contextlib.suppress(ConnectionError):
                if flags["tty"]:
                    outcome.stdout += outcome.stderr
                    outcome.stderr = b""
                if flags["stdout"] and outcome.stdout:
                    await ws.send_bytes(bytes([STDOUT]) + outcome.stdout)
                if flags["stderr"] and outcome.stderr:
                    await ws.send_bytes(bytes([STDERR]) + outcome.stderr)

        if flags["stdin"] and surface.needs_stdin(command):
            session = surface.Interactive(box, shell=command[0] != "cat", tty=flags["tty"])
            await send(session.start())
            async for msg in ws:
                if msg.type != WSMsgType.BINARY or not msg.data:
                    continue
                raw: bytes = msg.data
                if raw[0] == STDIN:
                    await send(session.feed(raw[1:]))
                elif raw[0] == CLOSE and raw[1:2] == bytes([STDIN]):
                    await send(session.end())
                if session.done:
                    break
            else:  # the client left
                return ws
            outcome = surface.Outcome(code=session.code)
        else:
            outcome = surface.run_command(command, box)
            await send(outcome)
        self._log.info("container_exec", namespace=pod["metadata"].get("namespace"), pod=pod["metadata"].get("name"),
                       container=container.get("name"), command=command[0], exit_code=outcome.code)
        await self._finish(ws, outcome.code, command)
        return ws

    async def _attach(self, request: web.Request) -> web.StreamResponse:
        target = await self._target(request, verb="create")
        if isinstance(target, web.Response):
            return target
        pod, container = target
        cname = str(container.get("name"))
        refused = _not_running(pod, cname)
        if refused is not None:
            return refused
        run = surface.current_run(surface.container_status(pod, cname))
        assert run is not None
        flags = self._flags(request.query)
        ws = await self._websocket(request)
        if isinstance(ws, web.Response) or ws.closed:
            return ws
        if flags["stdin"]:
            # The simulated process echoes what it reads; closing stdin detaches (the container runs on).
            async def echo(data: bytes) -> None:
                if flags["stdout"]:
                    # A terminal ends a typed line with \r; its echo moves to the next line.
                    await ws.send_bytes(bytes([STDOUT]) + (data.replace(b"\r", b"\r\n") if flags["tty"] else data))

            with contextlib.suppress(ConnectionError):
                await self._read_stdin(ws, echo)
            await self._finish(ws, 0, [])
            return ws
        # Output from now on: the run's exit line, when it ends (or nothing, when the client leaves).
        reader = asyncio.create_task(self._read_stdin(ws, None))
        try:
            ended = await self._wait_run_end(pod, cname, run, reader.done)
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await reader
        if ended is not None and ended.exit_code is not None and flags["stdout"]:
            with contextlib.suppress(ConnectionError):
                await ws.send_bytes(bytes([STDOUT]) + surface.render(
                    [surface.exit_line(container=container, run=ended)], timestamps=False))
        await self._finish(ws, 0, [])
        return ws

    # ------------------------------------------------------------------ portForward

    async def _port_forward(self, request: web.Request) -> web.StreamResponse:
        """kubectl's port-forward tunnel: a SPDY/3.1 session inside the WebSocket (`spdy`); each
        forwarded connection is answered by the simulated pod (`forward_connection`)."""
        target = await self._target(request, verb="create")
        if isinstance(target, web.Response):
            return target
        pod, _ = target
        ws = await self._websocket(request, protocols=(PORT_FORWARD_PROTOCOL,))
        if not isinstance(ws, web.WebSocketResponse) or ws.ws_protocol is None:
            return ws
        errors_by_request: dict[str, spdy.Stream] = {}

        async def on_stream(stream: spdy.Stream) -> None:
            kind = stream.headers.get("streamtype", "")
            request_id = stream.headers.get("requestid", "")
            if kind == "error":
                errors_by_request[request_id] = stream
                return
            if kind != "data":
                await session.close_stream(stream)
                return
            error = errors_by_request.pop(request_id, None)
            try:
                await forward_connection(session, pod, stream, error, stream.headers.get("port", ""))
            finally:
                await session.close_stream(stream)
                if error is not None:
                    await session.close_stream(error)

        async def send(data: bytes) -> None:
            await ws.send_bytes(data)

        session = spdy.Session(send=send, on_stream=on_stream)
        try:
            async for msg in ws:
                if msg.type == WSMsgType.BINARY:
                    await session.feed(msg.data)
                if session.gone:
                    break
        except (spdy.ProtocolError, ConnectionError) as e:
            self._log.warning("port_forward_stream_error", error=str(e))
        finally:
            session.stop()
            with contextlib.suppress(ConnectionError):
                await ws.close()
        return ws


def declared_ports(pod: Mapping[str, Any]) -> list[int]:
    spec = pod.get("spec") or {}
    return sorted({int(p["containerPort"]) for field in ("containers", "initContainers")
                   for c in spec.get(field) or [] if isinstance(c, Mapping)
                   for p in c.get("ports") or [] if isinstance(p, Mapping) and p.get("containerPort")})


_HTTP_REQUEST = re.compile(rb"^[A-Z]{3,10} \S+ HTTP/1\.[01]\r?\n")


async def forward_connection(session: spdy.Session, pod: Mapping[str, Any], data: spdy.Stream,
                             error: spdy.Stream | None, port: str) -> None:
    """What a simulated pod answers on a forwarded port: on a port one of its containers declares,
    an HTTP request gets a short `200 OK` naming the pod, container and port (then the connection
    closes); anything else is echoed back until the client closes. Another port: an error on the
    error stream, as when nothing listens."""
    meta = pod.get("metadata") or {}
    name = f"{meta.get('namespace')}/{meta.get('name')}"
    try:
        number = int(port)
    except ValueError:
        number = -1
    ports = declared_ports(pod)
    if number not in ports:
        if error is not None:
            listening = ", ".join(map(str, ports)) or "none"
            await session.send_data(error, (f"error forwarding port {port} to pod {name}: nothing listens on port "
                                            f"{port} in the simulated pod (its containers declare: {listening})").encode())
        return
    container = next(str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []
                     if any(p.get("containerPort") == number for p in c.get("ports") or []))
    received = b""
    while True:
        chunk = await data.read()
        if chunk is None:
            return
        received += chunk
        if _HTTP_REQUEST.match(received) or (len(received) < 16 and re.match(rb"^[A-Z]+( |$)", received)):
            if b"\r\n\r\n" not in received and b"\n\n" not in received:
                continue  # the rest of the request's head
            body = f"cplane: simulated pod {name}, container {container}, port {number}\n".encode()
            head = (f"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
            await session.send_data(data, head + body)
            return
        await session.send_data(data, received)
        received = b""


def _not_running(pod: Mapping[str, Any], container: str) -> web.Response | None:
    state = (surface.container_status(pod, container) or {}).get("state") or {}
    if "running" not in state:  # the runtime has no running container of that name (the kubelet's words)
        return _status(400, f'container not found ("{container}")', "BadRequest")
    return None


def log_options(query: Mapping[str, str]) -> surface.LogOptions:
    """PodLogOptions from the kubelet's query (already checked by the API server)."""
    def flag(name: str) -> bool:
        return query.get(name, "").lower() in ("1", "true")

    def number(name: str) -> int | None:
        raw = query.get(name)
        if raw in (None, ""):
            return None
        try:
            return int(raw)
        except ValueError:
            raise surface.SurfaceError(f"{name}: invalid value {raw!r}") from None

    since_time = None
    if query.get("sinceTime"):
        try:
            since_time = clocks.parse_time(query["sinceTime"])
        except ValueError:
            raise surface.SurfaceError(f"sinceTime: invalid value {query['sinceTime']!r}") from None
    return surface.LogOptions(follow=flag("follow"), previous=flag("previous"), timestamps=flag("timestamps"),
                              tail_lines=number("tailLines"), since_seconds=number("sinceSeconds"),
                              since_time=since_time, limit_bytes=number("limitBytes"))
