"""Authentication (step 2 of the chain): bearer tokens (static and ServiceAccount JWTs signed by
this server) and client certificates verified by TLS."""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from cp import rbac

ADMIN_USER = "cplane-admin"
ISSUER = "https://cplane.local/serviceaccounts"
NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"


class Authenticator:
    """Bearer tokens (static + ServiceAccount JWTs) and verified client certificates."""

    def __init__(self, *, tokens: Mapping[str, rbac.UserInfo] | None = None, sa_key: bytes = b"",
                 issuer: str = ISSUER, clock: Callable[[], float] = time.time) -> None:
        self._tokens = dict(tokens or {})
        self._sa_key = sa_key
        self._public = None
        if sa_key:
            from cp import certs

            self._public = certs.load_key(sa_key).public_key()
        self.issuer = issuer
        self._clock = clock

    def add_token(self, token: str, user: rbac.UserInfo) -> None:
        self._tokens[token] = user

    def mint(self, namespace: str, name: str, *, node: str = "", ttl: float | None = None,
             uid: str = "") -> str:
        """A ServiceAccount token for `system:serviceaccount:NAMESPACE:NAME`."""
        from cp import certs

        if not self._sa_key:
            raise ValueError("this server has no ServiceAccount signing key")
        now = int(self._clock())
        claims: dict[str, Any] = {
            "iss": self.issuer, "sub": rbac.service_account_user(namespace, name), "iat": now, "nbf": now,
            "jti": certs.random_token(12),
            "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}},
        }
        if ttl is not None:
            claims["exp"] = now + int(ttl)
        if node:
            claims["kubernetes.io"]["node"] = {"name": node}
        return certs.sign_token(self._sa_key, claims)

    def _token_user(self, token: str) -> rbac.UserInfo | None:
        for known, user in self._tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                return _with_group(user, rbac.AUTHENTICATED)
        if self._public is None or token.count(".") != 2:
            return None
        from cp import certs

        claims = certs.verify_token(self._public, token, now=self._clock(), issuer=self.issuer)
        if claims is None:
            return None
        split = rbac.split_service_account(str(claims.get("sub") or ""))
        raw_k8s = claims.get("kubernetes.io")
        k8s: dict[str, Any] = raw_k8s if isinstance(raw_k8s, dict) else {}
        if split is None or k8s.get("namespace") != split[0]:
            return None
        ns, _name = split
        extra: dict[str, tuple[str, ...]] = {}
        if claims.get("jti"):
            extra["authentication.kubernetes.io/credential-id"] = (f"JTI={claims['jti']}",)
        node = (k8s.get("node") or {}).get("name") if isinstance(k8s.get("node"), dict) else None
        if node:
            extra[NODE_NAME_EXTRA] = (str(node),)
        uid = str((k8s.get("serviceaccount") or {}).get("uid") or "") if isinstance(
            k8s.get("serviceaccount"), dict) else ""
        return rbac.UserInfo(name=str(claims["sub"]), uid=uid,
                             groups=(*rbac.service_account_groups(ns), rbac.AUTHENTICATED), extra=extra)

    def authenticate(self, request: web.BaseRequest) -> rbac.UserInfo | None:
        """The request's identity; None when it carries credentials that are not valid."""
        header = request.headers.get("Authorization")
        if header is not None:
            scheme, _, token = header.strip().partition(" ")
            token = token.strip()
            if scheme.lower() == "bearer" and token:
                return self._token_user(token)
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
