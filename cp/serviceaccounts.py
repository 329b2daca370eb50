"""What the ServiceAccount admission plugin does to a new pod (upstream
`plugin/pkg/admission/serviceaccount`), as pure functions: the account it runs as, whether its
token is mounted, and the projected `kube-api-access-xxxxx` volume and mounts. Pure (names come
from `cp.objects.generate_name`)."""

from __future__ import annotations

from typing import Any

from cp import objects

DEFAULT = "default"
VOLUME_PREFIX = "kube-api-access-"
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_EXPIRATION = 3607  # upstream's WarnOnlyBoundTokenExpirationSeconds
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


def token_volume_source() -> dict[str, Any]:
    """The projected source of the token volume: a bound token, the root CA, the namespace."""
    return {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}


def should_automount(account: dict[str, Any], spec: dict[str, Any]) -> bool:
    """The pod's `automountServiceAccountToken` wins, then the account's; true by default."""
    if isinstance(spec.get("automountServiceAccountToken"), bool):
        return bool(spec["automountServiceAccountToken"])
    if isinstance(account.get("automountServiceAccountToken"), bool):
        return bool(account["automountServiceAccountToken"])
    return True


def mount_token(spec: dict[str, Any]) -> None:
    """Mount the token volume (an existing `kube-api-access-*` volume, or a new one) read-only at
    MOUNT_PATH in every init and app container that has nothing mounted there; add the volume
    when some container needed it."""
    raw_volumes = spec.get("volumes")
    volumes: list[Any] = raw_volumes if isinstance(raw_volumes, list) else []
    existing = next((v.get("name") for v in volumes
                     if isinstance(v, dict) and str(v.get("name") or "").startswith(VOLUME_PREFIX)), None)
    name = str(existing) if existing else objects.generate_name(VOLUME_PREFIX)
    needed = False
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            if not isinstance(container, dict):
                continue
            mounts = container.get("volumeMounts")
            if not isinstance(mounts, list):
                mounts = container["volumeMounts"] = []
            if any(isinstance(m, dict) and m.get("mountPath") == MOUNT_PATH for m in mounts):
                continue
            mounts.append({"name": name, "readOnly": True, "mountPath": MOUNT_PATH})
            needed = True
    if needed and not existing:
        spec["volumes"] = [*volumes, {"name": name, "projected": token_volume_source()}]


def copy_pull_secrets(account: dict[str, Any], spec: dict[str, Any]) -> None:
    """A pod without imagePullSecrets gets its account's."""
    if spec.get("imagePullSecrets"):
        return
    refs = [{"name": str(r.get("name") or "")} for r in account.get("imagePullSecrets") or [] if isinstance(r, dict)]
    if refs:
        spec["imagePullSecrets"] = refs
