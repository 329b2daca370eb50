"""The HorizontalPodAutoscaler controller (kube-controller-manager's `horizontalpodautoscaling`,
autoscaling/v2, with HPAScaleToZero and HPAConfigurableTolerance on).

Every `SYNC_PERIOD` (15 s on the injected clock) per HPA — and at once when it is created or its
spec changes (generation) — the controller:

1. reads the target's `/scale` (any kind with a scale subresource, custom resources resolved through
   discovery; `FailedGetScale` otherwise);
2. decides what to compute from the current replica count `current`:
   - 0, and the HPA did not put it there (no `ScaledToZero=True`): the workload is paused —
     `ScalingActive=False/ScalingDisabled`, nothing else;
   - above `maxReplicas` / below `minReplicas` (default 1): go to the bound;
   - otherwise (0 included, when `ScaledToZero=True` and an Object or External metric exists):
     one proposal per metric from the metrics APIs (served by `api/metrics_apis.py`, read by
     `controllers/hpa/metrics.py`), computed as `controllers/hpa/calc.py` documents; the highest
     wins; if every metric fails — or some fail and the others propose a scale-down — nothing changes and `ScalingActive=False` carries the
     first failure's reason (`FailedGet{Resource,ContainerResource,Pods,Object,External}Metric`);
3. normalizes the proposal: without `spec.behavior`, the highest recommendation of the last 300 s
   and at most max(2 x current, 4); with it, the stabilization windows and the Pods/Percent
   policies of each direction (`selectPolicy`); then [min, max];
4. writes the new count through `/scale` (`SuccessfulRescale` "New size: N; reason: ...",
   or `FailedRescale`), sets `ScaledToZero=True` when it went from >0 to 0 with minReplicas 0 and
   an Object/External metric (`False/NotScaledToZero` on any other rescale);
5. writes `status` (currentReplicas, desiredReplicas, currentMetrics in spec order — `{type: ""}`
   for a metric that failed, as upstream — lastScaleTime, conditions AbleToScale / ScalingActive /
   ScalingLimited / ScaledToZero) when it changed.

Recommendations and scale events live in memory (as upstream); a restart starts the windows afresh
from the current replica count. Warning events that repeat are counted on one Event (`count`,
`lastTimestamp`), like client-go's event correlator.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import structlog

from controllers.hpa import calc
from controllers.hpa.metrics import MetricError, MetricsClient, message_of
from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import discovery, reconcile
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from cp import clock as clocks
from cp import errors, selectors
from cp import resources as res
from cp.objects import labels_of

NAME = "horizontal-pod-autoscaler"
COMPONENT = "horizontal-pod-autoscaler"  # Event source, as upstream
FIELD_MANAGER = "horizontal-pod-autoscaler"
SYNC_PERIOD = 15.0  # --horizontal-pod-autoscaler-sync-period

HPAS = clients.resolve("horizontalpodautoscalers.autoscaling")
PODS = clients.resolve("pods")
EVENTS = clients.resolve("events")

logger = structlog.get_logger("cplane.controllers.hpa")


# ---------------------------------------------------------------------- per-HPA memory


@dataclasses.dataclass
class _State:
    uid: str
    generation: int = 0
    next_sync: float = 0.0
    last_sync: float | None = None  # clock time of the last completed sync
    recommendations: list[calc.Recommendation] = dataclasses.field(default_factory=list)
    up_events: list[calc.ScaleEvent] = dataclasses.field(default_factory=list)
    down_events: list[calc.ScaleEvent] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Series:
    name: str
    namespace: str
    count: int


class _Failure(Exception):
    """One metric could not be computed: `condition` = (reason, message) for ScalingActive."""

    def __init__(self, message: str, reason: str, condition_message: str) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.condition_message = condition_message


@dataclasses.dataclass
class _Proposal:
    replicas: int
    metric: str
    status: dict[str, Any]


# ---------------------------------------------------------------------- the controller


class HorizontalController:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 clock: clocks.Clock, recorder: managers.EventRecorder, sync_period: float = SYNC_PERIOD,
                 tolerance: float = calc.DEFAULT_TOLERANCE,
                 downscale_window: float = calc.DEFAULT_DOWNSCALE_WINDOW,
                 cpu_initialization_period: float = calc.DEFAULT_CPU_INITIALIZATION_PERIOD,
                 initial_readiness_delay: float = calc.DEFAULT_INITIAL_READINESS_DELAY) -> None:
        self.client = client
        self.informers = informer_factory
        self.clock = clock
        self.recorder = recorder
        self.metrics = MetricsClient(client)
        self.sync_period = sync_period
        self.tolerance = tolerance
        self.downscale_window = downscale_window
        self.cpu_initialization_period = cpu_initialization_period
        self.initial_readiness_delay = initial_readiness_delay
        self._states: dict[tuple[str, str], _State] = {}
        self._selectors: dict[tuple[str, str], selectors.LabelSelector] = {}
        self._series: dict[tuple[str, str, str, str], _Series] = {}
        self.informers.informer(HPAS)
        self.informers.informer(PODS)

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=HPAS), managers.Watch(kind=PODS, map=lambda change: [])]

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        key = (request.namespace, request.name)
        hpa = self.informers.cache(HPAS).get(*key)
        if hpa is None:
            self._forget(key)
            return None
        meta = caches.meta(hpa)
        uid = str(meta.get("uid") or "")
        state = self._states.get(key)
        if state is None or state.uid != uid:
            self._forget(key)
            state = self._states[key] = _State(uid=uid)
        now = self.clock.now()
        generation = int(meta.get("generation") or 0)
        if state.next_sync and now < state.next_sync and generation == state.generation:
            return reconcile.Result(requeue_after=state.next_sync - now)
        state.generation = generation
        state.next_sync = now + self.sync_period
        try:
            await self.reconcile_autoscaler(hpa, state, now)
        except (errors.StatusError, OSError, TimeoutError) as exc:
            logger.warning("hpa_sync_failed", namespace=key[0], name=key[1], error=message_of(exc))
        finally:
            state.last_sync = now
        return reconcile.Result(requeue_after=self.sync_period)

    def last_sync(self, namespace: str, name: str) -> float | None:
        """When (clock time) the HPA's last sync finished; None before the first."""
        state = self._states.get((namespace, name))
        return state.last_sync if state is not None else None

    def _forget(self, key: tuple[str, str]) -> None:
        self._states.pop(key, None)
        self._selectors.pop(key, None)
        for k in [k for k in self._series if k[:2] == key]:
            del self._series[k]

    async def reconcile_autoscaler(self, cached: Mapping[str, Any], state: _State, now: float) -> None:
        hpa = caches.deep_copy(cached)
        hpa["apiVersion"], hpa["kind"] = HPAS.api_version, HPAS.kind
        original = caches.deep_copy(hpa.get("status") or {})
        status: dict[str, Any] = hpa.setdefault("status", {})
        conditions: list[dict[str, Any]] = list(status.get("conditions") or [])
        spec: dict[str, Any] = hpa.get("spec") or {}
        meta = caches.meta(hpa)
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")

        def set_condition(type_: str, value: str, reason: str, message: str) -> None:
            for c in conditions:
                if c.get("type") == type_:
                    if c.get("status") != value:
                        c["lastTransitionTime"] = clocks.rfc3339(now)
                    c.update(status=value, reason=reason, message=message)
                    return
            conditions.append({"type": type_, "status": value, "lastTransitionTime": clocks.rfc3339(now),
                               "reason": reason, "message": message})

        async def finish(current: int, desired: int, metric_statuses: list[dict[str, Any]] | None,
                         rescaled: bool) -> None:
            new_status: dict[str, Any] = {"currentReplicas": current, "desiredReplicas": desired}
            if rescaled:
                new_status["lastScaleTime"] = clocks.rfc3339(now)
            elif status.get("lastScaleTime"):
                new_status["lastScaleTime"] = status["lastScaleTime"]
            if metric_statuses:
                new_status["currentMetrics"] = metric_statuses
            if conditions:
                new_status["conditions"] = conditions
            if status.get("observedGeneration") is not None:
                new_status["observedGeneration"] = status["observedGeneration"]
            if new_status == original:
                return
            hpa["status"] = new_status
            try:
                await self.client.update_status(HPAS, hpa, field_manager=FIELD_MANAGER)
            except errors.NotFound:
                return
            except errors.StatusError as exc:
                await self._event(hpa, "Warning", "FailedUpdateStatus", exc.message)
                logger.info("hpa_status_update_failed", namespace=namespace, name=name, error=exc.message)

        ref = spec.get("scaleTargetRef") or {}
        reference = f"{ref.get('kind', '')}/{namespace}/{ref.get('name', '')}"

        # 1. The target's scale.
        try:
            target = await _target_kind(ref, mapper=self.client.mapper)
            scale = await self.client.get_scale(target, str(ref.get("name") or ""), namespace=namespace)
        except (errors.StatusError, _TargetError) as exc:
            msg = message_of(exc) if isinstance(exc, errors.StatusError) else str(exc)
            await self._event(hpa, "Warning", "FailedGetScale", msg)
            set_condition("AbleToScale", "False", "FailedGetScale",
                          f"the HPA controller was unable to get the target's current scale: {msg}")
            await finish(int(status.get("currentReplicas") or 0), int(status.get("desiredReplicas") or 0),
                         status.get("currentMetrics"), False)
            logger.info("hpa_failed_get_scale", reference=reference, error=msg)
            return
        set_condition("AbleToScale", "True", "SucceededGetScale",
                      "the HPA controller was able to get the target's current scale")
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        status_replicas = int((scale.get("status") or {}).get("replicas") or 0)
        if not state.recommendations:
            state.recommendations.append(calc.Recommendation(current, now))

        min_replicas = spec.get("minReplicas")
        min_replicas = 1 if min_replicas is None else int(min_replicas)
        max_replicas = int(spec.get("maxReplicas") or 0)
        metric_specs = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
        has_object_or_external = any(m.get("type") in ("Object", "External") for m in metric_specs)
        scaled_to_zero = any(c.get("type") == "ScaledToZero" and c.get("status") == "True" for c in conditions)
        can_scale_from_zero = scaled_to_zero and has_object_or_external

        desired = 0
        rescale_reason = ""
        rescale = True
        metric_statuses: list[dict[str, Any]] | None = None
        compute = False
        if current == 0:
            if (min_replicas != 0 and scaled_to_zero) or can_scale_from_zero:
                compute = True
            else:
                rescale = False
                set_condition("ScalingActive", "False", "ScalingDisabled",
                              "scaling is disabled since the replica count of the target is zero")
        elif current > max_replicas:
            rescale_reason = "Current number of replicas above Spec.MaxReplicas"
            desired = max_replicas
        elif current < min_replicas:
            rescale_reason = "Current number of replicas below Spec.MinReplicas"
            desired = min_replicas
        else:
            compute = True

        if compute:
            proposal, metric_name, metric_statuses, failure = await self._compute_replicas_for_metrics(
                hpa, spec, scale, current, status_replicas, set_condition, now)
            if proposal < 0:
                await finish(current, int(status.get("desiredReplicas") or 0), metric_statuses, False)
                if failure:
                    await self._event(hpa, "Warning", "FailedComputeMetricsReplicas", failure)
                logger.info("hpa_failed_compute_replicas", reference=reference, error=failure)
                return
            rescale_metric = ""
            if proposal > desired:
                desired = proposal
                rescale_metric = metric_name
            if desired > current:
                rescale_reason = f"{rescale_metric} above target"
            if desired < current:
                rescale_reason = "All metrics below target"
            desired = self._normalize(spec, state, current, desired, min_replicas, max_replicas, set_condition, now)
            if current == 0 and min_replicas != 0 and scaled_to_zero and desired < min_replicas:
                desired = min_replicas
                rescale_reason = rescale_reason or "Current number of replicas below Spec.MinReplicas"
            rescale = desired != current

        if rescale:
            body = {"metadata": dict(scale.get("metadata") or {}), "spec": {"replicas": desired}}
            try:
                await self.client.update_scale(target, body)
            except errors.StatusError as exc:
                await self._event(hpa, "Warning", "FailedRescale",
                                  f"New size: {desired}; reason: {rescale_reason}; error: {exc.message}")
                set_condition("AbleToScale", "False", "FailedUpdateScale",
                              f"the HPA controller was unable to update the target scale: {exc.message}")
                await finish(current, int(status.get("desiredReplicas") or 0), metric_statuses, False)
                logger.info("hpa_failed_rescale", reference=reference, error=exc.message)
                return
            set_condition("AbleToScale", "True", "SucceededRescale",
                          f"the HPA controller was able to update the target scale to {desired}")
            await self._event(hpa, "Normal", "SuccessfulRescale", f"New size: {desired}; reason: {rescale_reason}")
            calc.store_scale_event(spec.get("behavior"), state.up_events, state.down_events, current, desired, now)
            if current > 0 and desired == 0 and min_replicas == 0 and has_object_or_external:
                set_condition("ScaledToZero", "True", "ScaledToZero", "the HPA controller scaled the workload to zero")
            else:
                set_condition("ScaledToZero", "False", "NotScaledToZero",
                              "the HPA controller did not scale the workload to zero")
            logger.info("hpa_rescaled", reference=reference, old=current, new=desired, reason=rescale_reason)
        else:
            desired = current
        await finish(current, desired, metric_statuses, rescale)

    # ------------------------------------------------------------------ normalization

    def _normalize(self, spec: Mapping[str, Any], state: _State, current: int, desired: int, min_replicas: int,
                   max_replicas: int, set_condition: Any, now: float) -> int:
        behavior = spec.get("behavior")
        if not isinstance(behavior, Mapping):
            stabilized = calc.stabilize_legacy(state.recommendations, desired, now=now, window=self.downscale_window)
            if stabilized != desired:
                set_condition("AbleToScale", "True", *calc.SCALE_DOWN_STABILIZED)
            else:
                set_condition("AbleToScale", "True", *calc.READY_FOR_NEW_SCALE)
            limited = calc.convert_with_rules(current, stabilized, min_replicas, max_replicas)
        else:
            up = calc.filled_rules(behavior.get("scaleUp"), calc.default_scale_up_rules())
            down = calc.filled_rules(behavior.get("scaleDown"), calc.default_scale_down_rules())
            up_window = float(up.get("stabilizationWindowSeconds") or 0)
            down_window = down.get("stabilizationWindowSeconds")
            down_window = self.downscale_window if down_window is None else float(down_window)
            stabilized, reason, message = calc.stabilize_with_behaviors(
                state.recommendations, current=current, desired=desired, up_window=up_window,
                down_window=down_window, now=now)
            if stabilized != desired:
                set_condition("AbleToScale", "True", reason, message)
            else:
                set_condition("AbleToScale", "True", *calc.READY_FOR_NEW_SCALE)
            limited = calc.convert_with_behavior_rate(
                current=current, desired=stabilized, min_replicas=min_replicas, max_replicas=max_replicas,
                up_rules=up, down_rules=down, up_events=state.up_events, down_events=state.down_events, now=now)
        set_condition("ScalingLimited", "False" if limited.replicas == stabilized else "True",
                      limited.reason, limited.message)
        return limited.replicas

    # ------------------------------------------------------------------ metrics

    async def _compute_replicas_for_metrics(
            self, hpa: dict[str, Any], spec: Mapping[str, Any], scale: Mapping[str, Any], current: int,
            status_replicas: int, set_condition: Any, now: float,
    ) -> tuple[int, str, list[dict[str, Any]] | None, str | None]:
        """(replicas or -1, metric name, per-metric statuses, error message)."""
        meta = caches.meta(hpa)
        namespace, hpa_name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        selector_text = str((scale.get("status") or {}).get("selector") or "")
        if not selector_text:
            await self._event(hpa, "Warning", "SelectorRequired", "selector is required")
            set_condition("ScalingActive", "False", "InvalidSelector", "the HPA target's scale is missing a selector")
            return -1, "", None, "selector is required"
        try:
            selector = selectors.parse_label_selector(selector_text)
        except errors.BadRequest as exc:
            msg = f"couldn't convert selector into a corresponding internal selector object: {exc.message}"
            await self._event(hpa, "Warning", "InvalidSelector", msg)
            set_condition("ScalingActive", "False", "InvalidSelector", msg)
            return -1, "", None, msg
        pods = [p for p in self.informers.cache(PODS).list(namespace) if selector.matches(labels_of(p))]
        self._selectors[(namespace, hpa_name)] = selector
        owners = sorted({f"{ns}/{n}" for (ns, n), sel in self._selectors.items()
                         if ns == namespace and any(sel.matches(labels_of(p)) for p in pods)})
        if len(owners) > 1:
            msg = f"pods by selector {selector_text} are controlled by multiple HPAs: [{' '.join(owners)}]"
            await self._event(hpa, "Warning", "AmbiguousSelector", msg)
            set_condition("ScalingActive", "False", "AmbiguousSelector", msg)
            return -1, "", None, msg

        metric_specs = [m if isinstance(m, dict) else {} for m in spec.get("metrics") or []]
        tolerances = calc.tolerances_for(spec, self.tolerance)
        ctx = calc.PodContext(pods=pods, now=now, cpu_initialization_period=self.cpu_initialization_period,
                              initial_readiness_delay=self.initial_readiness_delay)
        statuses: list[dict[str, Any]] = []
        replicas = 0
        metric = ""
        invalid = 0
        first: _Failure | None = None
        for m in metric_specs:
            try:
                proposal = await self._compute_for_metric(hpa, m, namespace, selector_text, current, status_replicas,
                                                          tolerances, ctx)
            except _Failure as failure:
                statuses.append({"type": ""})
                if first is None:
                    first = failure
                invalid += 1
                continue
            statuses.append(proposal.status)
            if replicas == 0 or proposal.replicas > replicas:
                replicas = proposal.replicas
                metric = proposal.metric
        error = None
        if first is not None:
            error = f"invalid metrics ({invalid} invalid out of {len(metric_specs)}), first error is: {first.message}"
        if invalid >= len(metric_specs) or (invalid > 0 and replicas < current):
            assert first is not None or not metric_specs
            if first is not None:
                set_condition("ScalingActive", "False", first.reason, first.condition_message)
            return -1, "", statuses, error
        set_condition("ScalingActive", "True", "ValidMetricFound",
                      f"the HPA was able to successfully calculate a replica count from {metric}")
        return replicas, metric, statuses, error

    async def _unable(self, hpa: dict[str, Any], reason: str, err: str, wrapped: str) -> _Failure:
        """Upstream's getUnableComputeReplicaCountCondition: a Warning event with the calculator's
        error, and a ScalingActive=False condition."""
        await self._event(hpa, "Warning", reason, err)
        return _Failure(wrapped, reason, f"the HPA was unable to compute the replica count: {err}")

    async def _compute_for_metric(self, hpa: dict[str, Any], m: Mapping[str, Any], namespace: str, selector: str,
                                  current: int, status_replicas: int, tolerances: calc.Tolerances,
                                  ctx: calc.PodContext) -> _Proposal:
        mtype = m.get("type")
        if mtype in ("Resource", "ContainerResource"):
            return await self._resource(hpa, m, namespace, selector, current, tolerances, ctx)
        if mtype == "Pods":
            src = m.get("pods") or {}
            ident = src.get("metric") or {}
            mname = str(ident.get("name") or "")
            try:
                metric_selector = _selector_string(ident.get("selector"))
            except errors.BadRequest as exc:
                raise await self._unable(hpa, "FailedGetPodsMetric", exc.message,
                                         f"failed to get pods metric value: {exc.message}") from None
            try:
                target = calc.milli_value((src.get("target") or {}).get("averageValue"))
                try:
                    raw = await self.metrics.raw_metric(mname, namespace, selector, metric_selector)
                except MetricError as exc:
                    raise calc.CalcError(f"unable to get metric {mname}: {exc}") from None
                replicas, usage = calc.plain_metric_replicas(current, target, tolerances, ctx, raw)
            except (calc.CalcError, ValueError) as exc:
                raise await self._unable(hpa, "FailedGetPodsMetric", str(exc),
                                         f"failed to get pods metric value: {exc}") from None
            status = {"type": "Pods", "pods": {"metric": _identifier(ident),
                                               "current": {"averageValue": calc.milli_quantity(usage)}}}
            return _Proposal(replicas, f"pods metric {mname}", status)
        if mtype == "Object":
            return await self._object(hpa, m, namespace, current, status_replicas, tolerances, ctx)
        if mtype == "External":
            return await self._external(hpa, m, namespace, current, status_replicas, tolerances, ctx)
        err = f'unknown metric source type "{mtype or ""}"'
        raise await self._unable(hpa, "InvalidMetricSourceType", err, err)

    async def _resource(self, hpa: dict[str, Any], m: Mapping[str, Any], namespace: str, selector: str, current: int,
                        tolerances: calc.Tolerances, ctx: calc.PodContext) -> _Proposal:
        container_type = m.get("type") == "ContainerResource"
        field = "containerResource" if container_type else "resource"
        src = m.get(field) or {}
        resource = str(src.get("name") or "")
        container = str(src.get("container") or "") if container_type else ""
        target = src.get("target") or {}
        reason = "FailedGetContainerResourceMetric" if container_type else "FailedGetResourceMetric"

        def wrap(err: str) -> str:
            return (f"failed to get {container} container metric value: {err}" if container_type
                    else f"failed to get {resource} resource metric value: {err}")

        try:
            if target.get("averageValue") is not None:
                try:
                    metrics = await self.metrics.resource_metric(resource, namespace, selector, container)
                    replicas, usage = calc.plain_metric_replicas(current, calc.milli_value(target["averageValue"]),
                                                                 tolerances, ctx, metrics, resource)
                except (MetricError, calc.CalcError) as exc:
                    msg = str(exc)
                    if isinstance(exc, MetricError):
                        msg = f"unable to get metrics for resource {resource}: {exc}"
                    raise calc.CalcError(f"failed to get {resource} usage: {msg}") from None
                name = f"{resource} container resource" if container_type else f"{resource} resource"
                current_value: dict[str, Any] = {"averageValue": calc.milli_quantity(usage)}
            elif target.get("averageUtilization") is not None:
                try:
                    metrics = await self.metrics.resource_metric(resource, namespace, selector, container)
                    replicas, utilization, raw = calc.resource_replicas(
                        current, int(target["averageUtilization"]), resource, tolerances, ctx, metrics, container)
                except (MetricError, calc.CalcError) as exc:
                    msg = str(exc)
                    if isinstance(exc, MetricError):
                        msg = f"unable to get metrics for resource {resource}: {exc}"
                    raise calc.CalcError(f"failed to get {resource} utilization: {msg}") from None
                name = (f"{resource} container resource utilization (percentage of request)" if container_type
                        else f"{resource} resource utilization (percentage of request)")
                current_value = {"averageValue": calc.milli_quantity(raw), "averageUtilization": utilization}
            else:
                raise calc.CalcError("invalid resource metric source: neither an average utilization target nor an "
                                     "average value (usage) target was set")
        except (calc.CalcError, ValueError) as exc:
            raise await self._unable(hpa, reason, str(exc), wrap(str(exc))) from None
        body: dict[str, Any] = {"name": resource, "current": current_value}
        if container_type:
            body["container"] = container
        return _Proposal(replicas, name, {"type": m.get("type"), field: body})

    async def _object(self, hpa: dict[str, Any], m: Mapping[str, Any], namespace: str, current: int,
                      status_replicas: int, tolerances: calc.Tolerances, ctx: calc.PodContext) -> _Proposal:
        src = m.get("object") or {}
        ident = src.get("metric") or {}
        mname = str(ident.get("name") or "")
        ref = src.get("describedObject") or {}
        target = src.get("target") or {}

        def wrap(err: str) -> str:
            return f"failed to get object metric value: {err}"

        try:
            metric_selector = _selector_string(ident.get("selector"))
        except errors.BadRequest as exc:
            raise await self._unable(hpa, "FailedGetObjectMetric", exc.message, wrap(exc.message)) from None

        async def usage() -> int:
            try:
                return await self.metrics.object_metric(mname, namespace, ref, metric_selector)
            except MetricError as exc:
                # Upstream's format puts the arguments in this (odd) order; kept for fidelity.
                raise calc.CalcError(f"unable to get metric {mname}: {ref.get('kind', '')} on {namespace} "
                                     f"{ref.get('name', '')}/{exc}") from None

        base = {"describedObject": dict(ref), "metric": _identifier(ident)}
        if target.get("type") == "Value" and target.get("value") is not None:
            try:
                value = await usage()
                replicas = calc.object_replicas(current, calc.milli_value(target["value"]), value, tolerances, ctx.pods)
            except (calc.CalcError, ValueError) as exc:
                raise await self._unable(hpa, "FailedGetObjectMetric", str(exc), wrap(str(exc))) from None
            status = {"type": "Object", "object": {**base, "current": {"value": calc.milli_quantity(value)}}}
            return _Proposal(replicas, f"{ref.get('kind', '')} metric {mname}", status)
        if target.get("type") == "AverageValue" and target.get("averageValue") is not None:
            try:
                value = await usage()
                replicas, per_pod = calc.per_pod_replicas(status_replicas, calc.milli_value(target["averageValue"]),
                                                          value, tolerances)
            except (calc.CalcError, ValueError) as exc:
                raise await self._unable(hpa, "FailedGetObjectMetric", str(exc),
                                         wrap(f"failed to get {mname} object metric: {exc}")) from None
            status = {"type": "Object", "object": {**base, "current": {"averageValue": calc.milli_quantity(per_pod)}}}
            # Upstream names this proposal "external metric ..." too.
            sel_go = calc.format_label_selector_go(ident.get("selector"))
            return _Proposal(replicas, f"external metric {mname}({sel_go})", status)
        err = "invalid object metric source: neither a value target nor an average value target was set"
        raise await self._unable(hpa, "FailedGetObjectMetric", err, wrap(err))

    async def _external(self, hpa: dict[str, Any], m: Mapping[str, Any], namespace: str, current: int,
                        status_replicas: int, tolerances: calc.Tolerances, ctx: calc.PodContext) -> _Proposal:
        src = m.get("external") or {}
        ident = src.get("metric") or {}
        mname = str(ident.get("name") or "")
        target = src.get("target") or {}
        sel_go = calc.format_label_selector_go(ident.get("selector"))
        name = f"external metric {mname}({sel_go})"

        def wrap(err: str) -> str:
            return f"failed to get {mname} external metric value: {err}"

        async def values() -> list[int]:
            try:
                metric_selector = _selector_string(ident.get("selector"))
            except errors.BadRequest as exc:
                raise calc.CalcError(exc.message) from None
            try:
                return await self.metrics.external_metric(mname, namespace, metric_selector)
            except MetricError as exc:
                raise calc.CalcError(f"unable to get external metric {namespace}/{mname}/{sel_go}: {exc}") from None

        if target.get("averageValue") is not None:
            try:
                usage = calc.external_usage(await values())
                replicas, per_pod = calc.per_pod_replicas(status_replicas, calc.milli_value(target["averageValue"]),
                                                          usage, tolerances)
            except (calc.CalcError, ValueError) as exc:
                raise await self._unable(hpa, "FailedGetExternalMetric", str(exc),
                                         wrap(f"failed to get {mname} external metric: {exc}")) from None
            status = {"type": "External", "external": {"metric": _identifier(ident),
                                                       "current": {"averageValue": calc.milli_quantity(per_pod)}}}
            return _Proposal(replicas, name, status)
        if target.get("value") is not None:
            try:
                replicas, usage = calc.external_replicas(current, calc.milli_value(target["value"]), await values(),
                                                         tolerances, ctx.pods)
            except (calc.CalcError, ValueError) as exc:
                raise await self._unable(hpa, "FailedGetExternalMetric", str(exc),
                                         wrap(f"failed to get external metric {mname}: {exc}")) from None
            status = {"type": "External", "external": {"metric": _identifier(ident),
                                                       "current": {"value": calc.milli_quantity(usage)}}}
            return _Proposal(replicas, name, status)
        err = "invalid external metric source: neither a value target nor an average value target was set"
        raise await self._unable(hpa, "FailedGetExternalMetric", err, wrap(err))

    # ------------------------------------------------------------------ events

    async def _event(self, hpa: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        """Record an Event; a repeat of the same (type, reason, message) for this HPA bumps the
        count of the Event already written."""
        meta = caches.meta(hpa)
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""), reason, f"{type_}:{message}")
        series = self._series.get(key)
        now = clocks.rfc3339(self.clock.now())
        if series is not None:
            try:
                await self.client.patch(EVENTS, series.name, {"count": series.count + 1, "lastTimestamp": now},
                                        namespace=series.namespace)
                series.count += 1
                return
            except errors.StatusError:
                del self._series[key]
        event = self.recorder.build(hpa, type_, reason, message)
        try:
            created = await self.client.create_event(event)
        except (errors.StatusError, OSError, TimeoutError) as exc:
            logger.warning("event_failed", reason=reason, error=message_of(exc))
            return
        cmeta = created.get("metadata") or {}
        self._series[key] = _Series(name=str(cmeta.get("name") or ""), namespace=str(cmeta.get("namespace") or ""),
                                    count=int(created.get("count") or 1))


