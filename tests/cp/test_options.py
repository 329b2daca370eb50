"""Request options parsed as kube-apiserver parses them (`cp.options`): Go's strconv syntax and ranges
for integers and resourceVersions, with strconv's error texts; ValidateFieldManager; the default
manager derived from a User-Agent. Over HTTP: tests/api/test_hostile_params.py."""

from __future__ import annotations

import pytest

from cp import errors, options

INT64_MAX = (1 << 63) - 1


@pytest.mark.parametrize(("text", "value"), [
    ("0", 0), ("-0", 0), ("+5", 5), ("-5", -5), ("007", 7), (str(INT64_MAX), INT64_MAX),
    (str(-(1 << 63)), -(1 << 63))])
def test_int64s_go_accepts(text: str, value: int) -> None:
    assert options.parse_int64(text) == value


@pytest.mark.parametrize(("text", "reason"), [
    ("", "invalid syntax"), (" 5", "invalid syntax"), ("5 ", "invalid syntax"), ("1_000", "invalid syntax"),
    ("\u0665", "invalid syntax"), ("\uff15", "invalid syntax"), ("0x10", "invalid syntax"), ("1e3", "invalid syntax"),
    ("+", "invalid syntax"), ("--5", "invalid syntax"), ("+-5", "invalid syntax"), ("5.0", "invalid syntax"),
    (str(1 << 63), "value out of range"), (str(-(1 << 63) - 1), "value out of range"),
    ("9" * 30, "value out of range"),
    # As Go: a value that already overflowed uint64 is out of range, whatever follows; one that did not
    # is a syntax error at the first character that is not a digit.
    ("9" * 20 + "x", "value out of range"), ("9" * 19 + "x", "invalid syntax")])
def test_int64s_go_rejects(text: str, reason: str) -> None:
    with pytest.raises(options.NumError) as caught:
        options.parse_int64(text)
    assert str(caught.value) == f"strconv.ParseInt: parsing {_go_quote(text)}: {reason}"
    with pytest.raises(errors.BadRequest) as bad:
        options.int64_param(text)
    assert bad.value.message == str(caught.value)


def test_uint64s_have_no_sign_and_twice_the_range() -> None:
    assert options.parse_uint64(str((1 << 64) - 1)) == (1 << 64) - 1
    for text, reason in (("+5", "invalid syntax"), ("-1", "invalid syntax"), (str(1 << 64), "value out of range")):
        with pytest.raises(options.NumError) as caught:
            options.parse_uint64(text)
        assert str(caught.value) == f'strconv.ParseUint: parsing "{text}": {reason}'


def test_an_absent_integer_parameter_is_unset_an_empty_one_is_bad() -> None:
    assert options.int64_param(None) is None
    with pytest.raises(errors.BadRequest) as bad:
        options.int64_param("")
    assert bad.value.message == 'strconv.ParseInt: parsing "": invalid syntax'


def test_resource_version_parameters() -> None:
    """Absent or empty: unset; "0": 0; otherwise a uint64 in Go's syntax, or the storage's 400."""
    assert options.resource_version_param(None) is None
    assert options.resource_version_param("") is None
    assert options.resource_version_param("0") == 0
    assert options.resource_version_param("0042") == 42
    assert options.resource_version_param(str((1 << 64) - 1)) == (1 << 64) - 1
    with pytest.raises(errors.BadRequest) as bad:
        options.resource_version_param("5\n")
    assert bad.value.message == ('invalid resource version: resourceVersion: Invalid value: "5\\n": '
                                 'strconv.ParseUint: parsing "5\\n": invalid syntax')


def test_object_resource_versions() -> None:
    """metadata.resourceVersion of a written object: "" is no precondition (0), else a uint64."""
    assert options.object_resource_version("") == 0
    assert options.object_resource_version("05") == 5
    with pytest.raises(errors.BadRequest) as bad:
        options.object_resource_version(" 5")
    assert bad.value.message == 'strconv.ParseUint: parsing " 5": invalid syntax'


def test_field_managers_printable_and_at_most_128_bytes() -> None:
    options.check_write_options(options_kind="CreateOptions", field_manager="")
    options.check_write_options(options_kind="CreateOptions", field_manager="\u00e9" * 64)  # 128 bytes
    options.check_write_options(options_kind="CreateOptions", field_manager="kube controller \U0001F600")
    with pytest.raises(errors.Invalid) as too_long:
        options.check_write_options(options_kind="UpdateOptions", field_manager="a" + "\u00e9" * 64)
    assert too_long.value.code == 422
    assert too_long.value.message == ('UpdateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: '
                                      'may not be more than 128 bytes')
    with pytest.raises(errors.Invalid) as unprintable:
        options.check_write_options(options_kind="PatchOptions", field_manager="\u00e9\x7f\u00a0\u200b", apply=True)
    quoted = '"\u00e9\\x7f\\u00a0\\u200b"'
    assert unprintable.value.message == (
        f'PatchOptions.meta.k8s.io "" is invalid: [fieldManager: Invalid value: {quoted}: invalid character '
        f'U+007F (at position 2), fieldManager: Invalid value: {quoted}: invalid character U+00A0 (at position 3), '
        f'fieldManager: Invalid value: {quoted}: invalid character U+200B (at position 5)]')
    assert unprintable.value.details == {
        "name": "", "group": "meta.k8s.io", "kind": "PatchOptions", "causes": [
            {"reason": "FieldValueInvalid", "field": "fieldManager",
             "message": f"Invalid value: {quoted}: invalid character U+{code} (at position {at})"}
            for code, at in (("007F", 2), ("00A0", 3), ("200B", 5))]}
    with pytest.raises(errors.Invalid) as required:
        options.check_write_options(options_kind="PatchOptions", field_manager="", apply=True)
    assert required.value.message == ('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
                                      'is required for apply patch')


@pytest.mark.parametrize(("agent", "manager"), [
    ("kubectl/v1.37.0 (linux/amd64) kubernetes/abcdef", "kubectl"), ("", ""), ("/x", ""), ("plain", "plain"),
    ("a\r\nb\x00c/1", "abc"), ("x" * 300, "x" * 128), ("\u00e9" * 100, "\u00e9" * 64),
    ("a" + "\u00e9" * 64, "a" + "\u00e9" * 63)])  # a character that would pass 128 bytes is left out whole
def test_the_manager_a_user_agent_gives(agent: str, manager: str) -> None:
    assert options.manager_from_user_agent(agent) == manager
    assert not options.field_manager_causes(manager)


def _go_quote(text: str) -> str:
    """Go's %q for the inputs above (ASCII and printable non-ASCII)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
