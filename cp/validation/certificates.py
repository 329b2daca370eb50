"""Validation rules for certificates.k8s.io/v1: CertificateSigningRequest, ClusterTrustBundle and
PodCertificateRequest.

Behaviour follows upstream `pkg/apis/certificates/validation` and `pkg/apis/core/validation`'s signer
names. PEM, X.509 and PKCS#10 parsing uses `cryptography`, imported on the first request that needs it
(so that importing the rules does not load it); its parse errors are reported in Go's words where Go's
are known and generically where they depend on Go's ASN.1 parser. Pure.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from cp.errors import Cause
from cp.validation.common import (
    GoValue,
    as_dict,
    as_list,
    as_str,
    each,
    go_json,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_int,
    name_is_dns_subdomain,
    not_supported,
    too_long,
    validate_annotations,
)
from cp.validation.meta import NameFn, validate_conditions, validate_object_meta
from cp.validation.registry import Rules

LEGACY_SIGNER = "kubernetes.io/legacy-unknown"
_USAGES = tuple(sorted((
    "signing", "digital signature", "content commitment", "key encipherment", "key agreement",
    "data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth",
    "client auth", "code signing", "email protection", "s/mime", "ipsec end system", "ipsec tunnel",
    "ipsec user", "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc")))
_TRUE_ONLY_CONDITIONS = ("Approved", "Denied", "Failed")
_MAX_TRUST_BUNDLE = 1024 * 1024
_MIN_MAX_EXPIRATION = 3600
_KUBERNETES_MAX_EXPIRATION = 86400
_MAX_MAX_EXPIRATION = 91 * 86400
_MAX_STUB_REQUEST = 10 * 1024
_MAX_CERTIFICATE_CHAIN = 100 * 1024
_PEM = re.compile(r"-----BEGIN ([^\n-]*)-----\r?\n(.*?)-----END \1-----", re.DOTALL)


# ---------------------------------------------------------------- PEM, X.509, PKCS#10

class _Block:
    __slots__ = ("der", "headers", "type")

    def __init__(self, type_: str, headers: bool, der: bytes) -> None:
        self.type = type_
        self.headers = headers
        self.der = der


def _pem_blocks(data: str) -> list[_Block]:
    """The PEM blocks of `data`, in order; a block whose body is not base64 ends the list (as Go's
    `pem.Decode` stops)."""
    out = []
    for m in _PEM.finditer(data):
        body = m.group(2)
        headers = False
        if ":" in body.split("\n\n", 1)[0] and "\n\n" in body:
            headers = True
            body = body.split("\n\n", 1)[1]
        try:
            der = base64.b64decode("".join(body.split()), validate=True)
        except (binascii.Error, ValueError):
            break
        out.append(_Block(m.group(1), headers, der))
    return out


def _csr_problem(request: Any) -> str | None:
    """`certificates.ParseCSR` + `CheckSignature`: None for a signed PKCS#10 request in PEM."""
    from cryptography import x509

    try:
        pem = base64.b64decode(as_str(request), validate=True).decode("latin-1")
    except (binascii.Error, ValueError):
        return "PEM block type must be CERTIFICATE REQUEST"
    blocks = _pem_blocks(pem)
    if not blocks or blocks[0].type != "CERTIFICATE REQUEST":
        return "PEM block type must be CERTIFICATE REQUEST"
    return _der_csr_problem(blocks[0].der, x509)


def _der_csr_problem(der: bytes, x509: Any) -> str | None:
    try:
        csr = x509.load_der_x509_csr(der)
    except ValueError:
        return "x509: malformed certificate request"
    try:
        valid = csr.is_signature_valid
    except Exception:  # an algorithm cryptography cannot verify
        return "x509: cannot verify signature: algorithm unimplemented"
    return None if valid else "x509: signature verification failure"


def _certificate_problem(data: str) -> str | None:
    """validateCertificate: CERTIFICATE blocks only, without headers, each parsing."""
    if not data:
        return None
    from cryptography import x509

    blocks = _pem_blocks(data)
    for block in blocks:
        if block.type != "CERTIFICATE":
            return f'only CERTIFICATE PEM blocks are allowed, found "{block.type}"'
        if block.headers:
            return "no PEM block headers are permitted"
        try:
            x509.load_der_x509_certificate(block.der)
        except ValueError:
            return "x509: malformed certificate"
    if not blocks:
        return "must contain at least one CERTIFICATE PEM block"
    return None


