"""With authentication on, `pods/why` in sim.cplane.dev is an RBAC-checked subresource."""

from __future__ import annotations

from pathlib import Path

from tests.api.security.conftest import secure_server

WHY = "/apis/sim.cplane.dev/v1alpha1/namespaces/default/pods/web-0/why"


async def test_why_needs_get_on_pods_why(tmp_path: Path) -> None:
    async with secure_server(tmp_path) as s:
        alice = s.session("alice")
        async with alice.get(WHY) as r:
            assert r.status == 403
            assert "pods/why" in (await r.json())["message"]
        admin = s.session("admin")
        role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "why-reader", "namespace": "default"},
                "rules": [{"apiGroups": ["sim.cplane.dev"], "resources": ["pods/why"], "verbs": ["get"]}]}
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "alice-why", "namespace": "default"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "why-reader"},
                   "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}
        for path, body in (("roles", role), ("rolebindings", binding)):
            async with admin.post(f"/apis/rbac.authorization.k8s.io/v1/namespaces/default/{path}", json=body) as r:
                assert r.status == 201, await r.text()
        async with alice.get(WHY) as r:
            assert r.status == 404  # allowed now; there is no such pod
