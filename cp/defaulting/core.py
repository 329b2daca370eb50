"""Defaulting of the kinds served first: pods (and the pod specs of templates), namespaces, nodes,
deployments, replica sets, HPAs and the DRA claims.

Sources of behaviour (read, not copied): `pkg/apis/core/v1/defaults.go` (PodSpec, containers,
probes, volumes, Namespace), `pkg/apis/apps/v1/defaults.go`, `pkg/apis/autoscaling/v2/defaults.go`,
`pkg/apis/resource/v1/defaults.go` plus the declarative `+default` tags of k8s.io/api, and the
defaults that kube-apiserver's built-in DefaultTolerationSeconds admission plugin writes into pods
and that the namespace strategy writes on create (pod priority is the Priority admission plugin's,
`api.admission.priority`, as it depends on the stored PriorityClasses). Defaulting is
idempotent: running it again on a defaulted object changes nothing. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cp import resources as res
from cp.defaulting.fields import dicts as _dicts
from cp.defaulting.fields import sub as _sub

# DefaultTolerationSeconds admission: 300 s for these NoExecute taints.
DEFAULT_TOLERATION_SECONDS = 300
_NOT_READY = "node.kubernetes.io/not-ready"
_UNREACHABLE = "node.kubernetes.io/unreachable"


def default_device_taints(obj: dict[str, Any], *, now_rfc3339: str) -> None:
    """`timeAdded` for taints that lack it: ResourceSlice device taints and DeviceTaintRule's taint."""
    kind = obj.get("kind")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if kind == "DeviceTaintRule":
        taint = spec.get("taint")
        if isinstance(taint, dict) and not taint.get("timeAdded"):
            taint["timeAdded"] = now_rfc3339
        return
    if kind == "ResourceSlice":
        for device in _dicts(spec.get("devices")):
            for taint in _dicts(device.get("taints")):
                if not taint.get("timeAdded"):
                    taint["timeAdded"] = now_rfc3339


# ---------------------------------------------------------------- helpers

def image_tag(image: str) -> str:
    """The tag docker reference parsing yields: "latest" when neither tag nor digest is given."""
    if not isinstance(image, str) or not image:
        return ""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        return last.rsplit(":", 1)[1]
    return "" if digest else "latest"


# ---------------------------------------------------------------- core/v1 pod spec

def _default_probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                       ("failureThreshold", 3)):
        if not probe.get(key):
            probe[key] = value
    _default_http_get(probe.get("httpGet"))


def _default_http_get(action: Any) -> None:
    if isinstance(action, dict):
        if not action.get("path"):
            action["path"] = "/"
        if not action.get("scheme"):
            action["scheme"] = "HTTP"


def _default_field_ref(ref: Any) -> None:
    if isinstance(ref, dict) and not ref.get("apiVersion"):
        ref["apiVersion"] = "v1"


def _default_container(c: dict[str, Any]) -> None:
    if not c.get("imagePullPolicy"):
        c["imagePullPolicy"] = "Always" if image_tag(c.get("image", "")) == "latest" else "IfNotPresent"
    if not c.get("terminationMessagePath"):
        c["terminationMessagePath"] = "/dev/termination-log"
    if not c.get("terminationMessagePolicy"):
        c["terminationMessagePolicy"] = "File"
    # ResourceRequirements is a non-pointer struct: it always serializes, as {} when empty.
    if not isinstance(c.get("resources"), dict):
        c["resources"] = {}
    for port in _dicts(c.get("ports")):
        if not port.get("protocol"):
            port["protocol"] = "TCP"
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(c.get(key))
    lifecycle = _sub(c, "lifecycle")
    if lifecycle is not None:
        for key in ("postStart", "preStop"):
            handler = _sub(lifecycle, key)
            if handler is not None:
                _default_http_get(handler.get("httpGet"))
    for env in _dicts(c.get("env")):
        source = _sub(env, "valueFrom")
        if source is not None:
            _default_field_ref(source.get("fieldRef"))


VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs",
    "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker",
    "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk",
    "photonPersistentDisk", "projected", "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral",
    "image",
)


