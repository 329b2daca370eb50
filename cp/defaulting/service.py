"""Defaulting of core/v1 Service, as `pkg/apis/core/v1/defaults.go` (`SetDefaults_Service`) applies it.

What the defaults cannot know (cluster IPs, IP families and their policy, node ports) the server's
allocators fill in (`api/services.py`), as kube-apiserver's Service REST storage does. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cp.defaulting.fields import child, dicts, setdefault, sub

CLIENT_IP_TIMEOUT_SECONDS = 10800  # v1.DefaultClientIPServiceAffinitySeconds (3 hours)
EXTERNALLY_ACCESSIBLE = ("NodePort", "LoadBalancer")


def _service(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        config = child(spec, "sessionAffinityConfig")
        client_ip = child(config, "clientIP")
        setdefault(client_ip, "timeoutSeconds", CLIENT_IP_TIMEOUT_SECONDS)
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    kind = spec["type"]
    for port in dicts(spec.get("ports")):
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        target = port.get("targetPort")
        if target is None or target == 0 or target == "":
            port["targetPort"] = port.get("port", 0)
    externally = kind in EXTERNALLY_ACCESSIBLE or (kind == "ClusterIP" and bool(spec.get("externalIPs")))
    if externally and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if kind in ("ClusterIP", *EXTERNALLY_ACCESSIBLE):
        setdefault(spec, "internalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        setdefault(spec, "allocateLoadBalancerNodePorts", True)
    status = sub(obj, "status")
    balancer = sub(status, "loadBalancer") if status is not None else None
    for ingress in dicts(balancer.get("ingress")) if balancer is not None else []:
        if ingress.get("ip"):  # the LoadBalancerIPMode default
            setdefault(ingress, "ipMode", "VIP")


DEFAULTERS: dict[tuple[str, str, str], Callable[[dict[str, Any]], None]] = {
    ("", "v1", "Service"): _service,
}
