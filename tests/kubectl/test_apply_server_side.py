"""`kubectl apply --server-side` (the real kubectl 1.37.1) against the in-process server: conflict output,
`--force-conflicts`, server dry runs, managers shown by `--show-managed-fields`, and the migration of an
object managed by client-side apply (kubectl's second apply as "kubectl-last-applied" and its JSON
patch of managedFields, then the re-apply that removes what the migrated manager no longer applies)."""

from __future__ import annotations

import pytest

from tests.kubectl import manifests as m
from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.kubectl

HINT = ("Please review the fields above--they currently have other managers. Here\n"
        "are the ways you can resolve this warning:\n"
        "* If you intend to manage all of these fields, please re-run the apply\n"
        "  command with the `--force-conflicts` flag.\n")
MANAGERS = "{range .metadata.managedFields[*]}{.manager}/{.operation}{.subresource} {end}"


async def _managers(kubectl: Kubectl, *target: str) -> list[str]:
    r = await kubectl("get", *target, "--show-managed-fields", "-o", f"jsonpath={MANAGERS}")
    return r.stdout.split()


async def test_conflict_with_an_update_manager_and_force(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", input=m.deployment("web", replicas=1))
    r = await kubectl("apply", "--server-side", "-f", "-", input=m.deployment("web", replicas=3), check=False)
    assert r.code == 1
    assert r.stderr.startswith('error: Apply failed with 1 conflict: conflict with "kubectl-create" using apps/v1: '
                               ".spec.replicas\n" + HINT), r.stderr
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "1"
    # Everything else matched the live values: applying without replicas succeeds and shares them.
    r = await kubectl("apply", "--server-side", "-f", "-",
                      input=m.deployment("web", replicas=1).replace("  replicas: 1\n", ""))
    assert r.stdout == "deployment.apps/web serverside-applied\n"
    assert await _managers(kubectl, "deploy", "web") == ["kubectl/Apply", "kubectl-create/Update"]
    r = await kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=m.deployment("web", replicas=3))
    assert r.stdout == "deployment.apps/web serverside-applied\n"
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "3"
    owners = await kubectl("get", "deploy", "web", "--show-managed-fields", "-o",
                           "jsonpath={range .metadata.managedFields[*]}{.manager}={.fieldsV1.f:spec.f:replicas} {end}")
    assert owners.stdout.split() == ["kubectl={}", "kubectl-create="]


async def test_conflict_with_kubectl_scale(kubectl: Kubectl) -> None:
    await kubectl("apply", "--server-side", "-f", "-", input=m.deployment("web", replicas=2))
    await kubectl("scale", "deploy", "web", "--replicas=5")
    assert await _managers(kubectl, "deploy", "web") == ["kubectl/Apply", "kubectl/Updatescale"]
    r = await kubectl("apply", "--server-side", "-f", "-", input=m.deployment("web", replicas=3), check=False)
    assert r.code == 1
    assert ('Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: '
            ".spec.replicas") in r.stderr
    r = await kubectl("apply", "--server-side", "--dry-run=server", "--force-conflicts", "-f", "-",
                      input=m.deployment("web", replicas=3))
    assert r.stdout == "deployment.apps/web serverside-applied (server dry run)\n"
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "5"
    r = await kubectl("diff", "--server-side", "--force-conflicts", "-f", "-", input=m.deployment("web", replicas=3),
                      check=False)
    assert r.code == 1 and "-  replicas: 5\n+  replicas: 3\n" in r.stdout


async def test_two_appliers_keep_their_containers(kubectl: Kubectl) -> None:
    base = m.deployment("web")
    sidecar = base.replace("      - name: nginx\n        image: nginx:1.27\n",
                           "      - name: proxy\n        image: envoy:1.30\n")
    await kubectl("apply", "--server-side", "-f", "-", input=base)
    r = await kubectl("apply", "--server-side", "--field-manager=mesh", "-f", "-", input=sidecar)
    assert r.stdout == "deployment.apps/web serverside-applied\n"
    names = await kubectl.jsonpath("deploy", "web", path="{.spec.template.spec.containers[*].name}")
    assert names == "nginx proxy"
    # The first applier changing the sidecar's image conflicts with its owner.
    both = base.replace("        image: nginx:1.27\n", "        image: nginx:1.27\n      - name: proxy\n"
                                                      "        image: envoy:1.31\n")
    r = await kubectl("apply", "--server-side", "-f", "-", input=both, check=False)
    assert r.code == 1
    assert ('conflict with "mesh": .spec.template.spec.containers[name="proxy"].image') in r.stderr
    # The mesh dropping its container removes it; nginx stays.
    r = await kubectl("apply", "--server-side", "--field-manager=mesh", "-f", "-",
                      input=base.replace("      containers:\n      - name: nginx\n        image: nginx:1.27\n", ""))
    assert r.stdout == "deployment.apps/web serverside-applied\n"
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.template.spec.containers[*].name}") == "nginx"


async def test_migration_from_client_side_apply(kubectl: Kubectl) -> None:
    path = kubectl.write("deploy.yaml", m.deployment("web", replicas=3, image="nginx:1.28", env_a="2"))
    await kubectl("apply", "-f", path)
    assert await _managers(kubectl, "deploy", "web") == ["kubectl-client-side-apply/Update"]
    # Replicas belong to the client-side manager, but the annotation set them to the live value: no conflict.
    kubectl.write("deploy.yaml", m.deployment("web", replicas=4, image="nginx:1.28", env_a="2"))
    r = await kubectl("apply", "--server-side", "-f", path)
    assert r.stdout == "deployment.apps/web serverside-applied\n" and r.stderr == ""
    # kubectl applied the annotation as kubectl-last-applied (a no-op: no time) and folded the client-side
    # manager into its own with a JSON patch of managedFields, then applied again.
    assert await _managers(kubectl, "deploy", "web") == ["kubectl-last-applied/Apply", "kubectl/Apply"]
    annotation = await kubectl.jsonpath(
        "deploy", "web", path="{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}")
    assert annotation.startswith('{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"app":"web"},')
    assert '"replicas":4' in annotation
    # The migrated manager owns env now: dropping it from the file removes it.
    kubectl.write("deploy.yaml", m.deployment("web", replicas=4, image="nginx:1.28"))
    await kubectl("apply", "--server-side", "-f", path)
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.template.spec.containers[0].env}") == ""
    assert await kubectl.jsonpath("deploy", "web", path="{.spec.replicas}") == "4"


async def test_managed_fields_as_kubectl_shows_them(kubectl: Kubectl) -> None:
    await kubectl("apply", "--server-side", "-f", "-", input=m.deployment("web", replicas=2))
    r = await kubectl("get", "deploy", "web", "-o", "yaml", "--show-managed-fields")
    assert ("  managedFields:\n"
            "  - apiVersion: apps/v1\n"
            "    fieldsType: FieldsV1\n"
            "    fieldsV1:\n"
            "      f:metadata:\n"
            "        f:labels:\n"
            "          f:app: {}\n"
            "      f:spec:\n"
            "        f:replicas: {}\n"
            "        f:selector: {}\n"
            "        f:template:\n"
            "          f:metadata:\n"
            "            f:labels:\n"
            "              f:app: {}\n"
            "          f:spec:\n"
            "            f:containers:\n"
            "              k:{\"name\":\"nginx\"}:\n"
            "                .: {}\n"
            "                f:image: {}\n"
            "                f:name: {}\n"
            "    manager: kubectl\n"
            "    operation: Apply\n") in r.stdout
    plain = await kubectl("get", "deploy", "web", "-o", "yaml")
    assert "managedFields" not in plain.stdout
