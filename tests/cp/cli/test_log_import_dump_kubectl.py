"""A small DRA cluster dumped by the real kubectl (`kubectl get ... -A -o yaml`, `kubectl cluster-info
dump`), imported with `cplane log import --dump` into an empty data dir: `cplane why` gives the imported
Pending pod the same answer as the source cluster's own log, the objects keep their uids and status,
and a fork of the imported state with the scheduler places the pod once a slice is added."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from cp import cli, testing
from tests import recordings
from tests.kubectl import manifests
from tests.kubectl.conftest import kubectl_on

CLAIMS = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: one
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: three
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        allocationMode: ExactCount
        count: 3
"""


def pod(name: str, claim: str) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: c
    image: nginx:1.27
    resources:
      claims:
      - name: gpus
  resourceClaims:
  - name: gpus
    resourceClaimName: {claim}
"""


KINDS = "namespaces,nodes,deviceclasses,resourceslices,resourceclaims,pods,secrets,configmaps"


async def cplane(capsys: Any, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(cli.main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def dump_a_dra_cluster(tmp_path: Path, *, cluster_info: bool = False) -> Path:
    """A node with two GPUs, a pod holding one of them, a pod asking for three (Pending), a Secret:
    dumped by kubectl into a file. The source's data dir is tmp_path/source."""
    async with testing.sandbox(data_dir=tmp_path / "source", controllers=["scheduler"]) as sb, \
            kubectl_on(sb, tmp_path) as kubectl:
        await kubectl("apply", "-f", "-", input=manifests.docs(manifests.NODE, manifests.DEVICE_CLASS,
                                                               manifests.RESOURCE_SLICE, CLAIMS))
        await kubectl("apply", "-f", "-", input=manifests.docs(pod("small", "one"), pod("big", "three")))
        await kubectl("create", "secret", "generic", "token", "--from-literal=password=hunter2")

        async def settled() -> bool:
            small = await sb.client.get("pods", "small", namespace="default")
            big = await sb.client.get("pods", "big", namespace="default")
            conditions = {c["type"]: c["status"] for c in big.get("status", {}).get("conditions", [])}
            return bool(small["spec"].get("nodeName")) and conditions.get("PodScheduled") == "False"

        await sb.wait_for(settled, timeout=20)
        out = await kubectl("get", KINDS, "-A", "-o", "yaml")
        if cluster_info:
            await kubectl("cluster-info", "dump", "-A", "--output-directory", str(tmp_path / "cluster-state"))
            stream = await kubectl("cluster-info", "dump", "-A")
            (tmp_path / "cluster-info.txt").write_text(stream.stdout)
    dump = tmp_path / "dump.yaml"
    dump.write_text(out.stdout)
    return dump


async def test_why_on_an_imported_kubectl_dump(tmp_path: Path, capsys: Any) -> None:
    dump = await dump_a_dra_cluster(tmp_path)
    imported = tmp_path / "imported"
    code, _, err = await cplane(capsys, "log", "import", "--dump", str(dump), "--data-dir", str(imported))
    assert code == 0, err
    assert imported.stat().st_mode & 0o777 == 0o700
    assert "imported " in err

    code, source_why, err = await cplane(capsys, "why", "pod/big", "--data-dir", str(tmp_path / "source"),
                                         "-o", "json")
    assert code == 0, err
    code, imported_why, err = await cplane(capsys, "why", "pod/big", "--data-dir", str(imported), "-o", "json")
    assert code == 0, err

    def answer(text: str) -> Any:
        doc = json.loads(text)
        del doc["metadata"]["resourceVersion"]  # the revision asked about: each log numbers its own
        return doc

    assert answer(imported_why) == answer(source_why)
    code, text, _ = await cplane(capsys, "why", "pod/big", "--data-dir", str(imported))
    assert code == 0 and "gpu" in text

    # Names, uids, owner references and status survive; the Secret's value does not.
    code, out, _ = await cplane(capsys, "log", "show", "--data-dir", str(imported), "pods", "-o", "json")
    pods = {p["metadata"]["name"]: p for p in json.loads(out)["items"]}
    code, src, _ = await cplane(capsys, "log", "show", "--data-dir", str(tmp_path / "source"), "pods", "-o", "json")
    source_pods = {p["metadata"]["name"]: p for p in json.loads(src)["items"]}
    for name in ("small", "big"):
        assert pods[name]["metadata"]["uid"] == source_pods[name]["metadata"]["uid"]
        assert pods[name]["status"] == source_pods[name]["status"]
        assert pods[name]["spec"] == source_pods[name]["spec"]
    code, out, _ = await cplane(capsys, "log", "show", "--data-dir", str(imported), "secrets", "-o", "json")
    secret = next(s for s in json.loads(out)["items"] if s["metadata"]["name"] == "token")
    assert secret["data"] == {"password": "REDACTED"}
    code, out, _ = await cplane(capsys, "log", "show", "--data-dir", str(imported), "resourceclaims.resource.k8s.io",
                                "-o", "json")
    claims = {c["metadata"]["name"]: c for c in json.loads(out)["items"]}
    assert claims["one"]["status"]["allocation"]["devices"]["results"][0]["device"] in ("gpu-0", "gpu-1")
    assert "allocation" not in claims["three"].get("status", {})


