"""Field paths and field sets in the managedFields `FieldsV1` shape (sigs.k8s.io/structured-merge-diff
`fieldpath`), as plain nested dicts.

A set is a trie whose keys are serialized path elements:

- `f:<name>`            a field of a struct or a key of a map
- `k:{"name":"c"}`      an item of an associative list, by its key fields (sorted by name, JSON values)
- `v:<json>`            an item of a set (a list of scalars), by value
- `i:<n>`               an item of a list, by index (never produced for the served kinds)

A node is itself a dict of child elements. A node stands for a member of the set (the path ending there)
when it is empty or holds the key `"."`; a node with children but no `"."` only leads to members below
it. The root dict is never a member. This is exactly the JSON of `FieldsV1`, so sets read from stored
objects are used as they are. Sets are treated as immutable values: operations build new dicts and may
share untouched subtrees with their inputs.

Pure; no I/O.
"""

from __future__ import annotations

import decimal
import functools
import math
from collections.abc import Iterator
from typing import Any

import msgspec

Set = dict[str, Any]
SELF = "."

_encode = msgspec.json.encode
_decode = msgspec.json.decode
_encode_sorted = msgspec.json.Encoder(order="sorted").encode


# ---------------------------------------------------------------------------------------------------------
# JSON as Go writes it (jsoniter ConfigCompatibleWithStandardLibrary / encoding/json)


