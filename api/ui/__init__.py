"""The web UI (issue #26): its files under `/ui/`, served by the API server on its own port.

`GET /ui` redirects to `/ui/`; `GET /ui/` is `static/index.html`; `GET /ui/{path}` is that file of
`static/` with its media type, `Cache-Control: no-cache` and an `ETag` (a matching `If-None-Match`
is answered 304). Anything else is a 404 Status: paths with `..`, absolute paths, hidden files, and
symbolic links that lead out of `static/`.

Authentication (`api.auth.chain`): with it on, the files are served to any authenticated user, as
discovery is, without an RBAC rule; unauthenticated requests get 401 — except the browser login
(`api.ui.login`: `/ui/login`, `/ui/logout`), which everyone may reach. A browser authenticates with
the `cplane-token` cookie the login sets; what the page then reads goes through the user's own RBAC.

Nothing here is read at start-up: a file is read (and its ETag computed) on its first request.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from aiohttp import web

from api import openapi
from cp import errors

STATIC = Path(__file__).resolve().parent / "static"
PREFIX = "/ui/"
# The media types the page's files are served with (text ones in UTF-8); others are refused (404).
MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
    ".woff2": "font/woff2",
}
# Headers on every file: revalidate each time (the page changes with the server), never sniffed,
# never framed, no Referer to other sites (URLs carry revisions and object names; `same-origin`, not
# `no-referrer`, which would make browsers send `Origin: null` with the page's own POSTs).
_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "frame-ancestors 'none'", "Referrer-Policy": "same-origin"}

# path -> (mtime_ns, size, etag, body): files read once, again when they change on disk
_files: dict[Path, tuple[int, int, str, bytes]] = {}


def address(server_url: str, *, secure: bool) -> str:
    """The UI's URL on a server, as `cplane serve` and `cplane replay` print it: its login page when the
    server authenticates."""
    return server_url.rstrip("/") + ("/ui/login" if secure else PREFIX)


def _not_found() -> errors.NotFound:
    return errors.NotFound("the server could not find the requested resource")


def resolve(relative: str, *, root: Path) -> Path:
    """The file of `root` that `relative` (the URL path after `/ui/`) names; NotFound for anything
    that is not a regular file inside `root` once links are followed."""
    if not relative or relative.endswith("/"):
        relative += "index.html"
    parts = relative.split("/")
    if relative.startswith("/") or "\\" in relative or "\x00" in relative or any(
            p in ("", ".", "..") or p.startswith(".") for p in parts):
        raise _not_found()
    try:
        full = root.joinpath(*parts).resolve(strict=True)
    except (OSError, RuntimeError):  # missing, a loop of links, a name too long
        raise _not_found() from None
    if not full.is_relative_to(root) or not full.is_file() or full.suffix not in MEDIA_TYPES:
        raise _not_found()
    return full


def _read(full: Path) -> tuple[str, bytes]:
    try:
        stat = full.stat()
        known = _files.get(full)
        if known is not None and known[:2] == (stat.st_mtime_ns, stat.st_size):
            return known[2], known[3]
        body = full.read_bytes()
    except OSError:
        raise _not_found() from None
    etag = hashlib.sha256(body).hexdigest()[:32]
    _files[full] = (stat.st_mtime_ns, stat.st_size, etag, body)
    return etag, body


async def _redirect(request: web.Request) -> web.StreamResponse:
    location = PREFIX + (f"?{request.query_string}" if request.query_string else "")
    return web.Response(status=301, headers={"Location": location})


async def serve_file(request: web.Request) -> web.StreamResponse:
    if request.method not in ("GET", "HEAD"):
        raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
    full = resolve(request.match_info.get("path", ""), root=STATIC)
    etag, body = _read(full)
    headers = {**_HEADERS, "ETag": f'"{etag}"'}
    if openapi.not_modified(request, etag=etag, last_modified=None):
        return web.Response(status=304, headers=headers)
    headers["Content-Type"] = MEDIA_TYPES[full.suffix]
    return web.Response(body=body, headers=headers)


def routes() -> list[web.RouteDef]:
    """Registered by `api.app.make_app` ahead of the catch-all 404."""
    from api.ui import login

    return [web.get("/ui", _redirect), *login.routes(),
            web.route("*", PREFIX + "{path:.*}", serve_file)]
