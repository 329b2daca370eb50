"""kubectl's writes: create (from files and the imperative generators), apply (client- and
server-side), diff, replace, patch, label, annotate, edit and scale.

In scope: what a user sees, and that the change really landed (read back with `get`).
Out of scope: patch semantics in depth (tests/cp/ for cp.patching), raw HTTP (tests/api/).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.kubectl import manifests as m
from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.kubectl


async def test_create_from_files(kubectl: Kubectl) -> None:
    path = kubectl.write("all.yaml", m.docs(m.NODE, m.pod("web"), m.deployment("web"), m.DEVICE_CLASS,
                                            m.RESOURCE_CLAIM, m.RESOURCE_CLAIM_TEMPLATE, m.RESOURCE_SLICE,
                                            m.HPA))
    r = await kubectl("create", "-f", path)
    assert r.lines == [
        "node/n1 created",
        "pod/web created",
        "deployment.apps/web created",
        "deviceclass.resource.k8s.io/gpu.example.com created",
        "resourceclaim.resource.k8s.io/gpu-claim created",
        "resourceclaimtemplate.resource.k8s.io/one-gpu created",
        "resourceslice.resource.k8s.io/n1-gpu.example.com created",
        "horizontalpodautoscaler.autoscaling/web created",
    ]
    assert r.stderr == ""
    assert await kubectl.jsonpath("resourceclaim", "gpu-claim",
                           path="{.spec.devices.requests[0].exactly.deviceClassName}") == "gpu.example.com"
    assert await kubectl.jsonpath("resourceslice", "n1-gpu.example.com",
                           path="{.spec.devices[*].name}") == "gpu-0 gpu-1"
    assert await kubectl.jsonpath("deploy", "web", path="{.metadata.generation}") == "1"

    # The same again: every object already exists.
    r = await kubectl("create", "-f", path, check=False)
    assert r.code == 1
    assert f'Error from server (AlreadyExists): error when creating "{path}": pods "web" already exists' \
        in r.stderr
    assert 'deployments.apps "web" already exists' in r.stderr
    assert 'resourceclaims.resource.k8s.io "gpu-claim" already exists' in r.stderr

    # Piped from stdin, with a server dry run first.
    r = await kubectl("create", "-f", "-", "--dry-run=server", input=m.pod("stdin"))
    assert r.stdout == "pod/stdin created (server dry run)\n"
    assert (await kubectl("get", "pod", "stdin", check=False)).code == 1
    r = await kubectl("create", "-f", "-", input=m.pod("stdin"))
    assert r.stdout == "pod/stdin created\n"
    r = await kubectl("create", "-f", "-", input=m.pod("x").replace("  name: x\n", "  generateName: gen-\n"))
    assert re.fullmatch(r"pod/gen-[a-z0-9]{5} created\n", r.stdout)

    # Strict field validation happens on the server: an unknown field is rejected.
    bad = m.pod("bad").replace("  containers:", "  nosuchfield: 1\n  containers:")
    r = await kubectl("create", "-f", "-", input=bad, check=False)
    assert r.code == 1 and 'unknown field "spec.nosuchfield"' in r.stderr
    # And an invalid object is reported field by field.
    r = await kubectl("create", "-f", "-", input=m.pod("Bad_Name"), check=False)
    assert r.code == 1 and 'The Pod "Bad_Name" is invalid' in r.stderr
    assert 'metadata.name: Invalid value: "Bad_Name"' in r.stderr
    # resource.k8s.io validation: a request must say what it asks for.
    bad_claim = m.RESOURCE_CLAIM.replace("gpu-claim", "bad-claim").replace(
        "      exactly:\n        deviceClassName: gpu.example.com\n", "")
    r = await kubectl("create", "-f", "-", input=bad_claim, check=False)
    assert r.code == 1 and 'The ResourceClaim "bad-claim" is invalid' in r.stderr
    assert "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required" \
        in r.stderr


async def test_create_imperative(kubectl: Kubectl) -> None:
    # `create namespace` and `create deployment` POST protobuf bodies (kubectl-compat.md §7).
    r = await kubectl("create", "namespace", "team-b", "-v=8")
    assert r.stdout == "namespace/team-b created\n"
    assert "Content-Type: application/vnd.kubernetes.protobuf" in r.stderr  # what the server decoded
    assert (await kubectl("get", "ns", "team-b")).rows()[1][:2] == ["team-b", "Active"]

    r = await kubectl("create", "deployment", "hello", "--image=nginx:1.27", "--replicas=2", "-n", "team-b", "-v=8")
    assert r.stdout == "deployment.apps/hello created\n"
    assert "Content-Type: application/vnd.kubernetes.protobuf" in r.stderr
    r = await kubectl("get", "deploy", "hello", "-n", "team-b", "-o", "wide")
    assert r.rows()[1][0] == "hello" and r.rows()[1][1] == "0/2"
    assert r.rows()[1][-2:] == ["nginx:1.27", "app=hello"]

    r = await kubectl("create", "configmap", "settings", "--from-literal=mode=fast", "--from-literal=level=3")
    assert r.stdout == "configmap/settings created\n"
    r = await kubectl("get", "cm", "settings", "-o", "json")
    assert r.json()["data"] == {"mode": "fast", "level": "3"}
    r = await kubectl("get", "cm", "settings")
    assert r.rows()[0] == ["NAME", "DATA", "AGE"] and r.rows()[1][:2] == ["settings", "2"]

    # `autoscale` posts an autoscaling/v2 HorizontalPodAutoscaler as protobuf too.
    r = await kubectl("autoscale", "deploy", "hello", "-n", "team-b", "--min=1", "--max=3", "--cpu=80%", "-v=8")
    assert r.stdout == "horizontalpodautoscaler.autoscaling/hello autoscaled\n"
    assert "Content-Type: application/vnd.kubernetes.protobuf" in r.stderr
    r = await kubectl("get", "hpa", "hello", "-n", "team-b")
    assert r.rows()[1][:6] == ["hello", "Deployment/hello", "cpu: <unknown>/80%", "1", "3", "0"]

    # `run` builds a pod on the client and posts JSON.
    r = await kubectl("run", "one", "--image=busybox:1.36", "--labels=run=one", "--", "sleep", "3600")
    assert r.stdout == "pod/one created\n"
    got = await kubectl.jsonpath("pod", "one", path="{.spec.containers[0].image} {.spec.containers[0].args}")
    assert got == 'busybox:1.36 ["sleep","3600"]'

    r = await kubectl("create", "namespace", "team-b", check=False)
    assert r.code == 1 and 'Error from server (AlreadyExists): namespaces "team-b" already exists' in r.stderr


async def test_apply_diff_and_server_side(kubectl: Kubectl) -> None:
    path = kubectl.write("deploy.yaml", m.deployment("web", replicas=1, env_a="1"))
    r = await kubectl("apply", "-f", path, "--dry-run=server")
    assert r.stdout == "deployment.apps/web created (server dry run)\n"
    assert await kubectl.gone("deploy", "web")
    r = await kubectl("apply", "-f", path)
    assert r.stdout == "deployment.apps/web created\n" and r.stderr == ""
    last = await kubectl.jsonpath("deploy", "web",
                           path="{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}")
    assert '"replicas":1' in last

    # Unchanged manifest: no diff, exit 0; nothing to apply.
    r = await kubectl("diff", "-f", path)
    assert r.code == 0 and r.stdout == ""
    r = await kubectl("apply", "-f", path)
    assert r.stdout == "deployment.apps/web unchanged\n"

    # A changed manifest: diff shows it and exits 1; apply configures it; the strategic merge keeps
    # the container list keyed by name.
    kubectl.write("deploy.yaml", m.deployment("web", replicas=3, image="nginx:1.28", env_a="2"))
    r = await kubectl("diff", "-f", path, check=False)
    assert r.code == 1, r.stderr
    assert "-  replicas: 1\n" in r.stdout and "+  replicas: 3\n" in r.stdout
    assert "-        image: nginx:1.27\n" in r.stdout and "+        image: nginx:1.28\n" in r.stdout
    assert "generation: 1" in r.stdout and "generation: 2" in r.stdout
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "1"  # diff is a dry run
    r = await kubectl("apply", "-f", path, "--dry-run=server")
    assert r.stdout == "deployment.apps/web configured (server dry run)\n"
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "1"
    r = await kubectl("apply", "-f", path)
    assert r.stdout == "deployment.apps/web configured\n" and r.stderr == ""
    got = await kubectl.jsonpath("deploy", "web",
                          path="{.spec.replicas} {.spec.template.spec.containers[0].image} "
                               "{.spec.template.spec.containers[0].env[0].value} {.metadata.generation}")
    assert got == "3 nginx:1.28 2 2"
    r = await kubectl("apply", "-f", path)
    assert r.stdout == "deployment.apps/web unchanged\n"
    r = await kubectl("diff", "-f", path)
    assert r.code == 0 and r.stdout == ""

    # diff of an object that does not exist yet: all of it is new.
    r = await kubectl("diff", "-f", "-", input=m.deployment("fresh"), check=False)
    assert r.code == 1 and "+  name: fresh\n" in r.stdout and "+  replicas: 1\n" in r.stdout
    assert await kubectl.gone("deploy", "fresh")

    # Server-side apply: an update of an object created by client-side apply, then a new object.
    kubectl.write("deploy.yaml", m.deployment("web", replicas=4, image="nginx:1.28", env_a="2"))
    r = await kubectl("apply", "--server-side", "-f", path)
    assert r.stdout == "deployment.apps/web serverside-applied\n", r.stderr
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "4"
    r = await kubectl("apply", "--server-side", "-f", "-", input=m.deployment("ssa", replicas=2))
    assert r.stdout == "deployment.apps/ssa serverside-applied\n"
    managers = await kubectl.jsonpath("deploy", "ssa",
                               path="{range .metadata.managedFields[*]}{.manager}:{.operation} {end}")
    assert "kubectl:Apply" in managers
    r = await kubectl("apply", "--server-side", "-f", "-", input=m.deployment("ssa", replicas=2))
    assert r.stdout == "deployment.apps/ssa serverside-applied\n"

    # A multi-document apply creating objects in a namespace that the same file creates.
    multi = m.docs("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n",
                   m.DEVICE_CLASS,
                   m.RESOURCE_CLAIM_TEMPLATE.replace("  name: one-gpu\n", "  name: one-gpu\n  namespace: team-a\n"))
    r = await kubectl("apply", "-f", "-", input=multi)
    assert r.lines == ["namespace/team-a created", "deviceclass.resource.k8s.io/gpu.example.com created",
                       "resourceclaimtemplate.resource.k8s.io/one-gpu created"]
    rv = await kubectl.jsonpath("resourceclaimtemplate", "one-gpu", "-n", "team-a", path="{.metadata.resourceVersion}")
    r = await kubectl("apply", "-f", "-", input=multi)
    # As upstream: `requests` is an atomic list and the live copy carries server defaults
    # (allocationMode, count), so kubectl's three-way diff sends the whole list again and prints
    # "configured"; the server finds nothing to change and keeps the resourceVersion.
    assert r.lines == ["namespace/team-a unchanged", "deviceclass.resource.k8s.io/gpu.example.com unchanged",
                       "resourceclaimtemplate.resource.k8s.io/one-gpu configured"]
    assert await kubectl.jsonpath("resourceclaimtemplate", "one-gpu", "-n", "team-a",
                           path="{.metadata.resourceVersion}") == rv


async def test_server_side_apply_keeps_fields_of_other_managers(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", input=m.deployment("web", env_a="1"))
    r = await kubectl("apply", "--server-side", "-f", "-", input=m.deployment("web"))
    assert r.stdout == "deployment.apps/web serverside-applied\n"
    got = await kubectl.jsonpath("deploy", "web", path="{.spec.template.spec.containers[0].env[0].value}")
    assert got == "1"


async def test_server_side_apply_conflicts_between_managers(kubectl: Kubectl) -> None:
    await kubectl("apply", "--server-side", "-f", "-", input=m.deployment("web", replicas=2))
    r = await kubectl("apply", "--server-side", "--field-manager=other", "-f", "-",
                      input=m.deployment("web", replicas=5), check=False)
    assert r.code == 1
    # The owner is an Apply manager: upstream's printManager names appliers without "using <apiVersion>"
    # (that suffix is for Update managers, e.g. `conflict with "kubectl-create" using apps/v1`).
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas' in r.stderr
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "2"
    r = await kubectl("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-",
                      input=m.deployment("web", replicas=5))
    assert r.stdout == "deployment.apps/web serverside-applied\n"
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "5"


async def test_replace_and_conflict(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", input=m.configmap("cfg", {"a": "1"}))
    rv = await kubectl.jsonpath("cm", "cfg", path="{.metadata.resourceVersion}")

    # Without a resourceVersion in the file, replace reads the current one.
    r = await kubectl("replace", "-f", "-", input=m.configmap("cfg", {"a": "2"}))
    assert r.stdout == "configmap/cfg replaced\n"
    assert await kubectl.jsonpath("cm", "cfg", path="{.data.a}") == "2"

    # With the stale one from before, the server refuses.
    r = await kubectl("replace", "-f", "-", input=m.configmap("cfg", {"a": "3"}, resource_version=rv),
                      check=False)
    assert r.code == 1
    assert ('Error from server (Conflict): error when replacing "STDIN": Operation cannot be fulfilled on '
            'configmaps "cfg": the object has been modified; please apply your changes to the latest '
            'version and try again') in r.stderr
    assert await kubectl.jsonpath("cm", "cfg", path="{.data.a}") == "2"

    # The current one works.
    rv2 = await kubectl.jsonpath("cm", "cfg", path="{.metadata.resourceVersion}")
    r = await kubectl("replace", "-f", "-", input=m.configmap("cfg", {"a": "4"}, resource_version=rv2))
    assert r.stdout == "configmap/cfg replaced\n"
    assert int(await kubectl.jsonpath("cm", "cfg", path="{.metadata.resourceVersion}")) > int(rv2)

    # A deployment through a file, with the spec changed: generation moves.
    path = kubectl.write("d.yaml", m.deployment("web"))
    await kubectl("create", "-f", path)
    kubectl.write("d.yaml", m.deployment("web", replicas=2))
    r = await kubectl("replace", "-f", path)
    assert r.stdout == "deployment.apps/web replaced\n"
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}/{.metadata.generation}") == "2/2"

    # --force deletes and recreates: a new uid, generation back to 1.
    uid = await kubectl.jsonpath("deploy", "web", path="{.metadata.uid}")
    kubectl.write("d.yaml", m.deployment("web", replicas=3))
    r = await kubectl("replace", "--force", "-f", path)
    assert r.lines == ['deployment.apps "web" deleted from default namespace', "deployment.apps/web replaced"]
    got = await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}/{.metadata.generation}/{.metadata.uid}")
    replicas, generation, new_uid = got.split("/")
    assert (replicas, generation) == ("3", "1") and new_uid != uid

    r = await kubectl("replace", "-f", "-", input=m.configmap("ghost", {"a": "1"}), check=False)
    assert r.code == 1 and 'configmaps "ghost" not found' in r.stderr


async def test_patch_label_annotate(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", input=m.docs(m.deployment("web", env_a="1"), m.pod("p")))

    # Strategic merge (the default): the container list merges by name, keeping env.
    r = await kubectl("patch", "deploy", "web", "-p",
                      '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.28"}]}}}}')
    assert r.stdout == "deployment.apps/web patched\n"
    got = await kubectl.jsonpath("deploy", "web",
                          path="{.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].env[0].value}")
    assert got == "nginx:1.28 1"
    r = await kubectl("patch", "deploy", "web", "-p",
                      '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.28"}]}}}}')
    assert r.stdout == "deployment.apps/web patched (no change)\n"

    # Strategic merge directives: `$patch: delete` removes a list item by its merge key.
    r = await kubectl("patch", "deploy", "web", "-p", '{"spec":{"template":{"spec":{"containers":'
                      '[{"name":"nginx","env":[{"name":"A","$patch":"delete"},{"name":"B","value":"2"}]}]}}}}')
    assert r.stdout == "deployment.apps/web patched\n"
    got = await kubectl.jsonpath("deploy", "web", path="{.spec.template.spec.containers[0].env[*].name}")
    assert got == "B"
    # `kubectl set` builds strategic merge patches too.
    r = await kubectl("set", "image", "deploy/web", "nginx=nginx:1.30")
    assert r.stdout == "deployment.apps/web image updated\n"
    r = await kubectl("set", "env", "deploy/web", "C=3")
    assert r.stdout == "deployment.apps/web env updated\n"
    got = await kubectl.jsonpath("deploy", "web", path="{.spec.template.spec.containers[0].image} "
                                                         "{.spec.template.spec.containers[0].env[*].name}")
    assert got == "nginx:1.30 B C"

    # JSON merge patch: lists are replaced wholesale.
    r = await kubectl("patch", "deploy", "web", "--type", "merge", "-p", '{"spec":{"replicas":4}}')
    assert r.stdout == "deployment.apps/web patched\n"
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "4"

    # JSON patch (RFC 6902), including a failing test operation.
    r = await kubectl("patch", "deploy", "web", "--type=json",
                      "-p", '[{"op":"replace","path":"/spec/replicas","value":5}]')
    assert r.stdout == "deployment.apps/web patched\n"
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "5"
    r = await kubectl("patch", "deploy", "web", "--type=json",
                      "-p", '[{"op":"test","path":"/spec/replicas","value":1},'
                            '{"op":"replace","path":"/spec/replicas","value":6}]', check=False)
    assert r.code == 1 and r.stderr.startswith("The request is invalid")  # 422 Invalid, as upstream
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "5"

    # Server dry run (dryRun=All): the would-be object is returned, nothing is stored. (kubectl 1.37 prints
    # no "(server dry run)" suffix for patch: it resets the printer's operation after applying it.)
    r = await kubectl("patch", "deploy", "web", "--type", "merge", "-p", '{"spec":{"replicas":9}}',
                      "--dry-run=server")
    assert r.stdout == "deployment.apps/web patched\n"
    r = await kubectl("patch", "deploy", "web", "--type", "merge", "-p", '{"spec":{"replicas":9}}',
                      "--dry-run=server", "-o", "jsonpath={.spec.replicas}")
    assert r.stdout == "9"
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "5"

    r = await kubectl("patch", "deploy", "nope", "-p", '{"spec":{"replicas":1}}', check=False)
    assert r.code == 1 and 'Error from server (NotFound): deployments.apps "nope" not found' in r.stderr

    # Labels: add, overwrite (refused without --overwrite), remove.
    r = await kubectl("label", "pod", "p", "tier=fe", "team=a")
    assert r.stdout == "pod/p labeled\n"
    r = await kubectl("label", "pod", "p", "tier=be", check=False)
    assert r.code == 1 and "'tier' already has a value (fe), and --overwrite is false" in r.stderr
    r = await kubectl("label", "pod", "p", "tier=be", "--overwrite")
    assert r.stdout == "pod/p labeled\n"
    r = await kubectl("label", "pod", "p", "team-")
    assert r.stdout == "pod/p unlabeled\n"
    r = await kubectl("get", "pod", "p", "--show-labels")
    assert r.rows()[1][-1] == "tier=be"
    # With --resource-version the patch carries a precondition: a stale one conflicts.
    r = await kubectl("label", "pod", "p", "stale=1", "--resource-version=1", check=False)
    assert r.code == 1 and ('Error from server (Conflict): Operation cannot be fulfilled on pods "p": the object '
                            'has been modified') in r.stderr
    rv = await kubectl.jsonpath("pod", "p", path="{.metadata.resourceVersion}")
    r = await kubectl("label", "pod", "p", "fresh=1", f"--resource-version={rv}")
    assert r.stdout == "pod/p labeled\n"
    r = await kubectl("label", "pod", "p", "fresh-")
    r = await kubectl("label", "deploy", "web", "ver=1", "-o", "name")
    assert r.stdout == "deployment.apps/web\n"

    # Annotations: add, then remove with `key-`.
    r = await kubectl("annotate", "pod", "p", "note=hello world", "owner=me")
    assert r.stdout == "pod/p annotated\n"
    got = await kubectl.jsonpath("pod", "p", path="{.metadata.annotations.note}|{.metadata.annotations.owner}")
    assert got == "hello world|me"
    r = await kubectl("annotate", "pod", "p", "note-")
    assert r.stdout == "pod/p annotated\n"
    got = await kubectl("get", "pod", "p", "-o", "json")
    assert got.json()["metadata"]["annotations"] == {"owner": "me"}
    r = await kubectl("annotate", "pod", "p", "owner-")
    assert "annotations" not in (await kubectl("get", "pod", "p", "-o", "json")).json()["metadata"]


async def test_patch_deleting_last_list_item_drops_the_list(kubectl: Kubectl) -> None:
    """Upstream decodes into the typed object and encodes it again: an emptied `omitempty` list is gone."""
    await kubectl("create", "-f", "-", input=m.deployment("web", env_a="1"))
    await kubectl("patch", "deploy", "web", "-p", '{"spec":{"template":{"spec":{"containers":'
                  '[{"name":"nginx","env":[{"name":"A","$patch":"delete"}]}]}}}}')
    r = await kubectl("get", "deploy", "web", "-o", "json")
    assert "env" not in r.json()["spec"]["template"]["spec"]["containers"][0]


async def test_edit_with_scripted_editor(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", input=m.deployment("web"))
    editor = kubectl.write("editor.sh", "#!/bin/sh\n"
                           "exec sed -i -e 's/^  replicas: 1$/  replicas: 4/' "
                           "-e 's/image: nginx:1.27$/image: nginx:1.29/' \"$1\"\n", mode=0o755)
    r = await kubectl("edit", "deployment", "web", env={"KUBE_EDITOR": editor})
    assert r.stdout == "deployment.apps/web edited\n", r.stderr
    got = await kubectl.jsonpath("deploy", "web",
                          path="{.spec.replicas} {.spec.template.spec.containers[0].image} {.metadata.generation}")
    assert got == "4 nginx:1.29 2"

    # An editor that changes nothing cancels the edit.
    noop = kubectl.write("noop.sh", "#!/bin/sh\nexit 0\n", mode=0o755)
    r = await kubectl("edit", "deployment", "web", env={"KUBE_EDITOR": noop})
    assert "Edit cancelled, no changes made." in r.stderr

    # An edit that fails validation is reported and not applied.
    breaker = kubectl.write("breaker.sh", "#!/bin/sh\nexec sed -i -e 's/^  replicas: 4$/  replicas: -1/' \"$1\"\n",
                            mode=0o755)
    r = await kubectl("edit", "deployment", "web", env={"KUBE_EDITOR": breaker}, check=False)
    assert r.code == 1 and 'error: deployments.apps "web" is invalid' in r.stderr
    assert "error: Edit cancelled, no valid changes were saved." in r.stderr
    # The copy kubectl keeps carries the server's field errors as comments.
    copy = re.search(r'A copy of your changes has been stored to "([^"]+)"', r.stderr)
    assert copy, r.stderr
    assert re.search(r"^# \* spec\.replicas: Invalid value: -1: must be greater than or equal to 0$",
                     Path(copy.group(1)).read_text(), re.M)  # noqa: ASYNC240 (a small local file)
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "4"


async def test_scale(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", input=m.deployment("web"))
    r = await kubectl("scale", "deploy", "web", "--replicas=3")
    assert r.stdout == "deployment.apps/web scaled\n"
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "3"
    r = await kubectl("get", "deploy", "web")
    assert r.rows()[1][1] == "0/3"

    # --current-replicas matching: GET /scale then PUT /scale (no Content-Type).
    r = await kubectl("scale", "deploy", "web", "--current-replicas=3", "--replicas=5")
    assert r.stdout == "deployment.apps/web scaled\n"
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "5"

    # Mismatching: refused, nothing changes.
    r = await kubectl("scale", "deploy", "web", "--current-replicas=2", "--replicas=7", check=False)
    assert r.code == 1 and "Expected replicas to be 2, was 5" in r.stderr
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "5"

    r = await kubectl("scale", "deploy", "web", "--replicas=0")
    assert r.stdout == "deployment.apps/web scaled\n"
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "0"
    r = await kubectl("scale", "deploy", "nope", "--replicas=1", check=False)
    assert r.code == 1 and 'deployments.apps "nope" not found' in r.stderr