def _decoded(value: Any) -> str:
    """A `[]byte` field's content (base64 in JSON) as text; '' when it does not decode."""
    try:
        return base64.b64decode(as_str(value), validate=True).decode("latin-1")
    except (binascii.Error, ValueError):
        return ""


# ---------------------------------------------------------------- signer names

def validate_signer_name(signer: str, path: str, errs: list[Cause]) -> None:
    """apivalidation.ValidateSignerName: `example.com/signer-name`."""
    if not signer:
        errs.append(Cause("Required", path, ""))
        return
    segments = signer.split("/")
    if len(segments) != 2:
        errs.append(Cause("Invalid", path, "must be a fully qualified domain and path of the form "
                          "'example.com/signer-name'", signer))
        return
    domain, rest = segments
    if len(domain) > 253:
        too_long(errs, path, 253)
    labels = domain.split(".")
    for label in labels:
        msgs = is_dns1123_label(label)
        if msgs:
            errs.extend(Cause("Invalid", path, f'validating label "{label}": {m}', domain) for m in msgs)
            break
    if len(labels) < 2:
        errs.append(Cause("Invalid", path, "should be a domain with at least two segments separated by dots",
                          domain))
    for label in rest.split("."):
        msgs = is_dns1123_subdomain(label)
        if msgs:
            errs.extend(Cause("Invalid", path, f'validating label "{label}": {m}', rest) for m in msgs)
            break
    limit = 253 + (253 + 63 + 1) + 1
    if len(signer) > limit:
        too_long(errs, path, limit)


def _is_kubernetes_signer(signer: str) -> bool:
    host = signer.partition("/")[0]
    return host == "kubernetes.io" or host.endswith(".kubernetes.io")


# ---------------------------------------------------------------- CertificateSigningRequest

def _csr_conditions(conditions: list[Any], errs: list[Cause], dv: list[Cause], *, old: dict[str, Any] | None
                    ) -> None:
    path = "status.conditions"
    old_types = [as_str(as_dict(c).get("type")) for c in as_list(as_dict((old or {}).get("status"))
                                                                .get("conditions"))]
    allow_empty = "" in old_types
    allow_duplicates = len(set(old_types)) != len(old_types)
    allow_both = "Approved" in old_types and "Denied" in old_types
    seen: set[str] = set()
    approved = denied = False
    for i, c in enumerate(conditions):
        c = as_dict(c)
        ctype, status = as_str(c.get("type")), as_str(c.get("status"))
        if not ctype and not allow_empty:
            errs.append(Cause("Required", f"{path}[{i}].type", ""))
        allowed = ("True",) if ctype in _TRUE_ONLY_CONDITIONS else ("False", "True", "Unknown")
        if not status:
            errs.append(Cause("Required", f"{path}[{i}].status", ""))
        elif status not in allowed:
            not_supported(errs, f"{path}[{i}].status", status, allowed)
        if not allow_both and ctype in ("Approved", "Denied"):
            approved, denied = approved or ctype == "Approved", denied or ctype == "Denied"
            if approved and denied:
                # A beta declarative rule (zeroOrOneOf) in 1.37.
                dv.append(Cause("Invalid", path, "Approved and Denied conditions are mutually exclusive", ctype))
        if not allow_duplicates and ctype in seen:
            errs.append(Cause("Duplicate", f"{path}[{i}].type", "", ctype))
        seen.add(ctype)


def _csr_validate(obj: dict[str, Any], errs: list[Cause], *, old: dict[str, Any] | None) -> None:
    dv: list[Cause] = []
    spec = as_dict(obj.get("spec"))
    old_spec = as_dict((old or {}).get("spec"))
    problem = _csr_problem(spec.get("request"))
    if problem:
        errs.append(Cause("Invalid", "spec.request", problem, as_str(spec.get("request"))))
    usages = as_list(spec.get("usages"))
    if not usages:
        errs.append(Cause("Required", "spec.usages", ""))
    old_usages = as_list(old_spec.get("usages"))
    if not any(u not in _USAGES for u in old_usages):
        for i, usage in enumerate(usages):
            if usage not in _USAGES:
                not_supported(errs, f"spec.usages[{i}]", usage, _USAGES)
    if len(set(map(str, old_usages))) == len(old_usages):
        seen: set[str] = set()
        for i, usage in enumerate(usages):
            if usage in seen:
                errs.append(Cause("Duplicate", f"spec.usages[{i}]", "", usage))
            seen.add(as_str(usage))
    signer = as_str(spec.get("signerName"))
    if signer == LEGACY_SIGNER and old_spec.get("signerName") != LEGACY_SIGNER:
        errs.append(Cause("Invalid", "spec.signerName", "the legacy signerName is not allowed via this API version",
                          signer))
    else:
        validate_signer_name(signer, "spec.signerName", errs)
    expiry = spec.get("expirationSeconds")
    if is_int(expiry) and expiry < 600:
        errs.append(Cause("Invalid", "spec.expirationSeconds",
                          "may not specify a duration less than 600 seconds (10 minutes)", expiry))
    status = as_dict(obj.get("status"))
    _csr_conditions(as_list(status.get("conditions")), errs, dv, old=old)
    certificate = status.get("certificate")
    old_certificate = as_dict((old or {}).get("status")).get("certificate")
    arbitrary = old is not None and (certificate == old_certificate or
                                     _certificate_problem(_decoded(old_certificate)) is not None)
    if not arbitrary:
        problem = _certificate_problem(_decoded(certificate))
        if problem:
            errs.append(Cause("Invalid", "status.certificate", problem, "<certificate data>"))
    errs.extend(dv)


