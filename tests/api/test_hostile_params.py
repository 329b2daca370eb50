"""Hostile request parameters get a 4xx Status in upstream's words, and none reaches the database
(issue #17): integers beyond int64, resourceVersions beyond uint64 or not in Go's syntax, continue
tokens that do not decode as upstream's, field managers `ValidateFieldManager` rejects, and the
resourceVersions inside bodies (update preconditions, DeleteOptions).

What reaches storage runs on SQLite and PostgreSQL (`backend`): a revision or a limit beyond the
database's 64-bit integers must never be bound to SQL. The parsing itself is tests/cp/test_options.py.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import reads
from api import server as servers
from tests.storage import conftest as storage_fixtures

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
INT64_MAX = (1 << 63) - 1
BEYOND_INT64 = str(1 << 63)  # a valid uint64 resourceVersion, but no int64
BEYOND_UINT64 = str(1 << 64)


class Backend:
    """A running server on one database and a client for it."""

    def __init__(self, srv: servers.Running, http: aiohttp.ClientSession) -> None:
        self.srv = srv
        self.http = http

    @property
    def revision(self) -> int:
        return self.srv.event_log.revision


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    """A server on SQLite, or on a fresh PostgreSQL schema (required under CPLANE_REQUIRE_PG=1, as CI)."""
    async with contextlib.AsyncExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite+aiosqlite:///{tmp_path / 'cplane.db'}"
        else:
            url = await stack.enter_async_context(storage_fixtures.fresh_pg_url())
        srv = await stack.enter_async_context(servers.running(data_dir=tmp_path / "data", db_url=url))
        http = await stack.enter_async_context(aiohttp.ClientSession(base_url=srv.url))
        yield Backend(srv, http)


def _status(code: int, reason: str, message: str, **more: Any) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code, **more}


def _bad(message: str) -> dict[str, Any]:
    return _status(400, "BadRequest", message)


async def _call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None, *,
                ctype: str = "application/json", **params: str) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    async with http.request(method, path, params=params, data=data, headers={"Content-Type": ctype}) as r:
        return r.status, json.loads(await r.read())


async def _configmaps(http: aiohttp.ClientSession, *names: str) -> None:
    for name in names:
        code, body = await _call(http, "POST", CONFIGMAPS, {"metadata": {"name": name}})
        assert code == 201, body


def _token(**fields: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(fields).encode()).decode().rstrip("=")


# -------------------------------------------------------------------------------- beyond int64, on both databases


async def test_an_exact_list_beyond_int64_is_too_large(backend: Backend) -> None:
    """A resourceVersion that is a uint64 but no int64 can only be in the future: 504 "Too large
    resource version" at once, as for any exact LIST ahead of the log; beyond uint64 it is no
    resourceVersion at all (400)."""
    await _configmaps(backend.http, "a")
    current = backend.revision
    for rv in (BEYOND_INT64, str((1 << 64) - 1)):
        async with backend.http.get(CONFIGMAPS, params={"resourceVersion": rv, "resourceVersionMatch": "Exact"}) as r:
            assert r.status == 504 and r.headers["Retry-After"] == "1"
            assert await r.json() == _status(504, "Timeout", f"Too large resource version: {rv}, current: {current}",
                                                 details={})  # NewTimeoutError always sets details
    code, body = await _call(backend.http, "GET", CONFIGMAPS, resourceVersion=BEYOND_UINT64,
                             resourceVersionMatch="Exact")
    assert (code, body) == (400, _bad(
        f'invalid resource version: resourceVersion: Invalid value: "{BEYOND_UINT64}": '
        f'strconv.ParseUint: parsing "{BEYOND_UINT64}": value out of range'))


async def test_a_get_beyond_int64_waits_then_is_too_large(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reads, "FUTURE_RV_WAIT", 0.05)
    await _configmaps(backend.http, "a")
    current = backend.revision
    for path in (f"{CONFIGMAPS}/a", CONFIGMAPS):
        code, body = await _call(backend.http, "GET", path, resourceVersion=BEYOND_INT64)
        assert (code, body) == (504, _status(
            504, "Timeout", f"Too large resource version: {BEYOND_INT64}, current: {current}",
            details={"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                     "retryAfterSeconds": 1}))


async def test_a_limit_is_an_int64(backend: Backend) -> None:
    """limit beyond int64: 400 in strconv's words. The largest int64 is a limit like any other: the
    whole list, at the latest revision or exactly at one."""
    await _configmaps(backend.http, "a", "b")
    code, body = await _call(backend.http, "GET", CONFIGMAPS, limit=BEYOND_INT64)
    assert (code, body) == (400, _bad(f'strconv.ParseInt: parsing "{BEYOND_INT64}": value out of range'))
    at = str(backend.revision)
    for params in ({"limit": str(INT64_MAX)},
                   {"limit": str(INT64_MAX), "resourceVersion": at, "resourceVersionMatch": "Exact"}):
        code, body = await _call(backend.http, "GET", CONFIGMAPS, **params)
        assert code == 200, body
        assert [item["metadata"]["name"] for item in body["items"]] == ["a", "b"]
        assert body["metadata"] == {"resourceVersion": at}


async def test_continue_tokens_decode_as_upstream(backend: Backend) -> None:
    """A token's rv is an int64 (beyond it, a fraction or a string is a bad token), non-zero, with the
    meta.k8s.io/v1 version and a start key; a negative rv continues at the latest revision."""
    await _configmaps(backend.http, "a", "b", "c")
    good = {"v": "meta.k8s.io/v1", "rv": backend.revision, "start": "default/a"}
    for bad in ({**good, "rv": 1 << 63}, {**good, "rv": -(1 << 63) - 1}, {**good, "rv": 0}, {**good, "rv": "5"},
                {**good, "rv": 5.0}, {**good, "v": "meta.k8s.io/v2"}, {**good, "start": ""},
                {"v": "meta.k8s.io/v1", "start": "default/a"}, [good]):
        token = _token(**bad) if isinstance(bad, dict) else base64.urlsafe_b64encode(json.dumps(bad).encode()).decode()
        code, body = await _call(backend.http, "GET", CONFIGMAPS, limit="1", **{"continue": token})
        assert (code, body) == (400, _bad(f'invalid continue token: "{token}"')), bad
    code, body = await _call(backend.http, "GET", CONFIGMAPS, limit="1", **{"continue": _token(**good)})
    assert code == 200 and [item["metadata"]["name"] for item in body["items"]] == ["b"]
    await _configmaps(backend.http, "d")
    code, body = await _call(backend.http, "GET", CONFIGMAPS, **{"continue": _token(**{**good, "rv": -1})})
    assert code == 200 and [item["metadata"]["name"] for item in body["items"]] == ["b", "c", "d"]
    assert body["metadata"]["resourceVersion"] == str(backend.revision)


async def test_watches_and_deletes_take_int64_and_uint64_only(backend: Backend) -> None:
    """A watch from a uint64 beyond int64 opens (nothing can come after it); timeoutSeconds and
    gracePeriodSeconds beyond int64 are 400s, in the query and in a DeleteOptions body."""
    await _configmaps(backend.http, "a")
    async with backend.http.get(CONFIGMAPS, params={"watch": "1", "resourceVersion": BEYOND_INT64}) as r:
        assert r.status == 200 and r.headers["Content-Type"].startswith("application/json")
    for params in ({"watch": "1", "timeoutSeconds": BEYOND_INT64}, {"watch": "1", "resourceVersion": BEYOND_UINT64}):
        code, _ = await _call(backend.http, "GET", CONFIGMAPS, **params)
        assert code == 400, params
    code, body = await _call(backend.http, "DELETE", f"{CONFIGMAPS}/a", gracePeriodSeconds=BEYOND_INT64)
    assert (code, body) == (400, _bad(f'strconv.ParseInt: parsing "{BEYOND_INT64}": value out of range'))
    code, body = await _call(backend.http, "DELETE", f"{CONFIGMAPS}/a", {"gracePeriodSeconds": 1 << 63})
    assert (code, body) == (400, _bad(f"invalid DeleteOptions: json: cannot unmarshal number {1 << 63} into Go "
                                      "struct field DeleteOptions.gracePeriodSeconds of type int64"))
    code, _ = await _call(backend.http, "GET", f"{CONFIGMAPS}/a")
    assert code == 200


async def test_a_grace_period_of_centuries_deletes_gracefully(backend: Backend) -> None:
    """Any int64 grace period is kept as given; the deletion time stops where Go's time.Duration does
    (upstream's arithmetic wraps around there), about 290 years on, instead of failing."""
    code, body = await _call(backend.http, "POST", PODS, {
        "metadata": {"name": "p"}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]}})
    assert code == 201, body
    code, body = await _call(backend.http, "DELETE", f"{PODS}/p", {"gracePeriodSeconds": INT64_MAX})
    assert code == 200, body
    meta = body["metadata"]
    assert meta["deletionGracePeriodSeconds"] == INT64_MAX
    created = int(meta["creationTimestamp"][:4])
    assert created + 290 <= int(meta["deletionTimestamp"][:4]) <= created + 293


