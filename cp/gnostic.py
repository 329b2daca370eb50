"""A Swagger 2.0 document as gnostic's `openapi_v2.Document` protobuf: the body of `/openapi/v2` for
`Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`, the only form client-go asks for
(`discovery_client.go: OpenAPISchema`; kubectl's v2 validation, `explain`'s fallback, Helm).

kube-apiserver makes it with gnostic: `openapi_v2.ParseDocument(json)` then `proto.Marshal`
(kube-openapi `handler.ToProtoBinary`). `encode` does the same from the JSON-form dict, following
gnostic's mapping of JSON onto its messages:

- each message field has a JSON key (`base_path` is `basePath`, `_ref` is `$ref`);
- `x-*` keys become `vendor_extension` entries (`NamedAny`) whose `Any.yaml` is the value as YAML
  (written as JSON, which is YAML: readers `yaml.Unmarshal` it), as do `default`, `enum` and
  `example` values;
- objects of free keys (`definitions`, `properties`, `paths`, `responses`...) are repeated
  `Named*` entries `{name, value}`, in the document's key order;
- `oneof`s are chosen as gnostic does: a parameter with `$ref` is a `JsonReference`, `in: body` a
  `BodyParameter`, otherwise a sub-schema by `in`; `type` and `items` take one value or a list;
  `additionalProperties` a schema or a boolean.

A key gnostic does not know is an error (gnostic refuses such a document too), so what the JSON form
says is exactly what the protobuf says. Wire format: proto3, fields in number order, zero scalars left
out, set messages written even when empty (their presence matters: kube-openapi reads an object with
`properties` differently from a map).

The message descriptions below follow the field names and numbers of gnostic-models'
`openapiv2/OpenAPIv2.proto` (package `openapi.v2`). Pure; tables compiled on first use.
"""

from __future__ import annotations

import functools
import re
import struct
from collections.abc import Callable
from typing import Any

import msgspec

# One string per message: comma-separated `NUMBER key:type`; type `s` (the default), `bool`, `f64`,
# `i64`, `Any`, a message name, `[T]` repeated. Special keys: `x-` the vendor extensions (NamedAny);
# `*` every other key, as `Named*` entries of the given type; `/*` the keys starting with "/" (paths);
# `code` the keys that are status codes or "default" (responses).
_PARAM_Q = ("1 required:bool, 2 in, 3 description, 4 name, 5 allowEmptyValue:bool, 6 type, 7 format, "
            "8 items:PrimitivesItems, 9 collectionFormat, 10 default:Any, 11 maximum:f64, "
            "12 exclusiveMaximum:bool, 13 minimum:f64, 14 exclusiveMinimum:bool, 15 maxLength:i64, "
            "16 minLength:i64, 17 pattern, 18 maxItems:i64, 19 minItems:i64, 20 uniqueItems:bool, "
            "21 enum:[Any], 22 multipleOf:f64, 23 x-")
_PARAM_P = ("1 required:bool, 2 in, 3 description, 4 name, 5 type, 6 format, 7 items:PrimitivesItems, "
            "8 collectionFormat, 9 default:Any, 10 maximum:f64, 11 exclusiveMaximum:bool, 12 minimum:f64, "
            "13 exclusiveMinimum:bool, 14 maxLength:i64, 15 minLength:i64, 16 pattern, 17 maxItems:i64, "
            "18 minItems:i64, 19 uniqueItems:bool, 20 enum:[Any], 21 multipleOf:f64, 22 x-")
_PRIMITIVE = ("1 type, 2 format, 3 items:PrimitivesItems, 4 collectionFormat, 5 default:Any, 6 maximum:f64, "
              "7 exclusiveMaximum:bool, 8 minimum:f64, 9 exclusiveMinimum:bool, 10 maxLength:i64, "
              "11 minLength:i64, 12 pattern, 13 maxItems:i64, 14 minItems:i64, 15 uniqueItems:bool, "
              "16 enum:[Any], 17 multipleOf:f64")
_OAUTH2 = "1 type, 2 flow, 3 scopes:Oauth2Scopes"

