"""Terminal rendering for the `cplane` commands (`log show|history|diff|events`, `replay`): kubectl-like
tables, object lists, field-level diffs, object histories, event tables, and progress bars.

Pure: no I/O and no clock reads. Callers pass decoded objects, `storage.log.Event`s and `now` (unix
seconds); every renderer returns a string. The one exception is `Progress`, which writes to the
stream it is given (and only when that stream is a terminal). Object names (`pods/default/web`) are
`cp.resources.ref`; times `cp.clock.rfc3339_milli`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

import msgspec

from cp import clock as clocks
from cp import resources as res
from cp.changes import Change, changes_json, diff, versions  # the diffs are shared with the API

if TYPE_CHECKING:
    from storage import log

_json = msgspec.json.Encoder(order="deterministic")

# Fields every change touches; left out of diffs unless asked for (`--all-fields`).
NOISY_FIELDS: tuple[tuple[str, ...], ...] = (("metadata", "resourceVersion"), ("metadata", "managedFields"))
VALUE_WIDTH = 100  # characters of one rendered value before it is cut with "…"

# ---------------------------------------------------------------------------------------------
# kubectl-like tables (`cplane log show`)

_MIN_WIDTH = 6  # kubectl's tabwriter: minimum cell width 6, padding 3
_PADDING = 3


def _cell(value: Any) -> str:
    t = type(value)
    if t is str:
        return value  # type: ignore[no-any-return]
    if value is None:
        return "<none>"
    if t is bool:
        return "true" if value else "false"
    if t is dict or t is list:
        return _json.encode(value).decode()
    return str(value)


def columns_text(rows: Sequence[Sequence[str]]) -> str:
    """Align rows as kubectl's tabwriter does (every column but the last padded to max + 3, min 6).
    Rows all have the same number of cells."""
    if not rows:
        return ""
    widths = [max(_MIN_WIDTH, max(map(len, column)) + _PADDING) for column in zip(*rows, strict=True)][:-1]
    ljust = str.ljust
    out = ["".join(map(ljust, r, widths)) + r[-1] for r in rows]
    return "\n".join(line.rstrip() for line in out) + "\n"


def table_text(kind: res.ResourceKind, objs: list[dict[str, Any]], *, now: float, wide: bool = False,
               namespace_column: bool = False, prefix_names: bool = False) -> str:
    """One kind's objects as `kubectl get` prints them (`-o wide`: priority columns too)."""
    from cp import tables  # imported when needed: `log history|events` start faster

    t = tables.table(objs, group=kind.group, kind=kind.kind, now=now, include_object="None",
                     printer=tables.printer_for(kind))
    defs = t["columnDefinitions"]
    keep = [i for i, c in enumerate(defs) if wide or c.get("priority", 0) == 0]
    head = [defs[i]["name"].upper() for i in keep]
    everything = len(keep) == len(defs)
    rows: list[list[str]] = []
    for obj, row in zip(objs, t["rows"], strict=True):
        raw = row["cells"][:len(defs)]  # cells beyond the columns are not printed, as kubectl's printer
        cells = list(map(_cell, raw if everything else [raw[i] for i in keep]))
        if prefix_names and cells:
            cells[0] = f"{res.kind_prefix(kind)}/{cells[0]}"
        if namespace_column:
            cells.insert(0, str((obj.get("metadata") or {}).get("namespace", "")))
        rows.append(cells)
    if namespace_column:
        head.insert(0, "NAMESPACE")
    return columns_text([head, *rows])


def tables_text(groups: Sequence[tuple[res.ResourceKind, list[dict[str, Any]]]], *, now: float,
                wide: bool = False, all_namespaces: bool = False) -> str:
    """Several kinds, as `kubectl get all`: one block per kind, names prefixed with the type."""
    blocks = [table_text(kind, objs, now=now, wide=wide, namespace_column=all_namespaces and kind.namespaced,
                         prefix_names=len(groups) > 1)
              for kind, objs in groups if objs]
    return "\n".join(blocks)


