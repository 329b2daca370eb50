"""Validation rules for core/v1 Pods: containers, resources, tolerations and taints, volumes, the pod
spec, and the Pod's create, update and status rules.

Behaviour follows upstream `pkg/apis/core/validation`; only the rules that matter for this control plane
are implemented. Pure.
"""

from __future__ import annotations

import json
import re
from typing import Any

from cp import quantity
from cp.defaulting import VOLUME_SOURCES
from cp.errors import Cause
from cp.validation import podgroups
from cp.validation.common import (
    GoValue,
    as_dict,
    as_list,
    as_str,
    each,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_int,
    is_label_value,
    is_qualified_name,
    is_valid_port_name,
    meta_of,
    name_is_dns_subdomain,
    nonnegative,
    not_supported,
    parse_quantity,
    validate_label_name,
    validate_labels,
)
from cp.validation.meta import (
    validate_object_meta,
)
from cp.validation.registry import Rules

_INT32_MAX = (1 << 31) - 1
_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")
_CONTAINER_RESTART_POLICIES = ("Always",)
_EPHEMERAL_FORBIDDEN = ("ports", "resources", "resizePolicy", "restartPolicy", "restartPolicyRules",
                        "livenessProbe", "readinessProbe", "startupProbe", "lifecycle")
_MIRROR_POD = "kubernetes.io/config.mirror"
_STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")

# ---------------------------------------------------------------- quantities and resources

def _is_native(name: str) -> bool:
    return "/" not in name or name.startswith("kubernetes.io/")


def _overcommit_allowed(name: str) -> bool:
    return _is_native(name) and not name.startswith("hugepages-")


def _validate_resource_requirements(r: Any, path: str, errs: list[Cause], pod_claims: set[str] | None) -> None:
    """validateResourceRequirements for containers."""
    r = as_dict(r)
    limits = as_dict(r.get("limits"))
    requests = as_dict(r.get("requests"))
    lim_path, req_path = f"{path}.limits", f"{path}.requests"
    for name, raw in limits.items():
        _validate_resource_name(name, f"{lim_path}[{name}]", errs)
        _validate_resource_quantity(name, raw, f"{lim_path}[{name}]", errs)
    for name, raw in requests.items():
        _validate_resource_name(name, f"{req_path}[{name}]", errs)
        _validate_resource_quantity(name, raw, f"{req_path}[{name}]", errs)
        if name in limits:
            rq, lq = parse_quantity(raw), parse_quantity(limits[name])
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


def validate_resource_limits(limits: Any, path: str, errs: list[Cause]) -> None:
    """ValidateResourceRequirements of limits alone (RuntimeClass overhead): `<path>.limits[<name>]`."""
    _validate_resource_requirements({"limits": limits}, path, errs, None)


def _validate_resource_quantity(name: str, raw: Any, path: str, errs: list[Cause]) -> None:
    q = parse_quantity(raw)
    if q is None:
        return
    if q < 0:
        errs.append(Cause("Invalid", path, "must be greater than or equal to 0", str(raw)))
    if not _is_native(name) and q != q.to_integral_value():
        errs.append(Cause("Invalid", path, "must be an integer", str(raw)))


def _validate_resource_name(name: str, path: str, errs: list[Cause]) -> None:
    """validateContainerResourceName."""
    msgs = is_qualified_name(name)
    each(errs, path, name, msgs)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            errs.append(Cause("Invalid", path, "must be a standard resource for containers", name))
    elif not _is_native(name) and (msgs or is_qualified_name("requests." + name) or
                                   name.startswith("requests.")):
        errs.append(Cause("Invalid", path, "doesn't follow extended resource name standard", name))


def _validate_container_claims(claims: Any, pod_claims: set[str], path: str, errs: list[Cause]) -> None:
    seen: set[str] = set()
    for i, claim in enumerate(as_list(claims)):
        claim = as_dict(claim)
        name = as_str(claim.get("name"))
        cpath = f"{path}[{i}]"
        if not name:
            errs.append(Cause("Required", cpath, ""))
            continue
        key = name
        request = as_str(claim.get("request"))
        if request:
            each(errs, f"{cpath}.request", request, is_dns1123_label(request))
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
        nonnegative(errs, f"{path}.{key}", probe.get(key))
    handlers = [k for k in ("exec", "httpGet", "tcpSocket", "grpc") if probe.get(k) is not None]
    if not handlers:
        errs.append(Cause("Required", path, "must specify a handler type"))
    elif len(handlers) > 1:
        errs.append(Cause("Forbidden", f"{path}.{handlers[1]}", "may not specify more than 1 handler type"))


