"""A pod's ephemeralcontainers and resize subresources with the real kubectl 1.37: `kubectl debug`
adds an ephemeral container (a strategic merge patch of pods/ephemeralcontainers), `kubectl patch
--subresource resize` changes a container's resources; a resize that would change the QoS class is
refused with upstream's message."""

from __future__ import annotations

import json

from tests.kubectl.conftest import Kubectl

POD = """apiVersion: v1
kind: Pod
metadata:
  name: x
spec:
  containers:
  - name: c
    image: nginx
    resources:
      requests: {cpu: 100m, memory: 64Mi}
      limits: {cpu: 200m, memory: 128Mi}
"""


async def test_debug_adds_an_ephemeral_container(kubectl: Kubectl) -> None:
    assert (await kubectl("apply", "-f", kubectl.write("pod.yaml", POD))).code == 0
    result = await kubectl("debug", "pod/x", "--image=busybox", "-c", "dbg", "--target=c")
    assert result.code == 0, result.stderr
    pod = json.loads((await kubectl("get", "pod", "x", "-o", "json")).stdout)
    (dbg,) = pod["spec"]["ephemeralContainers"]
    assert dbg["name"] == "dbg" and dbg["image"] == "busybox" and dbg["targetContainerName"] == "c"
    # Another with the same name is refused: the existing one may not change.
    result = await kubectl("debug", "pod/x", "--image=alpine", "-c", "dbg", check=False)
    assert result.code != 0
    assert 'The Pod "x" is invalid: spec.ephemeralContainers[dbg]: Forbidden: existing ephemeral containers ' \
        '"dbg" may not be changed' in result.stderr, result.stderr


async def test_patch_resize(kubectl: Kubectl) -> None:
    assert (await kubectl("apply", "-f", kubectl.write("pod.yaml", POD))).code == 0
    patch = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "150m"},
                                                                 "limits": {"cpu": "300m"}}}]}}
    result = await kubectl("patch", "pod", "x", "--subresource", "resize", "--patch", json.dumps(patch))
    assert result.code == 0, result.stderr
    assert "pod/x patched" in result.stdout
    resources = json.loads(await kubectl.jsonpath("pod", "x", path="{.spec.containers[0].resources}"))
    assert resources == {"requests": {"cpu": "150m", "memory": "64Mi"}, "limits": {"cpu": "300m", "memory": "128Mi"}}
    patch = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "300m", "memory": "128Mi"}}}]}}
    result = await kubectl("patch", "pod", "x", "--subresource", "resize", "--patch", json.dumps(patch), check=False)
    assert result.code != 0
    assert 'The Pod "x" is invalid: spec: Invalid value: "Burstable": Pod QOS Class may not change as a result ' \
        "of resizing" in result.stderr
