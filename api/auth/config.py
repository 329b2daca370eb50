"""How a server authenticates, authorizes and limits (`AuthConfig`), and tokens for its own components."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from api.auth.authentication import ADMIN_USER, ISSUER, Authenticator, Lookup
from api.auth.credentials import Credentials, parse_token_file
from api.auth.policy import PolicyCache
from api.fairness import FairSeats
from api.limits import Deadlines, Limits
from cp import rbac


class AuthConfig:
    """How a server authenticates, authorizes and limits. `AuthConfig.insecure()` authenticates
    nobody (everyone is the admin, every request is allowed, as kube-apiserver's AlwaysAllow) but keeps
    the limits: `cplane serve --insecure`. `signer` issues and reviews ServiceAccount tokens (the
    token subresource, TokenReview, issuer discovery): the authenticator when there is one; an
    insecure server may still have one, so `kubectl create token` works against it."""

    def __init__(self, *, authenticator: Authenticator | None, limits: Limits | None = None,
                 credentials: Credentials | None = None, bootstrap_policy: bool = True,
                 make_signer: Callable[[], Authenticator] | None = None) -> None:
        self.authenticator = authenticator
        self._signer = authenticator
        self._make_signer = make_signer
        self.lookup: Lookup | None = None  # set at start-up (api.auth.start)
        self.limits = limits or Limits()
        self.credentials = credentials
        self.bootstrap_policy = bootstrap_policy
        self.cache = PolicyCache()
        lim = self.limits
        self.reads = FairSeats(seats=lim.max_inflight, queue_length=lim.queue_length, queue_wait=lim.queue_wait)
        self.writes = FairSeats(seats=lim.max_mutating_inflight, queue_length=lim.queue_length,
                                queue_wait=lim.queue_wait)
        self.buffered_body_bytes = 0  # request bodies read and held, over all requests
        self.watches: dict[str, int] = {}
        shortest = min(lim.request_timeout, lim.body_timeout)
        self.deadlines = Deadlines(lim.request_timeout, interval=max(0.01, min(1.0, shortest / 2)))

    @property
    def inflight(self) -> int:
        """Requests holding a seat (reads and writes; not watches)."""
        return self.reads.in_use + self.writes.in_use

    @property
    def mutating_inflight(self) -> int:
        return self.writes.in_use

    @property
    def secure(self) -> bool:
        return self.authenticator is not None

    @classmethod
    def insecure(cls, limits: Limits | None = None, *,
                 make_signer: Callable[[], Authenticator] | None = None) -> AuthConfig:
        return cls(authenticator=None, limits=limits, make_signer=make_signer)

    @property
    def signer(self) -> Authenticator | None:
        """The authenticator that issues and reviews ServiceAccount tokens, made on first use where it is
        not the request authenticator (an insecure server loads no cryptography at start-up)."""
        if self._signer is None and self._make_signer is not None:
            self._signer = self._make_signer()
            self._signer.lookup = self.lookup
            self._make_signer = None
        return self._signer

    @classmethod
    def from_credentials(cls, creds: Credentials, *, token_file: str | None = None,
                         limits: Limits | None = None, issuer: str | None = None,
                         audiences: tuple[str, ...] = ()) -> AuthConfig:
        tokens = {creds.admin_token: rbac.UserInfo(name=ADMIN_USER, groups=(rbac.MASTERS,)),
                  creds.kubelet_client_token(): rbac.UserInfo(name=rbac.KUBELET_API_CLIENT)}
        if token_file:
            for token, user in parse_token_file(Path(token_file).read_text()).items():
                tokens.setdefault(token, user)
        authenticator = Authenticator(tokens=tokens, sa_key=creds.sa_key, issuer=issuer or ISSUER,
                                      audiences=audiences)
        return cls(authenticator=authenticator, limits=limits, credentials=creds)

    def authorize(self, attrs: rbac.Attributes) -> rbac.Decision:
        if not self.secure:  # AlwaysAllow: what the server itself does with every request
            return rbac.Decision(True, "")
        if rbac.MASTERS in attrs.user.groups:
            return rbac.Decision(True, "allowed: system:masters")
        return self.cache.policy.authorize(attrs)

    def allowed(self, user: rbac.UserInfo, verb: str, *, group: str = "", resource: str = "",
                subresource: str = "", namespace: str = "", name: str = "") -> bool:
        return self.authorize(rbac.Attributes(user=user, verb=verb, api_group=group, resource=resource,
                                              subresource=subresource, namespace=namespace,
                                              name=name)).allowed


AUTH = web.AppKey("auth", AuthConfig)


def controller_token(config: AuthConfig, identity: str) -> str:
    """A token for a built-in component: `kube-controller-manager`, `kube-scheduler`, or a
    controller name of controllers/registry.py (its ServiceAccount in kube-system)."""
    assert config.authenticator is not None
    if identity in ("kube-controller-manager", "kube-scheduler"):
        from cp import certs

        token = certs.random_token()
        config.authenticator.add_token(token, rbac.UserInfo(name=f"system:{identity}"))
        return token
    account = rbac.CONTROLLER_ACCOUNTS.get(identity, f"{identity}-controller")
    return config.authenticator.mint("kube-system", account)
