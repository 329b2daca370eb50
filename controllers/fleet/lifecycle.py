"""The simulated kubelet's container lifecycle: a deterministic model of what happens to a pod's
containers on the clock, and the status a kubelet would report for it (`docs/fleet.md`, "The
container lifecycle model"). Pure: the controller decides when to look, this module what it sees.

The model keeps no memory of its own. Everything it needs is in the pod: the spec (containers,
probes, restartPolicy, grace period), the `sim.cplane.dev/...` annotations (how long a container
runs, how it exits, which probe fails), and the status it wrote last (start and finish times,
restart counts, the back-off a container waits in). `advance` replays every transition due
between that status and `now` in time order — a clock moved by an hour replays an hour of
restarts — and says when the next one is due. Times have the API's one-second resolution:
durations are rounded up to whole seconds.

Followed from the kubelet (kuberuntime's container start order, `getPhase`, the status manager's
conditions, the prober workers, CrashLoopBackOff):

- init containers run one at a time in spec order, each after the previous one exited 0; a
  sidecar (an init container with `restartPolicy: Always`) lets the next one start once it is
  started (its startup probe, if any, has passed) and keeps running; app containers start together
  once every init container is done. An init container that fails is restarted (the pod's
  restartPolicy is Never: the pod fails).
- an exited container is restarted per the pod's restartPolicy (Always; OnFailure when the exit
  code is not 0; never with Never), sidecars always. A restart waits 10 s, doubling up to 300 s,
  in `waiting: CrashLoopBackOff` (lastState the run that ended); a run that lasted 10 minutes
  resets the back-off to 10 s. Each restart adds one to `restartCount`.
- probes: a startup probe passes `initialDelaySeconds` after the start (`started` is false until
  then), a readiness probe then makes the container ready after its own `initialDelaySeconds`
  (and `successThreshold - 1` periods); without probes a container is started and ready as soon
  as it runs. A probe that fails (annotation) fails for good: readiness keeps the container
  unready; startup and liveness failures kill it after `failureThreshold` probes
  (`initialDelaySeconds + (failureThreshold - 1) * periodSeconds`), exit code 137, and it is
  restarted per the restartPolicy.
- deletion: no container starts any more; each running container stops `stop-seconds` after the
  deletion (exit 0, Completed), or is killed when the grace period ends first (exit 137, Error);
  sidecars are stopped after the app containers, in the reverse of their start order.
  Once none runs, the pod is terminal (Succeeded if every app container's last exit was 0, else
  Failed) and the kubelet removes it.
- when a pod with restartPolicy Never/OnFailure has its app containers done for good, its
  sidecars are stopped the same way (without a deadline), and then the pod is Succeeded or Failed.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from controllers.fleet import objects as objs
from controllers.fleet import resizing
from controllers.fleet.model import Kubelet
from cp import clock as clocks

# Pod annotations; each also has a per-container form `<annotation>.<container name>`, which wins.
RUN_SECONDS = objs.RUN_SECONDS  # how long a container runs before it exits
EXIT_CODE = objs.EXIT_CODE  # its exit code; "1,1,0": per run (the last one repeats)
OOM_KILLED = "sim.cplane.dev/oom-killed"  # "true": its runs end OOMKilled (exit 137)
STOP_SECONDS = "sim.cplane.dev/stop-seconds"  # how long it takes to stop when the pod is deleted
STARTUP_PROBE_FAILS = "sim.cplane.dev/startup-probe-fails"  # "true": its startup probe never passes
READINESS_PROBE_FAILS = "sim.cplane.dev/readiness-probe-fails"  # "true": never ready
LIVENESS_PROBE_FAILS = "sim.cplane.dev/liveness-probe-fails"  # "true": its liveness probe fails
# Pod-wide only: "3=42,5=1;0": the app containers' exit codes in an Indexed Job's pods by completion
# index, per run separated by ";" (a template's annotations are the same in every pod; the index
# picks the behaviour). Between the per-container exit-code and the pod-wide one.
INDEX_EXIT_CODES = "sim.cplane.dev/index-exit-codes"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"  # annotation (and label) of Indexed Jobs' pods

BACKOFF_INITIAL = 10  # kubelet's CrashLoopBackOff: 10 s, doubling...
BACKOFF_MAX = 300  # ...up to 5 minutes
BACKOFF_RESET = 600  # a run of 10 minutes resets it
KILLED = 137  # exit code of a container killed (SIGKILL) or OOM-killed
MAX_STEPS = 20_000  # transitions replayed in one call (about a month of a crash loop); the rest next time
_BACKOFF_MESSAGE = re.compile(r"^back-off (?:(\d+)h)?(?:(\d+)m)?(\d+)s ")

Kind = Literal["init", "sidecar", "app"]


# ---------------------------------------------------------------------- what a container does


@dataclasses.dataclass(frozen=True, slots=True)
class Behaviour:
    """How one container behaves, from the annotations and the fleet's defaults."""

    run_seconds: int | None = None  # None: runs until stopped
    exit_codes: tuple[int, ...] = (0,)  # per run, the last one repeating
    oom_killed: bool = False
    stop_seconds: int = 1
    startup_fails: bool = False
    readiness_fails: bool = False
    liveness_fails: bool = False

    def exit_code(self, run: int) -> int:
        return self.exit_codes[min(run, len(self.exit_codes) - 1)]


