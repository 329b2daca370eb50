"""The Container Device Interface (CDI) as container runtimes read it: spec files, qualified device
names, a registry of a directory's specs, and the container edits a list of device ids adds up to.

Written from the CDI specification and its reference library's documented behaviour
(`cncf-tags/container-device-interface`: `specs-go`, `pkg/parser`, `pkg/cdi`):

- **Spec files** are JSON or YAML (`.json` / `.yaml`), decoded strictly (an unknown field is an
  error): `cdiVersion`, `kind` (`vendor/class`), optional `annotations`, `devices` (each `name`,
  optional `annotations`, `containerEdits`) and spec-wide `containerEdits`. Edits are `env`
  (`NAME=value`), `deviceNodes`, `mounts`, `hooks`, `intelRdt`, `additionalGids` and `netDevices`.
- **Versions**: the known versions are 0.1.0 ... 1.1.0 (a leading `v` is allowed). A spec is rejected
  when it uses a field newer than its `cdiVersion` says (`minimum_required_version`): mount `type`
  needs 0.4.0; a device name starting with a digit and device node `hostPath` 0.5.0; annotations and a
  dot in the class 0.6.0; `intelRdt` and `additionalGids` 0.7.0; `netDevices` and `intelRdt`'s
  `schemata` / `enableMonitoring` 1.1.0 (0.8.0 and 1.0.0 added no field).
- **Names**: `vendor/class=name`; vendor and class start with a letter, end with a letter or digit and
  hold letters, digits, `_`, `-`, `.`; a device name starts and ends with a letter or digit and may
  also hold `:`.
- **A registry** (`Registry.load(dirs)`) reads every spec file of its directories (not recursively,
  files in name order); a later directory has the higher priority. Two devices of one qualified name
  in one directory are a conflict: both files report it and the device resolves to nothing; in a
  later directory the device replaces the earlier one. A file that does not load is reported under
  its path and contributes nothing.
- **Merging** (`Registry.container_edits(ids)`): for each device id in order, its spec's spec-wide
  edits (once per spec, the first time one of its devices appears), then the device's own edits.
  Lists are concatenated; a later `intelRdt` replaces an earlier one.

Pure apart from `read_spec`/`Registry.load`, which read files. Errors are `CDIError` (a ValueError)
whose message names the file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from cp import bodies, errors

# Newest first, as the reference library orders them.
VERSIONS = ("1.1.0", "1.0.0", "0.8.0", "0.7.0", "0.6.0", "0.5.0", "0.4.0", "0.3.0", "0.2.0", "0.1.0")
EARLIEST = "0.3.0"  # what a spec needing no newer feature requires
CURRENT = VERSIONS[0]
SPEC_EXTENSIONS = (".json", ".yaml")
HOOK_NAMES = ("prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop")
DEVICE_NODE_TYPES = ("", "b", "c", "u", "p")
NO_PERMISSIONS = "none"
MAX_SPEC_BYTES = 4 << 20  # a spec file larger than this is refused rather than read


class CDIError(ValueError):
    """A spec that cannot be used, a bad qualified name, or devices that do not resolve."""


class _Struct(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True, omit_defaults=True):
    pass


class DeviceNode(_Struct, kw_only=True):
    path: str = ""
    host_path: str = ""  # 0.5.0
    type: str = ""
    major: int = 0
    minor: int = 0
    file_mode: int | None = None
    permissions: str = ""
    uid: int | None = None
    gid: int | None = None


class Mount(_Struct, kw_only=True):
    host_path: str = ""
    container_path: str = ""
    options: list[str] = msgspec.field(default_factory=list)
    type: str = ""  # 0.4.0


class Hook(_Struct, kw_only=True):
    hook_name: str = ""
    path: str = ""
    args: list[str] = msgspec.field(default_factory=list)
    env: list[str] = msgspec.field(default_factory=list)
    timeout: int | None = None


class IntelRdt(_Struct, kw_only=True):
    clos_id: str = msgspec.field(default="", name="closID")
    l3_cache_schema: str = ""
    mem_bw_schema: str = ""
    schemata: list[str] | None = None  # 1.1.0
    enable_monitoring: bool = False  # 1.1.0


class NetDevice(_Struct, kw_only=True):
    host_interface_name: str = ""
    name: str = ""


class ContainerEdits(_Struct, kw_only=True):
    """What a runtime does to a container for a device (or for every device of a spec)."""

    env: list[str] = msgspec.field(default_factory=list)
    device_nodes: list[DeviceNode] = msgspec.field(default_factory=list)
    net_devices: list[NetDevice] = msgspec.field(default_factory=list)  # 1.1.0
    hooks: list[Hook] = msgspec.field(default_factory=list)
    mounts: list[Mount] = msgspec.field(default_factory=list)
    intel_rdt: IntelRdt | None = None  # 0.7.0
    additional_gids: list[int] = msgspec.field(default_factory=list, name="additionalGids")  # 0.7.0

    def is_empty(self) -> bool:
        return not (self.env or self.device_nodes or self.net_devices or self.hooks or self.mounts
                    or self.intel_rdt is not None or self.additional_gids)

    def append(self, other: ContainerEdits) -> None:
        """Add `other`'s edits after these (in place)."""
        self.env.extend(other.env)
        self.device_nodes.extend(other.device_nodes)
        self.net_devices.extend(other.net_devices)
        self.hooks.extend(other.hooks)
        self.mounts.extend(other.mounts)
        if other.intel_rdt is not None:
            self.intel_rdt = other.intel_rdt
        self.additional_gids.extend(other.additional_gids)

    def environment(self) -> dict[str, str]:
        """The variables as the container sees them: in order, a later `NAME=` replacing an earlier
        one in place (as the runtime's spec editor does)."""
        out: dict[str, str] = {}
        for entry in self.env:
            key, _, value = entry.partition("=")
            out[key] = value
        return out


