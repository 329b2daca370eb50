"""The MutatingAdmissionWebhook and ValidatingAdmissionWebhook admission plugins: the webhooks of
Mutating/ValidatingWebhookConfigurations called over HTTPS with an `AdmissionReview`, as
k8s.io/apiserver's `pkg/admission/plugin/webhook/mutating` and `.../validating` dispatchers do
(which webhooks apply and what the review holds: `cp.admission.webhooks`; the transport:
`api.webhooks.client`).

- The configurations are read through the event log and kept, parsed, while the log reports no change
  to them (`EventLog.last_change`, as upstream reads them from an informer): a write when no webhook
  is configured costs one cached lookup (`handles`).
- Mutating webhooks run one after the other in configuration-name order, each on the object the
  previous ones produced; a `JSONPatch` answer is applied to the object (in the version the webhook
  matched), unknown fields are dropped as decoding into the kind does. If a webhook changed the
  object, the chain's mutating plugins run once more (`Reinvocation`), and in that round the webhooks
  with `reinvocationPolicy: IfNeeded` that ran before the change are called again. On DELETE, mutating
  webhooks are called with no object (the store runs DELETE through `validate` only; this plugin calls
  them there, still before the validating webhooks).
- Validating webhooks are called in parallel; the first refusal in webhook order is the answer.
- `failurePolicy` Fail turns a failed call (transport, timeout, an invalid answer) into upstream's
  `Internal error occurred: failed calling webhook "<name>": ...`; Ignore skips the webhook. A
  refusal is the webhook's Status (`admission webhook "<name>" denied the request: ...`). A dry run
  reaches only webhooks with sideEffects None or NoneOnDryRun (else upstream's 400).
- The answer's `warnings` become the request's warnings; its `auditAnnotations` go to the request's
  audit event as `<webhook name>/<key>` (the first value set for a key stays, as upstream's
  AddAnnotation keeps it), even when the webhook refuses.
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import jsonpatch
import jsonpointer
import msgspec
import structlog

from api import admission
from api.admission import listers
from api.webhooks import client as clients
from cp import conversions, errors, rbac, validation
from cp import resources as res
from cp.admission import authz, matching
from cp.admission import webhooks as hooks
from storage import log

logger = structlog.get_logger("cplane.api.admission")

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
_OPERATIONS = (admission.CREATE, admission.UPDATE, admission.DELETE)


class _CallFailed(Exception):
    """upstream's ErrCallingWebhook: subject to the webhook's failurePolicy."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Source:
    """The webhooks of one configuration resource, parsed once per change of the resource."""

    def __init__(self, *, resource: str, mutating: bool) -> None:
        self.lister = listers.Lister(group=hooks.GROUP, resource=resource)
        self.mutating = mutating
        self._parsed_from: list[dict[str, Any]] | None = None
        self._hooks: list[hooks.Hook] = []

    def peek(self, event_log: log.EventLog) -> list[hooks.Hook] | None:
        """The webhooks if the configurations known are current, else None (`hooks` reads them)."""
        configurations = self.lister.peek(event_log)
        return None if configurations is None else self._parse(configurations)

    async def load(self, event_log: log.EventLog) -> list[hooks.Hook]:
        """The webhooks, the configurations read again if they changed."""
        return self._parse(await self.lister.list(event_log))

    def _parse(self, configurations: list[dict[str, Any]]) -> list[hooks.Hook]:
        if configurations is not self._parsed_from:
            self._hooks = hooks.hooks_of(configurations, mutating=self.mutating)
            self._parsed_from = configurations
        return self._hooks


class _Reinvoke:
    """The mutating plugin's state across the chain's two rounds (upstream's webhookReinvokeContext)."""

    def __init__(self) -> None:
        self.last_output: dict[str, Any] | None = None
        self.previously_invoked: set[str] = set()
        self.to_reinvoke: set[str] = set()

    def require_reinvoking(self) -> None:
        """The object changed: the IfNeeded webhooks called so far are called again in the next round."""
        self.to_reinvoke |= self.previously_invoked
        self.previously_invoked = set()


class _Call(msgspec.Struct, kw_only=True):
    """One webhook to call for a write: the request as it matched, the objects in its version."""

    hook: hooks.Hook
    request: matching.Request
    kind: res.ResourceKind  # the matched version's kind
    obj: dict[str, Any] | None
    old: dict[str, Any] | None


class _Matcher(msgspec.Struct, kw_only=True):
    """The configured webhooks and the write as matching sees it (with its equivalent versions)."""

    hooks: list[hooks.Hook]
    request: matching.Request
    equivalents: list[tuple[res.ResourceKind, matching.Request]]
    namespace_labels: Callable[[], Mapping[str, str]]


