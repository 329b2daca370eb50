"""A pod's container surface (issue #23): `pods/log`, `pods/exec`, `pods/attach` and
`pods/portforward`, checked here as kube-apiserver's pod REST does (PodLogOptions, the container,
the node) and proxied to the pod's node's kubelet API (`controllers/fleet/kubelet_api.py`).

Finding the kubelet: a simulated node names its kubelet API in the annotation
`sim.cplane.dev/kubelet-endpoint` (`HOST:PORT`, with `status.daemonEndpoints.kubeletEndpoint.Port`
the same port); only a loopback host is dialled (the simulated kubelets share the API server's
machine; an annotation naming another host is a node the server cannot reach: 400, as upstream
answers when it cannot get a node's connection info). The InternalIPs of simulated nodes are made up.

Credentials: a secure server calls the kubelet with a bearer token for the user
`kube-apiserver-kubelet-client`, derived from its credentials so that every replica knows it
(`Credentials.kubelet_client_token`) (bound to `system:kubelet-api-admin`, as kubeadm
binds the API server's kubelet client certificate); the kubelet reviews it (TokenReview) and asks
whether that user may `nodes/proxy` (SubjectAccessReview). An insecure server sends none.

Streams: logs are copied as they come (`follow` until the container's run ends or the client
leaves); exec, attach and port-forward are WebSockets (`v5.channel.k8s.io`, `v4.channel.k8s.io`,
port-forward's `SPDY/3.1+portforward.k8s.io` tunnel) relayed frame by frame both ways.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import weakref
from collections.abc import Mapping
from typing import Any

import aiohttp
import structlog
from aiohttp import web

from api import reads
from api import state as st
from api.auth import AUTH, AuthConfig
from cp import errors, rbac
from cp import resources as res

logger = structlog.get_logger("cplane.api.kubelet_proxy")

SUBRESOURCES = ("log", "exec", "attach", "portforward")
ENDPOINT_ANNOTATION = "sim.cplane.dev/kubelet-endpoint"  # written by controllers.fleet.kubelet_api (same name)
KUBELET_CLIENT_USER = rbac.KUBELET_API_CLIENT
CONNECT_TIMEOUT = 10.0
_tokens: weakref.WeakKeyDictionary[AuthConfig, str] = weakref.WeakKeyDictionary()


def _kubelet_headers(request: web.Request) -> dict[str, str]:
    config = request.app.get(AUTH)
    if config is None or config.authenticator is None:
        return {}
    if config.credentials is not None:  # known to every replica (`AuthConfig.from_credentials`)
        return {"Authorization": f"Bearer {config.credentials.kubelet_client_token()}"}
    token = _tokens.get(config)
    if token is None:  # a server made without stored credentials: a token of its own
        from cp import certs

        token = certs.random_token()
        config.authenticator.add_token(token, rbac.UserInfo(name=KUBELET_CLIENT_USER))
        _tokens[config] = token
    return {"Authorization": f"Bearer {token}"}


async def _copy_frames(source: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
                       sink: web.WebSocketResponse | aiohttp.ClientWebSocketResponse) -> None:
    """Copy one side's data frames to the other, as they come, until the source closes."""
    async for msg in source:
        if msg.type == aiohttp.WSMsgType.BINARY:
            await sink.send_bytes(msg.data)
        elif msg.type == aiohttp.WSMsgType.TEXT:
            await sink.send_str(msg.data)


def _status_error(code: int, message: str, reason: str) -> errors.StatusError:
    err = errors.StatusError(message)
    err.code, err.reason = code, reason
    return err


async def _pod(request: web.Request, target: reads.Target) -> dict[str, Any]:
    kind = res.by_group_resource("", "pods")
    assert kind is not None
    return await request.app[st.STORE].get_object(kind, target.namespace, target.name)


def _names(containers: Any) -> str:
    return " ".join(str(c.get("name")) for c in containers or [] if isinstance(c, Mapping))


def _has_container(pod: Mapping[str, Any], name: str) -> bool:
    spec = pod.get("spec") or {}
    return any(isinstance(c, Mapping) and c.get("name") == name
               for field in ("containers", "initContainers", "ephemeralContainers") for c in spec.get(field) or [])