class Device(_Struct, kw_only=True):
    name: str = ""
    annotations: dict[str, str] = msgspec.field(default_factory=dict)  # 0.6.0
    container_edits: ContainerEdits = msgspec.field(default_factory=ContainerEdits)


class Spec(_Struct, kw_only=True):
    cdi_version: str = ""
    kind: str = ""
    annotations: dict[str, str] = msgspec.field(default_factory=dict)  # 0.6.0
    devices: list[Device] = msgspec.field(default_factory=list)
    container_edits: ContainerEdits = msgspec.field(default_factory=ContainerEdits)

    @property
    def vendor(self) -> str:
        return parse_qualifier(self.kind)[0]

    @property
    def device_class(self) -> str:
        return parse_qualifier(self.kind)[1]


# ---------------------------------------------------------------------- names


def _letter(c: str) -> bool:
    return ("A" <= c <= "Z") or ("a" <= c <= "z")


def _alnum(c: str) -> bool:
    return _letter(c) or ("0" <= c <= "9")


def _vendor_or_class(name: str, what: str) -> None:
    if not name:
        raise CDIError(f"invalid {what}. empty name")
    if not _letter(name[0]):
        raise CDIError(f"invalid {what}. {name!r}, should start with letter")
    for c in name[1:-1]:
        if not (_alnum(c) or c in "_-."):
            raise CDIError(f"invalid {what}. invalid character {c!r} in name {name!r}")
    if len(name) > 1 and not _alnum(name[-1]):
        raise CDIError(f"invalid {what}. {name!r}, should end with a letter or digit")


def validate_vendor(vendor: str) -> None:
    _vendor_or_class(vendor, "vendor")


def validate_class(class_: str) -> None:
    _vendor_or_class(class_, "class")


def validate_device_name(name: str) -> None:
    if not name:
        raise CDIError("invalid (empty) device name")
    if not _alnum(name[0]):
        raise CDIError(f"invalid device name {name!r}, should start with a letter or digit")
    for c in name[1:-1]:
        if not (_alnum(c) or c in "_-.:"):
            raise CDIError(f"invalid character {c!r} in device name {name!r}")
    if len(name) > 1 and not _alnum(name[-1]):
        raise CDIError(f"invalid device name {name!r}, should end with a letter or digit")


def parse_qualifier(kind: str) -> tuple[str, str]:
    """`vendor/class` -> (vendor, class); ("", kind) when it is not of that form."""
    vendor, sep, class_ = kind.partition("/")
    if not sep or not vendor or not class_:
        return "", kind
    return vendor, class_


def qualified_name(vendor: str, class_: str, name: str) -> str:
    return f"{vendor}/{class_}={name}"


class QualifiedName(msgspec.Struct, frozen=True, kw_only=True):
    vendor: str
    device_class: str
    name: str

    def __str__(self) -> str:
        return qualified_name(self.vendor, self.device_class, self.name)


