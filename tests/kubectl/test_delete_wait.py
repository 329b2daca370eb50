"""`kubectl delete` (plain, finalizers, cascade policies, selectors) and `kubectl wait` (conditions,
jsonpath, deletion), including the watch-list streams both use (kubectl-compat.md §5, §6).

Background commands log their requests (`-v=6`), so a test can wait until kubectl is watching before
making the change it waits for.
"""

from __future__ import annotations

import json

import pytest

from tests.kubectl import manifests as m
from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.kubectl

WATCHING = r"watch=true"  # kubectl -v=6 logs each request URL once the response headers arrive


async def test_delete_plain_selector_and_cascade(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", input=m.docs(
        m.pod("web"), m.pod("a1", labels={"app": "a"}), m.pod("a2", labels={"app": "a"}),
        m.pod("b1", labels={"app": "b"}), m.deployment("bg"), m.deployment("orphan"), m.deployment("fg")))

    r = await kubectl("delete", "pod", "web")
    assert r.stdout == 'pod "web" deleted from default namespace\n'
    assert await kubectl.gone("pod", "web")
    r = await kubectl("delete", "pod", "web", check=False)
    assert r.code == 1 and 'Error from server (NotFound): pods "web" not found' in r.stderr
    r = await kubectl("delete", "pod", "web", "--ignore-not-found")
    assert r.code == 0 and r.stdout == ""

    r = await kubectl("delete", "pods", "-l", "app=a")
    assert sorted(r.lines) == ['pod "a1" deleted from default namespace', 'pod "a2" deleted from default namespace']
    assert (await kubectl("get", "pods", "-o", "name")).lines == ["pod/b1"]

    # Dry run first: nothing happens.
    r = await kubectl("delete", "pod", "b1", "--dry-run=server")
    assert r.stdout == 'pod "b1" deleted from default namespace (server dry run)\n'
    assert not await kubectl.gone("pod", "b1")

    # Cascade policies. Background deletes at once; orphan and foreground are carried out by the
    # garbage collector, which this server does not run: the deployments stay, terminating, with
    # the finalizer that asks for it.
    r = await kubectl("delete", "deploy", "bg", "--cascade=background")
    assert r.stdout == 'deployment.apps "bg" deleted from default namespace\n'
    assert await kubectl.gone("deploy", "bg")
    r = await kubectl("delete", "deploy", "orphan", "--cascade=orphan", "--wait=false")
    assert r.stdout == 'deployment.apps "orphan" deleted from default namespace\n'
    r = await kubectl("delete", "deploy", "fg", "--cascade=foreground", "--wait=false")
    assert r.stdout == 'deployment.apps "fg" deleted from default namespace\n'
    got = await kubectl("get", "deploy", "orphan", "fg", "-o",
                        "jsonpath={range .items[*]}{.metadata.name}:{.metadata.finalizers}:"
                        "{.metadata.deletionTimestamp}{\"\\n\"}{end}")
    rows = dict(line.split(":", 1) for line in got.lines)
    assert rows["orphan"].startswith('["orphan"]:20')
    assert rows["fg"].startswith('["foregroundDeletion"]:20')

    # A pod bound to a node is deleted gracefully: it stays Terminating for its kubelet (none runs
    # here) until a forced deletion with no grace period removes it at once.
    await kubectl("create", "-f", "-", input=m.pod("bound", node="n1"))
    r = await kubectl("delete", "pod", "bound", "--wait=false")
    assert r.stdout == 'pod "bound" deleted from default namespace\n'
    r = await kubectl("get", "pod", "bound")
    assert r.rows()[1][:3] == ["bound", "0/1", "Terminating"]
    got = await kubectl("get", "pod", "bound", "-o", "jsonpath={.metadata.deletionGracePeriodSeconds}")
    assert got.stdout == "30"
    r = await kubectl("delete", "pod", "bound", "--grace-period=0", "--force")
    assert "Immediate deletion does not wait for confirmation" in r.stderr
    assert r.stdout == 'pod "bound" force deleted from default namespace\n'
    assert await kubectl.gone("pod", "bound")

    # delete -f with the manifest that made the object.
    path = kubectl.write("cm.yaml", m.configmap("cfg", {"a": "1"}))
    await kubectl("create", "-f", path)
    r = await kubectl("delete", "-f", path)
    assert r.stdout == 'configmap "cfg" deleted from default namespace\n'
    assert await kubectl.gone("cm", "cfg")


