"""The admission policy plugins: `MutatingAdmissionPolicy` (mutating step) and
`ValidatingAdmissionPolicy` (validating step), as k8s.io/apiserver `pkg/admission/plugin/policy`
dispatches them (evaluation is pure: `cp.admission.policies`).

- Policies, bindings and params are read through the event log (`listers.Lister`) and kept while
  the log reports no change to their resource; policies are compiled once per uid and generation.
  A write is not looked at when there is no policy or no binding (`handles`).
- Every write of every stored kind is seen (status and other subresource writes, dry runs, deletes),
  but for the policy kinds themselves (upstream excludes admission configuration resources from
  API-defined policies) and for the non-stored reviews.
- Each policy whose matchConstraints match, then each of its bindings (`spec.policyName`) whose
  matchResources match, is evaluated once per param (`paramKind` + the binding's `paramRef`: by
  name or selector, in the binding's namespace, the request's, or cluster-wide;
  `parameterNotFoundAction` Deny refuses when none is found, Allow skips the binding).
- Validating: `validationActions` Deny -> the first denial is the error, as upstream's
  `ValidatingAdmissionPolicy 'p' with binding 'b' denied request: <message>` (code from the
  validation's `reason`, 422 `Invalid` by default); Warn -> a warning `Validation failed for
  ValidatingAdmissionPolicy 'p' with binding 'b': <message>`; Audit -> the
  `validation.policy.admission.k8s.io/validation_failure` audit annotation; `auditAnnotations` ->
  `<policy>/<key>` annotations. Audit annotations are kept in the write's context
  (`WriteContext.audit_annotations`).
- Mutating: the policies' mutations change the object in order; an `IfNeeded` policy is run once
  more when a later policy changed the object after it (upstream's reinvocation, within this
  plugin). Errors under failurePolicy Fail refuse the write: `policy 'p' with binding 'b' denied
  request: <error>`.
- Errors (compilation, evaluation, params) follow the policy's `failurePolicy` (Fail: a refusal;
  Ignore: the binding is skipped).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from api import admission
from api.admission import listers
from cp import conversions, errors, fieldmanager, selectors, validation
from cp import resources as res
from cp.admission import authz, matching, typecheck
from cp.admission import policies as pol
from storage import log

GROUP = "admissionregistration.k8s.io"
VALIDATING, VALIDATING_BINDINGS = "validatingadmissionpolicies", "validatingadmissionpolicybindings"
MUTATING, MUTATING_BINDINGS = "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"
POLICY_RESOURCES = frozenset({VALIDATING, VALIDATING_BINDINGS, MUTATING, MUTATING_BINDINGS})
VALIDATION_FAILURE_ANNOTATION = "validation.policy.admission.k8s.io/validation_failure"
MAX_VALIDATION_FAILURES = 50

ParamKindResolver = Callable[[str, str], res.ResourceKind | None]


def builtin_param_kind(group: str, kind: str) -> res.ResourceKind | None:
    """The stored resource of a paramKind (group, kind) among the built-in kinds."""
    return res.by_kind(group, kind)


def _excluded(kind: res.ResourceKind) -> bool:
    return not kind.stored or (kind.group == GROUP and kind.plural in POLICY_RESOURCES)


def _request_of(kind: res.ResourceKind, attrs: admission.Attributes) -> matching.Request:
    return matching.Request(group=kind.group, version=kind.version, resource=kind.plural,
                            subresource=attrs.subresource, kind_group=kind.group, kind_version=kind.version,
                            kind=kind.kind, operation=attrs.operation, namespace=attrs.namespace,
                            name=attrs.name, namespaced=kind.namespaced)


class Namespaces:
    """Namespaces by name, read through the log and kept while no namespace changed (upstream's
    namespace lister)."""

    def __init__(self, *, event_log: log.EventLog) -> None:
        self.event_log = event_log
        self._lister = listers.Lister(group="", resource="namespaces")
        self._index: tuple[list[dict[str, Any]], dict[str, dict[str, Any]]] | None = None

    async def get(self, name: str) -> dict[str, Any] | None:
        items = await self._lister.list(self.event_log)
        index = self._index
        if index is None or index[0] is not items:
            index = self._index = (items, {str((o.get("metadata") or {}).get("name")): o for o in items})
        return index[1].get(name)


class _Write:
    """What the plugins work out once per write: the request, its equivalents, the namespace."""

    def __init__(self, attrs: admission.Attributes) -> None:
        self.attrs = attrs
        self.request = _request_of(attrs.kind, attrs)
        self.kinds = {(k.group, k.version, k.plural): k for k in attrs.equivalents or (attrs.kind,)}
        self.equivalents = [_request_of(k, attrs) for k in self.kinds.values()]
        self._namespace: dict[str, Any] | None = None
        self._namespace_read = False

    async def namespace(self, namespaces: Namespaces) -> dict[str, Any] | None:
        """The request's namespace object (None for cluster-scoped requests and a Namespace itself)."""
        attrs = self.attrs
        if not self._namespace_read:
            self._namespace_read = True
            if attrs.kind.namespaced and attrs.namespace:
                self._namespace = await namespaces.get(attrs.namespace)
        return self._namespace

    async def namespace_labels(self, namespaces: Namespaces) -> dict[str, str] | None:
        attrs = self.attrs
        if self.request.is_namespace:
            source = attrs.obj if attrs.operation in (admission.CREATE, admission.UPDATE) and attrs.obj \
                else attrs.old
            return dict(((source or {}).get("metadata") or {}).get("labels") or {})
        ns = await self.namespace(namespaces)
        return dict((ns or {}).get("metadata", {}).get("labels") or {}) if ns is not None else None

    def object_as(self, matched: matching.Request, obj: dict[str, Any] | None) -> dict[str, Any] | None:
        """The object in the version the policy matched (upstream converts it)."""
        if obj is None:
            return None
        kind = self.kinds.get((matched.group, matched.version, matched.resource))
        if kind is None or kind is self.attrs.kind or not kind.storage_of:
            return obj
        return conversions.to_served(kind, obj)

    def object_back(self, matched: matching.Request, obj: dict[str, Any]) -> dict[str, Any]:
        """An object in the matched version back in the written (stored) one."""
        kind = self.kinds.get((matched.group, matched.version, matched.resource))
        if kind is None or kind is self.attrs.kind or not kind.storage_of:
            return obj
        return conversions.to_storage(kind, obj)