def _default_volume(v: dict[str, Any]) -> None:
    if not any(v.get(src) is not None for src in VOLUME_SOURCES):
        v["emptyDir"] = {}
    for src in ("secret", "configMap", "downwardAPI", "projected"):
        s = _sub(v, src)
        if s is not None and s.get("defaultMode") is None:
            s["defaultMode"] = 420
    host = _sub(v, "hostPath")
    if host is not None and host.get("type") is None:
        host["type"] = ""
    down = _sub(v, "downwardAPI")
    if down is not None:
        for item in _dicts(down.get("items")):
            _default_field_ref(item.get("fieldRef"))
    proj = _sub(v, "projected")
    if proj is not None:
        for source in _dicts(proj.get("sources")):
            token = _sub(source, "serviceAccountToken")
            if token is not None and token.get("expirationSeconds") is None:
                token["expirationSeconds"] = 3600
            d = _sub(source, "downwardAPI")
            if d is not None:
                for item in _dicts(d.get("items")):
                    _default_field_ref(item.get("fieldRef"))
    image = _sub(v, "image")
    if image is not None and not image.get("pullPolicy"):
        image["pullPolicy"] = "Always" if image_tag(image.get("reference", "")) == "latest" else "IfNotPresent"


def default_pod_spec(spec: dict[str, Any]) -> None:
    """SetDefaults_PodSpec and the per-element defaults below it (pods and pod templates)."""
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if not isinstance(spec.get("securityContext"), dict):
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    if not spec.get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"
    # v1 <-> internal conversion keeps the deprecated serviceAccount alias in step.
    if spec.get("serviceAccountName") and not spec.get("serviceAccount"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    elif spec.get("serviceAccount") and not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in _dicts(spec.get(key)):
            _default_container(c)
    for v in _dicts(spec.get("volumes")):
        _default_volume(v)


def _default_template(spec: Any) -> None:
    if isinstance(spec, dict):
        template = _sub(spec, "template")
        if template is not None:
            pod_spec = _sub(template, "spec")
            if pod_spec is not None:
                default_pod_spec(pod_spec)


def _default_pod(obj: dict[str, Any]) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    default_pod_spec(spec)
    # SetDefaults_Pod (pods only, not templates): requests default to limits.
    for key in ("containers", "initContainers"):
        for c in _dicts(spec.get(key)):
            r = c["resources"]
            limits = r.get("limits")
            if isinstance(limits, dict) and limits:
                requests = r.get("requests")
                if not isinstance(requests, dict):
                    requests = r["requests"] = {}
                for name, value in limits.items():
                    requests.setdefault(name, value)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork"):
        for key in ("containers", "initContainers"):
            for c in _dicts(spec.get(key)):
                for port in _dicts(c.get("ports")):
                    if not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort", 0)
    # DefaultTolerationSeconds admission (create and update).
    tolerations = spec.get("tolerations")
    tols = _dicts(tolerations)
    added = []
    for key in (_NOT_READY, _UNREACHABLE):
        if not any(_tolerates_no_execute(t, key) for t in tols):
            added.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                          "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
    if added:
        spec["tolerations"] = (list(tolerations) if isinstance(tolerations, list) else []) + added


def _tolerates_no_execute(t: dict[str, Any], key: str) -> bool:
    return (t.get("key") or "") in ("", key) and (t.get("effect") or "") in ("", "NoExecute")


def _creating(obj: dict[str, Any]) -> bool:
    """Whether defaulting runs for a create: the store strips resourceVersion on create and carries
    the stored one on updates. Admission-style defaults that upstream applies only on create use it."""
    meta = obj.get("metadata")
    return not (isinstance(meta, dict) and meta.get("resourceVersion"))


# ---------------------------------------------------------------- core/v1 others

def _default_namespace(obj: dict[str, Any]) -> None:
    meta = _sub(obj, "metadata")
    if meta is not None and meta.get("name"):
        labels = meta.get("labels")
        if not isinstance(labels, dict):
            labels = meta["labels"] = {}
        labels["kubernetes.io/metadata.name"] = meta["name"]
    # The namespace strategy adds the "kubernetes" finalizer on create only (afterwards spec.finalizers
    # changes via /finalize).
    if meta is not None and _creating(obj):
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        finalizers = spec.get("finalizers")
        if not isinstance(finalizers, list):
            finalizers = []
        if "kubernetes" not in finalizers:
            spec["finalizers"] = [*finalizers, "kubernetes"]
    status = _sub(obj, "status")
    if status is not None and not status.get("phase"):
        status["phase"] = "Active"


def _default_node(obj: dict[str, Any]) -> None:
    status = _sub(obj, "status")
    if status is not None and status.get("allocatable") is None and isinstance(status.get("capacity"), dict):
        status["allocatable"] = dict(status["capacity"])


# ---------------------------------------------------------------- apps/v1

def _default_deployment(obj: dict[str, Any]) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        spec = obj["spec"] = {}
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    strategy = spec.get("strategy")
    if not isinstance(strategy, dict):
        strategy = spec["strategy"] = {}
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        ru = strategy.get("rollingUpdate")
        if not isinstance(ru, dict):
            ru = strategy["rollingUpdate"] = {}
        if ru.get("maxUnavailable") is None:
            ru["maxUnavailable"] = "25%"
        if ru.get("maxSurge") is None:
            ru["maxSurge"] = "25%"
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = 600
    _default_template(spec)


def _default_replicaset(obj: dict[str, Any]) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        spec = obj["spec"] = {}
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    _default_template(spec)


# ---------------------------------------------------------------- autoscaling/v2

def _scale_up_rules() -> dict[str, Any]:
    return {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                         {"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _scale_down_rules() -> dict[str, Any]:
    # The scale-down stabilization window stays unset: the controller's flag decides (300 s).
    return {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _fill_rules(rules: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(rules, dict):
        return defaults
    for key in ("selectPolicy", "stabilizationWindowSeconds", "policies", "tolerance"):
        if rules.get(key) is not None:
            defaults[key] = rules[key]
    # Keep any other fields the client sent (none exist in v2 today).
    for key, value in rules.items():
        defaults.setdefault(key, value)
    return defaults


def _default_hpa(obj: dict[str, Any]) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        spec = obj["spec"] = {}
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _fill_rules(behavior.get("scaleUp"), _scale_up_rules())
        behavior["scaleDown"] = _fill_rules(behavior.get("scaleDown"), _scale_down_rules())


# ---------------------------------------------------------------- resource.k8s.io/v1

def _default_request_body(req: dict[str, Any]) -> None:
    if not req.get("allocationMode"):
        req["allocationMode"] = "ExactCount"
    if req["allocationMode"] == "ExactCount" and not req.get("count"):
        req["count"] = 1
    for t in _dicts(req.get("tolerations")):
        if not t.get("operator"):
            t["operator"] = "Equal"


def default_claim_spec(spec: Any) -> None:
    if not isinstance(spec, dict):
        return
    devices = _sub(spec, "devices")
    if devices is None:
        return
    for request in _dicts(devices.get("requests")):
        exactly = _sub(request, "exactly")
        if exactly is not None:
            _default_request_body(exactly)
        for sub in _dicts(request.get("firstAvailable")):
            _default_request_body(sub)


def _default_claim(obj: dict[str, Any]) -> None:
    default_claim_spec(obj.get("spec"))
    status = _sub(obj, "status")
    allocation = _sub(status, "allocation") if status is not None else None
    devices = _sub(allocation, "devices") if allocation is not None else None
    if devices is not None:
        for result in _dicts(devices.get("results")):
            for t in _dicts(result.get("tolerations")):
                if not t.get("operator"):
                    t["operator"] = "Equal"


def _default_claim_template(obj: dict[str, Any]) -> None:
    spec = _sub(obj, "spec")
    if spec is not None:
        default_claim_spec(spec.get("spec"))


def _default_pool_status_request(obj: dict[str, Any]) -> None:
    spec = _sub(obj, "spec")
    if spec is not None and spec.get("limit") is None:
        spec["limit"] = 100  # `+default=100` of v1alpha3 ResourcePoolStatusRequestSpec.limit


DEFAULTERS: dict[tuple[str, str, str], Callable[[dict[str, Any]], None]] = {
    ("", "v1", "Pod"): _default_pod,
    ("", "v1", "Namespace"): _default_namespace,
    ("", "v1", "Node"): _default_node,
    ("apps", "v1", "Deployment"): _default_deployment,
    ("apps", "v1", "ReplicaSet"): _default_replicaset,
    ("autoscaling", "v2", "HorizontalPodAutoscaler"): _default_hpa,
    ("resource.k8s.io", "v1", "ResourceClaim"): _default_claim,
    ("resource.k8s.io", "v1", "ResourceClaimTemplate"): _default_claim_template,
    ("resource.k8s.io", "v1alpha3", "ResourcePoolStatusRequest"): _default_pool_status_request,
}

assert all(res.by_kind(g, k) is not None or any(gk.kind == k for _gate, gk in res.GATED)
           for (g, _v, k) in DEFAULTERS)
