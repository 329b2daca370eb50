"""`cplane log show RESOURCE --api-version GROUP/VERSION`: a log's objects as another served version
reads them (converted as the server converts them, `cp.conversions`), and the errors for a version
the resource is not served in or no resource at all."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import server as servers
from cp import cli

CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}},
                                           {"name": "any", "firstAvailable": [
                                               {"name": "a", "deviceClassName": "gpu.example.com"}]}]}}}


async def _record(data_dir: Path) -> None:
    async with servers.running(data_dir=data_dir) as srv, aiohttp.ClientSession(base_url=srv.url) as http, \
            http.post("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims", json=CLAIM) as r:
        assert r.status == 201, await r.text()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    asyncio.run(_record(tmp_path / "data"))
    return tmp_path / "data"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_show_in_another_version(capsys: Any, data_dir: Path) -> None:
    source = ("log", "show", "--data-dir", str(data_dir), "resourceclaims.resource.k8s.io")
    code, out, err = run(capsys, *source, "--api-version", "resource.k8s.io/v1beta1", "-o", "json")
    assert code == 0, err
    (item,) = json.loads(out)["items"]
    assert item["apiVersion"] == "resource.k8s.io/v1beta1"
    assert item["spec"]["devices"]["requests"] == [
        {"name": "gpu", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1},
        {"name": "any", "deviceClassName": "", "firstAvailable": [
            {"name": "a", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}]}]
    code, out, err = run(capsys, *source, "--api-version", "resource.k8s.io/v1beta2", "-o", "yaml")
    assert code == 0 and "apiVersion: resource.k8s.io/v1beta2" in out and "exactly:" in out
    code, out, err = run(capsys, *source, "--api-version", "resource.k8s.io/v1", "-o", "json")
    assert code == 0 and json.loads(out)["items"][0]["apiVersion"] == "resource.k8s.io/v1"


def test_show_api_version_errors(capsys: Any, data_dir: Path) -> None:
    base = ("log", "show", "--data-dir", str(data_dir))
    code, out, err = run(capsys, *base, "resourceclaims.resource.k8s.io", "--api-version", "resource.k8s.io/v9")
    assert code == 1 and out == ""
    assert ("resourceclaims.resource.k8s.io is not served in resource.k8s.io/v9 (its versions: resource.k8s.io/v1, "
            "resource.k8s.io/v1beta2, resource.k8s.io/v1beta1)") in err
    code, out, err = run(capsys, *base, "--api-version", "resource.k8s.io/v1beta1")
    assert code == 1 and "--api-version needs a RESOURCE" in err
