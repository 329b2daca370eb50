"""The details panel's YAML emitter (api/ui/static/yaml.js), run in the browser: what it writes reads
back (PyYAML, a YAML 1.1 reader: the strict one) as the value it was given — strings that look like
numbers, booleans, dates or YAML syntax quoted, nesting of mappings and sequences kept."""

from __future__ import annotations

import json
import random
from typing import Any

import yaml

from tests.browser.conftest import Cluster, PageFor

TRICKY = ["", " ", "a b", "yes", "No", "off", "y", "null", "~", "true", "1", "-1", "1.5", ".5", "1e3", "0x1F",
          "0o17", "1_000", "1:20", ".inf", "-.Inf", ".nan", "2026-12-05", "2026-12-05T14:00:00Z", "=", "<<",
          "- a", "a: b", "a #b", "a:", "#x", "&x", "*x", "!x", "%x", "@x", "`x", "|", ">", "{x}", "[x]", "'q'",
          '"q"', "trailing ", " leading", "multi\nline", "tab\there", "ünïcode ✓", "a:b", "x,y", "?x",
          "cplane why: gpu-node-0", "k8s.io/name", "80Gi", "10G"]

FIXED: list[Any] = [
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
     "metadata": {"name": "c", "labels": {"yes": "no", "1": "2"}, "annotations": {}},
     "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"count": 2, "deviceClassName": "gpu"}}]}},
     "status": {"allocation": {"devices": {"results": [{"device": "gpu-0", "consumedCapacity": {"memory": "10Gi"}}]}},
                "reservedFor": []}},
    [], {}, [[1, [2, []]], {"a": [{}]}], [{"a": 1, "b": [{"c": None}]}], 0, -0.5, 1e21, 1.5e-7, True, None, "x",
]


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 3 and roll < 0.3:
        return {rng.choice(TRICKY) + str(i % 2 or ""): _random_value(rng, depth + 1) for i in range(rng.randint(0, 4))}
    if depth < 3 and roll < 0.5:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return rng.choice([*TRICKY, rng.randint(-10**6, 10**6), rng.random(), True, False, None])


async def test_yaml_reads_back_as_the_value(empty_cluster: Cluster, page_for: PageFor) -> None:
    page = await page_for(empty_cluster)
    rng = random.Random(26)
    values = FIXED + [{"s": t} for t in TRICKY] + [_random_value(rng) for _ in range(300)]
    texts = await page.evaluate("async (values) => { const m = await import('/ui/yaml.js'); "
                                "return values.map((v) => m.toYaml(v)); }", values)
    for value, text in zip(values, texts, strict=True):
        assert yaml.safe_load(text) == json.loads(json.dumps(value)), text
    assert texts[0].startswith("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: c\n")
    assert '  labels:\n    "1": "2"\n    "yes": "no"\n  annotations: {}\n' in texts[0]  # JS: integer keys first
    assert "  - name: gpu\n" in texts[0]
