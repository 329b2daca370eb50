"""Printers of certificates.k8s.io: CertificateSigningRequests and ClusterTrustBundles (upstream's
`printCertificateSigningRequest`, `printClusterTrustBundle`). Pure; no I/O."""

from __future__ import annotations

from typing import Any

from cp.printers.common import AGE_COL, NAME_COL, E, Obj, Printer, col, human_duration, name_age, since

__all__ = ["PRINTERS"]


def csr_condition(o: Obj) -> str:
    """`extractCSRStatus`: Denied, else Approved, else Pending; then ",Failed" and ",Issued"."""
    types = {c.get("type") for c in (o.get("status") or E).get("conditions") or ()}
    text = "Denied" if "Denied" in types else "Approved" if "Approved" in types else "Pending"
    if "Failed" in types:
        text += ",Failed"
    if (o.get("status") or E).get("certificate"):
        text += ",Issued"
    return text


def _csr_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    seconds = spec.get("expirationSeconds")
    return [
        meta.get("name", ""),
        since(meta.get("creationTimestamp")),
        spec.get("signerName") or "<none>",
        spec.get("username") or "",
        "<none>" if seconds is None else human_duration(seconds),
        csr_condition(o),
    ]


def _bundle_row(o: Obj) -> list[Any]:
    return [(o.get("metadata") or E).get("name", ""), (o.get("spec") or E).get("signerName") or "<none>"]


PRINTERS: dict[str, Printer] = {
    "CertificateSigningRequest": Printer([
        NAME_COL,
        AGE_COL,
        col("SignerName", "string", "The signer asked to sign the certificate."),
        col("Requestor", "string", "The user who created the request."),
        col("RequestedDuration", "string", "The validity the requestor asked for."),
        col("Condition", "string", "Approved, Denied or Pending; Failed and Issued when they apply."),
    ], _csr_row),
    "ClusterTrustBundle": Printer([
        NAME_COL,
        col("SignerName", "string", "The signer whose trust anchors the bundle holds."),
    ], _bundle_row),
    # Upstream prints these with a handler of its own, newer than the printers this follows; until its
    # columns are checked, Name and Age.
    "PodCertificateRequest": Printer([NAME_COL, AGE_COL], name_age),
}
