"""The diff kube-apiserver appends to some immutability messages (apimachinery `diff.Diff`): both values
as Go's `json.MarshalIndent` writes the internal structs (Go field names, one space of indent), compared
line by line as a unified diff with three lines of context and no file headers. Pure."""

from __future__ import annotations

import difflib
import json
from typing import Any


def go_json(value: Any) -> str:
    """json.MarshalIndent(value, "", " ") of an already Go-shaped value (dicts keep their order)."""
    text = json.dumps(value, indent=1, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def unified(old: Any, new: Any) -> str:
    a = [line + "\n" for line in go_json(old).split("\n")]
    b = [line + "\n" for line in go_json(new).split("\n")]
    lines = list(difflib.unified_diff(a, b, n=3))
    return "".join(lines[2:])  # without the `---`/`+++` headers
