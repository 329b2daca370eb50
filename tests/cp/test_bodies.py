"""cp.bodies: the one YAML decoder refuses alias bombs before expanding them, and bounds what a body decodes to.

The aliasing rule is go-yaml's (`yaml: document contains excessive aliasing`, its decoder's alias ratio);
each refusal must come at once and without building the expansion, which the tests check with a wall-clock
bound and tracemalloc's peak (the composed YAML nodes are Python objects, so they are traced).
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest

from cp import bodies, errors

PREFIX = "couldn't decode: "
WITHIN = 2.0  # seconds; the bombs below took 7 to 20 s (and 1 to 2.6 GB) before the guard
PEAK = 20 * 1024 * 1024  # bytes of Python allocations a refusal may need


def bomb(levels: int, *, fan: int = 9) -> bytes:
    """The "billion laughs": `a0` holds `fan` strings, each `aN` holds `fan` aliases of `aN-1`."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: bomb}", "data:", "  a0: &a0 ["
             + ", ".join(['"lol"'] * fan) + "]"]
    lines += [f"  a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * fan) + "]" for n in range(1, levels)]
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def bounded() -> Iterator[Callable[[bytes], Any]]:
    """Decode with `PREFIX`, failing the test if it takes longer than `WITHIN` or allocates more than `PEAK`."""
    tracemalloc.start()
    try:
        def decode(body: bytes) -> Any:
            tracemalloc.reset_peak()
            start = time.perf_counter()
            try:
                return bodies.decode_yaml(body, error_prefix=PREFIX)
            finally:
                elapsed = time.perf_counter() - start
                peak = tracemalloc.get_traced_memory()[1]
                assert elapsed < WITHIN, f"took {elapsed:.1f} s"
                assert peak < PEAK, f"allocated {peak} bytes"

        yield decode
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("levels", [9, 8, 5])
def test_alias_bomb_is_refused_before_expansion(bounded: Callable[[bytes], Any], levels: int) -> None:
    body = bomb(levels)
    assert len(body) < 1024
    with pytest.raises(errors.BadRequest) as info:
        bounded(body)
    assert info.value.code == 400 and info.value.reason == "BadRequest"
    assert info.value.message == f"{PREFIX}yaml: document contains excessive aliasing"


def test_heavy_aliasing_of_one_flat_list_is_refused_as_go_yaml_does(bounded: Callable[[bytes], Any]) -> None:
    # go-yaml decodes ~90,900 nodes here, 90,300 of them inside aliases: a ratio of 0.993 > 0.99.
    body = b"a: &a [" + b", ".join([b"x"] * 300) + b"]\nb: [" + b", ".join([b"*a"] * 300) + b"]\n"
    with pytest.raises(errors.BadRequest) as info:
        bounded(body)
    assert info.value.message == f"{PREFIX}yaml: document contains excessive aliasing"


def test_moderate_aliasing_is_expanded(bounded: Callable[[bytes], Any]) -> None:
    # 100 aliases of a 100-item list: ~10,300 nodes decoded, 98 % from aliases; go-yaml allows 99 %.
    body = b"a: &a [" + b", ".join([b"x"] * 100) + b"]\nb: [" + b", ".join([b"*a"] * 100) + b"]\n"
    out = bounded(body)
    assert out["b"] == [["x"] * 100] * 100
    small = bounded(bomb(3))  # 9 x 9 strings: under go-yaml's 1000-node floor
    assert small["data"]["a2"] == [[["lol"] * 9] * 9] * 9


@pytest.mark.parametrize(("body", "anchor"), [
    (b"a: &a\n  b: *a\n", "a"),
    (b"spec: &loop [1, [2, *loop]]\n", "loop"),
    (b"x: !!map &m {k: *m}\n", "m"),
    ("données: {clé: &ete [*ete]}\n".encode(), "ete"),  # marks count characters, not bytes
])
def test_recursive_alias_is_refused(bounded: Callable[[bytes], Any], body: bytes, anchor: str) -> None:
    with pytest.raises(errors.BadRequest) as info:
        bounded(body)
    assert info.value.message == f"{PREFIX}yaml: anchor '{anchor}' value contains itself"