def _validate_ports(ports: Any, path: str, errs: list[Cause]) -> None:
    names: set[str] = set()
    for i, port in enumerate(as_list(ports)):
        port = as_dict(port)
        ppath = f"{path}[{i}]"
        name = as_str(port.get("name"))
        if name:
            each(errs, f"{ppath}.name", name, is_valid_port_name(name))
            if name in names:
                errs.append(Cause("Duplicate", f"{ppath}.name", "", name))
            names.add(name)
        cp_ = port.get("containerPort")
        if cp_ is None or cp_ == 0:
            errs.append(Cause("Required", f"{ppath}.containerPort", ""))
        elif is_int(cp_) and not 1 <= cp_ <= 65535:
            errs.append(Cause("Invalid", f"{ppath}.containerPort", "must be between 1 and 65535, inclusive", cp_))
        hp = port.get("hostPort")
        if is_int(hp) and hp != 0 and not 1 <= hp <= 65535:
            errs.append(Cause("Invalid", f"{ppath}.hostPort", "must be between 1 and 65535, inclusive", hp))
        proto = port.get("protocol")
        if not proto:
            errs.append(Cause("Required", f"{ppath}.protocol", ""))
        elif proto not in _PROTOCOLS:
            not_supported(errs, f"{ppath}.protocol", proto, _PROTOCOLS)


def _validate_env(env: Any, path: str, errs: list[Cause]) -> None:
    for i, e in enumerate(as_list(env)):
        e = as_dict(e)
        epath = f"{path}[{i}]"
        name = as_str(e.get("name"))
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
    name = as_str(c.get("name"))
    if not name:
        errs.append(Cause("Required", f"{path}.name", ""))
    else:
        each(errs, f"{path}.name", name, is_dns1123_label(name))
    if not as_str(c.get("image")):
        errs.append(Cause("Required", f"{path}.image", ""))
    _validate_ports(c.get("ports"), f"{path}.ports", errs)
    _validate_env(c.get("env"), f"{path}.env", errs)
    mounts: set[str] = set()
    for i, m in enumerate(as_list(c.get("volumeMounts"))):
        m = as_dict(m)
        mpath = f"{path}.volumeMounts[{i}]"
        mname = as_str(m.get("name"))
        if not mname:
            errs.append(Cause("Required", f"{mpath}.name", ""))
        elif mname not in volumes:
            errs.append(Cause("NotFound", f"{mpath}.name", "", mname))
        mp = as_str(m.get("mountPath"))
        if not mp:
            errs.append(Cause("Required", f"{mpath}.mountPath", ""))
        elif mp in mounts:
            errs.append(Cause("Invalid", f"{mpath}.mountPath", "must be unique", mp))
        mounts.add(mp)
    policy = c.get("imagePullPolicy")
    if not policy:
        errs.append(Cause("Required", f"{path}.imagePullPolicy", ""))
    elif policy not in _PULL_POLICIES:
        not_supported(errs, f"{path}.imagePullPolicy", policy, _PULL_POLICIES)
    if kind != "ephemeralContainers":
        _validate_resource_requirements(c.get("resources"), f"{path}.resources", errs, pod_claims)
    if name and name in names:
        errs.append(Cause("Duplicate", f"{path}.name", "", name))
    elif name:
        names.add(name)
    if kind == "ephemeralContainers":
        # Ephemeral containers are not for a pod's services: upstream allows a list of fields; these
        # are the others, in the order of the Go struct.
        for forbidden in _EPHEMERAL_FORBIDDEN:
            if c.get(forbidden):
                errs.append(Cause("Forbidden", f"{path}.{forbidden}", "cannot be set for an Ephemeral Container"))
        for i, m in enumerate(as_list(c.get("volumeMounts"))):
            for key in ("subPath", "subPathExpr"):
                if as_dict(m).get(key):
                    errs.append(Cause("Forbidden", f"{path}.volumeMounts[{i}].{key}",
                                      "cannot be set for an Ephemeral Container"))
        return
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        _validate_probe(c.get(key), f"{path}.{key}", errs)
    rp = c.get("restartPolicy")
    if rp is not None and kind == "containers":
        errs.append(Cause("Forbidden", f"{path}.restartPolicy", "may not be set for non-init containers"))
    elif rp is not None and kind == "initContainers" and rp not in _CONTAINER_RESTART_POLICIES:
        not_supported(errs, f"{path}.restartPolicy", rp, _CONTAINER_RESTART_POLICIES)


