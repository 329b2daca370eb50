"""The container surface of simulated pods (issue #23): what a simulated container prints, and the
small command set it answers (`docs/fleet.md`, "The container surface"). Pure: the kubelet's HTTP
API (`controllers/fleet/kubelet_api.py`) reads the pod from the fleet's cache, resolves the
container's environment (`Simulator.container_environment`) and asks this module for bytes.

A container run prints, at its start, one line naming it and its image, then its environment
(`NAME=value`, one variable a line, in the kubelet's order — or, for a shell script that runs
`export` on its own, as upstream's DRA demos do (`bash -c "export; ..."`), as that shell prints it:
bash's `declare -x NAME="value"`, sh's `export NAME='value'`, sorted by name); when the run ends, one
line with its exit code and reason. Each line's timestamp is the run's `startedAt` (the exit line: `finishedAt`),
so the output of a run is the same whenever it is read.
"""

from __future__ import annotations

import dataclasses
import math
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from cp import clock as clocks
from cp import quantity

PREFIX = "[cplane]"
NOT_FOUND = 127  # a command outside the simulated set (a shell's "command not found")
COMMANDS = ("env", "printenv", "cat", "echo", "true", "false", "exit", "sh -c")
SHELLS = ("sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/sh", "/usr/bin/bash")


class SurfaceError(Exception):
    """A request the kubelet answers with 400 (the container is not there, not started...)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Line:
    at: float  # when it was printed (seconds since the epoch)
    text: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class Run:
    """One run of a container, from its status."""

    started: float
    finished: float | None = None
    exit_code: int | None = None
    reason: str = ""


@dataclasses.dataclass(frozen=True, kw_only=True)
class LogOptions:
    """PodLogOptions, checked by the API server (`api/kubelet_proxy.py`)."""

    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    since_seconds: int | None = None
    since_time: float | None = None
    limit_bytes: int | None = None


# ---------------------------------------------------------------------- the pod's containers


def find_container(pod: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    spec = pod.get("spec") or {}
    for field in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(field) or []:
            if isinstance(c, Mapping) and c.get("name") == name:
                return c
    return None


def container_status(pod: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    status = pod.get("status") or {}
    for field in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for s in status.get(field) or []:
            if isinstance(s, Mapping) and s.get("name") == name:
                return s
    return None


def _terminated(state: Mapping[str, Any] | None) -> Run | None:
    t = (state or {}).get("terminated")
    if not isinstance(t, Mapping):
        return None
    started = clocks.time_of(t.get("startedAt"))
    if started is None:
        return None
    return Run(started=started, finished=clocks.time_of(t.get("finishedAt")) or started,
               exit_code=int(t.get("exitCode") or 0), reason=str(t.get("reason") or ""))


def current_run(status: Mapping[str, Any] | None) -> Run | None:
    """The container's current (or last, when it is not running) run; None before it first starts."""
    if status is None:
        return None
    state = status.get("state") or {}
    running = state.get("running")
    if isinstance(running, Mapping):
        started = clocks.time_of(running.get("startedAt"))
        if started is not None:
            return Run(started=started)
    run = _terminated(state)
    if run is not None:
        return run
    return _terminated(status.get("lastState"))  # waiting to restart: its last run


def previous_run(status: Mapping[str, Any] | None) -> Run | None:
    """The run `previous=true` prints: `lastState.terminated`, whatever the current state (the
    kubelet's rule; while a container waits to restart, that is also the run it prints by default)."""
    if status is None:
        return None
    return _terminated(status.get("lastState"))


def run_for_logs(pod: Mapping[str, Any], container: str, *, previous: bool) -> Run:
    """The run `pods/log` prints, or the kubelet's 400 message."""
    pod_name = str((pod.get("metadata") or {}).get("name") or "")
    status = container_status(pod, container)
    if previous:
        run = previous_run(status)
        if run is None:
            raise SurfaceError(f'previous terminated container "{container}" in pod "{pod_name}" not found')
        return run
    run = current_run(status)
    if run is None:
        waiting = ((status or {}).get("state") or {}).get("waiting") or {}
        reason = str(waiting.get("reason") or "ContainerCreating")
        raise SurfaceError(f'container "{container}" in pod "{pod_name}" is waiting to start: {reason}')
    return run


