"""A schema's `pattern` as Go's RE2 (`regexp.Compile`) reads it, compiled with Python's `re`. Pure.

kube-openapi and the CRD checks compile patterns with Go's regexp package. The two dialects differ in
ways real CRDs meet: RE2 takes flags in the middle of an expression (`^((?i)jan|feb)`), POSIX classes
(`[[:alpha:]]`), `\\z` and `\\Q...\\E`; its `\\d`, `\\w`, `\\s` are ASCII and its `$` is the end of the
text (Python's `$` also matches before a final newline); it refuses lookarounds, backreferences,
atomic groups, possessive repeats and counts above 1000, which Python accepts. `translate` rewrites an
RE2 pattern into an equivalent Python one, or raises `GoRegexpError` with Go's message for what RE2
refuses, or `Untranslatable` for RE2 syntax with no Python equivalent here (Unicode classes `\\p{..}`,
the `U` flag): such a pattern is accepted and not checked.
"""

from __future__ import annotations

import re

_POSIX = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ", "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~", "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z", "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}
_PERL = {"d": "0-9", "w": "0-9A-Za-z_", "s": "\\t\\n\\f\\r "}
_SIMPLE_ESCAPES = set("afnrtv")
_REPEAT = re.compile(r"\{(\d*)(,?)(\d*)\}")
_MAX_REPEAT = 1000


class GoRegexpError(ValueError):
    """A pattern Go's regexp refuses; the message is Go's (`error parsing regexp: ...`)."""


class Untranslatable(ValueError):
    """RE2 syntax with no Python equivalent here."""


def _go_error(code: str, expr: str) -> GoRegexpError:
    return GoRegexpError(f"error parsing regexp: {code}: `{expr}`")


def compile_go(pattern: str) -> re.Pattern[str] | None:
    """The compiled pattern, None when it cannot be expressed in Python; raises GoRegexpError."""
    try:
        translated = translate(pattern)
    except Untranslatable:
        return None
    try:
        return re.compile(translated)
    except re.error as e:
        raise GoRegexpError(_python_error(pattern, e)) from None


def _python_error(pattern: str, e: re.error) -> str:
    """Go's wording for the errors both dialects share."""
    msg = str(e.msg) if hasattr(e, "msg") else str(e)
    if msg.startswith("missing ), unterminated subpattern"):
        return f"error parsing regexp: missing closing ): `{pattern}`"
    if msg.startswith("unbalanced parenthesis"):
        return f"error parsing regexp: unexpected ): `{pattern}`"
    if msg.startswith("unterminated character set"):
        return f"error parsing regexp: missing closing ]: `{pattern[pattern.rfind('['):]}`"
    if msg.startswith("nothing to repeat"):
        pos = e.pos if e.pos is not None else 0
        return f"error parsing regexp: missing argument to repetition operator: `{pattern[pos:pos + 1]}`"
    if msg.startswith("bad character range"):
        return f"error parsing regexp: invalid character class range: `{msg.rsplit(' ', 1)[-1]}`"
    return f"error parsing regexp: {msg}"


def translate(pattern: str) -> str:
    """The Python pattern matching what RE2 matches for `pattern`."""
    out: list[str] = []
    pending = [0]  # per open group: scoped-flag groups to close with it
    multiline = "m" in "".join(re.findall(r"\(\?([a-zA-Z-]*)[:)]", pattern))
    i, n = 0, len(pattern)
    last_repeat = False  # the previous item was a repetition operator
    while i < n:
        c = pattern[i]
        if c == "\\":
            text, i = _escape(pattern, i, in_class=False)
            out.append(text)
            last_repeat = False
        elif c == "[":
            text, i = _char_class(pattern, i)
            out.append(text)
            last_repeat = False
        elif c == "(":
            i = _group(pattern, i, out, pending)
            last_repeat = False
        elif c == ")":
            out.append(")" * pending.pop() if len(pending) > 1 else "")
            if not pending:
                pending.append(0)
            out.append(")")
            i += 1
            last_repeat = False
        elif c in "*+?":
            if last_repeat:
                raise _go_error("invalid nested repetition operator", pattern[i - 1:i + 1])
            out.append(c)
            i += 1
            if i < n and pattern[i] == "?":
                out.append("?")
                i += 1
            last_repeat = True
        elif c == "{":
            m = _REPEAT.match(pattern, i)
            if m is None or not m.group(1):
                out.append("\\{")  # RE2 reads a brace that starts no repeat count literally
                i += 1
                last_repeat = False
                continue
            lo, hi = m.group(1), m.group(3)
            if int(lo) > _MAX_REPEAT or (hi and int(hi) > _MAX_REPEAT) or (hi and int(hi) < int(lo)):
                raise _go_error("invalid repeat count", m.group(0))
            if last_repeat:
                raise _go_error("invalid nested repetition operator", m.group(0))
            out.append(m.group(0))
            i = m.end()
            if i < n and pattern[i] == "?":
                out.append("?")
                i += 1
            last_repeat = True
        elif c == "$" and not multiline:
            out.append("\\Z")
            i += 1
            last_repeat = False
        else:
            out.append(c)
            i += 1
            last_repeat = False
    out.append(")" * pending[0] if pending else "")
    return "".join(out)


