"""Validation rules for core/v1, apps/v1, autoscaling/v2 and coordination.k8s.io/v1 kinds.

Behaviour follows upstream `pkg/apis/core/validation`, `pkg/apis/apps/validation`,
`pkg/apis/autoscaling/validation` and `pkg/apis/coordination/validation`; only the rules that
matter for this control plane are implemented (see `docs` in the module functions). Pure.
"""

from __future__ import annotations

import json
import re
from typing import Any

from cp import quantity
from cp import validation as v
from cp.defaulting import VOLUME_SOURCES
from cp.errors import Cause

_INT32_MAX = (1 << 31) - 1
_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")
_CONTAINER_RESTART_POLICIES = ("Always",)
_STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
_CONFIG_MAP_MAX = 1024 * 1024

_list, _dict, _str, _is_int = v._list, v._dict, v._str, v._is_int


# ---------------------------------------------------------------- quantities and resources

def _quantity(value: Any) -> Any:
    try:
        return quantity.parse(value)
    except (quantity.QuantityError, TypeError):
        return None


def _is_native(name: str) -> bool:
    return "/" not in name or name.startswith("kubernetes.io/")


def _overcommit_allowed(name: str) -> bool:
    return _is_native(name) and not name.startswith("hugepages-")


def _validate_resource_requirements(r: Any, path: str, errs: list[Cause], pod_claims: set[str] | None) -> None:
    """validateResourceRequirements for containers."""
    r = _dict(r)
    limits = _dict(r.get("limits"))
    requests = _dict(r.get("requests"))
    lim_path, req_path = f"{path}.limits", f"{path}.requests"
    for name, raw in limits.items():
        _validate_resource_name(name, f"{lim_path}[{name}]", errs)
        _validate_resource_quantity(name, raw, f"{lim_path}[{name}]", errs)
    for name, raw in requests.items():
        _validate_resource_name(name, f"{req_path}[{name}]", errs)
        _validate_resource_quantity(name, raw, f"{req_path}[{name}]", errs)
        if name in limits:
            rq, lq = _quantity(raw), _quantity(limits[name])
            if rq is None or lq is None:
                continue
            if rq != lq and not _overcommit_allowed(name):
                errs.append(Cause("Invalid", req_path, f"must be equal to {name} limit of {limits[name]}", str(raw)))
            elif rq > lq:
                errs.append(Cause("Invalid", req_path, f"must be less than or equal to {name} limit of "
                                  f"{limits[name]}", str(raw)))
        elif not _overcommit_allowed(name):
            errs.append(Cause("Required", lim_path, "Limit must be set for non overcommitable resources"))
    if pod_claims is not None:
        _validate_container_claims(r.get("claims"), pod_claims, f"{path}.claims", errs)


def _validate_resource_quantity(name: str, raw: Any, path: str, errs: list[Cause]) -> None:
    q = _quantity(raw)
    if q is None:
        return
    if q < 0:
        errs.append(Cause("Invalid", path, "must be greater than or equal to 0", str(raw)))
    if not _is_native(name) and q != q.to_integral_value():
        errs.append(Cause("Invalid", path, "must be an integer", str(raw)))


def _validate_resource_name(name: str, path: str, errs: list[Cause]) -> None:
    """validateContainerResourceName."""
    msgs = v.is_qualified_name(name)
    v._each(errs, path, name, msgs)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            errs.append(Cause("Invalid", path, "must be a standard resource for containers", name))
    elif not _is_native(name) and (msgs or v.is_qualified_name("requests." + name) or
                                   name.startswith("requests.")):
        errs.append(Cause("Invalid", path, "doesn't follow extended resource name standard", name))


def _validate_container_claims(claims: Any, pod_claims: set[str], path: str, errs: list[Cause]) -> None:
    seen: set[str] = set()
    for i, claim in enumerate(_list(claims)):
        claim = _dict(claim)
        name = _str(claim.get("name"))
        cpath = f"{path}[{i}]"
        if not name:
            errs.append(Cause("Required", cpath, ""))
            continue
        key = name
        request = _str(claim.get("request"))
        if request:
            v._each(errs, f"{cpath}.request", request, v.is_dns1123_label(request))
            key += "/" + request
        if key in seen:
            errs.append(Cause("Duplicate", cpath, "", name))
        else:
            seen.add(key)
        if name not in pod_claims:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += " which is empty" if not pod_claims else ": " + ", ".join(sorted(pod_claims))
            errs.append(Cause("NotFound", cpath, detail, name))


# ---------------------------------------------------------------- containers

def _validate_probe(probe: Any, path: str, errs: list[Cause]) -> None:
    if not isinstance(probe, dict):
        return
    for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
                "failureThreshold"):
        v._nonnegative(errs, f"{path}.{key}", probe.get(key))
    handlers = [k for k in ("exec", "httpGet", "tcpSocket", "grpc") if probe.get(k) is not None]
    if not handlers:
        errs.append(Cause("Required", path, "must specify a handler type"))
    elif len(handlers) > 1:
        errs.append(Cause("Forbidden", f"{path}.{handlers[1]}", "may not specify more than 1 handler type"))


def _validate_ports(ports: Any, path: str, errs: list[Cause]) -> None:
    names: set[str] = set()
    for i, port in enumerate(_list(ports)):
        port = _dict(port)
        ppath = f"{path}[{i}]"
        name = _str(port.get("name"))
        if name:
            v._each(errs, f"{ppath}.name", name, v.is_valid_port_name(name))
            if name in names:
                errs.append(Cause("Duplicate", f"{ppath}.name", "", name))
            names.add(name)
        cp_ = port.get("containerPort")
        if cp_ is None or cp_ == 0:
            errs.append(Cause("Required", f"{ppath}.containerPort", ""))
        elif _is_int(cp_) and not 1 <= cp_ <= 65535:
            errs.append(Cause("Invalid", f"{ppath}.containerPort", "must be between 1 and 65535, inclusive", cp_))
        hp = port.get("hostPort")
        if _is_int(hp) and hp != 0 and not 1 <= hp <= 65535:
            errs.append(Cause("Invalid", f"{ppath}.hostPort", "must be between 1 and 65535, inclusive", hp))
        proto = port.get("protocol")
        if not proto:
            errs.append(Cause("Required", f"{ppath}.protocol", ""))
        elif proto not in _PROTOCOLS:
            v._not_supported(errs, f"{ppath}.protocol", proto, _PROTOCOLS)


