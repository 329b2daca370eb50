"""lightkube 1.0.1 `apply` (server-side apply, `field_manager`, `force`) on a Deployment: containers merge
by name between managers, a conflicting apply raises ApiError 409 with FieldManagerConflict causes, and
`force=True` takes the field over."""

from __future__ import annotations

import pytest
from lightkube import ApiError, AsyncClient, KubeConfig
from lightkube.models.apps_v1 import DeploymentSpec
from lightkube.models.core_v1 import Container, EnvVar, PodSpec, PodTemplateSpec
from lightkube.models.meta_v1 import LabelSelector, ObjectMeta
from lightkube.resources.apps_v1 import Deployment

from api import server as servers


def _deployment(*containers: Container, replicas: int | None = None) -> Deployment:
    return Deployment(
        metadata=ObjectMeta(name="web", namespace="default"),
        spec=DeploymentSpec(
            replicas=replicas,
            selector=LabelSelector(matchLabels={"app": "web"}),
            template=PodTemplateSpec(metadata=ObjectMeta(labels={"app": "web"}),
                                     spec=PodSpec(containers=list(containers)))))


async def test_lightkube_apply_force(api_server: servers.Running) -> None:
    client = AsyncClient(config=KubeConfig.from_file(api_server.kubeconfig))
    try:
        app = Container(name="app", image="nginx:1.27", env=[EnvVar(name="MODE", value="a")])
        first = await client.apply(_deployment(app, replicas=2), field_manager="team-a")
        assert first.spec is not None and first.spec.replicas == 2
        sidecar = Container(name="proxy", image="envoy:1.30")
        both = await client.apply(_deployment(sidecar), field_manager="team-b")
        assert both.spec is not None
        assert [c.name for c in both.spec.template.spec.containers] == ["app", "proxy"]  # type: ignore[union-attr]
        assert both.spec.replicas == 2

        with pytest.raises(ApiError) as info:
            await client.apply(_deployment(Container(name="app", image="nginx:1.27",
                                                     env=[EnvVar(name="MODE", value="b")]), replicas=4),
                               field_manager="team-b")
        status = info.value.status
        assert status.code == 409 and status.reason == "Conflict"
        assert status.details is not None and status.details.causes is not None
        assert sorted((c.field, c.reason, c.message) for c in status.details.causes) == [
            ('.spec.replicas', "FieldManagerConflict", 'conflict with "team-a"'),
            ('.spec.template.spec.containers[name="app"].env[name="MODE"].value', "FieldManagerConflict",
             'conflict with "team-a"')]
        assert status.message is not None and status.message.startswith("Apply failed with 2 conflicts: ")

        forced = await client.apply(
            _deployment(sidecar, Container(name="app", image="nginx:1.27", env=[EnvVar(name="MODE", value="b")]),
                        replicas=4),
            field_manager="team-b", force=True)
        assert forced.spec is not None and forced.spec.replicas == 4
        app_live = next(c for c in forced.spec.template.spec.containers if c.name == "app")  # type: ignore[union-attr]
        assert app_live.env == [EnvVar(name="MODE", value="b")]
        assert forced.metadata is not None and forced.metadata.managedFields is not None
        by = {e.manager: e.fieldsV1 for e in forced.metadata.managedFields}
        assert "f:replicas" in by["team-b"]["f:spec"] and "f:replicas" not in by["team-a"]["f:spec"]
        # team-a stops applying its container: team-b co-owns it now (it applied the same image), so it stays.
        after = await client.apply(_deployment(), field_manager="team-a")
        assert after.spec is not None
        assert sorted(c.name for c in after.spec.template.spec.containers) == ["app", "proxy"]  # type: ignore[union-attr]
    finally:
        await client.close()
