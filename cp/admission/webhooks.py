"""Admission webhooks, the pure part: which configured webhooks a request calls, the `AdmissionReview`
sent to them, and what their answers mean. The calls themselves are `api/admission/webhooks.py`'s.

Behaviour follows k8s.io/apiserver `pkg/admission/plugin/webhook`:

- `hooks_of`: the webhooks of Mutating/ValidatingWebhookConfigurations, configurations in name order
  and webhooks in their listed order, with the v1 defaults (failurePolicy Fail, matchPolicy
  Equivalent, timeoutSeconds 10, reinvocationPolicy Never);
- `exempt`: webhooks are never called for the webhook configurations and admission policies themselves
  (`rules.IsExemptAdmissionConfigurationResource`), so a broken webhook cannot lock them;
- `Hook.invocation` (generic.Webhook.ShouldCallHook): namespaceSelector, objectSelector, then the rules
  on the request as it is, then (matchPolicy Equivalent) on the same request through the other versions
  that serve the same storage; an error reading the namespace counts only when the rules matched;
- `Hook.conditions_match` (matchconditions.Matcher): the `matchConditions` CEL expressions with
  `object`, `oldObject` and `request`: one false skips the webhook; errors (with none false) fail the
  request (failurePolicy Fail) or skip the webhook (Ignore). `authorizer` is the Kubernetes CEL
  authorization library (`authorizer.group(g).resource(r)[.subresource(s)][.namespace(n)][.name(x)]
  .check(verb)`, `authorizer.path(p).check(verb)`, `authorizer.serviceAccount(ns, name)`, and the
  decision's `allowed()`, `reason()`, `errored()`, `error()`), asking the server's authorizer about the
  request's user (`cp.admission.authz`, as the policies');
- `review_request` (request.CreateV1AdmissionReview): the request sent, in the first of the webhook's
  `admissionReviewVersions` that is v1 or v1beta1;
- `verify_response` (request.VerifyAdmissionResponse): a v1 answer must be an `admission.k8s.io/v1`
  `AdmissionReview` with the request's uid; patch and patchType come together and only from mutating
  webhooks; v1beta1 answers are taken as they are;
- `denied` (errors.ToStatusErr): a refusal as `admission webhook "<name>" denied the request: <message>`
  with the webhook's code (at least 400) and reason.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from cp import errors, rbac
from cp.admission import matching

GROUP = "admissionregistration.k8s.io"
DEFAULT_TIMEOUT_SECONDS = 10
REVIEW_VERSIONS = ("v1", "v1beta1")
_EXEMPT_KINDS = frozenset({"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
                           "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                           "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"})
# The variables of the webhook match-condition environment, and the authorizer library's functions
# (declared so that expressions using them compile, as upstream accepts them).
_CONDITION_VARIABLES = frozenset({"object", "oldObject", "request", "authorizer"})


def exempt(*, group: str, kind: str) -> bool:
    """The kinds no webhook is called for (upstream's IsExemptAdmissionConfigurationResource)."""
    return group == GROUP and kind in _EXEMPT_KINDS


class Invocation(msgspec.Struct, frozen=True, kw_only=True):
    """A webhook to call for a request, and the version it is called in (the request's own, or an
    equivalent one its rules name)."""

    request: matching.Request


class Condition(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    expression: str


class Hook:
    """One webhook of a configuration: its spec with the API's defaults, and its compiled conditions."""

    __slots__ = ("_compiled", "configuration", "index", "mutating", "spec", "uid")

    def __init__(self, *, configuration: str, index: int, spec: Mapping[str, Any], mutating: bool) -> None:
        self.configuration = configuration
        self.index = index
        self.spec = spec
        self.mutating = mutating
        # Upstream's accessor uid: the configuration and the webhook's position in it.
        self.uid = f"{configuration}/{spec.get('name', '')}/{index}"
        self._compiled: list[tuple[str, Any]] | None = None

    @property
    def name(self) -> str:
        return str(self.spec.get("name") or "")

    @property
    def failure_policy_ignore(self) -> bool:
        return self.spec.get("failurePolicy") == "Ignore"

    @property
    def timeout_seconds(self) -> float:
        timeout = self.spec.get("timeoutSeconds")
        return float(timeout) if isinstance(timeout, int) and not isinstance(timeout, bool) and timeout > 0 \
            else float(DEFAULT_TIMEOUT_SECONDS)

    @property
    def reinvoke_if_needed(self) -> bool:
        return self.mutating and self.spec.get("reinvocationPolicy") == "IfNeeded"

    @property
    def client_config(self) -> Mapping[str, Any]:
        cc = self.spec.get("clientConfig")
        return cc if isinstance(cc, Mapping) else {}

    def review_version(self) -> str | None:
        """The first of `admissionReviewVersions` this server speaks (v1, v1beta1), or None."""
        for version in self.spec.get("admissionReviewVersions") or []:
            if version in REVIEW_VERSIONS:
                return str(version)
        return None

    def supports_dry_run(self) -> bool | None:
        """Whether the webhook may be called for a dry run (sideEffects None or NoneOnDryRun); None
        when sideEffects is unset (a v1beta1 configuration)."""
        side_effects = self.spec.get("sideEffects")
        if side_effects is None:
            return None
        return side_effects in ("None", "NoneOnDryRun")

    def rules_match(self, request: matching.Request, *, equivalents: Sequence[matching.Request]) -> bool:
        """Whether the rules match the request or (matchPolicy Equivalent) an equivalent one."""
        rules = self.spec.get("rules")
        if not isinstance(rules, list) or not rules:
            return False
        matched, _ = matching.resource_rules_match(
            {"resourceRules": rules, "matchPolicy": self.spec.get("matchPolicy") or "Equivalent"},
            request, equivalents=equivalents)
        return matched

    def invocation(self, request: matching.Request, *, equivalents: Sequence[matching.Request],
                   obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None,
                   namespace_labels: Callable[[], Mapping[str, str] | None]) -> Invocation | None:
        """Whether the webhook applies to the request (selectors, then rules), and in which version.
        `namespace_labels` is asked only when the namespace selector needs it; an error it raises is
        raised only if the rules match (upstream returns it only then)."""
        ns_error: errors.StatusError | None = None
        ns_selector = self.spec.get("namespaceSelector")
        if isinstance(ns_selector, Mapping) and (ns_selector.get("matchLabels") or
                                                 ns_selector.get("matchExpressions")):
            try:
                labels: Mapping[str, str] | None
                if request.is_namespace:
                    labels = _labels(obj if obj is not None else old)
                else:
                    labels = namespace_labels() if request.namespaced and request.namespace else {}
                if not matching.namespace_selector_matches(ns_selector, request, labels):
                    return None
            except errors.StatusError as exc:
                ns_error = exc
        obj_selector = self.spec.get("objectSelector")
        if isinstance(obj_selector, Mapping):
            try:
                if not matching.object_selector_matches(obj_selector, obj=obj, old=old):
                    return None
            except errors.StatusError as exc:
                ns_error = ns_error or exc
        rules = self.spec.get("rules")
        if not isinstance(rules, list) or not rules:
            return None
        matched, as_matched = matching.resource_rules_match(
            {"resourceRules": rules, "matchPolicy": self.spec.get("matchPolicy") or "Equivalent"},
            request, equivalents=equivalents)
        if not matched or as_matched is None:
            return None
        if ns_error is not None:
            raise ns_error
        return Invocation(request=as_matched)

    def conditions_match(self, activation: Mapping[str, Any], *, group: str, resource: str, name: str,
                         functions: Mapping[str, Callable[..., Any]] | None = None) -> bool:
        """matchConditions: True to call the webhook. One condition false: False. Errors and no false
        one: a 403 with the errors (failurePolicy Fail), or False (Ignore). `functions`: the
        authorizer library's (`cp.admission.authz.functions`), with `activation["authorizer"]` its root."""
        compiled = self._conditions()
        if not compiled:
            return True
        failures: list[str] = []
        from cp.dra.celenv import CelError

        for expression, program in compiled:
            try:
                result = _evaluate(program, activation, functions or {})
            except CelError as exc:
                failures.append(f"expression '{expression}' resulted in error: {exc}")
                continue
            if result is False:
                return False
            if result is not True:
                failures.append(f"expression '{expression}' resulted in error: no such overload")
        if not failures:
            return True
        if self.failure_policy_ignore:
            return False
        reason = failures[0] if len(failures) == 1 else "[" + ", ".join(failures) + "]"
        if name:
            raise errors.Forbidden.of(group=group, plural=resource, name=name, reason=reason)
        gr = f"{resource}.{group}" if group else resource
        raise errors.Forbidden(f"{gr} is forbidden: {reason}",
                               details={"group": group, "kind": resource} if group else {"kind": resource})

    def _conditions(self) -> list[tuple[str, Any]]:
        if self._compiled is None:
            from cp.admission import cel  # the CEL engine, loaded on the first condition

            self._compiled = [(str(cond.get("expression") or ""),
                               cel.compile_admission(str(cond.get("expression") or ""), variables=_CONDITION_VARIABLES))
                              for cond in self.spec.get("matchConditions") or [] if isinstance(cond, Mapping)]
        return self._compiled


def _evaluate(program: Any, activation: Mapping[str, Any], functions: Mapping[str, Callable[..., Any]]) -> Any:
    """One compiled condition's value (`cp.admission.cel`: cel-go's syntax and wording, the authorizer
    library when `functions` has it); raises `celenv.CelError`."""
    from cp.admission import cel

    return cel.evaluate(program, activation, functions=functions)


def hooks_of(configurations: Sequence[Mapping[str, Any]], *, mutating: bool) -> list[Hook]:
    """The webhooks of the configurations (given in name order, as listed), in calling order."""
    out: list[Hook] = []
    for config in sorted(configurations, key=lambda c: str((c.get("metadata") or {}).get("name") or "")):
        name = str((config.get("metadata") or {}).get("name") or "")
        for index, spec in enumerate(config.get("webhooks") or []):
            if isinstance(spec, Mapping):
                out.append(Hook(configuration=name, index=index, spec=spec, mutating=mutating))
    return out


def _labels(obj: Mapping[str, Any] | None) -> dict[str, str]:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}


# ---------------------------------------------------------------- the review


def user_info(user: rbac.UserInfo) -> dict[str, Any]:
    """authentication.k8s.io/v1 UserInfo as the review carries it."""
    out: dict[str, Any] = {"username": user.name}
    if user.uid:
        out["uid"] = user.uid
    if user.groups:
        out["groups"] = list(user.groups)
    if user.extra:
        out["extra"] = {k: list(v) for k, v in user.extra.items()}
    return out


def admission_request(*, invocation: matching.Request, requested: matching.Request, user: rbac.UserInfo,
                      dry_run: bool, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The request fields both the review and the match conditions' `request` variable carry (no
    uid, object or oldObject): the kind and resource the webhook matched, the ones requested."""
    out: dict[str, Any] = {
        "kind": {"group": invocation.kind_group, "version": invocation.kind_version, "kind": invocation.kind},
        "resource": {"group": invocation.group, "version": invocation.version, "resource": invocation.resource},
    }
    if invocation.subresource:
        out["subResource"] = invocation.subresource
    out["requestKind"] = {"group": requested.kind_group, "version": requested.kind_version,
                          "kind": requested.kind}
    out["requestResource"] = {"group": requested.group, "version": requested.version,
                              "resource": requested.resource}
    if requested.subresource:
        out["requestSubResource"] = requested.subresource
    if requested.name:
        out["name"] = requested.name
    if requested.namespace:
        out["namespace"] = requested.namespace
    out["operation"] = requested.operation
    out["userInfo"] = user_info(user)
    out["dryRun"] = dry_run
    out["options"] = dict(options) if options is not None else None
    return out


def review_request(*, version: str, uid: str, request: Mapping[str, Any], obj: Mapping[str, Any] | None,
                   old: Mapping[str, Any] | None) -> dict[str, Any]:
    """The AdmissionReview sent (`admission.k8s.io/<version>`): `request` from `admission_request`."""
    body = dict(request)
    options = body.pop("options", None)
    body = {"uid": uid, **body}
    # Go writes the fields in the struct's order: object, oldObject, dryRun, options after userInfo.
    dry_run = body.pop("dryRun", False)
    body["object"] = obj
    body["oldObject"] = old
    body["dryRun"] = dry_run
    body["options"] = options
    return {"kind": "AdmissionReview", "apiVersion": f"admission.k8s.io/{version}", "request": body}


class Response(msgspec.Struct, frozen=True, kw_only=True):
    """What an answer says: allowed, the JSON patch (decoded), the Status, warnings."""

    allowed: bool
    patch: bytes | None = None
    result: dict[str, Any] | None = None
    warnings: tuple[str, ...] = ()
    audit_annotations: dict[str, str] = msgspec.field(default_factory=dict)


class InvalidResponse(Exception):
    """An answer that breaks the protocol; `str()` is upstream's reason."""


def verify_response(answer: Any, *, uid: str, version: str, mutating: bool) -> Response:
    """Check an answer as upstream's VerifyAdmissionResponse (see the module docstring)."""
    if not isinstance(answer, Mapping):
        raise InvalidResponse("webhook response was absent")
    response = answer.get("response")
    if not isinstance(response, Mapping):
        raise InvalidResponse("webhook response was absent")
    patch_raw = response.get("patch")
    patch_type = response.get("patchType")
    if version == "v1":
        if response.get("uid") != uid:
            raise InvalidResponse(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
        api_version = str(answer.get("apiVersion") or "")
        group, _, ver = api_version.rpartition("/")
        got = f"{group}/{ver}, Kind={answer.get('kind') or ''}"
        if (api_version, answer.get("kind")) != ("admission.k8s.io/v1", "AdmissionReview"):
            raise InvalidResponse(f"expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {got}")
        if mutating:
            if patch_raw and patch_type is None:
                raise InvalidResponse("webhook returned response.patch but not response.patchType")
            if not patch_raw and patch_type is not None:
                raise InvalidResponse("webhook returned response.patchType but not response.patch")
            if patch_type is not None and patch_type == "":
                raise InvalidResponse('webhook returned invalid response.patchType of ""')
        else:
            if patch_raw:
                raise InvalidResponse("validating webhook may not return response.patch")
            if patch_type is not None:
                raise InvalidResponse("validating webhook may not return response.patchType")
    elif patch_raw:
        patch_type = "JSONPatch"  # v1beta1 answers are not checked: a patch is a JSON patch
    patch: bytes | None = None
    if mutating and patch_raw:
        if not isinstance(patch_raw, str):
            raise InvalidResponse("json: cannot unmarshal the patch into Go struct field "
                                  "AdmissionResponse.response.patch of type []uint8")
        try:
            patch = base64.b64decode(patch_raw, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidResponse("illegal base64 data in response.patch") from None
        if patch_type != "JSONPatch":
            raise UnsupportedPatch(str(patch_type))
    result = response.get("status")
    warnings = response.get("warnings")
    annotations = response.get("auditAnnotations")
    return Response(allowed=response.get("allowed") is True, patch=patch,
                    result=dict(result) if isinstance(result, Mapping) else None,
                    warnings=tuple(str(w) for w in warnings) if isinstance(warnings, list) else (),
                    audit_annotations={str(k): str(v) for k, v in annotations.items()}
                    if isinstance(annotations, Mapping) else {})


class UnsupportedPatch(Exception):
    """A patch type other than JSONPatch (upstream: `unsupported patch type "<type>"`)."""


def denied(name: str, result: Mapping[str, Any] | None) -> errors.StatusError:
    """A webhook's refusal as upstream's ToStatusErr: its Status, with a code of at least 400, status
    Failure and the message prefixed with `admission webhook "<name>" denied the request`."""
    status = dict(result or {})
    prefix = f'admission webhook "{name}" denied the request'
    code = status.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) and code >= 400 else 400
    if status.get("message"):
        message = f"{prefix}: {status['message']}"
    elif status.get("reason"):
        message = f"{prefix}: {status['reason']}"
    else:
        message = f"{prefix} without explanation"
    details = status.get("details")
    err = errors.StatusError(message, details=dict(details) if isinstance(details, Mapping) else None)
    err.code = code
    err.reason = str(status.get("reason") or "")
    return err


def calling_failed(name: str, reason: str) -> errors.InternalError:
    """failurePolicy Fail on a call that failed: `Internal error occurred: failed calling webhook ...`
    (apierrors.NewInternalError of upstream's ErrCallingWebhook)."""
    text = f'failed calling webhook "{name}": {reason}'
    return internal_error(text)


def internal_error(text: str) -> errors.InternalError:
    """apierrors.NewInternalError: the message prefixed, the error as the one cause."""
    return errors.InternalError(f"Internal error occurred: {text}", details={"causes": [{"message": text}]})


def dry_run_unsupported(name: str) -> errors.BadRequest:
    return errors.BadRequest(f'admission webhook "{name}" does not support dry run')