def list_object(objs: Iterable[dict[str, Any]], *, revision: int) -> dict[str, Any]:
    """The `v1 List` kubectl prints for `-o yaml|json`."""
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": str(revision)},
            "items": list(objs)}


def yaml_text(obj: Any) -> str:
    import yaml

    return yaml.safe_dump(obj, sort_keys=True, default_flow_style=False, allow_unicode=True)


def json_text(obj: Any) -> str:
    return msgspec.json.format(_json.encode(obj), indent=4).decode() + "\n"


def value_text(value: Any, *, width: int = VALUE_WIDTH) -> str:
    text = _json.encode(value).decode()
    return text if len(text) <= width else text[:width - 1] + "…"


def changes_text(changes: Sequence[Change], *, indent: str = "  ") -> str:
    lines = []
    for c in changes:
        if c.op == "+":
            lines.append(f"{indent}+ {c.path}: {value_text(c.new)}")
        elif c.op == "-":
            lines.append(f"{indent}- {c.path}: {value_text(c.old)}")
        else:
            lines.append(f"{indent}~ {c.path}: {value_text(c.old)} → {value_text(c.new)}")
    return "\n".join(lines) + ("\n" if lines else "")


# ---------------------------------------------------------------------------------------------
# `cplane log history`


def history_text(events: Sequence[log.Event], objects: Sequence[dict[str, Any]], *,
                 all_fields: bool = False) -> str:
    """Every version of one object: revision, time, type, actor, and the diff from the version before.
    `objects[i]` is `events[i].object` decoded."""
    if not events:
        return ""
    first, last = events[0], events[-1]
    uids = list(dict.fromkeys(e.uid for e in events))
    head = (f"{res.ref(first.group, first.resource, first.namespace, first.name)}: {len(events)} version{'s' if len(events) != 1 else ''}, "
            f"revisions {first.revision}..{last.revision}"
            + (f" ({len(uids)} incarnations: deleted and created again)" if len(uids) > 1 else "") + "\n")
    out = [head]
    previous_uid = ""
    all_changes = versions(types=[ev.type for ev in events], objects=objects, all_fields=all_fields)
    for ev, diffs in zip(events, all_changes, strict=True):
        out.append(f"\n{ev.revision}  {clocks.rfc3339_milli(ev.time)}  {ev.type}  by {ev.actor.describe()}\n")
        if ev.type == "ADDED":
            note = " (created again: new uid)" if previous_uid and ev.uid != previous_uid else ""
            if note:
                out.append(f"  {note.strip()}\n")
            out.append(changes_text(diffs))
        else:
            out.append(changes_text(diffs) if diffs else ("" if ev.type == "DELETED"
                                                          else "  (no field changes)\n"))
            if ev.type == "DELETED":
                out.append("  (deleted)\n")
        previous_uid = ev.uid
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# `cplane log diff`


class StateDiff(msgspec.Struct, kw_only=True):
    """Differences between two states (ref -> object): added, removed, changed with their changes."""

    added: list[str]
    removed: list[str]
    changed: dict[str, list[Change]]


def state_diff(before: Mapping[str, dict[str, Any]], after: Mapping[str, dict[str, Any]], *,
               all_fields: bool = False) -> StateDiff:
    added = sorted(k for k in after if k not in before)
    removed = sorted(k for k in before if k not in after)
    changed: dict[str, list[Change]] = {}
    for k in sorted(k for k in before if k in after):
        if before[k] == after[k]:
            continue
        changes = diff(before[k], after[k], all_fields=all_fields)
        if changes:
            changed[k] = changes
    return StateDiff(added=added, removed=removed, changed=changed)


def state_diff_text(d: StateDiff, *, title: str, details: bool = True) -> str:
    """`+ ref`, `- ref`, `~ ref` (with its field changes unless not `details`) under a one-line title."""
    out = [f"{title}: {len(d.added)} added, {len(d.removed)} removed, {len(d.changed)} changed\n"]
    for k in d.added:
        out.append(f"+ {k}\n")
    for k in d.removed:
        out.append(f"- {k}\n")
    for k, changes in d.changed.items():
        out.append(f"~ {k}\n")
        if details:
            out.append(changes_text(changes, indent="    "))
    return "".join(out)