class _WebhookPlugin(admission.BasePlugin):
    resource = ""
    mutating = False

    def __init__(self, *, event_log: log.EventLog, client: clients.WebhookClient,
                 authorize: authz.Authorize | None = None) -> None:
        """`authorize`: the server's authorizer, for match conditions' `authorizer` (None: every check
        is allowed, as a server without authorization)."""
        self.event_log = event_log
        self.client = client
        self.authorize = authorize
        self.source = _Source(resource=self.resource, mutating=self.mutating)
        self.namespaces = listers.Lister(group="", resource="namespaces")
        self._equivalents: dict[res.ResourceKind, list[tuple[res.ResourceKind, matching.Request]]] = {}
        # The webhooks whose rules can match a kind of write, per (kind, subresource, operation,
        # namespaced), for the webhooks parsed last: most writes match none, and cost a lookup.
        self._candidates: dict[tuple[str, str, str, str, bool], list[hooks.Hook]] = {}
        self._candidates_of: list[hooks.Hook] | None = None

    def may_handle(self, *, group: str, plural: str, subresource: str, operation: str) -> bool:
        return operation in _OPERATIONS

    def handles(self, attrs: admission.Attributes) -> bool:
        if attrs.operation not in _OPERATIONS or hooks.exempt(group=attrs.kind.group, kind=attrs.kind.kind):
            return False
        configured = self.source.peek(self.event_log)
        return configured is None or (bool(configured) and bool(self._candidates_for(configured, attrs)))

    def _candidates_for(self, configured: list[hooks.Hook], attrs: admission.Attributes) -> list[hooks.Hook]:
        """The webhooks whose rules match this kind of write (selectors and conditions aside)."""
        if configured is not self._candidates_of:
            self._candidates = {}
            self._candidates_of = configured
        key = (attrs.kind.group, attrs.kind.plural, attrs.subresource, attrs.operation, bool(attrs.namespace))
        found = self._candidates.get(key)
        if found is None:
            request = _request(attrs)
            equivalents = [_with_write(r, request) for _, r in self._equivalents_of(attrs)]
            found = [h for h in configured if h.rules_match(request, equivalents=equivalents)]
            self._candidates[key] = found
        return found

    # ------------------------------------------------------------ which webhooks, in which version

    async def _matcher(self, attrs: admission.Attributes, store: admission.Store) -> _Matcher | None:
        """What deciding which webhooks apply to this write needs; None when no webhook is configured."""
        configured = self._candidates_for(await self.source.load(store.log), attrs)
        if not configured:
            return None
        request = _request(attrs)
        equivalents = [(k, _with_write(r, request)) for k, r in self._equivalents_of(attrs)]
        return _Matcher(hooks=configured, request=request, equivalents=equivalents,
                        namespace_labels=await self._namespace_labels(attrs, store, configured))

    def _invocation(self, hook: hooks.Hook, matcher: _Matcher, attrs: admission.Attributes) -> _Call | None:
        """The call of `hook` for the write as it is now, or None when the webhook does not apply
        (upstream's ShouldCallHook: selectors, rules, then matchConditions; its errors raised)."""
        request, equivalents = matcher.request, matcher.equivalents
        invocation = hook.invocation(request, equivalents=[r for _, r in equivalents], obj=attrs.obj,
                                     old=attrs.old, namespace_labels=matcher.namespace_labels)
        if invocation is None:
            return None
        kind, obj, old = attrs.kind, attrs.obj, attrs.old
        if invocation.request is not request:
            kind = next(k for k, r in equivalents if r is invocation.request)
            obj = conversions.to_served(kind, copy.deepcopy(obj)) if obj is not None else None
            old = conversions.to_served(kind, copy.deepcopy(old)) if old is not None else None
        if hook.spec.get("matchConditions"):
            matched = invocation.request
            activation = {"object": obj, "oldObject": old,
                          "request": self._admission_request(attrs, matched, request),
                          "authorizer": authz.authorizer_value(
                              group=matched.group, version=matched.version, resource=matched.resource,
                              subresource=matched.subresource, namespace=attrs.namespace, name=attrs.name)}
            functions = authz.functions(user=_user(attrs), authorize=self.authorize)
            if not hook.conditions_match(activation, group=attrs.kind.group, resource=attrs.kind.plural,
                                         name=attrs.name, functions=functions):
                return None
        return _Call(hook=hook, request=invocation.request, kind=kind, obj=obj, old=old)

    def _equivalents_of(self, attrs: admission.Attributes) -> list[tuple[res.ResourceKind, matching.Request]]:
        """The other served versions of the stored resource (their group, version, resource and kind;
        the write's operation and names are filled in per write by `_with_write`)."""
        kind = attrs.kind
        known = self._equivalents.get(kind)
        if known is None:
            known = [(k, matching.Request(group=k.group, version=k.version, resource=k.plural,
                                          kind_group=k.group, kind_version=k.version, kind=k.kind,
                                          operation="", namespaced=k.namespaced))
                     for k in attrs.equivalents if k != kind]
            if kind.custom is None:  # a definition's versions change with it: not kept
                self._equivalents[kind] = known
        return known

    async def _namespace_labels(self, attrs: admission.Attributes, store: admission.Store,
                                configured: list[hooks.Hook]) -> Callable[[], Mapping[str, str]]:
        """A callable giving the labels of the write's namespace (read only when a webhook has a
        namespace selector); a namespace that does not exist is upstream's NotFound."""
        if not attrs.namespace or not any((h.spec.get("namespaceSelector") or {}) for h in configured):
            return lambda: {}
        found = next((ns for ns in await self.namespaces.list(store.log)
                      if (ns.get("metadata") or {}).get("name") == attrs.namespace), None)

        def labels() -> Mapping[str, str]:
            if found is None:
                raise errors.NotFound.of(group="", plural="namespaces", name=attrs.namespace)
            return dict((found.get("metadata") or {}).get("labels") or {})

        return labels

    def _admission_request(self, attrs: admission.Attributes, matched: matching.Request,
                           requested: matching.Request) -> dict[str, Any]:
        return hooks.admission_request(invocation=_with_write(matched, requested), requested=requested,
                                       user=_user(attrs), dry_run=attrs.dry_run, options=attrs.options)

    # ------------------------------------------------------------ one call

    async def _call(self, call: _Call, attrs: admission.Attributes, requested: matching.Request) -> hooks.Response:
        """Call one webhook: its answer when it allowed the write; a refusal raises its Status; a
        failed call raises `_CallFailed`."""
        hook = call.hook
        if attrs.dry_run:
            supported = hook.supports_dry_run()
            if supported is None:
                raise _CallFailed("Webhook SideEffects is nil")
            if not supported:
                raise hooks.dry_run_unsupported(hook.name)
        version = hook.review_version()
        if version is None:
            raise _CallFailed("could not create admission objects: webhook does not accept known "
                              "AdmissionReview versions (v1, v1beta1)")
        uid = str(uuid.uuid4())
        review = hooks.review_request(version=version, uid=uid, obj=call.obj, old=call.old,
                                      request=self._admission_request(attrs, call.request, requested))
        try:
            answer = await self.client.post(client_config=hook.client_config, body=_encode(review),
                                            timeout_seconds=hook.timeout_seconds)
        except clients.CallError as exc:
            raise _CallFailed(f"failed to call webhook: {exc}") from None
        try:
            response = hooks.verify_response(answer, uid=uid, version=version, mutating=self.mutating)
        except hooks.InvalidResponse as exc:
            raise _CallFailed(f"received invalid webhook response: {exc}") from None
        except hooks.UnsupportedPatch as exc:
            raise _CallFailed(f'unsupported patch type "{exc}"') from None
        for warning in response.warnings:
            if warning and warning not in attrs.warnings:
                attrs.warnings.append(warning)
        for key, value in response.audit_annotations.items():
            attrs.audit_annotations.setdefault(f"{hook.name}/{key}", value)
        if not response.allowed:
            raise hooks.denied(hook.name, response.result)
        return response

    def _failed(self, hook: hooks.Hook, exc: _CallFailed) -> errors.StatusError | None:
        """failurePolicy: the error to answer (Fail), or None after logging (Ignore)."""
        if hook.failure_policy_ignore:
            logger.warning("webhook_failed_open", webhook=hook.name, configuration=hook.configuration,
                           error=exc.reason)
            return None
        return hooks.calling_failed(hook.name, exc.reason)


