"""The web UI's files under `/ui/` (api/ui): media types, revalidation, 404s, no way out of static/."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import yarl

import api.ui
from api import server as servers


@pytest.fixture
def static(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A static/ of files of each kind the page uses, with a link leading out of it."""
    root = tmp_path / "static"
    (root / "img").mkdir(parents=True)
    (root / "index.html").write_text("<!doctype html><title>t</title>")
    (root / "app.js").write_text("export const x = 1;\n")
    (root / "style.css").write_text("body{}\n")
    (root / "img" / "logo.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    (root / "img" / "shot.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (root / "notes.py").write_text("print('not served')\n")
    (root / ".hidden.js").write_text("1")
    (tmp_path / "secret.js").write_text("secret")
    (root / "escape.js").symlink_to(tmp_path / "secret.js")
    (root / "out").symlink_to(tmp_path)
    (root / "inside.js").symlink_to(root / "app.js")
    monkeypatch.setattr(api.ui, "STATIC", root.resolve())
    return root


@pytest.fixture
async def ui(tmp_path: Path) -> AsyncIterator[aiohttp.ClientSession]:
    async with servers.running(data_dir=tmp_path / "data") as srv, \
            aiohttp.ClientSession(base_url=srv.url) as session:
        yield session


async def test_the_packaged_page_is_served(ui: aiohttp.ClientSession) -> None:
    async with ui.get("/ui", allow_redirects=False) as r:
        assert r.status == 301 and r.headers["Location"] == "/ui/"
    async with ui.get("/ui?rv=5", allow_redirects=False) as r:
        assert r.headers["Location"] == "/ui/?rv=5"
    async with ui.get("/ui/") as r:
        assert r.status == 200
        assert r.headers["Content-Type"] == "text/html; charset=utf-8"
        assert (await r.read()) == (api.ui.STATIC / "index.html").read_bytes()
    async with ui.get("/ui/index.html") as r:
        assert r.status == 200


@pytest.mark.parametrize(("path", "media_type"), [
    ("/ui/", "text/html; charset=utf-8"),
    ("/ui/app.js", "text/javascript; charset=utf-8"),
    ("/ui/style.css", "text/css; charset=utf-8"),
    ("/ui/img/logo.svg", "image/svg+xml"),
    ("/ui/img/shot.png", "image/png"),
    ("/ui/inside.js", "text/javascript; charset=utf-8"),  # a link that stays inside static/
])
async def test_media_types_and_revalidation(static: Path, ui: aiohttp.ClientSession, path: str,
                                            media_type: str) -> None:
    async with ui.get(path) as r:
        assert r.status == 200
        assert r.headers["Content-Type"] == media_type
        assert r.headers["Cache-Control"] == "no-cache"
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        etag = r.headers["ETag"]
        body = await r.read()
    name = path.removeprefix("/ui/") or "index.html"
    assert body == (static / name).read_bytes()
    async with ui.get(path, headers={"If-None-Match": etag}) as r:
        assert r.status == 304
        assert r.headers["ETag"] == etag
        assert await r.read() == b""
    async with ui.get(path, headers={"If-None-Match": f'"other", W/{etag}'}) as r:
        assert r.status == 304
    async with ui.get(path, headers={"If-None-Match": '"other"'}) as r:
        assert r.status == 200
    async with ui.head(path) as r:
        assert r.status == 200 and r.headers["ETag"] == etag


async def test_a_changed_file_gets_a_new_etag(static: Path, ui: aiohttp.ClientSession) -> None:
    async with ui.get("/ui/app.js") as r:
        etag = r.headers["ETag"]
    (static / "app.js").write_text("export const x = 2; // changed\n")
    async with ui.get("/ui/app.js", headers={"If-None-Match": etag}) as r:
        assert r.status == 200
        assert r.headers["ETag"] != etag
        assert "changed" in await r.text()


@pytest.mark.parametrize("raw", [
    "/ui/missing.js", "/ui/img/", "/ui/img", "/ui/notes.py", "/ui/.hidden.js", "/ui/escape.js",
    "/ui/out/secret.js", "/ui/img/../../secret.js", "/ui/%2e%2e/secret.js",
    "/ui/img%2f..%2f..%2fsecret.js", "/ui//etc/passwd", "/ui/%2fetc%2fpasswd", "/ui/img\\..\\app.js",
    "/ui/app.js%00.png",
])
async def test_not_found_and_no_way_out(static: Path, ui: aiohttp.ClientSession, raw: str) -> None:
    async with ui.get(yarl.URL(raw, encoded=True)) as r:
        assert r.status == 404, raw
        status = await r.json()
        assert status["kind"] == "Status" and status["reason"] == "NotFound"
        assert "secret" not in status["message"]


async def test_only_reads(static: Path, ui: aiohttp.ClientSession) -> None:
    async with ui.post("/ui/app.js") as r:
        assert r.status == 405
        assert (await r.json())["reason"] == "MethodNotAllowed"


def test_resolve_stays_inside(static: Path) -> None:
    root = static.resolve()
    assert api.ui.resolve("", root=root) == root / "index.html"
    assert api.ui.resolve("img/logo.svg", root=root) == root / "img" / "logo.svg"
    for bad in ("/etc/passwd", "..", "img/../../secret.js", "escape.js", "out/secret.js", "a\x00b.js", ".hidden.js"):
        with pytest.raises(Exception, match="could not find"):
            api.ui.resolve(bad, root=root)