def _validate_env(env: Any, path: str, errs: list[Cause]) -> None:
    for i, e in enumerate(_list(env)):
        e = _dict(e)
        epath = f"{path}[{i}]"
        name = _str(e.get("name"))
        if not name:
            errs.append(Cause("Required", f"{epath}.name", ""))
        elif "=" in name or any(not (32 <= ord(ch) < 127) for ch in name):
            errs.append(Cause("Invalid", f"{epath}.name", "a valid environment variable name must consist only of "
                              "printable ASCII characters other than '='", name))
        source = e.get("valueFrom")
        if isinstance(source, dict):
            if e.get("value"):
                errs.append(Cause("Invalid", f"{epath}.valueFrom", "may not be specified when `value` is not empty",
                                  ""))
            kinds = [k for k in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef", "fileKeyRef")
                     if source.get(k) is not None]
            if not kinds:
                errs.append(Cause("Invalid", f"{epath}.valueFrom", "must specify one of: `fieldRef`, "
                                  "`resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`", ""))
            elif len(kinds) > 1:
                errs.append(Cause("Invalid", f"{epath}.valueFrom", "may not have more than one field specified at "
                                  "a time", ""))


def _validate_container(c: dict[str, Any], path: str, errs: list[Cause], *, names: set[str],
                        volumes: set[str], pod_claims: set[str], kind: str) -> None:
    """validateContainerCommon plus the per-kind extras (kind: containers|initContainers|ephemeral)."""
    name = _str(c.get("name"))
    if not name:
        errs.append(Cause("Required", f"{path}.name", ""))
    else:
        v._each(errs, f"{path}.name", name, v.is_dns1123_label(name))
    if not _str(c.get("image")):
        errs.append(Cause("Required", f"{path}.image", ""))
    _validate_ports(c.get("ports"), f"{path}.ports", errs)
    _validate_env(c.get("env"), f"{path}.env", errs)
    mounts: set[str] = set()
    for i, m in enumerate(_list(c.get("volumeMounts"))):
        m = _dict(m)
        mpath = f"{path}.volumeMounts[{i}]"
        mname = _str(m.get("name"))
        if not mname:
            errs.append(Cause("Required", f"{mpath}.name", ""))
        elif mname not in volumes:
            errs.append(Cause("NotFound", f"{mpath}.name", "", mname))
        mp = _str(m.get("mountPath"))
        if not mp:
            errs.append(Cause("Required", f"{mpath}.mountPath", ""))
        elif mp in mounts:
            errs.append(Cause("Invalid", f"{mpath}.mountPath", "must be unique", mp))
        mounts.add(mp)
    policy = c.get("imagePullPolicy")
    if not policy:
        errs.append(Cause("Required", f"{path}.imagePullPolicy", ""))
    elif policy not in _PULL_POLICIES:
        v._not_supported(errs, f"{path}.imagePullPolicy", policy, _PULL_POLICIES)
    if kind != "ephemeralContainers":
        _validate_resource_requirements(c.get("resources"), f"{path}.resources", errs, pod_claims)
    if name and name in names:
        errs.append(Cause("Duplicate", f"{path}.name", "", name))
    elif name:
        names.add(name)
    if kind == "ephemeralContainers":
        for forbidden in ("ports", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle"):
            if c.get(forbidden):
                errs.append(Cause("Forbidden", f"{path}.{forbidden}", "cannot be set for an Ephemeral Container"))
        return
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        _validate_probe(c.get(key), f"{path}.{key}", errs)
    rp = c.get("restartPolicy")
    if rp is not None and kind == "containers":
        errs.append(Cause("Forbidden", f"{path}.restartPolicy", "may not be set for non-init containers"))
    elif rp is not None and kind == "initContainers" and rp not in _CONTAINER_RESTART_POLICIES:
        v._not_supported(errs, f"{path}.restartPolicy", rp, _CONTAINER_RESTART_POLICIES)


# ---------------------------------------------------------------- tolerations, taints

def validate_tolerations(tolerations: Any, path: str, errs: list[Cause]) -> None:
    for i, t in enumerate(_list(tolerations)):
        t = _dict(t)
        tpath = f"{path}[{i}]"
        key = _str(t.get("key"))
        op = t.get("operator") or ""
        if key:
            v.validate_label_name(key, f"{tpath}.key", errs)
        if not key and op != "Exists":
            errs.append(Cause("Invalid", f"{tpath}.operator",
                              "operator must be Exists when `key` is empty, which means \"match all values and "
                              "all keys\"", op))
        effect = t.get("effect") or ""
        if t.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(Cause("Invalid", f"{tpath}.effect", "effect must be 'NoExecute' when `tolerationSeconds` "
                              "is set", effect))
        value = _str(t.get("value"))
        if op in ("Equal", ""):
            msgs = v.is_label_value(value)
            if msgs:
                errs.append(Cause("Invalid", f"{tpath}.operator", ";".join(msgs), value))
        elif op == "Exists":
            if value:
                errs.append(Cause("Invalid", f"{tpath}.operator", "value must be empty when `operator` is 'Exists'",
                                  v.GoValue("core.Toleration{...}")))
        elif op in ("Lt", "Gt"):
            if not re.match(r"^-?[0-9]+$", value):
                errs.append(Cause("Invalid", f"{tpath}.value", "value must be a valid integer for numeric "
                                  "comparison operators", value))
        else:
            v._not_supported(errs, f"{tpath}.operator", op, ("Equal", "Exists"))
        if effect and effect not in _TAINT_EFFECTS:
            v._not_supported(errs, f"{tpath}.effect", effect, _TAINT_EFFECTS)


def _validate_taints(taints: Any, path: str, errs: list[Cause]) -> None:
    seen: set[tuple[str, str]] = set()
    for i, t in enumerate(_list(taints)):
        t = _dict(t)
        tpath = f"{path}[{i}]"
        key = _str(t.get("key"))
        v.validate_label_name(key, f"{tpath}.key", errs)
        value = _str(t.get("value"))
        if value:
            v._each(errs, f"{tpath}.value", value, v.is_label_value(value))
        effect = _str(t.get("effect"))
        if not effect:
            errs.append(Cause("Required", f"{tpath}.effect", ""))
        elif effect not in _TAINT_EFFECTS:
            v._not_supported(errs, f"{tpath}.effect", effect, _TAINT_EFFECTS)
        if (key, effect) in seen:
            errs.append(Cause("Duplicate", tpath, "taints must be unique by key and effect pair",
                              v.GoValue(f"core.Taint{{Key:{json.dumps(key)}, Effect:{json.dumps(effect)}}}")))
        seen.add((key, effect))


# ---------------------------------------------------------------- pod spec

def _validate_volumes(volumes: Any, path: str, errs: list[Cause]) -> set[str]:
    names: set[str] = set()
    for i, vol in enumerate(_list(volumes)):
        vol = _dict(vol)
        vpath = f"{path}[{i}]"
        name = _str(vol.get("name"))
        before = len(errs)
        sources = [s for s in VOLUME_SOURCES if vol.get(s) is not None]
        if not sources:
            errs.append(Cause("Required", vpath, "must specify a volume type"))
        for extra in sources[1:]:
            errs.append(Cause("Forbidden", f"{vpath}.{extra}", "may not specify more than 1 volume type"))
        if not name:
            errs.append(Cause("Required", f"{vpath}.name", ""))
        else:
            v._each(errs, f"{vpath}.name", name, v.is_dns1123_label(name))
        if name in names:
            errs.append(Cause("Duplicate", f"{vpath}.name", "", name))
        if len(errs) == before:
            names.add(name)
    return names


def _validate_pod_resource_claims(pod_name: str, claims: Any, path: str, errs: list[Cause]) -> set[str]:
    names: set[str] = set()
    for i, claim in enumerate(_list(claims)):
        claim = _dict(claim)
        cpath = f"{path}[{i}]"
        name = _str(claim.get("name"))
        rcn, rctn = claim.get("resourceClaimName"), claim.get("resourceClaimTemplateName")
        if not name:
            errs.append(Cause("Required", f"{cpath}.name", ""))
        elif name in names:
            errs.append(Cause("Duplicate", f"{cpath}.name", "", name))
        else:
            msgs = v.is_dns1123_label(name)
            if msgs:
                v._each(errs, f"{cpath}.name", name, msgs)
            elif pod_name and rctn is not None:
                final = f"{pod_name}-{name}"
                for m in v.is_dns1123_subdomain(final):
                    errs.append(Cause("Invalid", f"{cpath}.name", "final ResourceClaim name: " + m, final))
            names.add(name)
        shown = v.GoValue(_go_pod_resource_claim(claim))
        if rcn is not None and rctn is not None:
            errs.append(Cause("Invalid", cpath, "at most one of `resourceClaimName` or `resourceClaimTemplateName` "
                              "may be specified", shown))
        if rcn is None and rctn is None:
            errs.append(Cause("Invalid", cpath, "must specify one of: `resourceClaimName`, "
                              "`resourceClaimTemplateName`", shown))
        if isinstance(rcn, str):
            v._each(errs, f"{cpath}.resourceClaimName", rcn, v.is_dns1123_subdomain(rcn))
        if isinstance(rctn, str):
            v._each(errs, f"{cpath}.resourceClaimTemplateName", rctn, v.is_dns1123_subdomain(rctn))
    return names


def _go_pod_resource_claim(claim: dict[str, Any]) -> str:
    def ptr(x: Any) -> str:
        return "(*string)(nil)" if x is None else f"&{json.dumps(x)}"
    return (f"core.PodResourceClaim{{Name:{json.dumps(_str(claim.get('name')))}, "
            f"ResourceClaimName:{ptr(claim.get('resourceClaimName'))}, "
            f"ResourceClaimTemplateName:{ptr(claim.get('resourceClaimTemplateName'))}}}")


def validate_pod_spec(spec: Any, path: str, errs: list[Cause], *, pod_name: str = "") -> None:
    spec = _dict(spec)
    if spec.get("terminationGracePeriodSeconds") is None:
        errs.append(Cause("Required", f"{path}.terminationGracePeriodSeconds", ""))
    volumes = _validate_volumes(spec.get("volumes"), f"{path}.volumes", errs)
    pod_claims = _validate_pod_resource_claims(pod_name, spec.get("resourceClaims"), f"{path}.resourceClaims",
                                               errs)
    names: set[str] = set()
    containers = _list(spec.get("containers"))
    if not containers:
        errs.append(Cause("Required", f"{path}.containers", ""))
    for i, c in enumerate(containers):
        _validate_container(_dict(c), f"{path}.containers[{i}]", errs, names=names, volumes=volumes,
                            pod_claims=pod_claims, kind="containers")
    for i, c in enumerate(_list(spec.get("initContainers"))):
        _validate_container(_dict(c), f"{path}.initContainers[{i}]", errs, names=names, volumes=volumes,
                            pod_claims=pod_claims, kind="initContainers")
    for i, c in enumerate(_list(spec.get("ephemeralContainers"))):
        _validate_container(_dict(c), f"{path}.ephemeralContainers[{i}]", errs, names=names, volumes=volumes,
                            pod_claims=pod_claims, kind="ephemeralContainers")
    rp = spec.get("restartPolicy")
    if not rp:
        errs.append(Cause("Required", f"{path}.restartPolicy", ""))
    elif rp not in _RESTART_POLICIES:
        v._not_supported(errs, f"{path}.restartPolicy", rp, _RESTART_POLICIES)
    dp = spec.get("dnsPolicy")
    if not dp:
        errs.append(Cause("Required", f"{path}.dnsPolicy", ""))
    elif dp not in _DNS_POLICIES:
        v._not_supported(errs, f"{path}.dnsPolicy", dp, _DNS_POLICIES)
    v.validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector", errs)
    for i, s in enumerate(_list(spec.get("imagePullSecrets"))):
        if not _str(_dict(s).get("name")):
            errs.append(Cause("Required", f"{path}.imagePullSecrets[{i}].name", ""))
    gates: set[str] = set()
    for i, g in enumerate(_list(spec.get("schedulingGates"))):
        gname = _str(_dict(g).get("name"))
        v.validate_label_name(gname, f"{path}.schedulingGates[{i}]", errs)
        if gname in gates:
            errs.append(Cause("Duplicate", f"{path}.schedulingGates[{i}]", "", gname))
        gates.add(gname)
    for key in ("serviceAccountName", "nodeName", "priorityClassName"):
        value = _str(spec.get(key))
        if value:
            v._each(errs, f"{path}.{key}", value, v.is_dns1123_subdomain(value))
    ads = spec.get("activeDeadlineSeconds")
    if _is_int(ads) and not 1 <= ads <= _INT32_MAX:
        errs.append(Cause("Invalid", f"{path}.activeDeadlineSeconds",
                          f"must be between 1 and {_INT32_MAX}, inclusive", ads))
    for key in ("hostname", "subdomain"):
        value = _str(spec.get(key))
        if value:
            v._each(errs, f"{path}.{key}", value, v.is_dns1123_label(value))
    validate_tolerations(spec.get("tolerations"), f"{path}.tolerations", errs)
    pp = spec.get("preemptionPolicy")
    if pp is not None and pp not in _PREEMPTION_POLICIES:
        v._not_supported(errs, f"{path}.preemptionPolicy", pp, _PREEMPTION_POLICIES)


def _validate_pod_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    v.validate_object_meta(meta, errs, namespaced=namespaced, name_fn=v.name_is_dns_subdomain)
    spec = _dict(obj.get("spec"))
    validate_pod_spec(spec, "spec", errs, pod_name=_str(meta.get("name")))
    if _list(spec.get("ephemeralContainers")):
        errs.append(Cause("Forbidden", "spec.ephemeralContainers", "cannot be set on create"))
    if spec.get("nodeName") and _list(spec.get("schedulingGates")):
        errs.append(Cause("Forbidden", "spec.nodeName", "cannot be set until all schedulingGates have been cleared"))


_POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def _validate_pod_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    validate_pod_spec(spec, "spec", errs, pod_name=_str(v._meta(new).get("name")))
    for key in ("containers", "initContainers"):
        nc, oc = _list(spec.get(key)), _list(old_spec.get(key))
        if len(nc) != len(oc):
            errs.append(Cause("Forbidden", f"spec.{key}", "pod updates may not add or remove containers"))
            return
        for i, c in enumerate(nc):
            image = _str(_dict(c).get("image"))
            if not image:
                errs.append(Cause("Required", f"spec.{key}[{i}].image", ""))
            if image.strip() != image:
                errs.append(Cause("Invalid", f"spec.{key}[{i}].image", "must not have leading or trailing whitespace",
                                  image))
    ads, old_ads = spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    if ads is not None:
        if _is_int(ads) and not 0 <= ads <= _INT32_MAX:
            errs.append(Cause("Invalid", "spec.activeDeadlineSeconds", f"must be between 0 and {_INT32_MAX}, "
                              "inclusive", ads))
            return
        if _is_int(old_ads) and _is_int(ads) and old_ads < ads:
            errs.append(Cause("Invalid", "spec.activeDeadlineSeconds", "must be less than or equal to previous value",
                              ads))
            return
    elif old_ads is not None:
        errs.append(Cause("Invalid", "spec.activeDeadlineSeconds", "must not update from a positive integer to nil "
                          "value", v.GoValue("null")))
    new_tols, old_tols = _list(spec.get("tolerations")), _list(old_spec.get("tolerations"))
    for old_t in old_tols:
        base = {k: x for k, x in _dict(old_t).items() if k != "tolerationSeconds"}
        if not any({k: x for k, x in _dict(t).items() if k != "tolerationSeconds"} == base for t in new_tols):
            errs.append(Cause("Forbidden", "spec.tolerations",
                              "existing toleration can not be modified except its tolerationSeconds"))
            break
    old_gates = {_str(_dict(g).get("name")) for g in _list(old_spec.get("schedulingGates"))}
    for i, g in enumerate(_list(spec.get("schedulingGates"))):
        gname = _str(_dict(g).get("name"))
        if gname not in old_gates:
            errs.append(Cause("Forbidden", f"spec.schedulingGates[{i}].name",
                              f"only deletion is allowed, but found new scheduling gate '{gname}'"))
    if spec == old_spec:
        return
    munged = dict(spec)
    for key in ("containers", "initContainers"):
        nc, oc = _list(spec.get(key)), _list(old_spec.get(key))
        if nc:
            munged[key] = [dict(_dict(c), image=_dict(o).get("image")) if "image" in _dict(o) else
                           {k: x for k, x in _dict(c).items() if k != "image"} for c, o in zip(nc, oc, strict=False)]
    for key in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        if key in old_spec:
            munged[key] = old_spec[key]
        else:
            munged.pop(key, None)
    if not old_spec.get("schedulingGates") and "schedulingGates" in munged:
        munged.pop("schedulingGates")
    old_tgps, new_tgps = old_spec.get("terminationGracePeriodSeconds"), spec.get("terminationGracePeriodSeconds")
    if _is_int(old_tgps) and old_tgps < 0 and new_tgps == 1:
        munged["terminationGracePeriodSeconds"] = old_tgps
    # While scheduling gates remain, node selectors and node affinity may be added (mutable scheduling
    # directives); accept additions to nodeSelector.
    if old_spec.get("schedulingGates"):
        old_sel, new_sel = _dict(old_spec.get("nodeSelector")), _dict(spec.get("nodeSelector"))
        if all(new_sel.get(k) == x for k, x in old_sel.items()):
            if "nodeSelector" in old_spec:
                munged["nodeSelector"] = old_spec["nodeSelector"]
            else:
                munged.pop("nodeSelector", None)
        if "affinity" in old_spec or "affinity" in spec:
            if "affinity" in old_spec:
                munged["affinity"] = old_spec["affinity"]
            else:
                munged.pop("affinity", None)
    if munged != old_spec:
        errs.append(Cause("Forbidden", "spec", _POD_UPDATE_FORBIDDEN + "\n" + _spec_diff(old_spec, munged)))


def _spec_diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    """A compact rendering in the spirit of cmp.Diff of the changed top-level PodSpec fields."""
    lines = ["  core.PodSpec{"]
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            field = key[:1].upper() + key[1:]
            if key in old:
                lines.append(f"- \t{field}: {json.dumps(old[key], sort_keys=True)},")
            if key in new:
                lines.append(f"+ \t{field}: {json.dumps(new[key], sort_keys=True)},")
    lines.append("  }")
    return "\n".join(lines) + "\n"


def _validate_pod_status_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    status = _dict(new.get("status"))
    node = _str(_dict(new.get("spec")).get("nodeName"))
    old_node = _str(_dict(old.get("spec")).get("nodeName"))
    if node != old_node:
        errs.append(Cause("Forbidden", "status.nodeName", "may not be changed directly"))
    for i, c in enumerate(_list(status.get("conditions"))):
        c = _dict(c)
        if not _str(c.get("type")):
            errs.append(Cause("Required", f"status.conditions[{i}].type", ""))


# ---------------------------------------------------------------- apps/v1

def _validate_pod_template(template: Any, selector: Any, path: str, errs: list[Cause]) -> None:
    """ValidatePodTemplateSpecForReplicaSet."""
    if not isinstance(template, dict):
        errs.append(Cause("Required", path, ""))
        return
    meta = _dict(template.get("metadata"))
    labels = _dict(meta.get("labels"))
    if isinstance(selector, dict) and (selector.get("matchLabels") or selector.get("matchExpressions")) \
            and not v.selector_matches(selector, labels):
        errs.append(Cause("Invalid", f"{path}.metadata.labels", "`selector` does not match template `labels`",
                              v.go_string_map(labels)))
    v.validate_labels(meta.get("labels"), f"{path}.metadata.labels", errs)
    v.validate_annotations(meta.get("annotations"), f"{path}.metadata.annotations", errs)
    spec = _dict(template.get("spec"))
    validate_pod_spec(spec, f"{path}.spec", errs)
    rp = spec.get("restartPolicy")
    if rp and rp != "Always":
        v._not_supported(errs, f"{path}.spec.restartPolicy", rp, ("Always",))
    if spec.get("activeDeadlineSeconds") is not None:
        errs.append(Cause("Invalid", f"{path}.spec.activeDeadlineSeconds",
                          "activeDeadlineSeconds in ReplicaSet is not Supported", spec.get("activeDeadlineSeconds")))


def _validate_selector_and_template(spec: dict[str, Any], errs: list[Cause], what: str) -> None:
    """Selector required and non-empty; the template is validated only when the selector converts
    (upstream reports `invalid label selector` otherwise)."""
    sel = spec.get("selector")
    if sel is None:
        errs.append(Cause("Required", "spec.selector", ""))
    else:
        v.validate_label_selector(sel, "spec.selector", errs)
        if not _dict(sel).get("matchLabels") and not _dict(sel).get("matchExpressions"):
            errs.append(Cause("Invalid", "spec.selector", f"empty selector is invalid for {what}",
                              v.go_label_selector(sel)))
    if sel is not None and not _selector_converts(sel):
        errs.append(Cause("Invalid", "spec.selector", "invalid label selector", v.go_label_selector(sel)))
        return
    _validate_pod_template(spec.get("template"), sel, "spec.template", errs)


def _selector_converts(sel: Any) -> bool:
    for req in _list(_dict(sel).get("matchExpressions")):
        req = _dict(req)
        op, values = req.get("operator"), _list(req.get("values"))
        if op in ("In", "NotIn") and not values:
            return False
        if op in ("Exists", "DoesNotExist") and values:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
        if v.is_qualified_name(_str(req.get("key"))):
            return False
    for key, value in _dict(_dict(sel).get("matchLabels")).items():
        if v.is_qualified_name(key) or v.is_label_value(_str(value)):
            return False
    return True


def _int_or_percent(value: Any, path: str, errs: list[Cause]) -> tuple[int | None, bool]:
    """ValidatePositiveIntOrPercent; returns (number, is_percent)."""
    if isinstance(value, str):
        if not v._PERCENT.match(value):
            errs.append(Cause("Invalid", path, "a valid percent string must be a numeric string followed by an "
                              "ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')", value))
            return None, True
        return int(value[:-1]), True
    if _is_int(value):
        if value < 0:
            errs.append(Cause("Invalid", path, "must be greater than or equal to 0", value))
        return value, False
    return None, False


def _validate_deployment_spec(spec: dict[str, Any], errs: list[Cause]) -> None:
    v._nonnegative(errs, "spec.replicas", spec.get("replicas"))
    _validate_selector_and_template(spec, errs, "deployment")
    strategy = _dict(spec.get("strategy"))
    stype = strategy.get("type")
    if not stype:
        errs.append(Cause("Required", "spec.strategy.type", ""))
    elif stype not in ("Recreate", "RollingUpdate"):
        v._not_supported(errs, "spec.strategy.type", stype, ("Recreate", "RollingUpdate"))
    ru = strategy.get("rollingUpdate")
    if stype == "Recreate" and ru is not None:
        errs.append(Cause("Forbidden", "spec.strategy.rollingUpdate",
                          "may not be specified when strategy `type` is 'Recreate'"))
    if stype == "RollingUpdate" and isinstance(ru, dict):
        mu, mu_pct = _int_or_percent(ru.get("maxUnavailable"), "spec.strategy.rollingUpdate.maxUnavailable", errs)
        ms, _ = _int_or_percent(ru.get("maxSurge"), "spec.strategy.rollingUpdate.maxSurge", errs)
        if mu_pct and mu is not None and mu > 100:
            errs.append(Cause("Invalid", "spec.strategy.rollingUpdate.maxUnavailable",
                              "must not be greater than 100%", ru.get("maxUnavailable")))
        if mu == 0 and ms == 0:
            errs.append(Cause("Invalid", "spec.strategy.rollingUpdate.maxUnavailable",
                              "may not be 0 when `maxSurge` is 0", ru.get("maxUnavailable")))
    v._nonnegative(errs, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    mrs = spec.get("minReadySeconds")
    v._nonnegative(errs, "spec.minReadySeconds", mrs)
    pds = spec.get("progressDeadlineSeconds")
    if _is_int(pds):
        v._nonnegative(errs, "spec.progressDeadlineSeconds", pds)
        if _is_int(mrs) and pds <= mrs:
            errs.append(Cause("Invalid", "spec.progressDeadlineSeconds", "must be greater than minReadySeconds",
                              pds))


def _validate_deployment_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause],
                                namespaced: bool) -> None:
    v.validate_object_meta(meta, errs, namespaced=namespaced, name_fn=v.name_is_dns_subdomain)
    _validate_deployment_spec(_dict(obj.get("spec")), errs)