def same_run(a: Run, b: Run) -> bool:
    return a.started == b.started


# ---------------------------------------------------------------------- what a run prints


def run_lines(*, container: Mapping[str, Any], env: Sequence[tuple[str, str]], run: Run) -> list[Line]:
    """The lines one run of a container prints (the module's docstring says which)."""
    name, image = str(container.get("name") or ""), str(container.get("image") or "")
    lines = [Line(at=run.started, text=f"{PREFIX} container {name} started (image {image})")]
    lines += [Line(at=run.started, text=t) for t in env_lines(container=container, env=env)]
    if run.finished is not None:
        lines.append(exit_line(container=container, run=run))
    return lines


_STATEMENT = re.compile(r"\s*(?:;|&&|\|\||\n)\s*")
_BASH_ESCAPED = re.compile(r'(["\\$`])')


def _export_shell(container: Mapping[str, Any]) -> str:
    """"bash" or "sh" when the container runs a shell script with a bare `export` statement."""
    argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    if len(argv) < 3 or argv[0] not in SHELLS or argv[1] != "-c":
        return ""
    if "export" not in _STATEMENT.split(argv[2].strip()):
        return ""
    return "bash" if argv[0].endswith("bash") else "sh"


def env_lines(*, container: Mapping[str, Any], env: Sequence[tuple[str, str]]) -> list[str]:
    """The environment a run prints (the module's docstring says how)."""
    shell = _export_shell(container)
    if shell == "bash":
        return ['declare -x ' + k + '="' + _BASH_ESCAPED.sub(r"\\\1", v) + '"' for k, v in sorted(env)]
    if shell == "sh":
        return ["export " + k + "='" + v.replace("'", "'\\''") + "'" for k, v in sorted(env)]
    return [f"{k}={v}" for k, v in env]


def exit_line(*, container: Mapping[str, Any], run: Run) -> Line:
    name = str(container.get("name") or "")
    reason = f" ({run.reason})" if run.reason else ""
    return Line(at=run.finished if run.finished is not None else run.started,
                text=f"{PREFIX} container {name} exited with code {run.exit_code or 0}{reason}")


def timestamp(at: float) -> str:
    """The kubelet's RFC 3339 timestamp with nanoseconds (`timestamps=true`)."""
    whole = math.floor(at)
    nanos = round((at - whole) * 1e9)
    return clocks.rfc3339(whole).removesuffix("Z") + f".{nanos:09d}Z"


def render(lines: Sequence[Line], *, timestamps: bool) -> bytes:
    return b"".join(((timestamp(ln.at) + " " if timestamps else "") + ln.text + "\n").encode() for ln in lines)


def select(lines: Sequence[Line], opts: LogOptions, *, now: float) -> list[Line]:
    """As the kubelet reads a log: the last `tailLines` lines, of those the ones not before
    `sinceSeconds` / `sinceTime` (`limitBytes` applies to the bytes written)."""
    out = list(lines)
    if opts.tail_lines is not None:
        out = out[len(out) - opts.tail_lines:] if opts.tail_lines else []
    since = opts.since_time
    if opts.since_seconds is not None:
        since = now - opts.since_seconds
    return [ln for ln in out if since is None or ln.at >= since]


# ---------------------------------------------------------------------- the environment


def _field_value(pod: Mapping[str, Any], path: str) -> str:
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    m = re.fullmatch(r"metadata\.(labels|annotations)\['(.*)'\]", path)
    if m:
        return str((meta.get(m.group(1)) or {}).get(m.group(2)) or "")
    simple = {"metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"),
              "metadata.uid": meta.get("uid"), "spec.nodeName": spec.get("nodeName"),
              "spec.serviceAccountName": spec.get("serviceAccountName"), "status.hostIP": status.get("hostIP"),
              "status.podIP": status.get("podIP")}
    if path in simple:
        return str(simple[path] or "")
    if path in ("status.hostIPs", "status.podIPs"):
        return ",".join(str(a.get("ip") or "") for a in status.get(path.split(".")[1]) or []
                        if isinstance(a, Mapping))
    if path in ("metadata.labels", "metadata.annotations"):
        return "\n".join(f'{k}="{v}"' for k, v in sorted((meta.get(path.split(".")[1]) or {}).items()))
    return ""