def _csr_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=lambda _name, _prefix: [])
    _csr_validate(obj, errs, old=None)


def _conditions_of(obj: dict[str, Any], ctype: str) -> list[Any]:
    return [c for c in as_list(as_dict(obj.get("status")).get("conditions")) if as_dict(c).get("type") == ctype]


def _csr_update_checks(new: dict[str, Any], old: dict[str, Any], errs: list[Cause], *, certificate: bool,
                       approval: bool = False) -> None:
    """validateCertificateSigningRequestUpdate; `approval` (the `/approval` subresource) may add
    Approved and Denied conditions."""
    _csr_validate(new, errs, old=old)
    for ctype in ("Approved", "Denied", "Failed"):
        if len(_conditions_of(new, ctype)) < len(_conditions_of(old, ctype)):
            errs.append(Cause("Forbidden", "status.conditions", f'updates may not remove a condition of type "{ctype}"'))
    for ctype in ("Approved", "Denied"):
        a, b = _conditions_of(new, ctype), _conditions_of(old, ctype)
        if len(a) > len(b) and not approval:
            errs.append(Cause("Forbidden", "status.conditions", f'updates may not add a condition of type "{ctype}"'))
        elif len(a) == len(b) and a != b:
            errs.append(Cause("Forbidden", "status.conditions", f'updates may not modify a condition of type "{ctype}"'))
    cert, old_cert = as_dict(new.get("status")).get("certificate"), as_dict(old.get("status")).get("certificate")
    if (cert or None) != (old_cert or None):
        if not certificate:
            errs.append(Cause("Forbidden", "status.certificate", "updates may not set certificate content"))
        elif old_cert:
            errs.append(Cause("Forbidden", "status.certificate", "updates may not modify existing certificate content"))


def _csr_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _csr_update_checks(new, old, errs, certificate=False)


def _csr_status_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _csr_update_checks(new, old, errs, certificate=True)


def _csr_approval_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _csr_update_checks(new, old, errs, certificate=False, approval=True)


# ---------------------------------------------------------------- ClusterTrustBundle

def _trust_bundle_name(signer: str) -> NameFn:
    def check(name: str, prefix: bool) -> list[str]:
        if not signer:
            if ":" in name:
                return ['ClusterTrustBundle without signer name must not have ":" in its name']
            return name_is_dns_subdomain(name, prefix)
        required = signer.replace("/", ":") + ":"
        if not name.startswith(required):
            return [f"ClusterTrustBundle for signerName {signer} must be named with prefix {required}"]
        return name_is_dns_subdomain(name[len(required):], prefix)
    return check


def _trust_bundle(data: str, path: str, errs: list[Cause]) -> None:
    """validateTrustBundle: CA certificates only, no headers, no duplicates, at least one."""
    if len(data) > _MAX_TRUST_BUNDLE:
        too_long(errs, path, _MAX_TRUST_BUNDLE)
        return
    from cryptography import x509

    found: list[Cause] = []
    seen: dict[bytes, list[int]] = {}
    for i, block in enumerate(_pem_blocks(data)):
        problem = None
        if block.type != "CERTIFICATE":
            problem = f"entry {i} has bad block type: {block.type}"
        elif block.headers:
            problem = f"entry {i} has PEM block headers"
        else:
            try:
                cert = x509.load_der_x509_certificate(block.der)
            except ValueError:
                problem = f"entry {i} does not parse as X.509"
            else:
                try:
                    constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
                except x509.ExtensionNotFound:
                    constraints = None
                if constraints is None or not constraints.ca:
                    problem = f"entry {i} does not have the CA bit set"
        if problem:
            found.append(Cause("Invalid", path, problem, "<value omitted>"))
            continue
        seen.setdefault(block.der, []).append(i)
    if found:
        errs.extend(found)
        return
    if not seen:
        errs.append(Cause("Invalid", path, "at least one trust anchor must be provided", "<value omitted>"))
    for indices in seen.values():
        if len(indices) > 1:
            errs.append(Cause("Invalid", path, f"duplicate trust anchor (indices [{' '.join(map(str, indices))}])",
                              "<value omitted>"))


