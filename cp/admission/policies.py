"""Admission policies, evaluated: ValidatingAdmissionPolicy and MutatingAdmissionPolicy with their
bindings, as k8s.io/apiserver `pkg/admission/plugin/policy` (generic, validating, mutating) and
`pkg/admission/plugin/cel` evaluate them.

- A policy is compiled once (`compile_validating`, `compile_mutating`; callers cache them by uid and
  generation): match conditions, variables, validations (with `messageExpression`), audit annotations
  and mutations. An expression that does not compile fails at evaluation, under the policy's
  `failurePolicy`, with upstream's `compilation error: ...`.
- `definition_matches` / `binding_matches`: the policy's `matchConstraints` and a binding's
  `matchResources` (namespace and object selectors, resource rules, matchPolicy); a binding without
  `matchResources` matches whatever its policy matches.
- `Invocation` evaluates one (policy, binding, param): `variables` lazily, in order, each at most once
  (an expression sees only the variables it names, and fails with the first of them that failed);
  `matchConditions` (any false: the policy does not apply; errors: `failurePolicy`);
  `validate` gives a decision per validation (upstream's message fallbacks: trimmed
  `messageExpression` result, then `message`, then `failed expression: <expression>`) and the audit
  annotations; `mutate` applies the mutations (`ApplyConfiguration` merged as server-side apply merges
  a configuration, `cp.typed.merge`; `JSONPatch` applied in order, RFC 6902).

Pure: the caller reads policies, bindings, params and namespaces, and turns decisions into errors,
warnings and audit annotations.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import jsonpatch
import msgspec

from cp import rbac, typed
from cp.admission import authz, matching
from cp.admission import cel as acel
from cp.dra import celenv

__all__ = [
    "AuditAnnotation",
    "Decision",
    "Invocation",
    "MutatingPolicy",
    "PolicyError",
    "ValidatingPolicy",
    "binding_matches",
    "compile_mutating",
    "compile_validating",
    "definition_matches",
    "reason_code",
    "request_value",
]

FAIL, IGNORE = "Fail", "Ignore"
MAX_AUDIT_ANNOTATION_VALUE = 10 * 1024  # upstream's maxAuditAnnotationValueLength
MAX_MESSAGE_BYTES = 5 * 1024  # celconfig.MaxEvaluatedMessageExpressionSizeBytes

_REASON_CODES = {"Forbidden": 403, "Invalid": 422, "RequestEntityTooLarge": 413, "Unauthorized": 401,
                 "NotFound": 404, "AlreadyExists": 409, "Conflict": 409, "Gone": 410, "BadRequest": 400,
                 "MethodNotAllowed": 405, "NotAcceptable": 406, "UnsupportedMediaType": 415,
                 "TooManyRequests": 429, "InternalError": 500, "Timeout": 504, "ServerTimeout": 500}


def reason_code(reason: str) -> int:
    """The HTTP code of a Status reason (upstream `reasonToCode`; unknown reasons 500)."""
    return _REASON_CODES.get(reason, 500)


class PolicyError(Exception):
    """A configuration or evaluation error of one policy (or binding): subject to failurePolicy."""


# ---------------------------------------------------------------------------------------------
# Compilation


class Validation(msgspec.Struct, kw_only=True):
    expression: acel.AdmissionExpression
    message: str = ""
    message_expression: acel.AdmissionExpression | None = None
    reason: str = ""


class Mutation(msgspec.Struct, kw_only=True):
    patch_type: str  # ApplyConfiguration | JSONPatch
    expression: acel.AdmissionExpression


class _Policy:
    """What both policy kinds share."""

    def __init__(self, obj: Mapping[str, Any], *, mutating: bool) -> None:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        self.name = str(meta.get("name") or "")
        self.uid = str(meta.get("uid") or "")
        self.generation = int(meta.get("generation") or 0)
        self.failure_policy = str(spec.get("failurePolicy") or FAIL)
        self.match: dict[str, Any] = dict(spec.get("matchConstraints") or {})
        kind = spec.get("paramKind")
        self.param_kind: dict[str, str] | None = (
            {"apiVersion": str(kind.get("apiVersion") or ""), "kind": str(kind.get("kind") or "")}
            if isinstance(kind, Mapping) else None)
        base = {"object", "oldObject", "request", "namespaceObject", "authorizer"}
        if self.param_kind is not None:
            base.add("params")
        raw_vars = [v for v in spec.get("variables") or [] if isinstance(v, Mapping)]
        if raw_vars:
            base.add("variables")
        self.declared = frozenset(base)
        self.conditions = [(str(c.get("name") or ""), self._compile(c.get("expression")))
                           for c in spec.get("matchConditions") or [] if isinstance(c, Mapping)]
        self.variables = [(str(v.get("name") or ""), self._compile(v.get("expression"))) for v in raw_vars]

    def _compile(self, expression: Any) -> acel.AdmissionExpression:
        return acel.compile_admission(str(expression or ""), variables=self.declared)


class ValidatingPolicy(_Policy):
    """A compiled ValidatingAdmissionPolicy."""

    def __init__(self, obj: Mapping[str, Any]) -> None:
        super().__init__(obj, mutating=False)
        spec = obj.get("spec") or {}
        self.validations: list[Validation] = []
        for v in spec.get("validations") or []:
            if not isinstance(v, Mapping):
                continue
            message_expression = str(v.get("messageExpression") or "")
            self.validations.append(Validation(
                expression=self._compile(v.get("expression")), message=str(v.get("message") or ""),
                message_expression=self._compile(message_expression) if message_expression.strip() else None,
                reason=str(v.get("reason") or "")))
        self.audit_annotations = [(str(a.get("key") or ""), self._compile(a.get("valueExpression")))
                                  for a in spec.get("auditAnnotations") or [] if isinstance(a, Mapping)]


class MutatingPolicy(_Policy):
    """A compiled MutatingAdmissionPolicy."""

    def __init__(self, obj: Mapping[str, Any]) -> None:
        super().__init__(obj, mutating=True)
        spec = obj.get("spec") or {}
        self.reinvocation_policy = str(spec.get("reinvocationPolicy") or "Never")
        self.mutations: list[Mutation] = []
        for m in spec.get("mutations") or []:
            if not isinstance(m, Mapping):
                continue
            patch_type = str(m.get("patchType") or "")
            body = m.get("applyConfiguration") if patch_type == "ApplyConfiguration" else m.get("jsonPatch")
            expression = body.get("expression") if isinstance(body, Mapping) else ""
            self.mutations.append(Mutation(patch_type=patch_type, expression=self._compile(expression)))


def compile_validating(obj: Mapping[str, Any]) -> ValidatingPolicy:
    return ValidatingPolicy(obj)


def compile_mutating(obj: Mapping[str, Any]) -> MutatingPolicy:
    return MutatingPolicy(obj)


# ---------------------------------------------------------------------------------------------
# Matching


def definition_matches(match: Mapping[str, Any] | None, request: matching.Request, *,
                       equivalents: Sequence[matching.Request] = (), obj: Mapping[str, Any] | None,
                       old: Mapping[str, Any] | None,
                       namespace_labels: Mapping[str, str] | None) -> matching.Request | None:
    """upstream `matching.Matcher.Matches` on a policy's matchConstraints (or a binding's
    matchResources): the request as matched (another version's under matchPolicy Equivalent), or None
    when it does not apply."""
    m = match or {}
    if not matching.namespace_selector_matches(m.get("namespaceSelector"), request, namespace_labels):
        return None
    if not matching.object_selector_matches(m.get("objectSelector"), obj=obj, old=old):
        return None
    matched, as_matched = matching.resource_rules_match(m, request, equivalents=equivalents)
    return as_matched if matched else None


def binding_matches(binding: Mapping[str, Any], request: matching.Request, *,
                    equivalents: Sequence[matching.Request] = (), obj: Mapping[str, Any] | None,
                    old: Mapping[str, Any] | None, namespace_labels: Mapping[str, str] | None) -> bool:
    """A binding's matchResources (none: everything its policy matches)."""
    spec = binding.get("spec") or {}
    match = spec.get("matchResources")
    if not match:
        return True
    return definition_matches(match, request, equivalents=equivalents, obj=obj, old=old,
                              namespace_labels=namespace_labels) is not None


# ---------------------------------------------------------------------------------------------
# The request as CEL sees it


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def _gvr(group: str, version: str, resource: str) -> dict[str, str]:
    return {"group": group, "version": version, "resource": resource}


def request_value(*, matched: matching.Request, requested: matching.Request, user: rbac.UserInfo | None,
                  uid: str = "", dry_run: bool = False,
                  options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`request` (admission/v1 AdmissionRequest, upstream `CreateAdmissionRequest`): kind and resource
    as matched, requestKind/requestResource as sent, the user with its extras (a pod-bound service
    account token's `authentication.kubernetes.io/node-name`...), dryRun and options."""
    info = user or rbac.UserInfo(name="")
    return {
        "uid": uid,
        "kind": _gvk(matched.kind_group, matched.kind_version, matched.kind),
        "resource": _gvr(matched.group, matched.version, matched.resource),
        "subResource": matched.subresource,
        "requestKind": _gvk(requested.kind_group, requested.kind_version, requested.kind),
        "requestResource": _gvr(requested.group, requested.version, requested.resource),
        "requestSubResource": requested.subresource,
        "name": requested.name,
        "namespace": requested.namespace,
        "operation": requested.operation,
        "userInfo": {"username": info.name, "uid": info.uid, "groups": list(info.groups),
                     "extra": {k: list(v) for k, v in info.extra.items()}},
        "dryRun": dry_run,
        "options": dict(options or {}),
    }


def namespace_value(ns: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """`namespaceObject` (upstream `CreateNamespaceObject`): the namespace's metadata (without
    managedFields and owner references), spec and status."""
    if ns is None:
        return None
    meta = ns.get("metadata") or {}
    keep = ("name", "generateName", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
            "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "finalizers")
    return {"metadata": {k: meta[k] for k in keep if k in meta}, "spec": dict(ns.get("spec") or {}),
            "status": dict(ns.get("status") or {})}


# ---------------------------------------------------------------------------------------------
# Evaluation


class Decision(msgspec.Struct, kw_only=True):
    """One validation's outcome: `deny` with its message and reason, `admit`, or `error` (the message
    is the error; the failure policy decides)."""

    action: str  # admit | deny | error
    message: str = ""
    reason: str = ""
    index: int = 0


class AuditAnnotation(msgspec.Struct, kw_only=True):
    key: str
    value: str = ""
    error: str = ""


def _expression_error(expression: acel.AdmissionExpression, err: Exception) -> str:
    if expression.error is not None:
        return f"compilation error: {expression.error}"
    return f"expression '{expression.expression}' resulted in error: {err}"


class Invocation:
    """One (policy, binding, param) evaluated against one request. `object` may be replaced between
    mutations (`set_object`); variables are evaluated at most once per invocation."""

    def __init__(self, policy: _Policy, *, obj: dict[str, Any] | None, old: dict[str, Any] | None,
                 request: dict[str, Any], params: dict[str, Any] | None,
                 namespace: dict[str, Any] | None, user: rbac.UserInfo | None = None,
                 authorize: authz.Authorize | None = None) -> None:
        self.policy = policy
        resource = request.get("resource") or {}
        authorizer = authz.authorizer_value(
            group=str(resource.get("group") or ""), version=str(resource.get("version") or ""),
            resource=str(resource.get("resource") or ""), subresource=str(request.get("subResource") or ""),
            namespace=str(request.get("namespace") or ""), name=str(request.get("name") or ""))
        self._functions = authz.functions(user=user, authorize=authorize)
        base: dict[str, Any] = {"object": obj, "oldObject": old, "request": request,
                                "namespaceObject": namespace_value(namespace), "authorizer": authorizer}
        if policy.param_kind is not None:
            base["params"] = params
        self._defined = {name: i for i, (name, _) in enumerate(policy.variables)}
        if self._defined:
            base["variables"] = {}
        self._activation = acel.Activation(base)
        self._values: dict[str, Any] = {}
        self._errors: dict[str, str] = {}

    def set_object(self, obj: dict[str, Any] | None) -> None:
        self._activation.set("object", obj)

    def _need(self, expression: acel.AdmissionExpression, seen: frozenset[str] = frozenset()) -> None:
        for name in expression.variables_used:
            if name in self._values or name in self._errors or name in seen:
                continue
            index = self._defined.get(name)
            if index is None:
                continue  # an unknown variable: the expression's own "no such key"
            var = self.policy.variables[index][1]
            self._need(var, seen | {name})
            failed = next((self._errors[n] for n in var.variables_used if n in self._errors), None)
            if failed is not None:
                self._errors[name] = failed
                continue
            try:
                self._values[name] = acel.evaluate(var, self._activation, functions=self._functions)
            except acel.CelError as e:
                self._errors[name] = _expression_error(var, e)
            else:
                self._activation.set("variables", dict(self._values))

    def evaluate(self, expression: acel.AdmissionExpression) -> Any:
        """The expression's value; raises PolicyError with upstream's texts (compilation error,
        `expression '...' resulted in error: ...`, or the failed variable's error)."""
        if expression.error is not None:
            raise PolicyError(f"compilation error: {expression.error}")
        self._need(expression)
        for name in expression.variables_used:
            if name in self._errors:
                raise PolicyError(self._errors[name])
        try:
            return acel.evaluate(expression, self._activation, functions=self._functions)
        except acel.CelError as e:
            raise PolicyError(_expression_error(expression, e)) from None

    def _boolean(self, expression: acel.AdmissionExpression) -> bool:
        value = self.evaluate(expression)
        if value is True or value is False:
            return value
        raise PolicyError(f"expression '{expression.expression}' resulted in error: "
                          f"must evaluate to bool but got {_cel_type(value)}")

    def conditions_match(self) -> bool:
        """matchConditions: False when one is false (even with others failing); PolicyError when none
        is false but some failed (upstream aggregates their errors)."""
        failures: list[str] = []
        for _name, expression in self.policy.conditions:
            try:
                if not self._boolean(expression):
                    return False
            except PolicyError as e:
                failures.append(str(e))
        if failures:
            raise PolicyError(failures[0] if len(failures) == 1 else "[" + ", ".join(failures) + "]")
        return True

    # -- validating

    def validate(self) -> list[Decision]:
        """A decision per validation of a ValidatingAdmissionPolicy."""
        assert isinstance(self.policy, ValidatingPolicy)
        out: list[Decision] = []
        for i, v in enumerate(self.policy.validations):
            try:
                ok = self._boolean(v.expression)
            except PolicyError as e:
                out.append(Decision(action="error", message=str(e), index=i))
                continue
            if ok:
                out.append(Decision(action="admit", index=i))
                continue
            out.append(Decision(action="deny", message=self._message(v), reason=v.reason or "Invalid", index=i))
        return out

    def _message(self, v: Validation) -> str:
        message = ""
        if v.message_expression is not None:
            try:
                value = self.evaluate(v.message_expression)
            except PolicyError:
                value = None  # upstream logs it and falls back
            if isinstance(value, str):
                message = value.strip()
                if len(message.encode()) > MAX_MESSAGE_BYTES or "\n" in message:
                    message = ""
        if not message and v.message.strip():
            message = v.message.strip()
        if not message:
            message = f"failed expression: {v.expression.expression.strip()}"
        return message

    def audit_annotations(self) -> list[AuditAnnotation]:
        """auditAnnotations: a string value (trimmed; empty or null: left out), or an error."""
        assert isinstance(self.policy, ValidatingPolicy)
        out: list[AuditAnnotation] = []
        for key, expression in self.policy.audit_annotations:
            try:
                value = self.evaluate(expression)
            except PolicyError as e:
                out.append(AuditAnnotation(key=key, error=str(e)))
                continue
            if value is None:
                continue
            if not isinstance(value, str):
                out.append(AuditAnnotation(key=key, error=(
                    f"valueExpression '{expression.expression}' resulted in unsupported return type: "
                    f"{_cel_type(value)}. Return type must be either string or null.")))
                continue
            value = value.strip()
            if value:
                out.append(AuditAnnotation(key=key, value=value[:MAX_AUDIT_ANNOTATION_VALUE]))
        return out

    # -- mutating

    def mutate(self, obj: dict[str, Any], *, root: typed.Type) -> dict[str, Any]:
        """The object after the policy's mutations, in order (each sees the previous one's result).
        Raises PolicyError (upstream's texts) for a failed expression or patch."""
        assert isinstance(self.policy, MutatingPolicy)
        current = obj
        for m in self.policy.mutations:
            self.set_object(current)
            value = self.evaluate(m.expression)
            if m.patch_type == "ApplyConfiguration":
                current = apply_configuration(current, value, root=root)
            elif m.patch_type == "JSONPatch":
                current = apply_json_patch(current, value)
            else:
                raise PolicyError(f"unsupported patch type: {m.patch_type}")
        self.set_object(current)
        return current


def _cel_type(value: Any) -> str:
    if value is None:
        return "null_type"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list(dyn)"
    if isinstance(value, dict):
        return "map(dyn, dyn)"
    return type(value).__name__


def _plain(value: Any) -> Any:
    """An engine value as JSON (optionals unwrapped: none is null)."""
    opt = celenv.cel_optional_type()
    if isinstance(value, opt):
        return _plain(value.value()) if value.has_value() else None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def apply_configuration(obj: dict[str, Any], value: Any, *, root: typed.Type) -> dict[str, Any]:
    """An `ApplyConfiguration` result merged into `obj` as server-side apply merges a configuration
    (maps recursively, associative lists by key, atomic values replaced)."""
    if not isinstance(value, dict):
        raise PolicyError(f"unsupported return type from ApplyConfiguration expression: {_cel_type(value)}")
    config = _plain(value)
    atomics = _atomics(config, root, "")
    if atomics:
        raise PolicyError("error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, "
                          f"maps or structs: {', '.join(atomics)}")
    for key in ("apiVersion", "kind"):
        if key in config and config[key] != obj.get(key):
            raise PolicyError("error applying patch: invalid ApplyConfiguration: "
                              f"may not change {key}")
    merged = typed.merge(copy.deepcopy(obj), config, root)
    if not isinstance(merged, dict):
        raise PolicyError("error applying patch: the result is not an object")
    return merged


def _atomics(value: Any, t: typed.Type, path: str) -> list[str]:
    """upstream `findAtomics`: the paths (`.spec.x[0].y`) of the atomic maps, structs and lists an
    apply configuration sets, which it may not (they would replace what they do not name)."""
    out: list[str] = []
    if isinstance(value, dict) and t.kind == typed.KIND_MAP:
        if t.atomic:
            out.append(path)
        for key, v in value.items():
            field = t.fields.get(key)
            if field is not None:
                out.extend(_atomics(v, field, f"{path}.{key}"))
    elif isinstance(value, list) and t.kind == typed.KIND_LIST:
        if t.atomic:
            out.append(path)
        elem = t.elem or typed.UNTYPED
        for i, v in enumerate(value):
            out.extend(_atomics(v, elem, f"{path}[{i}]"))
    return out


def apply_json_patch(obj: dict[str, Any], value: Any) -> dict[str, Any]:
    """A `JSONPatch` result (a list of `JSONPatch{op, path, from, value}`) applied to `obj`."""
    if not isinstance(value, list):
        raise PolicyError("type mismatch: JSONPatchType.expression should evaluate to array")
    ops: list[dict[str, Any]] = []
    for item in value:
        if not isinstance(item, dict):
            raise PolicyError("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, "
                              f"got element of {_cel_type(item)}")
        ops.append({k: _plain(v) for k, v in item.items()})
    try:
        out = jsonpatch.JsonPatch(ops).apply(copy.deepcopy(obj))
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as e:
        raise PolicyError(f"JSON Patch: {e}") from None
    except (TypeError, KeyError, IndexError, ValueError, AttributeError) as e:
        raise PolicyError(f"JSON Patch: {e}") from None
    if not isinstance(out, dict):
        raise PolicyError("JSON Patch: the result is not an object")
    return out
