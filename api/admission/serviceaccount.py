"""The ServiceAccount admission plugin (upstream `plugin/pkg/admission/serviceaccount`), mutating,
for pods being created: `spec.serviceAccountName` defaults to `default`; the account must exist
(403 `error looking up service account NS/NAME: serviceaccount "NAME" not found` otherwise: the
ServiceAccounts controller creates `default` in every namespace); unless automounting is off (pod,
then account), the `kube-api-access-xxxxx` projected volume is added and mounted in every container;
the account's imagePullSecrets are copied to a pod without any. Mirror pods (static pods a kubelet
reports) may not name an account and get nothing (`cp.serviceaccounts` has the pod changes)."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from api import admission
from cp import serviceaccounts as sas

_decode = msgspec.json.Decoder(dict[str, Any]).decode


class ServiceAccountPlugin(admission.BasePlugin):
    """`attempts`/`interval`: how long a pod waits for its namespace's `default` account (upstream
    looks it up 10 times, 100-200 ms apart, since the controller is about to create it)."""

    name = "ServiceAccount"

    def __init__(self, *, attempts: int = 10, interval: float = 0.15) -> None:
        self.attempts = attempts
        self.interval = interval

    def may_handle(self, *, group: str, plural: str, subresource: str, operation: str) -> bool:
        return (group, plural) == ("", "pods") and operation == admission.CREATE and not subresource

    def handles(self, attrs: admission.Attributes) -> bool:
        return (attrs.kind.group, attrs.kind.plural) == ("", "pods") and attrs.operation == admission.CREATE \
            and not attrs.subresource

    async def admit(self, attrs: admission.Attributes, store: admission.Store) -> None:
        obj = attrs.obj
        spec = obj.get("spec") if obj is not None else None
        if obj is None or not isinstance(spec, dict):
            return  # validation answers for a pod without a spec
        raw_meta = obj.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        if sas.MIRROR_ANNOTATION in (meta.get("annotations") or {}):
            if spec.get("serviceAccountName"):
                raise admission.forbidden(attrs, "a mirror pod may not reference service accounts")
            return
        name = str(spec.get("serviceAccountName") or "") or sas.DEFAULT
        spec["serviceAccountName"] = name
        spec["serviceAccount"] = name  # the deprecated alias, as the v1 conversion writes it
        ev = None
        for attempt in range(self.attempts if name == sas.DEFAULT else 1):
            if attempt:
                await asyncio.sleep(self.interval)
            ev = await store.log.get(group="", resource="serviceaccounts", namespace=attrs.namespace, name=name)
            if ev is not None:
                break
        if ev is None:
            raise admission.forbidden(attrs, f"error looking up service account {attrs.namespace}/{name}: "
                                             f'serviceaccount "{name}" not found')
        account = _decode(ev.object)
        if sas.should_automount(account, spec):
            sas.mount_token(spec)
        sas.copy_pull_secrets(account, spec)
