"""Object metadata (apimachinery `ValidateObjectMeta`, `ValidateObjectMetaUpdate`) and metav1 label
selectors, as every kind's rules check them. Pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from cp.errors import Cause
from cp.validation.common import (
    GoValue,
    as_dict,
    as_list,
    as_str,
    each,
    is_dns1123_label,
    is_int,
    is_qualified_name,
    nonnegative,
    not_supported,
    regex_error,
    too_long,
    validate_annotations,
    validate_label_name,
    validate_labels,
    validate_path_segment_name,
)

# ---------------------------------------------------------------- object metadata

STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")
NameFn = Callable[[str, bool], list[str]]


def validate_object_meta(meta: dict[str, Any], errs: list[Cause], *, namespaced: bool, name_fn: NameFn,
                         path: str = "metadata", kube_finalizers: bool = True) -> None:
    """apimachinery ValidateObjectMeta + core's finalizer-name check (create)."""
    generate = as_str(meta.get("generateName"))
    if generate:
        each(errs, f"{path}.generateName", generate, name_fn(generate, True))
    name = as_str(meta.get("name"))
    if not name:
        errs.append(Cause("Required", f"{path}.name", "name or generateName is required"))
    else:
        each(errs, f"{path}.name", name, name_fn(name, False))
    _validate_meta_common(meta, errs, namespaced=namespaced, path=path, kube_finalizers=kube_finalizers)


def validate_embedded_object_meta(meta: dict[str, Any], *, path: str) -> list[Cause]:
    """The metadata of a resource embedded in a custom resource (`x-kubernetes-embedded-resource`), as
    apiextensions' `objectmeta.Validate` checks it: ValidateObjectMeta with names as path segments,
    namespaced when it names a namespace (the caller puts in a name when there is none)."""
    errs: list[Cause] = []
    validate_object_meta(meta, errs, namespaced=bool(as_str(meta.get("namespace"))),
                         name_fn=validate_path_segment_name, path=path, kube_finalizers=False)
    return errs


def _validate_meta_common(meta: dict[str, Any], errs: list[Cause], *, namespaced: bool, path: str,
                          kube_finalizers: bool = True) -> None:
    ns = as_str(meta.get("namespace"))
    if namespaced:
        if not ns:
            errs.append(Cause("Required", f"{path}.namespace", ""))
        else:
            each(errs, f"{path}.namespace", ns, is_dns1123_label(ns))
    elif ns:
        errs.append(Cause("Forbidden", f"{path}.namespace", "not allowed on this type"))
    nonnegative(errs, f"{path}.generation", meta.get("generation"))
    validate_labels(meta.get("labels"), f"{path}.labels", errs)
    validate_annotations(meta.get("annotations"), f"{path}.annotations", errs)
    _validate_owner_references(meta.get("ownerReferences"), f"{path}.ownerReferences", errs)
    _validate_finalizers(meta.get("finalizers"), f"{path}.finalizers", errs, kube=kube_finalizers)


def _validate_owner_references(refs: Any, path: str, errs: list[Cause]) -> None:
    first_controller = ""
    for ref in as_list(refs):
        ref = as_dict(ref)
        api_version = as_str(ref.get("apiVersion"))
        kind = as_str(ref.get("kind"))
        version = api_version.rsplit("/", 1)[-1] if api_version else ""
        if not version:
            errs.append(Cause("Invalid", f"{path}.apiVersion", "version must not be empty", api_version))
        if not kind:
            errs.append(Cause("Invalid", f"{path}.kind", "must not be empty", kind))
        if not ref.get("name"):
            errs.append(Cause("Invalid", f"{path}.name", "must not be empty", as_str(ref.get("name"))))
        if not ref.get("uid"):
            errs.append(Cause("Invalid", f"{path}.uid", "must not be empty", as_str(ref.get("uid"))))
        if api_version == "v1" and kind == "Event":
            errs.append(Cause("Invalid", path, "/v1, Kind=Event is disallowed from being an owner",
                              GoValue("v1.OwnerReference{...}")))
        if ref.get("controller") is True:
            current = f"{kind}/{as_str(ref.get('name'))}"
            if first_controller:
                errs.append(Cause("Invalid", path,
                                  "Only one reference can have Controller set to true. Found \"true\" in "
                                  f"references for {first_controller} and {current}", GoValue("[...]")))
            else:
                first_controller = current


def _validate_finalizers(finalizers: Any, path: str, errs: list[Cause], *, kube: bool = True) -> None:
    """apimachinery's ValidateFinalizers; `kube`: also the built-in kinds' rule that a finalizer name is
    standard or fully qualified (core's ValidateObjectMeta; CRDs and custom resources use the generic one)."""
    items = as_list(finalizers)
    for f in items:
        if isinstance(f, str):
            each(errs, path, f, is_qualified_name(f))
    if "orphan" in items and "foregroundDeletion" in items:
        errs.append(Cause("Invalid", path, "finalizer orphan and foregroundDeletion cannot be both set",
                          GoValue("[]string{" + ", ".join(json.dumps(f) for f in items) + "}")))
    for i, f in enumerate(items):
        if kube and isinstance(f, str) and "/" not in f and f not in STANDARD_FINALIZERS \
                and not is_qualified_name(f):
            errs.append(Cause("Invalid", f"{path}[{i}]",
                              "name is neither a standard finalizer name nor is it fully qualified", f))


