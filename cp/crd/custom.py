"""What a CustomResourceDefinition makes the server serve, and the names it may use (pure).

- `served_kinds`: the registry entries (`cp.resources.ResourceKind`) of an established definition, one
  per served version, each carrying a `CustomVersion` (schema, printer columns, subresource paths),
  as apiextensions-apiserver's `crdHandler` builds its per-version storage (`crdInfo`).
- `names_and_conditions`: the naming controller (`pkg/controller/status/naming_controller.go`): the
  names a definition asks for are accepted unless another definition of its group uses them, and a
  definition whose names were accepted once is `Established`.
- The custom resource strategy (`pkg/registry/customresource/strategy.go`): what a create, an update
  and a status write keep, and when the generation moves.

The schema's checks, pruning and defaulting (`cp.crd.schema`) and its CEL rules (`cp.crd.cel`) are
compiled on first use, once per definition generation: a `CustomVersion` is made anew when the
definition changes.
"""

from __future__ import annotations

import copy
from typing import Any

from cp import resources as res
from cp.clock import rfc3339

GROUP = "apiextensions.k8s.io"
PLURAL = "customresourcedefinitions"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


class CustomVersion:
    """One served version of a CustomResourceDefinition. Identity equality: a new definition
    generation makes new objects (and so new compiled schemas)."""

    __slots__ = ("_compiled", "_field_info", "_rules", "columns", "conversion", "convert", "crd_name", "crd_uid",
                 "deprecated", "deprecation_warning", "generation", "list_kind", "object_meta", "openapi", "scale", "selectable",
                 "status", "storage_version", "terminating", "version")

    def __init__(self, *, crd_name: str, crd_uid: str, generation: int, version: str, storage_version: str,
                 openapi: dict[str, Any] | None, status: bool, scale: dict[str, Any] | None,
                 columns: list[dict[str, Any]], selectable: list[str], conversion: dict[str, Any],
                 deprecated: bool = False, deprecation_warning: str = "", terminating: bool = False,
                 convert: bool = False, object_meta: Any = None, list_kind: str = "") -> None:
        self.crd_name = crd_name
        self.crd_uid = crd_uid
        self.generation = generation
        self.version = version
        self.storage_version = storage_version
        self.openapi = openapi  # the version's openAPIV3Schema
        self.status = status  # has the status subresource
        self.scale = scale  # the scale subresource's paths, or None
        self.columns = columns  # additionalPrinterColumns
        self.selectable = selectable  # selectableFields' JSON paths (`.spec.color`)
        self.conversion = conversion  # spec.conversion
        self.deprecated = deprecated
        self.deprecation_warning = deprecation_warning
        self.terminating = terminating  # the definition is being deleted: no new instances
        # Objects may be stored in another version than this one (the definition has several): every
        # answer is converted, the storage version's too (an object keeps the version it was written in).
        self.convert = convert
        # How embedded resources' metadata is validated (`cp.crd.schema.ObjectMetaRule`): the caller's,
        # as it is the validation package's (which imports this one for the definitions' rules).
        self.object_meta = object_meta
        self.list_kind = list_kind  # the accepted listKind
        self._compiled: Any = None
        self._rules: Any = None
        self._field_info: Any = None

    def key(self) -> tuple[str, int, str, bool]:
        return (self.crd_uid, self.generation, self.version, self.terminating)

    @property
    def schema(self) -> Any:
        """The compiled structural schema (`cp.crd.schema.Schema`), or None without one."""
        if self._compiled is None and self.openapi is not None:
            from cp.crd import schema

            self._compiled = schema.compile_schema(self.openapi, object_meta=self.object_meta)
        return self._compiled

    @property
    def rules(self) -> Any:
        """The compiled `x-kubernetes-validations` (`cp.crd.cel.Rules`), or None without a schema."""
        if self._rules is None and self.openapi is not None:
            from cp.crd import cel

            self._rules = cel.compile_rules(self.openapi)
        return self._rules

    def field_info(self, build: Any) -> Any:
        """The server-side apply information of this version (`cp.fieldmanager.KindInfo`), made once."""
        if self._field_info is None:
            self._field_info = build()
        return self._field_info


