"""The Job controller (`pkg/controller/job`): `controller` reconciles, `rules` holds the pure parts
(index sets, pod failure and success policies, the backoff, conditions)."""

from controllers.job.controller import COMPONENT, NAME, JobController, new

__all__ = ["COMPONENT", "NAME", "JobController", "new"]
