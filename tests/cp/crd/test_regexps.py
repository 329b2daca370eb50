"""cp/crd/regexps.py: schema patterns read as Go's RE2 reads them (what matches, what is refused and
Go's message), compiled with Python's re."""

from __future__ import annotations

import pytest

from cp.crd.regexps import GoRegexpError, compile_go


@pytest.mark.parametrize(("pattern", "matching", "not_matching"), [
    ("^((?i)jan|feb)$", ["JAN", "Feb", "jan"], ["JANUARY", "mar"]),
    ("^(?i)(abort|warn)?$", ["ABORT", "", "Warn"], ["stop"]),
    ("^a(?i)b$", ["aB", "ab"], ["AB"]),
    ("^a$", ["a"], ["a\n", "ba"]),
    ("(?m)^a$", ["x\na\ny"], ["ab"]),
    (r"^\d+$", ["0123"], ["\u0663", "1a"]),
    (r"^\w+\s\S$", ["a_1 x"], ["\u00e9 x"]),
    ("^[[:upper:][:digit:]]+$", ["AB1"], ["ab"]),
    ("^a{,2}$", ["a{,2}"], ["aa"]),
    (r"^\Qa.b\E$", ["a.b"], ["axb"]),
    (r"^\x{41}\101\x42$", ["AAB"], ["aab"]),
    (r"^a\z", ["a"], ["a\n"]),
    ("^(?P<x>a)(?<y>b)$", ["ab"], ["ba"]),
    ("^[a-z&&~|]+$", ["a&~|"], ["A"]),
    (r"[\d.-]+", ["1.2-3"], ["abc"]),
])
def test_patterns_match_as_in_go(pattern: str, matching: list[str], not_matching: list[str]) -> None:
    compiled = compile_go(pattern)
    assert compiled is not None
    for text in matching:
        assert compiled.search(text), text
    for text in not_matching:
        assert not compiled.search(text), text


@pytest.mark.parametrize(("pattern", "message"), [
    ("(unclosed", "missing closing ): `(unclosed`"),
    ("a)", "unexpected ): `a)`"),
    ("[a", "missing closing ]: `[a`"),
    ("*a", "missing argument to repetition operator: `*`"),
    ("a**", "invalid nested repetition operator: `**`"),
    ("a*+", "invalid nested repetition operator: `*+`"),
    ("a{1001}", "invalid repeat count: `{1001}`"),
    ("a{3,2}", "invalid repeat count: `{3,2}`"),
    ("(?=a)", "invalid or unsupported Perl syntax: `(?=`"),
    ("(?!a)", "invalid or unsupported Perl syntax: `(?!`"),
    ("(?>a)", "invalid or unsupported Perl syntax: `(?>`"),
    (r"(a)\1", r"invalid escape sequence: `\1`"),
    (r"a\q", r"invalid escape sequence: `\q`"),
    ("a\\", "trailing backslash at end of expression: ``"),
    ("[z-a]", "invalid character class range: `z-a`"),
])
def test_what_go_refuses(pattern: str, message: str) -> None:
    with pytest.raises(GoRegexpError) as info:
        compile_go(pattern)
    assert str(info.value) == f"error parsing regexp: {message}"


@pytest.mark.parametrize("pattern", [r"\p{L}+", r"\PL", "(?U)a+", "[[:^alpha:]]"])
def test_re2_syntax_python_lacks_is_accepted_unchecked(pattern: str) -> None:
    assert compile_go(pattern) is None