MESSAGES: dict[str, str] = {
    "Document": (
        "1 swagger, 2 info:Info, 3 host, 4 basePath, 5 schemes:[s], 6 consumes:[s], 7 produces:[s], "
        "8 paths:Paths, 9 definitions:Definitions, 10 parameters:ParameterDefinitions, "
        "11 responses:ResponseDefinitions, 12 security:[SecurityRequirement], "
        "13 securityDefinitions:SecurityDefinitions, 14 tags:[Tag], 15 externalDocs:ExternalDocs, 16 x-"),
    "Info": ("1 title, 2 version, 3 description, 4 termsOfService, 5 contact:Contact, 6 license:License, "
             "7 x-"),
    "Contact": "1 name, 2 url, 3 email, 4 x-",
    "License": "1 name, 2 url, 3 x-",
    "ExternalDocs": "1 description, 2 url, 3 x-",
    "Tag": "1 name, 2 description, 3 externalDocs:ExternalDocs, 4 x-",
    "Paths": "1 x-, 2 /*:NamedPathItem",
    "PathItem": ("1 $ref, 2 get:Operation, 3 put:Operation, 4 post:Operation, 5 delete:Operation, "
                 "6 options:Operation, 7 head:Operation, 8 patch:Operation, 9 parameters:[ParametersItem], "
                 "10 x-"),
    "Operation": ("1 tags:[s], 2 summary, 3 description, 4 externalDocs:ExternalDocs, 5 operationId, "
                  "6 produces:[s], 7 consumes:[s], 8 parameters:[ParametersItem], 9 responses:Responses, "
                  "10 schemes:[s], 11 deprecated:bool, 12 security:[SecurityRequirement], 13 x-"),
    "JsonReference": "1 $ref, 2 description",
    "BodyParameter": "1 description, 2 name, 3 in, 4 required:bool, 5 schema:Schema, 6 x-",
    "QueryParameterSubSchema": _PARAM_Q,
    "FormDataParameterSubSchema": _PARAM_Q,
    "HeaderParameterSubSchema": _PARAM_P,
    "PathParameterSubSchema": _PARAM_P,
    "PrimitivesItems": _PRIMITIVE + ", 18 x-",
    "Header": _PRIMITIVE + ", 18 description, 19 x-",
    "Headers": "1 *:NamedHeader",
    "Responses": "1 code:NamedResponseValue, 2 x-",
    "Response": "1 description, 2 schema:SchemaItem, 3 headers:Headers, 4 examples:Examples, 5 x-",
    "FileSchema": ("1 format, 2 title, 3 description, 4 default:Any, 5 required:[s], 6 type, 7 readOnly:bool, "
                   "8 externalDocs:ExternalDocs, 9 example:Any, 10 x-"),
    "Examples": "1 *:NamedAny",
    "Definitions": "1 *:NamedSchema",
    "ParameterDefinitions": "1 *:NamedParameter",
    "ResponseDefinitions": "1 *:NamedResponse",
    "SecurityDefinitions": "1 *:NamedSecurityDefinitionsItem",
    "SecurityRequirement": "1 *:NamedStringArray",
    "BasicAuthenticationSecurity": "1 type, 2 description, 3 x-",
    "ApiKeySecurity": "1 type, 2 name, 3 in, 4 description, 5 x-",
    "Oauth2ImplicitSecurity": _OAUTH2 + ", 4 authorizationUrl, 5 description, 6 x-",
    "Oauth2PasswordSecurity": _OAUTH2 + ", 4 tokenUrl, 5 description, 6 x-",
    "Oauth2ApplicationSecurity": _OAUTH2 + ", 4 tokenUrl, 5 description, 6 x-",
    "Oauth2AccessCodeSecurity": _OAUTH2 + ", 4 authorizationUrl, 5 tokenUrl, 6 description, 7 x-",
    "Oauth2Scopes": "1 *:NamedString",
    "Schema": ("1 $ref, 2 format, 3 title, 4 description, 5 default:Any, 6 multipleOf:f64, 7 maximum:f64, "
               "8 exclusiveMaximum:bool, 9 minimum:f64, 10 exclusiveMinimum:bool, 11 maxLength:i64, "
               "12 minLength:i64, 13 pattern, 14 maxItems:i64, 15 minItems:i64, 16 uniqueItems:bool, "
               "17 maxProperties:i64, 18 minProperties:i64, 19 required:[s], 20 enum:[Any], "
               "21 additionalProperties:AdditionalPropertiesItem, 22 type:TypeItem, 23 items:ItemsItem, "
               "24 allOf:[Schema], 25 properties:Properties, 26 discriminator, 27 readOnly:bool, 28 xml:Xml, "
               "29 externalDocs:ExternalDocs, 30 example:Any, 31 x-"),
    "Properties": "1 *:NamedSchema",
    "Xml": "1 name, 2 namespace, 3 prefix, 4 attribute:bool, 5 wrapped:bool, 6 x-",
}

