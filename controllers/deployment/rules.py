"""The pure rules of a Deployment rollout (upstream's `deploymentutil`): the annotation and
condition names, the pod-template hash, the maxSurge / maxUnavailable arithmetic, revisions, which
ReplicaSet is new and which are old, proportional scaling, progress and its deadline, conditions and
the annotations written on ReplicaSets. `controllers.deployment.controller` decides when to apply
them. No I/O.
"""

from __future__ import annotations

import copy
import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from controllers import replicaset as rsc
from cp import clock as clocks

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
ROLLBACK_TO = "deprecated.deployment.rollback.to"
SKIPPED_ANNOTATIONS = frozenset({LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS,
                                 ROLLBACK_TO})
MAX_REV_HISTORY_CHARS = 2000
MAX_INT32 = 2**31 - 1
DEADLINE_SLACK = 0.01  # seconds past a progress deadline at which to look again

# Condition reasons (upstream deploymentutil).
REPLICASET_UPDATED = "ReplicaSetUpdated"
FAILED_RS_CREATE = "ReplicaSetCreateError"
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MIN_AVAILABLE = "MinimumReplicasAvailable"
MIN_UNAVAILABLE = "MinimumReplicasUnavailable"

_canonical = msgspec.json.Encoder(order="sorted")
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # upstream utilrand.SafeEncodeString


# ---------------------------------------------------------------------- hashing


def fnv32a(data: bytes, h: int = 0x811C9DC5) -> int:
    for byte in data:
        h ^= byte
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    return "".join(SAFE_ALPHABET[ord(ch) % len(SAFE_ALPHABET)] for ch in text)


def compute_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """The pod-template-hash: FNV-32a over the canonical JSON of the template (plus the collision
    count as 8 little-endian bytes), rendered as decimal through SafeEncodeString."""
    h = fnv32a(_canonical.encode(template))
    if collision_count is not None:
        h = fnv32a(struct.pack("<I", collision_count & 0xFFFFFFFF) + b"\0\0\0\0", h)
    return safe_encode(str(h))


def _semantic(value: Any) -> Any:
    """Normal form for upstream's semantic equality: empty/nil maps, lists and null are alike."""
    if isinstance(value, Mapping):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def equal_ignore_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """upstream `EqualIgnoreHash`: templates equal apart from the pod-template-hash label."""
    t1, t2 = copy.deepcopy(dict(a)), copy.deepcopy(dict(b))
    for t in (t1, t2):
        labels = (t.get("metadata") or {}).get("labels")
        if isinstance(labels, dict):
            labels.pop(HASH_LABEL, None)
    return bool(_semantic(t1) == _semantic(t2))


# ---------------------------------------------------------------------- deployment arithmetic


def scaled_value(value: Any, total: int, *, round_up: bool) -> int:
    """upstream `GetScaledValueFromIntOrPercent` (a missing value counts as 0)."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise ValueError(f"invalid value for IntOrString: {value!r}")
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        raise ValueError("invalid value for IntOrString: invalid type: string is not a percentage")
    try:
        pct = int(text[:-1])
    except ValueError:
        raise ValueError(f"invalid value for IntOrString: invalid value {text!r}") from None
    exact = pct * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def replicas_of(d: Mapping[str, Any]) -> int:
    return rsc.replicas_of(d)


def is_rolling(d: Mapping[str, Any]) -> bool:
    return str((rsc.spec_of(d).get("strategy") or {}).get("type") or "RollingUpdate") == "RollingUpdate"


def _rolling_params(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return (rsc.spec_of(d).get("strategy") or {}).get("rollingUpdate") or {}


def resolve_fenceposts(max_surge: Any, max_unavailable: Any, desired: int) -> tuple[int, int]:
    """upstream `ResolveFenceposts`: surge rounds up, unavailable down; both 0 → unavailable 1."""
    surge = scaled_value(max_surge, desired, round_up=True)
    unavailable = scaled_value(max_unavailable, desired, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(d: Mapping[str, Any]) -> int:
    if not is_rolling(d):
        return 0
    params = _rolling_params(d)
    try:
        return resolve_fenceposts(params.get("maxSurge"), params.get("maxUnavailable"), replicas_of(d))[0]
    except ValueError:
        return 0


def max_unavailable(d: Mapping[str, Any]) -> int:
    replicas = replicas_of(d)
    if not is_rolling(d) or replicas == 0:
        return 0
    params = _rolling_params(d)
    try:
        unavailable = resolve_fenceposts(params.get("maxSurge"), params.get("maxUnavailable"), replicas)[1]
    except ValueError:
        return 0
    return min(unavailable, replicas)


def rs_replicas(rs: Mapping[str, Any] | None) -> int:
    return rsc.replicas_of(rs) if rs is not None else 0


def status_int(rs: Mapping[str, Any] | None, field: str) -> int:
    return int(rsc.status_of(rs).get(field) or 0) if rs is not None else 0


def total_spec_replicas(rss: Iterable[Mapping[str, Any] | None]) -> int:
    return sum(rs_replicas(rs) for rs in rss if rs is not None)


def total_status(rss: Iterable[Mapping[str, Any] | None], field: str) -> int:
    return sum(status_int(rs, field) for rs in rss if rs is not None)


def active(rss: Iterable[Mapping[str, Any] | None]) -> list[dict[str, Any]]:
    """upstream `FilterActiveReplicaSets`: spec.replicas > 0."""
    return [dict(rs) for rs in rss if rs is not None and rs_replicas(rs) > 0]


def revision(rs: Mapping[str, Any]) -> int:
    value = (rsc.meta(rs).get("annotations") or {}).get(REVISION)
    try:
        return int(value) if value is not None else 0
    except (TypeError, ValueError):
        return 0


def max_revision(rss: Iterable[Mapping[str, Any]]) -> int:
    return max((revision(rs) for rs in rss), default=0)


def annotation_int(rs: Mapping[str, Any], key: str) -> int | None:
    value = (rsc.meta(rs).get("annotations") or {}).get(key)
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def find_new_replicaset(d: Mapping[str, Any], rss: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The oldest ReplicaSet whose template equals the Deployment's, ignoring the hash label."""
    template = rsc.spec_of(d).get("template") or {}
    for rs in sorted(rss, key=rsc.by_creation):
        if equal_ignore_hash(rsc.spec_of(rs).get("template") or {}, template):
            return dict(rs)
    return None