def _group(pattern: str, i: int, out: list[str], pending: list[int]) -> int:
    """An opening parenthesis; flags groups `(?i)` become scoped groups closed with the enclosing one."""
    rest = pattern[i:]
    for bad in ("(?=", "(?!", "(?<=", "(?<!", "(?>", "(?#"):
        if rest.startswith(bad):
            raise _go_error("invalid or unsupported Perl syntax", rest[:3])
    if rest.startswith("(?P<") or rest.startswith("(?<"):
        m = re.match(r"\(\?P?<([A-Za-z0-9_]+)>", rest)
        if m is None:
            raise _go_error("invalid named capture", rest[: rest.find(">") + 1 if ">" in rest else len(rest)])
        out.append(f"(?P<{m.group(1)}>")
        pending.append(0)
        return i + m.end()
    if rest.startswith("(?"):
        m = re.match(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])", rest)
        if m is None:
            raise _go_error("missing closing )" if ")" not in rest else "invalid or unsupported Perl syntax",
                            rest[:3] if ")" in rest else pattern)
        on, off, end = m.group(1), m.group(2) or "", m.group(3)
        for flag in on + off:
            if flag not in "imsU":
                raise _go_error("invalid or unsupported Perl syntax", rest[: m.end()])
            if flag == "U":
                raise Untranslatable(pattern)
        flags = on + (f"-{off}" if off else "")
        if end == ":":
            out.append(f"(?{flags}:" if flags else "(?:")
            pending.append(0)
        else:
            if flags:
                out.append(f"(?{flags}:")
                pending[-1] += 1
        return i + m.end()
    out.append("(")
    pending.append(0)
    return i + 1


def _escape(pattern: str, i: int, *, in_class: bool) -> tuple[str, int]:
    """One escape sequence at `i`, as Python text."""
    if i + 1 >= len(pattern):
        raise _go_error("trailing backslash at end of expression", "")
    c = pattern[i + 1]
    if c in _PERL or c.lower() in _PERL:
        body = _PERL[c.lower()]
        if in_class:
            if c.isupper():
                raise Untranslatable(pattern)  # a negated class inside a class
            return body, i + 2
        return (f"[^{body}]" if c.isupper() else f"[{body}]"), i + 2
    if c in "pP":
        raise Untranslatable(pattern)
    if c == "z":
        if in_class:
            raise _go_error("invalid escape sequence", "\\z")
        return "\\Z", i + 2
    if c in "AbB" and not in_class:
        return "\\" + c, i + 2
    if c == "Q":
        end = pattern.find("\\E", i + 2)
        literal = pattern[i + 2:] if end < 0 else pattern[i + 2:end]
        return re.escape(literal), len(pattern) if end < 0 else end + 2
    if c == "x":
        if i + 2 < len(pattern) and pattern[i + 2] == "{":
            close = pattern.find("}", i + 3)
            digits = pattern[i + 3:close] if close > 0 else ""
            if close < 0 or not re.fullmatch(r"[0-9A-Fa-f]{1,8}", digits) or int(digits, 16) > 0x10FFFF:
                raise _go_error("invalid escape sequence", pattern[i:close + 1 if close > 0 else len(pattern)])
            return re.escape(chr(int(digits, 16))), close + 1
        hex2 = pattern[i + 2:i + 4]
        if not re.fullmatch(r"[0-9A-Fa-f]{2}", hex2):
            raise _go_error("invalid escape sequence", pattern[i:i + 4])
        return re.escape(chr(int(hex2, 16))), i + 4
    if c.isdigit():
        m = re.match(r"[0-7]{1,3}", pattern[i + 1:])
        if c == "0" or (m and len(m.group(0)) > 1):
            digits = m.group(0) if m else "0"
            return re.escape(chr(int(digits, 8))), i + 1 + len(digits)
        raise _go_error("invalid escape sequence", pattern[i:i + 2])
    if c in _SIMPLE_ESCAPES:
        return "\\" + c, i + 2
    if c.isalnum() or c == "_":
        raise _go_error("invalid escape sequence", pattern[i:i + 2])
    return re.escape(c), i + 2


def _char_class(pattern: str, i: int) -> tuple[str, int]:
    """A bracketed class at `i`: POSIX classes and Perl escapes spelled out, set operators escaped."""
    n = len(pattern)
    j = i + 1
    out = ["["]
    if j < n and pattern[j] == "^":
        out.append("^")
        j += 1
    first = True
    while j < n:
        c = pattern[j]
        if c == "]" and not first:
            out.append("]")
            return "".join(out), j + 1
        first = False
        if c == "[" and pattern.startswith("[:", j):
            end = pattern.find(":]", j + 2)
            name = pattern[j + 2:end] if end > 0 else ""
            if name.startswith("^") or name not in _POSIX:
                if name.lstrip("^") in _POSIX:
                    raise Untranslatable(pattern)
                raise _go_error("invalid character class range", pattern[j:end + 2 if end > 0 else n])
            out.append(_POSIX[name])
            j = end + 2
        elif c == "\\":
            text, j = _escape(pattern, j, in_class=True)
            out.append(text)
        elif c in "[&~|":
            out.append("\\" + c)
            j += 1
        else:
            out.append(c)
            j += 1
    raise _go_error("missing closing ]", pattern[i:])