@pytest.mark.parametrize("flag", ["--keep-secrets"])
async def test_keep_secrets_keeps_the_dumps_values(tmp_path: Path, capsys: Any, flag: str) -> None:
    dump = await dump_a_dra_cluster(tmp_path)
    code, _, err = await cplane(capsys, "log", "import", "--dump", str(dump), "--data-dir", str(tmp_path / "i"), flag)
    assert code == 0, err
    code, out, _ = await cplane(capsys, "log", "show", "--data-dir", str(tmp_path / "i"), "secrets", "-o", "json")
    secret = next(s for s in json.loads(out)["items"] if s["metadata"]["name"] == "token")
    assert secret["data"] == {"password": "aHVudGVyMg=="}


async def test_real_cluster_info_dump_directory_and_stream(tmp_path: Path, capsys: Any) -> None:
    await dump_a_dra_cluster(tmp_path, cluster_info=True)
    assert (tmp_path / "cluster-state" / "nodes.json").exists()
    assert (tmp_path / "cluster-state" / "default" / "small" / "logs.txt").exists()
    code, _, err = await cplane(capsys, "log", "import", "--dump", str(tmp_path / "cluster-state"), "--data-dir",
                                str(tmp_path / "from-dir"))
    assert code == 0, err
    code, _, err = await cplane(capsys, "log", "import", "--dump", str(tmp_path / "cluster-info.txt"),
                                "--data-dir", str(tmp_path / "from-stream"))
    assert code == 0, err
    shown = []
    for data_dir in ("from-dir", "from-stream"):
        code, out, err = await cplane(capsys, "log", "show", "--data-dir", str(tmp_path / data_dir), "-o", "name")
        assert code == 0, err
        shown.append(sorted(out.split()))
    assert shown[0] == shown[1]
    assert {"pod/small", "pod/big", "node/n1"} <= set(shown[0])


EXTRA_SLICE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n1-extra"},
               "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                        "pool": {"name": "n1-extra", "generation": 1, "resourceSliceCount": 1},
                        "devices": [{"name": "gpu-2"}, {"name": "gpu-3"}]}}


async def test_a_fork_of_the_imported_dump_runs_the_scheduler_on(tmp_path: Path, capsys: Any) -> None:
    dump = await dump_a_dra_cluster(tmp_path)
    imported = tmp_path / "imported"
    code, _, err = await cplane(capsys, "log", "import", "--dump", str(dump), "--data-dir", str(imported))
    assert code == 0, err
    code, out, _ = await cplane(capsys, "log", "events", "--data-dir", str(imported), "-o", "ndjson")
    last = json.loads(out.splitlines()[-1])["revision"]
    kubeconfig = tmp_path / "replay.kubeconfig"
    err_path = tmp_path / "replay.err"
    with err_path.open("wb") as err_file:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "cp.cli", "replay", str(imported), "--port", "0", "--kubeconfig", str(kubeconfig),
            "--fork-at", str(last), "--speed", "max", "--controllers", "scheduler", stdout=asyncio.subprocess.DEVNULL, stderr=err_file)
        try:
            await recordings.eventually(lambda: kubeconfig.exists() or proc.returncode is not None, within=30,
                                        what="the replay server's kubeconfig")
            assert proc.returncode is None, err_path.read_text()
            server = next(line.split("server:")[1].strip() for line in kubeconfig.read_text().splitlines()
                          if "server:" in line)
            async with aiohttp.ClientSession(base_url=server) as http:
                # What if the node had two more GPUs? The fork's scheduler places the Pending pod.
                async def added() -> bool:  # refused (405) until the replay reaches the fork
                    async with http.post("/apis/resource.k8s.io/v1/resourceslices", json=EXTRA_SLICE) as r:
                        assert r.status in (201, 405), await r.text()
                        return r.status == 201

                await recordings.eventually(added, within=20, what="the fork")

                async def placed() -> str:
                    async with http.get("/api/v1/namespaces/default/pods/big") as r:
                        return str((await r.json())["spec"].get("nodeName") or "")

                assert await recordings.eventually(placed, within=20, what="the fork's scheduler") == "n1"
                async with http.get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/three") as r:
                    results = (await r.json())["status"]["allocation"]["devices"]["results"]
                # One GPU of the imported slice is held by `small` (as imported): the rest come from the new one.
                assert sorted(d["pool"] for d in results) == ["n1", "n1-extra", "n1-extra"]
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGINT)
            code = await asyncio.wait_for(proc.wait(), 20)
    assert code == 0, err_path.read_text()
