"""Which fields each resource's `fieldSelector` accepts, and how a field reads on an object.

The accepted fields (and the message a rejected one gets) follow the field label conversion
functions the API groups register upstream (`pkg/apis/<group>/<version>/conversion.go`
`AddFieldLabelConversionFunc`; kinds without one accept `metadata.name` and `metadata.namespace`);
the values follow each registry's `GetAttrs` / selectable fields (`pkg/registry/...`), as strings
(`"true"`/`"false"` for booleans, decimal for counts; a missing field reads as ""). Parsing and
matching are `cp.selectors`'. Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

__all__ = ["FieldGetter", "FieldLabels", "custom_field_labels", "field_labels", "go_quote"]

FieldGetter = Callable[[Mapping[str, Any]], str]


def go_quote(s: str) -> str:
    """Go's %q for a string (close enough: escapes quotes, backslashes and control characters)."""
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


class FieldLabels(NamedTuple):
    """A resource's selectable fields: getters by field name, the message for any other field, and
    the names old clients send that upstream rewrites (`spec.host` for pods)."""

    getters: Mapping[str, FieldGetter]
    rejection: Callable[[str], str]
    aliases: Mapping[str, str]


def _path(*keys: str) -> FieldGetter:
    """Getter for a nested string field; missing or null reads as ""."""
    if len(keys) == 1:
        (k0,) = keys
        return lambda o: o.get(k0) or ""
    if len(keys) == 2:
        k0, k1 = keys
        return lambda o: (o.get(k0) or {}).get(k1) or ""

    def get(o: Mapping[str, Any]) -> str:
        cur: Any = o
        for k in keys:
            cur = (cur or {}).get(k)
        return cur or ""

    return get


def _bool_path(*keys: str) -> FieldGetter:
    def get(o: Mapping[str, Any]) -> str:
        cur: Any = o
        for k in keys:
            cur = (cur or {}).get(k)
        return "true" if cur else "false"

    return get


def _count_path(*keys: str) -> FieldGetter:
    """An integer field in decimal ("0" when missing)."""
    def get(o: Mapping[str, Any]) -> str:
        cur: Any = o
        for k in keys:
            cur = (cur or {}).get(k)
        return str(cur or 0)

    return get


def _pod_ip(o: Mapping[str, Any]) -> str:
    status = o.get("status") or {}
    ips = status.get("podIPs")
    if ips:
        return (ips[0] or {}).get("ip") or ""
    return status.get("podIP") or ""


def _absent(_: Mapping[str, Any]) -> str:
    """A field the conversion accepts but the registry's field set lacks: it always reads as ""."""
    return ""


def _not_supported(field: str) -> str:
    return f"field label not supported: {field}"


def _not_supported_for(what: str) -> Callable[[str], str]:
    return lambda field: f"field label not supported for {what}: {field}"


def _default_rejection(field: str) -> str:
    return f'{go_quote(field)} is not a known field selector: only "metadata.name", "metadata.namespace"'


_NAME = _path("metadata", "name")
_NAMESPACE = _path("metadata", "namespace")
_META = {"metadata.name": _NAME, "metadata.namespace": _NAMESPACE}
_NO_ALIASES: Mapping[str, str] = {}


def _labels(getters: Mapping[str, FieldGetter], rejection: Callable[[str], str] = _not_supported,
            aliases: Mapping[str, str] = _NO_ALIASES) -> FieldLabels:
    return FieldLabels(getters, rejection, aliases)


_CORE_EVENTS = _labels({
    **_META,
    "involvedObject.kind": _path("involvedObject", "kind"),
    "involvedObject.namespace": _path("involvedObject", "namespace"),
    "involvedObject.name": _path("involvedObject", "name"),
    "involvedObject.uid": _path("involvedObject", "uid"),
    "involvedObject.apiVersion": _path("involvedObject", "apiVersion"),
    "involvedObject.resourceVersion": _path("involvedObject", "resourceVersion"),
    "involvedObject.fieldPath": _path("involvedObject", "fieldPath"),
    "reason": _path("reason"),
    "reportingComponent": _path("reportingComponent"),
    "source": _path("source", "component"),
    "type": _path("type"),
})