def _ctb_validate(obj: dict[str, Any], errs: list[Cause], *, parse: bool) -> None:
    spec = as_dict(obj.get("spec"))
    signer = as_str(spec.get("signerName"))
    if signer:
        validate_signer_name(signer, "spec.signerName", errs)
    if parse:
        _trust_bundle(as_str(spec.get("trustBundle")), "spec.trustBundle", errs)


def _ctb_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    signer = as_str(as_dict(obj.get("spec")).get("signerName"))
    validate_object_meta(meta, errs, namespaced=False, name_fn=_trust_bundle_name(signer))
    _ctb_validate(obj, errs, parse=True)


def _ctb_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    _ctb_validate(new, errs, parse=spec.get("trustBundle") != old_spec.get("trustBundle"))
    if as_str(spec.get("signerName")) != as_str(old_spec.get("signerName")):
        errs.append(Cause("Invalid", "spec.signerName", "field is immutable", as_str(spec.get("signerName"))))


# ---------------------------------------------------------------- PodCertificateRequest

def _stub_request_problem(der: bytes) -> tuple[str, str] | None:
    """(field message, shown value) when the stub PKCS#10 request is unusable: it must parse, be signed
    by its own key, and that key must be one kube-apiserver accepts."""
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    try:
        csr = x509.load_der_x509_csr(der)
    except ValueError:
        return "must be a valid DER-encoded PKCS#10 certificate signing request", "<value omitted>"
    key = csr.public_key()
    if isinstance(key, ec.EllipticCurvePublicKey):
        if key.curve.name not in ("secp256r1", "secp384r1", "secp521r1"):
            return "elliptic public keys must use curve P256 or P384", f"curve {key.curve.name}"
    elif isinstance(key, rsa.RSAPublicKey):
        if key.key_size not in (3072, 4096):
            return "RSA keys must have modulus size 3072 or 4096", f"{key.key_size}-bit modulus"
    elif not isinstance(key, ed25519.Ed25519PublicKey):
        return "unknown public key type; supported types are Ed25519, ECDSA, and RSA", "<value omitted>"
    if not csr.is_signature_valid:
        return "could not verify the signature of the certificate signing request", "<value omitted>"
    return None


def _pcr_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    spec = as_dict(obj.get("spec"))
    signer = as_str(spec.get("signerName"))
    validate_signer_name(signer, "spec.signerName", errs)
    annotations = spec.get("unverifiedUserAnnotations")
    if annotations is not None:
        validate_annotations(annotations, "spec.unverifiedUserAnnotations", errs)
    for key, check in (("podName", True), ("podUID", False), ("serviceAccountName", True),
                       ("serviceAccountUID", False), ("nodeName", True), ("nodeUID", False)):
        value = as_str(spec.get(key))
        if check:  # pod, service account and node names are DNS subdomains
            each(errs, f"spec.{key}", value, name_is_dns_subdomain(value, False))
        else:
            if not value:
                errs.append(Cause("Invalid", f"spec.{key}", "must not be empty", value))
            if len(value) > 128:
                too_long(errs, f"spec.{key}", 128)
    expiry = spec.get("maxExpirationSeconds")
    if expiry is None:
        errs.append(Cause("Required", "spec.maxExpirationSeconds", "must be set"))
        return
    high = _KUBERNETES_MAX_EXPIRATION if _is_kubernetes_signer(signer) else _MAX_MAX_EXPIRATION
    if is_int(expiry) and not _MIN_MAX_EXPIRATION <= expiry <= high:
        errs.append(Cause("Invalid", "spec.maxExpirationSeconds",
                          f"must be in the range [{_MIN_MAX_EXPIRATION}, {high}]", expiry))
    raw = as_str(spec.get("stubPKCS10Request"))
    try:
        der = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        der = b""
    if len(der) > _MAX_STUB_REQUEST:
        too_long(errs, "spec.stubPKCS10Request", _MAX_STUB_REQUEST)
        return
    problem = _stub_request_problem(der)
    if problem:
        errs.append(Cause("Invalid", "spec.stubPKCS10Request", problem[0], problem[1]))


