"""Secrets over HTTP: `stringData` merged on every kind of write (create, update, merge and strategic
patches, server-side apply), `data` that is not base64 refused with Go's decoding error on each of
them, `type` and immutable data kept, and no value echoed in any error."""

from __future__ import annotations

import base64
import json
from typing import Any

import aiohttp

NS = "/api/v1/namespaces/default/secrets"
VALUE = "hunter2-very-secret"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


async def req(http: aiohttp.ClientSession, method: str, path: str, body: Any,
              content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, str) else json.dumps(body)
    async with http.request(method, path, data=data, headers={"Content-Type": content_type}) as r:
        return r.status, await r.json()


async def test_string_data_on_every_write(http: aiohttp.ClientSession) -> None:
    code, body = await req(http, "POST", NS, {"metadata": {"name": "s"}, "stringData": {"a": "1"}})
    assert code == 201, body
    assert body["data"] == {"a": b64("1")} and "stringData" not in body and body["type"] == "Opaque"
    body["stringData"] = {"b": "2"}
    code, body = await req(http, "PUT", f"{NS}/s", body)
    assert code == 200 and body["data"] == {"a": b64("1"), "b": b64("2")}
    code, body = await req(http, "PATCH", f"{NS}/s", {"stringData": {"a": "3"}}, "application/merge-patch+json")
    assert code == 200 and body["data"] == {"a": b64("3"), "b": b64("2")} and "stringData" not in body
    code, body = await req(http, "PATCH", f"{NS}/s", {"stringData": {"c": "4"}},
                           "application/strategic-merge-patch+json")
    assert code == 200 and body["data"]["c"] == b64("4")
    code, body = await req(http, "PATCH", f"{NS}/s?fieldManager=m",
                           {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"d": "5"}},
                           "application/apply-patch+yaml")
    assert code == 200, body
    assert body["data"]["d"] == b64("5") and "stringData" not in body


async def test_bad_base64_and_immutability_without_echoing_values(http: aiohttp.ClientSession) -> None:
    expected = 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 7'
    code, body = await req(http, "POST", NS, {"metadata": {"name": "s"}, "data": {"k": VALUE}})
    assert (code, body["message"]) == (400, expected)
    code, body = await req(http, "POST", NS, {"metadata": {"name": "s"}, "data": {"k": b64(VALUE)},
                                              "immutable": True})
    assert code == 201
    for method, ctype in (("PATCH", "application/merge-patch+json"), ("PATCH", "application/strategic-merge-patch+json")):
        code, body = await req(http, method, f"{NS}/s", {"data": {"k": VALUE}}, ctype)
        assert (code, body["message"]) == (400, expected), body
    code, body = await req(http, "PATCH", f"{NS}/s", {"data": {"k": b64("other")}}, "application/merge-patch+json")
    assert code == 422
    assert body["message"] == 'Secret "s" is invalid: data: Forbidden: field is immutable when `immutable` is set'
    code, body = await req(http, "PATCH", f"{NS}/s", {"type": "kubernetes.io/tls"}, "application/merge-patch+json")
    assert code == 422 and "type: Invalid value: \"kubernetes.io/tls\": field is immutable" in body["message"]
    code, body = await req(http, "POST", NS, {"metadata": {"name": "d"}, "type": "kubernetes.io/dockerconfigjson",
                                              "data": {".dockerconfigjson": b64(VALUE)}})
    assert code == 422
    assert body["message"] == ('Secret "d" is invalid: data[.dockerconfigjson]: Invalid value: "<secret contents '
                               "redacted>\": invalid character 'h' looking for beginning of value")
    for text in (json.dumps(body),):
        assert VALUE not in text and b64(VALUE) not in text


def _pem_pair() -> tuple[str, str, str]:
    import datetime as dt

    from cryptography.hazmat.primitives import serialization

    from cp import certs

    cert, key = certs.new_ca(now=dt.datetime.now(dt.UTC).timestamp())
    other = certs.key_pem(certs.new_key())
    assert serialization.load_pem_private_key(key, None)
    return cert.decode(), key.decode(), other.decode()


async def test_tls_secrets_that_are_not_a_key_pair_are_written_with_a_warning(http: aiohttp.ClientSession) -> None:
    cert, key, other = _pem_pair()
    cases = [
        ({"tls.crt": cert, "tls.key": key}, None),
        ({"tls.crt": cert, "tls.key": other}, "tls: private key does not match public key"),
        ({"tls.crt": "junk", "tls.key": key}, "tls: failed to find any PEM data in certificate input"),
        ({"tls.crt": key, "tls.key": cert}, "tls: failed to find certificate PEM data in certificate input, but "
                                            "did find a private key; PEM inputs may have been switched"),
        ({"tls.crt": cert, "tls.key": cert}, "tls: found a certificate rather than a key in the PEM for the "
                                             "private key"),
    ]
    for i, (data, warning) in enumerate(cases):
        body = {"metadata": {"name": f"t{i}"}, "type": "kubernetes.io/tls", "stringData": data}
        async with http.post(NS, json=body) as r:
            assert r.status == 201, await r.text()
            got = r.headers.getall("Warning", [])
        assert got == ([f'299 - "{warning}"'] if warning else []), (i, got)
