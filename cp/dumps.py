"""Reading a cluster's dump as one starting state: the source behind `cplane log import --dump`.

A dump is a set of files (or directories of them, read recursively in sorted path order):

- `kubectl get ... -A -o yaml` and `-o json` output: a `List` (`v1 List`, or a typed `NodeList`,
  `PodList`... whose items may leave out apiVersion and kind: they are the list's kind without `List`),
  or single objects; a YAML file may hold several documents (`---`);
- `kubectl cluster-info dump` output: its directory (`nodes.json`, `<namespace>/pods.json`,
  `events.json`, `replication-controllers.json`, `services.json`, ..., one typed List each; the pods'
  `logs.txt` are skipped), or its single stream on stdout (the Lists' JSON documents one after another,
  with `==== START logs ... ====` / `==== END logs ... ====` blocks between them, which are skipped);
- kwok's snapshot (`kwokctl snapshot save --format k8s` / `kwokctl snapshot export`): YAML documents,
  one object each, whose resourceVersion, creationTimestamp and managedFields kwok cleared. The
  `ResourcePatch` documents `kwokctl snapshot record` appends after the snapshot (changes, not state)
  are not applied: they are counted with the kinds cplane does not serve.

In a directory only `*.json`, `*.yaml` and `*.yml` files are read; a file named on the command line is
read whatever its name. The format is told by the content: JSON when it starts with `{` and has no
`---` line, else YAML.

`changes` turns the objects into `cp.importing.Change`s in two passes over the files (one file held at
a time): first the CustomResourceDefinitions and Namespaces, then everything else in file order, so
that custom resources follow their definitions and namespaced objects their namespace. Each change is
made by user `import`, with the field manager of the object's newest managedFields entry and the
source's resourceVersion.

Times: a dump is one state, not a history, but the log's event times must grow with its revisions
(`--at-time` and replay's clock rely on it). An event's time is its object's
metadata.creationTimestamp, raised to the previous event's time when it is earlier (dump order is not
creation order); an object without one (kwok clears it) takes the previous event's time, or the dump
file's modification time for the first. The object keeps its own creationTimestamp unchanged.

Memory: a file's text is read whole (JSON documents are decoded whole); kubectl's `-o yaml` List
(its `items:` entries at column 0) is parsed one item at a time, other YAML one document at a time.

Malformed input raises `DumpError` naming the file and line (and the YAML document's index). Pure but
for reading the files.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import yaml

from cp import clock, importing

USER = "import"
SUFFIXES = (".json", ".yaml", ".yml")
# Read in the first pass: what other objects need to exist first.
FIRST = frozenset({("apiextensions.k8s.io", "CustomResourceDefinition"), ("", "Namespace")})
_YAML_SEPARATOR = re.compile(r"^---[ \t]*$", re.MULTILINE)  # YAML documents, even if written as JSON
_LOG_START, _LOG_END = "==== START logs for container ", "==== END logs for container "


class DumpError(ValueError):
    """Input that is not a dump: `file` and `line` (1-based; 0 when unknown) say where."""

    def __init__(self, message: str, *, file: str, line: int) -> None:
        super().__init__(f"{file}:{line}: {message}" if line else f"{file}: {message}")
        self.file = file
        self.line = line


class Located(msgspec.Struct, frozen=True, kw_only=True):
    """One object of a dump and where it is: `line` is 1-based, `document` the YAML document's
    1-based index (JSON: the JSON document's)."""

    object: dict[str, Any]
    file: str
    line: int
    document: int


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML 1.1 as kubectl writes it, but an unquoted timestamp stays a string (as Kubernetes reads it)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def files(paths: Sequence[Path]) -> list[Path]:
    """The files to read: each file named, and each directory's dump files, recursively, sorted.
    Raises `DumpError` for a path that does not exist."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = [p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES]
            out.extend(sorted(found))
        elif path.is_file():
            out.append(path)
        else:
            raise DumpError("no such file or directory", file=str(path), line=0)
    return out


def objects(path: Path, *, only_first: bool = False) -> Iterator[Located]:
    """The objects of one dump file, Lists opened, in file order; with `only_first`, only the kinds
    of the first pass (`FIRST`), skipping unread the text that cannot hold one."""
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DumpError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=name, line=0) from None
    if only_first and not _may_hold_first(text):
        return
    if _LOG_START in text:
        text = _without_logs(text)
    if text.lstrip().startswith("{") and not _YAML_SEPARATOR.search(text):
        found = _json_objects(text, name)
    else:
        found = _kubectl_yaml_list(text, name, only_first=only_first) or _yaml_objects(text, name)
    for located in found:
        if not only_first or _group_kind(located.object) in FIRST:
            yield located


def _may_hold_first(text: str) -> bool:
    return "Namespace" in text or "CustomResourceDefinition" in text


def _without_logs(text: str) -> str:
    """`kubectl cluster-info dump` stdout without its pods' log blocks (their lines left empty, so that
    positions stay those of the file)."""
    lines = text.split("\n")
    inside = False
    for i, line in enumerate(lines):
        if line.startswith(_LOG_START):
            inside = True
        if inside:
            if line.startswith(_LOG_END):
                inside = False
            lines[i] = ""
    return "\n".join(lines)


def _json_objects(text: str, name: str) -> Iterator[Located]:
    decoder = json.JSONDecoder()
    pos, document = 0, 0
    end = len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos >= end:
            return
        line = text.count("\n", 0, pos) + 1
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise DumpError(f"invalid JSON: {exc.msg} (column {exc.colno})", file=name, line=exc.lineno) from None
        document += 1
        yield from _opened(doc, name=name, line=line, document=document, lines=None)


def _yaml_objects(text: str, name: str) -> Iterator[Located]:
    loader = _Loader(text)
    document = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            document += 1
            line = node.start_mark.line + 1
            doc = loader.construct_document(node)
            if doc is None:
                continue
            yield from _opened(doc, name=name, line=line, document=document, lines=_item_lines(node))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = mark.line + 1 if mark is not None else 0
        raise DumpError(f"document {document + 1}: invalid YAML: {exc.problem or exc.context}", file=name,
                        line=where) from None
    except yaml.YAMLError as exc:
        raise DumpError(f"document {document + 1}: invalid YAML: {exc}", file=name, line=0) from None
    finally:
        loader.dispose()


def _kubectl_yaml_list(text: str, name: str, *, only_first: bool) -> Iterator[Located] | None:
    """kubectl's `-o yaml` List read one item at a time (bounded memory, and each item's own line),
    or None when `text` is not laid out so: one document whose `items:` entries start at column 0."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.rstrip() == "items:"]
    separators = [i for i, line in enumerate(lines) if _YAML_SEPARATOR.match(line)]
    if len(starts) != 1 or any(line.strip() for i in separators for line in lines[:i]):
        return None  # not one document (a `---` after the start)
    begin = starts[0] + 1
    if begin >= len(lines) or not lines[begin].startswith("-"):
        return None
    end = begin
    while end < len(lines) and (lines[end][:1] in ("-", " ", "#", "\n", "\r") or not lines[end].strip()):
        end += 1
    header_text = "".join(line if not begin - 1 <= i < end else "\n" for i, line in enumerate(lines))
    header = next(_yaml_objects(header_text, name), None)
    kind = header.object.get("kind") if header is not None else None
    if header is None or not isinstance(kind, str) or not kind.endswith("List") or "items" in header.object:
        return None
    return _kubectl_yaml_items(lines, begin, end, header.object, name, only_first=only_first)