def _pcr_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    if new.get("spec") != old.get("spec"):
        errs.append(Cause("Invalid", "spec", "field is immutable", go_json(new.get("spec"))))


def _pcr_terminal(obj: dict[str, Any], ctype: str) -> bool:
    return any(as_dict(c).get("type") == ctype and as_dict(c).get("status") == "True"
               for c in as_list(as_dict(obj.get("status")).get("conditions")))


def _pcr_status_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    """ValidatePodCertificateRequestStatusUpdate: one terminal condition; status immutable after it."""
    known = ("Issued", "Denied", "Failed")
    status, old_status = as_dict(new.get("status")), as_dict(old.get("status"))
    count = 0
    for i, c in enumerate(as_list(status.get("conditions"))):
        c = as_dict(c)
        ctype = as_str(c.get("type"))
        if ctype in known:
            count += 1
            if count > 1:
                errs.append(Cause("Invalid", f"status.conditions[{i}].type",
                                  'There may be at most one condition with type "Issued", "Denied", or "Failed"',
                                  ctype))
            if c.get("status") != "True":
                not_supported(errs, f"status.conditions[{i}].status", as_str(c.get("status")), ("True",))
        else:
            not_supported(errs, f"status.conditions[{i}].type", ctype, known)
    validate_conditions(status.get("conditions"), "status.conditions", errs)
    if errs:
        return
    omitted = GoValue("<omitted>")
    if any(_pcr_terminal(old, t) for t in known):
        if status != old_status:
            errs.append(Cause("Invalid", "status", "immutable after PodCertificateRequest is issued, denied, or "
                              "failed", omitted))
        return
    if _pcr_terminal(new, "Denied") or _pcr_terminal(new, "Failed"):
        if {k: v for k, v in status.items() if k != "conditions"}:
            errs.append(Cause("Invalid", "status", "non-condition status fields must be empty when denying or "
                              "failing the PodCertificateRequest", omitted))
        return
    if _pcr_terminal(new, "Issued"):
        _issued_chain(new, errs)
        return
    if status != old_status:
        errs.append(Cause("Invalid", "status", 'status is immutable unless transitioning to "Issued", "Denied", '
                          'or "Failed"', omitted))


def _issued_chain(obj: dict[str, Any], errs: list[Cause]) -> None:
    status = as_dict(obj.get("status"))
    chain = as_str(status.get("certificateChain"))
    path = "status.certificateChain"
    if len(chain) > _MAX_CERTIFICATE_CHAIN:
        too_long(errs, path, _MAX_CERTIFICATE_CHAIN)
        return
    blocks = _pem_blocks(chain)
    if not blocks:
        errs.append(Cause("Invalid", path, "issued certificate chain must contain at least one certificate", chain))
        return
    if any(b.type != "CERTIFICATE" for b in blocks):
        errs.append(Cause("Invalid", path, "issued certificate chain must consist entirely of CERTIFICATE PEM "
                          "blocks", chain))
        return
    from cryptography import x509

    try:
        x509.load_der_x509_certificate(blocks[0].der)
    except ValueError:
        errs.append(Cause("Invalid", path, "leaf certificate does not parse as valid X.509", chain))
        return
    for key, msg in (("notBefore", "must be present and consistent with the issued certificate"),
                     ("notAfter", "must be present and consistent with the issued certificate"),
                     ("beginRefreshAt", "must be present and in the range [notbefore+10min, notafter-10min]")):
        if not status.get(key):
            errs.append(Cause("Required", f"status.{key}", msg))
    for block in blocks[1:]:
        try:
            x509.load_der_x509_certificate(block.der)
        except ValueError:
            errs.append(Cause("Invalid", path, "intermediate certificate does not parse as valid X.509", chain))
            return


RULES = {
    ("certificates.k8s.io", "CertificateSigningRequest"): Rules(
        _csr_create, _csr_update, _csr_status_update, subresource_updates={"approval": _csr_approval_update}),
    ("certificates.k8s.io", "ClusterTrustBundle"): Rules(_ctb_create, _ctb_update),
    ("certificates.k8s.io", "PodCertificateRequest"): Rules(_pcr_create, _pcr_update, _pcr_status_update),
}
