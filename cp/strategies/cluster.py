"""Strategies of the cluster configuration kinds: networking.k8s.io, storage.k8s.io, certificates.k8s.io
and the API extension kinds.

What upstream's `PrepareForCreate`/`PrepareForUpdate` of these kinds do beyond the generic rules
(status not settable on create, carried over on spec writes; generation where `has_spec`): the status a
new object starts with as Go serializes it, the ServiceCIDR status a create may set, a
CertificateSigningRequest's spec that only its creator sets (and only the approval subresource's
conditions), a CustomResourceDefinition's stored versions. Pure.
"""

from __future__ import annotations

import copy
from typing import Any

from cp import clock as clocks
from cp.rbac import UserInfo
from cp.strategies.model import Obj, Strategy

_REQUESTER = ("username", "uid", "groups", "extra")


def _csr_create(obj: Obj, _now: float) -> None:
    """Requester fields come from the server (`record_requester`), never from the body."""
    spec = obj.get("spec")
    if isinstance(spec, dict):
        for key in _REQUESTER:
            spec.pop(key, None)


def _csr_requester(obj: Obj, user: UserInfo) -> None:
    """The requesting user as the CSR's requester (its fields are omitted when empty)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    values: dict[str, Any] = {"username": user.name, "uid": user.uid, "groups": list(user.groups),
                              "extra": {k: list(v) for k, v in user.extra.items()}}
    for key in _REQUESTER:
        if values[key]:
            spec[key] = values[key]


def _csr_update(new: Obj, old: Obj, _now: float, subresource: str) -> None:
    """A CSR's spec never changes after create; a status write may set the certificate but not the
    approval conditions (those change through `/approval`)."""
    if "spec" in old:
        new["spec"] = copy.deepcopy(old["spec"])
    else:
        new.pop("spec", None)
    if subresource == "status":
        status = new.get("status")
        if not isinstance(status, dict):
            status = new["status"] = {}
        old_conditions = (old.get("status") or {}).get("conditions")
        if old_conditions is None:
            status.pop("conditions", None)
        else:
            status["conditions"] = copy.deepcopy(old_conditions)
    elif subresource == "approval":
        _csr_approval(new, old, now=_now)


_APPROVAL = ("Approved", "Denied")


def _csr_approval(new: Obj, old: Obj, *, now: float) -> None:
    """csrApprovalStrategy: only the Approved/Denied conditions change (new ones get their times),
    the other conditions and the certificate stay as they were."""
    status = new.get("status")
    if not isinstance(status, dict):
        status = new["status"] = {}
    raw = old.get("status")
    old_status: dict[str, Any] = raw if isinstance(raw, dict) else {}
    written = [c for c in status.get("conditions") or [] if isinstance(c, dict) and c.get("type") in _APPROVAL]
    kept = [c for c in old_status.get("conditions") or [] if isinstance(c, dict) and c.get("type") not in _APPROVAL]
    stamp = clocks.rfc3339(now)
    for condition in written:
        condition.setdefault("lastUpdateTime", stamp)
        condition.setdefault("lastTransitionTime", stamp)
    conditions = written + copy.deepcopy(kept)
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)
    if old_status.get("certificate") is not None:
        status["certificate"] = old_status["certificate"]
    else:
        status.pop("certificate", None)


def _storage_version(obj: Obj) -> str | None:
    for version in (obj.get("spec") or {}).get("versions") or []:
        if isinstance(version, dict) and version.get("storage") is True:
            return str(version.get("name") or "")
    return None


def _crd_status(obj: Obj) -> Obj:
    """A new definition has accepted no names yet and records its storage version as stored."""
    version = _storage_version(obj)
    return {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": [version] if version else []}


def _crd_update(new: Obj, old: Obj, _now: float, subresource: str) -> None:
    """A new storage version joins the stored versions (objects are written in it from now on)."""
    version = _storage_version(new)
    status = new.get("status")
    if version is None or not isinstance(status, dict):
        return
    stored = status.get("storedVersions")
    if not isinstance(stored, list):
        stored = status["storedVersions"] = []
    if version not in stored:
        stored.append(version)


def _initial(status: dict[str, Any]) -> Any:
    return lambda _obj: {k: (dict(v) if isinstance(v, dict) else v) for k, v in status.items()}


STRATEGIES: dict[tuple[str, str], Strategy] = {
    # IngressStatus{} serializes its load balancer struct.
    ("networking.k8s.io", "Ingress"): Strategy(initial_status=_initial({"loadBalancer": {}})),
    # The ServiceCIDR strategy leaves status alone on create (the apiserver's controller writes it).
    ("networking.k8s.io", "ServiceCIDR"): Strategy(status_on_create=True),
    # VolumeAttachmentStatus{} serializes `attached: false`.
    ("storage.k8s.io", "VolumeAttachment"): Strategy(initial_status=_initial({"attached": False})),
    ("certificates.k8s.io", "CertificateSigningRequest"): Strategy(prepare_for_create=_csr_create,
                                                                 record_requester=_csr_requester,
                                                                 prepare_for_update=_csr_update),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): Strategy(initial_status=_crd_status,
                                                                  prepare_for_update=_crd_update),
}