def test_few_aliases_of_a_large_value_are_413(bounded: Callable[[bytes], Any]) -> None:
    # 1 MB named 5 times: not excessive aliasing by go-yaml's ratio, but 5 MB of JSON (refused when the
    # list holding the aliases ends: 5 quoted strings, commas and brackets).
    body = b'v: &v "' + b"x" * 1_000_000 + b'"\nl: [' + b", ".join([b"*v"] * 5) + b"]\n"
    with pytest.raises(errors.RequestEntityTooLarge) as info:
        bounded(body)
    assert info.value.code == 413 and info.value.reason == "RequestEntityTooLarge"
    assert info.value.message == ("Request entity too large: the YAML document expands to at least 5000016 bytes "
                                  "of JSON, limit is 3145728")


def test_a_document_that_stays_within_the_bound_decodes(bounded: Callable[[bytes], Any]) -> None:
    body = b'v: &v "' + b"x" * 1_000_000 + b'"\nl: [*v, *v]\n'
    out = bounded(body)
    assert out["l"] == ["x" * 1_000_000] * 2


def test_helm_style_anchors_and_merge_keys_decode_into_unshared_values() -> None:
    body = b"""\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: &labels {app: web, tier: fe}}
spec:
  selector: {matchLabels: *labels}
  template:
    metadata: {labels: *labels}
    spec:
      containers:
      - &base {name: web, image: nginx, env: [{name: A, value: "1"}]}
      - <<: *base
        name: sidecar
"""
    out = bodies.decode_yaml(body, error_prefix=PREFIX)
    labels = {"app": "web", "tier": "fe"}
    base = {"name": "web", "image": "nginx", "env": [{"name": "A", "value": "1"}]}
    assert out == {"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "web", "labels": labels},
                   "spec": {"selector": {"matchLabels": labels},
                            "template": {"metadata": {"labels": labels},
                                         "spec": {"containers": [base, {**base, "name": "sidecar"}]}}}}
    # Each alias is its own copy: editing the result in place (defaulting does) touches one place only.
    out["spec"]["selector"]["matchLabels"]["extra"] = "x"
    out["spec"]["template"]["spec"]["containers"][1]["env"].append({"name": "B"})
    assert out["metadata"]["labels"] == labels
    assert out["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]


def test_values_are_json_shaped_as_sigs_k8s_io_yaml_makes_them() -> None:
    out = bodies.decode_yaml(b"when: 2024-01-02T03:04:05Z\nday: 2024-01-02\n1: one\ntrue: yes\nnull: n\n"
                             b"1.5: f\nbin: !!binary aGVsbG8=\n", error_prefix=PREFIX)
    assert out == {"when": "2024-01-02T03:04:05Z", "day": "2024-01-02", "1": "one", "true": True, "null": "n",
                   "1.5": "f", "bin": "aGVsbG8="}


@pytest.mark.parametrize(("body", "expected"), [(b"", None), (b"[1, 2]\n", [1, 2]), (b'{"a": 1}', {"a": 1})])
def test_any_document_shape_is_returned(body: bytes, expected: Any) -> None:
    assert bodies.decode_yaml(body, error_prefix=PREFIX) == expected


@pytest.mark.parametrize("body", [b"a: [1\n", b"a: 1\n---\nb: 2\n", b"a: *nowhere\n", b"? [x]\n: y\n",
                                  b"n: !!int " + b"9" * 5000 + b"\n", b"\xff\xfe\x00"])
def test_malformed_yaml_is_400_with_the_callers_prefix(body: bytes) -> None:
    with pytest.raises(errors.BadRequest) as info:
        bodies.decode_yaml(body, error_prefix=PREFIX)
    assert info.value.message.startswith(PREFIX)


def test_encoded_size_check() -> None:
    bodies.check_encoded_size({"k": "x" * (bodies.MAX_BYTES - 10)}, what="the thing")
    with pytest.raises(errors.RequestEntityTooLarge) as info:
        bodies.check_encoded_size({"k": "x" * bodies.MAX_BYTES}, what="the thing")
    assert info.value.message == (f"Request entity too large: the thing is {bodies.MAX_BYTES + 8} bytes, "
                                  f"limit is {bodies.MAX_BYTES}")


def test_json_bodies_skip_the_yaml_parser() -> None:
    """kubectl's server-side apply bodies are JSON: decoded at JSON speed, the same values YAML gives."""
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
           "data": {f"k{i}": "v" for i in range(50_000)}}
    body = msgspec.json.encode(doc)
    started = time.perf_counter()
    assert bodies.decode_yaml(body, error_prefix="") == doc
    assert time.perf_counter() - started < 0.2
    assert bodies.decode_yaml(b" {a: 1, b: [x, y]}", error_prefix="") == {"a": 1, "b": ["x", "y"]}  # flow YAML