def parse_qualified_name(device: str) -> QualifiedName:
    """`vendor/class=name`, each part checked; CDIError says what is wrong."""
    vendor = class_ = name = ""
    if device and device[0] != "/":
        qualifier, sep, rest = device.partition("=")
        if sep and qualifier and rest:
            vendor, class_ = parse_qualifier(qualifier)
            name = rest if vendor else ""
    if not vendor:
        raise CDIError(f"unqualified device {device!r}, missing vendor")
    if not class_:
        raise CDIError(f"unqualified device {device!r}, missing class")
    if not name:
        raise CDIError(f"unqualified device {device!r}, missing device name")
    try:
        validate_vendor(vendor)
        validate_class(class_)
        validate_device_name(name)
    except CDIError as exc:
        raise CDIError(f"invalid device {device!r}: {exc}") from None
    return QualifiedName(vendor=vendor, device_class=class_, name=name)


# ---------------------------------------------------------------------- versions


def _edits_of(spec: Spec) -> list[ContainerEdits]:
    return [d.container_edits for d in spec.devices] + [spec.container_edits]


def _needs_1_1(spec: Spec) -> bool:
    return any(e.net_devices or (e.intel_rdt is not None and (e.intel_rdt.schemata is not None or
                                                               e.intel_rdt.enable_monitoring))
               for e in _edits_of(spec))


def _needs_0_7(spec: Spec) -> bool:
    return any(e.intel_rdt is not None or e.additional_gids for e in _edits_of(spec))


def _needs_0_6(spec: Spec) -> bool:
    if spec.annotations or any(d.annotations for d in spec.devices):
        return True
    _, sep, class_ = spec.kind.partition("/")
    return bool(sep) and "." in class_


def _needs_0_5(spec: Spec) -> bool:
    if any(d.name[:1].isdigit() and d.name[:1].isascii() for d in spec.devices):
        return True
    return any(dn.host_path for e in _edits_of(spec) for dn in e.device_nodes)


def _needs_0_4(spec: Spec) -> bool:
    return any(m.type for e in _edits_of(spec) for m in e.mounts)


_REQUIRES = (("1.1.0", _needs_1_1), ("0.7.0", _needs_0_7), ("0.6.0", _needs_0_6), ("0.5.0", _needs_0_5),
             ("0.4.0", _needs_0_4))


def minimum_required_version(spec: Spec) -> str:
    """The oldest `cdiVersion` that has every field the spec uses."""
    for version, needs in _REQUIRES:
        if needs(spec):
            return version
    return EARLIEST


def _normal_version(version: str) -> str:
    return version[1:] if version.startswith("v") else version


def validate_version(spec: Spec) -> None:
    version = _normal_version(spec.cdi_version)
    if version not in VERSIONS:
        raise CDIError(f"invalid version {spec.cdi_version!r}")
    need = minimum_required_version(spec)
    if VERSIONS.index(need) < VERSIONS.index(version):
        raise CDIError(f"the spec version must be at least v{need}")


# ---------------------------------------------------------------------- validation


def validate_env(env: Iterable[str]) -> None:
    for v in env:
        if v.find("=") <= 0:
            raise CDIError(f"invalid environment variable {v!r}")


