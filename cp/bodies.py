"""Request bodies, bounded: how large one may be, raw and once decoded, and the one YAML decoder.

kube-apiserver reads at most `MaxRequestBodyBytes` (3 MiB) of a request body: twice what etcd stores of
one object (1.5 MiB), since a JSON body is larger than the protobuf it is stored as. The same 3 MiB bound
what a body may decode to here. A small body can still decode into something huge, so every decoder
bounds what it produces by `MAX_BYTES` of JSON before it builds it:

- YAML (`decode_yaml`, the decoder of create/update bodies and of server-side apply bodies): aliases
  let 1 KB name gigabytes (`a1: &a1 [*a0, *a0, ...]`, nine levels). PyYAML shares an aliased node by
  reference, so the blow-up comes later, when anything walks or encodes the result; the composed node
  graph is therefore measured before a single Python value is constructed: one walk in document order
  with memoised expanded sizes (a DAG costs its number of nodes, not its expansion) that applies
  go-yaml's alias-ratio rule (400 "yaml: document contains excessive aliasing"), refuses an alias inside
  its own anchor (400 "yaml: anchor 'a' value contains itself"; PyYAML would build a cyclic value) and
  an expanded document of more than `MAX_BYTES` of JSON (413);
- JSON cannot expand (its decoded JSON is itself), so the raw bound covers it;
- protobuf (`cp.protobuf`), JSON-patch `copy` operations and patched objects (`cp.patching`) use
  `too_large` / `check_encoded_size` from here.

Pure; PyYAML is imported on the first YAML body (it costs start-up time).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

import msgspec

from cp import errors

if TYPE_CHECKING:
    import yaml

MAX_BYTES = 3 * 1024 * 1024  # kube-apiserver's MaxRequestBodyBytes: a raw body, and what one decodes to
# A YAML or protobuf body larger than this is decoded off the event loop (`api.codec.off_loop`): PyYAML
# needs seconds for a few MiB of small nested values.
LARGE_BYTES = 64 * 1024

# go-yaml's alias-ratio rule (its decoder's `allowedAliasRatio`): up to 400,000 decoded nodes, 99 % of
# them may come from alias expansion; from 4,000,000 on, 10 %; linearly in between. A document is
# judged only once more than 100 of its decoded nodes came from aliases and more than 1000 were decoded.
_RATIO_LOW_NODES = 400_000
_RATIO_HIGH_NODES = 4_000_000
_RATIO_AT_LOW = 0.99
_RATIO_AT_HIGH = 0.10
_RATIO_MIN_ALIASED = 100
_RATIO_MIN_DECODED = 1000

_STR_TAG = "tag:yaml.org,2002:str"
_ANCHOR = re.compile(r"(?:![^\s&]*\s+)?&([^\s,\[\]{}]+)")


def too_large(what: str) -> errors.RequestEntityTooLarge:
    """413 in the shape of kube-apiserver's size errors: `Request entity too large: <what>, limit is N`."""
    return errors.RequestEntityTooLarge(f"Request entity too large: {what}, limit is {MAX_BYTES}")


def check_encoded_size(value: Any, *, what: str) -> None:
    """413 when `value` encodes to more than `MAX_BYTES` of JSON (`what` names it in the message).

    For values whose size is bounded already (a patched object: its parts are bounded), so one C-speed
    encode is the cheap and exact measure."""
    size = len(msgspec.json.encode(value))
    if size > MAX_BYTES:
        raise too_large(f"{what} is {size} bytes")


def decode_yaml(body: bytes, *, error_prefix: str) -> Any:
    """Decode one YAML document (JSON is YAML) into JSON-shaped values, with bounded work and memory.

    As `sigs.k8s.io/yaml` does: timestamps stay strings, mapping keys become strings, `!!binary` is base64
    text; aliased values are copies in the result (it shares nothing, so it can be edited in place).
    Raises `errors.BadRequest` (`error_prefix` + the problem) for malformed YAML and for excessive or
    recursive aliasing, and `errors.RequestEntityTooLarge` when the document expands to more than
    `MAX_BYTES` of JSON. An empty document is None.
    """
    if body.lstrip()[:1] in (b"{", b"["):  # JSON (which YAML includes), as kubectl sends: no YAML parser
        try:
            return msgspec.json.decode(body)
        except msgspec.DecodeError:
            pass  # YAML's flow style, or not valid at all: the YAML parser says which
    import yaml

    try:
        loader = _loader()(body)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_expansion(node, body=body, error_prefix=error_prefix)
            data = loader.construct_document(node)
        finally:
            loader.dispose()
        # One C-speed round trip through JSON: aliased values become copies, `!!binary` bytes base64.
        return msgspec.json.decode(msgspec.json.encode(data))
    except yaml.YAMLError as exc:
        raise errors.BadRequest(f"{error_prefix}{exc}") from None
    except (UnicodeDecodeError, ValueError, TypeError, msgspec.EncodeError) as exc:
        raise errors.BadRequest(f"{error_prefix}{exc}") from None


