"""Defaulting of certificates.k8s.io/v1 kinds.

Source of behaviour (read, not copied): the `+default=86400` marker on PodCertificateRequest's
`maxExpirationSeconds` in k8s.io/api certificates/v1. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cp.defaulting.fields import child, setdefault

POD_CERTIFICATE_MAX_EXPIRATION = 86400


def _pod_certificate_request(obj: dict[str, Any]) -> None:
    setdefault(child(obj, "spec"), "maxExpirationSeconds", POD_CERTIFICATE_MAX_EXPIRATION)


DEFAULTERS: dict[tuple[str, str, str], Callable[[dict[str, Any]], None]] = {
    ("certificates.k8s.io", "v1", "PodCertificateRequest"): _pod_certificate_request,
}