# ---------------------------------------------------------------- tolerations, taints

def validate_tolerations(tolerations: Any, path: str, errs: list[Cause]) -> None:
    for i, t in enumerate(as_list(tolerations)):
        t = as_dict(t)
        tpath = f"{path}[{i}]"
        key = as_str(t.get("key"))
        op = t.get("operator") or ""
        if key:
            validate_label_name(key, f"{tpath}.key", errs)
        if not key and op != "Exists":
            errs.append(Cause("Invalid", f"{tpath}.operator",
                              "operator must be Exists when `key` is empty, which means \"match all values and "
                              "all keys\"", op))
        effect = t.get("effect") or ""
        if t.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(Cause("Invalid", f"{tpath}.effect", "effect must be 'NoExecute' when `tolerationSeconds` "
                              "is set", effect))
        value = as_str(t.get("value"))
        if op in ("Equal", ""):
            msgs = is_label_value(value)
            if msgs:
                errs.append(Cause("Invalid", f"{tpath}.operator", ";".join(msgs), value))
        elif op == "Exists":
            if value:
                errs.append(Cause("Invalid", f"{tpath}.operator", "value must be empty when `operator` is 'Exists'",
                                  GoValue("core.Toleration{...}")))
        elif op in ("Lt", "Gt"):
            if not re.match(r"^-?[0-9]+$", value):
                errs.append(Cause("Invalid", f"{tpath}.value", "value must be a valid integer for numeric "
                                  "comparison operators", value))
        else:
            not_supported(errs, f"{tpath}.operator", op, ("Equal", "Exists"))
        if effect and effect not in _TAINT_EFFECTS:
            not_supported(errs, f"{tpath}.effect", effect, _TAINT_EFFECTS)


def validate_taints(taints: Any, path: str, errs: list[Cause]) -> None:
    seen: set[tuple[str, str]] = set()
    for i, t in enumerate(as_list(taints)):
        t = as_dict(t)
        tpath = f"{path}[{i}]"
        key = as_str(t.get("key"))
        validate_label_name(key, f"{tpath}.key", errs)
        value = as_str(t.get("value"))
        if value:
            each(errs, f"{tpath}.value", value, is_label_value(value))
        effect = as_str(t.get("effect"))
        if not effect:
            errs.append(Cause("Required", f"{tpath}.effect", ""))
        elif effect not in _TAINT_EFFECTS:
            not_supported(errs, f"{tpath}.effect", effect, _TAINT_EFFECTS)
        if (key, effect) in seen:
            errs.append(Cause("Duplicate", tpath, "taints must be unique by key and effect pair",
                              GoValue(f"core.Taint{{Key:{json.dumps(key)}, Effect:{json.dumps(effect)}}}")))
        seen.add((key, effect))


# ---------------------------------------------------------------- pod spec

def _validate_volumes(volumes: Any, path: str, errs: list[Cause]) -> set[str]:
    names: set[str] = set()
    for i, vol in enumerate(as_list(volumes)):
        vol = as_dict(vol)
        vpath = f"{path}[{i}]"
        name = as_str(vol.get("name"))
        before = len(errs)
        sources = [s for s in VOLUME_SOURCES if vol.get(s) is not None]
        if not sources:
            errs.append(Cause("Required", vpath, "must specify a volume type"))
        for extra in sources[1:]:
            errs.append(Cause("Forbidden", f"{vpath}.{extra}", "may not specify more than 1 volume type"))
        if not name:
            errs.append(Cause("Required", f"{vpath}.name", ""))
        else:
            each(errs, f"{vpath}.name", name, is_dns1123_label(name))
        if name in names:
            errs.append(Cause("Duplicate", f"{vpath}.name", "", name))
        if len(errs) == before:
            names.add(name)
    return names


