"""The container lifecycle model (controllers/fleet/lifecycle.py) on its own: run times and exit
codes from annotations and the fleet's defaults, restarts per restartPolicy with CrashLoopBackOff
timings, init containers then sidecars then app containers, probes, graceful deletion, and the
statuses it reports surviving the API server's round trip.

`_play` drives it as the controller does: advance at `now`, write the status if it changed, look
again at `next_at`; each look after a write must find nothing more to write (the status the model
reads back is the one it wrote). Out of scope: the controller's writes and requeues
(test_fleet_integration.py).
"""

from __future__ import annotations

import copy
from typing import Any

from controllers.fleet import lifecycle
from controllers.fleet import objects as objs
from controllers.fleet.model import Kubelet
from controllers.runtime import client as clients
from cp import clock as clocks
from tests.controllers.fleet.conftest import START

HOST, IP = "172.18.0.2", "10.244.0.2"


def _pod(*, policy: str = "Always", annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    spec.setdefault("containers", [{"name": "app", "image": "busybox"}])
    return {"metadata": {"name": "p", "namespace": "default", "uid": "u-1", "annotations": annotations or {}},
            "spec": {"nodeName": "n", "restartPolicy": policy, **spec}}


def _advance(pod: dict[str, Any], now: float, kubelet: Kubelet) -> lifecycle.Step:
    return lifecycle.advance(pod, now=now, kubelet=kubelet, host_ip=HOST, pod_ip=IP)


def _play(pod: dict[str, Any], *, until: float, kubelet: Kubelet | None = None, start: float = START,
          ) -> list[tuple[float, dict[str, Any]]]:
    """Every status written from `start` to `until` (relative seconds, status)."""
    kubelet = kubelet or Kubelet()
    now = start
    writes: list[tuple[float, dict[str, Any]]] = []
    while True:
        step = _advance(pod, now, kubelet)
        if objs.status_differs(pod, step.status):
            pod["status"] = {**(pod.get("status") or {}), **copy.deepcopy(step.status)}
            writes.append((now - START, pod["status"]))
            again = _advance(pod, now, kubelet)
            assert not objs.status_differs(pod, again.status), "a status read back must need no write"
            assert again.next_at == step.next_at
        if step.next_at is None or step.next_at > START + until:
            return writes
        assert step.next_at > now
        now = step.next_at


def _cs(status: dict[str, Any], name: str = "app") -> dict[str, Any]:
    return next(c for c in status["containerStatuses"] + status.get("initContainerStatuses", [])
                if c["name"] == name)


def _cond(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == type_)


def _t(seconds: float) -> str:
    return clocks.rfc3339(START + seconds)


def test_a_plain_pod_runs_in_one_write_and_needs_no_clock() -> None:
    pod = _pod()
    writes = _play(pod, until=10_000)
    assert [t for t, _ in writes] == [0]
    status = writes[0][1]
    assert status["phase"] == "Running" and status["podIP"] == IP and status["hostIP"] == HOST
    app = _cs(status)
    assert app["ready"] is True and app["started"] is True and app["restartCount"] == 0
    assert app["state"] == {"running": {"startedAt": _t(0)}} and app["lastState"] == {}
    assert app["containerID"].startswith("containerd://") and app["imageID"].startswith("docker.io/library/busybox@")
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("PodReadyToStartContainers", "True"), ("Initialized", "True"), ("Ready", "True"),
        ("ContainersReady", "True"), ("PodScheduled", "True")]


def test_run_seconds_and_exit_code_end_a_pod_that_is_not_restarted() -> None:
    ok = _play(_pod(policy="Never", annotations={lifecycle.RUN_SECONDS: "30"}), until=100)
    assert [(t, s["phase"]) for t, s in ok] == [(0, "Running"), (30, "Succeeded")]
    term = _cs(ok[-1][1])["state"]["terminated"]
    assert (term["exitCode"], term["reason"], term["startedAt"], term["finishedAt"]) == (0, "Completed", _t(0), _t(30))
    assert _cond(ok[-1][1], "Ready")["reason"] == "PodCompleted"
    assert _cond(ok[-1][1], "PodReadyToStartContainers")["status"] == "False"

    failed = _play(_pod(policy="Never", annotations={lifecycle.RUN_SECONDS: "30", lifecycle.EXIT_CODE: "3"}),
                   until=100)
    status = failed[-1][1]
    assert status["phase"] == "Failed" and _cs(status)["state"]["terminated"]["exitCode"] == 3
    assert _cs(status)["state"]["terminated"]["reason"] == "Error"
    assert _cond(status, "ContainersReady")["reason"] == "PodFailed"