def _kubectl_yaml_items(lines: list[str], begin: int, end: int, header: dict[str, Any], name: str, *,
                        only_first: bool) -> Iterator[Located]:
    entry = [i for i in range(begin, end) if lines[i].startswith("-")] + [end]
    for n, (first, stop) in enumerate(itertools.pairwise(entry)):
        head = lines[first]
        chunk = "".join([" " + head[1:] if head[1:2] == " " else "\n", *lines[first + 1:stop]])
        if only_first and not _may_hold_first(chunk):
            continue
        loader = _Loader(chunk)
        try:
            item = loader.get_single_data()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = first + mark.line + 1 if mark is not None else first + 1
            raise DumpError(f"document 1: item {n}: invalid YAML: {exc.problem or exc.context}", file=name,
                            line=where) from None
        except yaml.YAMLError as exc:
            raise DumpError(f"document 1: item {n}: invalid YAML: {exc}", file=name, line=first + 1) from None
        finally:
            loader.dispose()
        yield _list_item(header, item, index=n, name=name, line=first + 1, document=1)


def _item_lines(node: yaml.Node) -> list[int] | None:
    """The 1-based lines of a List document's items."""
    if not isinstance(node, yaml.MappingNode):
        return None
    for key, value in node.value:
        if isinstance(key, yaml.ScalarNode) and key.value == "items" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return None