def _validate_pod_resource_claims(pod_name: str, claims: Any, path: str, errs: list[Cause]) -> set[str]:
    names: set[str] = set()
    for i, claim in enumerate(as_list(claims)):
        claim = as_dict(claim)
        cpath = f"{path}[{i}]"
        name = as_str(claim.get("name"))
        rcn, rctn = claim.get("resourceClaimName"), claim.get("resourceClaimTemplateName")
        if not name:
            errs.append(Cause("Required", f"{cpath}.name", ""))
        elif name in names:
            errs.append(Cause("Duplicate", f"{cpath}.name", "", name))
        else:
            msgs = is_dns1123_label(name)
            if msgs:
                each(errs, f"{cpath}.name", name, msgs)
            elif pod_name and rctn is not None:
                final = f"{pod_name}-{name}"
                for m in is_dns1123_subdomain(final):
                    errs.append(Cause("Invalid", f"{cpath}.name", "final ResourceClaim name: " + m, final))
            names.add(name)
        shown = GoValue(_go_pod_resource_claim(claim))
        if rcn is not None and rctn is not None:
            errs.append(Cause("Invalid", cpath, "at most one of `resourceClaimName` or `resourceClaimTemplateName` "
                              "may be specified", shown))
        if rcn is None and rctn is None:
            errs.append(Cause("Invalid", cpath, "must specify one of: `resourceClaimName`, "
                              "`resourceClaimTemplateName`", shown))
        if isinstance(rcn, str):
            each(errs, f"{cpath}.resourceClaimName", rcn, is_dns1123_subdomain(rcn))
        if isinstance(rctn, str):
            each(errs, f"{cpath}.resourceClaimTemplateName", rctn, is_dns1123_subdomain(rctn))
    return names


def _go_pod_resource_claim(claim: dict[str, Any]) -> str:
    def ptr(x: Any) -> str:
        return "(*string)(nil)" if x is None else f"&{json.dumps(x)}"
    return (f"core.PodResourceClaim{{Name:{json.dumps(as_str(claim.get('name')))}, "
            f"ResourceClaimName:{ptr(claim.get('resourceClaimName'))}, "
            f"ResourceClaimTemplateName:{ptr(claim.get('resourceClaimTemplateName'))}}}")


def validate_pod_spec(spec: Any, path: str, errs: list[Cause], *, pod_name: str = "") -> None:
    spec = as_dict(spec)
    if spec.get("terminationGracePeriodSeconds") is None:
        errs.append(Cause("Required", f"{path}.terminationGracePeriodSeconds", ""))
    volumes = _validate_volumes(spec.get("volumes"), f"{path}.volumes", errs)
    pod_claims = _validate_pod_resource_claims(pod_name, spec.get("resourceClaims"), f"{path}.resourceClaims",
                                               errs)
    names: set[str] = set()
    containers = as_list(spec.get("containers"))
    if not containers:
        errs.append(Cause("Required", f"{path}.containers", ""))
    for i, c in enumerate(containers):
        _validate_container(as_dict(c), f"{path}.containers[{i}]", errs, names=names, volumes=volumes,
                            pod_claims=pod_claims, kind="containers")
    for i, c in enumerate(as_list(spec.get("initContainers"))):
        _validate_container(as_dict(c), f"{path}.initContainers[{i}]", errs, names=names, volumes=volumes,
                            pod_claims=pod_claims, kind="initContainers")
    targets = set(names)
    for i, c in enumerate(as_list(spec.get("ephemeralContainers"))):
        _validate_container(as_dict(c), f"{path}.ephemeralContainers[{i}]", errs, names=names, volumes=volumes,
                            pod_claims=pod_claims, kind="ephemeralContainers")
        target = as_str(as_dict(c).get("targetContainerName"))
        if target and target not in targets:
            errs.append(Cause("NotFound", f"{path}.ephemeralContainers[{i}].targetContainerName", "", target))
    rp = spec.get("restartPolicy")
    if not rp:
        errs.append(Cause("Required", f"{path}.restartPolicy", ""))
    elif rp not in _RESTART_POLICIES:
        not_supported(errs, f"{path}.restartPolicy", rp, _RESTART_POLICIES)
    dp = spec.get("dnsPolicy")
    if not dp:
        errs.append(Cause("Required", f"{path}.dnsPolicy", ""))
    elif dp not in _DNS_POLICIES:
        not_supported(errs, f"{path}.dnsPolicy", dp, _DNS_POLICIES)
    validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector", errs)
    for i, s in enumerate(as_list(spec.get("imagePullSecrets"))):
        if not as_str(as_dict(s).get("name")):
            errs.append(Cause("Required", f"{path}.imagePullSecrets[{i}].name", ""))
    gates: set[str] = set()
    for i, g in enumerate(as_list(spec.get("schedulingGates"))):
        gname = as_str(as_dict(g).get("name"))
        validate_label_name(gname, f"{path}.schedulingGates[{i}]", errs)
        if gname in gates:
            errs.append(Cause("Duplicate", f"{path}.schedulingGates[{i}]", "", gname))
        gates.add(gname)
    podgroups.validate_scheduling_group(spec, path, errs)  # kept only with GenericWorkload
    for key in ("serviceAccountName", "nodeName", "priorityClassName"):
        value = as_str(spec.get(key))
        if value:
            each(errs, f"{path}.{key}", value, is_dns1123_subdomain(value))
    ads = spec.get("activeDeadlineSeconds")
    if is_int(ads) and not 1 <= ads <= _INT32_MAX:
        errs.append(Cause("Invalid", f"{path}.activeDeadlineSeconds",
                          f"must be between 1 and {_INT32_MAX}, inclusive", ads))
    for key in ("hostname", "subdomain"):
        value = as_str(spec.get(key))
        if value:
            each(errs, f"{path}.{key}", value, is_dns1123_label(value))
    validate_tolerations(spec.get("tolerations"), f"{path}.tolerations", errs)
    pp = spec.get("preemptionPolicy")
    if pp is not None and pp not in _PREEMPTION_POLICIES:
        not_supported(errs, f"{path}.preemptionPolicy", pp, _PREEMPTION_POLICIES)