# Named entries: `1 name, 2 value:T`.
NAMED: dict[str, str] = {
    "NamedPathItem": "PathItem", "NamedHeader": "Header", "NamedResponseValue": "ResponseValue",
    "NamedAny": "Any", "NamedSchema": "Schema", "NamedParameter": "Parameter", "NamedResponse": "Response",
    "NamedSecurityDefinitionsItem": "SecurityDefinitionsItem", "NamedStringArray": "StringArray",
    "NamedString": "s",
}

_RESPONSE_CODE = re.compile(r"^([0-9]{3})$|^(default)$")
_PARAMETER_IN = {"header": (1, "HeaderParameterSubSchema"), "formData": (2, "FormDataParameterSubSchema"),
                 "query": (3, "QueryParameterSubSchema"), "path": (4, "PathParameterSubSchema")}
_SECURITY = {"basic": (1, "BasicAuthenticationSecurity"), "apiKey": (2, "ApiKeySecurity"),
             "implicit": (3, "Oauth2ImplicitSecurity"), "password": (4, "Oauth2PasswordSecurity"),
             "application": (5, "Oauth2ApplicationSecurity"), "accessCode": (6, "Oauth2AccessCodeSecurity")}

_yaml = msgspec.json.Encoder()  # JSON is YAML: readers yaml.Unmarshal the text


class _Field:
    __slots__ = ("number", "repeated", "type")

    def __init__(self, number: int, type_: str) -> None:
        self.number = number
        self.repeated = type_.startswith("[")
        self.type = type_.strip("[]")


class _Message:
    """Fields by JSON key, and the field numbers of the special keys (0: none)."""

    __slots__ = ("code", "extensions", "fields", "others", "paths")

    def __init__(self, text: str) -> None:
        self.fields: dict[str, _Field] = {}
        self.extensions = 0
        self.others: tuple[int, str] | None = None  # `*`
        self.paths: tuple[int, str] | None = None  # `/*`
        self.code: tuple[int, str] | None = None
        for token in text.split(","):
            number, _, rest = token.strip().partition(" ")
            key, _, type_ = rest.partition(":")
            if key == "x-":
                self.extensions = int(number)
            elif key == "*":
                self.others = (int(number), type_)
            elif key == "/*":
                self.paths = (int(number), type_)
            elif key == "code":
                self.code = (int(number), type_)
            else:
                self.fields[key] = _Field(int(number), type_ or "s")


@functools.cache
def _messages() -> dict[str, _Message]:
    return {name: _Message(text) for name, text in MESSAGES.items()}


