"""What every printer module shares: ages rendered like apimachinery's `duration.HumanDuration`,
`Since` cells (rendered when the table is built, so rows can be kept), column definitions, and the
cell formats several kinds use (label maps and selectors, container names and images, booleans).

Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, NamedTuple

from cp import selectors
from cp.errors import BadRequest

__all__ = [
    "AGE_COL",
    "CREATED_AT_COL",
    "NAME_COL",
    "E",
    "Obj",
    "Printer",
    "RowFn",
    "Since",
    "col",
    "containers_images",
    "epoch",
    "format_labels",
    "go_bool",
    "human_duration",
    "name_age",
    "name_created_at",
    "selector_format",
    "selector_text",
    "since",
]

Obj = Mapping[str, Any]
RowFn = Callable[[Obj], list[Any]]

E: Mapping[str, Any] = {}


class Printer(NamedTuple):
    """A kind's column definitions and its row builder (cells in column order)."""

    columns: list[dict[str, Any]]
    row: RowFn


# ---------------------------------------------------------------------------------------------
# Time


def human_duration(seconds: float) -> str:
    """Render a duration the way apimachinery's `duration.HumanDuration` does ("5m", "2d3h")."""
    s = int(seconds)  # truncates toward zero, like Go's int(d.Seconds())
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    days = hours // 24
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        rest = days % 365
        return f"{days // 365}y{rest}d" if rest else f"{days // 365}y"
    return f"{days // 365}y"


_EPOCHS: dict[str, float | None] = {}
_AGES: dict[float, tuple[float, str]] = {}
_CACHE_LIMIT = 1 << 16


def _parse_epoch(ts: str) -> float | None:
    try:
        dt = datetime.fromisoformat(ts)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def epoch(ts: Any) -> float | None:
    """Seconds since the epoch for an RFC 3339 timestamp; None when missing or unparsable.

    Memoised: objects in one list tend to share timestamps (to the second)."""
    if not ts or not isinstance(ts, str):
        return None
    try:
        return _EPOCHS[ts]
    except KeyError:
        pass
    if len(_EPOCHS) >= _CACHE_LIMIT:
        _EPOCHS.clear()
    t = _EPOCHS[ts] = _parse_epoch(ts)
    return t


class Since:
    """A cell that reads how long ago `epoch` was ("5m", or "<unknown>" without an epoch), optionally
    inside text ("3 (5m ago)"). Row builders return these instead of strings, so that a row depends on
    its object only and can be kept (`RowCache`); `render(now)` happens when the table is built."""

    __slots__ = ("epoch", "prefix", "suffix")

    def __init__(self, epoch: float | None, *, prefix: str = "", suffix: str = "") -> None:
        self.epoch = epoch
        self.prefix = prefix
        self.suffix = suffix

    def render(self, now: float) -> str:
        if self.epoch is None:
            return "<unknown>"
        age = _age(self.epoch, now)
        return f"{self.prefix}{age}{self.suffix}" if self.prefix or self.suffix else age

    def __repr__(self) -> str:
        return f"Since({self.epoch!r}, prefix={self.prefix!r}, suffix={self.suffix!r})"


_UNKNOWN = Since(None)
_SINCE: dict[str, Since] = {}


def _age(epoch: float, now: float) -> str:
    """`human_duration(now - epoch)`, memoised per epoch for the same `now` (a table has one `now`)."""
    hit = _AGES.get(epoch)
    if hit is not None and hit[0] == now:
        return hit[1]
    age = human_duration(now - epoch)
    if len(_AGES) >= _CACHE_LIMIT:
        _AGES.clear()
    _AGES[epoch] = (now, age)
    return age


def since(ts: Any) -> Since:
    """`translateTimestampSince` of an RFC 3339 timestamp, as a `Since` cell (shared per timestamp)."""
    if type(ts) is not str:
        return _UNKNOWN
    cell = _SINCE.get(ts)
    if cell is None:
        if len(_SINCE) >= _CACHE_LIMIT:
            _SINCE.clear()
        cell = _SINCE[ts] = Since(epoch(ts))
    return cell