class _Hook:
    """A compiled policy and its bindings."""

    def __init__(self, policy: Any, obj: dict[str, Any], bindings: list[dict[str, Any]]) -> None:
        self.policy = policy
        self.obj = obj
        self.bindings = bindings


class PolicySource:
    """The policies of one kind with their bindings, compiled, current with the event log."""

    def __init__(self, *, event_log: log.EventLog, policies: str, bindings: str,
                 compile_policy: Callable[[dict[str, Any]], Any]) -> None:
        self.event_log = event_log
        self.policies = listers.Lister(group=GROUP, resource=policies)
        self.bindings = listers.Lister(group=GROUP, resource=bindings)
        self._compile = compile_policy
        self._compiled: dict[str, tuple[int, Any]] = {}
        self._hooks: tuple[list[dict[str, Any]], list[dict[str, Any]], list[_Hook]] | None = None

    def known_empty(self) -> bool:
        """No policy or no binding, known without reading the log."""
        return self.policies.peek(self.event_log) == [] or self.bindings.peek(self.event_log) == []

    async def hooks(self) -> list[_Hook]:
        policies = await self.policies.list(self.event_log)
        bindings = await self.bindings.list(self.event_log)
        cached = self._hooks
        if cached is not None and cached[0] is policies and cached[1] is bindings:
            return cached[2]
        by_policy: dict[str, list[dict[str, Any]]] = {}
        for b in bindings:
            by_policy.setdefault(str((b.get("spec") or {}).get("policyName") or ""), []).append(b)
        hooks: list[_Hook] = []
        live: set[str] = set()
        for p in policies:
            meta = p.get("metadata") or {}
            uid, generation = str(meta.get("uid") or ""), int(meta.get("generation") or 0)
            live.add(uid)
            entry = self._compiled.get(uid)
            if entry is None or entry[0] != generation:
                entry = (generation, self._compile(p))
                self._compiled[uid] = entry
            mine = by_policy.get(str(meta.get("name") or ""))
            if mine:
                hooks.append(_Hook(entry[1], p, mine))
        for uid in [u for u in self._compiled if u not in live]:
            del self._compiled[uid]
        self._hooks = (policies, bindings, hooks)
        return hooks


