"""The web UI with authentication on: 401 without credentials, the browser login (a token kept in an
HttpOnly cookie), the cookie as a bearer token, the X-Cplane-UI header on its writes, logout."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from api import server as servers
from api.auth import cookies
from api.ui import login
from tests.api.security.conftest import Secure, secure_server

NS = "/api/v1/namespaces"


@pytest.fixture
async def secure(tmp_path: Path) -> AsyncIterator[Secure]:
    async with secure_server(tmp_path) as s:
        yield s


def browser(s: Secure, *, token: str | None = None, headers: dict[str, str] | None = None) -> aiohttp.ClientSession:
    """A session with no Authorization header: a browser, holding the UI's cookie when `token` is given."""
    h = dict(headers or {})
    if token is not None:
        h["Cookie"] = f"other=1; {cookies.COOKIE}={token}; theme=dark"
    return s.session(headers=h)


async def test_unauthenticated_gets_401_but_the_login_page(secure: Secure) -> None:
    anonymous = secure.session()
    for path in ("/ui/", "/ui/index.html", "/ui"):
        async with anonymous.get(path, allow_redirects=False) as r:
            assert r.status == 401, path
            assert (await r.json())["reason"] == "Unauthorized"
    async with anonymous.get("/ui/login") as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/html")
        assert r.headers["Cache-Control"] == "no-store"
        assert "script-src 'sha256-" in r.headers["Content-Security-Policy"]
        # Origin: null would be sent with the form under no-referrer (and refused)
        assert r.headers["Referrer-Policy"] == "same-origin"
        page = await r.text()
        assert 'name="token"' in page and 'action="/ui/login"' in page and "#" not in r.url.path
    async with browser(secure, token="not-a-token").get("/ui/") as r:
        assert r.status == 401  # a cookie that is not a valid token: no credentials


async def test_any_authenticated_user_gets_the_page(secure: Secure) -> None:
    # alice has no binding but the defaults every authenticated user gets
    async with secure.session("alice").get("/ui/") as r:
        assert r.status == 200
        assert r.headers["Content-Type"] == "text/html; charset=utf-8"
    async with secure.session("alice").get("/api/v1/nodes") as r:
        assert r.status == 403  # the page is not a way around RBAC


async def test_bad_token_is_refused(secure: Secure) -> None:
    anonymous = secure.session()
    for token in ("wrong-token", "", "has space", "a;b"):
        async with anonymous.post("/ui/login", data={"token": token}, allow_redirects=False) as r:
            assert r.status == 401, token
            assert "Set-Cookie" not in r.headers
            assert r.headers["Content-Type"].startswith("text/html")
            assert 'role="alert"' in await r.text()


async def test_login_sets_the_cookie_that_authenticates(secure: Secure) -> None:
    token = secure.tokens["alice"]
    anonymous = secure.session()
    async with anonymous.post("/ui/login", data={"token": token}, allow_redirects=False) as r:
        assert r.status == 303
        assert r.headers["Location"] == "/ui/"
        cookie = r.headers["Set-Cookie"]
    attrs = [a.strip() for a in cookie.split(";")]
    assert attrs[0] == f"{cookies.COOKIE}={token}"
    assert set(attrs[1:]) == {"HttpOnly", "Secure", "SameSite=Strict", "Path=/"}
    async with browser(secure, token=token).get("/ui/") as r:
        assert r.status == 200
    async with browser(secure, token=token).post(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews", headers={cookies.HEADER: "1"},
            json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}) as r:
        assert r.status == 201, await r.text()
        assert (await r.json())["status"]["userInfo"]["username"] == "alice"


@pytest.mark.parametrize(("next_path", "location"), [
    ("/ui/?rv=7&node=n1", "/ui/?rv=7&node=n1"),
    ("/ui/index.html", "/ui/index.html"),
    ("https://evil.example/ui/", "/ui/"),
    ("//evil.example/ui/", "/ui/"),
    ("/api/v1/secrets", "/ui/"),
    ("/ui/../api/v1", "/ui/"),
    ("/ui/\\evil", "/ui/"),
])
async def test_next_goes_only_to_the_ui(secure: Secure, next_path: str, location: str) -> None:
    anonymous = secure.session()
    async with anonymous.post("/ui/login", params={"next": next_path}, data={"token": secure.tokens["bob"]},
                              allow_redirects=False) as r:
        assert r.status == 303 and r.headers["Location"] == location
    async with anonymous.post("/ui/login", data={"token": secure.tokens["bob"], "next": next_path},
                              allow_redirects=False) as r:
        assert r.status == 303 and r.headers["Location"] == location
    async with anonymous.get("/ui/login", params={"next": next_path}) as r:
        assert f'name="next" value="{location.replace("&", "&amp;")}"' in await r.text()


