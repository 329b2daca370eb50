"""Secret rules (upstream ValidateSecret/ValidateSecretUpdate), the Secret decoding of `data`
(Go's base64.StdEncoding, its CorruptInputError offsets) and `stringData`."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from cp import defaulting, errors, structure, validation


def b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


@pytest.mark.parametrize(("text", "offset"), [
    ("YWJj", -1), ("YWJjZA==", -1), ("YWJjZGU=", -1), ("YWJj\nZA==\r\n", -1), ("", -1),
    ("YW!j", 2), ("Y", 0), ("YWJjZA", 4), ("YWJjZA=", 7), ("YQ=a", 2), ("YQ==YQ==", 4), ("=", 0),
    ("aGVsbG8gd29ybGQ", 12), ("hunter2", 4), ("not base64!", 3),
])
def test_go_base64_offsets(text: str, offset: int) -> None:
    decoded, bad = structure.go_b64decode(text)
    assert bad == offset
    if offset < 0:
        assert decoded == base64.b64decode(text.replace("\n", "").replace("\r", ""))


def secret(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}, **fields}


def decode(obj: dict[str, Any]) -> dict[str, Any]:
    out, _ = structure.check(obj, group="", version="v1", kind="Secret", field_validation="Strict")
    defaulting.apply_defaults(out, group="", version="v1", kind="Secret")
    return out


def test_bad_base64_is_go_decoding_error_without_the_value() -> None:
    with pytest.raises(errors.StatusError) as info:
        decode(secret(data={"password": "hunter2"}))
    assert info.value.code == 400
    assert info.value.message == ('Secret in version "v1" cannot be handled as a Secret: '
                                  "illegal base64 data at input byte 4")
    assert "hunter2" not in json.dumps(info.value.status())


def test_data_is_stored_as_go_encodes_it() -> None:
    assert decode(secret(data={"a": "YWJj\nZA=="}))["data"] == {"a": "YWJjZA=="}


def test_string_data_merged_into_data_and_dropped() -> None:
    out = decode(secret(data={"a": b64("old"), "b": b64("kept")}, stringData={"a": "new", "c": "ünï"}))
    assert "stringData" not in out
    assert out["data"] == {"a": b64("new"), "b": b64("kept"), "c": b64("ünï")}
    assert out["type"] == "Opaque"


def causes(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[tuple[str, str, str]]:
    try:
        if old is None:
            validation.validate_create(obj, group="", version="v1", kind="Secret", namespaced=True)
        else:
            validation.validate_update(obj, old, group="", version="v1", kind="Secret")
    except errors.Invalid as exc:
        return [(d["reason"], d["field"], d["message"]) for d in (c.as_dict() for c in exc.causes)]
    return []


@pytest.mark.parametrize(("fields", "expected"), [
    ({"type": "kubernetes.io/service-account-token"},
     [("FieldValueRequired", "metadata.annotations[kubernetes.io/service-account.name]", "Required value")]),
    ({"type": "kubernetes.io/dockercfg"}, [("FieldValueRequired", "data[.dockercfg]", "Required value")]),
    ({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": b64("{nope")}},
     [("FieldValueInvalid", "data[.dockerconfigjson]",
       'Invalid value: "<secret contents redacted>": invalid character \'n\' looking for beginning of value')]),
    ({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": b64('"s3cr3t"')}},
     [("FieldValueInvalid", "data[.dockerconfigjson]", 'Invalid value: "<secret contents redacted>": json: '
       "cannot unmarshal string into Go value of type map[string]interface {}")]),
    ({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": b64('{"auths": {}}')}}, []),
    ({"type": "kubernetes.io/basic-auth"}, [("FieldValueRequired", "data[username]", "Required value"),
                                            ("FieldValueRequired", "data[password]", "Required value")]),
    ({"type": "kubernetes.io/basic-auth", "data": {"password": ""}}, []),
    ({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}},
     [("FieldValueRequired", "data[ssh-privatekey]", "Required value")]),
    ({"type": "kubernetes.io/tls", "data": {"tls.crt": b64("c")}},
     [("FieldValueRequired", "data[tls.key]", "Required value")]),
    ({"data": {"bad key": b64("v")}}, [("FieldValueInvalid", "data[bad key]", 'Invalid value: "bad key": a valid '
                                        "config key must consist of alphanumeric characters, '-', '_' or '.' "
                                        "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
                                        "validation is '[-._a-zA-Z0-9]+')")]),
    ({"data": {"a": b64(b"x" * (1024 * 1024)), "b": b64("y")}},
     [("FieldValueTooLong", "data", "Too long: may not be more than 1048576 bytes")]),
])
def test_secret_rules(fields: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    got = causes(decode(secret(**fields)))
    assert [(t, f) for t, f, _ in got] == [(t, f) for t, f, _ in expected]
    for (_t, _f, message), (_t2, _f2, want) in zip(got, expected, strict=True):
        assert want in message


def test_type_immutable_and_immutable_data() -> None:
    old = decode(secret(data={"a": b64("1")}, immutable=True))
    assert [f for _t, f, _m in causes(decode(secret(data={"a": b64("2")}, immutable=True)), old)] == ["data"]
    assert [f for _t, f, _m in causes(decode(secret(data={"a": b64("1")})), old)] == ["immutable"]
    changed = decode(secret(data={"a": b64("1")}, type="kubernetes.io/tls", immutable=True))
    assert [f for _t, f, _m in causes(changed, old)] == ["type", "data[tls.crt]", "data[tls.key]"]