def validate_edits(edits: ContainerEdits) -> None:
    try:
        validate_env(edits.env)
    except CDIError as exc:
        raise CDIError(f"invalid container edits: {exc}") from None
    for d in edits.device_nodes:
        if not d.path:
            raise CDIError("invalid (empty) device path")
        if d.type not in DEVICE_NODE_TYPES:
            raise CDIError(f"device {d.path!r}: invalid type {d.type!r}")
        if d.permissions not in ("", NO_PERMISSIONS) and d.permissions.strip("rwm"):
            raise CDIError(f"device {d.path!r}: invalid permissions {d.permissions!r}")
    for h in edits.hooks:
        if h.hook_name not in HOOK_NAMES:
            raise CDIError(f"invalid hook name {h.hook_name!r}")
        if not h.path:
            raise CDIError(f"invalid hook {h.hook_name!r} with empty path")
        try:
            validate_env(h.env)
        except CDIError as exc:
            raise CDIError(f"invalid hook {h.hook_name!r}: {exc}") from None
    for m in edits.mounts:
        if not m.host_path:
            raise CDIError("invalid mount, empty host path")
        if not m.container_path:
            raise CDIError("invalid mount, empty container path")
    if edits.intel_rdt is not None:
        c = edits.intel_rdt.clos_id
        if c != "/" and (len(c) >= 4096 or c in (".", "..") or "/" in c or "\n" in c):
            raise CDIError("invalid ClosID")
    hosts: dict[str, str] = {}
    names: dict[str, str] = {}
    for n in edits.net_devices:
        if not n.host_interface_name:
            raise CDIError("invalid linux net device, empty HostInterfaceName")
        if not n.name:
            raise CDIError("invalid linux net device, empty Name")
        if n.host_interface_name in hosts:
            raise CDIError(f"invalid linux net device, duplicate HostInterfaceName {n.host_interface_name!r} "
                           f"with names {n.name!r} and {hosts[n.host_interface_name]!r}")
        hosts[n.host_interface_name] = n.name
        if n.name in names:
            raise CDIError(f"invalid linux net device, duplicate Name {n.name!r} with HostInterfaceName "
                           f"{n.host_interface_name!r} and {names[n.name]!r}")
        names[n.name] = n.host_interface_name


def validate_spec(spec: Spec) -> None:
    """The checks a runtime makes before it uses a spec (CDIError on the first problem).

    Annotation keys are not checked: the reference library means to check them as Kubernetes
    annotations but, as written, never does, so runtimes accept any string keys."""
    validate_version(spec)
    vendor, class_ = parse_qualifier(spec.kind)
    validate_vendor(vendor)
    validate_class(class_)
    validate_edits(spec.container_edits)
    seen: set[str] = set()
    for d in spec.devices:
        try:
            validate_device_name(d.name)
            if d.container_edits.is_empty():
                raise CDIError("invalid device, empty device edits")
            try:
                validate_edits(d.container_edits)
            except CDIError as exc:
                raise CDIError(f"invalid device {d.name!r}: {exc}") from None
        except CDIError as exc:
            raise CDIError(f"failed add device {d.name!r}: {exc}") from None
        if d.name in seen:
            raise CDIError(f"invalid spec, multiple device {d.name!r}")
        seen.add(d.name)
    if not seen:
        raise CDIError("invalid spec, no devices")


# ---------------------------------------------------------------------- files


def parse_spec(data: bytes, *, path: str) -> Spec:
    """Decode and validate a spec (JSON or YAML); CDIError names `path`."""
    try:
        raw = bodies.decode_yaml(data, error_prefix="")
    except errors.StatusError as exc:
        raise CDIError(f"failed to parse CDI Spec {path!r}: {' '.join(exc.message.split())}") from None
    if raw is None:
        raise CDIError(f"failed to parse CDI Spec {path!r}, no Spec data")
    if not isinstance(raw, dict):
        raise CDIError(f"failed to parse CDI Spec {path!r}: not an object")
    try:
        spec = msgspec.convert(_without_nulls(raw), type=Spec, strict=True)
    except msgspec.ValidationError as exc:
        raise CDIError(f"failed to parse CDI Spec {path!r}: {exc}") from None
    try:
        validate_spec(spec)
    except CDIError as exc:
        raise CDIError(f"invalid CDI Spec {path!r}: {exc}") from None
    return spec


def _without_nulls(value: Any) -> Any:
    """JSON nulls dropped, as Go's decoder leaves a field at its zero value for one."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def read_spec(path: Path) -> Spec:
    try:
        size = path.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise CDIError(f"failed to read CDI Spec {str(path)!r}: {size} bytes, more than {MAX_SPEC_BYTES}")
        data = path.read_bytes()
    except OSError as exc:
        raise CDIError(f"failed to read CDI Spec {str(path)!r}: {exc.strerror or exc}") from None
    return parse_spec(data, path=str(path))


def encode_spec(spec: Spec) -> dict[str, Any]:
    """The spec as JSON-shaped data (what a driver writes), `devices` always present."""
    doc: dict[str, Any] = msgspec.to_builtins(spec)
    doc.setdefault("devices", [])
    for d in doc["devices"]:
        d.setdefault("containerEdits", {})
    return doc


def transient_spec_name(vendor: str, class_: str, transient_id: str) -> str:
    """A spec file name (without extension) for a spec tied to something's lifetime (a claim)."""
    return f"{vendor}-{class_}_{transient_id.replace('/', '_')}"