def _opened(doc: Any, *, name: str, line: int, document: int, lines: list[int] | None) -> Iterator[Located]:
    where = f"document {document}: "
    if not isinstance(doc, dict):
        raise DumpError(f"{where}not an object (a {type(doc).__name__})", file=name, line=line)
    kind = doc.get("kind")
    items = doc.get("items") or []  # an empty typed list's items are null (cluster-info dump)
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        if not isinstance(items, list):
            raise DumpError(f"{where}{kind}.items is not a list", file=name, line=line)
        for i, item in enumerate(items):
            at = lines[i] if lines is not None and i < len(lines) else line
            yield _list_item(doc, item, index=i, name=name, line=at, document=document)
        return
    yield Located(object=doc, file=name, line=line, document=document)


def _list_item(header: dict[str, Any], item: Any, *, index: int, name: str, line: int, document: int) -> Located:
    """Item `index` of a List: a typed list's items (cluster-info dump) take its kind without `List`."""
    if not isinstance(item, dict):
        raise DumpError(f"document {document}: item {index}: not an object", file=name, line=line)
    kind = str(header.get("kind"))
    if kind != "List" and not item.get("kind"):
        item = {"apiVersion": header.get("apiVersion"), "kind": kind[:-len("List")], **item}
    return Located(object=item, file=name, line=line, document=document)


def _group_kind(obj: dict[str, Any]) -> tuple[str, str]:
    return str(obj.get("apiVersion") or "").rpartition("/")[0], str(obj.get("kind") or "")


def ordered(paths: Sequence[Path]) -> Iterator[Located]:
    """Every object of the dump files, CustomResourceDefinitions and Namespaces first (two passes)."""
    for first in (True, False):
        for path in paths:
            for located in objects(path, only_first=first):
                if first or _group_kind(located.object) not in FIRST:
                    yield located


def manager(obj: dict[str, Any]) -> str:
    """The field manager of the object's newest managedFields entry (the last of equal times)."""
    entries = (obj.get("metadata") or {}).get("managedFields")
    best, best_time = "", ""
    if isinstance(entries, list):
        for entry in entries:
            if isinstance(entry, dict) and isinstance(entry.get("manager"), str):
                when = str(entry.get("time") or "")
                if when >= best_time:
                    best, best_time = entry["manager"], when
    return best


def created(obj: dict[str, Any]) -> float | None:
    """metadata.creationTimestamp as unix seconds, or None (absent or unreadable)."""
    meta = obj.get("metadata")
    text = meta.get("creationTimestamp") if isinstance(meta, dict) else None
    if not isinstance(text, str) or not text:
        return None
    try:
        return clock.parse_time(text)
    except ValueError:
        return None


def changes(located: Iterable[Located], *, start: float) -> Iterator[tuple[Located, importing.Change]]:
    """Each object as a `Change` (see the module for its time; `start` is the time of a first object
    without a creationTimestamp)."""
    last: float | None = None
    for item in located:
        obj = item.object
        when = created(obj)
        if when is None:
            when = last if last is not None else start
        elif last is not None and when < last:
            when = last
        last = when
        meta = obj.get("metadata")
        version = meta.get("resourceVersion") if isinstance(meta, dict) else None
        yield item, importing.Change(object=obj, time=when, user=USER, field_manager=manager(obj),
                                     source=str(version) if version else "")


def events(paths: Sequence[Path], sequencer: importing.Sequencer) -> Iterator[importing.Event]:
    """The dump's objects numbered by `sequencer` as the log's events. Raises `DumpError`."""
    start = min((os.stat(p).st_mtime for p in paths), default=0.0)
    for item, change in changes(ordered(paths), start=start):
        try:
            yield from sequencer.feed(change)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:  # ImportError_, or a conversion's
            raise DumpError(f"document {item.document}: {exc}", file=item.file, line=item.line) from None
