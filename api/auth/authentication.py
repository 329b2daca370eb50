"""Authentication (step 2 of the chain): bearer tokens (static and ServiceAccount JWTs signed by
this server) and client certificates verified by TLS."""

from __future__ import annotations

import hmac
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec
from aiohttp import web

from cp import rbac

ADMIN_USER = "cplane-admin"
# kube-apiserver has no default `--service-account-issuer`; this is the one kubeadm configures. The
# API audiences (`--api-audiences`) default to the issuer, as upstream.
ISSUER = "https://kubernetes.default.svc.cluster.local"
NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"
_EXTRA = "authentication.kubernetes.io/"

# (plural, namespace, name) -> the stored object, or None when there is none
Lookup = Callable[[str, str, str], Awaitable[dict[str, Any] | None]]
_LEEWAY = 60.0  # go-jose's jwt.DefaultLeeway


class TokenResult(msgspec.Struct, frozen=True, kw_only=True):
    """What the token authenticators say of a bearer token (a TokenReview's status): the user, the
    audiences it is valid for, or the error (empty when no authenticator knew the token)."""

    user: rbac.UserInfo | None = None
    audiences: tuple[str, ...] = ()
    error: str = ""


class Authenticator:
    """Bearer tokens (static + ServiceAccount JWTs) and verified client certificates.

    A ServiceAccount token with the SA's uid (every TokenRequest token) is valid only while that
    ServiceAccount (same uid) and its bound Pod or Secret exist, as upstream's validator checks;
    tokens this server mints for its own components carry no uid and name no object (`lookup` is
    set by `api.auth.start` to read the store)."""

    def __init__(self, *, tokens: Mapping[str, rbac.UserInfo] | None = None, sa_key: bytes = b"",
                 issuer: str = ISSUER, audiences: tuple[str, ...] = (),
                 clock: Callable[[], float] = time.time) -> None:
        self._tokens = dict(tokens or {})
        self._sa_key = sa_key
        self._public = None
        self._kid = ""
        if sa_key:
            from cp import certs

            self._public = certs.load_key(sa_key).public_key()
            self._kid = certs.key_id(self._public)
        self.issuer = issuer
        self.api_audiences = audiences or (issuer,)
        self._clock = clock
        self.lookup: Lookup | None = None

    @property
    def can_sign(self) -> bool:
        return bool(self._sa_key)

    def now(self) -> float:
        return self._clock()

    def public_jwks(self) -> dict[str, Any]:
        """The signing key as a JSON Web Key Set (`/openid/v1/jwks`)."""
        from cp import certs

        assert self._public is not None
        return {"keys": [certs.public_jwk(self._public)]}

    def add_token(self, token: str, user: rbac.UserInfo) -> None:
        self._tokens[token] = user

    def mint(self, namespace: str, name: str, *, node: str = "", ttl: float | None = None,
             uid: str = "", audiences: tuple[str, ...] = (), pod: tuple[str, str] | None = None,
             secret: tuple[str, str] | None = None, node_uid: str = "") -> str:
        """A ServiceAccount token for `system:serviceaccount:NAMESPACE:NAME` (claims as upstream's
        `serviceaccount.Claims`: `pod`/`secret` bind it to an object (name, uid), `node` to a node)."""
        from cp import certs

        if not self._sa_key:
            raise ValueError("this server has no ServiceAccount signing key")
        now = int(self._clock())
        claims: dict[str, Any] = {
            "iss": self.issuer, "sub": rbac.service_account_user(namespace, name), "iat": now, "nbf": now,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}},
        }
        if audiences:
            claims["aud"] = list(audiences)
        if ttl is not None:
            claims["exp"] = now + int(ttl)
        k8s = claims["kubernetes.io"]
        if pod is not None:
            k8s["pod"] = {"name": pod[0], "uid": pod[1]}
        if secret is not None:
            k8s["secret"] = {"name": secret[0], "uid": secret[1]}
        if node:
            k8s["node"] = {"name": node, **({"uid": node_uid} if node_uid else {})}
        return certs.sign_token(self._sa_key, claims, key_id=self._kid)

    async def review(self, token: str, audiences: tuple[str, ...] = ()) -> TokenResult:
        """The union of token authenticators, as a TokenReview asks it: static tokens, then
        ServiceAccount JWTs of this issuer. `audiences` default to the API audiences."""
        requested = audiences or self.api_audiences
        for known, user in self._tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                # Audience-agnostic tokens are good for the API audiences only (upstream's wrapper).
                agnostic = tuple(a for a in self.api_audiences if a in requested)
                if not agnostic:
                    return TokenResult()
                return TokenResult(user=_with_group(user, rbac.AUTHENTICATED), audiences=agnostic)
        if self._public is None or token.count(".") != 2:
            return TokenResult()
        from cp import certs

        claims = certs.token_claims(self._public, token)
        if claims is None or claims.get("iss") != self.issuer:
            return TokenResult()  # not this issuer's token (upstream: not for this authenticator)
        raw_aud = claims.get("aud")
        token_auds = tuple(str(a) for a in (raw_aud if isinstance(raw_aud, list) else [raw_aud] if raw_aud else []))
        if not token_auds:  # legacy tokens are for the API audiences only
            token_auds = self.api_audiences
        auds = tuple(a for a in token_auds if a in requested)
        if not auds:
            return TokenResult(error=f"token audiences {_go_q(token_auds)} is invalid for the target audiences "
                                     f"{_go_q(requested)}")
        now = self._clock()
        exp, nbf = claims.get("exp"), claims.get("nbf")
        if exp is not None and (not isinstance(exp, int | float) or now > exp + _LEEWAY):
            return TokenResult(error="service account token has expired")
        if nbf is not None and (not isinstance(nbf, int | float) or now + _LEEWAY < nbf):
            return TokenResult(error="service account token is not valid yet")
        split = rbac.split_service_account(str(claims.get("sub") or ""))
        k8s = _dict(claims.get("kubernetes.io"))
        if split is None or k8s.get("namespace") != split[0]:
            return TokenResult(error="service account token claims could not be validated")
        ns, _name = split
        sa_ref, pod_ref, secret_ref, node_ref = (_dict(k8s.get(k)) for k in ("serviceaccount", "pod", "secret",
                                                                            "node"))
        problem = await self._check_bound(ns, sa_ref, pod_ref, secret_ref, node_ref, now=now)
        if problem:
            return TokenResult(error=problem)
        extra: dict[str, tuple[str, ...]] = {}
        if claims.get("jti"):
            extra[_EXTRA + "credential-id"] = (f"JTI={claims['jti']}",)
        if node_ref.get("name"):
            extra[NODE_NAME_EXTRA] = (str(node_ref["name"]),)
            if node_ref.get("uid"):
                extra[_EXTRA + "node-uid"] = (str(node_ref["uid"]),)
        if pod_ref.get("name"):
            extra[_EXTRA + "pod-name"] = (str(pod_ref["name"]),)
            extra[_EXTRA + "pod-uid"] = (str(pod_ref.get("uid") or ""),)
        user = rbac.UserInfo(name=str(claims["sub"]), uid=str(sa_ref.get("uid") or ""),
                             groups=(*rbac.service_account_groups(ns), rbac.AUTHENTICATED), extra=dict(sorted(
                                 extra.items())))
        return TokenResult(user=user, audiences=auds)

    async def _check_bound(self, ns: str, sa_ref: dict[str, Any], pod_ref: dict[str, Any],
                           secret_ref: dict[str, Any], node_ref: dict[str, Any], *, now: float) -> str:
        """Upstream's validator: the ServiceAccount (and the bound object: a Pod, a Secret, or a Node
        when the token is bound to one itself) still exist with the uids of the claims. Tokens
        without the SA's uid are this server's own (not checked)."""
        if self.lookup is None or not sa_ref.get("uid"):
            return ""
        name = str(sa_ref.get("name") or "")
        sa = await self.lookup("serviceaccounts", ns, name)
        if sa is None:
            return f'serviceaccounts "{name}" not found'
        if _deleted_before(sa, now - _LEEWAY):
            return f"service account {ns}/{name} has been deleted"
        if _uid(sa) != sa_ref.get("uid"):
            return f"service account UID ({_uid(sa)}) does not match claim ({sa_ref.get('uid')})"
        for plural, ref, what in (("secrets", secret_ref, "secret"), ("pods", pod_ref, "pod")):
            if not ref:
                continue
            obj = await self.lookup(plural, ns, str(ref.get("name") or ""))
            if obj is None or _deleted_before(obj, now - _LEEWAY):
                return "service account token has been invalidated"
            if _uid(obj) != ref.get("uid"):
                return (f"{what} UID ({_uid(obj)}) does not match service account {what} ref claim "
                        f"({ref.get('uid')})")
        if node_ref and not pod_ref and not secret_ref:  # bound to the Node (ServiceAccountTokenNodeBinding)
            node = await self.lookup("nodes", "", str(node_ref.get("name") or ""))
            if node is None or _deleted_before(node, now - _LEEWAY):
                return "service account token has been invalidated"
            if node_ref.get("uid") and _uid(node) != node_ref.get("uid"):
                return f"node UID ({_uid(node)}) does not match service account node ref claim ({node_ref.get('uid')})"
        return ""

    async def authenticate(self, request: web.BaseRequest) -> rbac.UserInfo | None:
        """The request's identity; None when it carries credentials that are not valid."""
        header = request.headers.get("Authorization")
        if header is not None:
            scheme, _, token = header.strip().partition(" ")
            token = token.strip()
            if scheme.lower() == "bearer" and token:
                return (await self.review(token)).user
            # Other schemes (basic): not supported, so not authenticated by this header.
            if scheme.lower() != "bearer":
                return self._from_cert(request)
            return None
        return self._from_cert(request)

    @staticmethod
    def _from_cert(request: web.BaseRequest) -> rbac.UserInfo | None:
        transport = request.transport
        ssl_obj = transport.get_extra_info("ssl_object") if transport is not None else None
        if ssl_obj is not None:
            from cp import certs

            found = certs.identity_from_peercert(ssl_obj.getpeercert())
            if found is not None:
                user, groups = found
                return rbac.UserInfo(name=user, groups=(*groups, rbac.AUTHENTICATED))
        return rbac.UserInfo(name=rbac.ANONYMOUS, groups=(rbac.UNAUTHENTICATED,))


def _with_group(user: rbac.UserInfo, group: str) -> rbac.UserInfo:
    if group in user.groups:
        return user
    return rbac.UserInfo(name=user.name, uid=user.uid, groups=(*user.groups, group), extra=user.extra)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _uid(obj: dict[str, Any]) -> str:
    return str(_dict(obj.get("metadata")).get("uid") or "")


def _deleted_before(obj: dict[str, Any], moment: float) -> bool:
    stamp = _dict(obj.get("metadata")).get("deletionTimestamp")
    if not isinstance(stamp, str):
        return False
    from cp import clock

    return clock.parse_time(stamp) < moment


def _go_q(values: tuple[str, ...]) -> str:
    """Go's `%q` of a []string: `["a" "b"]`."""
    import json

    return "[" + " ".join(json.dumps(v) for v in values) + "]"