def _resource_value(container: Mapping[str, Any], ref: Mapping[str, Any]) -> str:
    """A resourceFieldRef as the kubelet resolves it, for a container with the resource set (an
    unset limit would be the node's allocatable; the simulated value is then empty)."""
    resource = str(ref.get("resource") or "")
    section, _, name = resource.partition(".")
    raw = ((container.get("resources") or {}).get(section) or {}).get(name)
    if raw is None and section == "requests":
        raw = ((container.get("resources") or {}).get("limits") or {}).get(name)
    if raw is None:
        return ""
    try:
        value = quantity.parse(str(raw))
        divisor = quantity.parse(str(ref.get("divisor") or "1"))
    except Exception:
        return ""
    if not divisor:
        return ""
    return str(math.ceil(value / divisor))


_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)|\$\$")


def _expand(value: str, env: Mapping[str, str]) -> str:
    """The kubelet's `$(VAR)` expansion (`$$` escapes; an unknown reference stays as written)."""
    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return _REF.sub(sub, value)


MASTER_SERVICES = ("kubernetes",)  # default-namespace services every pod gets, links or not


def _env_name(name: str) -> str:
    return name.replace("-", "_").upper()


def service_env(*, namespace: str, services: Sequence[Mapping[str, Any]],
                service_links: bool) -> list[tuple[str, str]]:
    """The kubelet's service variables (`getServiceEnvVarMap` + `envvars.FromServices`): for the
    `kubernetes` service of the default namespace always, and, with `enableServiceLinks` (the
    default), for every service of the pod's namespace that has a cluster IP — `NAME_SERVICE_HOST`,
    `NAME_SERVICE_PORT` (the first port), `NAME_SERVICE_PORT_PORTNAME` per named port, then the
    Docker link variables (`NAME_PORT`, `NAME_PORT_<port>_<PROTO>` and its `_PROTO`, `_PORT`, `_ADDR`).
    Services in name order (upstream's comes from a map: no order to keep)."""
    chosen: dict[str, Mapping[str, Any]] = {}
    for svc in services:
        meta, spec = svc.get("metadata") or {}, svc.get("spec") or {}
        ip = str(spec.get("clusterIP") or "")
        if not ip or ip == "None":
            continue
        name, ns = str(meta.get("name") or ""), str(meta.get("namespace") or "")
        if ns == "default" and name in MASTER_SERVICES:
            chosen.setdefault(name, svc)
        elif ns == namespace and service_links:
            chosen[name] = svc
    out: list[tuple[str, str]] = []
    for name in sorted(chosen):
        spec = chosen[name].get("spec") or {}
        ip, ports = str(spec["clusterIP"]), [p for p in spec.get("ports") or [] if isinstance(p, Mapping)]
        prefix = _env_name(name)
        out.append((f"{prefix}_SERVICE_HOST", ip))
        if ports:
            out.append((f"{prefix}_SERVICE_PORT", str(ports[0].get("port"))))
        out += [(f"{prefix}_SERVICE_PORT_{_env_name(str(p['name']))}", str(p.get("port")))
                for p in ports if p.get("name")]
        host = f"[{ip}]" if ":" in ip else ip
        for i, p in enumerate(ports):
            proto = str(p.get("protocol") or "TCP")
            url = f"{proto.lower()}://{host}:{p.get('port')}"
            if i == 0:
                out.append((f"{prefix}_PORT", url))
            link = f"{prefix}_PORT_{p.get('port')}_{proto.upper()}"
            out += [(link, url), (f"{link}_PROTO", proto.lower()), (f"{link}_PORT", str(p.get("port"))),
                    (f"{link}_ADDR", ip)]
    return out