def _validate_pod_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    spec = as_dict(obj.get("spec"))
    validate_pod_spec(spec, "spec", errs, pod_name=as_str(meta.get("name")))
    if as_list(spec.get("ephemeralContainers")):
        errs.append(Cause("Forbidden", "spec.ephemeralContainers", "cannot be set on create"))
    if spec.get("nodeName") and as_list(spec.get("schedulingGates")):
        errs.append(Cause("Forbidden", "spec.nodeName", "cannot be set until all schedulingGates have been cleared"))


_POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def _validate_pod_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    validate_pod_spec(spec, "spec", errs, pod_name=as_str(meta_of(new).get("name")))
    for key in ("containers", "initContainers"):
        nc, oc = as_list(spec.get(key)), as_list(old_spec.get(key))
        if len(nc) != len(oc):
            errs.append(Cause("Forbidden", f"spec.{key}", "pod updates may not add or remove containers"))
            return
        for i, c in enumerate(nc):
            image = as_str(as_dict(c).get("image"))
            if not image:
                errs.append(Cause("Required", f"spec.{key}[{i}].image", ""))
            if image.strip() != image:
                errs.append(Cause("Invalid", f"spec.{key}[{i}].image", "must not have leading or trailing whitespace",
                                  image))
    ads, old_ads = spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    if ads is not None:
        if is_int(ads) and not 0 <= ads <= _INT32_MAX:
            errs.append(Cause("Invalid", "spec.activeDeadlineSeconds", f"must be between 0 and {_INT32_MAX}, "
                              "inclusive", ads))
            return
        if is_int(old_ads) and is_int(ads) and old_ads < ads:
            errs.append(Cause("Invalid", "spec.activeDeadlineSeconds", "must be less than or equal to previous value",
                              ads))
            return
    elif old_ads is not None:
        errs.append(Cause("Invalid", "spec.activeDeadlineSeconds", "must not update from a positive integer to nil "
                          "value", GoValue("null")))
    new_tols, old_tols = as_list(spec.get("tolerations")), as_list(old_spec.get("tolerations"))
    for old_t in old_tols:
        base = {k: x for k, x in as_dict(old_t).items() if k != "tolerationSeconds"}
        if not any({k: x for k, x in as_dict(t).items() if k != "tolerationSeconds"} == base for t in new_tols):
            errs.append(Cause("Forbidden", "spec.tolerations",
                              "existing toleration can not be modified except its tolerationSeconds"))
            break
    old_gates = {as_str(as_dict(g).get("name")) for g in as_list(old_spec.get("schedulingGates"))}
    for i, g in enumerate(as_list(spec.get("schedulingGates"))):
        gname = as_str(as_dict(g).get("name"))
        if gname not in old_gates:
            errs.append(Cause("Forbidden", f"spec.schedulingGates[{i}].name",
                              f"only deletion is allowed, but found new scheduling gate '{gname}'"))
    if spec == old_spec:
        return
    munged = dict(spec)
    for key in ("containers", "initContainers"):
        nc, oc = as_list(spec.get(key)), as_list(old_spec.get(key))
        if nc:
            munged[key] = [dict(as_dict(c), image=as_dict(o).get("image")) if "image" in as_dict(o) else
                           {k: x for k, x in as_dict(c).items() if k != "image"} for c, o in zip(nc, oc, strict=False)]
    for key in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        if key in old_spec:
            munged[key] = old_spec[key]
        else:
            munged.pop(key, None)
    if not old_spec.get("schedulingGates") and "schedulingGates" in munged:
        munged.pop("schedulingGates")
    old_tgps, new_tgps = old_spec.get("terminationGracePeriodSeconds"), spec.get("terminationGracePeriodSeconds")
    if is_int(old_tgps) and old_tgps < 0 and new_tgps == 1:
        munged["terminationGracePeriodSeconds"] = old_tgps
    # While scheduling gates remain, node selectors and node affinity may be added (mutable scheduling
    # directives); accept additions to nodeSelector.
    if old_spec.get("schedulingGates"):
        old_sel, new_sel = as_dict(old_spec.get("nodeSelector")), as_dict(spec.get("nodeSelector"))
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
    status = as_dict(new.get("status"))
    node = as_str(as_dict(new.get("spec")).get("nodeName"))
    old_node = as_str(as_dict(old.get("spec")).get("nodeName"))
    if node != old_node:
        errs.append(Cause("Forbidden", "status.nodeName", "may not be changed directly"))
    for i, c in enumerate(as_list(status.get("conditions"))):
        c = as_dict(c)
        if not as_str(c.get("type")):
            errs.append(Cause("Required", f"status.conditions[{i}].type", ""))
    claim_statuses = status.get("nodeAllocatableResourceClaimStatuses")
    if claim_statuses:
        _node_allocatable_claim_statuses(as_list(claim_statuses), "status.nodeAllocatableResourceClaimStatuses", errs)


