"""Validation rules for rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding and ClusterRoleBinding.

The field rules are `cp.rbac.validate` (upstream `pkg/apis/rbac/validation`); names are path segments,
not DNS names. Pure.
"""

from __future__ import annotations

from typing import Any

from cp import rbac
from cp.errors import Cause
from cp.validation.common import validate_path_segment_name
from cp.validation.meta import validate_object_meta
from cp.validation.registry import Rules


def _create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=validate_path_segment_name)
    errs.extend(Cause(t, f, d, val) for t, f, d, val in rbac.validate(obj, None))


def _update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    errs.extend(Cause(t, f, d, val) for t, f, d, val in rbac.validate(new, old))


RULES = {(rbac.GROUP, kind): Rules(_create, _update)
         for kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")}
