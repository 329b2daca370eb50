"""Each simulated node's kubelet directory (issue #23), laid out as a real kubelet's root dir, so a
real DRA kubelet plugin can be pointed at it:

    ROOT/<node>/plugins_registry/   registration sockets (upstream: /var/lib/kubelet/plugins_registry)
    ROOT/<node>/plugins/            the plugins' own directories (upstream: /var/lib/kubelet/plugins)
    ROOT/<node>/cdi/                CDI spec files (upstream: /var/run/cdi and /etc/cdi)
    ROOT/<node>/kubeconfig          the node's credentials for a plugin (node-bound ServiceAccount token)
    ROOT/<node>/dra_manager_state   the kubelet's checkpoint of prepared claims (JSON)

`ROOT` is `DATA_DIR/nodes` under `cplane serve` and `--root-dir` of `python -m controllers.fleet`.
The checkpoint is what the kubelet remembers of `NodePrepareResources` (upstream's DRA manager
checkpoint): per claim uid, its namespace and name and, per driver, the devices prepared with their
CDI device ids. It is written atomically (temporary file + rename) and rebuilt from on a restart.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

REGISTRY = "plugins_registry"
PLUGINS = "plugins"
CDI = "cdi"
KUBECONFIG = "kubeconfig"
CHECKPOINT = "dra_manager_state"


class PreparedDevice(msgspec.Struct, frozen=True, kw_only=True):
    """One device of a `NodePrepareResourceResponse` (DRA v1 `Device`)."""

    request_names: tuple[str, ...]
    pool_name: str
    device_name: str
    cdi_device_ids: tuple[str, ...] = ()
    share_id: str = ""


class PreparedClaim(msgspec.Struct, kw_only=True):
    """A claim the kubelet prepared on this node: driver -> its prepared devices."""

    uid: str
    namespace: str
    name: str
    drivers: dict[str, list[PreparedDevice]] = msgspec.field(default_factory=dict)
    # the drivers whose NodeUnprepareResources the claim's allocation skips (DRAOptionalNodeOperations)
    skip_unprepare: list[str] = msgspec.field(default_factory=list)


class _State(msgspec.Struct, kw_only=True):
    version: str = "v1"
    claims: dict[str, PreparedClaim] = msgspec.field(default_factory=dict)


class NodeDir:
    """The kubelet directory of one node; created (0700) on first use."""

    def __init__(self, *, root: Path, node: str) -> None:
        self.node = node
        self.path = root / node

    @property
    def registry(self) -> Path:
        return self.path / REGISTRY

    @property
    def plugins(self) -> Path:
        return self.path / PLUGINS

    @property
    def cdi(self) -> Path:
        return self.path / CDI

    @property
    def kubeconfig(self) -> Path:
        return self.path / KUBECONFIG

    @property
    def checkpoint(self) -> Path:
        return self.path / CHECKPOINT

    def create(self) -> NodeDir:
        for d in (self.path, self.registry, self.plugins, self.cdi):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self

    # ------------------------------------------------------------------ checkpoint

    def prepared(self) -> dict[str, PreparedClaim]:
        """The checkpoint: claim uid -> what was prepared (empty when there is none)."""
        try:
            raw = self.checkpoint.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            return msgspec.json.decode(raw, type=_State).claims
        except msgspec.DecodeError:
            return {}  # a torn or foreign file: the kubelet prepares again, as after a lost checkpoint

    def record(self, *, uid: str, namespace: str, name: str, driver: str,
               devices: Iterable[PreparedDevice], skip_unprepare: bool = False) -> None:
        claims = self.prepared()
        claim = claims.setdefault(uid, PreparedClaim(uid=uid, namespace=namespace, name=name))
        claim.drivers[driver] = list(devices)
        if skip_unprepare and driver not in claim.skip_unprepare:
            claim.skip_unprepare.append(driver)
        self._write(claims)

    def forget(self, *, uid: str, driver: str | None = None) -> None:
        """Drop a claim's driver (or the whole claim) from the checkpoint."""
        claims = self.prepared()
        claim = claims.get(uid)
        if claim is None:
            return
        if driver is None:
            del claims[uid]
        else:
            claim.drivers.pop(driver, None)
            if driver in claim.skip_unprepare:
                claim.skip_unprepare.remove(driver)
            if not claim.drivers:
                del claims[uid]
        self._write(claims)

    def _write(self, claims: Mapping[str, PreparedClaim]) -> None:
        self.create()
        data = msgspec.json.encode(_State(claims=dict(claims)))
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=f".{CHECKPOINT}.")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self.checkpoint)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def write_json_atomic(path: Path, doc: Any) -> None:
    """Write `doc` as JSON to `path` by rename, so a reader never sees half a file (CDI specs)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=2, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