class _Params:
    """Reads params (upstream `CollectParams`) through listers per resource."""

    def __init__(self, *, event_log: log.EventLog, resolve: ParamKindResolver) -> None:
        self.event_log = event_log
        self.resolve = resolve
        self._listers: dict[tuple[str, str], listers.Lister] = {}

    async def collect(self, param_kind: dict[str, str] | None, binding: dict[str, Any],
                      namespace: str) -> list[dict[str, Any] | None]:
        ref = (binding.get("spec") or {}).get("paramRef")
        if param_kind is None or not isinstance(ref, dict):
            return [None]
        api_version = param_kind["apiVersion"]
        group = api_version.rpartition("/")[0]
        kind = self.resolve(group, param_kind["kind"])
        if kind is None:
            raise pol.PolicyError(f"paramKind kind `{api_version}, Kind={param_kind['kind']}` not known")
        ref_ns = str(ref.get("namespace") or "")
        if kind.namespaced:
            ns = ref_ns or namespace
            if not ns:
                raise pol.PolicyError("cannot use namespaced paramRef in policy binding that matches "
                                      "cluster-scoped resources")
        else:
            if ref_ns:
                raise pol.PolicyError("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
            ns = ""
        lister = self._listers.get((kind.group, kind.plural))
        if lister is None:
            lister = self._listers[(kind.group, kind.plural)] = listers.Lister(group=kind.group,
                                                                              resource=kind.plural)
        found: list[dict[str, Any] | None]
        name = str(ref.get("name") or "")
        if name:
            if ref.get("selector") is not None:
                raise pol.PolicyError("paramRef.name and paramRef.selector are mutually exclusive")
            found = [o for o in await lister.list(self.event_log, ns)
                     if (o.get("metadata") or {}).get("name") == name]
        elif ref.get("selector") is not None:
            try:
                selector = selectors.from_label_selector_object(ref.get("selector"))
            except errors.StatusError as e:
                raise pol.PolicyError(e.message) from None
            found = [o for o in await lister.list(self.event_log, ns)
                     if selector.matches((o.get("metadata") or {}).get("labels") or {})]
        else:
            raise pol.PolicyError("one of name or selector must be provided")
        if not found and ref.get("parameterNotFoundAction") == "Deny":
            raise pol.PolicyError("no params found for policy binding with `Deny` parameterNotFoundAction")
        return [conversions.to_served(kind, o) if o is not None and kind.storage_of else o for o in found]


class _Invocations:
    """Shared by both plugins: which (policy, binding, param) apply to a write."""

    def __init__(self, source: PolicySource, params: _Params) -> None:
        self.source = source
        self.params = params
        self.namespaces = Namespaces(event_log=source.event_log)

    async def matching(self, write: _Write, on_error: Callable[[Any, dict[str, Any] | None, str], None]
                       ) -> list[tuple[_Hook, dict[str, Any], matching.Request, dict[str, Any] | None]]:
        attrs = write.attrs
        out: list[tuple[_Hook, dict[str, Any], matching.Request, dict[str, Any] | None]] = []
        labels: dict[str, str] | None = None
        labels_read = False
        for hook in await self.source.hooks():
            policy = hook.policy
            if not labels_read and _needs_namespace(hook):
                labels, labels_read = await write.namespace_labels(self.namespaces), True
            try:
                matched = pol.definition_matches(policy.match, write.request, equivalents=write.equivalents,
                                                 obj=attrs.obj, old=attrs.old, namespace_labels=labels)
            except errors.StatusError as e:
                on_error(hook, None, f"failed to configure policy: {e.message}")
                continue
            if matched is None:
                continue
            for binding in hook.bindings:
                try:
                    if not pol.binding_matches(binding, write.request, equivalents=write.equivalents,
                                               obj=attrs.obj, old=attrs.old, namespace_labels=labels):
                        continue
                    params = await self.params.collect(policy.param_kind, binding, attrs.namespace)
                except (pol.PolicyError, errors.StatusError) as e:
                    text = e.message if isinstance(e, errors.StatusError) else str(e)
                    on_error(hook, binding, f"failed to configure binding: {text}")
                    continue
                out.extend((hook, binding, matched, p) for p in params)
        return out


def _needs_namespace(hook: _Hook) -> bool:
    if (hook.policy.match or {}).get("namespaceSelector"):
        return True
    return any(((b.get("spec") or {}).get("matchResources") or {}).get("namespaceSelector") for b in hook.bindings)


def _name(obj: dict[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("name") or "")


def _denial(attrs: admission.Attributes, message: str, reason: str, causes: list[str]) -> errors.StatusError:
    """upstream: admission.NewForbidden with the decision's reason and code, each message a cause."""
    err = admission.forbidden(attrs, message)
    err.reason = reason
    err.code = pol.reason_code(reason)
    err.details = dict(err.details or {})
    err.details["causes"] = [{"message": c} for c in causes]
    return err


class _Base(admission.BasePlugin):
    def __init__(self, *, event_log: log.EventLog, policies: str, bindings: str,
                 compile_policy: Callable[[dict[str, Any]], Any],
                 resolve_param_kind: ParamKindResolver = builtin_param_kind,
                 authorize: authz.Authorize | None = None) -> None:
        self.authorize = authorize
        self.source = PolicySource(event_log=event_log, policies=policies, bindings=bindings,
                                   compile_policy=compile_policy)
        self.invocations = _Invocations(self.source, _Params(event_log=event_log, resolve=resolve_param_kind))

    def may_handle(self, *, group: str, plural: str, subresource: str, operation: str) -> bool:
        return not (group == GROUP and plural in POLICY_RESOURCES)  # `_excluded`, but for `stored`

    def handles(self, attrs: admission.Attributes) -> bool:
        return not _excluded(attrs.kind) and not self.source.known_empty()

    async def _invoke(self, write: _Write, hook: _Hook, matched: matching.Request, params: dict[str, Any] | None,
                      obj: dict[str, Any] | None) -> pol.Invocation:
        attrs = write.attrs
        request = pol.request_value(matched=matched, requested=write.request, user=attrs.user,
                                    dry_run=attrs.dry_run)
        return pol.Invocation(hook.policy, obj=write.object_as(matched, obj), old=write.object_as(matched, attrs.old),
                              request=request, params=params,
                              namespace=await write.namespace(self.invocations.namespaces),
                              user=attrs.user, authorize=self.authorize)


class ValidatingAdmissionPolicyPlugin(_Base):
    name = "ValidatingAdmissionPolicy"

    def __init__(self, *, event_log: log.EventLog, resolve_param_kind: ParamKindResolver = builtin_param_kind,
                 authorize: authz.Authorize | None = None) -> None:
        super().__init__(event_log=event_log, policies=VALIDATING, bindings=VALIDATING_BINDINGS,
                         compile_policy=pol.compile_validating, resolve_param_kind=resolve_param_kind, authorize=authorize)

    async def validate(self, attrs: admission.Attributes, store: admission.Store) -> None:
        write = _Write(attrs)
        denied: list[tuple[str, str, str, str]] = []  # (policy, binding, message, reason)
        failures: list[dict[str, Any]] = []

        def config_error(hook: _Hook, binding: dict[str, Any] | None, message: str) -> None:
            if hook.policy.failure_policy != pol.IGNORE:
                denied.append((hook.policy.name, _name(binding), message, ""))

        annotations: dict[str, dict[str, list[str]]] = {}
        for hook, binding, matched, params in await self.invocations.matching(write, config_error):
            policy: pol.ValidatingPolicy = hook.policy
            binding_name = _name(binding)
            actions = list((binding.get("spec") or {}).get("validationActions") or [])
            invocation = await self._invoke(write, hook, matched, params, attrs.obj)
            try:
                if not invocation.conditions_match():
                    continue
            except pol.PolicyError as e:
                config_error(hook, binding, str(e))
                continue
            for decision in invocation.validate():
                if decision.action == "error":
                    if policy.failure_policy == pol.IGNORE:
                        continue
                    decision = pol.Decision(action="deny", message=decision.message, reason="",
                                            index=decision.index)
                if decision.action != "deny":
                    continue
                for action in actions:
                    if action == "Deny":
                        denied.append((policy.name, binding_name, decision.message, decision.reason))
                    elif action == "Warn":
                        attrs.warnings.append(f"Validation failed for ValidatingAdmissionPolicy '{policy.name}' "
                                              f"with binding '{binding_name}': {decision.message}")
                    elif action == "Audit":
                        failures.append({"message": decision.message, "policy": policy.name,
                                         "binding": binding_name, "expressionIndex": decision.index,
                                         "validationActions": actions})
            for note in invocation.audit_annotations():
                if note.error:
                    if policy.failure_policy != pol.IGNORE:
                        denied.append((policy.name, binding_name, note.error, ""))
                    continue
                values = annotations.setdefault(policy.name, {}).setdefault(note.key, [])
                if note.value not in values:
                    values.append(note.value)
        for policy_name, keys in annotations.items():
            for key, values in keys.items():
                attrs.audit_annotations[f"{policy_name}/{key}"] = ", ".join(values)
        if failures:
            attrs.audit_annotations[VALIDATION_FAILURE_ANNOTATION] = json.dumps(
                failures[:MAX_VALIDATION_FAILURES], separators=(",", ":"))
        if denied:
            policy_name, binding_name, message, reason = denied[0]
            text = (f"ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}' denied request: "
                    f"{message}" if binding_name else
                    f"ValidatingAdmissionPolicy '{policy_name}' denied request: {message}")
            raise _denial(attrs, text, reason or "Invalid", [text])


class MutatingAdmissionPolicyPlugin(_Base):
    name = "MutatingAdmissionPolicy"

    def __init__(self, *, event_log: log.EventLog, resolve_param_kind: ParamKindResolver = builtin_param_kind,
                 authorize: authz.Authorize | None = None) -> None:
        super().__init__(event_log=event_log, policies=MUTATING, bindings=MUTATING_BINDINGS,
                         compile_policy=pol.compile_mutating, resolve_param_kind=resolve_param_kind, authorize=authorize)

    def may_handle(self, *, group: str, plural: str, subresource: str, operation: str) -> bool:
        return operation in (admission.CREATE, admission.UPDATE) and super().may_handle(
            group=group, plural=plural, subresource=subresource, operation=operation)

    def handles(self, attrs: admission.Attributes) -> bool:
        # Mutations need an object: deletes (and connects) are not mutated.
        return attrs.operation in (admission.CREATE, admission.UPDATE) and super().handles(attrs)

    async def admit(self, attrs: admission.Attributes, store: admission.Store) -> None:
        """Run the matching policies' mutations in order. In the chain's second round (a later plugin,
        such as a webhook, changed the object: upstream's reinvocation), only the `IfNeeded` policies run
        again, and only if the object changed since this plugin's output."""
        if attrs.obj is None:
            return
        reinvocation = attrs.reinvocation
        if reinvocation.reinvoking and reinvocation.values.get(self.name) == attrs.obj:
            return  # nothing changed the object since this plugin's first round
        await self._admit(attrs, only_if_needed=reinvocation.reinvoking)
        reinvocation.values[self.name] = copy.deepcopy(attrs.obj)

    async def _admit(self, attrs: admission.Attributes, *, only_if_needed: bool) -> None:
        assert attrs.obj is not None
        write = _Write(attrs)
        refusals: list[tuple[str, str, str]] = []

        def config_error(hook: _Hook, binding: dict[str, Any] | None, message: str) -> None:
            if hook.policy.failure_policy != pol.IGNORE:
                refusals.append((hook.policy.name, _name(binding), message))

        root = fieldmanager.kind_info(attrs.kind).root
        invoked: list[tuple[int, pol.Invocation, dict[str, Any], matching.Request]] = []  # IfNeeded ones
        changed_at = -1
        step = 0
        for hook, binding, matched, params in await self.invocations.matching(write, config_error):
            policy: pol.MutatingPolicy = hook.policy
            if only_if_needed and policy.reinvocation_policy != "IfNeeded":
                continue
            invocation = await self._invoke(write, hook, matched, params, attrs.obj)
            try:
                if not invocation.conditions_match():
                    continue
            except pol.PolicyError as e:
                config_error(hook, binding, str(e))
                continue
            step += 1
            if self._run(write, invocation, matched, root, binding, refusals):
                changed_at = step
            if policy.reinvocation_policy == "IfNeeded":
                invoked.append((step, invocation, binding, matched))
        # upstream reinvocation: IfNeeded policies run once more when the object changed after them
        if any(ran < changed_at for ran, _, _, _ in invoked):
            for _ran, invocation, binding, matched in invoked:
                self._run(write, invocation, matched, root, binding, refusals)
        if refusals:
            policy_name, binding_name, message = refusals[0]
            text = (f"policy '{policy_name}' with binding '{binding_name}' denied request: {message}"
                    if binding_name else f'policy "{policy_name}" denied request: {message}')
            raise _denial(attrs, text, "Invalid", [f"policy '{p}' with binding '{b}' denied request: {m}"
                                                   for p, b, m in refusals])

    @staticmethod
    def _run(write: _Write, invocation: pol.Invocation, matched: matching.Request, root: Any,
             binding: dict[str, Any], refusals: list[tuple[str, str, str]]) -> bool:
        """Apply one invocation's mutations to `attrs.obj` (in the version the policy matched);
        True when the object changed."""
        attrs = write.attrs
        assert attrs.obj is not None
        try:
            seen = write.object_as(matched, attrs.obj)
            assert seen is not None
            if seen is not attrs.obj:
                root = fieldmanager.kind_info(write.kinds[(matched.group, matched.version, matched.resource)]).root
            out = write.object_back(matched, invocation.mutate(seen, root=root))
            kind = attrs.kind
            try:  # as upstream's conversion to the typed object: wrong types fail, unknown fields go
                out, _ = validation.check_structure(out, group=kind.group, version=kind.version, kind=kind.kind,
                                                    field_validation="Ignore")
            except errors.StatusError as e:
                raise pol.PolicyError(f"type mismatch: {e.message}") from None
        except pol.PolicyError as e:
            if invocation.policy.failure_policy != pol.IGNORE:
                refusals.append((invocation.policy.name, _name(binding), str(e)))
            return False
        if out == attrs.obj:
            return False
        attrs.obj.clear()
        attrs.obj.update(out)
        return True


class TypeCheckingStatus:
    """The ValidatingAdmissionPolicy status controller's work, done by the server itself (also with
    `--no-controllers`): after a policy is created or its spec changes, its status gets
    `observedGeneration` and `typeChecking` (`cp.admission.typecheck`). Installed as the kind's
    registry hooks (`Store.hooks`), so the status is written right after the write, by the server's
    own identity (`writer`)."""

    def __init__(self, *, writer: Callable[[], Any]) -> None:
        self.writer = writer

    def _finish(self, store: Any, name: str, ctx: Any) -> Callable[[bool], Any]:
        async def finish(succeeded: bool) -> None:
            if not succeeded or ctx.dry_run:
                return
            kind = res.lookup(GROUP, "v1", VALIDATING)
            assert kind is not None
            try:
                current = await store.get_object(kind, "", name)
            except errors.NotFound:
                return
            if (current.get("status") or {}).get("observedGeneration") == \
                    (current.get("metadata") or {}).get("generation") and "typeChecking" in current.get("status", {}):
                return

            def mutate(obj: dict[str, Any]) -> dict[str, Any]:
                obj["status"] = typecheck.status(obj)
                return obj

            try:
                await store.guaranteed_update(kind, "", name, mutate, self.writer(), subresource="status")
            except errors.NotFound:
                return  # deleted meanwhile
        return finish

    async def begin_create(self, store: Any, obj: dict[str, Any], ctx: Any) -> Callable[[bool], Any]:
        return self._finish(store, str((obj.get("metadata") or {}).get("name") or ""), ctx)

    async def begin_update(self, store: Any, new: dict[str, Any], old: dict[str, Any], ctx: Any
                           ) -> Callable[[bool], Any]:
        return self._finish(store, str((old.get("metadata") or {}).get("name") or ""), ctx)

    async def after_delete(self, store: Any, obj: dict[str, Any], ctx: Any) -> None:
        return None


__all__ = ["MutatingAdmissionPolicyPlugin", "PolicySource", "TypeCheckingStatus", "ValidatingAdmissionPolicyPlugin",
           "builtin_param_kind"]
