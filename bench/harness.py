"""What the benchmarks share: waiting for a `cplane serve` process to be ready."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

import aiohttp


async def wait_ready(data_dir: Path, proc: subprocess.Popen[bytes], deadline: float, *,
                     verify: bool = True) -> str:
    """Poll DATA_DIR/kubeconfig for the server URL, then `/readyz` until 200; return the URL.
    `verify=False`: do not check a TLS server's certificate (its CA is made as it starts)."""
    kubeconfig = data_dir / "kubeconfig"
    url = ""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=None if verify else False)) as s:
        while time.perf_counter() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}")
            if not url and kubeconfig.exists():
                for line in kubeconfig.read_text().splitlines():
                    if line.strip().startswith("server:"):
                        url = line.split("server:", 1)[1].strip()
            if url:
                try:
                    async with s.get(url + "/readyz") as r:
                        if r.status == 200:
                            return url
                except aiohttp.ClientError:
                    pass
            await asyncio.sleep(0.002)
    raise TimeoutError("server not ready")


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) process `pid` used so far, from Linux's /proc; None when it cannot
    be read (another OS, or the process is gone). Other tenants of the machine do not distort it,
    unlike wall time."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