def _validate_deployment_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    _validate_deployment_spec(spec, errs)
    if spec.get("selector") != old_spec.get("selector"):
        errs.append(Cause("Invalid", "spec.selector", "field is immutable", v.go_label_selector(spec.get("selector"))))


def _validate_replicaset_spec(spec: dict[str, Any], errs: list[Cause]) -> None:
    v._nonnegative(errs, "spec.replicas", spec.get("replicas"))
    v._nonnegative(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    _validate_selector_and_template(spec, errs, "deployment")


def _validate_replicaset_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause],
                                namespaced: bool) -> None:
    v.validate_object_meta(meta, errs, namespaced=namespaced, name_fn=v.name_is_dns_subdomain)
    _validate_replicaset_spec(_dict(obj.get("spec")), errs)


def _validate_replicaset_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    _validate_replicaset_spec(spec, errs)
    if spec.get("selector") != old_spec.get("selector"):
        errs.append(Cause("Invalid", "spec.selector", "field is immutable", v.go_label_selector(spec.get("selector"))))


def _validate_workload_status(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    status = _dict(new.get("status"))
    for key in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas",
                "fullyLabeledReplicas", "terminatingReplicas", "observedGeneration", "collisionCount"):
        v._nonnegative(errs, f"status.{key}", status.get(key))
    replicas, ready, avail = status.get("replicas"), status.get("readyReplicas"), status.get("availableReplicas")
    if _is_int(ready) and _is_int(replicas) and ready > replicas:
        errs.append(Cause("Invalid", "status.readyReplicas", "cannot be greater than status.replicas", ready))
    if _is_int(avail) and _is_int(replicas) and avail > replicas:
        errs.append(Cause("Invalid", "status.availableReplicas", "cannot be greater than status.replicas", avail))
    if _is_int(avail) and _is_int(ready) and avail > ready:
        errs.append(Cause("Invalid", "status.availableReplicas", "cannot be greater than readyReplicas", avail))


