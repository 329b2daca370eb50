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
        # Some messages name another line ("defined on line 12"); that moves as the file is edited.
        return f"{self.path}: {_LINE_REFERENCE.sub('line N', self.message)}"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def run_mypy() -> list[MypyError]:
    """Run mypy with the project's [tool.mypy] settings and return its errors (notes dropped)."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--no-pretty", "--no-color-output"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in (0, 1):  # 2: mypy itself failed (bad config, crash)
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(proc.returncode)
    errors = []
    for text in proc.stdout.splitlines():
        match = _ERROR.match(text)
        if match:
            errors.append(
                MypyError(
                    path=Path(match["path"]).as_posix(),
                    line=int(match["line"]),
                    message=match["message"],
                )
            )
    return errors


def read_baseline(*, path: Path) -> Counter[str]:
    if not path.exists():
        return Counter()
    lines = path.read_text().splitlines()
    return Counter(line for line in lines if line and not line.startswith("#"))


def write_baseline(*, path: Path, keys: Counter[str]) -> None:
    path.write_text(HEADER + "".join(f"{key}\n" for key in sorted(keys.elements())))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--update", action="store_true", help="drop the fixed errors from the baseline")
    mode.add_argument("--regenerate", action="store_true", help="write today's errors as the baseline")
    args = parser.parse_args(argv)

    errors = run_mypy()
    strict = [e for e in errors if e.path.startswith(STRICT_PACKAGES)]
    rest = [e for e in errors if not e.path.startswith(STRICT_PACKAGES)]
    current = Counter(e.key for e in rest)
    baseline = read_baseline(path=BASELINE)
    fixed = baseline - current
    unexplained = current - baseline
    new = []
    for error in rest:  # which of several equal messages is "new" is arbitrary: show the first ones
        if unexplained[error.key] > 0:
            unexplained[error.key] -= 1
            new.append(error)
    rel = BASELINE.relative_to(ROOT)
    status = 0

    if strict:
        print(f"mypy --strict: {len(strict)} error(s) in {', '.join(STRICT_PACKAGES)} (must be none):")
        print("".join(f"  {e}\n" for e in strict), end="")
        status = 1

    if args.regenerate:
        write_baseline(path=BASELINE, keys=current)
        print(f"{rel}: {sum(baseline.values())} -> {sum(current.values())} error(s); review the diff")
        return status
    if new:
        print(f"mypy --strict: {len(new)} error(s) not in {rel} (fix them; the baseline may only shrink):")
        print("".join(f"  {e}\n" for e in new), end="")
        status = 1
    if fixed and args.update:
        if not new:
            write_baseline(path=BASELINE, keys=baseline - fixed)
            print(f"{rel}: {fixed.total()} fixed error(s) dropped; commit it")
    elif fixed:
        print(
            f"mypy --strict: {fixed.total()} error(s) in {rel} are fixed; drop them with "
            f"`python tests/tools/mypy_baseline.py --update` and commit the smaller baseline:"
        )
        print("".join(f"  {key}\n" for key in sorted(fixed.elements())), end="")
        status = 1
    if status == 0:
        print(
            f"mypy --strict: cp/ and storage/ clean; api/ and controllers/ "
            f"{sum(current.values())} error(s), all in {rel}"
        )
    return status


if __name__ == "__main__":
    raise SystemExit(main())