# ---------------------------------------------------------------------- the registry


class SpecFile(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    priority: int
    spec: Spec


class ResolvedDevice(msgspec.Struct, frozen=True, kw_only=True):
    """A device of the registry: its qualified name, the file it came from and its own edits."""

    name: str
    path: str
    annotations: dict[str, str]
    edits: ContainerEdits


class Registry:
    """The devices of a set of spec directories (`load`), as a runtime's CDI cache holds them."""

    def __init__(self) -> None:
        self.specs: list[SpecFile] = []
        self.errors: dict[str, list[str]] = {}  # path -> what is wrong with it
        self._devices: dict[str, tuple[SpecFile, Device]] = {}

    @classmethod
    def load(cls, dirs: Sequence[Path]) -> Registry:
        """Every `.json`/`.yaml` file of `dirs` (a missing directory is empty), later dirs winning."""
        reg = cls()
        conflicts: set[str] = set()
        for priority, d in enumerate(dirs):
            try:
                entries = sorted(os.scandir(d), key=lambda e: e.name)
            except FileNotFoundError:
                continue
            except OSError as exc:
                reg.errors.setdefault(str(d), []).append(f"failed to read CDI directory {str(d)!r}: {exc}")
                continue
            for entry in entries:
                if os.path.splitext(entry.name)[1] not in SPEC_EXTENSIONS or entry.is_dir():
                    continue
                path = os.path.join(d, entry.name)
                try:
                    spec = read_spec(Path(path))
                except CDIError as exc:
                    reg.errors.setdefault(path, []).append(f"failed to load CDI Spec {exc}")
                    continue
                reg._add(SpecFile(path=path, priority=priority, spec=spec), conflicts)
        for name in conflicts:
            reg._devices.pop(name, None)
        return reg

    def _add(self, sf: SpecFile, conflicts: set[str]) -> None:
        self.specs.append(sf)
        for dev in sf.spec.devices:
            name = qualified_name(sf.spec.vendor, sf.spec.device_class, dev.name)
            old = self._devices.get(name)
            if old is not None and old[0].priority >= sf.priority:
                if old[0].priority == sf.priority:
                    msg = f"conflicting device {name!r} (specs {sf.path!r}, {old[0].path!r})"
                    self.errors.setdefault(sf.path, []).append(msg)
                    self.errors.setdefault(old[0].path, []).append(msg)
                    conflicts.add(name)
                continue
            self._devices[name] = (sf, dev)

    def devices(self) -> list[str]:
        return sorted(self._devices)

    def vendors(self) -> list[str]:
        return sorted({sf.spec.vendor for sf in self.specs})

    def device(self, name: str) -> ResolvedDevice | None:
        got = self._devices.get(name)
        if got is None:
            return None
        sf, dev = got
        return ResolvedDevice(name=name, path=sf.path, annotations=dict(dev.annotations),
                              edits=_copy(dev.container_edits))

    def error_text(self) -> str:
        return "; ".join(m for path in sorted(self.errors) for m in self.errors[path])

    def container_edits(self, device_ids: Sequence[str]) -> ContainerEdits:
        """The edits of `device_ids` merged in order (spec-wide edits once per spec, before its first
        device's). CDIError names the ids that do not resolve, and why files did not load."""
        out = ContainerEdits()
        unresolved: list[str] = []
        seen_specs: set[str] = set()
        for device_id in device_ids:
            got = self._devices.get(device_id)
            if got is None:
                unresolved.append(device_id)
                continue
            sf, dev = got
            if sf.path not in seen_specs:
                seen_specs.add(sf.path)
                out.append(_copy(sf.spec.container_edits))
            out.append(_copy(dev.container_edits))
        if unresolved:
            msg = f"unresolvable CDI devices {', '.join(unresolved)}"
            problems = self.error_text()
            raise CDIError(f"{msg} ({problems})" if problems else msg)
        return out


def _copy(edits: ContainerEdits) -> ContainerEdits:
    return msgspec.convert(msgspec.to_builtins(edits), type=ContainerEdits)


def edits_from(doc: Mapping[str, Any]) -> ContainerEdits:
    """ContainerEdits from JSON-shaped data (strict; CDIError on a bad field)."""
    try:
        return msgspec.convert(doc, type=ContainerEdits, strict=True)
    except msgspec.ValidationError as exc:
        raise CDIError(f"invalid container edits: {exc}") from None