# ---------------------------------------------------------------- autoscaling/v2

def _validate_cross_version_ref(ref: Any, path: str, errs: list[Cause]) -> None:
    ref = _dict(ref)
    for key in ("kind", "name"):
        value = _str(ref.get(key))
        if not value:
            errs.append(Cause("Required", f"{path}.{key}", ""))
        else:
            v._each(errs, f"{path}.{key}", value, v.validate_path_segment_name(value, False))


def _validate_metric_target(mt: Any, path: str, errs: list[Cause]) -> None:
    mt = _dict(mt)
    mtype = _str(mt.get("type"))
    if not mtype:
        errs.append(Cause("Required", f"{path}.type", "must specify a metric target type"))
    if mtype not in ("Utilization", "Value", "AverageValue"):
        errs.append(Cause("Invalid", f"{path}.type", "must be either Utilization, Value, or AverageValue", mtype))
    for key in ("value", "averageValue"):
        if mt.get(key) is not None:
            q = _quantity(mt[key])
            if q is not None and q <= 0:
                errs.append(Cause("Invalid", f"{path}.{key}", "must be positive", str(mt[key])))
    au = mt.get("averageUtilization")
    if _is_int(au) and au < 1:
        errs.append(Cause("Invalid", f"{path}.averageUtilization", "must be greater than 0", au))