def _seconds(raw: str | None) -> int | None:
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return math.ceil(value) if value >= 0 and math.isfinite(value) else None


def _codes(raw: str | None) -> tuple[int, ...] | None:
    if raw is None:
        return None
    try:
        codes = tuple(int(part) for part in raw.split(","))
    except ValueError:
        return None
    return codes if codes and all(0 <= c <= 255 for c in codes) else None


def _index_codes(annotations: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The exit codes `index-exit-codes` gives this pod's completion index, if any."""
    index = str(annotations.get(COMPLETION_INDEX) or "")
    raw = annotations.get(INDEX_EXIT_CODES)
    if not index or raw is None:
        return None
    for entry in str(raw).split(","):
        key, sep, value = entry.partition("=")
        if sep and key.strip() == index:
            return _codes(value.strip().replace(";", ","))
    return None


def behaviour(pod: Mapping[str, Any], container: Mapping[str, Any], *, kind: Kind, kubelet: Kubelet) -> Behaviour:
    """The container's behaviour. The pod-wide `run-seconds` and `exit-code` are about app
    containers (an init container runs 0 s by default, a sidecar until stopped); the fleet's
    `defaultRunSeconds`/`defaultExitCode` apply to app containers of pods that are not restarted
    (restartPolicy Never/OnFailure). Values that do not parse are ignored."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    name = str(container.get("name") or "")

    def get(key: str, *, pod_wide: bool) -> str | None:
        own = annotations.get(f"{key}.{name}")
        if own is not None:
            return str(own)
        value = annotations.get(key) if pod_wide else None
        return None if value is None else str(value)

    app = kind == "app"
    batch = ((pod.get("spec") or {}).get("restartPolicy") or "Always") != "Always"
    run = _seconds(get(RUN_SECONDS, pod_wide=app))
    if run is None:
        if kind == "init":
            run = 0
        elif app and batch and kubelet.default_run_seconds is not None:
            run = math.ceil(kubelet.default_run_seconds)
    codes = _codes(annotations.get(f"{EXIT_CODE}.{name}"))
    if codes is None and app:
        codes = _index_codes(annotations) or _codes(annotations.get(EXIT_CODE))
    if codes is None:
        codes = (kubelet.default_exit_code,) if app and batch else (0,)
    stop = _seconds(get(STOP_SECONDS, pod_wide=True))
    return Behaviour(
        run_seconds=run, exit_codes=codes,
        oom_killed=get(OOM_KILLED, pod_wide=app) == "true",
        stop_seconds=math.ceil(kubelet.pod_shutdown_seconds) if stop is None else stop,
        startup_fails=get(STARTUP_PROBE_FAILS, pod_wide=True) == "true",
        readiness_fails=get(READINESS_PROBE_FAILS, pod_wide=True) == "true",
        liveness_fails=get(LIVENESS_PROBE_FAILS, pod_wide=True) == "true",
    )


@dataclasses.dataclass(frozen=True, slots=True)
class Probe:
    initial_delay: int
    period: int
    success_threshold: int
    failure_threshold: int

    @classmethod
    def of(cls, container: Mapping[str, Any], field: str) -> Probe | None:
        p = container.get(field)
        if not isinstance(p, Mapping):
            return None

        def num(key: str, default: int) -> int:
            v = p.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else default
        return cls(initial_delay=num("initialDelaySeconds", 0), period=max(num("periodSeconds", 10), 1),
                   success_threshold=max(num("successThreshold", 1), 1),
                   failure_threshold=max(num("failureThreshold", 3), 1))


# ---------------------------------------------------------------------- one container


def go_duration(seconds: int) -> str:
    """Whole seconds as Go's time.Duration prints them: 10s, 1m20s, 5m0s, 1h0m0s."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def _time(value: Any) -> int | None:
    if not value:
        return None
    try:
        return int(clocks.parse_time(str(value)))
    except ValueError:
        return None


@dataclasses.dataclass(slots=True)
class Box:
    """One container as the model tracks it (its status, parsed)."""

    spec: Mapping[str, Any]
    kind: Kind
    does: Behaviour
    old: Mapping[str, Any] | None
    state: Literal["waiting", "running", "terminated"] = "waiting"
    reason: str = ""
    message: str = ""
    started: int | None = None  # this run's start
    finished: int | None = None
    exit_code: int = 0
    restarts: int = 0
    last: dict[str, Any] | None = None  # lastState.terminated
    restart_at: int | None = None  # in CrashLoopBackOff until then
    pod_uid: str = ""

    @property
    def name(self) -> str:
        return str(self.spec.get("name") or "")

    @property
    def ever_ran(self) -> bool:
        return self.started is not None or self.last is not None

    @classmethod
    def parse(cls, spec: Mapping[str, Any], kind: Kind, does: Behaviour, old: Mapping[str, Any] | None) -> Box:
        box = cls(spec=spec, kind=kind, does=does, old=old)
        if not old:
            return box
        state = old.get("state") or {}
        box.restarts = int(old.get("restartCount") or 0)
        last = (old.get("lastState") or {}).get("terminated")
        box.last = dict(last) if isinstance(last, Mapping) else None
        if isinstance(state.get("running"), Mapping):
            box.state, box.started = "running", _time(state["running"].get("startedAt"))
        elif isinstance(state.get("terminated"), Mapping):
            t = state["terminated"]
            box.state, box.started, box.finished = "terminated", _time(t.get("startedAt")), _time(t.get("finishedAt"))
            box.exit_code, box.reason = int(t.get("exitCode") or 0), str(t.get("reason") or "")
        elif isinstance(state.get("waiting"), Mapping):
            w = state["waiting"]
            box.reason, box.message = str(w.get("reason") or ""), str(w.get("message") or "")
            m = _BACKOFF_MESSAGE.match(box.message)
            finished = _time((box.last or {}).get("finishedAt"))
            if box.reason == "CrashLoopBackOff" and m and finished is not None:
                hours, minutes, seconds = (int(g or 0) for g in m.groups())
                box.restart_at = finished + 3600 * hours + 60 * minutes + seconds
        if box.state == "running" and box.started is None:
            box.state = "waiting"  # a status we cannot read: start it afresh
        return box

    # -- probes

    def started_time(self) -> int | None:
        """When this run counts as started (its startup probe passed); None: never."""
        if self.state != "running" or self.started is None:
            return None
        probe = Probe.of(self.spec, "startupProbe") if self.kind != "init" else None
        if probe is None:
            return self.started
        return None if self.does.startup_fails else self.started + probe.initial_delay

    def ready_time(self) -> int | None:
        if self.kind == "init":
            return None
        started = self.started_time()
        if started is None or self.started is None:
            return None
        probe = Probe.of(self.spec, "readinessProbe")
        if probe is None:
            return started
        if self.does.readiness_fails:
            return None
        return max(started, self.started + probe.initial_delay) + (probe.success_threshold - 1) * probe.period

    def end(self) -> tuple[int, int, str] | None:
        """When and how this run ends by itself: (time, exit code, reason), or None."""
        if self.state != "running" or self.started is None:
            return None
        ends: list[tuple[int, int, str]] = []
        if self.does.run_seconds is not None:
            if self.does.oom_killed:
                ends.append((self.started + self.does.run_seconds, KILLED, "OOMKilled"))
            else:
                code = self.does.exit_code(self.restarts)
                ends.append((self.started + self.does.run_seconds, code, "Completed" if code == 0 else "Error"))
        if self.kind != "init":
            startup = Probe.of(self.spec, "startupProbe")
            if startup is not None and self.does.startup_fails:
                ends.append((self.started + startup.initial_delay + (startup.failure_threshold - 1) * startup.period,
                             KILLED, "Error"))
            liveness = Probe.of(self.spec, "livenessProbe")
            started = self.started_time()
            if liveness is not None and self.does.liveness_fails and started is not None:
                first = max(started, self.started + liveness.initial_delay)
                ends.append((first + (liveness.failure_threshold - 1) * liveness.period, KILLED, "Error"))
        return min(ends) if ends else None

    # -- transitions

    def start(self, at: int) -> None:
        if self.ever_ran:
            self.restarts += 1
        self.state, self.started, self.finished, self.restart_at = "running", at, None, None
        self.reason = self.message = ""

    def terminated(self) -> dict[str, Any]:
        return {"exitCode": self.exit_code, "reason": self.reason, "startedAt": clocks.rfc3339(self.started or 0),
                "finishedAt": clocks.rfc3339(self.finished or 0), "containerID": self.container_id()}

    def stop(self, at: int, code: int, reason: str) -> None:
        self.state, self.finished, self.exit_code, self.reason = "terminated", at, code, reason

    def back_off(self, at: int, pod_label: str) -> None:
        """Wait in CrashLoopBackOff before the next run (this one, just ended, becomes lastState)."""
        ran = at - (self.started or at)
        previous = _time((self.last or {}).get("finishedAt"))
        if self.restarts == 0 or previous is None or ran >= BACKOFF_RESET:
            delay = BACKOFF_INITIAL
        else:  # the wait before this run, doubled
            delay = min(max(2 * ((self.started or at) - previous), BACKOFF_INITIAL), BACKOFF_MAX)
        self.last = self.terminated()
        self.state, self.reason, self.restart_at = "waiting", "CrashLoopBackOff", at + delay
        self.message = f"back-off {go_duration(delay)} restarting failed container={self.name} pod={pod_label}"

    def container_id(self) -> str:
        """Stable per pod uid, container and run (the first run's is what the kubelet always showed)."""
        uid = self.pod_uid
        parts = ("container", uid, self.name) if self.restarts == 0 else ("container", uid, self.name, str(self.restarts))
        return f"containerd://{objs.stable_hex(*parts)}"


# ---------------------------------------------------------------------- the pod


@dataclasses.dataclass(frozen=True, slots=True)
class Step:
    """What `advance` found: the status to report and when to look again (None: nothing on the
    clock), and whether every container has stopped (a deleted pod can then go)."""

    status: dict[str, Any]
    next_at: float | None
    stopped: bool


class _Pod:
    def __init__(self, pod: Mapping[str, Any], kubelet: Kubelet) -> None:
        self.pod = pod
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        self.policy = str(spec.get("restartPolicy") or "Always")
        self.label = f"{meta.get('name')}_{meta.get('namespace')}({meta.get('uid')})"
        uid = str(meta.get("uid") or "")
        old_init = {str(s.get("name")): s for s in status.get("initContainerStatuses") or [] if isinstance(s, Mapping)}
        old_main = {str(s.get("name")): s for s in status.get("containerStatuses") or [] if isinstance(s, Mapping)}
        self.inits: list[Box] = []
        for c in spec.get("initContainers") or []:
            if isinstance(c, Mapping):
                kind: Kind = "sidecar" if c.get("restartPolicy") == "Always" else "init"
                self.inits.append(Box.parse(c, kind, behaviour(pod, c, kind=kind, kubelet=kubelet),
                                            old_init.get(str(c.get("name")))))
        self.apps = [Box.parse(c, "app", behaviour(pod, c, kind="app", kubelet=kubelet), old_main.get(str(c.get("name"))))
                     for c in spec.get("containers") or [] if isinstance(c, Mapping)]
        for box in self.boxes:
            box.pod_uid = uid
        self.deleting: int | None = None  # when the deletion was asked for
        self.grace_end: int | None = None
        if meta.get("deletionTimestamp"):
            end = _time(meta.get("deletionTimestamp"))
            grace = int(meta.get("deletionGracePeriodSeconds") or 0)
            if end is not None:
                self.grace_end, self.deleting = end, end - grace

    @property
    def boxes(self) -> list[Box]:
        return [*self.inits, *self.apps]

    # -- gates

    def init_done_at(self, sandbox: int) -> int | None:
        """When every init container was done (None: not yet), replaying their order."""
        gate = sandbox
        for box in self.inits:
            if box.kind == "sidecar":
                started = box.started_time() if box.state == "running" else None
                if started is None:
                    if box.ever_ran and box.restarts > 0:
                        continue  # it was started before it restarted
                    return None
                gate = max(gate, started)
            else:
                if box.state != "terminated" or box.exit_code != 0 or box.finished is None:
                    return None
                gate = max(gate, box.finished)
        return gate

    def next_init(self, sandbox: int) -> tuple[Box, int] | None:
        """The init container to start first-time next, with the time its turn came."""
        gate = sandbox
        for box in self.inits:
            if not box.ever_ran:
                return (box, gate) if box.state == "waiting" and box.restart_at is None else None
            if box.kind == "sidecar":
                started = box.started_time()
                if started is None:
                    if box.restarts > 0:
                        continue
                    return None
                gate = max(gate, started)
            else:
                if box.state != "terminated" or box.exit_code != 0 or box.finished is None:
                    return None
                gate = max(gate, box.finished)
        return None

    # -- the outcome so far

    def apps_done(self) -> bool:
        """Every app container ended and none will run again (restartPolicy Never/OnFailure)."""
        return bool(self.apps) and all(b.state == "terminated" for b in self.apps)

    def init_failed(self) -> bool:
        """An init container failed in a pod that is not restarted (restartPolicy Never)."""
        return self.policy == "Never" and any(b.kind == "init" and b.state == "terminated" and b.exit_code != 0
                                              for b in self.inits)

    def finishing(self) -> bool:
        """Nothing will run again but the sidecars: they are to be stopped."""
        return self.init_failed() or (self.policy != "Always" and self.apps_done())

    def phase(self) -> str:
        """upstream's getPhase over the model's containers."""
        if self.init_failed():
            return "Failed"
        if self.deleting is not None and not any(b.state == "running" for b in self.boxes) \
                and any(b.ever_ran for b in self.boxes):
            ok = all(b.state == "terminated" and b.exit_code == 0 for b in self.apps)
            return "Succeeded" if ok else "Failed"
        if any(not b.ever_ran for b in self.apps):
            return "Pending"
        if any(b.state == "running" for b in self.apps) or any(
                b.kind == "sidecar" and b.state == "running" for b in self.inits):
            return "Running"
        if self.policy == "Always" or not self.apps_done():
            return "Running"
        if all(b.exit_code == 0 for b in self.apps):
            return "Succeeded"
        return "Failed"

    # -- replay

    def events(self, sandbox: int) -> list[tuple[int, int, Callable[[int], None]]]:
        """The transitions that could happen next: (time, order, apply)."""
        out: list[tuple[int, int, Callable[[int], None]]] = []
        terminal = self.phase() in objs.TERMINAL_PHASES
        finishing = self.finishing()
        for i, box in enumerate(self.boxes):
            stopping = box.state == "running" and (
                self.deleting is not None or (finishing and box.kind == "sidecar"))
            end = box.end()
            if stopping:
                stop = self._stop_at(box)
                end = stop if end is None or stop[0] < end[0] else end
            if end is not None:
                t, code, reason = end
                out.append((t, i, _bind(self._exit, box, code, reason)))
            if box.restart_at is not None and not (terminal or finishing) and (
                    self.deleting is None or box.restart_at < self.deleting):
                out.append((box.restart_at, i, box.start))
        if terminal or finishing:
            return out
        nxt = self.next_init(sandbox)
        if nxt is not None and (self.deleting is None or nxt[1] < self.deleting):
            out.append((nxt[1], self.boxes.index(nxt[0]), nxt[0].start))
        done = self.init_done_at(sandbox)
        if done is not None and (self.deleting is None or done < self.deleting):
            for box in self.apps:
                if not box.ever_ran:
                    out.append((done, self.boxes.index(box), box.start))
        return out

    def _stop_base(self) -> tuple[int, int | None]:
        """When containers get their stop signal, and the deadline (None: no grace period)."""
        if self.deleting is not None:
            return self.deleting, self.grace_end
        # the pod is finishing: the sidecars are told to stop once the other containers are done
        return max((b.finished or 0) for b in self.boxes if b.state == "terminated"), None

    def _stop_at(self, box: Box) -> tuple[int, int, str]:
        """When and how a running container stops on deletion (or a sidecar when the pod is done).
        Sidecars are stopped after the app containers, in the reverse of their start order, in what
        is left of the grace period."""
        base, deadline = self._stop_base()
        begin = max(base, box.started or base)
        if box.kind == "sidecar":
            after = self.apps + [b for b in self.inits[self.inits.index(box) + 1:] if b.kind == "sidecar"]
            begin = max([begin, *(self._stopped_by(b) for b in after)])
        if deadline is None or begin + box.does.stop_seconds <= deadline:
            return begin + box.does.stop_seconds, 0, "Completed"
        return max(deadline, begin), KILLED, "Error"

    def _stopped_by(self, box: Box) -> int:
        """When a container will have stopped, once the containers are being stopped."""
        base, _deadline = self._stop_base()
        if box.state != "running":
            return box.finished or base if box.state == "terminated" else base
        stop = self._stop_at(box)[0]
        end = box.end()
        return min(stop, end[0]) if end is not None else stop

    def _exit(self, box: Box, code: int, reason: str, at: int) -> None:
        box.stop(at, code, reason)
        if self.deleting is not None and at >= self.deleting:
            return
        if box.kind == "sidecar":
            restart = not self.finishing()  # not once the pod is done
        elif box.kind == "init":
            restart = code != 0 and self.policy != "Never"
        else:
            restart = self.policy == "Always" or (self.policy == "OnFailure" and code != 0)
        if restart:
            box.back_off(at, self.label)

    def replay(self, sandbox: int, now: float) -> int | None:
        """Apply every transition due by `now`; the time of the next one (None: none)."""
        t: int | None = None
        for _ in range(MAX_STEPS):
            pending = self.events(sandbox)
            if not pending:
                return None
            t, _order, apply = min(pending, key=lambda e: (e[0], e[1]))
            if t > now:
                return t
            apply(t)
        return t  # more is due: the caller writes what it has and looks again at once


def _bind(fn: Callable[[Box, int, str, int], None], box: Box, code: int, reason: str) -> Callable[[int], None]:
    return lambda at: fn(box, code, reason, at)


# ---------------------------------------------------------------------- statuses


def _image(container: Mapping[str, Any]) -> tuple[str, str]:
    """(image as the runtime shows it, imageID)."""
    image = str(container.get("image") or "")
    repo, tag = objs.image_ref(image)
    shown = f"{repo}:{tag}" if tag else f"{repo}@{image.split('@', 1)[-1]}"
    return shown, f"{repo}@sha256:{objs.stable_hex('image', image)}"


def container_status(box: Box, now: float) -> dict[str, Any]:
    """The containerStatuses entry the kubelet writes for the box at `now`."""
    shown, image_id = _image(box.spec)
    out: dict[str, Any] = {"name": box.name, "image": shown, "imageID": "", "ready": False, "started": False,
                           "restartCount": box.restarts, "lastState": {"terminated": box.last} if box.last else {}}
    if box.old and box.old.get("allocatedResourcesStatus"):
        # Written by the device-health reporter (kubelet's DRA health); the kubelet keeps it.
        out["allocatedResourcesStatus"] = box.old["allocatedResourcesStatus"]
    if box.state == "waiting" and not box.ever_ran:
        out["state"] = {"waiting": {"reason": box.reason or "ContainerCreating"}}
        return out
    out["imageID"] = image_id
    if box.state == "waiting":
        out["containerID"] = str((box.last or {}).get("containerID") or box.container_id())
        out["state"] = {"waiting": {"reason": box.reason, "message": box.message}}
        return out
    out["containerID"] = box.container_id()
    if box.state == "running":
        started, ready = box.started_time(), box.ready_time()
        out.update(started=started is not None and started <= now, ready=ready is not None and ready <= now,
                   **resizing.applied_resources(box.spec))
        out["state"] = {"running": {"startedAt": clocks.rfc3339(box.started or 0)}}
        return out
    out["state"] = {"terminated": box.terminated()}
    out["ready"] = box.kind == "init" and box.exit_code == 0  # the prober's rule for init containers
    return out


def _unready(boxes: Sequence[Box], now: float) -> list[Box]:
    out = []
    for b in boxes:
        ready = b.ready_time()
        if b.state != "running" or ready is None or ready > now:
            out.append(b)
    return out


def _names(boxes: Sequence[Box]) -> str:
    return objs.names_list(b.spec for b in boxes)


def pending_status(pod: Mapping[str, Any], *, now: float, host_ip: str) -> dict[str, Any]:
    """A pod whose sandbox cannot be made yet (its resource claims are not prepared): Pending,
    containers waiting ContainerCreating (PodInitializing with init containers)."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    inits = [c for c in spec.get("initContainers") or [] if isinstance(c, Mapping)]
    containers = [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    reason = "PodInitializing" if inits else "ContainerCreating"
    old_main = {str(s.get("name")): s for s in status.get("containerStatuses") or [] if isinstance(s, Mapping)}
    old_init = {str(s.get("name")): s for s in status.get("initContainerStatuses") or [] if isinstance(s, Mapping)}

    def waiting(c: Mapping[str, Any], kind: Kind, old: Mapping[str, Any] | None) -> dict[str, Any]:
        box = Box(spec=c, kind=kind, does=Behaviour(), old=old, reason=reason)
        return container_status(box, now)
    unready = f"containers with unready status: {objs.names_list(containers)}"
    init_cond = (("Initialized", "False", "ContainersNotInitialized",
                  f"containers with incomplete status: {objs.names_list(inits)}") if inits
                 else ("Initialized", "True", "", ""))
    conds = [("PodReadyToStartContainers", "False", "", ""), init_cond,
             ("Ready", "False", "ContainersNotReady", unready),
             ("ContainersReady", "False", "ContainersNotReady", unready), ("PodScheduled", "True", "", "")]
    out: dict[str, Any] = {
        "phase": "Pending", "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
        "startTime": status.get("startTime") or clocks.rfc3339(now),
        "conditions": _without_resize(objs.merge_conditions(status.get("conditions") or [], conds, now)),
        "containerStatuses": sorted((waiting(c, "app", old_main.get(str(c.get("name")))) for c in containers),
                                    key=lambda s: s["name"]),
    }
    if inits:
        out["initContainerStatuses"] = [waiting(c, "init", old_init.get(str(c.get("name")))) for c in inits]
    return out


def _without_resize(conditions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in conditions if c.get("type") not in resizing.RESIZE_CONDITIONS]


def sandbox_time(pod: Mapping[str, Any]) -> int | None:
    """When the pod's sandbox was made (PodReadyToStartContainers turned True), if it was."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodReadyToStartContainers" and c.get("status") == "True":
            return _time(c.get("lastTransitionTime"))
    return None


def has_run(pod: Mapping[str, Any]) -> bool:
    """Whether the kubelet has started the pod (made its sandbox), i.e. the model applies."""
    status = pod.get("status") or {}
    if sandbox_time(pod) is not None or status.get("phase") in ("Running", *objs.TERMINAL_PHASES):
        return True
    return any(set(s.get("state") or {}) & {"running", "terminated"} or s.get("restartCount")
               for key in ("containerStatuses", "initContainerStatuses") for s in status.get(key) or []
               if isinstance(s, Mapping))


def advance(pod: Mapping[str, Any], *, now: float, kubelet: Kubelet, host_ip: str, pod_ip: str) -> Step:
    """The pod's status at `now` after every transition due by then, for a pod whose sandbox
    exists (or is made now: its claims are prepared)."""
    model = _Pod(pod, kubelet)
    status = pod.get("status") or {}
    sandbox = sandbox_time(pod)
    if sandbox is None:
        sandbox = int(now)
    next_at: float | None = model.replay(sandbox, now)
    phase = model.phase()
    terminal = phase in objs.TERMINAL_PHASES
    for box in model.boxes:  # never started yet: the kubelet's default waiting reason
        if box.state == "waiting" and not box.ever_ran:
            box.reason = "PodInitializing" if model.inits else "ContainerCreating"
    for box in model.boxes:  # probe results turning later are on the clock too
        for t in (box.started_time(), box.ready_time()):
            if t is not None and t > now and not terminal:
                next_at = t if next_at is None else min(next_at, t)
    out: dict[str, Any] = {"phase": phase, "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
                           "startTime": status.get("startTime") or clocks.rfc3339(now)}
    if pod_ip:
        out["podIP"] = pod_ip
        out["podIPs"] = [{"ip": pod_ip}]
    out["conditions"] = _without_resize(objs.merge_conditions(
        status.get("conditions") or [], _conditions(pod, model, phase, now), now))
    out["containerStatuses"] = sorted((container_status(b, now) for b in model.apps), key=lambda s: s["name"])
    if model.inits:
        out["initContainerStatuses"] = [container_status(b, now) for b in model.inits]
    spec = pod.get("spec") or {}
    if spec.get("ephemeralContainers") and not terminal:
        old_eph = {str(s.get("name")): s for s in status.get("ephemeralContainerStatuses") or []
                   if isinstance(s, Mapping)}
        out["ephemeralContainerStatuses"] = [
            resizing.ephemeral_status(_ephemeral(c, old_eph.get(str(c.get("name"))), now, model))
            for c in spec["ephemeralContainers"] if isinstance(c, Mapping)]
    stopped = not any(b.state == "running" for b in model.boxes)
    return Step(status=out, next_at=next_at, stopped=stopped)


def _ephemeral(c: Mapping[str, Any], old: Mapping[str, Any] | None, now: float, model: _Pod) -> dict[str, Any]:
    box = Box(spec=c, kind="app", does=Behaviour(), old=old, pod_uid=model.apps[0].pod_uid if model.apps else "")
    started = _time(((old or {}).get("state") or {}).get("running", {}).get("startedAt"))
    box.state, box.started = "running", started if started is not None else int(now)
    return container_status(box, now)


def _conditions(pod: Mapping[str, Any], model: _Pod, phase: str, now: float) -> list[tuple[str, str, str, str]]:
    """The kubelet's pod conditions (status manager): PodReadyToStartContainers, Initialized,
    Ready, ContainersReady, PodScheduled."""
    terminal = phase in objs.TERMINAL_PHASES
    # Initialized: an init container counts once it exited 0 (a sidecar: once started); True for
    # good once an app container has started, and with reason PodCompleted once Succeeded.
    if phase == "Succeeded":
        initialized = ("Initialized", "True", "PodCompleted", "")
    elif any(b.ever_ran for b in model.apps):
        initialized = ("Initialized", "True", "", "")
    else:
        incomplete = [b for b in model.inits if not _init_complete(b, now)]
        initialized = ("Initialized", "False", "ContainersNotInitialized",
                       f"containers with incomplete status: {_names(incomplete)}") if incomplete else \
            ("Initialized", "True", "", "")
    if terminal:
        why = "PodCompleted" if phase == "Succeeded" else "PodFailed"
        return [("PodReadyToStartContainers", "False", "", ""), initialized,
                ("Ready", "False", why, ""), ("ContainersReady", "False", why, ""),
                ("PodScheduled", "True", "", "")]
    unready = _unready([b for b in model.inits if b.kind == "sidecar"] + model.apps, now)
    if unready:
        msg = f"containers with unready status: {_names(unready)}"
        containers_ready = ("ContainersReady", "False", "ContainersNotReady", msg)
        ready = ("Ready", "False", "ContainersNotReady", msg)
    else:
        containers_ready = ("ContainersReady", "True", "", "")
        gates, why = objs.gates_ready(pod)
        ready = ("Ready", "True", "", "") if gates else ("Ready", "False", "ReadinessGatesNotReady", why)
    return [("PodReadyToStartContainers", "True", "", ""), initialized, ready, containers_ready,
            ("PodScheduled", "True", "", "")]


def _init_complete(box: Box, now: float) -> bool:
    if box.kind == "sidecar":
        started = box.started_time()
        return started is not None and started <= now
    return box.state == "terminated" and box.exit_code == 0
