"""@kubernetes/client-node (the JavaScript client, pinned in tests/clients/node/) with the kubeconfig
`cplane serve --insecure` writes: the client refuses an `http://` server unless its cluster entry says
`insecure-skip-tls-verify: true`, so the kubeconfig says it; with it, the client writes and reads.

`make test` installs the client (tests/tools/fetch-client-node.sh into .venv/node); without it (or
without Node.js) the test is skipped. Out of scope: what the client library does beyond a few calls.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from api import server as servers

ROOT = Path(__file__).resolve().parents[2]
INSTALLED = Path(os.environ.get("CPLANE_CLIENT_NODE_DIR", ROOT / ".venv" / "node"))
SCRIPT = Path(__file__).with_name("node") / "client.mjs"
NODE = shutil.which("node")


async def _run_client(kubeconfig: Path, name: str) -> tuple[int, dict[str, Any]]:
    if NODE is None or not (INSTALLED / "node_modules" / "@kubernetes" / "client-node").is_dir():
        pytest.skip("@kubernetes/client-node not installed: run `make test` (tests/tools/fetch-client-node.sh)")
    # The script comes on stdin, so its imports resolve from the install directory (the working one).
    proc = await asyncio.create_subprocess_exec(
        NODE, "--input-type=module", "-", name, cwd=INSTALLED,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(kubeconfig.parent), "KUBECONFIG": str(kubeconfig),
             "NO_PROXY": "127.0.0.1"},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(SCRIPT.read_bytes()), 60)
    assert out.strip(), err.decode(errors="replace")
    return proc.returncode or 0, json.loads(out.decode().strip().splitlines()[-1])


async def test_the_insecure_kubeconfig_works_with_client_node(api_server: servers.Running) -> None:
    text = api_server.kubeconfig.read_text()
    assert api_server.url.startswith("http://") and "    insecure-skip-tls-verify: true\n" in text
    code, out = await _run_client(api_server.kubeconfig, "from-js")
    assert code == 0, out
    assert out["data"] == {"from": "client-node"}
    assert {"default", "kube-system"} <= set(out["namespaces"])


async def test_without_the_flag_client_node_refuses_http(api_server: servers.Running, tmp_path: Path) -> None:
    """Why the kubeconfig carries the flag: the same kubeconfig without it is refused by the client."""
    bare = tmp_path / "bare.kubeconfig"
    bare.write_text(api_server.kubeconfig.read_text().replace("    insecure-skip-tls-verify: true\n", ""))
    code, out = await _run_client(bare, "refused")
    assert code == 1 and "HTTP protocol is not allowed when skipTLSVerify is not set or false" in out["error"]
