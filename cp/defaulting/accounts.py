"""Secrets as kube-apiserver decodes them: `stringData` merged into `data` (each value's UTF-8
bytes, replacing a `data` entry of the same key) and dropped, as the v1 to internal conversion does;
`type` defaults to `Opaque`. Pure."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any


def _default_secret(obj: dict[str, Any]) -> None:
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.get("data")
        if not isinstance(data, dict):
            data = obj["data"] = {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value if value is not None else "").encode()).decode()
    if not obj.get("type"):
        obj["type"] = "Opaque"


DEFAULTERS: dict[tuple[str, str, str], Callable[[dict[str, Any]], None]] = {
    ("", "v1", "Secret"): _default_secret,
}