def _validate_metric_identifier(mid: Any, path: str, errs: list[Cause]) -> None:
    name = _str(_dict(mid).get("name"))
    if not name:
        errs.append(Cause("Required", f"{path}.name", "must specify a metric name"))
    else:
        v._each(errs, f"{path}.name", name, v.validate_path_segment_name(name, False))


_METRIC_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
_METRIC_FIELDS = {"Object": "object", "Pods": "pods", "Resource": "resource", "External": "external",
                  "ContainerResource": "containerResource"}


def _validate_metric_spec(spec: dict[str, Any], path: str, errs: list[Cause]) -> None:
    mtype = _str(spec.get("type"))
    if not mtype:
        errs.append(Cause("Required", f"{path}.type", "must specify a metric source type"))
    if mtype not in _METRIC_TYPES:
        v._not_supported(errs, f"{path}.type", mtype, _METRIC_TYPES)
    present: list[str] = []
    for key in ("object", "external", "pods", "resource", "containerResource"):
        src = spec.get(key)
        if src is None:
            continue
        present.append(key)
        if len(present) != 1:
            continue
        spath = f"{path}.{key}"
        src = _dict(src)
        target = _dict(src.get("target"))
        if key == "object":
            _validate_cross_version_ref(src.get("describedObject"), f"{spath}.describedObject", errs)
            _validate_metric_identifier(src.get("metric"), f"{spath}.metric", errs)
            _validate_metric_target(target, f"{spath}.target", errs)
            if target.get("value") is None and target.get("averageValue") is None:
                errs.append(Cause("Required", f"{spath}.target.averageValue",
                                  "must set either a target value or averageValue"))
        elif key == "external":
            _validate_metric_identifier(src.get("metric"), f"{spath}.metric", errs)
            _validate_metric_target(target, f"{spath}.target", errs)
            if target.get("value") is None and target.get("averageValue") is None:
                errs.append(Cause("Required", f"{spath}.target.averageValue",
                                  "must set either a target value for metric or a per-pod target"))
            if target.get("value") is not None and target.get("averageValue") is not None:
                errs.append(Cause("Forbidden", f"{spath}.target.value",
                                  "may not set both a target value for metric and a per-pod target"))
        elif key == "pods":
            _validate_metric_identifier(src.get("metric"), f"{spath}.metric", errs)
            _validate_metric_target(target, f"{spath}.target", errs)
            if target.get("averageValue") is None:
                errs.append(Cause("Required", f"{spath}.target.averageValue",
                                  "must specify a positive target averageValue"))
        else:
            if not _str(src.get("name")):
                errs.append(Cause("Required", f"{spath}.name", "must specify a resource name"))
            if key == "containerResource":
                container = _str(src.get("container"))
                if not container:
                    errs.append(Cause("Required", f"{spath}.container", "must specify a container"))
                else:
                    v._each(errs, f"{spath}.container", container, v.is_dns1123_label(container))
            _validate_metric_target(target, f"{spath}.target", errs)
            if target.get("averageUtilization") is None and target.get("averageValue") is None:
                errs.append(Cause("Required", f"{spath}.target.averageUtilization",
                                  "must set either a target raw value or a target utilization"))
            if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
                errs.append(Cause("Forbidden", f"{spath}.target.averageValue",
                                  "may not set both a target raw value and a target utilization"))
    expected = _METRIC_FIELDS.get(mtype)
    if expected is not None and spec.get(expected) is None:
        errs.append(Cause("Required", f"{path}.{expected}", "must populate information for the given metric source"))
    if len(present) != 1:
        for key in present:
            if key != expected:
                errs.append(Cause("Forbidden", f"{path}.{key}", "must populate the given metric source only"))