def test_per_container_annotations_win_over_the_pod_wide_ones() -> None:
    pod = _pod(policy="Never", annotations={lifecycle.RUN_SECONDS: "20", f"{lifecycle.RUN_SECONDS}.a": "10",
                                            f"{lifecycle.EXIT_CODE}.b": "2"},
               containers=[{"name": "a", "image": "x"}, {"name": "b", "image": "x"}])
    writes = _play(pod, until=100)
    assert [(t, s["phase"]) for t, s in writes] == [(0, "Running"), (10, "Running"), (20, "Failed")]
    mid = writes[1][1]
    assert "terminated" in _cs(mid, "a")["state"] and _cs(mid, "b")["ready"] is True
    assert _cond(mid, "Ready")["message"] == "containers with unready status: [a]"
    assert _cs(writes[-1][1], "b")["state"]["terminated"]["exitCode"] == 2


def test_the_fleet_default_run_time_applies_to_pods_that_are_not_restarted() -> None:
    kubelet = Kubelet(default_run_seconds=5, default_exit_code=0)
    assert [t for t, _ in _play(_pod(policy="OnFailure"), until=100, kubelet=kubelet)] == [0, 5]
    assert [t for t, _ in _play(_pod(policy="Always"), until=100, kubelet=kubelet)] == [0]


def test_crash_loop_back_off_doubles_from_10_to_300_seconds() -> None:
    pod = _pod(annotations={lifecycle.RUN_SECONDS: "5", lifecycle.EXIT_CODE: "1"})
    writes = _play(pod, until=2000)
    restarts = [(t, _cs(s)["restartCount"]) for t, s in writes if "running" in _cs(s)["state"]]
    # runs of 5 s; waits of 10, 20, 40, 80, 160, 300, 300...
    assert restarts[:8] == [(0, 0), (15, 1), (40, 2), (85, 3), (170, 4), (335, 5), (640, 6), (945, 7)]
    waiting = next(s for t, s in writes if t == 5)
    app = _cs(waiting)
    assert app["state"] == {"waiting": {"reason": "CrashLoopBackOff",
                                        "message": "back-off 10s restarting failed container=app pod=p_default(u-1)"}}
    assert app["lastState"]["terminated"]["exitCode"] == 1 and app["lastState"]["terminated"]["finishedAt"] == _t(5)
    assert app["ready"] is False and waiting["phase"] == "Running"
    assert _cond(waiting, "Ready")["reason"] == "ContainersNotReady"
    later = next(s for t, s in writes if t == 640 + 5)
    assert _cs(later)["state"]["waiting"]["message"].startswith("back-off 5m0s ")  # as Go prints durations
    waits = [_cs(s)["state"]["waiting"]["message"].split()[1] for _, s in writes if "waiting" in _cs(s)["state"]]
    assert waits[:7] == ["10s", "20s", "40s", "1m20s", "2m40s", "5m0s", "5m0s"]
    # a new run has a new container id; the last one is in lastState
    assert _cs(writes[1][1])["containerID"] != _cs(writes[3][1])["containerID"]


def test_a_jump_of_the_clock_replays_the_same_history() -> None:
    ann = {lifecycle.RUN_SECONDS: "5", lifecycle.EXIT_CODE: "1"}
    stepped = _play(_pod(annotations=ann), until=7200)
    jumped = _pod(annotations=ann)
    jumped["status"] = _advance(jumped, START, Kubelet()).status
    step = _advance(jumped, START + 3600, Kubelet())
    last = [s for t, s in stepped if t <= 3600][-1]
    assert step.status["containerStatuses"] == last["containerStatuses"]
    assert _cs(last)["restartCount"] > 10
    assert step.next_at == START + next(t for t, _ in stepped if t > 3600)


