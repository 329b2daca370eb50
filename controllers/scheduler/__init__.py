"""The scheduler (kube-scheduler's `default-scheduler` profile, with the DynamicResources plugin);
see `controllers.scheduler.core` for what it does. The package, along its seams:

- `config`: names, defaults, the kinds watched;
- `plan`: a cycle's outcomes, its exceptions, counters, and the pod / claim predicates;
- `queue`: the unschedulable pool, backoff and the pods in their cycle;
- `nodes`: the node cache (pre-digested nodes, what pods request on them, assumed pods);
- `assume`: the claims in use (informer + assumptions + our writes) and the allocator;
- `cycle`: one scheduling cycle (PreFilter, Filter, PostFilter, Score, Reserve);
- `binding`: the binding cycle (PreBind, Bind) and Unreserve;
- `core`: the `Scheduler` that wires them and reconciles one pod;
- `controller`: the manager's Controller and the factory `new`.
"""

from controllers.scheduler.config import (
    COMPONENT,
    DRA_PLUGIN,
    FEATURES,
    FILTER_TIMEOUT,
    FINALIZER,
    INITIAL_BACKOFF,
    NAME,
    RESERVED_FOR_MAX,
    SCHEDULER_NAME,
)
from controllers.scheduler.controller import SchedulerController, factory, new, scheduler_of
from controllers.scheduler.core import Scheduler
from controllers.scheduler.plan import is_pending, is_responsible

__all__ = [
    "COMPONENT",
    "DRA_PLUGIN",
    "FEATURES",
    "FILTER_TIMEOUT",
    "FINALIZER",
    "INITIAL_BACKOFF",
    "NAME",
    "RESERVED_FOR_MAX",
    "SCHEDULER_NAME",
    "Scheduler",
    "SchedulerController",
    "factory",
    "is_pending",
    "is_responsible",
    "new",
    "scheduler_of",
]