def _validate_scaling_rules(rules: Any, path: str, errs: list[Cause]) -> None:
    if not isinstance(rules, dict):
        return
    sws = rules.get("stabilizationWindowSeconds")
    if _is_int(sws) and sws < 0:
        errs.append(Cause("Invalid", f"{path}.stabilizationWindowSeconds", "must be greater than or equal to zero",
                          sws))
    if _is_int(sws) and sws > 3600:
        errs.append(Cause("Invalid", f"{path}.stabilizationWindowSeconds", "must be less than or equal to 3600",
                          sws))
    sp = rules.get("selectPolicy")
    if sp is not None and sp not in ("Disabled", "Max", "Min"):
        v._not_supported(errs, f"{path}.selectPolicy", sp, ("Disabled", "Max", "Min"))
    tol = rules.get("tolerance")
    if tol is not None:
        q = _quantity(tol)
        if q is not None and q < 0:
            errs.append(Cause("Invalid", f"{path}.tolerance", "must be greater than or equal to zero", str(tol)))
    policies = _list(rules.get("policies"))
    if not policies:
        errs.append(Cause("Required", f"{path}.policies", "must specify at least one Policy"))
    for i, p in enumerate(policies):
        p = _dict(p)
        ppath = f"{path}.policies[{i}]"
        if p.get("type") not in ("Pods", "Percent"):
            v._not_supported(errs, f"{ppath}.type", p.get("type") or "", ("Percent", "Pods"))
        value = p.get("value", 0)
        if _is_int(value) and value <= 0:
            errs.append(Cause("Invalid", f"{ppath}.value", "must be greater than zero", value))
        period = p.get("periodSeconds", 0)
        if _is_int(period) and period <= 0:
            errs.append(Cause("Invalid", f"{ppath}.periodSeconds", "must be greater than zero", period))
        if _is_int(period) and period > 1800:
            errs.append(Cause("Invalid", f"{ppath}.periodSeconds", "must be less than or equal to 1800", period))


