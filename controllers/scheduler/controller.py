"""The scheduler as the controller manager runs it: its work queue is the scheduler's active queue,
and each start of a term (`on_start`) resets the unschedulable pool and backoff."""

from __future__ import annotations

from controllers.runtime import manager as managers
from controllers.runtime import reconcile, workqueue
from controllers.scheduler.config import (
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


class SchedulerController(managers.Controller):
    def __init__(self, scheduler: Scheduler, *, workers: int) -> None:
        self.scheduler = scheduler
        super().__init__(name=NAME, reconciler=scheduler, watches=scheduler.watches(), workers=workers,
                         rate_limiter=_rate_limiter)
        scheduler.controller = self

    def on_start(self) -> None:
        self.scheduler.on_start()


def _rate_limiter(clock: clocks.Clock) -> workqueue.RateLimiter[reconcile.Request]:
    """Unexpected reconcile errors back off per pod like scheduling failures (1 s .. 10 s)."""
    return workqueue.ItemExponentialFailureRateLimiter(base=INITIAL_BACKOFF, max_delay=MAX_BACKOFF)


def new(ctx: managers.ControllerContext, *, workers: int = DEFAULT_WORKERS, filter_timeout: float = FILTER_TIMEOUT,
        pod_filter_timeout: float = FILTER_TIMEOUT, percentage_of_nodes_to_score: int = 0, seed: int | None = None,
        feature_gates: gates.FeatureGates = gates.DEFAULT) -> managers.Controller:
    """The scheduler controller (`feature_gates`: kube-scheduler's `--feature-gates`)."""
    sched = Scheduler(client=ctx.client, informer_factory=ctx.informers, clock=ctx.clock,
                      recorder=ctx.recorder(COMPONENT), filter_timeout=filter_timeout,
                      pod_filter_timeout=pod_filter_timeout,
                      percentage_of_nodes_to_score=percentage_of_nodes_to_score, seed=seed,
                      feature_gates=feature_gates)
    return SchedulerController(sched, workers=workers)


def scheduler_of(controller: managers.Controller) -> Scheduler:
    assert isinstance(controller, SchedulerController)
    return controller.scheduler
