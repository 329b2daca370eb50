"""The DaemonSet controller: `controller` (claims, history, placement, rolling update, status; see its
docstring) over `rules` (upstream's daemon `util`: placement, the daemon pod, surge arithmetic, status
numbers, pure)."""

from controllers.daemonset.controller import COMPONENT, FIELD_MANAGER, NAME, DaemonSetController, new

__all__ = ["COMPONENT", "FIELD_MANAGER", "NAME", "DaemonSetController", "new"]