class MutatingWebhookPlugin(_WebhookPlugin):
    """MutatingAdmissionWebhook."""

    name = "MutatingAdmissionWebhook"
    resource = "mutatingwebhookconfigurations"
    mutating = True

    async def admit(self, attrs: admission.Attributes, store: admission.Store) -> None:
        if attrs.operation != admission.DELETE:
            await self._dispatch(attrs, store)

    async def validate(self, attrs: admission.Attributes, store: admission.Store) -> None:
        if attrs.operation == admission.DELETE:
            await self._dispatch(attrs, store)

    async def _dispatch(self, attrs: admission.Attributes, store: admission.Store) -> None:
        reinvocation = attrs.reinvocation
        state = reinvocation.values.get(self.name)
        if not isinstance(state, _Reinvoke):
            state = _Reinvoke()
            reinvocation.values[self.name] = state
        if reinvocation.reinvoking and state.last_output != attrs.obj:
            state.require_reinvoking()  # another plugin changed the object since the webhooks' round
        try:
            matcher = await self._matcher(attrs, store)
            if matcher is None:
                return
            for hook in matcher.hooks:
                call = self._invocation(hook, matcher, attrs)  # on the object as the webhooks before left it
                if call is None or (reinvocation.reinvoking and hook.uid not in state.to_reinvoke):
                    continue
                try:
                    changed = await self._mutate(call, attrs, matcher.request)
                except _CallFailed as exc:
                    failure = self._failed(hook, exc)
                    if failure is not None:
                        raise failure from None
                    changed = False
                if changed:
                    state.require_reinvoking()
                    reinvocation.requested = True
                if hook.reinvoke_if_needed:
                    state.previously_invoked.add(hook.uid)
        finally:
            state.last_output = copy.deepcopy(attrs.obj)

    async def _mutate(self, call: _Call, attrs: admission.Attributes, requested: matching.Request) -> bool:
        """Call one mutating webhook and apply its patch to `attrs.obj`; True if it changed it."""
        response = await self._call(call, attrs, requested)
        if not response.patch:
            return False
        try:
            operations = _decode(response.patch)
            patch = jsonpatch.JsonPatch(operations)
        except (msgspec.DecodeError, jsonpatch.InvalidJsonPatch, TypeError) as exc:
            raise _CallFailed(f"received undecodable patch in webhook response: {exc}") from None
        if not operations:
            return False
        if call.obj is None:
            raise hooks.internal_error(f'admission webhook "{call.hook.name}" attempted to modify the object, '
                                       "which is not supported for this operation")
        try:
            patched = patch.apply(call.obj)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            raise hooks.internal_error(str(exc)) from None
        if not isinstance(patched, dict):
            raise hooks.internal_error("the patched object is not a JSON object")
        if attrs.object_kind is None:  # the resource's own kind: decoded as it (unknown fields dropped)
            patched["apiVersion"], patched["kind"] = call.kind.api_version, call.kind.kind
            patched, _ = validation.check_structure(patched, group=call.kind.group, version=call.kind.version,
                                                    kind=call.kind.kind, field_validation="Ignore")
        if patched == call.obj:
            return False
        if call.kind != attrs.kind and attrs.object_kind is None:
            patched = conversions.to_storage(call.kind, patched)
        attrs.obj = patched
        return True