async def test_why_at_beyond_the_log(backend: Backend) -> None:
    why = "/apis/sim.cplane.dev/v1alpha1/namespaces/default/pods/p/why"
    code, body = await _call(backend.http, "GET", why, at=str(INT64_MAX))
    assert (code, body["reason"]) == (504, "Timeout")
    code, body = await _call(backend.http, "GET", why, at=BEYOND_INT64)
    assert (code, body) == (400, _bad(f'strconv.ParseInt: parsing "{BEYOND_INT64}": value out of range'))


# -------------------------------------------------------------------------------- Go's syntax


@pytest.mark.parametrize("rv", [" 5", "5 ", "+5", "-1", "5_0", "\u0665", "0x5", "1e3", "abc"])
async def test_a_resource_version_is_a_go_uint64(http: aiohttp.ClientSession, rv: str) -> None:
    """Python's int() takes spaces, signs, underscores and other scripts' digits; Go's ParseUint none.
    A GET, a LIST and a watch all answer the storage's 400."""
    quoted = json.dumps(rv, ensure_ascii=False)
    message = (f"invalid resource version: resourceVersion: Invalid value: {quoted}: "
               f"strconv.ParseUint: parsing {quoted}: invalid syntax")
    await _configmaps(http, "a")
    for path, params in ((f"{CONFIGMAPS}/a", {}), (CONFIGMAPS, {}), (CONFIGMAPS, {"watch": "1"})):
        code, body = await _call(http, "GET", path, resourceVersion=rv, **params)
        assert (code, body) == (400, _bad(message)), path