def _validate_hpa_spec(spec: dict[str, Any], errs: list[Cause], *, min_lower_bound: int) -> None:
    minr, maxr = spec.get("minReplicas"), spec.get("maxReplicas", 0)
    if _is_int(minr) and minr < min_lower_bound:
        errs.append(Cause("Invalid", "spec.minReplicas", f"must be greater than or equal to {min_lower_bound}",
                          minr))
    if _is_int(maxr) and maxr < 1:
        errs.append(Cause("Invalid", "spec.maxReplicas", "must be greater than 0", maxr))
    if _is_int(minr) and _is_int(maxr) and maxr < minr:
        errs.append(Cause("Invalid", "spec.maxReplicas", "must be greater than or equal to `minReplicas`", maxr))
    _validate_cross_version_ref(spec.get("scaleTargetRef"), "spec.scaleTargetRef", errs)
    has_object_or_external = False
    for i, m in enumerate(_list(spec.get("metrics"))):
        m = _dict(m)
        _validate_metric_spec(m, f"spec.metrics[{i}]", errs)
        if m.get("type") in ("Object", "External"):
            has_object_or_external = True
    if minr == 0 and not has_object_or_external:
        errs.append(Cause("Forbidden", "spec.metrics",
                          "must specify at least one Object or External metric to support scaling to zero replicas"))
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        _validate_scaling_rules(behavior.get("scaleUp"), "spec.behavior.scaleUp", errs)
        _validate_scaling_rules(behavior.get("scaleDown"), "spec.behavior.scaleDown", errs)


def _validate_hpa_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    v.validate_object_meta(meta, errs, namespaced=namespaced, name_fn=v.name_is_dns_subdomain)
    # HPAScaleToZero semantics are enabled: minReplicas may be 0 (with an Object/External metric).
    _validate_hpa_spec(_dict(obj.get("spec")), errs, min_lower_bound=0)


def _validate_hpa_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _validate_hpa_spec(_dict(new.get("spec")), errs, min_lower_bound=0)


def _validate_hpa_status(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    status = _dict(new.get("status"))
    v._nonnegative(errs, "status.currentReplicas", status.get("currentReplicas"))
    v._nonnegative(errs, "status.desiredReplicas", status.get("desiredReplicas"))


# ---------------------------------------------------------------- core/v1 others

def _validate_namespace_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause],
                               namespaced: bool) -> None:
    v.validate_object_meta(meta, errs, namespaced=False, name_fn=v.name_is_dns_label)
    _validate_namespace_finalizers(obj, errs)


def _validate_namespace_finalizers(obj: dict[str, Any], errs: list[Cause]) -> None:
    for i, f in enumerate(_list(_dict(obj.get("spec")).get("finalizers"))):
        f = _str(f)
        path = f"spec.finalizers[{i}]"
        msgs = v.is_qualified_name(f)
        if msgs:
            v._each(errs, path, f, msgs)
        elif "/" not in f and f not in v._STANDARD_FINALIZERS:
            errs.append(Cause("Invalid", path, "name is neither a standard finalizer name nor is it fully "
                              "qualified", f))


def _validate_namespace_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _validate_namespace_finalizers(new, errs)


def _validate_node_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    v.validate_object_meta(meta, errs, namespaced=False, name_fn=v.name_is_dns_subdomain)
    _validate_node_spec(obj, errs)