def _node_allocatable_claim_statuses(items: list[Any], path: str, errs: list[Cause]) -> None:
    """`status.nodeAllocatableResourceClaimStatuses` (KEP-5517): a map list by `resourceClaimName`;
    `containers` a set; `mapping` and `overhead` map lists by `name`, a mapping with its `quantity`,
    an overhead with `perPod` or `perContainer` (neither negative)."""
    claims: set[str] = set()
    for i, item in enumerate(items):
        item = as_dict(item)
        ipath = f"{path}[{i}]"
        _map_list_key(as_str(item.get("resourceClaimName")), ipath, "resourceClaimName", claims, errs)
        names: set[str] = set()
        for j, container in enumerate(as_list(item.get("containers"))):
            if container in names:
                errs.append(Cause("Duplicate", f"{ipath}.containers[{j}]", "", container))
            names.add(as_str(container))
        for key in ("mapping", "overhead"):
            resources: set[str] = set()
            for j, entry in enumerate(as_list(item.get(key))):
                entry = as_dict(entry)
                epath = f"{ipath}.{key}[{j}]"
                _map_list_key(as_str(entry.get("name")), epath, "name", resources, errs)
                if key == "mapping":
                    if entry.get("quantity") is None:
                        errs.append(Cause("Required", f"{epath}.quantity", ""))
                    continue
                if entry.get("perPod") is None and entry.get("perContainer") is None:
                    errs.append(Cause("Invalid", epath, "at least one of perPod or perContainer must be set", ""))
                    continue
                for part in ("perPod", "perContainer"):
                    value = entry.get(part)
                    if value is not None and _negative_quantity(value):
                        errs.append(Cause("Invalid", f"{epath}.{part}", "must be non-negative", value))


def _map_list_key(key: str, path: str, field: str, seen: set[str], errs: list[Cause]) -> None:
    """A map list's key: required, and unique within the list (`seen` so far)."""
    if not key:
        errs.append(Cause("Required", f"{path}.{field}", ""))
    elif key in seen:
        errs.append(Cause("Duplicate", path, "", key))
    seen.add(key)


def _negative_quantity(value: Any) -> bool:
    try:
        return quantity.parse_quantity(value).nanos < 0
    except quantity.QuantityError:
        return False




