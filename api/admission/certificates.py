"""CertificateApproval admission: approving or denying a CertificateSigningRequest through its
`approval` subresource needs the `approve` verb on the `signers` resource of certificates.k8s.io
for its signer name (or the signer's domain wildcard, `example.com/*`), as upstream's plugin
(plugin/pkg/admission/certificates/approval). Installed when the server authorizes requests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from api import admission
from cp import errors, rbac

GROUP = "certificates.k8s.io"

Authorize = Callable[[rbac.Attributes], bool]


def allowed_for_signer(authorize: Authorize, user: rbac.UserInfo, verb: str, signer: str) -> bool:
    """Whether `user` may `verb` requests of `signer`: on the signer's name, or its domain's `*`."""
    def can(name: str) -> bool:
        return authorize(rbac.Attributes(user=user, verb=verb, api_group=GROUP, resource="signers", name=name))

    if can(signer):
        return True
    domain, slash, _path = signer.partition("/")
    return bool(slash) and can(f"{domain}/*")


class CertificateApprovalPlugin(admission.BasePlugin):
    name = "CertificateApproval"

    def __init__(self, *, authorize: Authorize) -> None:
        self.authorize = authorize

    def may_handle(self, *, group: str, plural: str, subresource: str, operation: str) -> bool:
        return group == GROUP and plural == "certificatesigningrequests" and operation == admission.UPDATE \
            and subresource == "approval"

    def handles(self, attrs: admission.Attributes) -> bool:
        return attrs.kind.group == GROUP and attrs.kind.plural == "certificatesigningrequests" \
            and attrs.operation == admission.UPDATE and attrs.subresource == "approval"

    async def validate(self, attrs: admission.Attributes, store: Any) -> None:
        if attrs.user is None or rbac.MASTERS in attrs.user.groups:
            return
        spec = (attrs.old or {}).get("spec") or {}
        signer = str(spec.get("signerName") or "") if isinstance(spec, dict) else ""
        if not allowed_for_signer(self.authorize, attrs.user, "approve", signer):
            raise errors.Forbidden(
                f'certificatesigningrequests.{GROUP} "{attrs.name}" is forbidden: user not permitted to approve '
                f'requests with signerName "{signer}"',
                details={"name": attrs.name, "group": GROUP, "kind": "certificatesigningrequests"})
