"""The fields Go's JSON encoder always writes, filled into a JSON object as kube-apiserver's round trip
through the typed struct does.

kube-apiserver decodes every write into its Go struct and encodes what it stores and returns from that
struct, so a struct field without `omitempty` is always there: `status.nodeInfo.kubeProxyVersion: ""` of
a Node whose kubelet no longer sets it, `resources: {}` of a container, `status: {}` of a new object.
Typed clients (kubernetes' `V1NodeSystemInfo`, lightkube's models) and strict schema checks treat those
fields as required. `fill` adds, in place, each such field a present struct lacks, with its zero value
(`table.Message.zero`): strings, numbers, booleans, a zero Quantity or IntOrString, and nested non-pointer
structs, recursively through present lists, maps and pointers. Zero values that Go writes as `null`
(a nil slice, map or pointer without `omitempty`, a zero Time, RawExtension...) are left out: absent and
null read the same to clients, and a strict schema refuses the null. Pure; the table loads on first use.
"""

from __future__ import annotations

import functools
from typing import Any

from cp.protobuf import table

# One step of a message's plan: (json name, zero value or sub-message to fill, sub-message to walk into
# when present, how: 0 single, 1 list items, 2 map values). A message is filled with its own plan.
_SINGLE, _LIST, _MAP = range(3)
_Plan = tuple[tuple[tuple[str, Any], ...], tuple[tuple[str, str, int], ...]]


@functools.cache
def _plan(message: str) -> _Plan:
    """What to add to (zero entries that are not null) and where to descend in a `message` object."""
    messages = table.messages()
    compiled = messages[message]
    adds = tuple((name, value) for name, value in compiled.zero if value is not None)
    walks: list[tuple[str, str, int]] = []

    def collect(msg: table.Message) -> None:
        for field in msg.order:
            if field.inline:
                collect(messages[field.message])
            elif field.kind == table.MSG and not field.wrapper:
                walks.append((field.name, field.message, _LIST if field.repeated else _MAP if field.map
                              else _SINGLE))

    collect(compiled)
    return adds, tuple(walks)


def _fill(obj: dict[str, Any], message: str) -> None:
    adds, walks = _plan(message)
    for name, value in adds:
        if isinstance(value, table.Message):
            if obj.get(name) is None:  # absent, or null (Go decodes null into a struct as its zero)
                obj[name] = {}
                _fill(obj[name], value.name)  # walked below otherwise
        elif name not in obj:
            obj[name] = value
    for name, sub, how in walks:
        present = obj.get(name)
        if present is None:
            continue
        if how == _SINGLE:
            if isinstance(present, dict):
                _fill(present, sub)
        elif how == _LIST:
            if isinstance(present, list):
                for item in present:
                    if isinstance(item, dict):
                        _fill(item, sub)
        elif isinstance(present, dict):
            for item in present.values():
                if isinstance(item, dict):
                    _fill(item, sub)


def fill(obj: dict[str, Any], *, api_version: str, kind: str, only: str = "") -> None:
    """Add to `obj` (in place) the fields Go always writes for its kind; kinds without a message (the
    sandbox's own, custom resources) are left as they are. `only`: just that top-level field's
    object (e.g. the `status` a strategy has just reset; the rest was filled already)."""
    message = table.message_for(api_version=api_version, kind=kind)
    if message is None:
        return
    if not only:
        _fill(obj, message)
        return
    part = obj.get(only)
    if isinstance(part, dict):
        for name, sub, how in _plan(message)[1]:
            if name == only and how == _SINGLE:
                _fill(part, sub)