async def test_resource_versions_with_leading_zeros_are_numbers(http: aiohttp.ClientSession) -> None:
    await _configmaps(http, "a")
    code, body = await _call(http, "GET", f"{CONFIGMAPS}/a")
    rv = body["metadata"]["resourceVersion"]
    code, listed = await _call(http, "GET", CONFIGMAPS, resourceVersion="0" + rv, resourceVersionMatch="Exact")
    assert code == 200 and listed["metadata"]["resourceVersion"] == rv
    code, updated = await _call(http, "PUT", f"{CONFIGMAPS}/a", {"metadata": {"name": "a", "resourceVersion": "0" + rv},
                                                                  "data": {"k": "v"}})
    assert code == 200 and updated["data"] == {"k": "v"}


@pytest.mark.parametrize(("name", "value", "error"), [
    ("limit", " 5", "invalid syntax"), ("limit", "", "invalid syntax"), ("limit", "1e3", "invalid syntax"),
    ("limit", "-9223372036854775809", "value out of range"), ("timeoutSeconds", "+\u0665", "invalid syntax"),
    ("gracePeriodSeconds", "1_0", "invalid syntax")])
async def test_integer_parameters_are_go_int64s(http: aiohttp.ClientSession, name: str, value: str,
                                                error: str) -> None:
    await _configmaps(http, "a")
    method, path, extra = {"limit": ("GET", CONFIGMAPS, {}), "timeoutSeconds": ("GET", CONFIGMAPS, {"watch": "1"}),
                           "gracePeriodSeconds": ("DELETE", f"{CONFIGMAPS}/a", {})}[name]
    code, body = await _call(http, method, path, **{name: value}, **extra)
    quoted = json.dumps(value, ensure_ascii=False)
    assert (code, body) == (400, _bad(f"strconv.ParseInt: parsing {quoted}: {error}"))
    code, _ = await _call(http, "GET", f"{CONFIGMAPS}/a")
    assert code == 200  # the failed delete deleted nothing