def _go_float(f: float) -> str:
    """strconv.FormatFloat as encoding/json uses it: 'f' form, 'e' form below 1e-6 or from 1e21 on."""
    if math.isnan(f) or math.isinf(f):
        raise ValueError(f"unsupported value: {f!r}")
    a = abs(f)
    if a != 0 and (a < 1e-6 or a >= 1e21):
        mant, _, exp = repr(f).partition("e")
        sign, digits = exp[0], exp[1:].lstrip("0") or "0"
        if sign == "+" and len(digits) < 2:
            digits = digits.rjust(2, "0")
        return f"{mant}e{sign}{digits}"
    s = format(decimal.Decimal(repr(f)), "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def _escape_html(b: bytes) -> str:
    s = b.decode()
    if "<" in s or ">" in s or "&" in s or "\u2028" in s or "\u2029" in s:
        s = (s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
             .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
    return s


def _floats_to_go(v: Any) -> Any:
    if isinstance(v, float):
        return msgspec.Raw(_go_float(v).encode())
    if isinstance(v, dict):
        return {k: _floats_to_go(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_floats_to_go(x) for x in v]
    return v


def go_json(v: Any, *, sort_keys: bool = False) -> str:
    """JSON as Go's encoding/json writes it: HTML characters escaped, floats in Go's shortest form."""
    if isinstance(v, (dict, list, float)):
        v = _floats_to_go(v)
    return _escape_html(_encode_sorted(v) if sort_keys else _encode(v))


# ---------------------------------------------------------------------------------------------------------
# Path elements


def key_element(item: dict[str, Any], keys: tuple[str, ...],
                defaults: dict[str, Any] | None = None) -> str | None:
    """`k:{...}` of an associative-list item: its key fields present (or defaulted), sorted by name.
    None when the item has none of them."""
    pairs = []
    for k in keys:
        if k in item:
            pairs.append((k, item[k]))
        elif defaults and k in defaults:
            pairs.append((k, defaults[k]))
    if not pairs:
        return None
    if len(pairs) > 1:
        pairs.sort(key=lambda p: p[0])
    if len(pairs) == 1:
        k, v = pairs[0]
        if isinstance(v, str) and v.isalnum() and k.isalnum():  # the common case, without an encoder call
            return 'k:{"' + k + '":"' + v + '"}'
        if type(v) is int and k.isalnum():
            return 'k:{"' + k + '":' + str(v) + "}"
    return "k:" + go_json(dict(pairs))


def value_element(v: Any) -> str:
    if isinstance(v, str) and v.isalnum():
        return 'v:"' + v + '"'
    return "v:" + go_json(v)


def parse_element(pe: str) -> tuple[str, Any]:
    """("f", name) | ("k", [(name, value), ...]) | ("v", value) | ("i", int); ValueError if malformed."""
    if len(pe) < 2 or pe[1] != ":":
        raise ValueError(f"missing colon: {pe}" if len(pe) >= 2 else "key must be 2 characters long:")
    t = pe[0]
    rest = pe[2:]
    if t == "f":
        return "f", rest
    if t == "k":
        try:
            obj = _decode(rest)
        except msgspec.DecodeError as exc:
            raise ValueError(str(exc)) from None
        if not isinstance(obj, dict):
            raise ValueError(f"expected an object in {pe}")
        return "k", sorted(obj.items(), key=lambda p: p[0])
    if t == "v":
        try:
            return "v", _decode(rest)
        except msgspec.DecodeError as exc:
            raise ValueError(str(exc)) from None
    if t == "i":
        try:
            return "i", int(rest)
        except ValueError:
            raise ValueError(f"invalid index in {pe}") from None
    raise ValueError("unknown path element type")


def _value_rank(v: Any) -> tuple[Any, ...]:
    """value.Compare's total order: numbers, strings, bools, lists, maps, null."""
    if isinstance(v, bool):
        return (2, v)
    if isinstance(v, (int, float)):
        return (0, v)
    if isinstance(v, str):
        return (1, v.encode())
    if isinstance(v, list):
        return (3, tuple(_value_rank(x) for x in v))
    if isinstance(v, dict):
        return (4, tuple((k.encode(), _value_rank(x)) for k, x in sorted(v.items())))
    return (5,)


@functools.lru_cache(maxsize=8192)
def _sort_key(pe: str) -> tuple[Any, ...]:
    if pe == SELF:
        return (0,)
    try:
        t, v = parse_element(pe)
    except ValueError:
        return (9, pe)
    if t == "f":
        return (1, v.encode())
    if t == "k":
        return (2, tuple((k.encode(), _value_rank(x)) for k, x in v))
    if t == "v":
        return (3, _value_rank(v))
    return (4, v)


def sorted_level(d: Set) -> Set:
    """One level of a set with its keys in upstream's order ("." first, then `PathElement.Compare`):
    plain string order for fields, parsed order for list items."""
    if len(d) < 2:
        return d
    keys = list(d)
    for k in keys:
        if k[0] != "f" and k != SELF:
            keys.sort(key=_sort_key)
            break
    else:
        keys.sort()
    return {k: d[k] for k in keys}


def canonical(s: Set) -> Set:
    """The set with its keys in upstream's serialization order at every level. The operations of this
    module keep sets in that order, so only sets read from requests need this."""
    if not s:
        return s
    out = sorted_level(s)
    return {k: (canonical(n) if n else n) for k, n in out.items()}


# ---------------------------------------------------------------------------------------------------------
# Set operations (on the children of a node; the root is a children dict)


def is_member(node: Set) -> bool:
    return not node or SELF in node


def _make(member: bool, children: Set) -> Set | None:
    if children:
        return {SELF: {}, **children} if member else children
    return {} if member else None


def union(a: Set, b: Set) -> Set:
    if not b or a is b:
        return a
    if not a:
        return b
    if len(b) > len(a):
        a, b = b, a  # walk the smaller one
    out: Set | None = None
    added = False
    for k, bn in b.items():
        an = a.get(k)
        if an is None:
            if out is None:
                out = dict(a)
            out[k] = bn
            added = True
            continue
        if an is bn or k == SELF:
            continue
        if not an:
            nn = bn if SELF in bn or not bn else {SELF: {}, **bn}
        elif not bn:
            nn = an if SELF in an else {SELF: {}, **an}
        else:
            nn = union(an, bn)
        if nn is not an:
            if out is None:
                out = dict(a)
            out[k] = nn
    if out is None:
        return a
    return sorted_level(out) if added else out


def difference(a: Set, b: Set) -> Set:
    """Paths of `a` that are not paths of `b` (exact paths: children of a path of `b` stay).
    Returns `a` itself when nothing is taken away."""
    if not a or not b:
        return a
    out = a
    for k, bn in b.items():
        if k == SELF:
            continue
        an = a.get(k)
        if an is None:
            continue
        nn = _diff_node(an, bn)
        if nn is an:
            continue
        if out is a:
            out = dict(a)
        if nn is None:
            del out[k]
        else:
            out[k] = nn
    return out


def _diff_node(an: Set, bn: Set) -> Set | None:
    b_member = not bn or SELF in bn
    if not an:  # a leaf member
        return None if b_member else an
    sub = difference(an, bn) if bn else an
    if b_member and SELF in sub:
        sub = {k: v for k, v in sub.items() if k != SELF}
        return sub or None
    if len(sub) == 1 and SELF in sub:
        return {}
    return sub or None


def recursive_difference(a: Set, b: Set) -> Set:
    """Paths of `a` that are neither paths of `b` nor below one."""
    if not a or not b:
        return a
    out: Set = {}
    for k, an in a.items():
        if k == SELF:
            continue
        bn = b.get(k)
        if bn is None:
            out[k] = an
            continue
        if not bn or SELF in bn:
            continue
        node = _make(not an or SELF in an, recursive_difference(an, bn) if an else {})
        if node is not None:
            out[k] = node
    return out


def intersection(a: Set, b: Set) -> Set:
    if not a or not b:
        return {}
    if len(b) < len(a):
        small, big = b, a
    else:
        small, big = a, b
    out: Set = {}
    for k, sn in small.items():
        if k == SELF:
            continue
        bn = big.get(k)
        if bn is None:
            continue
        member = (not sn or SELF in sn) and (not bn or SELF in bn)
        sub = intersection(sn, bn) if sn and bn else {}
        node = _make(member, sub)
        if node is not None:
            out[k] = node
    return out


def _children(node: Set) -> Set:
    if SELF in node:
        return {k: v for k, v in node.items() if k != SELF}
    return dict(node)


def is_empty(s: Set) -> bool:
    return not s


def has(s: Set, path: tuple[str, ...]) -> bool:
    node: Set | None = None
    cur = s
    for pe in path:
        node = cur.get(pe)
        if node is None:
            return False
        cur = node
    return node is not None and is_member(node)


def paths(s: Set, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every member path, in canonical order."""
    for k in sorted(s, key=_sort_key):
        if k == SELF:
            continue
        n = s[k]
        p = (*prefix, k)
        if not n or SELF in n:
            yield p
        if n:
            yield from paths(n, p)


def from_paths(items: list[tuple[str, ...]]) -> Set:
    """The set of the given member paths."""
    tree: dict[str, Any] = {}  # pe -> [member, children]
    for p in items:
        cur = tree
        for i, pe in enumerate(p):
            node = cur.setdefault(pe, [False, {}])
            if i == len(p) - 1:
                node[0] = True
            cur = node[1]

    def build(t: dict[str, Any]) -> Set:
        out: Set = {}
        for pe, (member, children) in t.items():
            node = _make(member, build(children))
            if node is not None:
                out[pe] = node
        return out

    return canonical(build(tree))


# ---------------------------------------------------------------------------------------------------------
# Validation and rendering


def validate(s: Any) -> Set:
    """Check a `fieldsV1` value read from a request and return it with key elements normalized
    (`k:` fields sorted, values re-encoded). ValueError when malformed."""
    if not isinstance(s, dict):
        raise ValueError("expected an object")
    out: Set = {}
    for k, n in s.items():
        if not isinstance(n, dict):
            raise ValueError(f"expected an object for {k}")
        if k == SELF:
            if n:
                raise ValueError('"." must map to an empty object')
            out[SELF] = {}
            continue
        t, v = parse_element(k)
        if t == "k":
            k = "k:" + go_json(dict(v))
        elif t == "v":
            k = "v:" + go_json(v)
        elif t == "i":
            k = f"i:{v}"
        out[k] = validate(n) if n else {}
    return out


def go_quote(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\x{o:02x}")
        elif not ch.isprintable() and o > 0x7F:
            out.append(f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def value_string(v: Any) -> str:
    """`value.ToString`: strings quoted as Go's %q, numbers and bools bare, null as null."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return go_quote(v)
    if isinstance(v, float):
        return _go_float(v)
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, list):
        return "[" + ",".join(value_string(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}={value_string(x)}" for k, x in sorted(v.items())) + "}"
    return str(v)


def element_string(pe: str) -> str:
    """`PathElement.String`: `.name`, `[name="c",port=80]`, `[="v"]`, `[3]`."""
    try:
        t, v = parse_element(pe)
    except ValueError:
        return "{{invalid path element}}"
    if t == "f":
        return "." + str(v)  # a field name: already a str
    if t == "k":
        return "[" + ",".join(f"{k}={value_string(x)}" for k, x in v) + "]"
    if t == "v":
        return "[=" + value_string(v) + "]"
    return f"[{v}]"


def path_string(path: tuple[str, ...]) -> str:
    return "".join(element_string(pe) for pe in path)