def find_old_replicasets(d: Mapping[str, Any], rss: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    rss = list(rss)
    new_rs = find_new_replicaset(d, rss)
    new_uid = rsc.uid_of(new_rs) if new_rs is not None else None
    return [dict(rs) for rs in rss if rsc.uid_of(rs) != new_uid]


def new_rs_new_replicas(d: Mapping[str, Any], all_rss: Sequence[Mapping[str, Any]],
                        new_rs: Mapping[str, Any]) -> int:
    """How big the new ReplicaSet may be now (upstream `NewRSNewReplicas`)."""
    replicas = replicas_of(d)
    if not is_rolling(d):
        return replicas
    try:
        surge = scaled_value(_rolling_params(d).get("maxSurge"), replicas, round_up=True)
    except ValueError:
        surge = 0
    current = total_spec_replicas(all_rss)
    max_total = replicas + surge
    if current >= max_total:
        return rs_replicas(new_rs)
    scale_up = min(max_total - current, replicas - rs_replicas(new_rs))
    return rs_replicas(new_rs) + scale_up


def is_saturated(d: Mapping[str, Any], rs: Mapping[str, Any] | None) -> bool:
    if rs is None:
        return False
    desired = annotation_int(rs, DESIRED_REPLICAS)
    if desired is None:
        return False
    replicas = replicas_of(d)
    return rs_replicas(rs) == replicas and desired == replicas and status_int(rs, "availableReplicas") == replicas


def find_active_or_latest(new_rs: Mapping[str, Any] | None, old_rss: Sequence[Mapping[str, Any]]
                          ) -> dict[str, Any] | None:
    if new_rs is None and not old_rss:
        return None
    newest_first = sorted(old_rss, key=rsc.by_creation, reverse=True)
    candidates = active([*newest_first, new_rs])
    if len(candidates) == 0:
        return dict(new_rs) if new_rs is not None else dict(newest_first[0])
    if len(candidates) == 1:
        return candidates[0]
    return None


def _go_round(x: float) -> int:
    """math.Round: half away from zero."""
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


def replicaset_proportion(rs: Mapping[str, Any], d: Mapping[str, Any], to_add: int, added: int) -> int:
    """upstream `GetReplicaSetProportion`."""
    if rs_replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = _replicaset_fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def _replicaset_fraction(rs: Mapping[str, Any], d: Mapping[str, Any]) -> int:
    if replicas_of(d) == 0:
        return -rs_replicas(rs)
    deployment_max = replicas_of(d) + max_surge(d)
    before = annotation_int(rs, MAX_REPLICAS)
    if not before:
        before = int(rsc.status_of(d).get("replicas") or 0)
        if before == 0:
            return 0
    return _go_round(rs_replicas(rs) * deployment_max / before) - rs_replicas(rs)


def deployment_complete(d: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    replicas = replicas_of(d)
    return (int(status.get("updatedReplicas") or 0) == replicas and int(status.get("replicas") or 0) == replicas
            and int(status.get("availableReplicas") or 0) == replicas
            and int(status.get("observedGeneration") or 0) >= int(rsc.meta(d).get("generation") or 0))


def deployment_progressing(d: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    old = rsc.status_of(d)

    def get(s: Mapping[str, Any], f: str) -> int:
        return int(s.get(f) or 0)

    old_old = get(old, "replicas") - get(old, "updatedReplicas")
    new_old = get(status, "replicas") - get(status, "updatedReplicas")
    return (get(status, "updatedReplicas") > get(old, "updatedReplicas") or new_old < old_old
            or get(status, "readyReplicas") > get(old, "readyReplicas")
            or get(status, "availableReplicas") > get(old, "availableReplicas"))


def has_progress_deadline(d: Mapping[str, Any]) -> bool:
    value = rsc.spec_of(d).get("progressDeadlineSeconds")
    return value is not None and int(value) != MAX_INT32


def time_of(value: Any) -> float:
    try:
        return clocks.parse_time(str(value)) if value else 0.0
    except ValueError:
        return 0.0


def deployment_timed_out(d: Mapping[str, Any], status: Mapping[str, Any], now: float) -> bool:
    if not has_progress_deadline(d):
        return False
    cond = rsc.get_condition(rsc.conditions_of(status), "Progressing")
    if cond is None:
        return False
    if cond.get("reason") == NEW_RS_AVAILABLE:
        return False
    if cond.get("reason") == TIMED_OUT:
        return True
    deadline = time_of(cond.get("lastUpdateTime")) + int(rsc.spec_of(d)["progressDeadlineSeconds"])
    return deadline < now


def new_condition(type_: str, status: str, reason: str, message: str, now: float) -> dict[str, Any]:
    stamp = clocks.rfc3339(now)
    return {"type": type_, "status": status, "lastUpdateTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}


def set_condition(status: dict[str, Any], cond: dict[str, Any]) -> None:
    """upstream `SetDeploymentCondition`: same status and reason → unchanged; same status →
    keep lastTransitionTime; the condition moves to the end of the list."""
    conditions = rsc.conditions_of(status)
    current = rsc.get_condition(conditions, cond["type"])
    if current is not None and current.get("status") == cond["status"] and current.get("reason") == cond["reason"]:
        return
    if current is not None and current.get("status") == cond["status"]:
        cond = {**cond, "lastTransitionTime": current.get("lastTransitionTime")}
    status["conditions"] = [c for c in conditions if c.get("type") != cond["type"]] + [cond]


def remove_condition(status: dict[str, Any], type_: str) -> None:
    status["conditions"] = [c for c in rsc.conditions_of(status) if c.get("type") != type_]


def normalized_status(status: Mapping[str, Any]) -> dict[str, Any]:
    return rsc.compact(status)


# ---------------------------------------------------------------------- annotations


def _annotations(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.setdefault("metadata", {})
    ann = meta.get("annotations")
    if not isinstance(ann, dict):
        ann = meta["annotations"] = {}
    out: dict[str, Any] = ann
    return out


def set_replicas_annotations(rs: dict[str, Any], desired: int, max_replicas: int) -> bool:
    ann = _annotations(rs)
    changed = False
    for key, value in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(max_replicas))):
        if ann.get(key) != value:
            ann[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: Mapping[str, Any], desired: int, max_replicas: int) -> bool:
    ann = rsc.meta(rs).get("annotations") or {}
    return ann.get(DESIRED_REPLICAS) != str(desired) or ann.get(MAX_REPLICAS) != str(max_replicas)


def set_new_replicaset_annotations(d: Mapping[str, Any], rs: dict[str, Any], new_revision: int, *,
                                   exists: bool) -> bool:
    """upstream `SetNewReplicaSetAnnotations`: copy the Deployment's annotations, raise the
    revision (keeping the previous ones in revision-history), and on creation set the replica
    annotations. Returns whether anything changed."""
    ann = _annotations(rs)
    changed = False
    for k, v in (rsc.meta(d).get("annotations") or {}).items():
        if k in SKIPPED_ANNOTATIONS or ann.get(k) == v:
            continue
        ann[k] = v
        changed = True
    old_text = ann.get(REVISION)
    had_revision = old_text is not None
    try:
        old_revision = int(old_text) if old_text is not None else 0
    except (TypeError, ValueError):
        return False
    if old_revision < new_revision:
        ann[REVISION] = str(new_revision)
        changed = True
        if had_revision:
            history = str(ann.get(REVISION_HISTORY) or "")
            if not history:
                ann[REVISION_HISTORY] = str(old_text)
            else:
                entries = history.split(",")
                total = len(history) + len(str(old_text)) + 1
                start = 0
                while total > MAX_REV_HISTORY_CHARS and start < len(entries):
                    total -= len(entries[start]) + 1
                    start += 1
                if total <= MAX_REV_HISTORY_CHARS:
                    ann[REVISION_HISTORY] = ",".join([*entries[start:], str(old_text)])
    if not exists and set_replicas_annotations(rs, replicas_of(d), replicas_of(d) + max_surge(d)):
        changed = True
    return changed