# -------------------------------------------------------------------------------- field managers


def _invalid_options(kind: str, *causes: tuple[str, str, str]) -> dict[str, Any]:
    texts = [f"{field}: {message}" for _, field, message in causes]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return _status(422, "Invalid", f'{kind}.meta.k8s.io "" is invalid: {joined}', details={
        "group": "meta.k8s.io", "kind": kind,  # the empty name is `omitempty`
        "causes": [{"reason": reason, "message": message, "field": field} for reason, field, message in causes]})


async def test_field_managers_are_validated_on_every_write(http: aiohttp.ClientSession) -> None:
    """CR/LF (any character Go does not print) and more than 128 bytes are invalid options (422), on
    create, update, patch and apply alike; nothing is written."""
    await _configmaps(http, "a")
    crlf = 'Invalid value: "a\\r\\nb": invalid character U+000{} (at position {})'
    writes: list[tuple[str, str, str, Any, str]] = [
        ("CreateOptions", "POST", CONFIGMAPS, {"metadata": {"name": "b"}}, "application/json"),
        ("UpdateOptions", "PUT", f"{CONFIGMAPS}/a", {"metadata": {"name": "a"}, "data": {"x": "1"}}, "application/json"),
        ("PatchOptions", "PATCH", f"{CONFIGMAPS}/a", {"data": {"x": "1"}}, "application/merge-patch+json"),
        ("PatchOptions", "PATCH", f"{CONFIGMAPS}/a", {"apiVersion": "v1", "kind": "ConfigMap",
                                                      "metadata": {"name": "a"}, "data": {"x": "1"}},
         "application/apply-patch+yaml")]
    before = (await _call(http, "GET", CONFIGMAPS))[1]["metadata"]["resourceVersion"]
    for kind, method, path, body, ctype in writes:
        async with http.request(method, path, params={"fieldManager": "a\r\nb"}, data=json.dumps(body),
                                headers={"Content-Type": ctype}) as r:
            assert (r.status, await r.json()) == (422, _invalid_options(
                kind, ("FieldValueInvalid", "fieldManager", crlf.format("D", 1)),
                ("FieldValueInvalid", "fieldManager", crlf.format("A", 2)))), (method, ctype)
        async with http.request(method, path, params={"fieldManager": "\u00e9" * 65}, data=json.dumps(body),
                                headers={"Content-Type": ctype}) as r:  # 65 characters, 130 bytes
            assert (r.status, await r.json()) == (422, _invalid_options(
                kind, ("FieldValueTooLong", "fieldManager", "Too long: may not be more than 128 bytes")))
    assert (await _call(http, "GET", CONFIGMAPS))[1]["metadata"]["resourceVersion"] == before
    manager = "gestionnaire-\u00e9t\u00e9-" + "m" * 100  # printable, 128 bytes
    code, body = await _call(http, "POST", CONFIGMAPS, {"metadata": {"name": "b"}, "data": {"k": "v"}},
                             fieldManager=manager)
    assert code == 201 and body["metadata"]["managedFields"][0]["manager"] == manager


async def test_deletes_take_no_field_manager(http: aiohttp.ClientSession) -> None:
    """DeleteOptions have no fieldManager upstream: the parameter is ignored, whatever it holds."""
    await _configmaps(http, "a")
    code, body = await _call(http, "DELETE", f"{CONFIGMAPS}/a", fieldManager="a\r\nb")
    assert code == 200 and body["status"] == "Success"


