"""The mypy gate's bookkeeping (tests/tools/mypy_baseline.py), on made-up mypy output."""

from __future__ import annotations

from pathlib import Path

from tests.tools import mypy_baseline as mb

OUTPUT = """\
api/app.py:66: error: Assignment to variable "err" outside except: block  [misc]
api/app.py:66: note: See https://mypy.readthedocs.io/en/stable/_refs.html#code-misc
api/app.py:70: error: Assignment to variable "err" outside except: block  [misc]
controllers/hpa.py:12:5: error: Name "x" already defined on line 3  [no-redef]
"""


def test_parse_drops_notes_and_columns() -> None:
    errors = mb.parse(output=OUTPUT)
    assert [str(e) for e in errors] == [
        'api/app.py:66: Assignment to variable "err" outside except: block  [misc]',
        'api/app.py:70: Assignment to variable "err" outside except: block  [misc]',
        'controllers/hpa.py:12: Name "x" already defined on line 3  [no-redef]',
    ]
    # no line numbers in the baseline: neither the error's nor one its message names
    assert errors[2].key == 'controllers/hpa.py: Name "x" already defined on line N  [no-redef]'


def test_the_baseline_allows_its_errors_as_often_as_it_lists_them() -> None:
    errors = mb.parse(output=OUTPUT)
    keys = [e.key for e in errors]
    assert mb.judge(errors=errors, baseline=keys).ok
    one_less = mb.judge(errors=errors, baseline=keys[1:])
    assert [e.line for e in one_less.new] == [66]
    assert not one_less.fixed and not one_less.ok


def test_fixed_errors_fail_until_the_baseline_shrinks() -> None:
    errors = mb.parse(output=OUTPUT)
    verdict = mb.judge(errors=errors[1:], baseline=[e.key for e in errors])
    assert verdict.fixed == [errors[0].key]
    assert not verdict.new and not verdict.ok
    assert verdict.current == sorted(e.key for e in errors[1:])


def test_cp_and_storage_are_never_baselined() -> None:
    error = mb.MypyError(path="storage/log.py", line=1, message="Bad  [misc]")
    verdict = mb.judge(errors=[error], baseline=[error.key])
    assert verdict.strict == [error]
    assert verdict.current == []
    assert verdict.fixed == [error.key]  # an entry for cp/ or storage/ is stale by definition


def test_the_baseline_file_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "baseline.txt"
    lines = ["b.py: two  [misc]", "a.py: one  [misc]", "a.py: one  [misc]"]
    mb.write_baseline(path=path, lines=lines)
    assert path.read_text().startswith("#")
    assert mb.read_baseline(path=path) == sorted(lines)
    assert mb.read_baseline(path=tmp_path / "missing.txt") == []