def _validate_node_spec(obj: dict[str, Any], errs: list[Cause]) -> None:
    spec = _dict(obj.get("spec"))
    _validate_taints(spec.get("taints"), "spec.taints", errs)
    status = _dict(obj.get("status"))
    for key in ("capacity", "allocatable"):
        for name, raw in _dict(status.get(key)).items():
            q = _quantity(raw)
            if q is not None and q < 0:
                errs.append(Cause("Invalid", f"status.{key}[{name}]", "must be greater than or equal to 0", str(raw)))


def _validate_node_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _validate_node_spec(new, errs)
    spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    old_cidrs = _list(old_spec.get("podCIDRs"))
    if old_cidrs and _list(spec.get("podCIDRs")) != old_cidrs:
        errs.append(Cause("Forbidden", "spec.podCIDRs", "node updates may not change podCIDR except from \"\" to "
                          "valid"))
    if old_spec.get("providerID") and spec.get("providerID") != old_spec.get("providerID"):
        errs.append(Cause("Forbidden", "spec.providerID", "node updates may not change providerID except from \"\" "
                          "to valid"))


def _validate_configmap_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause],
                               namespaced: bool) -> None:
    v.validate_object_meta(meta, errs, namespaced=namespaced, name_fn=v.name_is_dns_subdomain)
    _validate_configmap_data(obj, errs)


def _validate_configmap_data(obj: dict[str, Any], errs: list[Cause]) -> None:
    total = 0
    data, binary = _dict(obj.get("data")), _dict(obj.get("binaryData"))
    for key, value in data.items():
        v._each(errs, "data[" + key + "]", key, v.is_config_map_key(key))
        total += len(value.encode()) if isinstance(value, str) else 0
    for key, value in binary.items():
        v._each(errs, "binaryData[" + key + "]", key, v.is_config_map_key(key))
        if key in data:
            errs.append(Cause("Invalid", "data[" + key + "]", "duplicate of key present in binaryData", key))
        total += len(value) * 3 // 4 if isinstance(value, str) else 0
    if total > _CONFIG_MAP_MAX:
        errs.append(Cause("TooLong", "", f"may not be more than {_CONFIG_MAP_MAX} bytes"))


def _validate_configmap_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            errs.append(Cause("Forbidden", "immutable", "field is immutable when `immutable` is set"))
        if new.get("data") != old.get("data"):
            errs.append(Cause("Forbidden", "data", "field is immutable when `immutable` is set"))
        if new.get("binaryData") != old.get("binaryData"):
            errs.append(Cause("Forbidden", "binaryData", "field is immutable when `immutable` is set"))
    _validate_configmap_data(new, errs)


def _validate_event_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    v.validate_object_meta(meta, errs, namespaced=namespaced, name_fn=v.name_is_dns_subdomain)
    _validate_event(obj, meta, errs)


def _validate_event(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause]) -> None:
    """legacyValidateEvent for core/v1 requests."""
    involved = _dict(obj.get("involvedObject"))
    ns = _str(meta.get("namespace"))
    ins = _str(involved.get("namespace"))
    mismatch = Cause("Invalid", "involvedObject.namespace", "does not match event.namespace", ins)
    if not obj.get("eventTime"):
        if not ins:
            if ns not in ("", "default"):
                errs.append(mismatch)
        elif ns != ins:
            errs.append(mismatch)
    else:
        if not ins and ns not in ("default", "kube-system"):
            errs.append(mismatch)
        controller = _str(obj.get("reportingComponent"))
        if not controller:
            errs.append(Cause("Required", "reportingComponent", ""))
        v._each(errs, "reportingComponent", controller, v.is_qualified_name(controller))
        instance = _str(obj.get("reportingInstance"))
        if not instance:
            errs.append(Cause("Required", "reportingInstance", ""))
        if len(instance) > 128:
            errs.append(Cause("Invalid", "reportingInstance", "can have at most 128 characters", ""))
        for key, limit in (("action", 128), ("reason", 128)):
            value = _str(obj.get(key))
            if not value:
                errs.append(Cause("Required", key, ""))
            if len(value) > limit:
                errs.append(Cause("Invalid", key, f"can have at most {limit} characters", ""))
        if len(_str(obj.get("message"))) > 4096:
            errs.append(Cause("Invalid", "message", "can have at most 4096 characters", ""))
    v._each(errs, "namespace", ns, v.is_dns1123_subdomain(ns))


def _validate_event_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _validate_event(new, v._meta(new), errs)


def _validate_lease_spec(obj: dict[str, Any], errs: list[Cause]) -> None:
    spec = _dict(obj.get("spec"))
    lds = spec.get("leaseDurationSeconds")
    if _is_int(lds) and lds <= 0:
        errs.append(Cause("Invalid", "spec.leaseDurationSeconds", "must be greater than 0", lds))
    lt = spec.get("leaseTransitions")
    if _is_int(lt) and lt < 0:
        errs.append(Cause("Invalid", "spec.leaseTransitions", "must be greater than or equal to 0", lt))


def _validate_lease_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    v.validate_object_meta(meta, errs, namespaced=namespaced, name_fn=v.name_is_dns_subdomain)
    _validate_lease_spec(obj, errs)


def _validate_lease_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _validate_lease_spec(new, errs)


def install() -> None:
    R = v._Rules
    v.register("", "Pod", R(_validate_pod_create, _validate_pod_update, _validate_pod_status_update))
    v.register("", "Namespace", R(_validate_namespace_create, _validate_namespace_update))
    v.register("", "Node", R(_validate_node_create, _validate_node_update))
    v.register("", "ConfigMap", R(_validate_configmap_create, _validate_configmap_update))
    v.register("", "Event", R(_validate_event_create, _validate_event_update))
    v.register("apps", "Deployment", R(_validate_deployment_create, _validate_deployment_update,
                                       _validate_workload_status))
    v.register("apps", "ReplicaSet", R(_validate_replicaset_create, _validate_replicaset_update,
                                       _validate_workload_status))
    v.register("autoscaling", "HorizontalPodAutoscaler", R(_validate_hpa_create, _validate_hpa_update,
                                                           _validate_hpa_status))
    v.register("coordination.k8s.io", "Lease", R(_validate_lease_create, _validate_lease_update))