# ------------------------------------------------------------------------------------------ reading a CRD


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def condition(crd: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in _list(_dict(crd.get("status")).get("conditions")):
        if isinstance(c, dict) and c.get("type") == ctype:
            return c
    return None


def is_true(crd: dict[str, Any], ctype: str) -> bool:
    c = condition(crd, ctype)
    return c is not None and c.get("status") == "True"


def storage_version(crd: dict[str, Any]) -> str:
    for v in _list(_dict(crd.get("spec")).get("versions")):
        if isinstance(v, dict) and v.get("storage") is True:
            return str(v.get("name") or "")
    return ""


def served_kinds(crd: dict[str, Any], *, object_meta: Any = None) -> tuple[res.ResourceKind, ...]:
    """The resources an Established definition serves, the storage version first; none while it is not
    established. Names are the accepted ones (`status.acceptedNames`), as upstream serves them.
    `object_meta`: the rule for embedded resources' metadata (`cp.crd.schema.ObjectMetaRule`)."""
    if not is_true(crd, "Established"):
        return ()
    spec = _dict(crd.get("spec"))
    meta = _dict(crd.get("metadata"))
    accepted = _dict(_dict(crd.get("status")).get("acceptedNames"))
    names = _dict(spec.get("names"))
    group = str(spec.get("group") or "")
    plural = str(accepted.get("plural") or names.get("plural") or "")
    kind = str(accepted.get("kind") or names.get("kind") or "")
    if not group or not plural or not kind:
        return ()
    storage = storage_version(crd)
    namespaced = spec.get("scope") == "Namespaced"
    stored_versions = _list(_dict(crd.get("status")).get("storedVersions"))
    convert = len(_list(spec.get("versions"))) > 1 or len(stored_versions) > 1
    out: list[res.ResourceKind] = []
    for v in _list(spec.get("versions")):
        if not isinstance(v, dict) or v.get("served") is not True:
            continue
        version = str(v.get("name") or "")
        subs = _dict(v.get("subresources"))
        scale = subs.get("scale") if isinstance(subs.get("scale"), dict) else None
        subresources: list[res.Subresource] = []
        if scale is not None:
            subresources.append(res.Subresource(name="scale", kind="Scale", group="autoscaling", version="v1"))
        if "status" in subs:
            subresources.append(res.Subresource(name="status", kind=kind))
        custom = CustomVersion(
            crd_name=str(meta.get("name") or ""), crd_uid=str(meta.get("uid") or ""),
            generation=int(meta.get("generation") or 1), version=version, storage_version=storage,
            openapi=_dict(v.get("schema")).get("openAPIV3Schema"),
            status="status" in subs, scale=scale,
            columns=[c for c in _list(v.get("additionalPrinterColumns")) if isinstance(c, dict)],
            selectable=[str(_dict(f).get("jsonPath") or "") for f in _list(v.get("selectableFields"))],
            conversion=_dict(spec.get("conversion")),
            deprecated=v.get("deprecated") is True,
            deprecation_warning=str(v.get("deprecationWarning") or ""),
            terminating=bool(meta.get("deletionTimestamp")), convert=convert, object_meta=object_meta,
            list_kind=str(accepted.get("listKind") or names.get("listKind") or kind + "List"))
        out.append(res.ResourceKind(
            group=group, version=version, kind=kind, plural=plural,
            singular=str(accepted.get("singular") or names.get("singular") or kind.lower()),
            namespaced=namespaced,
            short_names=tuple(str(s) for s in _list(accepted.get("shortNames"))),
            categories=tuple(str(s) for s in _list(accepted.get("categories"))),
            subresources=tuple(subresources), has_spec=True,
            storage_of=(group, plural) if version != storage else (),
            custom=custom))
    out.sort(key=lambda k: k.storage_of != ())
    return tuple(out)


def same_served(a: tuple[res.ResourceKind, ...], b: tuple[res.ResourceKind, ...]) -> bool:
    """Whether two `served_kinds` results serve the same thing (same definition generation and names)."""
    def key(k: res.ResourceKind) -> tuple[Any, ...]:
        c = k.custom
        return (k.group, k.version, k.kind, k.plural, k.singular, k.namespaced, k.short_names, k.categories,
                k.subresources, k.storage_of, c.key() if c is not None else None)

    return [key(k) for k in a] == [key(k) for k in b]


# ------------------------------------------------------------------------------------------ naming


def _condition(ctype: str, status: str, reason: str, message: str, *, now: float,
               previous: dict[str, Any] | None) -> dict[str, Any]:
    """A condition, keeping its transition time while its status stays the same."""
    since = rfc3339(now)
    if previous is not None and previous.get("status") == status and previous.get("lastTransitionTime"):
        since = str(previous["lastTransitionTime"])
    return {"type": ctype, "status": status, "lastTransitionTime": since, "reason": reason, "message": message}


def names_and_conditions(crd: dict[str, Any], others: list[dict[str, Any]], *,
                         now: float) -> dict[str, Any]:
    """The definition's status after the naming and establishing controllers: `acceptedNames` and the
    `NamesAccepted` and `Established` conditions. `others` are the other definitions (of any group).

    A requested name is taken unless another definition of the same group has accepted it (plural,
    singular and short names share one namespace, kind and list kind another), in which case the
    previously accepted one stays and `NamesAccepted` is False with the first conflict's reason."""
    spec = _dict(crd.get("spec"))
    status = copy.deepcopy(_dict(crd.get("status")))
    group = spec.get("group")
    requested = _dict(spec.get("names"))
    accepted = _dict(status.get("acceptedNames"))
    resources: set[str] = set()
    kinds: set[str] = set()
    name = _dict(crd.get("metadata")).get("name")
    for other in others:
        if _dict(other.get("metadata")).get("name") == name or _dict(other.get("spec")).get("group") != group:
            continue
        names = _dict(_dict(other.get("status")).get("acceptedNames"))
        resources.update(str(n) for n in (names.get("plural"), names.get("singular")) if n)
        resources.update(str(n) for n in _list(names.get("shortNames")))
        kinds.update(str(n) for n in (names.get("kind"), names.get("listKind")) if n)

    new: dict[str, Any] = dict(accepted)
    problem: tuple[str, str] | None = None

    def take(field: str, used: set[str], reason: str) -> None:
        nonlocal problem
        want = requested.get(field)
        if want is None or want == "":
            return
        if want != accepted.get(field) and want in used:
            problem = problem or (reason, f'"{want}" is already in use')
            return
        new[field] = want

    take("plural", resources, "PluralConflict")
    take("singular", resources, "SingularConflict")
    short = [str(s) for s in _list(requested.get("shortNames"))]
    old_short = {str(s) for s in _list(accepted.get("shortNames"))}
    clash = [s for s in short if s not in old_short and s in resources]
    if clash:
        problem = problem or ("ShortNamesConflict", f'"{clash[0]}" is already in use')
    elif short or "shortNames" in new:
        if short:
            new["shortNames"] = short
        else:
            new.pop("shortNames", None)
    take("kind", kinds, "KindConflict")
    take("listKind", kinds, "ListKindConflict")
    categories = [str(c) for c in _list(requested.get("categories"))]
    if categories:
        new["categories"] = categories
    else:
        new.pop("categories", None)

    conditions = [c for c in _list(status.get("conditions")) if isinstance(c, dict)]
    by_type = {c.get("type"): c for c in conditions}
    if problem is None:
        names_cond = _condition("NamesAccepted", "True", "NoConflicts", "no conflicts found", now=now,
                                previous=by_type.get("NamesAccepted"))
    else:
        names_cond = _condition("NamesAccepted", "False", problem[0], problem[1], now=now,
                                previous=by_type.get("NamesAccepted"))
    established = by_type.get("Established")
    if established is None or established.get("status") != "True":
        if problem is None:
            established = _condition("Established", "True", "InitialNamesAccepted",
                                     "the initial names have been accepted", now=now, previous=established)
        else:
            established = _condition("Established", "False", "NotAccepted", "not all names are accepted",
                                     now=now, previous=established)
    approval = approval_condition(crd, now=now)
    mine = ("NamesAccepted", "Established", "KubernetesAPIApprovalPolicyConformant")
    kept = [c for c in conditions if c.get("type") not in mine]
    status["conditions"] = [names_cond, established, *([approval] if approval else []), *kept]
    status["acceptedNames"] = new
    storage = storage_version(crd)
    stored = [str(v) for v in _list(status.get("storedVersions"))]
    if storage and storage not in stored:
        stored.append(storage)
    status["storedVersions"] = stored
    return status


def terminating_condition(crd: dict[str, Any], *, now: float, remaining: int) -> dict[str, Any]:
    """The `Terminating` condition the finalizing controller writes while it deletes the instances."""
    previous = condition(crd, "Terminating")
    if remaining:
        return _condition("Terminating", "True", "InstanceDeletionInProgress",
                          "CustomResource deletion is in progress", now=now, previous=previous)
    return _condition("Terminating", "True", "InstanceDeletionCompleted",
                      "removed all instances", now=now, previous=previous)


# ------------------------------------------------------------------------------------------ strategy


def generation_changed(custom: CustomVersion, new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Whether an update moves `metadata.generation`: any change but metadata (and status where status is
    a subresource), as the custom resource strategy compares the objects."""
    skip = {"metadata", "apiVersion", "kind"} | ({"status"} if custom.status else set())
    keys = (set(new) | set(old)) - skip
    return any(new.get(k) != old.get(k) for k in keys)


# ------------------------------------------------------------------------------------------ JSON paths


def path_fields(path: str) -> list[str] | None:
    """The fields of a simple JSON path (`.spec.replicas`), or None for one that is not."""
    if not path.startswith("."):
        return None
    fields = path[1:].split(".")
    return fields if all(fields) else None


def get_path(obj: Any, path: str) -> tuple[Any, bool]:
    """The value at a simple JSON path and whether it is there."""
    fields = path_fields(path)
    if fields is None:
        return None, False
    cur = obj
    for f in fields:
        if not isinstance(cur, dict) or f not in cur:
            return None, False
        cur = cur[f]
    return cur, True


def set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    fields = path_fields(path)
    if fields is None:
        return
    cur = obj
    for f in fields[:-1]:
        nxt = cur.get(f)
        if not isinstance(nxt, dict):
            nxt = cur[f] = {}
        cur = nxt
    cur[fields[-1]] = value


# ------------------------------------------------------------------------------------------ a write


def prune(custom: CustomVersion, obj: dict[str, Any], *, field_validation: str,
          what: str) -> list[str]:
    """Drop the fields the schema does not declare (`x-kubernetes-preserve-unknown-fields` keeps them),
    as the custom resource decoder prunes. `fieldValidation=Strict` refuses them (400), `Warn` warns
    (`unknown field "spec.x"`), `Ignore` drops them silently. `what`: `Kind in version "v1"`."""
    schema = custom.schema
    if schema is None:
        return []
    unknown = [p.lstrip(".") for p in schema.prune(obj)]
    if not unknown or field_validation == "Ignore":
        return []
    fields = [f'unknown field "{p}"' for p in unknown]
    if field_validation == "Strict":
        from cp import errors

        raise errors.BadRequest(f"{what} cannot be handled as a {what.split(' ', 1)[0]}: strict decoding error: "
                                + ", ".join(fields))
    return fields


def apply_defaults(custom: CustomVersion, obj: dict[str, Any]) -> None:
    schema = custom.schema
    if schema is not None:
        schema.apply_defaults(obj)


def prepare_for_create(custom: CustomVersion, obj: dict[str, Any]) -> None:
    """A create cannot set status where status is a subresource."""
    if custom.status:
        obj.pop("status", None)


def validate(custom: CustomVersion, obj: dict[str, Any], old: dict[str, Any] | None, *,
             subresource: str = "", warnings: list[str] | None = None) -> list[Any]:
    """The schema's checks and its CEL rules (`cp.errors.Cause`s), as the custom resource validator runs
    them after the metadata's. On update (`old`), values that did not change are not held against the
    object (ratcheting) and the transition rules see `oldSelf`; a `/status` write checks the status
    against its schema. `warnings` receives what ratcheting turned from an error into a warning."""
    causes: list[Any] = []
    schema = custom.schema
    if schema is not None:
        if old is None:
            causes.extend(schema.validate(obj))
        elif subresource == "status":
            causes.extend(schema.validate_status_update(obj, old))
        else:
            causes.extend(schema.validate_update(obj, old))
    rules = custom.rules
    if rules is not None and not rules.empty():
        causes.extend(rules.validate(obj, old, warnings=warnings))
    return causes


def scale_of(custom: CustomVersion, obj: dict[str, Any]) -> dict[str, Any]:
    """The autoscaling/v1 Scale of a custom resource, read through the scale subresource's paths."""
    paths = custom.scale or {}
    meta = _dict(obj.get("metadata"))
    replicas, _ = get_path(obj, str(paths.get("specReplicasPath") or ""))
    current, _ = get_path(obj, str(paths.get("statusReplicasPath") or ""))
    selector: Any = ""
    if paths.get("labelSelectorPath"):
        found, ok = get_path(obj, str(paths["labelSelectorPath"]))
        selector = found if ok and isinstance(found, str) else ""
    status: dict[str, Any] = {"replicas": current if isinstance(current, int) else 0}
    if selector:
        status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if k in meta},
        "spec": {"replicas": replicas if isinstance(replicas, int) else 0},
        "status": status,
    }