def _container(pod: Mapping[str, Any], given: str, *, logs: bool) -> str:
    """The container a request is for, as the pod REST picks it (400 when none or a wrong one)."""
    spec = pod.get("spec") or {}
    name = str((pod.get("metadata") or {}).get("name") or "")
    if given:
        if not _has_container(pod, given):
            raise errors.BadRequest(f"container {given} is not valid for pod {name}")
        return given
    containers = [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    if len(containers) == 1:
        return str(containers[0].get("name"))
    if not containers:
        raise errors.BadRequest(f"a container name must be specified for pod {name}")
    if logs:
        message = f"a container name must be specified for pod {name}, choose one of: [{_names(containers)}]"
        if spec.get("initContainers"):
            message += f" or one of the init containers: [{_names(spec['initContainers'])}]"
        if spec.get("ephemeralContainers"):
            message += f" or one of the ephemeral containers: [{_names(spec['ephemeralContainers'])}]"
    else:
        every = [*containers, *(spec.get("initContainers") or []), *(spec.get("ephemeralContainers") or [])]
        message = (f"a container name must be specified for pod {name}, choose one of: "
                   f"[{_names(every)}]")
    raise errors.BadRequest(message)


def _running(pod: Mapping[str, Any], container: str) -> bool:
    status = pod.get("status") or {}
    return any(isinstance(s, Mapping) and s.get("name") == container and "running" in (s.get("state") or {})
               for field in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
               for s in status.get(field) or [])


async def _kubelet_base(request: web.Request, pod: Mapping[str, Any]) -> str:
    name = str((pod.get("metadata") or {}).get("name") or "")
    node_name = str((pod.get("spec") or {}).get("nodeName") or "")
    if not node_name:
        raise errors.BadRequest(f"pod {name} does not have a host assigned")
    kind = res.by_group_resource("", "nodes")
    assert kind is not None
    try:
        node = await request.app[st.STORE].get_object(kind, "", node_name)
    except errors.NotFound:
        raise errors.NotFound(f'nodes "{node_name}" not found',
                              details={"name": node_name, "kind": "nodes"}) from None
    endpoint = str(((node.get("metadata") or {}).get("annotations") or {}).get(ENDPOINT_ANNOTATION) or "")
    host, _, port = endpoint.rpartition(":")
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback and 0 < int(port) < 65536
    except ValueError:
        loopback = False
    if not loopback:
        raise errors.BadRequest(f'node "{node_name}" has no simulated kubelet API this server can reach '
                                f"(annotation {ENDPOINT_ANNOTATION}: a loopback HOST:PORT)")
    return f"http://{endpoint}"


def _int_option(query: Mapping[str, str], key: str) -> int | None:
    raw = query.get(key)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise errors.BadRequest(f'strconv.ParseInt: parsing "{raw}": invalid syntax') from None


def _bool_option(query: Mapping[str, str], key: str) -> bool:
    raw = query.get(key)
    if raw is None or raw == "":
        return False
    if raw.lower() in ("1", "t", "true"):
        return True
    if raw.lower() in ("0", "f", "false"):
        return False
    raise errors.BadRequest(f'strconv.ParseBool: parsing "{raw}": invalid syntax')


def _log_query(query: Mapping[str, str], name: str) -> dict[str, str]:
    """PodLogOptions, validated as upstream (422 `PodLogOptions "x" is invalid`), as the kubelet's query."""
    out: dict[str, str] = {}
    for flag in ("follow", "previous", "timestamps"):
        if _bool_option(query, flag):
            out[flag] = "true"
    numbers = {k: _int_option(query, k) for k in ("tailLines", "limitBytes", "sinceSeconds")}
    since_time = query.get("sinceTime") or None
    if since_time is not None:
        from cp import clock as clocks

        try:
            clocks.parse_time(since_time)
        except ValueError:
            raise errors.BadRequest(f'parsing time "{since_time}" as "2006-01-02T15:04:05Z07:00": '
                                    "cannot parse as RFC 3339") from None
    causes: list[errors.Cause] = []
    if numbers["tailLines"] is not None and numbers["tailLines"] < 0:
        causes.append(errors.Cause("Invalid", "tailLines", "must be greater than or equal to 0", numbers["tailLines"]))
    if numbers["limitBytes"] is not None and numbers["limitBytes"] < 1:
        causes.append(errors.Cause("Invalid", "limitBytes", "must be greater than 0", numbers["limitBytes"]))
    if numbers["sinceSeconds"] is not None and since_time is not None:
        causes.append(errors.Cause("Forbidden", "", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
    elif numbers["sinceSeconds"] is not None and numbers["sinceSeconds"] < 1:
        causes.append(errors.Cause("Invalid", "sinceSeconds", "must be greater than 0", numbers["sinceSeconds"]))
    if causes:
        raise errors.Invalid(kind="PodLogOptions", group="", name=name, causes=causes)
    out.update({k: str(v) for k, v in numbers.items() if v is not None})
    if since_time is not None:
        out["sinceTime"] = since_time
    return out


async def _kubelet_error(resp: aiohttp.ClientResponse) -> errors.StatusError:
    body = await resp.read()
    try:
        import json

        decoded = json.loads(body)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        return _status_error(resp.status, str(decoded.get("message") or ""), str(decoded.get("reason") or ""))
    return _status_error(resp.status, body.decode("utf-8", "replace").strip()[:500] or f"HTTP {resp.status}",
                         "InternalError")


async def serve(request: web.Request, target: reads.Target) -> web.StreamResponse:
    """`pods/{name}/{log,exec,attach,portforward}`."""
    sub = target.subresource
    if sub == "log" and request.method != "GET":
        raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
    if sub != "log" and request.method not in ("GET", "POST"):
        raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
    pod = await _pod(request, target)
    query = request.query
    if sub == "log":
        container = _container(pod, query.get("container", ""), logs=True)
        kubelet_query = _log_query(query, target.name)
        if not (pod.get("spec") or {}).get("nodeName"):
            return web.Response(status=200, content_type="text/plain")  # upstream: an empty stream
        base = await _kubelet_base(request, pod)
        return await _stream_logs(request, f"{base}/containerLogs/{target.namespace}/{target.name}/{container}",
                                  kubelet_query)
    if sub == "portforward":
        ports = query.getall("ports", [])
        for p in ports:
            try:
                ok = 0 < int(p) < 65536
            except ValueError:
                ok = False
            if not ok:
                raise errors.BadRequest(f"invalid port {p!r}")
        base = await _kubelet_base(request, pod)
        return await _relay(request, f"{base}/portForward/{target.namespace}/{target.name}",
                            [("port", p) for p in ports])
    container = _container(pod, query.get("container", ""), logs=False)
    if sub == "exec" and not query.getall("command", []):
        raise errors.BadRequest("you must specify at least 1 command")
    if not _running(pod, container):  # said before the upgrade, where the kubelet's answer would be lost
        raise errors.BadRequest(f'container not found ("{container}")')
    base = await _kubelet_base(request, pod)
    params = [(k, v) for k, v in query.items() if k in ("command", "stdin", "stdout", "stderr", "tty",
                                                        "input", "output", "error")]
    return await _relay(request, f"{base}/{sub}/{target.namespace}/{target.name}/{container}", params)


async def _stream_logs(request: web.Request, url: str, query: dict[str, str]) -> web.StreamResponse:
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        try:
            upstream = await session.get(url, params=query, headers=_kubelet_headers(request))
        except aiohttp.ClientError as e:
            raise errors.ServiceUnavailable(f"the pod's kubelet did not answer: {e}") from None
        async with upstream:
            if upstream.status >= 400:
                raise await _kubelet_error(upstream)
            resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
            await resp.prepare(request)
            with contextlib.suppress(ConnectionError, aiohttp.ClientError):
                async for chunk in upstream.content.iter_any():
                    await resp.write(chunk)
            with contextlib.suppress(ConnectionError):
                await resp.write_eof()
            return resp


async def _relay(request: web.Request, url: str, params: list[tuple[str, str]]) -> web.StreamResponse:
    """A WebSocket to the kubelet with the client's subprotocols, then the client's upgrade with the
    one the kubelet chose, and every frame relayed both ways until either side closes."""
    offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
    probe = web.WebSocketResponse()
    if not probe.can_prepare(request).ok:
        raise errors.BadRequest("Upgrade request required")
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        try:
            upstream = await session.ws_connect(url, params=params, protocols=offered,
                                                headers=_kubelet_headers(request), max_msg_size=0, autoping=True)
        except aiohttp.WSServerHandshakeError as e:
            raise _status_error(e.status, f"unable to upgrade connection: {e.message}",
                                "BadRequest" if e.status == 400 else "InternalError") from None
        except aiohttp.ClientError as e:
            raise errors.ServiceUnavailable(f"the pod's kubelet did not answer: {e}") from None
        async with upstream:
            chosen = upstream.protocol
            ws = web.WebSocketResponse(protocols=(chosen,) if chosen else (), max_msg_size=0)
            await ws.prepare(request)

            tasks = [asyncio.create_task(_copy_frames(ws, upstream)), asyncio.create_task(_copy_frames(upstream, ws))]
            try:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                with contextlib.suppress(ConnectionError):
                    await ws.close()
                await upstream.close()
            logger.debug("kubelet_stream_closed", url=url.split("?")[0])
            return ws