@pytest.mark.parametrize(("agent", "manager"), [
    ("kubectl/v1.37.0 (linux/amd64) kubernetes/abcdef", "kubectl"),
    ("my\tcontroller/2.0", "mycontroller"),
    ("x" * 200 + "/1.0", "x" * 128)])
async def test_the_default_manager_is_the_user_agent_made_valid(http: aiohttp.ClientSession, agent: str,
                                                                manager: str) -> None:
    """Without fieldManager a write is managed by its User-Agent up to the first "/", without
    characters Go does not print, cut at 128 bytes (prefixFromUserAgent)."""
    async with http.post(CONFIGMAPS, json={"metadata": {"name": "a"}, "data": {"k": "v"}},
                         headers={"User-Agent": agent}) as r:
        assert r.status == 201
        (entry,) = (await r.json())["metadata"]["managedFields"]
    assert entry["manager"] == manager


# -------------------------------------------------------------------------------- resourceVersions in bodies


@pytest.mark.parametrize(("rv", "error"), [(" 5", "invalid syntax"), ("abc", "invalid syntax"),
                                           ("-1", "invalid syntax"), (BEYOND_UINT64, "value out of range")])
async def test_an_update_precondition_is_a_go_uint64(http: aiohttp.ClientSession, rv: str, error: str) -> None:
    """metadata.resourceVersion on an update parses as upstream's ObjectResourceVersion; upstream lets
    strconv's error become a 500, here it is the client's 400 with the same words."""
    await _configmaps(http, "a")
    quoted = json.dumps(rv)
    code, body = await _call(http, "PUT", f"{CONFIGMAPS}/a", {"metadata": {"name": "a", "resourceVersion": rv}})
    assert (code, body) == (400, _bad(f"strconv.ParseUint: parsing {quoted}: {error}"))
    code, body = await _call(http, "PATCH", f"{CONFIGMAPS}/a", {"metadata": {"resourceVersion": rv}},
                             ctype="application/merge-patch+json")
    assert (code, body) == (400, _bad(f"strconv.ParseUint: parsing {quoted}: {error}"))


async def test_delete_preconditions_are_strings(http: aiohttp.ClientSession) -> None:
    """DeleteOptions preconditions compare as strings, as upstream's Preconditions.Check (" 5" is not
    5: 409); values that are not strings do not decode (400)."""
    await _configmaps(http, "a")
    rv = (await _call(http, "GET", f"{CONFIGMAPS}/a"))[1]["metadata"]["resourceVersion"]
    code, body = await _call(http, "DELETE", f"{CONFIGMAPS}/a", {"preconditions": {"resourceVersion": " " + rv}})
    assert (code, body["reason"]) == (409, "Conflict")
    assert body["message"] == (f"Precondition failed: ResourceVersion in precondition:  {rv}, "
                               f"ResourceVersion in object meta: {rv}")
    for options, what, field, go_type in (
            ({"preconditions": {"resourceVersion": int(rv)}}, f"number {rv}",
             "Preconditions.preconditions.resourceVersion", "string"),
            ({"preconditions": {"uid": ["x"]}}, "array", "Preconditions.preconditions.uid", "types.UID"),
            ({"preconditions": "x"}, "string", "DeleteOptions.preconditions", "v1.Preconditions"),
            ({"gracePeriodSeconds": 1.5}, "number 1.5", "DeleteOptions.gracePeriodSeconds", "int64"),
            ({"gracePeriodSeconds": True}, "bool", "DeleteOptions.gracePeriodSeconds", "int64")):
        code, body = await _call(http, "DELETE", f"{CONFIGMAPS}/a", options)
        assert (code, body) == (400, _bad(f"invalid DeleteOptions: json: cannot unmarshal {what} into Go struct "
                                          f"field {field} of type {go_type}")), options
    code, body = await _call(http, "DELETE", f"{CONFIGMAPS}/a", {"preconditions": {"resourceVersion": rv}})
    assert code == 200 and body["status"] == "Success"
