"""The browser login of the web UI: a bearer token kept in an HttpOnly cookie.

A browser cannot send the kubeconfig's bearer token, so `GET /ui/login` serves a small form asking
for it (or reads it from the URL fragment, `/ui/login#token=...`, which never reaches a server), and
`POST /ui/login` (form field `token`, optional `next`) checks it with the server's authenticator:
a bad token gets the form again with 401; a good one gets `Set-Cookie: cplane-token=...; HttpOnly;
Secure; SameSite=Strict; Path=/` and a 303 to `/ui/` (or to `next`, when that is a path under
`/ui/`). `POST /ui/logout` clears the cookie. Both may be reached without credentials; a login
posted from another origin (its `Origin` header names another server, or is `null`) is refused with
403; the form's page has `Referrer-Policy: same-origin`, as under `no-referrer` browsers post it with
`Origin: null`.

The authentication step (`api.auth.chain`, `api.auth.cookies`) then takes the cookie as the bearer token of a request
that has no `Authorization` header and no client certificate; such a request with a method other
than GET, HEAD or OPTIONS must carry `X-Cplane-UI: 1` (the page's fetch wrapper sends it; a form of
another site cannot), else 403 — with SameSite=Strict, the guard against cross-site request forgery.
Without authentication (`--insecure`) there is nothing to log in to: both redirect to `/ui/`.
"""

from __future__ import annotations

import html
import urllib.parse
from typing import Any

from aiohttp import web

from api import codec
from api.auth.cookies import COOKIE, LOGIN, LOGOUT, cookie_value
from cp import errors

_COOKIE_ATTRS = "HttpOnly; Secure; SameSite=Strict; Path=/"

# Reads `#token=...` from the URL, removes it from the address bar and history, and posts the form.
_SCRIPT = """\
const m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
if (m) {
  history.replaceState(null, "", location.pathname + location.search);
  const form = document.getElementById("login");
  form.elements.token.value = decodeURIComponent(m[1]);
  form.submit();
}
"""
_STYLE = """\
body{font:15px/1.4 system-ui,sans-serif;margin:0;display:grid;place-items:center;min-height:100vh;background:#f4f5f7}
form{background:#fff;padding:24px 28px;border-radius:8px;box-shadow:0 1px 4px #0002;width:min(440px,90vw)}
h1{font-size:18px;margin:0 0 12px}p{margin:0 0 12px;color:#444}.error{color:#b00020}
input[type=password]{width:100%;box-sizing:border-box;padding:8px;font:13px monospace;margin:0 0 12px}
button{padding:8px 16px}code{font-size:13px}
"""


def _csp() -> str:
    import base64
    import hashlib

    digest = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
            "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def safe_next(value: str | None) -> str:
    """Where to go after the login: a path under `/ui/` of this server, else `/ui/`."""
    if not value or not value.startswith("/ui/") or "\\" in value or any(ord(c) < 0x21 for c in value):
        return "/ui/"
    parsed = urllib.parse.urlsplit(value)
    if parsed.scheme or parsed.netloc or ".." in parsed.path.split("/"):
        return "/ui/"
    return value


def page(*, next_path: str = "/ui/", error: str = "") -> str:
    """The login form (self-contained: no file, no other request)."""
    message = f'<p class="error" role="alert">{html.escape(error)}</p>' if error else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>cplane: log in</title><style>{_STYLE}</style></head>
<body><form id="login" method="post" action="{LOGIN}">
<h1>cplane</h1>
<p>Log in with a bearer token: the <code>token</code> of your kubeconfig's user
(<code>kubectl config view --raw -o jsonpath='{{.users[0].user.token}}'</code>).</p>
{message}<input type="password" name="token" aria-label="bearer token" autocomplete="off" required autofocus>
<input type="hidden" name="next" value="{html.escape(next_path)}">
<button type="submit">Log in</button>
</form><script>{_SCRIPT}</script></body></html>
"""


def _html(text: str, *, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html", charset="utf-8",
                        headers={"Cache-Control": "no-store", "Content-Security-Policy": _csp(),
                                 "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin"})


def _redirect(location: str, *, status: int = 303, cookie: str | None = None) -> web.Response:
    headers = {"Location": location, "Cache-Control": "no-store"}
    if cookie is not None:
        headers["Set-Cookie"] = cookie
    return web.Response(status=status, headers=headers)


def _auth(request: web.Request) -> Any:
    """The server's AuthConfig when it authenticates, else None."""
    from api.auth.config import AUTH

    config = request.app.get(AUTH)
    return config if config is not None and config.secure else None


def _same_origin(request: web.Request) -> bool:
    origin = request.headers.get("Origin")
    if origin is None or origin == "null":
        return origin is None
    return origin == f"{request.scheme}://{request.host}"


async def login_page(request: web.Request) -> web.StreamResponse:
    if request.method not in ("GET", "HEAD"):
        return await login(request)
    next_path = safe_next(request.query.get("next"))
    if _auth(request) is None:
        return _redirect(next_path, status=302)
    return _html(page(next_path=next_path))


async def login(request: web.Request) -> web.StreamResponse:
    if request.method != "POST":
        raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
    config = _auth(request)
    if not _same_origin(request):
        raise errors.Forbidden("a login may only be posted from this server's own page")
    form = urllib.parse.parse_qs((await codec.read_body(request)).decode("utf-8", "replace"))
    next_path = safe_next((form.get("next") or [request.query.get("next", "")])[0])
    if config is None:
        return _redirect(next_path)
    token = (form.get("token") or [""])[0].strip()
    if not token:
        return _html(page(next_path=next_path, error="Enter a token."), status=401)
    if not cookie_value(token):
        return _html(page(next_path=next_path, error="This token cannot be kept in a browser cookie; use kubectl."),
                     status=401)
    user = (await config.authenticator.review(token)).user
    if user is None:
        return _html(page(next_path=next_path, error="The token was not accepted."), status=401)
    return _redirect(next_path, cookie=f"{COOKIE}={token}; {_COOKIE_ATTRS}")


async def logout(request: web.Request) -> web.StreamResponse:
    if request.method != "POST":
        raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
    location = LOGIN if _auth(request) is not None else "/ui/"
    return _redirect(location, cookie=f"{COOKIE}=; Max-Age=0; {_COOKIE_ATTRS}")


def routes() -> list[web.RouteDef]:
    return [web.route("*", LOGIN, login_page), web.route("*", LOGOUT, logout)]
