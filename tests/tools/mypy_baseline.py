"""The mypy step of `make lint`: `mypy --strict` over cp/, storage/, api/ and controllers/ in one run.

- cp/ and storage/ must have no error at all.
- api/ and controllers/ may keep the errors listed in tests/tools/mypy-baseline.txt, and no others.
  The baseline may only shrink: when errors are fixed, the check fails until the smaller baseline is
  written (`--update`) and committed, so that a fixed error cannot come back unnoticed.

An error is recorded as `path: message  [code]`, without its line number, so that editing a file
does not invalidate the baseline; the same message twice in one file is recorded twice.

    python tests/tools/mypy_baseline.py               # check (what `make lint` runs)
    python tests/tools/mypy_baseline.py --update      # drop the errors that were fixed
    python tests/tools/mypy_baseline.py --regenerate  # write today's errors (after a move renames
                                                      # files; review the diff: it must not grow)
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[2]
BASELINE = Path(__file__).with_name("mypy-baseline.txt")
STRICT_PACKAGES = ("cp/", "storage/")
HEADER = (
    "# mypy --strict errors that api/ and controllers/ still have (tests/tools/mypy_baseline.py).\n"
    "# This list may only shrink. cp/ and storage/ are not in it: they must stay clean.\n"
)

_ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):(?P<line>\d+):(?:\d+:)? error: (?P<message>.*)$")
_LINE_REFERENCE = re.compile(r"\bline \d+")


class MypyError(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    line: int
    message: str

    @property
    def key(self) -> str:
        """The baseline's line for this error. Some messages name another line ("defined on line
        12"); that number moves as the file is edited, so it is left out too."""
        return f"{self.path}: {_LINE_REFERENCE.sub('line N', self.message)}"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    strict: list[MypyError]  # errors in cp/ or storage/: never allowed
    new: list[MypyError]  # errors elsewhere that the baseline does not list
    fixed: list[str]  # baseline lines that no longer occur
    current: list[str]  # the baseline lines of today's errors outside cp/ and storage/

    @property
    def ok(self) -> bool:
        return not (self.strict or self.new or self.fixed)


def parse(*, output: str) -> list[MypyError]:
    """The errors in mypy's output, notes dropped."""
    errors = []
    for text in output.splitlines():
        match = _ERROR.match(text)
        if match:
            path = Path(match["path"]).as_posix()
            errors.append(MypyError(path=path, line=int(match["line"]), message=match["message"]))
    return errors


def judge(*, errors: list[MypyError], baseline: list[str]) -> Verdict:
    strict = [e for e in errors if e.path.startswith(STRICT_PACKAGES)]
    rest = [e for e in errors if not e.path.startswith(STRICT_PACKAGES)]
    current = Counter(e.key for e in rest)
    allowed = Counter(baseline)
    unexplained = current - allowed
    new = []
    for error in rest:  # of several equal messages, the first ones are shown as new
        if unexplained[error.key] > 0:
            unexplained[error.key] -= 1
            new.append(error)
    return Verdict(
        strict=strict,
        new=new,
        fixed=sorted((allowed - current).elements()),
        current=sorted(current.elements()),
    )


def run_mypy() -> str:
    """mypy's output with the project's [tool.mypy] settings (pyproject.toml)."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--no-pretty", "--no-color-output"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in (0, 1):  # 2: mypy itself failed (bad configuration, crash)
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(proc.returncode)
    return proc.stdout


def read_baseline(*, path: Path) -> list[str]:
    if not path.exists():
        return []
    return [line for line in path.read_text().splitlines() if line and not line.startswith("#")]


def write_baseline(*, path: Path, lines: list[str]) -> None:
    path.write_text(HEADER + "".join(f"{line}\n" for line in sorted(lines)))


def _show(title: str, items: list[MypyError] | list[str]) -> None:
    print(title)
    print("".join(f"  {item}\n" for item in items), end="")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--update", action="store_true", help="drop the fixed errors from the baseline")
    mode.add_argument("--regenerate", action="store_true", help="write today's errors as the baseline")
    args = parser.parse_args(argv)

    baseline = read_baseline(path=BASELINE)
    verdict = judge(errors=parse(output=run_mypy()), baseline=baseline)
    rel = BASELINE.relative_to(ROOT)

    if verdict.strict:
        _show(f"mypy --strict: {len(verdict.strict)} error(s) in cp/ or storage/ (there must be none):",
              verdict.strict)
    if args.regenerate:
        write_baseline(path=BASELINE, lines=verdict.current)
        print(f"{rel}: {len(baseline)} -> {len(verdict.current)} error(s); review the diff before committing")
        return 1 if verdict.strict else 0
    if verdict.new:
        _show(f"mypy --strict: {len(verdict.new)} error(s) not in {rel} (fix them: it may only shrink):",
              verdict.new)
    if args.update:
        if verdict.new:
            print(f"{rel} not updated: fix the new errors first")
            return 1
        write_baseline(path=BASELINE, lines=verdict.current)  # today's errors are a part of it
        print(f"{rel}: {len(verdict.fixed)} fixed error(s) dropped; commit it")
        return 1 if verdict.strict else 0
    if verdict.fixed:
        _show(f"mypy --strict: {len(verdict.fixed)} error(s) in {rel} are fixed; drop them with "
              f"`python tests/tools/mypy_baseline.py --update` and commit the smaller baseline:",
              verdict.fixed)
    if verdict.ok:
        print(f"mypy --strict: cp/ and storage/ clean; api/ and controllers/ have "
              f"{len(verdict.current)} error(s), all in {rel}")
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