class _TargetError(Exception):
    pass


async def _target_kind(ref: Mapping[str, Any], *, mapper: discovery.RESTMapper) -> res.ResourceKind:
    """The resource a scaleTargetRef names, through the discovery-backed mapper as upstream's
    `a.mapper.RESTMappings(targetGK)`: built-in kinds at once, custom ones (a CustomResourceDefinition
    with a scale subresource) from discovery, read again when the kind is not known yet."""
    api_version = str(ref.get("apiVersion") or "")
    kind = str(ref.get("kind") or "")
    if api_version.count("/") > 1 or api_version.startswith("/") or api_version.endswith("/"):
        raise _TargetError(f"unexpected GroupVersion string: {api_version}")
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    target = await mapper.kind_for(group, kind)
    if target is None:
        raise _TargetError(f'no matches for kind "{kind}" in group "{group}"')
    if target.subresource("scale") is None:
        raise _TargetError("the server could not find the requested resource")
    return target


def _selector_string(sel: Any) -> str:
    """metav1.LabelSelectorAsSelector(sel).String() (nil selects nothing, which prints as "")."""
    return str(selectors.from_label_selector_object(sel if isinstance(sel, Mapping) else None))


def _identifier(ident: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": str(ident.get("name") or "")}
    if ident.get("selector") is not None:
        out["selector"] = ident["selector"]
    return out


def new(ctx: managers.ControllerContext, *, workers: int = 5) -> managers.Controller:
    hpa = HorizontalController(client=ctx.client, informer_factory=ctx.informers, clock=ctx.clock,
                               recorder=ctx.recorder(COMPONENT))
    return managers.Controller(name=NAME, reconciler=hpa, watches=hpa.watches(), workers=workers)


__all__ = ["COMPONENT", "NAME", "HorizontalController", "new"]
