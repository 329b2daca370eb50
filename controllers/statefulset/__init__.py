"""The StatefulSet controller: `controller` (claims, revisions, ordered and parallel pod management,
claims from volumeClaimTemplates, rolling updates, status; see its docstring) over `rules` (upstream's
`stateful_set_utils.go`: names, identity, storage, claim owner references, status, pure)."""

from controllers.statefulset.controller import COMPONENT, FIELD_MANAGER, NAME, StatefulSetController, new

__all__ = ["COMPONENT", "FIELD_MANAGER", "NAME", "StatefulSetController", "new"]