async def test_a_login_from_another_origin_is_refused(secure: Secure) -> None:
    async with secure.session().post("/ui/login", data={"token": secure.tokens["alice"]},
                                     headers={"Origin": "https://evil.example"}, allow_redirects=False) as r:
        assert r.status == 403
        assert "Set-Cookie" not in r.headers
    async with secure.session().post("/ui/login", data={"token": secure.tokens["alice"]},
                                     headers={"Origin": "null"}, allow_redirects=False) as r:
        assert r.status == 403  # a sandboxed frame or data: page of another site
    async with secure.session().post("/ui/login", data={"token": secure.tokens["alice"]},
                                     headers={"Origin": secure.url}, allow_redirects=False) as r:
        assert r.status == 303


async def test_cookie_writes_need_the_ui_header(secure: Secure) -> None:
    admin = secure.tokens["admin"]
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "from-ui"}}
    async with browser(secure, token=admin).post(NS, json=body) as r:
        assert r.status == 403
        status = await r.json()
        assert status["reason"] == "Forbidden" and cookies.HEADER in status["message"]
    async with browser(secure, token=admin, headers={cookies.HEADER: "yes"}).post(NS, json=body) as r:
        assert r.status == 403
    async with browser(secure, token=admin, headers={cookies.HEADER: "1"}).post(NS, json=body) as r:
        assert r.status == 201, await r.text()
    async with browser(secure, token=admin).delete(f"{NS}/from-ui") as r:
        assert r.status == 403
    async with browser(secure, token=admin).get(f"{NS}/from-ui") as r:
        assert r.status == 200  # reads need no header
    # a bearer token is no cookie: no header needed
    async with secure.session("admin").delete(f"{NS}/from-ui") as r:
        assert r.status == 200


async def test_cookie_requests_from_another_origin_are_refused(secure: Secure) -> None:
    admin = secure.tokens["admin"]
    ui = {cookies.HEADER: "1"}
    for origin in ("https://127.0.0.1:1", "null", "https://evil.example"):
        async with browser(secure, token=admin, headers={**ui, "Origin": origin}).get(f"{NS}/default") as r:
            assert r.status == 403, origin
    async with browser(secure, token=admin, headers={**ui, "Origin": secure.url}).get(f"{NS}/default") as r:
        assert r.status == 200
    # a WebSocket handshake (exec, attach) acts with a GET: it needs the header, which browsers cannot set
    upgrade = {"Connection": "Upgrade", "Upgrade": "websocket", "Origin": secure.url}
    async with browser(secure, token=admin, headers=upgrade).get(f"{NS}/default") as r:
        assert r.status == 403
    # bearer tokens are not the browser's: no such rule
    async with secure.session("admin", headers={"Origin": "https://evil.example"}).get(f"{NS}/default") as r:
        assert r.status == 200


async def test_the_header_wins_over_the_cookie(secure: Secure) -> None:
    # an Authorization header (even a bad one) is used alone: the cookie is not looked at
    s = browser(secure, token=secure.tokens["admin"], headers={"Authorization": "Bearer wrong"})
    async with s.get("/ui/") as r:
        assert r.status == 401
    s = browser(secure, token=secure.tokens["admin"], headers={"Authorization": f"Bearer {secure.tokens['alice']}"})
    async with s.get("/api/v1/nodes") as r:
        assert r.status == 403  # alice, not the admin of the cookie


async def test_logout_clears_the_cookie(secure: Secure) -> None:
    s = browser(secure, token=secure.tokens["alice"])
    async with s.post("/ui/logout", allow_redirects=False) as r:
        assert r.status == 303
        assert r.headers["Location"] == "/ui/login"
        attrs = [a.strip() for a in r.headers["Set-Cookie"].split(";")]
        assert attrs[0] == f"{cookies.COOKIE}=" and "Max-Age=0" in attrs and "HttpOnly" in attrs
    async with secure.session().post("/ui/logout", allow_redirects=False) as r:
        assert r.status == 303  # also without credentials
    async with secure.session().get("/ui/logout") as r:
        assert r.status == 405


def test_token_of_a_cookie_header() -> None:
    assert cookies.token_of("a=1; cplane-token=abc.def-ghi; b") == "abc.def-ghi"
    assert cookies.token_of('cplane-token="q"') == "q"
    assert cookies.token_of("cplane-tokenx=1; x=cplane-token") is None
    assert cookies.token_of("") is None
    assert login.safe_next("/ui/a?b=c#d") == "/ui/a?b=c#d"
    assert login.safe_next("/uix") == "/ui/"


async def test_insecure_has_no_login(tmp_path: Path) -> None:
    async with servers.running(data_dir=tmp_path / "data") as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:
        async with http.get("/ui/login", params={"next": "/ui/?rv=3"}, allow_redirects=False) as r:
            assert r.status == 302 and r.headers["Location"] == "/ui/?rv=3"
        async with http.post("/ui/login", data={"token": "x"}, allow_redirects=False) as r:
            assert r.status == 303 and r.headers["Location"] == "/ui/"
            assert "Set-Cookie" not in r.headers
        async with http.get("/ui/") as r:
            assert r.status == 200
        async with http.post(NS, json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}) as r:
            assert r.status == 201  # no cookie, no authentication: nothing to forge
