"""The web UI's browser login, as the authentication step sees it (issue #26, `api.ui.login`).

A browser cannot send a kubeconfig's bearer token; after `/ui/login` it sends the token in the
HttpOnly cookie `cplane-token` instead. The chain takes that cookie as the bearer token of a request
with no `Authorization` header and no client certificate; such a request with a method other than
GET, HEAD or OPTIONS (or a connection upgrade) must carry the header `X-Cplane-UI: 1` (which a form or
link of another site cannot send), and one whose `Origin` names another origin is refused, else 403. The UI's files under `/ui/` are served to any authenticated user without an
RBAC rule, as discovery is; its login and logout to anyone.
"""

from __future__ import annotations

COOKIE = "cplane-token"
HEADER = "X-Cplane-UI"  # its value must be "1"
LOGIN = "/ui/login"
LOGOUT = "/ui/logout"
OPEN_PATHS = frozenset({LOGIN, LOGOUT})  # reachable without credentials; never authenticated by the cookie
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def ui_path(path: str) -> bool:
    """A path of the web UI: any authenticated user may read it, with no RBAC rule (what the page
    shows is read with the user's own permissions)."""
    return path == "/ui" or path.startswith("/ui/")


def token_of(cookie_header: str) -> str | None:
    """The `cplane-token` cookie of a `Cookie` header, parsed by hand: one malformed cookie of another
    application on the same host must not hide it."""
    for part in cookie_header.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name == COOKIE and value:
            return value.strip('"')
    return None


def cookie_value(token: str) -> bool:
    """Whether a token can be a cookie value as it is (RFC 6265 cookie-octets)."""
    return bool(token) and all(0x21 <= ord(c) <= 0x7E and c not in '",;\\' for c in token)


def forged(*, method: str, header: str | None, origin: str | None, own_origin: str, upgrade: bool) -> bool:
    """A cookie-authenticated request that may come from another site's page: sent from another origin
    (browsers name it in `Origin` with every POST, CORS request and WebSocket handshake; `null` for
    opaque ones), or acting without `X-Cplane-UI: 1` — a method other than GET, HEAD or OPTIONS, or a
    connection upgrade (a WebSocket exec or attach is a GET that acts, and the page never opens one)."""
    if origin is not None and origin != own_origin:
        return True
    return (upgrade or method not in SAFE_METHODS) and header != "1"
