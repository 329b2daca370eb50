"""CRD conversion webhooks: `ConversionReview` (apiextensions.k8s.io/v1, or v1beta1 when the CRD lists
it first), as apiextensions-apiserver's webhook converter sends and checks it.

`convert` sends the objects that are not already in the desired version (none: no call), then checks
the answer as upstream does: the review's apiVersion and kind (v1), a response whose uid is the
request's (v1), `result.status` "Success" (else the webhook's message), as many converted objects as
were sent, each in the desired group/version with the original kind, name, namespace and uid; the
converted object's metadata is then the original's, with only labels and annotations taken from the
webhook (validated as upstream validates them). Failures are `ConversionError`s whose text is
upstream's (`conversion webhook for <group/version, Kind=...> failed: ...`); the caller answers them
as it serves the request (upstream's CR handler answers 500).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from typing import Any

import msgspec

from api.webhooks import client as clients
from cp.errors import Cause
from cp.validation import common as common_validation

DEFAULT_TIMEOUT = 30.0  # CRD conversion has no timeoutSeconds: the webhook client's own bound
_encode = msgspec.json.Encoder().encode


class ConversionError(Exception):
    """A conversion that failed; `str()` is upstream's message."""


def _gvk(obj: Mapping[str, Any]) -> str:
    """Go's `GroupVersionKind.String()`: `group/version, Kind=Kind` (`/v1, Kind=X` in the core group)."""
    api_version = str(obj.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={obj.get('kind') or ''}"


async def convert(*, conversion: Mapping[str, Any], objects: list[dict[str, Any]], desired_api_version: str,
                  client: clients.WebhookClient, timeout_seconds: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    """`objects` (of one CRD) converted to `desired_api_version` through the webhook of `conversion`
    (a CRD's `spec.conversion`, strategy Webhook). Objects already in that version are returned as
    they are and not sent. The result is in the order of `objects`."""
    webhook = conversion.get("webhook") or {}
    client_config = webhook.get("clientConfig") or {}
    versions = [str(v) for v in webhook.get("conversionReviewVersions") or []]
    pending = [i for i, obj in enumerate(objects) if obj.get("apiVersion") != desired_api_version]
    if not pending:
        return list(objects)
    what = _gvk(objects[pending[0]])
    review_version = next((v for v in versions if v in ("v1", "v1beta1")), None)
    if review_version is None:
        raise ConversionError("no supported conversion review versions")
    uid = str(uuid.uuid4())
    review = {"kind": "ConversionReview", "apiVersion": f"apiextensions.k8s.io/{review_version}",
              "request": {"uid": uid, "desiredAPIVersion": desired_api_version,
                          "objects": [objects[i] for i in pending]}}
    try:
        answer = await client.post(client_config=client_config, body=_encode(review),
                                   timeout_seconds=timeout_seconds)
    except clients.CallError as exc:
        raise ConversionError(f"conversion webhook for {what} failed: {exc}") from None
    try:
        converted = _converted_objects(answer, uid=uid, strict=review_version == "v1")
    except ConversionError as exc:
        raise ConversionError(f"conversion webhook for {what} failed: {exc}") from None
    if len(converted) != len(pending):
        raise ConversionError(f"conversion webhook for {what} returned {len(converted)} objects, "
                              f"expected {len(pending)}")
    out = list(objects)
    single = len(objects) == 1
    for index, (position, item) in enumerate(zip(pending, converted, strict=True)):
        original = objects[position]
        at = "object at index 0" if single else f"converted object at index {index}"
        if not isinstance(item, dict):
            raise ConversionError(f"conversion webhook for {what} returned invalid {at}: "
                                  "the object is not a JSON object")
        got_version = str(item.get("apiVersion") or "")
        if got_version != desired_api_version:
            raise ConversionError(f"conversion webhook for {what} returned invalid {at}: invalid groupVersion "
                                  f"(expected {desired_api_version}, received {got_version})")
        if item.get("kind") != original.get("kind"):
            raise ConversionError(f"conversion webhook for {what} returned invalid {at}: invalid kind "
                                  f"(expected {original.get('kind')}, received {item.get('kind')})")
        problem = _changed_identity(original, item)
        if problem:
            where = "object" if single else f"converted object at index {index}"
            raise ConversionError(f"conversion webhook for {what} returned invalid {where}: {problem}")
        try:
            out[position] = _restore_metadata(original, item)
        except ConversionError as exc:
            where = "metadata" if single else f"metadata in object at index {index}"
            raise ConversionError(f"conversion webhook for {what} returned invalid {where}: {exc}") from None
    return out


def _converted_objects(answer: Any, *, uid: str, strict: bool) -> list[Any]:
    """The converted objects of a ConversionReview answer, checked as upstream (v1beta1 answers
    are not checked for apiVersion, kind or uid)."""
    if not isinstance(answer, dict):
        raise ConversionError("expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, "
                              "got /, Kind=")
    if strict:
        gvk = _gvk(answer)
        if gvk != "apiextensions.k8s.io/v1, Kind=ConversionReview":
            raise ConversionError(f"expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, "
                                  f"got {gvk}")
    response = answer.get("response")
    if not isinstance(response, dict):
        raise ConversionError("no response provided")
    if strict and response.get("uid") != uid:
        raise ConversionError(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
    result = _mapping(response.get("result"))
    if result.get("status") != "Success":
        if result.get("message"):
            raise ConversionError(str(result["message"]))
        raise ConversionError(f"response.result.status was '{result.get('status') or ''}', not 'Success'")
    objects = response.get("convertedObjects")
    return list(objects) if isinstance(objects, list) else []


def _changed_identity(original: Mapping[str, Any], converted: Mapping[str, Any]) -> str:
    """upstream's validateConvertedObject: kind, name, namespace and uid unchanged."""
    a = _mapping(original.get("metadata"))
    b = _mapping(converted.get("metadata"))
    pairs = (("kind", original.get("kind"), converted.get("kind")), ("name", a.get("name"), b.get("name")),
             ("namespace", a.get("namespace"), b.get("namespace")), ("UID", a.get("uid"), b.get("uid")))
    for what, before, after in pairs:
        if (before or "") != (after or ""):
            return f"must have the same {what}: {before or ''} != {after or ''}"
    return ""


def _restore_metadata(original: Mapping[str, Any], converted: dict[str, Any]) -> dict[str, Any]:
    """The converted object with the original's metadata, but for the labels and annotations the
    webhook returned (upstream's restoreObjectMeta)."""
    answered = converted.get("metadata")
    if answered is None:
        raise ConversionError("missing metadata in converted object")
    if not isinstance(answered, dict):
        raise ConversionError(f"invalid metadata of type {_go_type(answered)} in converted object")
    out = dict(converted)
    meta: dict[str, Any] = copy.deepcopy(dict(original.get("metadata") or {}))
    for field in ("labels", "annotations"):
        value = answered.get(field)
        if value is None:
            meta.pop(field, None)
            continue
        if not isinstance(value, dict):
            raise ConversionError(f"invalid metadata.{field} of type {_go_type(value)} in converted object")
        for k, v in value.items():
            if not isinstance(v, str):
                raise ConversionError(f"metadata.{field}[{k}] must be a string, but is {_go_type(v)} in "
                                      "converted object")
        if value != (meta.get(field) or {}):
            errs: list[Cause] = []
            if field == "labels":
                common_validation.validate_labels(value, "metadata.labels", errs)
            else:
                common_validation.validate_annotations(value, "metadata.annotation", errs)
            if errs:
                raise ConversionError(_aggregate(errs))
        meta[field] = value
    out["metadata"] = meta
    return out


def _aggregate(errs: list[Cause]) -> str:
    """An ErrorList's ToAggregate() text: one error alone, several in brackets."""
    texts = [e.text() for e in errs]
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _go_type(value: Any) -> str:
    return {bool: "bool", str: "string", int: "int64", float: "float64", list: "[]interface {}",
            dict: "map[string]interface {}"}.get(type(value), "<nil>" if value is None else type(value).__name__)