def resolve_env(pod: Mapping[str, Any], container: Mapping[str, Any], *,
                config_maps: Mapping[str, Mapping[str, Any]],
                secrets: Mapping[str, Mapping[str, Any]],
                services: Sequence[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """The container's environment from its spec, as the kubelet builds it: `envFrom` first (each
    source's keys, with its prefix), then `env` in order (a later name replaces an earlier one's
    value, keeping its place), `$(VAR)` references expanded against what came before. `config_maps`
    and `secrets` are the pod's namespace's objects it refers to (a missing one is skipped).
    `services` (`service_env`) come first: the pod's own variables replace them by name, as the
    kubelet adds one only where the pod set no variable of its name (its order is a map's: none to
    keep), and `$(VAR)` may refer to them."""
    out: dict[str, str] = dict(services)
    for source in container.get("envFrom") or []:
        if not isinstance(source, Mapping):
            continue
        prefix = str(source.get("prefix") or "")
        if isinstance(source.get("configMapRef"), Mapping):
            data = (config_maps.get(str(source["configMapRef"].get("name") or "")) or {}).get("data") or {}
            for k, v in data.items():
                out[prefix + str(k)] = str(v)
        elif isinstance(source.get("secretRef"), Mapping):
            data = (secrets.get(str(source["secretRef"].get("name") or "")) or {}).get("data") or {}
            for k, v in data.items():
                out[prefix + str(k)] = _secret_text(v)
    for var in container.get("env") or []:
        if not isinstance(var, Mapping) or not var.get("name"):
            continue
        name = str(var["name"])
        if "value" in var or not isinstance(var.get("valueFrom"), Mapping):
            out[name] = _expand(str(var.get("value") or ""), out)
            continue
        src = var["valueFrom"]
        value: str | None = None
        if isinstance(src.get("fieldRef"), Mapping):
            value = _field_value(pod, str(src["fieldRef"].get("fieldPath") or ""))
        elif isinstance(src.get("resourceFieldRef"), Mapping):
            value = _resource_value(container, src["resourceFieldRef"])
        elif isinstance(src.get("configMapKeyRef"), Mapping):
            ref = src["configMapKeyRef"]
            data = (config_maps.get(str(ref.get("name") or "")) or {}).get("data") or {}
            value = str(data[ref.get("key")]) if ref.get("key") in data else None
        elif isinstance(src.get("secretKeyRef"), Mapping):
            ref = src["secretKeyRef"]
            data = (secrets.get(str(ref.get("name") or "")) or {}).get("data") or {}
            value = _secret_text(data[ref.get("key")]) if ref.get("key") in data else None
        if value is not None:
            out[name] = value
    return list(out.items())


def _secret_text(value: Any) -> str:
    import base64
    import binascii

    try:
        return base64.b64decode(str(value)).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return ""


def referenced_objects(container: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """The names of the ConfigMaps and Secrets the container's environment reads."""
    cms: set[str] = set()
    secrets: set[str] = set()
    for source in container.get("envFrom") or []:
        if isinstance(source, Mapping):
            if isinstance(source.get("configMapRef"), Mapping):
                cms.add(str(source["configMapRef"].get("name") or ""))
            if isinstance(source.get("secretRef"), Mapping):
                secrets.add(str(source["secretRef"].get("name") or ""))
    for var in container.get("env") or []:
        src = var.get("valueFrom") if isinstance(var, Mapping) else None
        if isinstance(src, Mapping):
            if isinstance(src.get("configMapKeyRef"), Mapping):
                cms.add(str(src["configMapKeyRef"].get("name") or ""))
            if isinstance(src.get("secretKeyRef"), Mapping):
                secrets.add(str(src["secretKeyRef"].get("name") or ""))
    cms.discard("")
    secrets.discard("")
    return cms, secrets


def known_files(pod: Mapping[str, Any]) -> dict[str, bytes]:
    """The files every simulated container has (`cat` reads them; CDI mounts are added to these)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    hostname = str(spec.get("hostname") or meta.get("name") or "")
    ip = str(status.get("podIP") or "")
    hosts = "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n" + (f"{ip}\t{hostname}\n" if ip else "")
    return {"/etc/hostname": (hostname + "\n").encode(), "/etc/hosts": hosts.encode(),
            "/var/run/secrets/kubernetes.io/serviceaccount/namespace": str(meta.get("namespace") or "").encode()}


MOUNTED_FILES = 256  # files read from one CDI mount of a directory
MOUNTED_BYTES = 1 << 20  # bytes read of one mounted file


def mounted_files(mounts: Sequence[tuple[str, str]]) -> dict[str, bytes]:
    """The files CDI mounts put in a container, `(containerPath, hostPath)` each: a file as it is, a
    directory's regular files below it (at most `MOUNTED_FILES`, each cut at `MOUNTED_BYTES`); a host
    path that is missing gives nothing. Reads the host's files: call it off the event loop."""
    from pathlib import Path

    out: dict[str, bytes] = {}
    for container_path, host_path in mounts:
        host = Path(host_path)
        try:
            if host.is_file():
                with host.open("rb") as f:
                    out[container_path] = f.read(MOUNTED_BYTES)
            elif host.is_dir():
                found = sorted(p for p in host.rglob("*") if p.is_file())[:MOUNTED_FILES]
                for p in found:
                    with p.open("rb") as f:
                        out[container_path.rstrip("/") + "/" + p.relative_to(host).as_posix()] = f.read(MOUNTED_BYTES)
        except OSError:
            continue
    return out


# ---------------------------------------------------------------------- the command set


@dataclasses.dataclass(kw_only=True)
class Outcome:
    stdout: bytes = b""
    stderr: bytes = b""
    code: int = 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class Container:
    """What a command sees: the environment and the files."""

    env: Sequence[tuple[str, str]]
    files: Mapping[str, bytes]


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def needs_stdin(command: Sequence[str]) -> bool:
    """Whether the command reads its standard input (`cat` without files, a shell without -c)."""
    if not command:
        return False
    if command[0] == "cat" and len(command) == 1:
        return True
    return command[0] in SHELLS and "-c" not in command[1:]


def run_command(command: Sequence[str], box: Container, *, stdin: bytes = b"") -> Outcome:
    """Run one exec'd command against the simulated container."""
    out = Outcome()
    if not command:
        out.stderr = b"cplane: no command given\n"
        out.code = NOT_FOUND
        return out
    if command[0] in SHELLS and "-c" not in command[1:]:
        return run_script(stdin.decode("utf-8", "replace"), box)
    try:
        out.code = _simple(list(command), box, out, stdin=stdin)
    except _Exit as e:
        out.code = e.code
    return out


class Interactive:
    """A shell (`sh` without `-c`) or `cat` without files reading stdin as it arrives: each complete
    line is run (echoed back, for `cat`) at once, so `kubectl exec -i` and `-it` are interactive.
    With a TTY it does what the terminal would: echo what is typed (a backspace erases, Ctrl-C drops
    the line, Ctrl-D on an empty line ends), `\n` written as `\r\n`, and a `$ ` prompt for the shell."""

    PROMPT = b"$ "

    def __init__(self, box: Container, *, shell: bool, tty: bool) -> None:
        self.box, self.shell, self.tty = box, shell, tty
        self.line = b""
        self.done = False
        self.code = 0

    def _out(self, data: bytes) -> bytes:
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") if self.tty else data

    def start(self) -> Outcome:
        return Outcome(stdout=self.PROMPT if self.tty and self.shell else b"")

    def _run(self, line: bytes) -> Outcome:
        if not self.shell:
            return Outcome(stdout=self._out(line + b"\n"))
        result = run_script(line.decode("utf-8", "replace"), self.box)
        self.code = result.code
        if _ends_session(line):
            self.done = True
        out = Outcome(stdout=self._out(result.stdout), stderr=self._out(result.stderr), code=result.code)
        if self.tty and not self.done:
            out.stdout += self.PROMPT
        return out

    def feed(self, data: bytes) -> Outcome:
        out = Outcome()
        for byte in data:
            if self.done:
                break
            ch = bytes([byte])
            if ch in (b"\r", b"\n") and (self.tty or ch == b"\n"):
                if self.tty:
                    out.stdout += b"\r\n"
                line, self.line = self.line, b""
                step = self._run(line)
                out.stdout += step.stdout
                out.stderr += step.stderr
            elif self.tty and ch in (b"\x7f", b"\x08"):
                if self.line:
                    self.line = self.line[:-1]
                    out.stdout += b"\b \b"
            elif self.tty and ch == b"\x03":
                self.line = b""
                out.stdout += b"^C\r\n" + (self.PROMPT if self.shell else b"")
            elif self.tty and ch == b"\x04":
                if not self.line:
                    self.done = True
            else:
                self.line += ch
                if self.tty:
                    out.stdout += ch
        if not self.shell and not self.tty and self.line:  # cat copies bytes, not lines
            out.stdout += self.line
            self.line = b""
        out.code = self.code
        return out

    def end(self) -> Outcome:
        """Stdin closed: the last, unterminated line runs; the session ends."""
        out = Outcome(code=self.code)
        if self.line and not self.done:
            line, self.line = self.line, b""
            out = self._run(line)
            if self.tty:
                out.stdout = out.stdout.removesuffix(self.PROMPT)
        self.done = True
        out.code = self.code
        return out


def _ends_session(line: bytes) -> bool:
    try:
        tokens = shlex.split(line.decode("utf-8", "replace"), comments=True)
    except ValueError:
        return False
    return "exit" in tokens[:1] or any(tok in (";", "&&", "||") and i + 1 < len(tokens) and tokens[i + 1] == "exit"
                                       for i, tok in enumerate(tokens))


def run_script(script: str, box: Container) -> Outcome:
    """`sh -c SCRIPT`: commands of the set separated by `;`, `&&`, `||` or newlines; `$VAR` and
    `${VAR}` expanded outside single quotes; `exit N`."""
    out = Outcome()
    env = dict(box.env)
    try:
        lexer = shlex.shlex(_expand_shell(script, env), posix=True, punctuation_chars=";&|")
        lexer.whitespace = " \t\r"
        lexer.wordchars += "$/.-=:,+@%{}[]*?~^"
        tokens = list(lexer)
    except ValueError as e:
        out.stderr = f"sh: syntax error: {e}\n".encode()
        out.code = 2
        return out
    code, op = 0, ";"
    current: list[str] = []
    try:
        for tok in [*tokens, ";"]:
            if tok in (";", "&&", "||", "\n"):
                if current:
                    if op == ";" or (op == "&&" and code == 0) or (op == "||" and code != 0):
                        code = _simple(current, box, out, stdin=b"")
                    current = []
                op = ";" if tok == "\n" else tok
            elif tok in ("|", "&"):
                out.stderr += f"sh: {tok!r}: pipes and background jobs are not simulated\n".encode()
                out.code = 2
                return out
            else:
                current.append(tok)
    except _Exit as e:
        code = e.code
    out.code = code
    return out


def _expand_shell(script: str, env: Mapping[str, str]) -> str:
    out, i, quoted = [], 0, False
    while i < len(script):
        ch = script[i]
        if ch == "'":
            quoted = not quoted
        elif ch == "$" and not quoted:
            m = re.match(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))", script[i:])
            if m:
                value = env.get(m.group(1) or m.group(2), "")
                out.append(shlex.quote(value) if value else "''")
                i += m.end()
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def _simple(argv: list[str], box: Container, out: Outcome, *, stdin: bytes) -> int:
    name, args = argv[0], argv[1:]
    env = dict(box.env)
    if name == "true":
        return 0
    if name == "false":
        return 1
    if name == "exit":
        try:
            raise _Exit(int(args[0]) & 0xFF if args else 0)
        except ValueError:
            out.stderr += f"sh: exit: Illegal number: {args[0]}\n".encode()
            raise _Exit(2) from None
    if name == "echo":
        newline = True
        if args and args[0] == "-n":
            newline, args = False, args[1:]
        out.stdout += (" ".join(args) + ("\n" if newline else "")).encode()
        return 0
    if name == "env" and not args:
        out.stdout += "".join(f"{k}={v}\n" for k, v in box.env).encode()
        return 0
    if name == "printenv":
        if not args:
            out.stdout += "".join(f"{k}={v}\n" for k, v in box.env).encode()
            return 0
        code = 0
        for a in args:
            if a in env:
                out.stdout += (env[a] + "\n").encode()
            else:
                code = 1
        return code
    if name == "cat":
        if not args:
            out.stdout += stdin
            return 0
        code = 0
        for path in args:
            data = box.files.get(path)
            if data is None:
                out.stderr += f"cat: {path}: No such file or directory\n".encode()
                code = 1
            else:
                out.stdout += data
        return code
    if name in SHELLS and len(args) >= 2 and args[0] == "-c":
        inner = run_script(args[1], box)
        out.stdout += inner.stdout
        out.stderr += inner.stderr
        return inner.code
    out.stderr += (f"cplane: {shlex.join(argv)}: command not found in the simulated container "
                   f"(it answers {', '.join(COMMANDS)})\n").encode()
    return NOT_FOUND