@functools.cache
def _loader() -> type[yaml.CSafeLoader]:
    import yaml

    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc]
        """Safe loading, JSON-shaped: timestamps stay strings and mapping keys are strings."""

        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[str, Any]:
            # SafeConstructor's, with each key made a string before it goes in: `1` and `true` are
            # two keys, not one (1 == True in Python).
            self.flatten_mapping(node)  # `<<` merge keys
            mapping: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, Hashable):
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark, "found unhashable key",
                        key_node.start_mark)
                mapping[_json_key(key)] = self.construct_object(value_node, deep=deep)
            return mapping

    Loader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))
    return Loader


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


def _excessive(decoded: int, aliased: int) -> bool:
    """go-yaml's rule: too large a share of the decoded nodes came from alias expansion."""
    if aliased <= _RATIO_MIN_ALIASED or decoded <= _RATIO_MIN_DECODED:
        return False
    if decoded <= _RATIO_LOW_NODES:
        allowed = _RATIO_AT_LOW
    elif decoded >= _RATIO_HIGH_NODES:
        allowed = _RATIO_AT_HIGH
    else:
        allowed = _RATIO_AT_LOW - (_RATIO_AT_LOW - _RATIO_AT_HIGH) * (
            (decoded - _RATIO_LOW_NODES) / (_RATIO_HIGH_NODES - _RATIO_LOW_NODES))
    return aliased / decoded > allowed


def _check_expansion(root: yaml.Node, *, body: bytes, error_prefix: str) -> None:
    """Walk the composed graph as go-yaml decodes the document, without expanding anything.

    Document order, depth first, iteratively (nesting is bounded by libyaml, not by Python's stack). The
    first visit of a node is its definition; a later visit of the same node object is an alias, whose
    expanded node count and JSON size were memoised when its definition ended. go-yaml counts a node
    decoded at every visit and checks the alias ratio at each; within an alias expansion the ratio only
    grows and the allowed ratio only shrinks, so checking at the end of each expansion is the same rule.
    An alias met while its own definition is still open is recursive. Aliases of scalars are not
    memoised (they cannot amplify; a scalar is measured where it stands), which keeps the memo to the
    collections of the document.
    """
    import yaml

    mapping_node, sequence_node = yaml.MappingNode, yaml.SequenceNode
    done: dict[int, tuple[int, int]] = {}  # collection id -> (expanded nodes, expanded JSON bytes)
    open_ids: set[int] = set()
    decoded = aliased = 0
    # The collections being walked: [node, children, next child, nodes so far, JSON bytes so far].
    frames: list[list[Any]] = []

    def enter(node: yaml.Node) -> tuple[int, int] | None:
        """Count a visit; the node's (nodes, JSON bytes) when known at once, None when a frame was opened."""
        nonlocal decoded, aliased
        key = id(node)
        measured = done.get(key)
        if measured is not None:  # an alias: the alias node, then its expansion
            decoded += 1 + measured[0]
            aliased += measured[0]
            if _excessive(decoded, aliased):
                raise errors.BadRequest(f"{error_prefix}yaml: document contains excessive aliasing")
            return measured
        if key in open_ids:
            raise errors.BadRequest(f"{error_prefix}{_recursion(node, body)}")
        decoded += 1
        if aliased > _RATIO_MIN_ALIASED and _excessive(decoded, aliased):
            raise errors.BadRequest(f"{error_prefix}yaml: document contains excessive aliasing")
        if isinstance(node, sequence_node):
            kids = node.value
        elif isinstance(node, mapping_node):
            kids = [part for pair in node.value for part in pair]
        else:
            return 1, len(node.value) + (2 if node.tag == _STR_TAG else 0)
        open_ids.add(key)
        frames.append([node, kids, 0, 1, 1 + len(kids)])  # brackets, commas, a colon per mapping entry
        return None

    measured = enter(root)
    while True:
        if measured is not None:
            if measured[1] > MAX_BYTES:
                raise too_large(f"the YAML document expands to at least {measured[1]} bytes of JSON")
            if not frames:
                return
            parent = frames[-1]
            parent[3] += measured[0]
            parent[4] += measured[1]
        frame = frames[-1]
        kids = frame[1]
        if frame[2] < len(kids):
            frame[2] += 1
            measured = enter(kids[frame[2] - 1])
        else:
            frames.pop()
            key = id(frame[0])
            open_ids.discard(key)
            measured = done[key] = (frame[3], frame[4])


def _recursion(node: yaml.Node, body: bytes) -> str:
    """go-yaml's complaint about an alias inside its own anchor, naming the anchor when it can be read
    from the body where the node starts (its properties: an optional tag, then `&name`)."""
    found = _ANCHOR.match(body.decode("utf-8", "replace"), node.start_mark.index)
    return f"yaml: anchor '{found.group(1)}' value contains itself" if found else \
        "yaml: an anchor's value contains itself"
