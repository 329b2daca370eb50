"""A pod's total requests and limits as component-helpers computes them (what quota charges and
LimitRanger's Pod items check): containers add up, init containers count as their largest step
with the sidecars started before them, pod-level resources replace the container sums, overhead
adds, and a container being resized counts the larger of its spec and its status."""

from __future__ import annotations

from typing import Any

from cp import podresources
from cp import resourcelists as rl


def _c(name: str, *, req: dict[str, str] | None = None, lim: dict[str, str] | None = None,
       **more: Any) -> dict[str, Any]:
    return {"name": name, "resources": {"requests": req or {}, "limits": lim or {}}, **more}


def test_sidecars_add_up_and_init_containers_take_their_largest_step() -> None:
    pod = {"spec": {
        "initContainers": [_c("sidecar", req={"cpu": "100m"}, restartPolicy="Always"),
                           _c("migrate", req={"cpu": "2", "memory": "1Gi"})],
        "containers": [_c("app", req={"cpu": "500m", "memory": "256Mi"}), _c("log", req={"cpu": "100m"})]}}
    # Running: 500m + 100m + 100m (sidecar) = 700m; while migrating: 2 + 100m (sidecar before it) = 2100m.
    assert rl.render(podresources.pod_requests(pod)) == {"cpu": "2100m", "memory": "1Gi"}


def test_pod_level_resources_and_overhead() -> None:
    pod = {"spec": {"resources": {"requests": {"cpu": "3"}, "limits": {"memory": "2Gi"}},
                    "overhead": {"cpu": "250m", "memory": "64Mi"},
                    "containers": [_c("app", req={"cpu": "1", "memory": "128Mi"}, lim={"cpu": "1"})]}}
    assert rl.render(podresources.pod_requests(pod)) == {"cpu": "3250m", "memory": "192Mi"}
    assert rl.render(podresources.pod_limits(pod)) == {"cpu": "1250m", "memory": "2112Mi"}
    assert rl.render(podresources.pod_requests(pod, overhead=False, pod_level_resources=False)) == {
        "cpu": "1", "memory": "128Mi"}


def test_a_container_being_resized_counts_the_larger_of_spec_and_status() -> None:
    pod = {"spec": {"containers": [_c("app", req={"cpu": "1"}, lim={"cpu": "1"})]},
           "status": {"containerStatuses": [{"name": "app", "allocatedResources": {"cpu": "2"},
                                             "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}}]}}
    assert rl.render(podresources.pod_requests(pod)) == {"cpu": "1"}
    assert rl.render(podresources.pod_requests(pod, use_status=True)) == {"cpu": "2"}
    pod["status"]["conditions"] = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4"
    assert rl.render(podresources.pod_requests(pod, use_status=True)) == {"cpu": "2"}  # the resize will not happen
