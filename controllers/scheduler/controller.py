"""The scheduler as the controller manager runs it: its work queue is the scheduler's active queue
(a `PriorityWorkQueue` in PrioritySort order, made by `new_queue`), and each start of a term
(`on_start`) resets the unschedulable pool and backoff."""

from __future__ import annotations

import math
from collections.abc import Callable

from controllers.runtime import manager as managers
from controllers.runtime import reconcile, workqueue
from controllers.scheduler.config import (
    BINDING_TIMEOUT,
    COMPONENT,
    DEFAULT_WORKERS,
    FILTER_TIMEOUT,
    INITIAL_BACKOFF,
    MAX_BACKOFF,
    NAME,
)
from controllers.scheduler.core import Scheduler
from cp import clock as clocks
from cp import features as gates
from cp.dra.allocator import allocator_features
from cp.scheduling import profiles as scheduling_profiles


class SchedulerController(managers.Controller):
    def __init__(self, scheduler: Scheduler, *, workers: int) -> None:
        self.scheduler = scheduler
        super().__init__(name=NAME, reconciler=scheduler, watches=scheduler.watches(), workers=workers,
                         rate_limiter=self._rate_limiter)
        scheduler.controller = self

    def _rate_limiter(self, clock: clocks.Clock) -> workqueue.RateLimiter[reconcile.Request]:
        """Unexpected reconcile errors back off per pod like scheduling failures (1 s .. 10 s)."""
        q = self.scheduler.queueing
        return workqueue.ItemExponentialFailureRateLimiter(base=q.initial_backoff, max_delay=q.max_backoff)

    def new_queue(self, *, clock: clocks.Clock, retry_clock: clocks.Clock) -> workqueue.WorkQueue[reconcile.Request]:
        """The active queue: pods in PrioritySort order rather than FIFO."""
        return self.scheduler.queueing.new_active_queue(clock=clock, retry_clock=retry_clock, name=self.name,
                                                        rate_limiter=self._rate_limiter(retry_clock))

    def on_start(self) -> None:
        self.scheduler.on_start()

    def on_stop(self) -> None:
        self.scheduler.on_stop()


def new(ctx: managers.ControllerContext, *, workers: int = DEFAULT_WORKERS, filter_timeout: float = FILTER_TIMEOUT,
        pod_filter_timeout: float = FILTER_TIMEOUT, percentage_of_nodes_to_score: int = 0, seed: int | None = None,
        config: scheduling_profiles.SchedulerConfig | None = None,
        binding_timeout: float = BINDING_TIMEOUT, feature_gates: gates.FeatureGates = gates.DEFAULT
        ) -> managers.Controller:
    """The scheduler controller; `config` (a parsed KubeSchedulerConfiguration) gives its profiles,
    backoff and `percentageOfNodesToScore`; `seed` makes the choice among equally scored nodes
    reproducible; `feature_gates`: kube-scheduler's `--feature-gates` (they also give the allocator's
    `Features`, `allocator_features`, and DRASchedulerFilterTimeout the per-node time limit)."""
    profiles = scheduling_profiles.build_profiles(config) if config is not None else None
    if config is not None and config.percentage_of_nodes_to_score is not None:
        percentage_of_nodes_to_score = config.percentage_of_nodes_to_score
    initial, maximum = INITIAL_BACKOFF, MAX_BACKOFF
    if config is not None:
        initial, maximum = float(config.pod_initial_backoff_seconds), float(config.pod_max_backoff_seconds)
    if not feature_gates.enabled(gates.DRA_SCHEDULER_FILTER_TIMEOUT):
        filter_timeout = math.inf  # upstream: no per-node Filter time limit with the gate off
    sched = Scheduler(client=ctx.client, informer_factory=ctx.informers, clock=ctx.clock,
                      recorder=ctx.recorder(COMPONENT), filter_timeout=filter_timeout,
                      features=allocator_features(gates=feature_gates),
                      pod_filter_timeout=pod_filter_timeout,
                      percentage_of_nodes_to_score=percentage_of_nodes_to_score, seed=seed, profiles=profiles,
                      initial_backoff=initial, max_backoff=maximum, binding_timeout=binding_timeout,
                      feature_gates=feature_gates)
    return SchedulerController(sched, workers=workers)


def factory(*, config: scheduling_profiles.SchedulerConfig | None = None, seed: int | None = None,
            feature_gates: gates.FeatureGates | None = None
            ) -> Callable[[managers.ControllerContext], managers.Controller]:
    """The scheduler's factory for `run_controllers(overrides=...)` with `--scheduler-config`,
    `--scheduler-seed` and `--feature-gates`."""
    def make(ctx: managers.ControllerContext) -> managers.Controller:
        return new(ctx, config=config, seed=seed,
                   feature_gates=feature_gates if feature_gates is not None else gates.DEFAULT)
    return make


def scheduler_of(controller: managers.Controller) -> Scheduler:
    assert isinstance(controller, SchedulerController)
    return controller.scheduler