def test_a_ten_minute_run_resets_the_back_off() -> None:
    writes = _play(_pod(annotations={lifecycle.RUN_SECONDS: "700", lifecycle.EXIT_CODE: "1"}), until=1500)
    waits = [_cs(s)["state"]["waiting"]["message"].split()[1] for _, s in writes if "waiting" in _cs(s)["state"]]
    assert waits == ["10s", "10s"]


def test_on_failure_restarts_until_success() -> None:
    pod = _pod(policy="OnFailure", annotations={lifecycle.RUN_SECONDS: "5", lifecycle.EXIT_CODE: "1,1,0"})
    writes = _play(pod, until=1000)
    # fails at 5 (waits 10), runs 15-20, fails (waits 20), runs 40-45 and succeeds
    assert [(t, s["phase"]) for t, s in writes] == [(0, "Running"), (5, "Running"), (15, "Running"),
                                                    (20, "Running"), (40, "Running"), (45, "Succeeded")]
    done = _cs(writes[-1][1])
    assert done["restartCount"] == 2 and done["state"]["terminated"]["exitCode"] == 0
    assert done["lastState"]["terminated"]["exitCode"] == 1


def test_never_does_not_restart_and_always_restarts_a_successful_exit() -> None:
    never = _play(_pod(policy="Never", annotations={lifecycle.RUN_SECONDS: "5", lifecycle.EXIT_CODE: "1"}),
                  until=100)
    assert [t for t, _ in never] == [0, 5] and _cs(never[-1][1])["restartCount"] == 0
    always = _play(_pod(annotations={lifecycle.RUN_SECONDS: "5"}), until=16)
    assert _cs(always[-1][1])["restartCount"] == 1
    assert always[1][1]["phase"] == "Running" and _cs(always[1][1])["state"]["waiting"]["reason"] == "CrashLoopBackOff"


