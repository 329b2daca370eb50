"""Log lines for machines (`--log-format json`): a logged exception carries its type and message
under fixed keys, not just `"exc_info": true` (issue #17, item 10)."""

from __future__ import annotations

import json

import pytest
import structlog

from cp import logs


def test_a_json_line_names_the_exception(capsys: pytest.CaptureFixture[str]) -> None:
    logs.configure(fmt="json")
    try:
        raise ConnectionResetError("Connection lost")
    except ConnectionResetError:
        structlog.get_logger("cplane.api").exception("request_failed", path="/api/v1/pods")
    line = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert line["event"] == "request_failed" and line["level"] == "error" and line["path"] == "/api/v1/pods"
    assert line["error_type"] == "ConnectionResetError" and line["error"] == "Connection lost"
    assert line["traceback"].startswith("Traceback") and "exc_info" not in line


def test_a_json_line_without_an_exception_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    logs.configure(fmt="json")
    structlog.get_logger("cplane").info("serving", url="http://127.0.0.1:1")
    line = json.loads(capsys.readouterr().err.strip())
    assert {k: line[k] for k in ("event", "url", "level")} == {"event": "serving", "url": "http://127.0.0.1:1",
                                                               "level": "info"}
    assert "error" not in line and "traceback" not in line
