"""Strategies of apps/v1, batch/v1, policy/v1, autoscaling and the core/v1 workload kinds.

Beyond the generic rules: the status a new object starts with (status fields Go writes without
`omitempty` start at zero), the metadata a status write keeps, and a Job's generated selector
(`pkg/registry/batch/job/strategy.go`: unless `manualSelector` is true, the pods of a Job are selected by
its uid, and its template is labelled with its name and uid, in both the legacy and the
`batch.kubernetes.io/` keys), a DaemonSet's template generation (the internal field apps/v1 shows as the
`deprecated.daemonset.template.generation` annotation). Pure.
"""

from __future__ import annotations

from typing import Any

from cp.strategies.model import Obj, Strategy

CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
LEGACY_CONTROLLER_UID = "controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME = "job-name"


def _zeros(*fields: str) -> Any:
    return lambda _obj: dict.fromkeys(fields, 0)


def _job_create(obj: Obj, _now: float) -> None:
    spec = obj.get("spec")
    meta = obj.get("metadata")
    if not isinstance(spec, dict) or not isinstance(meta, dict) or spec.get("manualSelector") is True:
        return
    template = spec.get("template")
    if not isinstance(template, dict):
        template = spec["template"] = {}
    template_meta = template.get("metadata")
    if not isinstance(template_meta, dict):
        template_meta = template["metadata"] = {}
    labels = template_meta.get("labels")
    if not isinstance(labels, dict):
        labels = template_meta["labels"] = {}
    # Defaulting gave a Job without labels its template's; upstream shares that map, so the labels
    # generated here show on the Job as well.
    shared = meta.get("labels") == labels
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    for key, value in ((LEGACY_JOB_NAME, name), (JOB_NAME, name), (LEGACY_CONTROLLER_UID, uid),
                       (CONTROLLER_UID, uid)):
        labels.setdefault(key, value)  # a value the user set stays (validation rejects a wrong one)
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    match = selector.get("matchLabels")
    if not isinstance(match, dict):
        match = selector["matchLabels"] = {}
    match.setdefault(CONTROLLER_UID, uid)
    if shared or not meta.get("labels"):
        meta["labels"] = dict(labels)


TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def _template_generation(obj: Obj) -> int:
    meta = obj.get("metadata")
    value = (meta.get("annotations") or {}).get(TEMPLATE_GENERATION) if isinstance(meta, dict) else None
    try:
        return int(value) if value is not None else 0
    except (TypeError, ValueError):
        return 0


def _set_template_generation(obj: Obj, generation: int) -> None:
    meta = obj.setdefault("metadata", {})
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        annotations = meta["annotations"] = {}
    annotations[TEMPLATE_GENERATION] = str(generation)


def _daemon_set_create(obj: Obj, _now: float) -> None:
    """apps/v1 carries the internal `templateGeneration` as an annotation; a new DaemonSet starts at 1."""
    _set_template_generation(obj, 1)


def _daemon_set_update(new: Obj, old: Obj, _now: float, subresource: str) -> None:
    """The template generation is the server's: it counts template changes (never what a write says)."""
    generation = _template_generation(old)
    if not subresource and (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
        generation += 1
    if generation:
        _set_template_generation(new, generation)


STRATEGIES: dict[tuple[str, str], Strategy] = {
    ("", "ReplicationController"): Strategy(initial_status=_zeros("replicas")),
    ("apps", "ReplicaSet"): Strategy(initial_status=_zeros("replicas"),
                                     status_keeps_metadata=("labels", "annotations")),
    # The deployment controller records its revision annotations with its status writes.
    ("apps", "Deployment"): Strategy(status_keeps_metadata=("annotations",)),
    ("apps", "StatefulSet"): Strategy(initial_status=_zeros("replicas", "availableReplicas"),
                                      status_keeps_metadata=("labels", "annotations")),
    ("apps", "DaemonSet"): Strategy(initial_status=_zeros("currentNumberScheduled", "numberMisscheduled",
                                                          "desiredNumberScheduled", "numberReady"),
                                    status_keeps_metadata=("labels", "annotations"),
                                    prepare_for_create=_daemon_set_create, prepare_for_update=_daemon_set_update),
    ("batch", "Job"): Strategy(prepare_for_create=_job_create),
    ("policy", "PodDisruptionBudget"): Strategy(initial_status=_zeros("disruptionsAllowed", "currentHealthy",
                                                                      "desiredHealthy", "expectedPods")),
    ("autoscaling", "HorizontalPodAutoscaler"): Strategy(initial_status=lambda _obj: {"desiredReplicas": 0}),
}