# ------------------------------------------------------------------------------------------ wire format


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64: ten bytes of two's complement, as proto does
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _tag(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _tag(number, 2) + _varint(len(payload)) + payload


class EncodeError(ValueError):
    """The document has something gnostic's model cannot hold (gnostic would refuse to parse it)."""


def _where(path: str, msg: str) -> EncodeError:
    return EncodeError(f"{path}: {msg}")


def _scalar(number: int, type_: str, value: Any, path: str, *, always: bool = False) -> bytes:
    """One scalar field; proto3 leaves zero values out, except in a `oneof` (`always`)."""
    if type_ == "s":
        if not isinstance(value, str):
            raise _where(path, f"expected a string, not {value!r}")
        return _bytes_field(number, value.encode()) if value or always else b""
    if type_ == "bool":
        if not isinstance(value, bool):
            raise _where(path, f"expected a boolean, not {value!r}")
        return _tag(number, 0) + _varint(int(value)) if value or always else b""
    if type_ == "i64":
        if isinstance(value, bool) or not isinstance(value, int):
            raise _where(path, f"expected an integer, not {value!r}")
        return _tag(number, 0) + _varint(value) if value or always else b""
    if type_ == "f64":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _where(path, f"expected a number, not {value!r}")
        return _tag(number, 1) + struct.pack("<d", float(value)) if value or always else b""
    raise AssertionError(type_)


def _value(number: int, type_: str, value: Any, path: str) -> bytes:
    if type_ in ("s", "bool", "i64", "f64"):
        return _scalar(number, type_, value, path)
    return _bytes_field(number, _encode_as(type_, value, path))


def _any(value: Any) -> bytes:
    return _bytes_field(2, _yaml.encode(value))


def _named(type_: str, name: str, value: Any, path: str) -> bytes:
    inner = NAMED[type_]
    out = _bytes_field(1, name.encode()) if name else b""
    if inner == "s":
        return out + _scalar(2, "s", value, path)
    return out + _bytes_field(2, _encode_as(inner, value, path))


def _object(name: str, obj: Any, path: str) -> bytes:
    if not isinstance(obj, dict):
        raise _where(path, f"{name} must be an object")
    message = _messages()[name]
    parts: list[tuple[int, bytes]] = []
    for key, value in obj.items():
        where = f"{path}.{key}"
        field = message.fields.get(key)
        if field is not None:
            if not field.repeated:
                parts.append((field.number, _value(field.number, field.type, value, where)))
            elif not isinstance(value, list):
                raise _where(where, "expected a list")
            elif field.type == "s":  # the only repeated scalars; every item is written, even ""
                parts.extend((field.number, _scalar(field.number, "s", item, where, always=True))
                             for item in value)
            else:
                parts.extend((field.number, _bytes_field(field.number, _encode_as(field.type, item, where)))
                             for item in value)
        elif key.startswith("x-") and message.extensions:
            parts.append((message.extensions, _bytes_field(
                message.extensions, _bytes_field(1, key.encode()) + _bytes_field(2, _any(value)))))
        elif message.paths is not None and key.startswith("/"):
            number, type_ = message.paths
            parts.append((number, _bytes_field(number, _named(type_, key, value, where))))
        elif message.code is not None and _RESPONSE_CODE.match(key):
            number, type_ = message.code
            parts.append((number, _bytes_field(number, _named(type_, key, value, where))))
        elif message.others is not None:
            number, type_ = message.others
            parts.append((number, _bytes_field(number, _named(type_, key, value, where))))
        else:
            raise _where(where, f"not a field of {name}")
    parts.sort(key=lambda p: p[0])  # stable: repeated fields keep their order
    return b"".join(data for _, data in parts)


# ------------------------------------------------------------------------------------------ oneofs


def _parameters_item(value: Any, path: str) -> bytes:
    if isinstance(value, dict) and "$ref" in value:
        return _bytes_field(2, _object("JsonReference", value, path))
    return _bytes_field(1, _parameter(value, path))


def _parameter(value: Any, path: str) -> bytes:
    if not isinstance(value, dict):
        raise _where(path, "a parameter must be an object")
    where = value.get("in")
    if where == "body":
        return _bytes_field(1, _object("BodyParameter", value, path))
    if where not in _PARAMETER_IN:
        raise _where(path, f"unknown parameter location {where!r}")
    number, sub = _PARAMETER_IN[where]
    return _bytes_field(2, _bytes_field(number, _object(sub, value, path)))


def _response_value(value: Any, path: str) -> bytes:
    if isinstance(value, dict) and "$ref" in value:
        return _bytes_field(2, _object("JsonReference", value, path))
    return _bytes_field(1, _object("Response", value, path))


def _schema_item(value: Any, path: str) -> bytes:
    if isinstance(value, dict) and value.get("type") == "file":
        return _bytes_field(2, _object("FileSchema", value, path))
    return _bytes_field(1, _object("Schema", value, path))


def _security_item(value: Any, path: str) -> bytes:
    if not isinstance(value, dict):
        raise _where(path, "a security definition must be an object")
    key = value.get("flow") if value.get("type") == "oauth2" else value.get("type")
    if key not in _SECURITY:
        raise _where(path, f"unknown security scheme {value.get('type')!r}")
    number, message = _SECURITY[key]
    return _bytes_field(number, _object(message, value, path))


def _additional(value: Any, path: str) -> bytes:
    if isinstance(value, bool):
        return _scalar(2, "bool", value, path, always=True)
    return _bytes_field(1, _object("Schema", value, path))


def _strings(value: Any, path: str) -> bytes:
    """TypeItem and StringArray: `1 value:[s]`, from one string or a list of them."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise _where(path, "expected a string or a list of strings")
    return b"".join(_scalar(1, "s", v, path, always=True) for v in items)


def _items(value: Any, path: str) -> bytes:
    items = value if isinstance(value, list) else [value]
    return b"".join(_bytes_field(1, _object("Schema", v, path)) for v in items)


_ONEOFS: dict[str, Callable[[Any, str], bytes]] = {
    "ParametersItem": _parameters_item, "Parameter": _parameter, "ResponseValue": _response_value,
    "SchemaItem": _schema_item, "SecurityDefinitionsItem": _security_item,
    "AdditionalPropertiesItem": _additional, "TypeItem": _strings, "StringArray": _strings,
    "ItemsItem": _items,
}


def _encode_as(name: str, value: Any, path: str) -> bytes:
    special = _ONEOFS.get(name)
    if special is not None:
        return special(value, path)
    if name == "Any":
        return _any(value)
    return _object(name, value, path)


def encode(document: dict[str, Any]) -> bytes:
    """The `openapi_v2.Document` message of a Swagger 2.0 document (JSON form); EncodeError if the
    document holds a key or value gnostic's model has no place for."""
    return _object("Document", document, "$")
