"""The DRA CEL environment: compile device selectors once, evaluate them per device.

Behaviour follows `k8s.io/dynamic-resource-allocation/cel/compile.go` on top of the Kubernetes
CEL base environment, evaluated with the Rust CEL engine from `common-expression-language`:

- one variable, `device`, with `driver`, `attributes` (domain -> id -> value), `capacity`
  (domain -> id -> quantity) and `allowMultipleAllocations` (always present at runtime, as in
  upstream's stored-expression environment);
- attribute / capacity names without a domain get the device's driver as domain;
- looking up an unknown domain yields an empty map (so `device.attributes["x.example"].y` is a
  "no such key: y" runtime error, and `has(...)` on it is false), an unknown key is a runtime error;
- values: int, bool, string, version (a semver object), and list variants of each;
- Kubernetes library functions: `quantity()`/`isQuantity()` and quantity methods (`compareTo`,
  `isGreaterThan`, `isLessThan`, `add`, `sub`, `sign`, `isInteger`, `asInteger`,
  `asApproximateFloat`), `semver()`/`isSemver()` (with the `normalize` argument) and semver
  methods (`compareTo`, `isGreaterThan`, `isLessThan`, `major`, `minor`, `patch`), the lists
  library (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`), regex `find`/`findAll`,
  the strings and sets extensions, `includes()` and `cel.bind()`; and the IP, CIDR, URL and
  named-format libraries of `cp.kubecel`.

The Rust engine cannot hold foreign objects, so a quantity travels through CEL as the one-entry
map `{"__k8s_quantity__": "<value in nano units>"}` and a version as
`{"__k8s_semver__": "<version without build metadata>"}`. Both are canonical, so CEL's `==`
compares them by value, as the Go types' `Equal` does.

`compile_expression` compiles other Kubernetes expressions (admission policies, webhook match
conditions) in the same engine with the variables their caller declares.

Differences from cel-go that remain: no static type checking (a non-bool result is reported at
evaluation, not compile time), no runtime cost limit and no two-variable comprehensions (the CRD
rules of `cp.crd.cel` add type checking, costs and those comprehensions on top of this library).
Undeclared identifiers are detected at compile time.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
import types
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

if "cel" not in sys.modules:
    # The package's __init__ also imports its command-line tool (`cel.cli`: typer, rich and
    # prompt_toolkit, ~0.3 s) that we never use. An empty stand-in for that one submodule keeps the
    # first device selector (admission and the allocator) from paying for it.
    sys.modules.setdefault("cel.cli", types.ModuleType("cel.cli", "not loaded by cplane"))

import cel
from cel import stdlib as _celstd

from cp import kubecel as _kubecel
from cp.dra import semver as _semver
from cp.quantity import Quantity, QuantityError

__all__ = [
    "MAX_LIST_ITEMS",
    "CelCache",
    "CelDevice",
    "CelError",
    "CelFunctionError",
    "CompiledExpression",
    "EvaluationContext",
    "cel_optional_type",
    "compile_expression",
    "evaluate_value",
    "library",
    "quantity_value",
    "semver_value",
]

_T = TypeVar("_T")

QKEY = "__k8s_quantity__"
SKEY = "__k8s_semver__"
MAX_LIST_ITEMS = 48  # resourceapi.ResourceSliceMaxAttributeValuesPerDevice


class CelError(Exception):
    """A CEL compile or runtime error; `str()` is the text upstream puts after "CEL ... error: "."""


# ---------------------------------------------------------------------------------------------
# Value conversion


def quantity_value(q: Quantity) -> dict[str, str]:
    return {QKEY: str(q.nanos)}


def semver_value(v: _semver.Version) -> dict[str, str]:
    return {SKEY: v.key_without_build()}


def _is_q(x: Any) -> bool:
    return type(x) is dict and len(x) == 1 and QKEY in x


def _is_s(x: Any) -> bool:
    return type(x) is dict and len(x) == 1 and SKEY in x


def _q(x: Any) -> int:
    return int(x[QKEY])


def _sv(x: Any) -> _semver.Version:
    return _semver.parse(x[SKEY])


class _Err(Exception):
    """Raised by library functions; the message is what cel-go would report."""


def _no_overload(fn: str) -> _Err:
    return _Err(f"no such overload: {fn}")


# ---------------------------------------------------------------------------------------------
# Library functions (called receiver-style: `x.f(y)` is `f(x, y)`)


def _fn_quantity(s: Any) -> dict[str, str]:
    if not isinstance(s, str):
        raise _no_overload("quantity")
    try:
        return quantity_value(Quantity.parse(s))
    except QuantityError as e:
        raise _Err(str(e)) from None


def _fn_is_quantity(s: Any) -> bool:
    if not isinstance(s, str):
        raise _no_overload("isQuantity")
    try:
        Quantity.parse(s)
    except QuantityError:
        return False
    return True


def _fn_semver(s: Any, normalize: Any = False) -> dict[str, str]:
    if not isinstance(s, str) or not isinstance(normalize, bool):
        raise _no_overload("semver")
    try:
        v = _semver.normalize_and_parse(s) if normalize else _semver.parse(s)
    except _semver.SemverError as e:
        raise _Err(str(e)) from None
    return semver_value(v)


def _fn_is_semver(s: Any, normalize: Any = False) -> bool:
    if not isinstance(s, str) or not isinstance(normalize, bool):
        raise _no_overload("isSemver")
    try:
        _semver.normalize_and_parse(s) if normalize else _semver.parse(s)
    except _semver.SemverError:
        return False
    return True


def _cmp(a: Any, b: Any, fn: str) -> int:
    if _is_q(a) and _is_q(b):
        x, y = _q(a), _q(b)
        return (x > y) - (x < y)
    if _is_s(a) and _is_s(b):
        return _sv(a).compare(_sv(b))
    raise _no_overload(fn)


def _fn_compare_to(a: Any, b: Any) -> int:
    return _cmp(a, b, "compareTo")


def _fn_is_greater_than(a: Any, b: Any) -> bool:
    return _cmp(a, b, "isGreaterThan") == 1


def _fn_is_less_than(a: Any, b: Any) -> bool:
    return _cmp(a, b, "isLessThan") == -1


def _semver_part(name: str) -> Callable[[Any], int]:
    def part(v: Any) -> int:
        if not _is_s(v):
            raise _no_overload(name)
        return int(getattr(_sv(v), name))
    part.__name__ = name
    return part


def _fn_sign(q: Any) -> int:
    if not _is_q(q):
        raise _no_overload("sign")
    n = _q(q)
    return (n > 0) - (n < 0)


def _fn_is_integer(q: Any) -> bool:
    if not _is_q(q):
        raise _no_overload("isInteger")
    n = _q(q)
    return n % 1_000_000_000 == 0 and -(2**63) <= n // 1_000_000_000 < 2**63


def _fn_as_integer(q: Any) -> int:
    if not _fn_is_integer(q):
        raise _Err("cannot convert value to integer")
    return _q(q) // 1_000_000_000


def _fn_as_approximate_float(q: Any) -> float:
    if not _is_q(q):
        raise _no_overload("asApproximateFloat")
    return _q(q) / 1_000_000_000


def _q_operand(x: Any, fn: str) -> int:
    if _is_q(x):
        return _q(x)
    if type(x) is int:
        return x * 1_000_000_000
    raise _no_overload(fn)


def _fn_add(a: Any, b: Any) -> dict[str, str]:
    if not _is_q(a):
        raise _no_overload("add")
    return {QKEY: str(_q(a) + _q_operand(b, "add"))}


def _fn_sub(a: Any, b: Any) -> dict[str, str]:
    if not _is_q(a):
        raise _no_overload("sub")
    return {QKEY: str(_q(a) - _q_operand(b, "sub"))}


def _cel_equal(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and bool(a == b)
    if ta in (int, float) and tb in (int, float):
        return bool(a == b)
    if ta is not tb:
        return False
    if ta is list:
        return len(a) == len(b) and all(_cel_equal(x, y) for x, y in zip(a, b, strict=True))
    if ta is dict:
        return a.keys() == b.keys() and all(_cel_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _fn_includes(target: Any, arg: Any) -> bool:
    if isinstance(target, list):
        for i, item in enumerate(target):
            if i >= MAX_LIST_ITEMS:
                raise _Err(f"'includes' function cannot be applied to lists longer than {MAX_LIST_ITEMS} values")
            if _cel_equal(item, arg):
                return True
        return False
    return _cel_equal(target, arg)


def _fn_is_sorted(lst: Any) -> bool:
    if not isinstance(lst, list):
        raise _no_overload("isSorted")
    try:
        return all(_order(lst[i], lst[i + 1]) <= 0 for i in range(len(lst) - 1))
    except TypeError:
        raise _no_overload("isSorted") from None


def _order(a: Any, b: Any) -> int:
    if _is_q(a) or _is_s(a):
        return _cmp(a, b, "isSorted")
    return int((a > b) - (a < b))


def _fn_index_of(x: Any, item: Any, *rest: Any) -> int:
    if isinstance(x, list):
        for i, v in enumerate(x):
            if _cel_equal(v, item):
                return i
        return -1
    return int(_celstd.index_of(x, item, *rest))


def _fn_last_index_of(x: Any, item: Any, *rest: Any) -> int:
    if isinstance(x, list):
        for i in range(len(x) - 1, -1, -1):
            if _cel_equal(x[i], item):
                return i
        return -1
    return int(_celstd.last_index_of(x, item, *rest))


def _fn_find(s: Any, pattern: Any) -> str:
    if not isinstance(s, str) or not isinstance(pattern, str):
        raise _no_overload("find")
    m = re.search(pattern, s)
    return m.group(0) if m else ""


def _fn_find_all(s: Any, pattern: Any, limit: Any = -1) -> list[str]:
    if not isinstance(s, str) or not isinstance(pattern, str):
        raise _no_overload("findAll")
    out = [m.group(0) for m in re.finditer(pattern, s)]
    return out if limit < 0 else out[:limit]


def _library() -> dict[str, Callable[..., Any]]:
    fns: dict[str, Callable[..., Any]] = {}
    fns.update(_celstd.STDLIB_FUNCTIONS)
    fns.update({
        "quantity": _fn_quantity,
        "isQuantity": _fn_is_quantity,
        "semver": _fn_semver,
        "isSemver": _fn_is_semver,
        "compareTo": _fn_compare_to,
        "isGreaterThan": _fn_is_greater_than,
        "isLessThan": _fn_is_less_than,
        "major": _semver_part("major"),
        "minor": _semver_part("minor"),
        "patch": _semver_part("patch"),
        "sign": _fn_sign,
        "isInteger": _fn_is_integer,
        "asInteger": _fn_as_integer,
        "asApproximateFloat": _fn_as_approximate_float,
        "add": _fn_add,
        "sub": _fn_sub,
        "isSorted": _fn_is_sorted,
        "indexOf": _fn_index_of,
        "lastIndexOf": _fn_last_index_of,
        "find": _fn_find,
        "findAll": _fn_find_all,
    })
    # Like upstream's stored-expression environment (which the scheduler uses), `includes` is
    # available whether or not ListTypeAttributes is enabled.
    fns["includes"] = _fn_includes
    fns.update(_kubecel.FUNCTIONS)
    return fns


_LIBRARY = _library()


def library() -> Mapping[str, Callable[..., Any]]:
    """The library functions by the name the engine calls (`math.greatest`, `quantity`...)."""
    return _LIBRARY

# Functions the Rust engine provides itself (macros do not show up as function references).
_BUILTIN_FUNCTIONS = frozenset({
    "size", "matches", "contains", "startsWith", "endsWith", "int", "uint", "double", "string",
    "bytes", "timestamp", "duration", "dyn", "type", "has", "getFullYear", "getMonth", "getDate",
    "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getHours", "getMinutes", "getSeconds",
    "getMilliseconds", "of", "ofNonZeroValue", "none", "hasValue", "value", "or", "orValue",
})
_NAMESPACES = frozenset({"math", "sets", "strings", "base64", "lists", "optional", "format", "ip"})

# ---------------------------------------------------------------------------------------------
# Compilation


class CompiledExpression:
    """A compiled selector; `error` is set instead of `program` when compilation failed."""

    __slots__ = ("error", "expression", "functions", "program", "variables")

    def __init__(self, expression: str, program: Any, error: str | None, functions: frozenset[str],
                 variables: frozenset[str] = frozenset()) -> None:
        self.expression = expression
        self.program = program
        self.error = error
        self.functions = functions
        self.variables = variables  # the declared variables it reads


_IDENT_RE = r"[A-Za-z_][A-Za-z0-9_]*"
_MACRO_VARS_RE = re.compile(
    r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*(" + _IDENT_RE + r")\s*,(?:\s*(" + _IDENT_RE + r")\s*,)?")


def _skip_string(src: str, i: int) -> int:
    """Given src[i] is a quote (optionally after r/b prefixes handled by caller), return the index
    just past the closing quote."""
    q = src[i]
    if src.startswith(q * 3, i):
        end = src.find(q * 3, i + 3)
        return len(src) if end < 0 else end + 3
    j = i + 1
    raw = i > 0 and src[i - 1] in "rR"
    while j < len(src):
        c = src[j]
        if c == "\\" and not raw:
            j += 2
            continue
        if c == q:
            return j + 1
        j += 1
    return len(src)


def _rewrite_bind(src: str) -> str:
    """Rewrite `cel.bind(v, init, body)` to `[init].map(v, body)[0]` (same value; the Rust
    engine has no bind macro)."""
    start = 0
    while True:
        m = re.compile(r"\bcel\s*\.\s*bind\s*\(").search(src, start)
        if m is None:
            return src
        # Make sure the match is not inside a string literal.
        i, in_str = 0, False
        while i < m.start():
            if src[i] in "'\"":
                j = _skip_string(src, i)
                if j > m.start():
                    in_str = True
                    break
                i = j
            else:
                i += 1
        if in_str:
            start = m.end()
            continue
        args: list[str] = []
        depth, j, arg_start = 0, m.end(), m.end()
        while j < len(src):
            c = src[j]
            if c in "'\"":
                j = _skip_string(src, j)
                continue
            if c in "([{":
                depth += 1
            elif c in ")]}":
                if depth == 0:
                    args.append(src[arg_start:j])
                    break
                depth -= 1
            elif c == "," and depth == 0:
                args.append(src[arg_start:j])
                arg_start = j + 1
            j += 1
        else:
            return src  # unbalanced; let the parser report it
        if len(args) != 3:
            start = m.end()
            continue
        var, init, body = (a.strip() for a in args)
        replacement = f"[{init}].map({var}, {body})[0]"
        src = src[: m.start()] + replacement + src[j + 1:]
        start = m.start()


def compile_expression(expression: str, *, variables: frozenset[str],
                       functions: frozenset[str] = frozenset()) -> CompiledExpression:
    """Compile `expression` in an environment that declares `variables` (besides the extension
    namespaces) and, beyond this module's library and CEL's own functions, the function names
    `functions` (libraries other callers provide, such as the admission policies' `authorizer`, URL and IP
    functions: their calls compile, evaluation is theirs). Cached per (expression, variables, functions)."""
    return _compile_cached(expression, variables, functions)


@functools.lru_cache(maxsize=4096)
def _compile_cached(expression: str, variables: frozenset[str], functions: frozenset[str]) -> CompiledExpression:
    return _compile(expression, declared=variables, extra_functions=functions)


def _compile(expression: str, *, declared: frozenset[str] = frozenset({"device"}),
             extra_functions: frozenset[str] = frozenset()) -> CompiledExpression:
    library = _LIBRARY
    source = _rewrite_bind(expression) if "bind" in expression else expression
    try:
        program = cel.compile(source)
    except Exception as e:  # the engine raises ValueError with the parser's report
        text = str(e)
        idx = text.find("ERROR:")
        detail = text[idx:] if idx >= 0 else text
        return CompiledExpression(expression, None, f"compilation failed: {detail}", frozenset())
    refs = program.references()
    bound = set(declared) | _NAMESPACES
    for m in _MACRO_VARS_RE.finditer(source):
        bound.update(g for g in m.groups() if g)
    for name in refs["variables"]:
        if name not in bound:
            return CompiledExpression(expression, None, _undeclared(expression, name), frozenset())
    used: set[str] = set()
    namespaces = [v for v in refs["variables"] if v in _NAMESPACES]
    for fn in refs["functions"]:
        dotted = [f"{ns}.{fn}" for ns in namespaces if f"{ns}.{fn}" in library]
        if dotted:
            used.update(dotted)
            if fn not in library:
                continue
        if fn[0] in "_@!" or fn in _BUILTIN_FUNCTIONS or fn in extra_functions:
            continue
        if fn in library:
            used.add(fn)
            continue
        if dotted:
            continue
        return CompiledExpression(expression, None, _undeclared(expression, fn), frozenset())
    return CompiledExpression(expression, program, None, frozenset(used),
                              frozenset(v for v in refs["variables"] if v in declared))


def _undeclared(expression: str, name: str) -> str:
    m = re.search(r"\b" + re.escape(name) + r"\b", expression)
    col = (m.start() + 1) if m else 1
    return (f"compilation failed: ERROR: <input>:1:{col}: undeclared reference to '{name}' "
            f"(in container '')")


# ---------------------------------------------------------------------------------------------
# Devices


class CelDevice:
    """The CEL view of one device, built once and reused for every expression.

    `results` caches outcomes per expression: the value (True/False for a selector), or the CelError
    to re-raise.
    """

    __slots__ = ("attr_domains", "cap_domains", "ctx", "fn_names", "input_error", "lock",
                 "results", "variables")

    def __init__(self, *, driver: str, attributes: Mapping[str, Any] | None,
                 capacity: Mapping[str, Any] | None, allow_multiple_allocations: bool | None = False) -> None:
        self.results: dict[str, Any] = {}
        self.input_error: str | None = None
        self.ctx: Any = None
        self.fn_names: set[str] = set()
        self.lock = threading.Lock()
        attrs: dict[str, dict[str, Any]] = {}
        for name, attr in (attributes or {}).items():
            try:
                value = _attribute_value(attr)
            except CelError as e:
                self.input_error = f"attribute {name}: {e}"
                break
            domain, ident = _split_name(name, driver)
            attrs.setdefault(domain, {})[ident] = value
        caps: dict[str, dict[str, Any]] = {}
        if self.input_error is None:
            for name, cap in (capacity or {}).items():
                domain, ident = _split_name(name, driver)
                try:
                    q = Quantity.parse((cap or {}).get("value", "0"))
                except QuantityError as e:
                    self.input_error = f"capacity {name}: {e}"
                    break
                caps.setdefault(domain, {})[ident] = quantity_value(q)
        dev: dict[str, Any] = {"driver": driver, "attributes": attrs, "capacity": caps,
                               "allowMultipleAllocations": bool(allow_multiple_allocations)}
        self.variables = dev
        self.attr_domains = set(attrs)
        self.cap_domains = set(caps)


def _split_name(name: str, driver: str) -> tuple[str, str]:
    sep = name.find("/")
    if sep < 0:
        return driver, name
    return name[:sep], name[sep + 1:]


def _attribute_value(attr: Mapping[str, Any]) -> Any:
    if not isinstance(attr, Mapping):
        raise CelError("unsupported attribute value")
    if attr.get("ints") is not None:
        return list(attr["ints"])
    if attr.get("bools") is not None:
        return list(attr["bools"])
    if attr.get("strings") is not None:
        return list(attr["strings"])
    if attr.get("versions") is not None:
        out = []
        for v in attr["versions"]:
            try:
                out.append(semver_value(_semver.parse(v)))
            except _semver.SemverError as e:
                raise CelError(f"parse semantic version: {e}") from None
        return out
    if attr.get("int") is not None:
        return int(attr["int"])
    if attr.get("bool") is not None:
        return bool(attr["bool"])
    if attr.get("string") is not None:
        return attr["string"]
    if attr.get("version") is not None:
        try:
            return semver_value(_semver.parse(attr["version"]))
        except _semver.SemverError as e:
            raise CelError(f"parse semantic version: {e}") from None
    raise CelError("unsupported attribute value")


# ---------------------------------------------------------------------------------------------
# The cache

_PY_FN_ERR = re.compile(r"Python function call failed: (?:\w+\.)*(\w+): (.*?)(?:\. Check function arguments.*)?\Z",
                        re.DOTALL)


_NULL = object()  # a cached null result (None means "not evaluated yet")


class CelCache:
    """Compiled expressions (one per expression text) and per-device CEL state.

    Thread-safe. `device()` returns the cached `CelDevice` for a key that must change whenever
    the device's content may have changed (the allocator uses slice name, uid, generation and
    resourceVersion plus the device name). Entries beyond `max_devices` evict the oldest.
    """

    def __init__(self, *, max_devices: int = 500_000, max_expressions: int = 10_000) -> None:
        self._exprs: dict[str, CompiledExpression] = {}
        self._devices: dict[Any, Any] = {}
        self._lock = threading.Lock()
        self.max_devices = max_devices
        self.max_expressions = max_expressions

    def compile(self, expression: str) -> CompiledExpression:
        c = self._exprs.get(expression)
        if c is None:
            c = _compile(expression)
            with self._lock:
                if len(self._exprs) >= self.max_expressions:
                    self._exprs.clear()
                self._exprs[expression] = c
        return c

    def device(self, key: Any, build: Callable[[], _T]) -> _T:
        """The cached object for `key`, built on first use (CelDevices, and the allocator's
        pre-digested slices)."""
        d: _T | None = self._devices.get(key)
        if d is None:
            d = build()
            with self._lock:
                if len(self._devices) >= self.max_devices:
                    for k in list(self._devices)[: max(1, self.max_devices // 4)]:
                        del self._devices[k]
                self._devices[key] = d
        return d

    def clear(self) -> None:
        with self._lock:
            self._exprs.clear()
            self._devices.clear()

    def matches(self, compiled: CompiledExpression, device: CelDevice) -> bool:
        """Evaluate a compiled expression against a device; raises CelError on runtime errors
        (and on compile errors). The outcome is cached on the device."""
        r = device.results.get(compiled.expression)
        if r is None:
            r = self._evaluate(compiled, device)
            device.results[compiled.expression] = r
        if r is True or r is False:
            return r
        if isinstance(r, CelError):
            raise r
        raise CelError(f"CEL result of type {_cel_type_name(None if r is _NULL else r)} could not be converted to "
                       "bool")

    def value(self, compiled: CompiledExpression, device: CelDevice) -> Any:
        """The value of a compiled expression for a device (a derived attribute's); raises CelError on
        runtime errors (and on compile errors). The outcome is cached on the device."""
        r = device.results.get(compiled.expression)
        if r is None:
            r = self._evaluate(compiled, device)
            device.results[compiled.expression] = r
        if isinstance(r, CelError):
            raise r
        return None if r is _NULL else r

    def _evaluate(self, compiled: CompiledExpression, device: CelDevice) -> Any:
        if compiled.error is not None:
            return CelError(compiled.error)
        if device.input_error is not None:
            return CelError(device.input_error)
        library = _LIBRARY
        with device.lock:
            if device.ctx is None:
                device.ctx = cel.Context(variables={"device": device.variables})
            missing = compiled.functions - device.fn_names
            for name in missing:
                device.ctx.add_function(name, library[name])
                device.fn_names.add(name)
            ctx = device.ctx
        extra: dict[str, dict[str, Any]] | None = None
        for _ in range(64):
            try:
                result = compiled.program.execute(ctx)
            except KeyError as e:
                key = e.args[0] if e.args else ""
                if isinstance(key, str) and (key not in device.attr_domains or key not in device.cap_domains) \
                        and (extra is None or key not in extra):
                    # Unknown domain: upstream's attribute/capacity maps default to an empty map.
                    extra = dict(extra or {})
                    extra[key] = {}
                    variables = dict(device.variables)
                    variables["attributes"] = {**extra, **device.variables["attributes"]}
                    variables["capacity"] = {**extra, **device.variables["capacity"]}
                    ctx = cel.Context(variables={"device": variables},
                                      functions={n: library[n] for n in device.fn_names | compiled.functions})
                    continue
                return CelError(f"no such key: {key}")
            except TypeError as e:
                msg = str(e)
                if msg.startswith("No such overload"):
                    return CelError("no such overload")
                return CelError(msg)
            except ZeroDivisionError:
                return CelError("division by zero")
            except OverflowError:
                return CelError("integer overflow")
            except Exception as e:
                return CelError(_runtime_message(e))
            return _NULL if result is None else result
        return CelError("too many unknown map keys")


def _runtime_message(e: Exception) -> str:
    msg = str(e)
    m = _PY_FN_ERR.search(msg)
    if m:
        return m.group(2)
    return msg


def _cel_type_name(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "double"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    if _is_q(v):
        return "kubernetes.Quantity"
    if _is_s(v):
        return "kubernetes.Semver"
    if isinstance(v, dict):
        return "map"
    if v is None:
        return "null_type"
    return type(v).__name__


# ---------------------------------------------------------------------------------------------
# Other callers' expressions (admission): evaluation to any value

CelFunctionError = _Err  # raised by library functions: the message is cel-go's


def cel_optional_type() -> Any:
    """The engine's optional value type (`optional.of(x)` in CEL): `.of(x)`, `.none()`,
    `.has_value()`, `.value()`."""
    return cel.OptionalValue


def evaluate_value(compiled: CompiledExpression, variables: Mapping[str, Any], *,
                   extra_functions: Mapping[str, Callable[..., Any]] | None = None) -> Any:
    """Evaluate an expression compiled by `compile_expression` with `variables` (plain JSON-like
    values, engine optionals) and the caller's own functions; returns the value as the engine gives
    it. Raises CelError with cel-go's wording for the common runtime errors."""
    ctx = EvaluationContext(variables)
    return ctx.evaluate(compiled, extra_functions=extra_functions)


class EvaluationContext:
    """An engine context for several evaluations over the same variables: a variable is converted to
    the engine's values when an expression first reads it (a large object costs tens of
    microseconds), and again only when `set` changes it; functions are registered once."""

    __slots__ = ("_added", "_ctx", "_functions", "_values")

    def __init__(self, variables: Mapping[str, Any]) -> None:
        self._values = dict(variables)
        self._ctx: Any = cel.Context()
        self._added: set[str] = set()
        self._functions: set[str] = set()

    def set(self, name: str, value: Any) -> None:
        self._values[name] = value
        self._added.discard(name)

    def evaluate(self, compiled: CompiledExpression, *,
                 extra_functions: Mapping[str, Callable[..., Any]] | None = None) -> Any:
        if compiled.error is not None:
            raise CelError(compiled.error)
        ctx = self._ctx
        for name in compiled.functions:
            if name not in self._functions:
                ctx.add_function(name, _LIBRARY[name])
                self._functions.add(name)
        for name, fn in (extra_functions or {}).items():
            if name not in self._functions:
                ctx.add_function(name, fn)
                self._functions.add(name)
        try:
            for name in compiled.variables:
                if name not in self._added and name in self._values:
                    ctx.add_variable(name, self._values[name])  # converts: may fail (an int beyond int64)
                    self._added.add(name)
            return compiled.program.execute(ctx)
        except KeyError as e:
            key = e.args[0] if e.args else ""
            raise CelError(f"no such key: {key}") from None
        except TypeError as e:
            msg = str(e)
            raise CelError("no such overload" if msg.startswith("No such overload") else msg) from None
        except ZeroDivisionError:
            raise CelError("division by zero") from None
        except OverflowError:
            raise CelError("integer overflow") from None
        except Exception as e:
            raise CelError(_runtime_message(e)) from None