def validate_object_meta_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause],
                                path: str = "metadata", kube_finalizers: bool = True) -> None:
    """apimachinery ValidateObjectMetaUpdate (plus the label/annotation/owner/finalizer checks)."""
    if old.get("deletionTimestamp"):
        added = sorted(set(as_list(new.get("finalizers"))) - set(as_list(old.get("finalizers"))))
        if added:
            shown = "[]string{" + ", ".join(json.dumps(f) for f in added) + "}"
            errs.append(Cause("Forbidden", f"{path}.finalizers",
                              f"no new finalizers can be added if the object is being deleted, found new "
                              f"finalizers {shown}"))
    gen_new, gen_old = new.get("generation"), old.get("generation")
    if is_int(gen_new) and is_int(gen_old) and gen_new < gen_old:
        errs.append(Cause("Invalid", f"{path}.generation", "must not be decremented", gen_new))
    for key in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                "deletionGracePeriodSeconds"):
        nv, ov = new.get(key), old.get(key)
        if nv != ov and not (key == "namespace" and not nv and not ov):
            errs.append(Cause("Invalid", f"{path}.{key}", "field is immutable",
                              nv if nv is not None else GoValue("null")))
    validate_labels(new.get("labels"), f"{path}.labels", errs)
    validate_annotations(new.get("annotations"), f"{path}.annotations", errs)
    _validate_owner_references(new.get("ownerReferences"), f"{path}.ownerReferences", errs)
    _validate_finalizers(new.get("finalizers"), f"{path}.finalizers", errs, kube=kube_finalizers)


def validate_template_object_meta(meta: Any, path: str, errs: list[Cause]) -> None:
    """ValidateTemplateObjectMeta: only labels and annotations are checked."""
    meta = as_dict(meta)
    validate_labels(meta.get("labels"), f"{path}.labels", errs)
    validate_annotations(meta.get("annotations"), f"{path}.annotations", errs)


# ---------------------------------------------------------------- label selectors

def validate_label_selector(sel: Any, path: str, errs: list[Cause]) -> None:
    if not isinstance(sel, dict):
        return
    for i, req in enumerate(as_list(sel.get("matchExpressions"))):
        req = as_dict(req)
        rpath = f"{path}.matchExpressions[{i}]"
        op = req.get("operator")
        values = as_list(req.get("values"))
        if op in ("In", "NotIn"):
            if not values:
                errs.append(Cause("Required", f"{rpath}.values",
                                  "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(Cause("Forbidden", f"{rpath}.values",
                                  "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            errs.append(Cause("Invalid", f"{rpath}.operator", "not a valid selector operator", op))
        validate_label_name(as_str(req.get("key")), f"{rpath}.key", errs)
    validate_labels(sel.get("matchLabels"), f"{path}.matchLabels", errs)


def selector_matches(sel: dict[str, Any], labels: dict[str, Any]) -> bool:
    for k, v in as_dict(sel.get("matchLabels")).items():
        if labels.get(k) != v:
            return False
    for req in as_list(sel.get("matchExpressions")):
        req = as_dict(req)
        key: Any = req.get("key")
        op, values = req.get("operator"), as_list(req.get("values"))
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True



# ---------------------------------------------------------------- metav1 conditions

_CONDITION_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_CONDITION_REASON = re.compile("^" + _CONDITION_REASON_FMT + "$")
_CONDITION_REASON_MSG = regex_error(
    "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric "
    "characters or '_,:', and must end with an alphanumeric character or '_'", _CONDITION_REASON_FMT,
    "my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB")


def validate_conditions(conditions: Any, path: str, errs: list[Cause]) -> None:
    """metav1validation.ValidateConditions: unique types, each a valid `metav1.Condition`."""
    seen: set[str] = set()
    for i, c in enumerate(as_list(conditions)):
        c = as_dict(c)
        ctype = as_str(c.get("type"))
        if ctype in seen:
            errs.append(Cause("Duplicate", f"{path}[{i}]", "", ctype))
        seen.add(ctype)
        validate_condition(c, f"{path}[{i}]", errs)


def validate_condition(c: dict[str, Any], path: str, errs: list[Cause]) -> None:
    ctype = as_str(c.get("type"))
    if not ctype:
        errs.append(Cause("Required", f"{path}.type", "is required"))
    else:
        validate_label_name(ctype, f"{path}.type", errs)
    status = as_str(c.get("status"))
    if not status:
        errs.append(Cause("Required", f"{path}.status", ""))
    elif status not in ("False", "True", "Unknown"):
        not_supported(errs, f"{path}.status", status, ("False", "True", "Unknown"))
    observed = c.get("observedGeneration")
    if is_int(observed) and observed < 0:
        errs.append(Cause("Invalid", f"{path}.observedGeneration", "must be greater than or equal to zero", observed))
    if not c.get("lastTransitionTime"):
        errs.append(Cause("Required", f"{path}.lastTransitionTime", ""))
    reason = as_str(c.get("reason"))
    if not reason:
        errs.append(Cause("Required", f"{path}.reason", ""))
    else:
        if not _CONDITION_REASON.match(reason):
            errs.append(Cause("Invalid", f"{path}.reason", _CONDITION_REASON_MSG, reason))
        if len(reason) > 1024:
            too_long(errs, f"{path}.reason", 1024)
    if len(as_str(c.get("message"))) > 32 * 1024:
        too_long(errs, f"{path}.message", 32 * 1024)
