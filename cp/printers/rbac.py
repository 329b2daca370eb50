"""Printers of rbac.authorization.k8s.io: RoleBindings and ClusterRoleBindings (upstream's
`printRoleBinding`); Roles and ClusterRoles have no printer upstream and get kube-apiserver's
default table (Name, Created At). Pure; no I/O."""

from __future__ import annotations

from typing import Any

from cp.printers.common import AGE_COL, CREATED_AT_COL, NAME_COL, E, Obj, Printer, col, name_created_at, since

__all__ = ["PRINTERS"]


def _binding_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    ref = o.get("roleRef") or E
    users: list[str] = []
    groups: list[str] = []
    sas: list[str] = []
    for s in o.get("subjects") or ():
        kind = s.get("kind")
        if kind == "ServiceAccount":
            sas.append(f"{s.get('namespace') or ''}/{s.get('name') or ''}")
        elif kind == "User":
            users.append(s.get("name") or "")
        elif kind == "Group":
            groups.append(s.get("name") or "")
    return [
        meta.get("name", ""),
        f"{ref.get('kind') or ''}/{ref.get('name') or ''}",
        since(meta.get("creationTimestamp")),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(sas),
    ]


def _binding_columns(what: str) -> list[dict[str, Any]]:
    return [
        NAME_COL,
        col("Role", "string", "The role granted, as Kind/name."),
        AGE_COL,
        col("Users", "string", f"Users in the {what}.", priority=1),
        col("Groups", "string", f"Groups in the {what}.", priority=1),
        col("ServiceAccounts", "string", f"Service accounts in the {what}, as namespace/name.", priority=1),
    ]


PRINTERS: dict[str, Printer] = {
    "RoleBinding": Printer(_binding_columns("role binding"), _binding_row),
    "ClusterRoleBinding": Printer(_binding_columns("cluster role binding"), _binding_row),
    "Role": Printer([NAME_COL, CREATED_AT_COL], name_created_at),
    "ClusterRole": Printer([NAME_COL, CREATED_AT_COL], name_created_at),
}
