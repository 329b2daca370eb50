"""Replay: serving the Kubernetes API over a recorded event log, at any revision (docs/replay.md).

The recording sources are `storage/recording.py`, the replay log (an EventLog whose visible revision is
the replay cursor) `storage/replay.py`; the commands `cp/cli/replay.py`. Here:
- `Replayer` moves the cursor: `step(n)`, `until(revision | object | time)`, `play(speed)` at the
  recorded pace (gaps between event times divided by the speed; `inf` = as fast as possible) and
  `pause()`. Until it forks, writes are refused with 405. `fork()` turns the server into a live,
  writable cluster branching from the recording at the cursor. It happens on reaching `fork_at`, on
  `POST {CONTROL}/fork` (with `fork_on_write` or `fork_at`), or with `fork_on_write` on the first write.
- Control endpoints under the sandbox group: `GET {CONTROL}` (status), `POST {CONTROL}/step?count=N`,
  `POST {CONTROL}/until?revision=R|object=pods/default/web|time=T`, `POST {CONTROL}/play?speed=X`,
  `POST {CONTROL}/pause`, `POST {CONTROL}/fork`, and `GET {CONTROL}/events?since=R` (the visible log
  as NDJSON, e.g. to save a fork's branch).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import structlog

from cp import clock as clocks
from cp import errors, options
from cp import resources as res
from storage import log, ndjson
from storage.recording import NO_END, SCAN_PAGE, Key, Recording, SourceError, SqlSource, resolve_ref
from storage.replay import WRITES_REFUSED, ReplayLog, StreamReplayLog

if TYPE_CHECKING:  # the server stack is imported only to serve
    from aiohttp import web

    from api.app import Handler

_logger = structlog.get_logger("cplane.replay")
_encode = msgspec.json.Encoder().encode

CONTROL = f"/apis/{res.SIM_GROUP}/{res.SIM_VERSION}/replay"
PLAY_CHUNK = 2000  # events applied per step of the player at full speed


def _summary(ev: log.Event) -> dict[str, Any]:
    return {"revision": ev.revision, "type": ev.type, "object": res.ref(ev.group, ev.resource, ev.namespace, ev.name),
            "time": clocks.rfc3339_milli(ev.time), "actor": ev.actor.describe()}


ForkHook = Callable[[int], None]
AnyReplayLog = ReplayLog | StreamReplayLog


class Applied:
    """What a move applied: how many events, and the last ones (at most `KEEP`)."""

    KEEP = 100

    def __init__(self) -> None:
        self.count = 0
        self.since = 0  # the first revision of the last ones (at most KEEP events back)
        self.upto = 0
        self.last: list[log.Event] = []


class Replayer:
    """Moves a ReplayLog's cursor: steps, untils, paced play; forks (see module doc)."""

    def __init__(self, replay_log: AnyReplayLog, *, speed: float | None = 1.0, pacer: clocks.Clock | None = None,
                 fork_on_write: bool = False, fork_at: int | None = None, max_gap: float | None = None) -> None:
        if speed is not None and not speed > 0:
            raise ValueError("speed must be > 0")
        if fork_at is not None and not replay_log.revision <= fork_at <= replay_log.end:
            raise SourceError(f"--fork-at {fork_at} is out of range: the replay runs from "
                              f"{replay_log.revision} to {replay_log.end}")
        self.log = replay_log
        self.speed = speed if speed is not None else 1.0
        self._autoplay = speed is not None
        self.pacer = pacer or clocks.RealClock()
        self.fork_on_write = fork_on_write  # the first write forks (--fork)
        self.fork_allowed = fork_on_write or fork_at is not None  # POST .../fork may fork
        self.fork_at = fork_at
        self.max_gap = max_gap
        self.on_fork: list[ForkHook] = []
        self._task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- lifecycle -----------------------------------------------------------------------------------

    async def start(self) -> None:
        if self.fork_at is not None and self.log.revision >= self.fork_at:
            await self._fork()
        elif self._autoplay:
            self.play(self.speed)

    async def close(self) -> None:
        self.pause()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()

    def spawn(self, coro: Awaitable[Any], *, name: str) -> asyncio.Task[Any]:
        """A task that lives as long as the replayer (closed with it)."""
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- state -----------------------------------------------------------------------------------------

    @property
    def playing(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def mode(self) -> str:
        if self.log.forked:
            return "forked"
        if self.playing:
            return "playing"
        if self.log.revision >= self.log.end:
            return "finished"
        return "paused"

    async def status(self, *, applied: Applied | None = None) -> dict[str, Any]:
        rlog = self.log
        nxt = await rlog.peek_event()
        rec = rlog.recording
        out: dict[str, Any] = {
            "kind": "ReplayStatus", "apiVersion": f"{res.SIM_GROUP}/{res.SIM_VERSION}",
            "source": rec.description, "mode": self.mode, "speed": self.speed if math.isfinite(self.speed) else "max",
            "revision": rlog.revision, "time": clocks.rfc3339_milli(rlog.clock.now()) if rlog.clock else None,
            "first": rec.first, "last": rec.last, "from": rlog.start_revision,
            "until": None if rlog.forked else rlog.end,
            "remaining": await rlog.remaining_count(),
            "forkOnWrite": self.fork_on_write, "forkAt": self.fork_at, "forkedAt": rlog.forked_at,
            "next": _summary(nxt) if nxt is not None else None,
        }
        if applied is not None and applied.count:
            out["applied"] = applied.count
            out["events"] = [_summary(ev) for ev in applied.last]
        return out

    # -- moving --------------------------------------------------------------------------------------

    def _refuse_if_forked(self) -> None:
        if self.log.forked:
            raise errors.Conflict(f"the replay forked at revision {self.log.forked_at}: it is a live cluster now "
                                  "and no longer follows the recording")

    async def _advance(self, *, target: int = NO_END, count: int = NO_END,
                       until_time: float | None = None) -> Applied:
        """Apply the next recorded events: up to `target`, at most `count`, those at or before
        `until_time`; stopping at `fork_at`, and forking there. Reads ahead a page at a time."""
        if self.fork_at is not None:
            target = min(target, self.fork_at)
        applied = Applied()
        while applied.count < count and self.log.revision < target:
            page = await self.log.ahead(min(count - applied.count, SCAN_PAGE))
            n = len(page)
            if page and (page[-1][0] > target or (until_time is not None and page[-1][1] > until_time)):
                n = 0
                for mark in page:
                    if mark[0] > target or (until_time is not None and mark[1] > until_time):
                        break
                    n += 1
            if not n:
                break
            self.log.advance_over(page[:n] if n < len(page) else page)
            applied.count += n
            applied.upto = page[n - 1][0]
            applied.since = page[max(0, n - Applied.KEEP)][0] if n >= Applied.KEEP else applied.since or page[0][0]
            if n < len(page):
                break
        if applied.count:
            applied.last = (await self.log.events_in(applied.since, applied.upto, Applied.KEEP * 2))[-Applied.KEEP:]
        if self.fork_at is not None and self.log.revision >= self.fork_at:
            await self._fork()
        return applied

    async def step(self, count: int = 1) -> Applied:
        self._refuse_if_forked()
        if count < 1:
            raise errors.BadRequest("count must be >= 1")
        self.pause()
        return await self._advance(count=count)

    async def until_revision(self, revision: int) -> Applied:
        self._refuse_if_forked()
        if revision < self.log.revision:
            raise errors.BadRequest(f"revision {revision} is behind the replay (at {self.log.revision}); "
                                    "a replay only moves forward: restart it with --from")
        if revision > self.log.end:
            raise errors.BadRequest(f"revision {revision} is beyond the end of the replay ({self.log.end})")
        self.pause()
        return await self._advance(target=revision)

    async def until_object(self, key: Key) -> Applied:
        self._refuse_if_forked()
        nxt = await self.log.next_revision_of(key)
        if nxt is None:
            raise errors.NotFound(f"no later event of {res.ref(*key)} in the recording "
                                  f"(after revision {self.log.revision})")
        self.pause()
        return await self._advance(target=nxt)

    async def until_time(self, when: float) -> Applied:
        self._refuse_if_forked()
        self.pause()
        return await self._advance(until_time=when)

    def play(self, speed: float | None = None) -> None:
        self._refuse_if_forked()
        if speed is not None:
            if not speed > 0:
                raise errors.BadRequest("speed must be > 0 (inf: as fast as possible)")
            self.speed = speed
        if not self.playing:
            self._task = self.spawn(self._play(), name="replay:player")

    def pause(self) -> None:
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def _play(self) -> None:
        while self._task is asyncio.current_task() and not self.log.forked:
            ahead = await self.log.ahead(1)
            if not ahead or self._task is not asyncio.current_task():
                break
            nxt_time = ahead[0][1]
            if not math.isfinite(self.speed):
                await self._advance(count=PLAY_CHUNK)
                await asyncio.sleep(0)
                continue
            gap = max(0.0, nxt_time - self.log.time_at_cursor())
            if self.max_gap is not None:
                gap = min(gap, self.max_gap)
            wait = gap / self.speed
            if wait > 0:
                await self.pacer.sleep(wait)
                if self._task is not asyncio.current_task():
                    break
            await self._advance(count=PLAY_CHUNK, until_time=nxt_time)
            if wait <= 0:
                await asyncio.sleep(0)
        if self._task is asyncio.current_task():
            self._task = None

    async def fork(self) -> int:
        """Become a live cluster at the cursor (idempotent). Runs the `on_fork` hooks once."""
        if self.log.forked:
            return self.log.forked_at  # type: ignore[return-value]
        if not self.fork_allowed:
            raise errors.MethodNotAllowed(WRITES_REFUSED)
        return await self._fork()

    async def _fork(self) -> int:
        self.pause()
        revision = await self.log.branch()
        _logger.info("replay_forked", revision=revision)
        clock = self.log.clock
        if clock is not None and not self.log.has_clock_object():
            self.spawn(_tick(clock), name="replay:clock")  # a wall-time recording: time moves on
        for hook in self.on_fork:
            hook(revision)
        return revision


async def _tick(clock: clocks.VirtualClock, interval: float = 0.05) -> None:
    """After a fork of a wall-time recording: the clock runs on from the fork's time at wall speed."""
    loop = asyncio.get_running_loop()
    base, started = clock.now(), loop.time()
    while True:
        await asyncio.sleep(interval)
        clock.set(base + loop.time() - started)


# =============================================================================================
# HTTP: control endpoints and the write guard


def _json_response(body: dict[str, Any]) -> web.Response:
    from api import codec as api_codec

    return api_codec.json_response(_encode(body))


def _int_param(request: web.Request, name: str, default: int | None = None) -> int | None:
    """An int64 parameter of the control endpoints, parsed as the API's (`cp.options`); empty: `default`."""
    value = request.query.get(name)
    if value is None or value == "":
        return default
    return options.int64_param(value)


def control_routes(replayer: Replayer) -> list[web.RouteDef]:
    from aiohttp import web

    async def status(request: web.Request) -> web.StreamResponse:
        return _json_response(await replayer.status())

    async def step(request: web.Request) -> web.StreamResponse:
        count = _int_param(request, "count", 1)
        assert count is not None
        return _json_response(await replayer.status(applied=await replayer.step(count)))

    async def until(request: web.Request) -> web.StreamResponse:
        q = request.query
        given = [k for k in ("revision", "object", "time") if q.get(k)]
        if len(given) != 1:
            raise errors.BadRequest("until needs exactly one of revision=R, object=RESOURCE/NAMESPACE/NAME "
                                    "or time=RFC3339")
        if given[0] == "revision":
            revision = _int_param(request, "revision")
            assert revision is not None
            applied = await replayer.until_revision(revision)
        elif given[0] == "object":
            # Custom resources resolve through the recording's definitions, wherever the cursor is.
            try:
                kind, namespace, name = await resolve_ref(replayer.log.recording, q["object"])
            except SourceError as exc:
                raise errors.BadRequest(str(exc)) from None
            applied = await replayer.until_object((kind.group, kind.plural, namespace, name))
        else:
            try:
                when = clocks.parse_time(q["time"])
            except ValueError:
                raise errors.BadRequest(f'time: invalid RFC 3339 time "{q["time"]}"') from None
            applied = await replayer.until_time(when)
        return _json_response(await replayer.status(applied=applied))

    async def play(request: web.Request) -> web.StreamResponse:
        text = request.query.get("speed")
        speed = None
        if text:
            try:
                speed = parse_speed(text)
            except ValueError as exc:
                raise errors.BadRequest(str(exc)) from None
        replayer.play(speed)
        return _json_response(await replayer.status())

    async def pause(request: web.Request) -> web.StreamResponse:
        replayer.pause()
        return _json_response(await replayer.status())

    async def fork(request: web.Request) -> web.StreamResponse:
        await replayer.fork()
        return _json_response(await replayer.status())

    async def events(request: web.Request) -> web.StreamResponse:
        since = _int_param(request, "since", 0) or 0
        resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await resp.prepare(request)
        async for page in replayer.log.visible_pages(since):
            await resp.write(b"".join(ndjson.event_ndjson(ev) for ev in page))
        await resp.write_eof()
        return resp

    return [web.get(CONTROL, status), web.get(CONTROL + "/", status),
            web.post(CONTROL + "/step", step), web.post(CONTROL + "/until", until),
            web.post(CONTROL + "/play", play), web.post(CONTROL + "/pause", pause),
            web.post(CONTROL + "/fork", fork), web.get(CONTROL + "/events", events)]


_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Creates that write nothing to the log (`api.auth.reviews`): questions about who may do what, answered
# on a replay as on any server (`kubectl auth can-i`, the web UI's SelfSubjectAccessReviews), without
# a refusal or a fork.
_REVIEWS = frozenset({"selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews",
                      "tokenreviews", "subjectaccessreviews", "localsubjectaccessreviews"})
_REVIEW_GROUPS = ("/apis/authorization.k8s.io/", "/apis/authentication.k8s.io/")


def _review(request: web.Request) -> bool:
    return request.method == "POST" and request.path.startswith(_REVIEW_GROUPS) \
        and request.path.rstrip("/").rsplit("/", 1)[-1] in _REVIEWS


def write_guard(replayer: Replayer) -> Any:
    """Middleware: refuse writes (405) until the replay forks; with `fork_on_write`, a write forks it."""
    from aiohttp import web

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        # The UI's login and logout write nothing, nor do reviews.
        if request.method in _SAFE_METHODS or replayer.log.forked or request.path.startswith(CONTROL) \
                or request.path.startswith("/ui/") or _review(request):
            return await handler(request)
        if not replayer.fork_on_write:
            if replayer.fork_at is not None:
                raise errors.MethodNotAllowed(f"this server replays a recording; writes are refused until it forks "
                                              f"at revision {replayer.fork_at} (--fork-at); it is at "
                                              f"{replayer.log.revision}")
            raise errors.MethodNotAllowed(WRITES_REFUSED)
        await replayer.fork()
        return await handler(request)

    return guard


def parse_speed(text: str) -> float:
    if text.strip().lower() in ("max", "inf", "infinity"):
        return math.inf
    try:
        speed = float(text)
    except ValueError:
        raise ValueError(f'invalid speed "{text}": a positive number, or "max"') from None
    if not speed > 0:
        raise ValueError(f'invalid speed "{text}": a positive number, or "max"')
    return speed


# =============================================================================================
# Serving


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReplayServer:
    url: str
    port: int
    kubeconfig: Path
    replayer: Replayer
    log: AnyReplayLog
    clock: clocks.VirtualClock
    app: web.Application


@contextlib.asynccontextmanager
async def serving(recording: Recording | SqlSource, *, data_dir: Path, host: str = "127.0.0.1", port: int = 0,
                  start: int | None = None, until: int | None = None, speed: float | None = 1.0,
                  pacer: clocks.Clock | None = None, fork: bool = False, fork_at: int | None = None,
                  max_gap: float | None = None, page: int = SCAN_PAGE, secure: bool = False,
                  token_auth_file: str | None = None) -> AsyncIterator[ReplayServer]:
    """Serve the Kubernetes API over `recording` from revision `start` (default: its beginning).
    A SQL source is streamed from the store (`StreamReplayLog`, reading `page` events at a time),
    except from its compacted revision, where it is loaded. `speed` None: paused (step mode). Raises
    SourceError for out-of-range revisions. `secure`, `token_auth_file`: as `api.server.running`'s
    (TLS, authentication, and RBAC from the recording's own RBAC objects at the cursor)."""
    from api import server as servers

    clock = clocks.VirtualClock(start=0.0)
    rlog: AnyReplayLog
    if isinstance(recording, SqlSource) and StreamReplayLog.usable(recording, start=start):
        rlog = await StreamReplayLog.open(recording, start=start, until=until, clock=clock, page=page)
    else:
        loaded = await Recording.from_source(recording) if isinstance(recording, SqlSource) else recording
        rlog = ReplayLog(loaded, start=start, until=until, clock=clock)
    replayer = Replayer(rlog, speed=speed, pacer=pacer, fork_on_write=fork, fork_at=fork_at, max_gap=max_gap)
    options = {"bootstrap_objects": False, "middlewares": [write_guard(replayer)],
               "routes": control_routes(replayer)}
    try:
        async with servers.running(data_dir=data_dir, host=host, port=port, clock=clock, event_log=rlog,
                                   app_options=options, secure=secure, token_auth_file=token_auth_file) as srv:
            await replayer.start()
            try:
                yield ReplayServer(url=srv.url, port=srv.port, kubeconfig=srv.kubeconfig, replayer=replayer,
                                   log=rlog, clock=clock, app=srv.app)
            finally:
                await replayer.close()
    finally:
        await rlog.close()
