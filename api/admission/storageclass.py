"""The DefaultStorageClass admission plugin (upstream `plugin/pkg/admission/storage/storageclass/setdefault`).

Mutating, on PersistentVolumeClaim creation only: a claim with no class at all (no
`spec.storageClassName` key and no `volume.beta.kubernetes.io/storage-class` annotation; an explicit
`""` is a class, "none") gets the default StorageClass's name. The default is a class annotated
`storageclass.kubernetes.io/is-default-class: "true"` (or the beta annotation); with several, the
newest by creationTimestamp, then the first by name, as upstream's `GetDefaultClass`. Without one the
claim is left as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from api import admission
from api.admission import listers

CLAIMS = ("", "persistentvolumeclaims")
DEFAULT_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def is_default(storage_class: Mapping[str, Any]) -> bool:
    annotations = (storage_class.get("metadata") or {}).get("annotations") or {}
    return annotations.get(DEFAULT_ANNOTATION) == "true" or annotations.get(BETA_DEFAULT_ANNOTATION) == "true"


def default_class(classes: Iterable[Mapping[str, Any]]) -> str | None:
    """The default class's name (the newest of several, then by name), or None."""
    defaults = [c for c in classes if is_default(c)]
    if not defaults:
        return None
    newest = max(str((c.get("metadata") or {}).get("creationTimestamp") or "") for c in defaults)
    return min(str((c.get("metadata") or {}).get("name") or "") for c in defaults
               if str((c.get("metadata") or {}).get("creationTimestamp") or "") == newest)


def has_class(claim: Mapping[str, Any]) -> bool:
    """upstream `PersistentVolumeClaimHasClass`: the beta annotation, or a storageClassName (even "")."""
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    spec = claim.get("spec")
    return BETA_CLASS_ANNOTATION in annotations or (isinstance(spec, dict) and spec.get("storageClassName") is not None)


class DefaultStorageClassPlugin(admission.BasePlugin):
    name = "DefaultStorageClass"

    def __init__(self) -> None:
        self.classes = listers.Lister(group="storage.k8s.io", resource="storageclasses")

    def may_handle(self, *, group: str, plural: str, subresource: str, operation: str) -> bool:
        return (group, plural) == CLAIMS and operation == admission.CREATE and not subresource

    def handles(self, attrs: admission.Attributes) -> bool:
        return (attrs.kind.group, attrs.kind.plural) == CLAIMS and attrs.operation == admission.CREATE \
            and not attrs.subresource

    async def admit(self, attrs: admission.Attributes, store: admission.Store) -> None:
        claim = attrs.obj
        if claim is None or not isinstance(claim.get("spec"), dict) or has_class(claim):
            return
        name = default_class(await self.classes.list(store.log))
        if name is not None:
            claim["spec"]["storageClassName"] = name