# ------------------------------------------------------------------------------------------ API approval
# Groups of the Kubernetes project (`k8s.io`, `kubernetes.io` and their subdomains) need the
# `api-approved.kubernetes.io` annotation (kubernetes/enhancements#1111): validation refuses a
# definition whose approval state changes to missing or invalid, and the API approval controller reports
# the state in the `KubernetesAPIApprovalPolicyConformant` condition.

APPROVAL_ANNOTATION = "api-approved.kubernetes.io"
_APPROVAL_HELP = "see https://github.com/kubernetes/enhancements/pull/1111"


def protected_group(group: str) -> bool:
    return group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))


def api_approval(annotations: Any) -> tuple[str, str]:
    """(state, reason) of the approval annotation: `Missing`, `Bypassed` (a value starting with
    "unapproved"), `Approved` (a URL with scheme and host) or `Invalid`, with upstream's reasons."""
    value = str(_dict(annotations).get(APPROVAL_ANNOTATION) or "")
    if not value:
        return "Missing", f'protected groups must have approval annotation "{APPROVAL_ANNOTATION}", {_APPROVAL_HELP}'
    if value.startswith("unapproved"):
        return "Bypassed", f'not approved: "{value}"'
    from urllib.parse import urlsplit

    parts = urlsplit(value)
    if parts.scheme and parts.netloc:
        return "Approved", f"approved in {value}"
    return "Invalid", (f'protected groups must have approval annotation "{APPROVAL_ANNOTATION}" with either a '
                       f'URL or a reason starting with "unapproved", {_APPROVAL_HELP}')


def approval_condition(crd: dict[str, Any], *, now: float) -> dict[str, Any] | None:
    """`KubernetesAPIApprovalPolicyConformant` of a definition in a protected group (None elsewhere)."""
    if not protected_group(str(_dict(crd.get("spec")).get("group") or "")):
        return None
    state, reason = api_approval(_dict(crd.get("metadata")).get("annotations"))
    previous = condition(crd, "KubernetesAPIApprovalPolicyConformant")
    if state == "Approved":
        return _condition("KubernetesAPIApprovalPolicyConformant", "True", "ApprovedAnnotation", reason,
                          now=now, previous=previous)
    kind = {"Missing": "MissingAnnotation", "Bypassed": "UnapprovedAnnotation"}.get(state, "InvalidAnnotation")
    return _condition("KubernetesAPIApprovalPolicyConformant", "False", kind, reason, now=now, previous=previous)