def test_init_containers_then_sidecars_then_app_containers() -> None:
    pod = _pod(annotations={f"{lifecycle.RUN_SECONDS}.setup": "5", f"{lifecycle.RUN_SECONDS}.migrate": "2"},
               initContainers=[{"name": "setup", "image": "x"},
                               {"name": "proxy", "image": "envoy", "restartPolicy": "Always",
                                "startupProbe": {"exec": {"command": ["true"]}, "initialDelaySeconds": 3,
                                                 "periodSeconds": 10, "failureThreshold": 3, "successThreshold": 1}},
                               {"name": "migrate", "image": "x"}])
    writes = dict(_play(pod, until=100))
    assert list(writes) == [0, 5, 8, 10]
    first = writes[0]
    assert first["phase"] == "Pending"
    assert "running" in _cs(first, "setup")["state"]
    assert _cs(first, "proxy")["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert _cs(first, "app")["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert _cond(first, "Initialized") | {"lastTransitionTime": ""} == {
        "type": "Initialized", "status": "False", "reason": "ContainersNotInitialized",
        "message": "containers with incomplete status: [setup proxy migrate]", "lastTransitionTime": ""}
    assert _cond(first, "PodReadyToStartContainers")["status"] == "True"
    at5 = writes[5]
    assert _cs(at5, "setup")["state"]["terminated"]["reason"] == "Completed"
    assert _cs(at5, "setup")["ready"] is True  # a completed init container is ready, as the prober says
    assert _cond(at5, "Initialized")["message"] == "containers with incomplete status: [proxy migrate]"
    assert _cs(at5, "proxy")["started"] is False and "running" in _cs(at5, "proxy")["state"]
    at8 = writes[8]  # the sidecar's startup probe passed: the next init container runs
    assert _cs(at8, "proxy")["started"] is True and "running" in _cs(at8, "migrate")["state"]
    at10 = writes[10]
    assert at10["phase"] == "Running" and _cs(at10)["state"] == {"running": {"startedAt": _t(10)}}
    assert _cond(at10, "Initialized")["status"] == "True" and _cond(at10, "Ready")["status"] == "True"
    assert [c["name"] for c in at10["initContainerStatuses"]] == ["setup", "proxy", "migrate"]


def test_a_failed_init_container_fails_a_never_pod_and_is_retried_otherwise() -> None:
    ann = {f"{lifecycle.EXIT_CODE}.init": "1"}
    never = _play(_pod(policy="Never", annotations=ann, initContainers=[{"name": "init", "image": "x"}]), until=100)
    assert [(t, s["phase"]) for t, s in never] == [(0, "Failed")]
    assert _cs(never[0][1], "app")["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert _cond(never[0][1], "Initialized")["message"] == "containers with incomplete status: [init]"
    assert _cs(never[0][1], "init")["ready"] is False
    retried = _play(_pod(policy="Always", annotations=ann, initContainers=[{"name": "init", "image": "x"}]),
                    until=35)
    assert [(t, s["phase"]) for t, s in retried] == [(0, "Pending"), (10, "Pending"), (30, "Pending")]
    assert _cs(retried[-1][1], "init")["restartCount"] == 2


def test_sidecars_stop_when_the_app_containers_are_done() -> None:
    pod = _pod(policy="Never", annotations={lifecycle.RUN_SECONDS: "7"},
               initContainers=[{"name": "log", "image": "x", "restartPolicy": "Always"}])
    writes = _play(pod, until=100)
    # the app container is done at 7 s; the sidecar is then told to stop and takes its stop time
    # (podShutdownSeconds, 1 s): Running until then, as upstream's getPhase counts running sidecars
    assert [(t, s["phase"]) for t, s in writes] == [(0, "Running"), (7, "Running"), (8, "Succeeded")]
    assert "terminated" in _cs(writes[1][1])["state"] and "running" in _cs(writes[1][1], "log")["state"]
    assert _cs(writes[-1][1], "log")["state"]["terminated"] | {"containerID": ""} == {
        "exitCode": 0, "reason": "Completed", "startedAt": _t(0), "finishedAt": _t(8), "containerID": ""}
    failed_init = _pod(policy="Never", annotations={f"{lifecycle.EXIT_CODE}.setup": "1"},
                       initContainers=[{"name": "log", "image": "x", "restartPolicy": "Always"},
                                       {"name": "setup", "image": "x"}])
    writes = _play(failed_init, until=100)  # Failed at once; the sidecar is stopped after it
    assert [(t, s["phase"]) for t, s in writes] == [(0, "Failed"), (1, "Failed")]
    assert "terminated" in _cs(writes[-1][1], "log")["state"]


def test_readiness_startup_and_liveness_probes() -> None:
    probe = {"httpGet": {"path": "/", "port": 80}, "initialDelaySeconds": 5, "periodSeconds": 10,
             "successThreshold": 1, "failureThreshold": 3}
    ready_later = _play(_pod(containers=[{"name": "app", "image": "x", "readinessProbe": probe}]), until=100)
    assert [(t, _cs(s)["ready"], _cond(s, "Ready")["status"]) for t, s in ready_later] == [
        (0, False, "False"), (5, True, "True")]

    never_ready = _play(_pod(annotations={lifecycle.READINESS_PROBE_FAILS: "true"},
                             containers=[{"name": "app", "image": "x", "readinessProbe": probe}]), until=1000)
    assert [t for t, _ in never_ready] == [0] and _cs(never_ready[0][1])["started"] is True

    # liveness fails: killed after 5 + 2 * 10 s, restarted after the back-off
    killed = _play(_pod(annotations={lifecycle.LIVENESS_PROBE_FAILS: "true"},
                        containers=[{"name": "app", "image": "x", "livenessProbe": probe}]), until=40)
    assert [t for t, _ in killed] == [0, 25, 35]
    assert _cs(killed[1][1])["lastState"]["terminated"] | {"containerID": ""} == {
        "exitCode": 137, "reason": "Error", "startedAt": _t(0), "finishedAt": _t(25), "containerID": ""}

    # a startup probe that never passes: not started, killed after 5 + 2 * 10 s
    stuck = _play(_pod(annotations={lifecycle.STARTUP_PROBE_FAILS: "true"},
                       containers=[{"name": "app", "image": "x", "startupProbe": probe}]), until=30)
    assert [t for t, _ in stuck] == [0, 25] and _cs(stuck[0][1])["started"] is False


def test_oom_killed() -> None:
    writes = _play(_pod(policy="Never", annotations={lifecycle.RUN_SECONDS: "3", lifecycle.OOM_KILLED: "true"}),
                   until=10)
    term = _cs(writes[-1][1])["state"]["terminated"]
    assert (term["exitCode"], term["reason"], writes[-1][1]["phase"]) == (137, "OOMKilled", "Failed")


def _deleted(pod: dict[str, Any], *, at: float, grace: int) -> dict[str, Any]:
    pod["metadata"]["deletionTimestamp"] = clocks.rfc3339(START + at + grace)
    pod["metadata"]["deletionGracePeriodSeconds"] = grace
    return pod


def test_deletion_stops_containers_within_the_grace_period() -> None:
    kubelet = Kubelet()
    pod = _pod()
    pod["status"] = _advance(pod, START, kubelet).status
    _deleted(pod, at=100, grace=30)
    step = _advance(pod, START + 100, kubelet)
    assert not step.stopped and step.next_at == START + 101 and step.status["phase"] == "Running"
    step = _advance(pod, START + 101, kubelet)  # podShutdownSeconds (1 s) after the deletion
    assert step.stopped and step.status["phase"] == "Succeeded"
    assert _cs(step.status)["state"]["terminated"]["exitCode"] == 0

    slow = _pod(annotations={lifecycle.STOP_SECONDS: "60", lifecycle.RUN_SECONDS: "1000"})
    slow["status"] = _advance(slow, START, kubelet).status
    _deleted(slow, at=100, grace=30)
    assert _advance(slow, START + 100, kubelet).next_at == START + 130
    step = _advance(slow, START + 130, kubelet)  # the grace period ends first: killed
    assert step.stopped and step.status["phase"] == "Failed"
    assert _cs(step.status)["state"]["terminated"] | {"containerID": ""} == {
        "exitCode": 137, "reason": "Error", "startedAt": _t(0), "finishedAt": _t(130), "containerID": ""}


def test_sidecars_stop_after_the_app_containers_on_deletion() -> None:
    kubelet = Kubelet()
    ann = {f"{lifecycle.STOP_SECONDS}.app": "5", f"{lifecycle.STOP_SECONDS}.first": "2",
           f"{lifecycle.STOP_SECONDS}.second": "3"}
    sidecars = [{"name": "first", "image": "x", "restartPolicy": "Always"},
                {"name": "second", "image": "x", "restartPolicy": "Always"}]
    pod = _pod(annotations=ann, initContainers=sidecars)
    pod["status"] = _advance(pod, START, kubelet).status
    _deleted(pod, at=100, grace=30)
    finished: dict[str, str] = {}
    now: float = START + 100
    while True:  # app at 105, then the later sidecar (108), then the first one (110)
        step = _advance(pod, now, kubelet)
        pod["status"] = step.status
        for name in ("app", "first", "second"):
            term = _cs(step.status, name)["state"].get("terminated")
            if term:
                finished.setdefault(name, term["finishedAt"])
        if step.stopped:
            break
        assert step.next_at is not None
        now = step.next_at
    assert finished == {"app": _t(105), "second": _t(108), "first": _t(110)}
    assert now == START + 110 and step.status["phase"] == "Succeeded"

    short = _pod(annotations=ann, initContainers=sidecars)  # 6 s of grace: the sidecars are killed
    short["status"] = _advance(short, START, kubelet).status
    _deleted(short, at=100, grace=6)
    step = _advance(short, START + 106, kubelet)
    assert step.stopped and [_cs(step.status, n)["state"]["terminated"]["exitCode"]
                             for n in ("app", "first", "second")] == [0, 137, 137]


def test_a_deleted_pod_in_back_off_is_not_restarted() -> None:
    kubelet = Kubelet()
    pod = _pod(annotations={lifecycle.RUN_SECONDS: "5"})
    writes = _play(pod, until=6)
    assert "waiting" in _cs(writes[-1][1])["state"]
    _deleted(pod, at=6, grace=30)
    step = _advance(pod, START + 100, kubelet)
    assert step.stopped and step.next_at is None and _cs(step.status)["restartCount"] == 0
    assert step.status["phase"] == "Failed"  # as upstream's getPhase: a waiting container is not a success


async def test_statuses_are_stored_unchanged(client: clients.Client) -> None:
    """Each status survives the API server's round trip, so rebuilding it later from the stored
    pod finds nothing to write."""
    pod = await client.create("pods", {"metadata": {"name": "p", "namespace": "default", "annotations": {
        f"{lifecycle.RUN_SECONDS}.z": "5", f"{lifecycle.EXIT_CODE}.z": "1"}}, "spec": {
        "nodeName": "n", "restartPolicy": "OnFailure", "readinessGates": [{"conditionType": "example.com/lb"}],
        "initContainers": [{"name": "init", "image": "busybox"}, {"name": "proxy", "image": "envoy",
                                                                    "restartPolicy": "Always"}],
        "containers": [{"name": "z", "image": "nginx"}, {"name": "a", "image": "x/y:1"}]}})
    kubelet = Kubelet()
    desired = lifecycle.pending_status(pod, now=START, host_ip=HOST)
    pod = await client.patch("pods", "p", {"status": desired}, namespace="default", subresource="status")
    assert not objs.status_differs(pod, lifecycle.pending_status(pod, now=START + 5, host_ip=HOST))
    for at in (1, 6, 16):  # running; z waiting in back-off; z running again
        step = _advance(pod, START + at, kubelet)
        pod = await client.patch("pods", "p", {"status": step.status}, namespace="default", subresource="status")
        assert not objs.status_differs(pod, _advance(pod, START + at, kubelet).status), at
    assert [c["name"] for c in pod["status"]["containerStatuses"]] == ["a", "z"]
    init, proxy = pod["status"]["initContainerStatuses"]
    assert "terminated" in init["state"] and "running" in proxy["state"]
    assert _cs(pod["status"], "z")["restartCount"] == 1
    ready = _cond(pod["status"], "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False", "ReadinessGatesNotReady", 'corresponding condition of pod readiness gate "example.com/lb" does not exist.')


def test_a_very_long_jump_is_replayed_in_parts() -> None:
    kubelet = Kubelet()
    pod = _pod(annotations={lifecycle.RUN_SECONDS: "5", lifecycle.EXIT_CODE: "1"})
    pod["status"] = _advance(pod, START, kubelet).status
    now = START + 100 * 86400  # 100 days of a crash loop: more than one call replays
    step = _advance(pod, now, kubelet)
    assert step.next_at is not None and step.next_at <= now
    calls = 1
    while step.next_at is not None and step.next_at <= now:
        pod["status"] = step.status
        step = _advance(pod, now, kubelet)
        calls += 1
    assert calls > 1
    # runs start at 0, 15, 40, 85, 170, 335, 640 (restart 6), then every 5 + 300 s
    assert _cs(step.status)["restartCount"] == 6 + (100 * 86400 - 640) // 305


def test_the_documented_example() -> None:
    # docs/fleet.md, "The container lifecycle model": the training pod.
    pod = _pod(policy="OnFailure", annotations={f"{lifecycle.RUN_SECONDS}.fetch": "15", lifecycle.RUN_SECONDS: "120",
                                                f"{lifecycle.EXIT_CODE}.trainer": "1,0"},
               initContainers=[{"name": "fetch", "image": "x"}], containers=[{"name": "trainer", "image": "x"}])
    writes = _play(pod, until=1000)
    assert [(t, s["phase"]) for t, s in writes] == [(0, "Pending"), (15, "Running"), (135, "Running"),
                                                    (145, "Running"), (265, "Succeeded")]


def test_index_exit_codes_pick_by_completion_index() -> None:
    def ended(index: str, policy: str = "Never") -> list[tuple[float, str, int]]:
        pod = _pod(policy=policy, annotations={lifecycle.RUN_SECONDS: "10", lifecycle.INDEX_EXIT_CODES: "3=42, 5=1;0",
                                               lifecycle.COMPLETION_INDEX: index})
        return [(t, s["phase"], _cs(s)["restartCount"]) for t, s in _play(pod, until=100)]
    assert ended("3")[-1] == (10, "Failed", 0)
    assert ended("4")[-1] == (10, "Succeeded", 0)
    assert ended("5", policy="OnFailure")[-1] == (30, "Succeeded", 1)  # fails once, waits 10 s, succeeds
    pod = _pod(policy="Never", annotations={lifecycle.RUN_SECONDS: "1", lifecycle.INDEX_EXIT_CODES: "3=42",
                                            lifecycle.COMPLETION_INDEX: "3", f"{lifecycle.EXIT_CODE}.app": "7"})
    assert _cs(_play(pod, until=10)[-1][1])["state"]["terminated"]["exitCode"] == 7  # the container's own wins