# ---------------------------------------------------------------------------------------------
# Columns


def col(name: str, type_: str, description: str, *, priority: int = 0, fmt: str = "") -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}


NAME_COL = col("Name", "string", "Name of the object, unique within its namespace.", fmt="name")
AGE_COL = col("Age", "string", "Time since the object was created (metadata.creationTimestamp).")
CREATED_AT_COL = col("Created At", "date", "When the object was created (metadata.creationTimestamp).")


def name_age(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), since(meta.get("creationTimestamp"))]


def name_created_at(o: Obj) -> list[Any]:
    """The row of kube-apiserver's default table convertor: the name and the creation time in RFC 3339
    (UTC, whole seconds; Go's zero time when unset)."""
    meta = o.get("metadata") or E
    t = epoch(meta.get("creationTimestamp"))
    stamp = ("0001-01-01T00:00:00Z" if t is None
             else datetime.fromtimestamp(int(t), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return [meta.get("name", ""), stamp]


# ---------------------------------------------------------------------------------------------
# Shared cell formats


def go_bool(value: Any) -> str:
    """`printBoolPtr`: "True", "False" or "<unset>" for a missing pointer."""
    if value is None:
        return "<unset>"
    return "True" if value else "False"


def format_labels(labels: Any) -> str:
    """`labels.FormatLabels`: "k=v" pairs sorted by key, "<none>" when empty."""
    if not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def containers_images(pod_spec: Obj) -> tuple[str, str]:
    """`layoutContainerCells` of a pod spec's containers: names and images, comma-separated."""
    containers = pod_spec.get("containers") or ()
    return (",".join(c.get("name") or "" for c in containers),
            ",".join(c.get("image") or "" for c in containers))


CONTAINERS_COL = col("Containers", "string", "Names of the containers in the pod template.", priority=1)
IMAGES_COL = col("Images", "string", "Images of the containers in the pod template.", priority=1)


def replicas_row(o: Obj, *, selector: str) -> list[Any]:
    """Name, desired, current, ready, age, containers, images, selector: the row of a ReplicaSet and of a
    ReplicationController (whose selectors print differently)."""
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    status = o.get("status") or E
    replicas = spec.get("replicas")
    names, images = containers_images((spec.get("template") or E).get("spec") or E)
    return [meta.get("name", ""), 1 if replicas is None else replicas, status.get("replicas") or 0,
            status.get("readyReplicas") or 0, since(meta.get("creationTimestamp")), names, images, selector]


def _selector_key(sel: Any) -> Any:
    """A hashable rendering of a metav1.LabelSelector (for memoising its string form)."""
    if sel is None:
        return None
    labels = sel.get("matchLabels") or E
    exprs = sel.get("matchExpressions") or ()
    return (tuple(labels.items()),
            tuple((e.get("key"), e.get("operator"), tuple(e.get("values") or ())) for e in exprs))


def _selector_from_key(key: Any) -> dict[str, Any] | None:
    if key is None:
        return None
    labels, exprs = key
    return {"matchLabels": dict(labels),
            "matchExpressions": [{"key": k, "operator": op, "values": list(v)} for k, op, v in exprs]}


@lru_cache(maxsize=4096)
def _selector_text(key: Any) -> str:
    try:
        return str(selectors.from_label_selector_object(_selector_from_key(key)))
    except BadRequest:
        return "<invalid>"


@lru_cache(maxsize=4096)
def _selector_format(key: Any) -> str:
    return selectors.to_string(_selector_from_key(key))


def selector_text(sel: Any) -> str:
    """`LabelSelectorAsSelector(sel).String()`, "<invalid>" on error (the Deployment printer's form)."""
    return _selector_text(_selector_key(sel))


def selector_format(sel: Any) -> str:
    """`metav1.FormatLabelSelector(sel)`: "<none>" for everything or nothing, "<error>" when invalid."""
    return _selector_format(_selector_key(sel))
