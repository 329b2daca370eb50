"""cp/validation and cp/defaulting load the rules and defaults of the cluster configuration groups on the
first object of a group, not at import: `cplane serve` starts without them (start-up budget)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import sys
import cp.defaulting, cp.validation
lazy = ("cp.validation.networking", "cp.validation.admission", "cp.defaulting.networking", "cryptography")
print(*(m in sys.modules for m in lazy))
slice_ = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "s", "namespace": "d"},
          "addressType": "IPv4", "ports": [{"port": 80}]}
cp.defaulting.apply_defaults(slice_, group="discovery.k8s.io", version="v1", kind="EndpointSlice")
cp.validation.validate_create(slice_, group="discovery.k8s.io", version="v1", kind="EndpointSlice", namespaced=True)
print(*(m in sys.modules for m in lazy), slice_["ports"][0]["protocol"])
"""


def test_cluster_configuration_rules_load_on_first_use() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parents[3])
    assert out.stdout.splitlines() == ["False False False False", "True False True False TCP"]
