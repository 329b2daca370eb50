"""cp/crd/formats.py: the string formats kube-openapi's registry checks, and which formats a schema keeps."""

from __future__ import annotations

import pytest

from cp.crd.formats import check, kept_format


@pytest.mark.parametrize(("fmt", "good", "bad"), [
    ("date-time", ["2026-12-05T01:02:03Z", "2026-12-05t01:02:03.5+01:00"], ["2026-12-05", "2026-13-05T01:02:03Z",
                                                                            "2026-12-05T24:00:00Z"]),
    ("datetime", ["2026-12-05T01:02:03Z"], ["now"]),
    ("date", ["2026-02-28"], ["2026-02-30", "26-02-28"]),
    ("duration", ["1h30m", "5s", "3d", "2 w", "1.5h"], ["soon", "3 days"]),
    ("uuid", ["6ba7b810-9dad-11d1-80b4-00c04fd430c8", "6BA7B8109DAD11D180B400C04FD430C8"], ["6ba7b810"]),
    ("uuid4", ["f47ac10b-58cc-4372-a567-0e02b2c3d479"], ["6ba7b810-9dad-11d1-80b4-00c04fd430c8"]),
    ("ipv4", ["10.0.0.1"], ["10.0.0", "::1"]),
    ("ipv6", ["::1", "fe80::1"], ["10.0.0.1"]),
    ("cidr", ["10.0.0.0/8", "fd00::/64"], ["10.0.0.1"]),
    ("mac", ["00:1a:2b:3c:4d:5e", "00-1A-2B-3C-4D-5E"], ["00:1a:2b"]),
    ("hostname", ["example.com", "a"], ["-bad-.com", "a..b"]),
    ("email", ["a@example.com"], ["not-an-email"]),
    ("uri", ["https://example.com/x", "/path"], ["relative/path", "http://exa mple.com"]),
    ("byte", ["aGVsbG8="], ["not base64!"]),
    ("hexcolor", ["#fff", "A0B0C0"], ["#ffff"]),
    ("rgbcolor", ["rgb(1, 2, 255)"], ["rgb(256,0,0)"]),
    ("ssn", ["123-45-6789"], ["123-456-789"]),
    ("isbn10", ["0321751043"], ["0321751044"]),
    ("isbn13", ["978-0321751041"], ["978-0321751042"]),
    ("creditcard", ["4111 1111 1111 1111"], ["4111 1111 1111 1112"]),
    ("bsonobjectid", ["507f1f77bcf86cd799439011"], ["507f1f77"]),
    ("k8s-short-name", ["my-name"], ["My-Name", "a" * 64]),
    ("k8s-long-name", ["a.b-c.d"], ["a..b", "-a"]),
    ("password", ["anything"], []),
])
def test_formats(fmt: str, good: list[str], bad: list[str]) -> None:
    for value in good:
        assert check(fmt, value), value
    for value in bad:
        assert not check(fmt, value), value


@pytest.mark.parametrize(("schema_type", "fmt", "kept"), [
    ("string", "date-time", "date-time"),
    ("string", "no-such-format", ""),
    ("", "uuid", "uuid"),
    ("integer", "int32", "int32"),
    ("integer", "uuid", ""),
    ("number", "double", "double"),
    ("number", "int64", ""),
    ("boolean", "date", ""),
])
def test_formats_a_schema_keeps(schema_type: str, fmt: str, kept: str) -> None:
    assert kept_format(schema_type, fmt) == kept
