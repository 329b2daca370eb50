"""Check `cp.protobuf` against upstream's serialization fixtures: bytes Go wrote, compared to ours.

k8s.io/api keeps, for every kind of every group/version, the same object serialized by Go as JSON and
as protobuf (`testdata/<release>/<group>.<version>.<Kind>.{json,pb}`, every field set in `HEAD`; older
releases lack newer fields, which exercises unset pointers and zero values). For each fixture of a kind
the table has, this checks both directions:

- decode: `cp.protobuf.decode(pb)` equals the JSON fixture (Go's `encoding/json` of the same object);
- encode: `cp.protobuf.encode(json)` equals the protobuf fixture byte for byte (Go's marshaler).

It reads the fixtures from a kubernetes/api git repository (clone or bare mirror) and copies nothing:

    .venv/bin/python -m tools.protobuf_fixtures ~/src/kubernetes/api [--release HEAD] [-v]
    .venv/bin/python -m tools.protobuf_fixtures ~/src/kubernetes/apiextensions-apiserver \\
        --folder pkg/apis/testdata

A fixture of an older release is compared to its `after_roundtrip` files where upstream has them.
Exit status 1 when any fixture differs.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _git(repo: pathlib.Path, *args: str, text: bool = True) -> Any:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=text).stdout


def _diff(a: Any, b: Any, path: str = "") -> str:
    """The first place two JSON values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a:
                return f"{path}.{key}: missing (want {json.dumps(b[key])[:80]})"
            if key not in b:
                return f"{path}.{key}: unexpected {json.dumps(a[key])[:80]}"
            found = _diff(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        return ""
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _diff(x, y, f"{path}[{i}]")
            if found:
                return found
        return ""
    return "" if a == b and type(a) is type(b) else f"{path}: {json.dumps(a)[:80]} != {json.dumps(b)[:80]}"


def _first_byte_difference(a: bytes, b: bytes) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"byte {i}: ours {a[i:i + 12].hex()} upstream {b[i:i + 12].hex()}"
    return f"lengths {len(a)} != {len(b)}"


def check(repo: pathlib.Path, release: str, *, folder: str, verbose: bool) -> int:
    sys.path.insert(0, str(ROOT))
    from cp import protobuf

    commit = _git(repo, "rev-parse", "HEAD^{commit}").strip()
    names = [line for line in _git(repo, "ls-tree", "--name-only", commit, f"{folder}/{release}/").splitlines()
             if line.endswith(".pb") and ".after_roundtrip." not in line]
    checked = failed = skipped = 0
    for pb_path in names:
        stem = pb_path[:-3]
        raw_pb: bytes = _git(repo, "show", f"{commit}:{pb_path}", text=False)
        api_version, kind = _type_of(raw_pb)
        if not protobuf.supports(api_version=api_version, kind=kind):
            skipped += 1
            continue
        expected_json = json.loads(_git(repo, "show", f"{commit}:{stem}.json"))
        after = f"{stem}.after_roundtrip"
        try:
            expected_json_rt = json.loads(_git(repo, "show", f"{commit}:{after}.json"))
        except subprocess.CalledProcessError:
            expected_json_rt = expected_json
        try:
            expected_pb_rt: bytes = _git(repo, "show", f"{commit}:{after}.pb", text=False)
        except subprocess.CalledProcessError:
            expected_pb_rt = raw_pb
        checked += 1
        problems = []
        try:
            decoded = protobuf.decode(raw_pb)
            found = _diff(decoded, expected_json_rt)
            if found:
                problems.append(f"decode {found}")
        except Exception as e:  # a report, not a crash: every fixture is checked
            problems.append(f"decode raised {e!r}")
        try:
            body = {k: v for k, v in expected_json.items() if k not in ("kind", "apiVersion")}
            encoded = protobuf.encode(body, api_version=api_version, kind=kind)
            if encoded != expected_pb_rt:
                problems.append(f"encode {_first_byte_difference(encoded, expected_pb_rt)}")
        except Exception as e:  # a report, not a crash
            problems.append(f"encode raised {e!r}")
        if problems:
            failed += 1
            print(f"FAIL {stem.rsplit('/', 1)[1]}: " + "; ".join(problems))
        elif verbose:
            print(f"ok   {stem.rsplit('/', 1)[1]}")
    print(f"{folder}/{release}: {checked} fixtures checked, {failed} differ, {skipped} of kinds without a "
          f"message ({repo} {commit[:12]})")
    return 1 if failed else 0


def _type_of(body: bytes) -> tuple[str, str]:
    from cp.protobuf.wire import envelope

    api_version, kind, *_ = envelope(body)
    return api_version, kind


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=pathlib.Path, help="a kubernetes/api git repository")
    parser.add_argument("--folder", default="testdata",
                        help="where the releases are (apiextensions-apiserver: pkg/apis/testdata)")
    parser.add_argument("--release", action="append", help="testdata folder (default HEAD; repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    status = 0
    for release in args.release or ["HEAD"]:
        status |= check(args.repo.expanduser(), release, folder=args.folder, verbose=args.verbose)
    return status


if __name__ == "__main__":
    sys.exit(main())
