"""YAML manifests the kubectl tests feed to `create -f` / `apply -f` / `replace -f`."""

from __future__ import annotations


def pod(name: str, *, namespace: str = "", labels: dict[str, str] | None = None, image: str = "nginx:1.27",
        node: str = "", finalizers: tuple[str, ...] = ()) -> str:
    meta = f"  name: {name}\n"
    if namespace:
        meta += f"  namespace: {namespace}\n"
    if labels:
        meta += "  labels:\n" + "".join(f"    {k}: {v}\n" for k, v in labels.items())
    if finalizers:
        meta += "  finalizers:\n" + "".join(f"  - {f}\n" for f in finalizers)
    spec = f"  nodeName: {node}\n" if node else ""
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n{meta}spec:\n{spec}"
            f"  containers:\n  - name: web\n    image: {image}\n")


def deployment(name: str, *, replicas: int = 1, image: str = "nginx:1.27", env_a: str = "") -> str:
    env = f"        env:\n        - name: A\n          value: \"{env_a}\"\n" if env_a else ""
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  labels:
    app: {name}
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
      - name: nginx
        image: {image}
{env}"""


DEVICE_CLASS = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: device.driver == "gpu.example.com"
"""

RESOURCE_CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: gpu-claim
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
"""

RESOURCE_CLAIM_TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: one-gpu
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
"""

RESOURCE_SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: n1-gpu.example.com
spec:
  driver: gpu.example.com
  nodeName: n1
  pool:
    name: n1
    generation: 1
    resourceSliceCount: 1
  devices:
  - name: gpu-0
  - name: gpu-1
"""

NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels:
    kubernetes.io/hostname: n1
spec:
  podCIDR: 10.244.1.0/24
status:
  capacity:
    cpu: "8"
    memory: 32Gi
    pods: "110"
  allocatable:
    cpu: "8"
    memory: 32Gi
    pods: "110"
  addresses:
  - type: InternalIP
    address: 10.0.0.11
  - type: Hostname
    address: n1
  conditions:
  - type: Ready
    status: "True"
    reason: KubeletReady
    message: kubelet is posting ready status
    lastHeartbeatTime: "2026-12-01T00:00:00Z"
    lastTransitionTime: "2026-12-01T00:00:00Z"
  nodeInfo:
    architecture: amd64
    bootID: ""
    containerRuntimeVersion: containerd://2.1.0
    kernelVersion: 6.8.0
    kubeProxyVersion: ""
    kubeletVersion: v1.37.0
    machineID: ""
    operatingSystem: linux
    osImage: Ubuntu 24.04 LTS
    systemUUID: ""
"""

HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  minReplicas: 1
  maxReplicas: 5
  metrics:
  - type: Resource
    resource:
      name: cpu
      target:
        type: Utilization
        averageUtilization: 80
"""


def configmap(name: str, data: dict[str, str], *, resource_version: str = "") -> str:
    rv = f"  resourceVersion: \"{resource_version}\"\n" if resource_version else ""
    body = "".join(f"  {k}: \"{v}\"\n" for k, v in data.items())
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n{rv}data:\n{body}"


def docs(*parts: str) -> str:
    """A multi-document YAML stream."""
    return "---\n".join(parts)
