"""Generate `cp/protobuf/descriptors.py`, the protobuf message table `cp.protobuf` encodes and decodes with.

Kubernetes documents its protobuf wire format in the `generated.proto` files of k8s.io/api,
k8s.io/apimachinery, k8s.io/apiextensions-apiserver and k8s.io/kube-aggregator: message and field
names, field numbers, scalar types, repeated fields and maps. What a `.proto` file does not say is how
the same Go struct is written as JSON, which the server stores and serves: the JSON name of a field
(usually, not always, the proto name), whether an embedded struct is inlined into its parent
(`VolumeSource` into `Volume`), whether the Go field is a pointer (written on the wire only when set,
kept in JSON even when zero), and whether its JSON tag has `omitempty` or `omitzero`. Those facts
are read from the struct tags of the Go sources beside each `.proto` (`types.go` and friends), matched
to the proto fields by field number; a proto field without its Go field is an error.

The output is the project's own compact description (one string per message, see the grammar in the
generated module), for the messages the served kinds reach, plus `metav1.Status`, `WatchEvent`, the
options kinds and `PartialObjectMetadata`; nothing of upstream's files is copied.

Usage (each source is a git repository, a clone or a bare mirror, read at a revision; default HEAD):

    .venv/bin/python -m tools.protobuf_tables \\
        --api ~/src/kubernetes/api --apimachinery ~/src/kubernetes/apimachinery \\
        --apiextensions ~/src/kubernetes/apiextensions-apiserver \\
        --aggregator ~/src/kubernetes/kube-aggregator@v0.37.0

It rewrites `cp/protobuf/descriptors.py` (or `--out`); `--check` only reports whether that file is current.
The kinds come from `cp.resources` (every served kind of an upstream group, its list, its subresources'
bodies), plus the few of EXTRA_KINDS.
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import re
import subprocess
import sys
from collections.abc import Iterable

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "cp" / "protobuf" / "descriptors.py"

# --------------------------------------------------------------------------------------------
# Reading the sources.
# --------------------------------------------------------------------------------------------


class Source:
    """One git repository read at one revision (`PATH` or `PATH@REV`)."""

    def __init__(self, spec: str, *, name: str) -> None:
        path, _, rev = spec.partition("@")
        self.name = name
        self.path = pathlib.Path(path).expanduser()
        self.rev = rev or "HEAD"
        self.commit = self._git("rev-parse", f"{self.rev}^{{commit}}").strip()

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", "-C", str(self.path), *args], check=True, capture_output=True,
                              text=True).stdout

    def files(self, folder: str) -> list[str]:
        out = self._git("ls-tree", "--name-only", self.commit, folder.rstrip("/") + "/")
        return [line for line in out.splitlines() if line]

    def read(self, path: str) -> str:
        return self._git("show", f"{self.commit}:{path}")


@dataclasses.dataclass(frozen=True)
class ProtoField:
    number: int
    name: str
    type: str  # as written: "string", "PodSpec", ".k8s.io.apimachinery.pkg.apis.meta.v1.Time"
    repeated: bool
    map: bool  # map<string, type>


@dataclasses.dataclass(frozen=True)
class GoField:
    name: str  # "" for an embedded struct
    type: str  # "*int32", "[]Container", "metav1.ObjectMeta"
    json: str  # the JSON name ("" when inlined)
    omitempty: bool
    omitzero: bool


_PACKAGE = re.compile(r"^package ([\w.]+);$", re.M)
_MESSAGE = re.compile(r"^message (\w+) \{$")
_FIELD = re.compile(r"^\s+(optional|repeated) ([\w.]+) (\w+) = (\d+);$")
_MAP_FIELD = re.compile(r"^\s+map<string, ([\w.]+)> (\w+) = (\d+);$")


def parse_proto(text: str) -> tuple[str, dict[str, list[ProtoField]]]:
    """(proto package, {message: fields in declaration order}) of a generated.proto."""
    package = _PACKAGE.search(text)
    if package is None:
        raise SystemExit("generated.proto without a package line")
    messages: dict[str, list[ProtoField]] = {}
    current: list[ProtoField] | None = None
    for line in text.splitlines():
        if current is None:
            m = _MESSAGE.match(line)
            if m:
                current = messages.setdefault(m.group(1), [])
            continue
        if line == "}":
            current = None
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        m = _FIELD.match(line)
        if m:
            current.append(ProtoField(number=int(m.group(4)), name=m.group(3), type=m.group(2),
                                      repeated=m.group(1) == "repeated", map=False))
            continue
        m = _MAP_FIELD.match(line)
        if m:
            current.append(ProtoField(number=int(m.group(3)), name=m.group(2), type=m.group(1),
                                      repeated=False, map=True))
            continue
        raise SystemExit(f"unexpected line in a message of {package.group(1)}: {line!r}")
    return package.group(1), messages


_STRUCT = re.compile(r"^type (\w+) struct \{$")
_EMPTY_STRUCT = re.compile(r"^type (\w+) struct ?\{\}$")
_GO_FIELD = re.compile(r"^\t(?:(\w+)\s+)?([^\s`]+)\s+`([^`]*)`\s*(?://.*)?$")
_NAMED = re.compile(r"^type (\w+) (\[\]|map\[)")
_TAG = re.compile(r'(\w+):"([^"]*)"')
# `type MatchCondition v1.MatchCondition`: a struct type defined from another package's (same fields).
_DEFINED = re.compile(r"^type (\w+) (\w+)\.(\w+)$")
_IMPORT = re.compile(r'^\s*(?:import\s+)?(\w+)\s+"k8s\.io/api/([\w/]+)"$')


def parse_go(text: str, *, structs: dict[str, dict[int, GoField]], named: dict[str, str],
             defined: dict[str, tuple[str, str]] | None = None) -> None:
    """Add the struct fields that carry a `protobuf` tag (by field number) and the named slice and map
    types of one Go file; `defined`: the struct types defined from another k8s.io/api package's, as
    (that package's folder, its type)."""
    current: dict[int, GoField] | None = None
    imports: dict[str, str] = {}
    for line in text.splitlines():
        if current is None:
            m = _IMPORT.match(line)
            if m:
                imports[m.group(1)] = m.group(2)
                continue
            m = _DEFINED.match(line)
            if m and defined is not None and m.group(2) in imports:
                defined[m.group(1)] = (imports[m.group(2)], m.group(3))
                continue
            m = _STRUCT.match(line)
            if m:
                current = structs.setdefault(m.group(1), {})
                continue
            m = _EMPTY_STRUCT.match(line)
            if m:
                structs.setdefault(m.group(1), {})
                continue
            m = _NAMED.match(line)
            if m:
                named[m.group(1)] = "slice" if m.group(2) == "[]" else "map"
            continue
        if line == "}":
            current = None
            continue
        m = _GO_FIELD.match(line)
        if not m:
            continue
        tags = dict(_TAG.findall(m.group(3)))
        if tags.get("protobuf", "-") == "-":
            continue
        number = int(tags["protobuf"].split(",")[1])
        json_name, *options = tags.get("json", "").split(",")
        current[number] = GoField(name=m.group(1) or "", type=m.group(2), json=json_name,
                                  omitempty="omitempty" in options, omitzero="omitzero" in options)


_ADD_KNOWN = re.compile(r"AddKnownTypes\(\s*SchemeGroupVersion,([^)]*)\)", re.S)
_KIND = re.compile(r"&(\w+)\{\}")


def registered_kinds(text: str) -> list[str]:
    """The kinds a group/version's register.go adds to its scheme."""
    kinds: list[str] = []
    for block in _ADD_KNOWN.findall(text):
        kinds.extend(k for k in _KIND.findall(block) if k not in kinds)
    return kinds


# --------------------------------------------------------------------------------------------
# The packages.
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Package:
    source: Source
    folder: str
    api_version: str  # "" for apimachinery's meta/v1 (its kinds are registered in every group)
    proto: str = ""
    messages: dict[str, list[ProtoField]] = dataclasses.field(default_factory=dict)
    structs: dict[str, dict[int, GoField]] = dataclasses.field(default_factory=dict)
    named: dict[str, str] = dataclasses.field(default_factory=dict)
    defined: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    kinds: list[str] = dataclasses.field(default_factory=list)  # registered upstream (register.go)
    served: list[str] = dataclasses.field(default_factory=list)  # read or written by the server

    def load(self) -> None:
        self.proto, self.messages = parse_proto(self.source.read(f"{self.folder}/generated.proto"))
        for path in self.source.files(self.folder):
            if path.endswith(".go") and not path.endswith("_test.go") and "/zz_generated" not in path \
                    and not path.endswith(".pb.go"):
                text = self.source.read(path)
                parse_go(text, structs=self.structs, named=self.named, defined=self.defined)
                if path.endswith("/register.go"):
                    self.kinds = registered_kinds(text)

    @property
    def openapi(self) -> str:
        """The OpenAPI name prefix: `k8s.io.api.core.v1` -> `io.k8s.api.core.v1`."""
        first, second, rest = self.proto.split(".", 2)
        return f"{second}.{first}.{rest.replace('_', '-')}"


SPECIALS = {  # proto message -> the table's type name (encoded and decoded by hand in cp.protobuf)
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": "Time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": "MicroTime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": "FieldsV1",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "Quantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "IntOrString",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "RawExtension",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON": "JSON",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray": "PropsOrArray",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool": "PropsOrBool",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray":
        "PropsOrStringArray",
}
UNSUPPORTED = {"k8s.io.apimachinery.pkg.apis.meta.v1.Duration"}  # Go's duration text; no served kind has one
SCALARS = {"string": "s", "int32": "i32", "int64": "i64", "bool": "bool", "bytes": "bytes", "double": "f64"}
META = "k8s.io.apimachinery.pkg.apis.meta.v1"
# meta/v1 kinds the server reads or writes in protobuf (the options kinds are registered in every group).
META_ROOTS = ("Status", "WatchEvent", "DeleteOptions", "CreateOptions", "UpdateOptions", "PatchOptions",
              "GetOptions", "ListOptions", "PartialObjectMetadata", "PartialObjectMetadataList")
# Kinds the server reads or writes besides the resources of cp.resources and their lists: bodies of
# subresources, and the kinds that share storage with served ones (served with their conversion later).
EXTRA_KINDS = {
    "policy/v1": ("Eviction",),
    "authentication.k8s.io/v1": ("TokenRequest",),
    "autoscaling/v1": ("Scale", "HorizontalPodAutoscaler", "HorizontalPodAutoscalerList"),
    "events.k8s.io/v1": ("Event", "EventList"),
}


def packages(*, api: Source, apimachinery: Source, apiextensions: Source, aggregator: Source,
             served: dict[tuple[str, str], list[str]]) -> list[Package]:
    out = [Package(source=apimachinery, folder="pkg/apis/meta/v1", api_version="")]
    for group, version in served:
        api_version = f"{group}/{version}" if group else version
        if group == "apiextensions.k8s.io":
            out.append(Package(source=apiextensions, folder=f"pkg/apis/apiextensions/{version}",
                               api_version=api_version))
        elif group == "apiregistration.k8s.io":
            out.append(Package(source=aggregator, folder=f"pkg/apis/apiregistration/{version}",
                               api_version=api_version))
        else:
            out.append(Package(source=api, folder=f"{group.split('.')[0] or 'core'}/{version}",
                               api_version=api_version))
    for package, kinds in zip(out[1:], served.values(), strict=True):
        package.served = kinds
    for package in out:
        package.load()
    return out


# --------------------------------------------------------------------------------------------
# The table.
# --------------------------------------------------------------------------------------------

class Generator:
    def __init__(self, pkgs: list[Package], *, sources: dict[str, Source]) -> None:
        self.pkgs = {p.proto: p for p in pkgs}
        self.sources = sources  # repository of a package, by proto package prefix
        self.aliases: dict[str, str] = {}
        for p in pkgs:
            self._alias(p.proto)

    def _alias(self, proto: str) -> None:
        """A short name per package for references across packages: `meta.v1`, `core.v1`, `apps.v1`,
        or `scheduling.v1alpha3` for a package that only a field of a served kind reaches."""
        alias = ".".join(proto.split(".")[-2:])
        if alias in self.aliases.values():
            raise SystemExit(f"two packages would be called {alias}")
        self.aliases[proto] = alias

    def package(self, proto: str) -> Package | None:
        """A loaded package; one that is not served (an alpha field's type) is loaded when first reached."""
        if proto in self.pkgs:
            return self.pkgs[proto]
        for prefix, source in self.sources.items():
            if proto.startswith(prefix + "."):
                folder = proto[len(prefix) + 1:].replace(".", "/")
                p = Package(source=source, folder=folder, api_version="")
                try:
                    p.load()
                except subprocess.CalledProcessError:
                    return None
                self.pkgs[proto] = p
                self._alias(proto)
                return p
        return None

    def is_wrapper(self, proto: str, message: str) -> bool:
        """A named slice type of Go (`type ExtraValue []string`): one `repeated items = 1` in proto, a
        bare JSON array."""
        p = self.pkgs[proto]
        return p.named.get(message) == "slice" and [f.name for f in p.messages[message]] == ["items"]

    def resolve(self, type_: str, *, proto: str) -> tuple[str, str, str]:
        """(table type, message package, message name) of a proto field type; the last two are empty
        for scalars and special types."""
        if type_ in SCALARS:
            return SCALARS[type_], "", ""
        full = type_.lstrip(".") if type_.startswith(".") else f"{proto}.{type_}"
        if full in SPECIALS:
            return SPECIALS[full], "", ""
        if full in UNSUPPORTED:
            raise SystemExit(f"{proto}: {full} is not supported by cp.protobuf")
        package, _, name = full.rpartition(".")
        loaded = self.package(package)
        if loaded is None or name not in loaded.messages:
            raise SystemExit(f"{proto}: unknown message {type_}")
        token = name if package == proto else f"{self.aliases[package]}.{name}"
        return token, package, name

    def field_token(self, field: ProtoField, go: GoField, *, proto: str, message: str) -> str:
        table_type, package, name = self.resolve(field.type, proto=proto)
        inline = not go.name and not go.json
        where = f"{proto}.{message}.{field.name}"
        if inline:
            if field.repeated or field.map or not package:
                raise SystemExit(f"{where}: an inlined field must be a message")
            return f"{field.number} ...{table_type}"
        if not go.json or go.json == "-":
            raise SystemExit(f"{where}: no JSON name in the Go tag")
        flags = ""
        if field.repeated:
            table_type = f"[{table_type}]"
            if not go.type.startswith("[]") and self._named_kind(go.type) != "slice":
                raise SystemExit(f"{where}: repeated in proto but {go.type} in Go")
        elif field.map:
            table_type = f"{{{table_type}}}"
            if not go.type.startswith("map[") and self._named_kind(go.type) != "map":
                raise SystemExit(f"{where}: a map in proto but {go.type} in Go")
        elif go.type.startswith("*") or (package and self.is_wrapper(package, name)):
            flags += "*"
        elif go.type.startswith("[]") and table_type != "bytes":
            raise SystemExit(f"{where}: a slice in Go but not repeated in proto")
        if not go.omitempty:
            flags += "!"
        if go.omitzero:
            flags += "?"
        text = f"{field.number} {go.json}"
        if table_type != "s" or flags:
            text += f":{table_type}"
        return text + flags

    def _named_kind(self, go_type: str) -> str:
        name = go_type.rpartition(".")[2]
        for p in self.pkgs.values():
            if name in p.named:
                return p.named[name]
        return ""

    def message_spec(self, proto: str, message: str) -> str:
        p = self.pkgs[proto]
        go = p.structs.get(message)
        if self.is_wrapper(proto, message):
            (field,) = p.messages[message]
            table_type, _, _ = self.resolve(field.type, proto=proto)
            return f"{field.number} items:[{table_type}]"
        if go is None and message in p.defined:  # the struct of the package it is defined from
            folder, name = p.defined[message]
            go = next((q.structs.get(name) for q in self.pkgs.values()
                       if q.source is p.source and q.folder == folder), None)
        if go is None:
            raise SystemExit(f"{proto}.{message}: no Go struct")
        tokens = []
        for field in sorted(p.messages[message], key=lambda f: f.number):
            if field.number not in go:
                raise SystemExit(f"{proto}.{message}.{field.name}: no Go field with number {field.number}")
            tokens.append(self.field_token(field, go[field.number], proto=proto, message=message))
        return ", ".join(tokens)

    def reachable(self, roots: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Messages the roots reach, in a stable order (package order, then first reached)."""
        seen: dict[tuple[str, str], None] = {}
        todo = list(roots)
        while todo:
            key = todo.pop(0)
            if key in seen:
                continue
            seen[key] = None
            proto, message = key
            for field in self.pkgs[proto].messages[message]:
                _, package, name = self.resolve(field.type, proto=proto)
                if package and (package, name) not in seen:
                    todo.append((package, name))
        order = {proto: i for i, proto in enumerate(self.pkgs)}
        return sorted(seen, key=lambda k: order[k[0]])

    def roots(self) -> list[tuple[str, str]]:
        out = [(META, kind) for kind in META_ROOTS]
        for p in self.pkgs.values():
            out.extend((p.proto, kind) for kind in self.registered(p))
        return out

    @staticmethod
    def registered(p: Package) -> list[str]:
        """The kinds of a served group/version the server reads or writes (`Package.served`); each must be
        registered upstream and have a message and a Go struct."""
        for kind in p.served:
            if kind not in p.kinds or kind not in p.messages or kind not in p.structs:
                raise SystemExit(f"{p.api_version} {kind}: not a registered kind with a message")
        return list(p.served)

    def kinds(self) -> dict[str, dict[str, str]]:
        """apiVersion -> {kind: message} for the kinds the server reads or writes."""
        out: dict[str, dict[str, str]] = {}
        for p in self.pkgs.values():
            if not p.api_version:
                continue
            out[p.api_version] = {k: f"{p.openapi}.{k}" for k in self.registered(p)}
        meta = self.pkgs[META]
        out["meta.k8s.io/v1"] = {k: f"{meta.openapi}.{k}" for k in ("PartialObjectMetadata",
                                                                      "PartialObjectMetadataList")}
        out["v1"]["Status"] = f"{meta.openapi}.Status"
        return out


def render(gen: Generator, sources: list[Source]) -> str:
    messages = gen.reachable(gen.roots())
    by_package: dict[str, list[str]] = {}
    wrappers: list[str] = []
    for proto, message in messages:
        by_package.setdefault(proto, []).append(message)
        if gen.is_wrapper(proto, message):
            wrappers.append(f"{gen.pkgs[proto].openapi}.{message}")
    lines = [
        '"""The protobuf message table of `cp.protobuf`: every message the served kinds reach, as Kubernetes',
        "documents them (field numbers and types from the `generated.proto` files; JSON names, inlining,",
        "pointers and `omitempty` from the Go struct tags beside them).",
        "",
        "GENERATED by `tools/protobuf_tables.py` from:",
    ]
    lines += [f"    {s.name} {s.commit}" for s in sources]
    lines += [
        "Do not edit; rerun the generator (docs/api.md, \"Protobuf\"). Pure data, imported on the first",
        "protobuf request.",
        "",
        "One string per message: comma-separated fields `NUMBER jsonName[:type][flags]`, by field number.",
        "  type   s (the default) | i32 | i64 | bool | bytes | f64 | [T] repeated | {T} map<string, T>",
        "         | a message: `Name` of the same package, `alias.Name` of another (ALIASES)",
        "         | Time | MicroTime | Quantity | IntOrString | RawExtension | FieldsV1",
        "         | JSON | PropsOrArray | PropsOrBool | PropsOrStringArray (apiextensions' JSON unions)",
        "  flags  * nil-able in Go (a pointer, or a named slice type): on the wire only when set, and",
        "           kept in JSON when set to zero",
        "         ! no `omitempty`: JSON writes the zero value (null for nil) when unset",
        "         ? `omitzero`: JSON leaves the zero value out",
        "  `NUMBER ...Type` is an embedded Go struct whose fields JSON inlines into the parent.",
        "WRAPPERS are named slice types (`type ExtraValue []string`): one repeated field on the wire, a bare",
        "JSON array.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "ALIASES: dict[str, str] = {  # alias -> package",
    ]
    for proto in by_package:
        lines.append(f"    {gen.aliases[proto]!r}: {gen.pkgs[proto].openapi!r},")
    lines += ["}", "", "PACKAGES: dict[str, dict[str, str]] = {"]
    for proto, names in by_package.items():
        lines.append(f"    {gen.pkgs[proto].openapi!r}: {{")
        for name in names:
            lines.extend(_wrapped(f"        {name!r}: ", gen.message_spec(proto, name), ","))
        lines.append("    },")
    lines += ["}", "", "WRAPPERS: frozenset[str] = frozenset({"]
    lines += [f"    {w!r}," for w in sorted(wrappers)]
    lines += ["})", "", "# apiVersion -> kind -> message: the kinds each group/version registers.",
              "KINDS: dict[str, dict[str, str]] = {"]
    for api_version, kinds in gen.kinds().items():
        lines.append(f"    {api_version!r}: {{")
        lines.extend(f"        {k!r}: {v!r}," for k, v in kinds.items())
        lines.append("    },")
    lines += ["}", ""]
    return "\n".join(lines)


def _wrapped(prefix: str, spec: str, suffix: str, width: int = 110) -> list[str]:
    """A spec string as one line, or as implicitly concatenated pieces cut after commas."""
    if len(prefix) + len(spec) + 2 + len(suffix) <= width:
        return [f"{prefix}{spec!r}{suffix}"]
    indent = " " * (len(prefix) + 1)
    pieces: list[str] = []
    current = ""
    for token in spec.split(", "):
        candidate = f"{current}, {token}" if current else token
        if current and len(indent) + len(candidate) + 4 > width:
            pieces.append(current + ", ")
            current = token
        else:
            current = candidate
    pieces.append(current)
    lines = [f"{prefix}({pieces[0]!r}"] + [f"{indent}{p!r}" for p in pieces[1:]]
    lines[-1] += f"){suffix}"
    return lines


def served_kinds() -> dict[tuple[str, str], list[str]]:
    """(group, version) -> the kinds the server reads or writes: cp.resources' kinds of upstream groups,
    the lists of those it lists, the kinds of their subresources' bodies, and EXTRA_KINDS."""
    sys.path.insert(0, str(ROOT))
    from cp import resources

    out: dict[tuple[str, str], list[str]] = {}

    def add(group: str, version: str, kind: str) -> None:
        kinds = out.setdefault((group, version), [])
        if kind not in kinds:
            kinds.append(kind)

    # Built-in kinds a feature gate (cp.resources.GATED) or --runtime-config (cp.resources.OPTIONAL)
    # serves are served as protobuf too.
    for k in (*resources.KINDS, *(kind for _gate, kind in resources.GATED), *resources.OPTIONAL):
        if not k.protobuf:
            continue
        add(k.group, k.version, k.kind)
        if "list" in k.verbs:
            add(k.group, k.version, k.list_kind)
        for sub in k.subresources:
            if sub.kind.endswith("Options"):  # a connect subresource's options (exec, attach): a query, no body
                continue
            add(sub.group or k.group, sub.version or k.version, sub.kind)
    for api_version, kinds in EXTRA_KINDS.items():
        group, _, version = api_version.rpartition("/")
        for kind in kinds:
            add(group, version, kind)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api", required=True, help="kubernetes/api repository[@rev]")
    parser.add_argument("--apimachinery", required=True, help="kubernetes/apimachinery repository[@rev]")
    parser.add_argument("--apiextensions", required=True,
                        help="kubernetes/apiextensions-apiserver repository[@rev]")
    parser.add_argument("--aggregator", required=True, help="kubernetes/kube-aggregator repository[@rev]")
    parser.add_argument("--out", type=pathlib.Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="fail if --out is not what would be written")
    args = parser.parse_args(argv)
    sources = [Source(args.api, name="k8s.io/api"), Source(args.apimachinery, name="k8s.io/apimachinery"),
               Source(args.apiextensions, name="k8s.io/apiextensions-apiserver"),
               Source(args.aggregator, name="k8s.io/kube-aggregator")]
    api, apimachinery, apiextensions, aggregator = sources
    gen = Generator(packages(api=api, apimachinery=apimachinery, apiextensions=apiextensions,
                             aggregator=aggregator, served=served_kinds()),
                    sources={"k8s.io.api": api, "k8s.io.apimachinery": apimachinery})
    text = render(gen, sources)
    if args.check:
        current = args.out.read_text() if args.out.exists() else ""
        print("up to date" if current == text else f"{args.out} is stale")
        return 0 if current == text else 1
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