# (group, resource) -> its field labels; resources not listed get `_DEFAULT`.
_FIELDS: dict[tuple[str, str], FieldLabels] = {
    ("", "pods"): _labels({
        **_META,
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.restartPolicy": _path("spec", "restartPolicy"),
        "spec.schedulerName": _path("spec", "schedulerName"),
        "spec.serviceAccountName": _path("spec", "serviceAccountName"),
        "spec.hostNetwork": _bool_path("spec", "hostNetwork"),
        "status.phase": _path("status", "phase"),
        "status.podIP": _pod_ip,
        "status.podIPs": _absent,  # accepted upstream, but not among a pod's selectable fields
        "status.nominatedNodeName": _path("status", "nominatedNodeName"),
    }, aliases={"spec.host": "spec.nodeName"}),
    ("", "events"): _CORE_EVENTS,
    ("", "namespaces"): _labels({"metadata.name": _NAME, "status.phase": _path("status", "phase")}),
    ("", "nodes"): _labels({"metadata.name": _NAME, "spec.unschedulable": _bool_path("spec", "unschedulable")}),
    ("", "replicationcontrollers"): _labels({**_META, "status.replicas": _count_path("status", "replicas")}),
    ("", "secrets"): _labels({**_META, "type": _path("type")}),
    ("", "services"): _labels({**_META, "spec.clusterIP": _path("spec", "clusterIP"),
                               "spec.type": _path("spec", "type")}),
    # ReplicaSets: their registry has a status.replicas field, but apps/v1 registers no conversion
    # accepting it, so kube-apiserver 1.3x refuses it like any unknown field (kubernetes#135136).
    ("batch", "jobs"): _labels({**_META, "status.successful": _count_path("status", "succeeded")},
                               lambda field: f"field label {go_quote(field)} not supported for batchv1.Job"),
    ("certificates.k8s.io", "certificatesigningrequests"): _labels({
        "metadata.name": _NAME, "spec.signerName": _path("spec", "signerName")}),
    ("certificates.k8s.io", "clustertrustbundles"): _labels({
        "metadata.name": _NAME, "spec.signerName": _path("spec", "signerName")}),
    ("certificates.k8s.io", "podcertificaterequests"): _labels({
        "metadata.name": _NAME,
        "spec.signerName": _path("spec", "signerName"),
        "spec.podName": _path("spec", "podName"),
        "spec.nodeName": _path("spec", "nodeName"),
    }),
    # events.k8s.io/v1 names the core fields anew (regarding, reportingController); its Events are the
    # stored core Events (`cp.conversions`), so the values are read from the core fields.
    ("events.k8s.io", "events"): _labels({
        **_META,
        "reason": _path("reason"),
        "type": _path("type"),
        "regarding.kind": _path("involvedObject", "kind"),
        "regarding.namespace": _path("involvedObject", "namespace"),
        "regarding.name": _path("involvedObject", "name"),
        "regarding.uid": _path("involvedObject", "uid"),
        "regarding.apiVersion": _path("involvedObject", "apiVersion"),
        "regarding.resourceVersion": _path("involvedObject", "resourceVersion"),
        "regarding.fieldPath": _path("involvedObject", "fieldPath"),
        "reportingController": _path("reportingComponent"),
    }),
    ("resource.k8s.io", "resourceslices"): _labels({
        "metadata.name": _NAME,
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.driver": _path("spec", "driver"),
    }, _not_supported_for("resource.k8s.io/v1, Kind=ResourceSlice")),
}
_DEFAULT = _labels(_META, _default_rejection)


_VERSIONED: dict[tuple[str, str, str], FieldLabels] = {}


def version_field_labels(*, group: str, version: str, resource: str) -> FieldLabels | None:
    """The field labels of another served version of a built-in resource when they differ from
    `field_labels`' (None otherwise): ResourceSlice's versions accept the same labels, each naming
    itself when it refuses one (upstream registers a label conversion per version)."""
    if (group, resource) != ("resource.k8s.io", "resourceslices") or version == "v1":
        return None
    found = _VERSIONED.get((group, version, resource))
    if found is None:
        base = _FIELDS[(group, resource)]
        found = _VERSIONED[(group, version, resource)] = _labels(
            base.getters, _not_supported_for(f"{group}/{version}, Kind=ResourceSlice"))
    return found


def field_labels(*, group: str, resource: str) -> FieldLabels:
    """The field labels of a resource (`resource` is the plural)."""
    return _FIELDS.get((group, resource), _DEFAULT)



# ---------------------------------------------------------------------------------------------
# Custom resources


def _selectable(path: str) -> FieldGetter:
    """A `selectableFields` entry's value, as the custom resource strategy reads it: the JSONPath's one
    result printed with `fmt.Sprint` (`2`, `true`, `blue`), "" when nothing is there or it is null."""
    from cp import jsonpath

    try:
        parsed: Any = jsonpath.parse("{" + path + "}")
    except jsonpath.JSONPathError:
        parsed = None

    def get(o: Mapping[str, Any]) -> str:
        if parsed is None:
            return ""
        value, found = parsed.first(o)
        return jsonpath.go_sprint(value) if found and value is not None else ""

    return get


def _custom_not_supported(field: str) -> str:
    return f"field label not supported: {field}"


_CUSTOM: dict[Any, FieldLabels] = {}


def custom_field_labels(*, key: Any, selectable: Sequence[str], namespaced: bool) -> FieldLabels:
    """The field labels of a custom resource version, as apiextensions-apiserver's converter accepts
    them (`crConverter.ConvertFieldLabel`): `metadata.name`, `metadata.namespace` for a namespaced
    resource, and the version's `selectableFields` (their JSON paths without the leading dot); any other
    field is "field label not supported: <field>". `key` names the definition generation (made once per
    key)."""
    found = _CUSTOM.get(key)
    if found is None:
        getters: dict[str, FieldGetter] = {"metadata.name": _NAME}
        if namespaced:
            getters["metadata.namespace"] = _NAMESPACE
        for path in selectable:
            getters.setdefault(path.removeprefix("."), _selectable(path))
        if len(_CUSTOM) > 1024:
            _CUSTOM.clear()
        found = _CUSTOM[key] = _labels(getters, _custom_not_supported)
    return found