def _validate_ephemeral_containers_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    """ValidatePodEphemeralContainersUpdate: the new pod is valid, and ephemeral containers are only
    added (existing ones neither removed nor changed, matched by name as patches may reorder them)."""
    validate_pod_spec(new.get("spec"), "spec", errs, pod_name=as_str(meta_of(new).get("name")))
    if _MIRROR_POD in as_dict(meta_of(old).get("annotations")):
        errs[:] = [Cause("Forbidden", "", "static pods do not support ephemeral containers")]
        return
    written = {as_str(as_dict(c).get("name")): as_dict(c)
               for c in as_list(as_dict(new.get("spec")).get("ephemeralContainers"))}
    for c in as_list(as_dict(old.get("spec")).get("ephemeralContainers")):
        c = as_dict(c)
        name = as_str(c.get("name"))
        if name not in written:
            errs.append(Cause("Forbidden", "spec.ephemeralContainers",
                              f"existing ephemeral containers {json.dumps(name)} may not be removed\n"))
        elif written[name] != c:
            errs.append(Cause("Forbidden", f"spec.ephemeralContainers[{name}]",
                              f"existing ephemeral containers {json.dumps(name)} may not be changed\n"
                              + _spec_diff(c, written[name]).replace("core.PodSpec", "core.EphemeralContainer")))


def _resources_without_cpu_memory(new: Any, old: Any) -> dict[str, Any] | None:
    """A resource list with its cpu and memory as in `old` (None when `old` has none)."""
    if not isinstance(old, dict):
        return None
    out = {k: v for k, v in as_dict(new).items() if k not in ("cpu", "memory")}
    out.update({k: old[k] for k in ("cpu", "memory") if k in old})
    return out


def _non_empty(mapping: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if v}


def _validate_pod_resize(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    """ValidatePodResize: the new pod is valid; static and windows pods are not resized; the QoS class
    stays; requests and limits are not removed; of the containers only cpu and memory change."""
    from cp.strategies.core import qos_class  # the strategy's rule, as upstream's qos helper

    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    validate_pod_spec(spec, "spec", errs, pod_name=as_str(meta_of(new).get("name")))
    if _MIRROR_POD in as_dict(meta_of(old).get("annotations")):
        errs[:] = [Cause("Forbidden", "", "static pods cannot be resized")]
        return
    if as_dict(old_spec.get("os")).get("name") == "windows":
        errs[:] = [Cause("Forbidden", "", "windows pods cannot be resized")]
        return
    old_qos = as_str(as_dict(old.get("status")).get("qosClass")) or qos_class(old_spec)
    if qos_class(spec) != old_qos:
        errs.append(Cause("Invalid", "spec", "Pod QOS Class may not change as a result of resizing",
                          as_str(as_dict(new.get("status")).get("qosClass"))))
    containers, old_containers = as_list(spec.get("containers")), as_list(old_spec.get("containers"))
    mutable_only = len(containers) == len(old_containers)  # the strategy keeps the stored containers
    for i, (c, o) in enumerate(zip(containers, old_containers, strict=False)):
        c, o = as_dict(c), as_dict(o)
        resources, old_resources = as_dict(c.get("resources")), as_dict(o.get("resources"))
        path = f"spec.containers[{i}].resources"
        for key in ("limits", "requests"):
            if any(name not in as_dict(resources.get(key)) for name in as_dict(old_resources.get(key))):
                errs.append(Cause("Forbidden", f"{path}.{key}", f"resource {key} cannot be removed"))
        munged = dict(resources)
        for key in ("limits", "requests"):
            kept = _resources_without_cpu_memory(resources.get(key), old_resources.get(key))
            if kept is None:
                munged.pop(key, None)
            else:
                munged[key] = kept
        rest = {k: v for k, v in c.items() if k not in ("resources", "resizePolicy")}
        old_rest = {k: v for k, v in o.items() if k not in ("resources", "resizePolicy")}
        if rest != old_rest or _non_empty(munged) != _non_empty(old_resources):
            mutable_only = False
    others = {k: v for k, v in spec.items() if k != "containers"}
    if not mutable_only or others != {k: v for k, v in old_spec.items() if k != "containers"}:
        errs.append(Cause("Forbidden", "spec", "only cpu and memory resources are mutable"))


RULES = {
    ("", "Pod"): Rules(_validate_pod_create, _validate_pod_update, _validate_pod_status_update,
                       subresource_updates={"ephemeralcontainers": _validate_ephemeral_containers_update,
                                            "resize": _validate_pod_resize}),
}