async def test_delete_namespace_terminates(kubectl: Kubectl) -> None:
    await kubectl("create", "namespace", "team-a")
    await kubectl("create", "-n", "team-a", "-f", "-", input=m.pod("web"))
    # No namespace controller runs here: the namespace stays Terminating with its content.
    r = await kubectl("delete", "namespace", "team-a", "--wait=false")
    assert r.stdout == 'namespace "team-a" deleted\n'
    r = await kubectl("get", "ns", "team-a")
    assert r.rows()[1][:2] == ["team-a", "Terminating"]
    assert (await kubectl("get", "pods", "-n", "team-a", "-o", "name")).lines == ["pod/web"]
    r = await kubectl("create", "-n", "team-a", "-f", "-", input=m.pod("late"), check=False)
    assert r.code == 1
    assert ('Error from server (Forbidden): error when creating "STDIN": pods "late" is forbidden: unable to '
            'create new content in namespace team-a because it is being terminated') in r.stderr
    r = await kubectl("create", "-n", "ghost", "-f", "-", input=m.pod("late"), check=False)
    assert r.code == 1
    assert 'Error from server (NotFound): error when creating "STDIN": namespaces "ghost" not found' in r.stderr


async def test_delete_with_finalizer(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", input=m.docs(
        m.configmap("keep", {"a": "1"}).replace("  name: keep\n", "  name: keep\n  finalizers:\n  - example.com/keep\n"),
        m.pod("fin", finalizers=("example.com/keep",))))

    # Without waiting: the object stays, terminating, until its finalizer is removed.
    r = await kubectl("delete", "cm", "keep", "--wait=false")
    assert r.stdout == 'configmap "keep" deleted from default namespace\n'
    r = await kubectl("get", "cm", "keep", "-o", "jsonpath={.metadata.deletionTimestamp}|{.metadata.finalizers[0]}")
    ts, finalizer = r.stdout.split("|")
    assert ts.endswith("Z") and finalizer == "example.com/keep"
    # No new finalizers on a terminating object.
    r = await kubectl("patch", "cm", "keep", "--type=json",
                      "-p", '[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/more"}]', check=False)
    assert r.code == 1 and "no new finalizers can be added if the object is being deleted" in r.stderr
    r = await kubectl("patch", "cm", "keep", "--type=json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    assert r.stdout == "configmap/keep patched\n"
    assert await kubectl.gone("cm", "keep")

    # Waiting (the default): kubectl watches until the object is really gone.
    deleting = await kubectl.start("delete", "pod", "fin", "-v=6")
    await deleting.expect(WATCHING, stream="stderr")
    assert deleting.proc.returncode is None  # still waiting for the finalizer
    r = await kubectl("patch", "pod", "fin", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    assert r.stdout == "pod/fin patched\n"
    done = await deleting.wait(timeout=15)
    assert done.code == 0 and done.stdout == 'pod "fin" deleted from default namespace\n'
    assert await kubectl.gone("pod", "fin")


async def test_wait_condition_jsonpath_and_delete(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", input=m.docs(m.pod("web"), m.pod("fin", finalizers=("example.com/keep",))))

    # --for=condition, satisfied by a status patch made while kubectl waits.
    waiting = await kubectl.start("wait", "--for=condition=Ready", "pod/web", "--timeout=20s", "-v=6")
    await waiting.expect(WATCHING, stream="stderr")
    r = await kubectl("patch", "pod", "web", "--subresource=status", "--type=merge",
                      "-p", '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}')
    assert r.stdout == "pod/web patched\n"
    done = await waiting.wait(timeout=20)
    assert (done.code, done.stdout) == (0, "pod/web condition met\n"), done.stderr
    r = await kubectl("get", "pod", "web")
    assert r.rows()[1][:3] == ["web", "0/1", "Running"]

    # Already true: immediate.
    r = await kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=5s")
    assert r.stdout == "pod/web condition met\n"
    r = await kubectl("wait", "--for=jsonpath={.status.phase}=Running", "pod/web", "--timeout=5s")
    assert r.stdout == "pod/web condition met\n"

    # --for=jsonpath, satisfied concurrently through a label.
    waiting = await kubectl.start("wait", "--for=jsonpath={.metadata.labels.stage}=done", "pod/web",
                                  "--timeout=20s", "-v=6")
    await waiting.expect(WATCHING, stream="stderr")
    await kubectl("label", "pod", "web", "stage=done")
    done = await waiting.wait(timeout=20)
    assert (done.code, done.stdout) == (0, "pod/web condition met\n"), done.stderr

    # The same with client-go's watch-list turned off: LIST, then WATCH from the list's resourceVersion.
    waiting = await kubectl.start("wait", "--for=jsonpath={.metadata.labels.stage}=again", "pod/web",
                                  "--timeout=20s", "-v=6", env={"KUBE_FEATURE_WatchListClient": "false"})
    await waiting.expect(WATCHING, stream="stderr")
    assert "sendInitialEvents" not in waiting.stderr
    await kubectl("label", "pod", "web", "stage=again", "--overwrite")
    done = await waiting.wait(timeout=20)
    assert (done.code, done.stdout) == (0, "pod/web condition met\n"), done.stderr

    # Never true: a timeout, reported as such.
    r = await kubectl("wait", "--for=jsonpath={.status.phase}=Failed", "pod/web", "--timeout=1s", check=False)
    assert r.code == 1 and "timed out waiting for the condition on pods/web" in r.stderr

    # --for=delete of a terminating object, completed by removing its finalizer.
    r = await kubectl("delete", "pod", "fin", "--wait=false")
    assert r.stdout == 'pod "fin" deleted from default namespace\n'
    waiting = await kubectl.start("wait", "--for=delete", "pod/fin", "--timeout=20s", "-v=6")
    await waiting.expect(WATCHING, stream="stderr")
    await kubectl("patch", "pod", "fin", "--type=json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    done = await waiting.wait(timeout=20)
    assert (done.code, done.stdout) == (0, "pod/fin condition met\n"), done.stderr

    # --for=create of something that exists.
    r = await kubectl("wait", "--for=create", "pod/web", "--timeout=5s")
    assert r.stdout == "pod/web condition met\n"

    # Of something already gone: immediate success; of something never there: NotFound.
    r = await kubectl("wait", "--for=delete", "pod/fin", "--timeout=5s")
    assert r.code == 0
    r = await kubectl("wait", "--for=condition=Ready", "pod/nope", "--timeout=5s", check=False)
    assert r.code == 1 and 'pods "nope" not found' in r.stderr


async def test_rollout_status_follows_deployment_status(kubectl: Kubectl) -> None:
    """No controller runs here: the test plays the deployment controller by patching status."""
    await kubectl("create", "-f", "-", input=m.deployment("web", replicas=2))
    r = await kubectl("rollout", "status", "deploy/web", "--timeout=1s", check=False)
    assert r.code == 1
    assert r.stdout == "Waiting for deployment spec update to be observed...\n"  # no status.observedGeneration
    assert "timed out waiting for the condition" in r.stderr

    rolling = await kubectl.start("rollout", "status", "deploy/web", "--timeout=20s")
    await rolling.expect(r"Waiting for deployment spec update to be observed")
    await kubectl("patch", "deploy", "web", "--subresource=status", "--type=merge",
                  "-p", '{"status":{"observedGeneration":1,"replicas":2}}')
    await rolling.expect(r'Waiting for deployment "web" rollout to finish: 0 out of 2 new replicas have been updated')
    status = {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
              "availableReplicas": 2,
              "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                             {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}
    await kubectl("patch", "deploy", "web", "--subresource=status", "--type=merge",
                  "-p", json.dumps({"status": status}))
    done = await rolling.wait(timeout=20)
    assert done.code == 0 and done.stdout.endswith('deployment "web" successfully rolled out\n'), done
    r = await kubectl("get", "deploy", "web")
    assert r.rows()[1][:4] == ["web", "2/2", "2", "2"]