class ValidatingWebhookPlugin(_WebhookPlugin):
    """ValidatingAdmissionWebhook."""

    name = "ValidatingAdmissionWebhook"
    resource = "validatingwebhookconfigurations"
    mutating = False

    async def validate(self, attrs: admission.Attributes, store: admission.Store) -> None:
        matcher = await self._matcher(attrs, store)
        if matcher is None:
            return
        calls = [c for c in (self._invocation(h, matcher, attrs) for h in matcher.hooks) if c is not None]
        if not calls:
            return
        results = await asyncio.gather(*(self._call(c, attrs, matcher.request) for c in calls),
                                       return_exceptions=True)
        for call, result in zip(calls, results, strict=True):
            if isinstance(result, _CallFailed):
                failure = self._failed(call.hook, result)
                if failure is not None:
                    raise failure
            elif isinstance(result, BaseException):
                raise result


def _request(attrs: admission.Attributes) -> matching.Request:
    kind = attrs.kind
    kind_group, kind_version, kind_name = attrs.object_kind or (kind.group, kind.version, kind.kind)
    return matching.Request(group=kind.group, version=kind.version, resource=kind.plural,
                            subresource=attrs.subresource, kind_group=kind_group, kind_version=kind_version,
                            kind=kind_name, operation=attrs.operation, namespace=attrs.namespace, name=attrs.name,
                            namespaced=kind.namespaced)


def _user(attrs: admission.Attributes) -> rbac.UserInfo:
    return attrs.user if attrs.user is not None else rbac.UserInfo(name=attrs.user_name)


def _with_write(matched: matching.Request, requested: matching.Request) -> matching.Request:
    """The matched version's request with the write's own operation, names and subresource."""
    if matched is requested:
        return matched
    return msgspec.structs.replace(matched, operation=requested.operation, namespace=requested.namespace,
                                   name=requested.name, subresource=requested.subresource)
