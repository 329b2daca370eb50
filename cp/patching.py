"""PATCH bodies: JSON patch, JSON merge patch and Kubernetes strategic merge patch.

Pure functions over JSON-shaped values (dicts, lists, scalars); no I/O.

Content types (`apply_patch`; a `; charset=...` parameter is ignored, anything else is 415):

- `application/json-patch+json` (RFC 6902, via the `jsonpatch` library).
- `application/merge-patch+json` (RFC 7386).
- `application/strategic-merge-patch+json`: the apimachinery `strategicpatch` semantics, driven by the
  `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key` extensions of the 1.37 OpenAPI definitions
  (`cp.schemas`). Summary:
    * maps merge recursively and `null` deletes a key;
    * lists without a strategy are replaced; `merge` lists of maps merge by the merge key, lists of scalars
      (finalizers, podCIDRs) are unioned; an empty patch list leaves a `merge` list unchanged;
    * list items `{"$patch": "delete", <key>: v}` remove every element with that key, `{"$patch": "replace"}`
      makes the list exactly the other patch items; `$deleteFromPrimitiveList/<f>` removes scalars;
    * `$setElementOrder/<f>` orders the result; without it the order is upstream's: patch items in patch order,
      interleaved with the untouched items in their old order. Patch items that are new come first, so adding
      one container with a bare patch gives `[new, old...]`, exactly as kube-apiserver does;
    * `$retainKeys: [...]` drops the keys of the current map that are not listed;
    * `"$patch": "replace"` on a map replaces it; `"$patch": "delete"` on a map removes the field (upstream leaves
      an empty struct, which serialises the same for map fields and is defaulted for struct fields);
    * fields the schema does not know (or kinds without a schema) merge like a merge patch; lists are replaced.
  Where upstream's answer depends on Go map iteration order or slice aliasing (`$deleteFromPrimitiveList/f`
  together with additions to `f`; `$setElementOrder` together with `$patch: delete` items and server-only items
  missing from the order list), this module gives one deterministic answer: deletions from primitive lists come
  after additions, and server-only items keep their pre-patch positions.
  No directive ever reaches the result: values that arrive new (absent from the object, appended list items,
  replaced lists) are merged into an empty value too, which strips directives and nulls.
- `application/apply-patch+yaml` belongs to server-side apply, which lives elsewhere; only `apply_yaml_body`
  (parse the body) is here, and `apply_patch` refuses it with `ValueError` (a routing bug, not a client error).

Errors, as `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go`:

- unknown content type: 415 `UnsupportedMediaType`, listing the accepted types in upstream's order;
- a body that does not decode (or has the wrong JSON type): 400 `BadRequest`;
- a JSON patch whose operations fail (a `test` that does not match, a missing path, an unknown op): 422 with
  reason `Invalid` and upstream's generic message "the server rejected our request due to an error in our
  request" (kopf relies on the 422 for stale `resourceVersion` tests); the library's explanation is added as
  `details.causes[0].message`. More than 10000 operations: 413. `copy` operations that together duplicate
  more than `MAX_JSON_PATCH_COPY_BYTES` of JSON: 422 as any failed operation, with json-patch's
  "Unable to complete the copy, ..." explanation, before the copy that passes the limit is made;
- a patched object of more than `cp.bodies.MAX_BYTES` of JSON (what any body may decode to): 413;
- malformed strategic-merge directives: 400 with apimachinery's `mergepatch` messages ("invalid patch format of
  retainKeys", ...); lists of lists: 422 as upstream. Upstream answers some other malformed SMP bodies (unknown
  `$patch` value, a patch item without its merge key, `$setElementOrder` out of step with the patch list) with
  500 because they are untyped Go errors; here they are 400.

Copying: nothing passed in is mutated. `strategic_merge` and `json_merge_patch` share untouched subtrees of the
original with their result (copy-on-write); `apply_patch` additionally guarantees a fresh top-level dict and a
fresh `metadata` dict, so setting `metadata.resourceVersion` etc. on the result cannot alter `obj`. Deeper
in-place edits of the result must copy first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import jsonpatch
import msgspec

from cp import bodies, errors, schemas

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# Upstream's order (apiserver `installer.go`), which the 415 message lists.
PATCH_TYPES: tuple[str, ...] = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)

MAX_JSON_PATCH_OPERATIONS = 10000
# kube-apiserver's JSONPatchMaxCopyBytes, which it sets as evanphx/json-patch's AccumulatedCopySizeLimit:
# the most the `copy` operations of one JSON patch may add, in bytes of JSON, in total.
MAX_JSON_PATCH_COPY_BYTES = 3 * 1024 * 1024

_REJECTED = "the server rejected our request due to an error in our request"

# Strategic merge patch directives (apimachinery `strategicpatch/patch.go`).
_PATCH = "$patch"
_RETAIN_KEYS = "$retainKeys"
_SET_ORDER = "$setElementOrder"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList"
_STRATEGY = "x-kubernetes-patch-strategy"
_MERGE_KEY = "x-kubernetes-patch-merge-key"

# mergepatch error texts
_BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
_BAD_SET_ORDER = "invalid patch format of setElementOrder list"
_BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
_NO_LIST_OF_LISTS = "lists of lists are not supported"

_MISSING: Any = object()  # "no such key"
_NOKEY: Any = object()  # a list element without a (hashable) merge key value
_EMPTY: Mapping[str, Any] = {}


class PatchRejected(errors.Invalid):
    """422 `Invalid` with upstream's generic text (`errors.NewGenericServerResponse(422, ...)`).

    Raised when a JSON patch does not apply (failed `test`, missing path, ...), and for lists of lists in a
    strategic merge patch. `detail` says what went wrong and is also sent as `details.causes[0].message`.
    """

    def __init__(self, detail: str) -> None:
        errors.StatusError.__init__(self, _REJECTED, details={"causes": [{"message": detail}]})
        self.causes = []
        self.detail = detail


# ---------------------------------------------------------------------------------------------------------
# Entry points


def media_type(content_type: str) -> str:
    """The bare media type of a Content-Type header: parameters (`; charset=utf-8`) dropped, lowercased."""
    return content_type.split(";", 1)[0].strip().lower()


def unsupported_media_type() -> errors.UnsupportedMediaType:
    return errors.UnsupportedMediaType(
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(PATCH_TYPES))


def apply_patch(obj: dict[str, Any], patch_body: bytes, *, content_type: str, group: str, version: str,
                kind: str) -> dict[str, Any]:
    """Apply a PATCH body to `obj` (not mutated) and return the new object.

    `group`/`version`/`kind` name the object's type; the strategic merge patch reads its schema from them.
    Raises `errors.UnsupportedMediaType`, `errors.BadRequest`, `errors.Invalid` (`PatchRejected`) or
    `errors.RequestEntityTooLarge`. `APPLY_PATCH` is a `ValueError`: server-side apply is routed elsewhere.
    """
    mtype = media_type(content_type)
    if mtype == JSON_PATCH:
        out = _apply_json_patch(obj, patch_body)
    elif mtype == MERGE_PATCH:
        patch = _decode(patch_body, prefix="error decoding patch: ")
        if patch is None:
            raise errors.BadRequest("Invalid JSON Patch")
        if not isinstance(patch, dict):
            raise errors.BadRequest(f"error decoding patch: {_go_type_error(patch, 'map[string]interface {}')}")
        out = json_merge_patch(obj, patch)
    elif mtype == STRATEGIC_MERGE_PATCH:
        patch = _decode(patch_body, prefix="")
        if patch is None:  # Go decodes `null` into an empty map: a no-op
            patch = {}
        if not isinstance(patch, dict):
            raise errors.BadRequest(_go_type_error(patch, "map[string]interface {}"))
        out = strategic_merge(obj, patch, schema=schemas.schema_for(group, version, kind))
    elif mtype == APPLY_PATCH:
        raise ValueError("server-side apply bodies are not applied by cp.patching; parse them with "
                         "apply_yaml_body and hand them to server-side apply")
    else:
        raise unsupported_media_type()
    # Each kind of patch adds at most its body (and JSON patch its bounded copies) to the object; this
    # keeps what the store then defaults, validates and diffs to what a body may decode to.
    bodies.check_encoded_size(out, what="the patched object")
    return _detach(obj, out)


def apply_yaml_body(body: bytes) -> dict[str, Any]:
    """Parse an `application/apply-patch+yaml` body (YAML, so JSON too) into a JSON-shaped dict.

    `cp.bodies.decode_yaml` does the work (bounded alias expansion; timestamps stay strings and
    non-string keys become strings, as `sigs.k8s.io/yaml`). Raises `errors.BadRequest` ("error decoding
    YAML: ...") on a parse error, excessive or recursive aliasing, or when the body is not an object, and
    `errors.RequestEntityTooLarge` when the document expands past `cp.bodies.MAX_BYTES`.
    """
    data = bodies.decode_yaml(body, error_prefix="error decoding YAML: ")
    if not isinstance(data, dict):
        what = "an empty document" if data is None else _go_type_error(data, "map[string]interface {}")
        raise errors.BadRequest(f"error decoding YAML: {what}")
    return data


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 `MergePatch(target, patch)`. Neither argument is mutated; untouched subtrees are shared."""
    if not isinstance(patch, dict):
        return _copy_json(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = json_merge_patch(out.get(key), value)
    return out


def strategic_merge(original: dict[str, Any], patch: dict[str, Any], *, schema: dict[str, Any] | None
                    ) -> dict[str, Any]:
    """Apply a strategic merge patch (already decoded) to `original` under the OpenAPI `schema` of its kind.

    `schema` is a definition from `cp.schemas` (or None: merge-patch semantics with directives honoured).
    Neither argument is mutated; untouched subtrees of `original` are shared with the result.
    Raises `errors.BadRequest` for malformed directives and `PatchRejected` (422) for lists of lists.
    """
    return _merge_map(original, patch, schema)


# ---------------------------------------------------------------------------------------------------------
# JSON patch


def _apply_json_patch(obj: dict[str, Any], body: bytes) -> dict[str, Any]:
    ops = _decode(body, prefix="error decoding patch: ")
    if ops is None:  # Go decodes `null` into an empty patch
        ops = []
    if not isinstance(ops, list):
        raise errors.BadRequest(f"error decoding patch: {_go_type_error(ops, '[]handlers.jsonPatchOp')}")
    for op in ops:
        if not isinstance(op, dict):
            raise errors.BadRequest(
                f"error decoding patch: {_go_type_error(op, 'handlers.jsonPatchOp')}")
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise errors.RequestEntityTooLarge(
            "Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(ops)}")
    try:
        patch = jsonpatch.JsonPatch(ops)  # checks the shape of every operation before any is applied
        doc = _copy_json(obj)
        if any(op.get("op") == "copy" for op in ops):
            doc = _apply_bounding_copies(doc, ops)
        else:
            doc = patch.apply(doc, in_place=True)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise PatchRejected(str(exc)) from None
    except (TypeError, KeyError, IndexError, ValueError, AttributeError) as exc:
        raise PatchRejected(f"{type(exc).__name__}: {exc}") from None
    if not isinstance(doc, dict):
        raise errors.Invalid(kind="", group="", name="", causes=[errors.Cause(
            "Invalid", "patch", _go_type_error(doc, "map[string]interface {}"), value=_json_text(doc))])
    return doc


def _apply_bounding_copies(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """Apply `ops` one at a time, measuring what each `copy` duplicates before making the copy.

    As evanphx/json-patch with AccumulatedCopySizeLimit: the JSON sizes of the copied values add up, and
    the patch fails once the sum passes `MAX_JSON_PATCH_COPY_BYTES`. Only `copy` duplicates: `add` and
    `replace` insert values the body carries (bounded by its size) and `move` relocates one. A value is
    measured by encoding it (C speed): it is part of a document bounded by the stored object, the body and
    the copies so far, and the measuring ends at the first copy that passes the limit, so all the
    measuring of a patch costs at most the limit plus one such document.
    """
    copied = 0
    for op in ops:
        source = op.get("from")
        if op.get("op") == "copy" and isinstance(source, str):
            try:
                size = len(msgspec.json.encode(jsonpatch.JsonPointer(source).resolve(doc)))
            except (jsonpatch.JsonPointerException, TypeError):
                size = 0  # nothing there to copy (`/a/-` names the end of a list): the operation says so
            if size:
                copied += size
                if copied > MAX_JSON_PATCH_COPY_BYTES:
                    raise PatchRejected(
                        f"Unable to complete the copy, the accumulated size increase of copy is {copied}, "
                        f"exceeding the limit {MAX_JSON_PATCH_COPY_BYTES}")
        doc = jsonpatch.JsonPatch([op]).apply(doc, in_place=True)
    return doc


# ---------------------------------------------------------------------------------------------------------
# Strategic merge patch


def _merge_map(orig: Mapping[str, Any], patch: Mapping[str, Any], schema: dict[str, Any] | None
               ) -> dict[str, Any]:
    if _PATCH in patch:
        directive = patch[_PATCH]
        if directive == "delete":
            return {}
        if directive != "replace":
            raise errors.BadRequest(f"unknown patch type: {directive} in map: {_json_text(patch)}")
        orig = _EMPTY
        patch = {k: v for k, v in patch.items() if k != _PATCH}

    props: Mapping[str, Any] | None = None
    extra: dict[str, Any] | None = None
    if schema:
        resolved = schemas.resolve(schema)
        p = resolved.get("properties")
        props = p if isinstance(p, dict) else None
        a = resolved.get("additionalProperties")
        extra = a if isinstance(a, dict) else None

    out = dict(orig)
    orders: dict[str, Any] | None = None
    deletions: dict[str, Any] | None = None
    data: list[str] = []
    for key in patch:
        if key[:1] == "$":
            if key == _RETAIN_KEYS:
                continue
            if key.startswith(_SET_ORDER):
                orders = orders or {}
                orders[_directive_field(key, _SET_ORDER, _BAD_SET_ORDER)] = patch[key]
                continue
            if key.startswith(_DELETE_PRIMITIVE):
                deletions = deletions or {}
                deletions[_directive_field(key, _DELETE_PRIMITIVE, _BAD_PRIMITIVE_LIST)] = patch[key]
                continue
        data.append(key)

    if _RETAIN_KEYS in patch:
        out = _retain_keys(out, patch)

    for key in data:
        value = patch[key]
        if value is None:
            out.pop(key, None)
            continue
        prop = _prop(props, extra, key)
        order = orders.get(key, _MISSING) if orders else _MISSING
        merged = _merge_field(out.get(key, _MISSING), value, prop, order)
        if merged is _MISSING:
            out.pop(key, None)
        else:
            out[key] = merged

    if orders:
        for key, order in orders.items():
            if key in patch:
                continue  # merged (and ordered) above
            cur = out.get(key)
            prop = _prop(props, extra, key)
            if isinstance(cur, list) and "merge" in _strategies(prop):
                out[key] = _merge_list(cur, [], prop, order)

    if deletions:
        for key, doomed in deletions.items():
            if not isinstance(doomed, list):
                raise errors.BadRequest(_BAD_PRIMITIVE_LIST)
            cur = out.get(key)
            if isinstance(cur, list):
                out[key] = _delete_scalars(cur, doomed)
    return out


def _merge_field(cur: Any, value: Any, prop: dict[str, Any] | None, order: Any) -> Any:
    """The new value of one field; `_MISSING` to remove it."""
    if isinstance(value, dict):
        if value.get(_PATCH, None) == "delete":
            return _MISSING
        if "replace" in _strategies(prop):
            return _merge_map(_EMPTY, value, prop)
        return _merge_map(cur if isinstance(cur, dict) else _EMPTY, value, prop)
    if isinstance(value, list):
        if "merge" in _strategies(prop):
            return _merge_list(cur if isinstance(cur, list) else [], value, prop, order)
        items = schemas.items_schema(prop) if prop else None
        return [_fresh(item, items) for item in value]
    return value


def _fresh(value: Any, schema: dict[str, Any] | None) -> Any:
    """A patch value arriving where nothing was: directives applied against nothing, nulls dropped."""
    if isinstance(value, dict):
        return _merge_map(_EMPTY, value, schema)
    if isinstance(value, list):
        items = schemas.items_schema(schema) if schema else None
        return [_fresh(item, items) for item in value]
    return value


def _merge_list(cur: list[Any], patch: list[Any], prop: dict[str, Any] | None, order: Any) -> list[Any]:
    """A list with the `merge` strategy (`order` is the `$setElementOrder` list, or `_MISSING`)."""
    # `sliceElementType`: one element type across both lists (any scalars count as one type here).
    first: type | None = None
    for item in (*cur, *patch):
        kind = dict if isinstance(item, dict) else list if isinstance(item, list) else object
        if first is None:
            if kind is list:
                raise PatchRejected(_NO_LIST_OF_LISTS)
            first = kind
        elif kind is not first:
            raise errors.BadRequest(f"list element types are not identical: {_json_text([cur, patch])}")
    if first is not dict:
        return _merge_scalars(cur, patch, order)
    merge_key = prop.get(_MERGE_KEY) if prop else None
    if not merge_key:
        raise errors.BadRequest("cannot merge lists without merge key for type map")
    return _merge_maps_by_key(cur, patch, schemas.items_schema(prop) if prop else None, merge_key, order)


def _merge_scalars(cur: list[Any], patch: list[Any], order: Any) -> list[Any]:
    if patch:
        seen: set[Any] = set()
        merged = []
        for item in (*cur, *patch):
            if item not in seen:
                seen.add(item)
                merged.append(item)
        merged = _arrange(merged, _identity, first=patch, server=cur)
    else:
        merged = list(cur)
    if order is not _MISSING:
        if not isinstance(order, list) or any(isinstance(o, (dict, list)) for o in order):
            raise errors.BadRequest(_BAD_SET_ORDER)
        _check_order(patch, order, _identity)
        merged = _arrange(merged, _identity, first=order, server=cur)
    return merged


def _merge_maps_by_key(cur: list[Any], patch: list[dict[str, Any]], items: dict[str, Any] | None,
                       merge_key: str, order: Any) -> list[Any]:
    def key_of(item: Any) -> Any:
        if isinstance(item, dict):
            value = item.get(merge_key, _NOKEY)
            return value if _hashable(value) else _NOKEY
        return _NOKEY

    def patch_key(item: dict[str, Any]) -> Any:
        if merge_key not in item:
            raise errors.BadRequest(f"map: {_json_text(item)} does not contain declared merge key: {merge_key}")
        value = item[merge_key]
        if not _hashable(value):
            raise errors.BadRequest(f"merge key {merge_key} has a value that is not a scalar: {_json_text(item)}")
        return value

    work = list(cur)
    plain: list[dict[str, Any]] = []
    replace = False
    for item in patch:
        if _PATCH not in item:
            plain.append(item)
            continue
        directive = item[_PATCH]
        if directive == "delete":
            doomed = patch_key(item)
            work = [w for w in work if key_of(w) is _NOKEY or key_of(w) != doomed]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise errors.BadRequest("merging lists cannot yet be specified in the patch")
        else:
            raise errors.BadRequest(f"unknown patch type: {directive} in map: {_json_text(item)}")

    if replace:
        merged = [_merge_map(_EMPTY, item, items) for item in plain]
    else:
        server = [key_of(w) for w in work]
        index: dict[Any, int] = {}
        for i, k in enumerate(server):
            if k is not _NOKEY:
                index.setdefault(k, i)
        first = []
        for item in plain:
            k = patch_key(item)
            first.append(k)
            at = index.get(k)
            if at is None:
                index[k] = len(work)
                work.append(_merge_map(_EMPTY, item, items))
            else:
                work[at] = _merge_map(work[at], item, items)
        merged = _arrange(work, key_of, first=first, server=server) if plain else work

    if order is not _MISSING:
        if not isinstance(order, list):
            raise errors.BadRequest(_BAD_SET_ORDER)
        order_keys = []
        for o in order:
            if not isinstance(o, dict):
                raise errors.BadRequest(_BAD_SET_ORDER)
            order_keys.append(patch_key(o))
        _check_order([patch_key(p) for p in plain], order_keys, _identity)
        merged = _arrange(merged, key_of, first=order_keys, server=[key_of(c) for c in cur])
    return merged


def _arrange(merged: list[Any], key_of: Any, *, first: Iterable[Any], server: Iterable[Any]) -> list[Any]:
    """Upstream's `normalizeElementOrder`: the items named in `first` (in that order) interleaved with the
    others (in `server` order). An item of `first` goes before a server item unless both were in `server`
    and the server item came earlier; so new items precede the server items that follow no patch item."""
    first_at: dict[Any, int] = {}
    for i, k in enumerate(first):
        first_at.setdefault(k, i)
    server_at: dict[Any, int] = {}
    for i, k in enumerate(server):
        if k is not _NOKEY:
            server_at.setdefault(k, i)
    right: list[Any] = []
    left: list[Any] = []
    for item in merged:
        (right if key_of(item) in first_at else left).append(item)
    right.sort(key=lambda item: first_at[key_of(item)])
    tail = len(server_at)
    left.sort(key=lambda item: server_at.get(key_of(item), tail))
    out = []
    i = j = 0
    while i < len(left) and j < len(right):
        li = server_at.get(key_of(left[i]))
        ri = server_at.get(key_of(right[j]))
        if li is not None and ri is not None and li < ri:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    out.extend(left[i:])
    out.extend(right[j:])
    return out


def _check_order(patch_keys: list[Any], order_keys: list[Any], key_of: Any) -> None:
    """`validatePatchWithSetOrderList`: the patch items appear in `$setElementOrder`, in the same order."""
    pi = oi = 0
    while pi < len(patch_keys) and oi < len(order_keys):
        if key_of(patch_keys[pi]) == key_of(order_keys[oi]):
            pi += 1
        oi += 1
    if pi < len(patch_keys):
        raise errors.BadRequest(
            f"The order in patch list: {_json_text(patch_keys)} doesn't match {_SET_ORDER} list: "
            f"{_json_text(order_keys)}")


def _retain_keys(out: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    keep = patch[_RETAIN_KEYS]
    if not isinstance(keep, list) or not all(_hashable(k) for k in keep):
        raise errors.BadRequest(_BAD_RETAIN_KEYS)
    kept = set(keep)
    for key, value in patch.items():
        if value is None or key in (_RETAIN_KEYS, _PATCH) or key.startswith((_SET_ORDER, _DELETE_PRIMITIVE)):
            continue
        if key not in kept:
            raise errors.BadRequest(_BAD_RETAIN_KEYS)
    return {k: v for k, v in out.items() if k in kept}


def _delete_scalars(cur: list[Any], doomed: list[Any]) -> list[Any]:
    if not all(_hashable(d) for d in doomed):
        raise errors.BadRequest(_BAD_PRIMITIVE_LIST)
    gone = set(doomed)
    return [item for item in cur if not (_hashable(item) and item in gone)]


def _directive_field(key: str, prefix: str, problem: str) -> str:
    head, sep, field = key.partition("/")
    if head != prefix or not sep:
        raise errors.BadRequest(problem)
    return field


def _prop(props: Mapping[str, Any] | None, extra: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    if props is not None:
        p = props.get(key)
        if isinstance(p, dict):
            return p
    return extra


def _strategies(prop: dict[str, Any] | None) -> tuple[str, ...]:
    if not prop:
        return ()
    s = prop.get(_STRATEGY)
    return tuple(s.split(",")) if isinstance(s, str) else ()


# ---------------------------------------------------------------------------------------------------------
# Small helpers


def _identity(x: Any) -> Any:
    return x


def _hashable(value: Any) -> bool:
    return not isinstance(value, (dict, list))


def _detach(obj: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """A result that shares neither its top level nor its `metadata` dict with `obj`."""
    if out is obj:
        out = dict(out)
    meta = out.get("metadata")
    shared = meta is obj.get("metadata")
    if shared and isinstance(meta, dict):
        out["metadata"] = dict(meta)
    return out


def _copy_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


def _decode(body: bytes, *, prefix: str) -> Any:
    try:
        return msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise errors.BadRequest(f"{prefix}{exc}") from None


def _json_text(value: Any) -> str:
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, msgspec.EncodeError):
        return repr(value)


def _go_type_error(value: Any, go_type: str) -> str:
    """encoding/json's complaint when a JSON value has the wrong type."""
    if isinstance(value, bool):
        what = "bool"
    elif isinstance(value, (int, float)):
        what = "number"
    elif isinstance(value, str):
        what = "string"
    elif isinstance(value, list):
        what = "array"
    elif isinstance(value, dict):
        what = "object"
    else:
        what = "null"
    return f"json: cannot unmarshal {what} into Go value of type {go_type}"