def state_diff_json(d: StateDiff, **extra: Any) -> dict[str, Any]:
    return {**extra, "added": d.added, "removed": d.removed,
            "changed": {k: changes_json(v) for k, v in d.changed.items()}}


# ---------------------------------------------------------------------------------------------
# `cplane log events`

EVENT_COLUMNS = ("REVISION", "TIME", "TYPE", "RESOURCE", "NAMESPACE", "NAME", "USER", "MANAGER", "AGENT")


def event_row(ev: log.Event) -> list[str]:
    agent = ev.actor.user_agent.split(" ", 1)[0]
    return [str(ev.revision), clocks.rfc3339_milli(ev.time), ev.type, (f"{ev.resource}.{ev.group}" if ev.group else ev.resource), ev.namespace or "-",
            ev.name, ev.actor.user or "-", ev.actor.field_manager or "-", agent or "-"]


def events_text(events: Iterable[log.Event], *, header: bool = True) -> str:
    rows = [list(EVENT_COLUMNS)] if header else []
    rows.extend(event_row(ev) for ev in events)
    return columns_text(rows)


# ---------------------------------------------------------------------------------------------
# Progress bars (stderr, terminals only)


class Progress:
    """A one-line progress bar redrawn at most 10 times a second, on a terminal only (otherwise every
    call is a no-op). `total` None: a counter without a bar."""

    def __init__(self, stream: IO[str], *, label: str, total: int | None, unit: str = "events",
                 enabled: bool | None = None, min_total: int = 10_000) -> None:
        if enabled is None:
            enabled = bool(getattr(stream, "isatty", lambda: False)()) and (total is None or total >= min_total)
        self.enabled = enabled
        self._stream = stream
        self._label = label
        self._total = total
        self._unit = unit
        self.done = 0
        self._started = time.monotonic()
        self._drawn = 0.0

    def add(self, n: int) -> None:
        self.done += n
        if self.enabled:
            now = time.monotonic()
            if now - self._drawn >= 0.1:
                self._drawn = now
                self._draw(now)

    def _amount(self, n: float) -> str:
        return f"{n / 1e6:,.1f}" if self._unit == "bytes" else f"{n:,.0f}"

    def _draw(self, now: float) -> None:
        rate = self.done / max(now - self._started, 1e-6)
        unit = "MB" if self._unit == "bytes" else self._unit
        if self._total:
            frac = min(self.done / self._total, 1.0)
            bar = "#" * int(frac * 30)
            text = (f"\r{self._label} [{bar:<30}] {frac * 100:3.0f}%  {self._amount(self.done)}/"
                    f"{self._amount(self._total)} {unit}  {self._amount(rate)} {unit}/s")
        else:
            text = f"\r{self._label} {self._amount(self.done)} {unit}  {self._amount(rate)} {unit}/s"
        self._stream.write(text)
        self._stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(time.monotonic())
            self._stream.write("\n")
            self._stream.flush()


class ProgressWriter:
    """Wraps a binary output: counts the lines written through it (one event per line)."""

    def __init__(self, out: IO[bytes], progress: Progress) -> None:
        self._out = out
        self._progress = progress

    def write(self, data: bytes | bytearray | memoryview) -> int:
        self._progress.add((data.tobytes() if isinstance(data, memoryview) else data).count(b"\n"))
        return self._out.write(data)

    def flush(self) -> None:
        self._out.flush()


def progress_lines(lines: Iterable[bytes], progress: Progress) -> Iterator[bytes]:
    """Yields `lines`, counting their bytes into `progress` (whose total is the input's size)."""
    pending = 0
    for n, line in enumerate(lines, 1):
        pending += len(line)
        if n % 1000 == 0:
            progress.add(pending)
            pending = 0
        yield line
    progress.add(pending)
