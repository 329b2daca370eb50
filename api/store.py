"""The generic registry: kube-apiserver's create / update / patch / delete semantics over the event log.

HTTP-free: handlers in `api/handlers.py` decode requests into calls here. Every write ends in one
`EventLog.append`; preconditions are optimistic (the revision read is the revision expected), and
unconditional updates retry on conflict as `GuaranteedUpdate` does.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypedDict

import msgspec

from api import admission as admissions
from api import codec
from cp import (
    bodies,
    defaulting,
    errors,
    fieldmanager,
    objects,
    options,
    patching,
    rbac,
    sim,
    strategies,
    validation,
)
from cp import clock as clocks
from cp import resources as res
from cp.crd import custom as crds
from cp.strategies import core as core_strategies
from cp.strategies import disabled
from storage import log

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode

GENERATE_NAME_ATTEMPTS = 8
MAX_RETRIES = 1000  # upstream GuaranteedUpdate retries until it wins; this only bounds a pathology


class WriteContext(msgspec.Struct, kw_only=True):
    """Who writes and how: query parameters and identity of one request."""

    user: str = "system:admin"
    user_agent: str = ""
    request_id: str = ""
    field_manager: str = ""
    dry_run: bool = False
    field_validation: str = "Warn"  # Strict | Warn | Ignore
    warnings: list[str] = msgspec.field(default_factory=list)
    user_info: rbac.UserInfo | None = None  # groups and extras of `user`, for admission and requesters
    # Annotations admission adds to the request's audit record (upstream `Attributes.AddAnnotation`):
    # validating admission policies' `auditAnnotations` and Audit failures.
    audit_annotations: dict[str, str] = msgspec.field(default_factory=dict)
    # The built-in version the request was written in when it is not the stored one (`api.versions`):
    # the field manager records and compares the writer's fields in it.
    served: res.ResourceKind | None = None

    def actor(self) -> log.Actor:
        return log.Actor(user=self.user, field_manager=self.manager(), user_agent=self.user_agent,
                         request_id=self.request_id)

    def manager(self) -> str:
        """The field manager given, else upstream's default derived from the User-Agent."""
        return self.field_manager or options.manager_from_user_agent(self.user_agent)


class Result(msgspec.Struct, kw_only=True):
    """A write's outcome: the object as JSON bytes and the HTTP code."""

    body: bytes
    code: int = 200


class _Key(TypedDict):
    group: str
    resource: str
    namespace: str
    name: str


def _key(kind: res.ResourceKind, namespace: str, name: str) -> _Key:
    return {"group": kind.group, "resource": kind.plural, "namespace": namespace, "name": name}


Finish = Callable[[bool], Awaitable[None]]


class RegistryHooks(Protocol):
    """What a kind's REST storage adds to the generic store (upstream's BeginCreate, BeginUpdate and
    AfterDelete), e.g. the Services' allocators (`api/services.py`). `begin_*` run before the kind's
    strategy and validation and return what to do once the write succeeded or failed."""

    async def begin_create(self, store: Any, obj: dict[str, Any], ctx: Any) -> Finish: ...

    async def begin_update(self, store: Any, new: dict[str, Any], old: dict[str, Any], ctx: Any) -> Finish: ...

    async def after_delete(self, store: Any, obj: dict[str, Any], ctx: Any) -> None: ...


class Store:
    def __init__(self, *, event_log: log.EventLog, clock: clocks.Clock,
                 registry: res.Registry | None = None) -> None:
        self.log = event_log
        self.clock = clock
        # The served resources: the built-in ones and the custom resources of the CRDs (`api.crds`).
        self.registry = registry if registry is not None else res.Registry()
        self.hooks: dict[tuple[str, str], RegistryHooks] = {}  # (group, plural) -> the kind's REST storage
        # Namespace -> (revision it was read at, terminating): admission reads it on every create
        # of a namespaced object; valid while no namespace changed since (`log.last_change`).
        self._namespaces: dict[str, tuple[int, bool]] = {}
        self.admission = admissions.Chain()  # the app installs the plugins (api.app.make_app)

    async def _append(self, write: log.Write) -> log.Event:
        """Append, then apply side effects the server itself owns (the virtual clock follows its object)."""
        event = await self.log.append(write)
        if write.group == res.SIM_GROUP and write.resource == "clocks" and write.type != "DELETED" \
                and isinstance(self.clock, clocks.VirtualClock):
            self.clock.set(sim.clock_time(write.object))
        return event

    # ---------------------------------------------------------------- reads

    async def get(self, kind: res.ResourceKind, namespace: str, name: str,
                  *, revision: int | None = None) -> log.Event:
        ev = await self.log.get(**_key(kind, namespace, name), revision=revision)
        if ev is None:
            raise errors.NotFound.of(group=kind.group, plural=kind.plural, name=name)
        return ev

    async def get_object(self, kind: res.ResourceKind, namespace: str, name: str) -> dict[str, Any]:
        return dict(_decode((await self.get(kind, namespace, name)).object))

    # ---------------------------------------------------------------- create

    async def create(self, kind: res.ResourceKind, namespace: str, obj: dict[str, Any],
                     ctx: WriteContext, *, operation: str = "Update",
                     managed_fields: list[dict[str, Any]] | None = None) -> Result:
        """Create `obj`. `operation="Apply"` (server-side apply creating the object) stores the
        `managed_fields` computed by the apply; otherwise the creator owns what it set."""
        now = self.clock.now()
        meta = objects.meta(obj)
        obj["apiVersion"] = kind.api_version
        obj["kind"] = kind.kind
        self._check_namespace_field(kind, namespace, meta)
        generated = not meta.get("name") and bool(meta.get("generateName"))
        if generated:
            meta["name"] = objects.generate_name(str(meta["generateName"]))
        name = str(meta.get("name") or "")
        obj = self._structure(kind, obj, ctx)
        meta = objects.meta(obj)
        for drop in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(drop, None)
        meta["uid"] = objects.new_uid()
        meta["creationTimestamp"] = clocks.rfc3339(now)
        if kind.has_spec:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        _apply_defaults(kind, obj)
        attrs, plugins = self._admission_for(kind, admissions.CREATE, namespace, name, obj, None, ctx)
        if plugins:
            await self.admission.admit(plugins, attrs, self)
            obj = attrs.obj or obj
            meta = objects.meta(obj)
        # As the field manager upstream: on the defaulted object, before PrepareForCreate.
        if operation == "Apply":
            managed = managed_fields
        else:
            managed = fieldmanager.on_create(kind, obj, manager=ctx.manager(), now=clocks.rfc3339(now),
                                             requested=meta.get("managedFields"), served=ctx.served)
        if managed:
            meta["managedFields"] = managed
        else:
            meta.pop("managedFields", None)
        hooks = self.hooks.get((kind.group, kind.plural))
        finish: Finish | None = None
        if hooks is not None:  # upstream's BeginCreate (allocation), before the strategy and validation
            if kind.namespaced:
                await self._check_namespace_open(namespace, kind=kind, name=name)
            finish = await hooks.begin_create(self, obj, ctx)
        try:
            if kind.custom is not None:
                _check_custom_create(kind, obj, ctx)
            else:
                disabled.drop_disabled_fields(obj, None, group=kind.group, kind=kind.kind,
                                              features=self.registry.features)
                strategies.prepare_for_create(kind, obj, now=now,
                                              user=ctx.user_info or rbac.UserInfo(name=ctx.user))
                validation.validate_create(obj, group=kind.group, version=kind.version, kind=kind.kind,
                                           namespaced=kind.namespaced, features=self.registry.features)
                ctx.warnings.extend(strategies.warnings(kind, obj))
            if kind.group == res.SIM_GROUP:
                sim.validate(obj, None, kind=kind.kind)
            if kind.namespaced:
                await self._check_namespace_open(namespace, kind=kind, name=name)
            if plugins:
                await self.admission.validate(plugins, attrs, self)
        except BaseException:
            if finish is not None:
                await finish(False)
            raise
        try:
            result = await self._create_now(kind, namespace, obj, ctx, generated=generated, now=now)
        except BaseException:
            if plugins:
                await self.admission.committed(plugins, attrs, self, succeeded=False)
            if finish is not None:
                await finish(False)
            raise
        if plugins:
            await self.admission.committed(plugins, attrs, self, succeeded=not ctx.dry_run)
        if finish is not None:
            await finish(True)
        return result

    async def _create_now(self, kind: res.ResourceKind, namespace: str, obj: dict[str, Any], ctx: WriteContext,
                          *, generated: bool, now: float) -> Result:
        name = str(obj["metadata"]["name"])
        if ctx.dry_run:
            existing = await self.log.get(**_key(kind, namespace, name))
            if existing is not None:
                raise errors.AlreadyExists.of(group=kind.group, plural=kind.plural, name=name)
            return Result(body=_encode(obj), code=201)
        for attempt in range(GENERATE_NAME_ATTEMPTS):
            try:
                ev = await self._append(log.Write(
                    type="ADDED", **_key(kind, namespace, name), object=obj, expected_revision=0,
                    time=now, actor=ctx.actor()))
            except log.ConflictError as exc:
                if generated and attempt + 1 < GENERATE_NAME_ATTEMPTS:
                    # A generated name taken already: draw another (kube-apiserver retries since 1.32).
                    name = objects.generate_name(str(obj["metadata"]["generateName"]))
                    obj["metadata"]["name"] = name
                    continue
                raise errors.AlreadyExists.of(group=kind.group, plural=kind.plural, name=name) from exc
            return Result(body=ev.object, code=201)
        raise AssertionError("unreachable")

    def _admission_for(self, kind: res.ResourceKind, operation: str, namespace: str, name: str,
                       obj: dict[str, Any] | None, old: dict[str, Any] | None, ctx: WriteContext, *,
                       subresource: str = "", delete_options: dict[str, Any] | None = None,
                       object_kind: tuple[str, str, str] | None = None,
                       ) -> tuple[admissions.Attributes, list[admissions.Plugin]]:
        """The write's admission attributes and the plugins that handle it (usually none)."""
        attrs = admissions.Attributes(kind=kind, operation=operation, namespace=namespace, name=name,
                                      subresource=subresource, object_kind=object_kind, obj=obj, old=old,
                                      user=ctx.user_info,
                                      user_name=ctx.user, dry_run=ctx.dry_run, warnings=ctx.warnings,
                                      audit_annotations=ctx.audit_annotations)
        plugins = self.admission.for_write(attrs) if self.admission.plugins else []
        if plugins:
            attrs.options = _operation_options(operation, ctx, delete_options)
            attrs.equivalents = self.registry.equivalents(kind)
        return attrs, plugins

    async def admit_subresource_create(self, kind: res.ResourceKind, namespace: str, name: str,
                                       obj: dict[str, Any], ctx: WriteContext, *, subresource: str,
                                       object_kind: tuple[str, str, str]) -> dict[str, Any]:
        """Admission of a CREATE on a subresource whose body is another kind (pods/eviction: a policy/v1
        Eviction; pods/binding: a v1 Binding), as upstream's create handler runs it before the
        subresource's storage: the mutating plugins, then the validating ones. Returns the body as
        the mutating plugins left it."""
        if not self.admission.plugins:
            return obj
        attrs, plugins = self._admission_for(kind, admissions.CREATE, namespace, name, obj, None, ctx,
                                             subresource=subresource, object_kind=object_kind)
        if not plugins:
            return obj
        await self.admission.admit(plugins, attrs, self)
        await self.admission.validate(plugins, attrs, self)
        return attrs.obj if attrs.obj is not None else obj

    def _check_namespace_field(self, kind: res.ResourceKind, namespace: str, meta: dict[str, Any]) -> None:
        if kind.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and body_ns != namespace:
                raise errors.BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)

    async def _check_namespace_open(self, namespace: str, *, kind: res.ResourceKind | None = None,
                                    name: str = "") -> None:
        cached = self._namespaces.get(namespace)
        if cached is not None and cached[0] >= self.log.last_change(group="", resource="namespaces"):
            terminating = cached[1]
        else:
            as_of = self.log.revision
            ns = await self.log.get(group="", resource="namespaces", namespace="", name=namespace)
            if ns is None:
                self._namespaces.pop(namespace, None)
                raise errors.NotFound.of(group="", plural="namespaces", name=namespace)
            terminating = bool((_decode(ns.object).get("metadata") or {}).get("deletionTimestamp"))
            self._namespaces[namespace] = (as_of, terminating)
        if terminating:
            # As admission.NewForbidden(attributes, err): about the object being created.
            gr = (kind.group_resource if kind else "namespaces")
            prefix = f'{gr} "{name}" is forbidden: ' if name else "forbidden: "
            details: dict[str, Any] = {"name": name}
            if kind and kind.group:
                details["group"] = kind.group
            details["kind"] = kind.plural if kind else "namespaces"
            raise errors.Forbidden(
                f"{prefix}unable to create new content in namespace {namespace} because it is being terminated",
                details={**details, "causes": [{
                    "reason": "NamespaceTerminating", "field": "metadata.namespace",
                    "message": f"namespace {namespace} is being terminated"}]})

    def _structure(self, kind: res.ResourceKind, obj: dict[str, Any], ctx: WriteContext) -> dict[str, Any]:
        if kind.custom is not None:  # metadata is typed; the rest is the schema's (pruned)
            obj, warnings = validation.check_structure(obj, group=kind.group, version=kind.version, kind="",
                                                       field_validation=ctx.field_validation)
            ctx.warnings.extend(warnings)
            ctx.warnings.extend(crds.prune(kind.custom, obj, field_validation=ctx.field_validation,
                                           what=f'{kind.kind} in version "{kind.version}"'))
            return obj
        obj, warnings = validation.check_structure(
            obj, group=kind.group, version=kind.version, kind=kind.kind,
            field_validation=ctx.field_validation)
        ctx.warnings.extend(warnings)
        return obj

    # ---------------------------------------------------------------- update

    async def update(self, kind: res.ResourceKind, namespace: str, name: str, obj: dict[str, Any],
                     ctx: WriteContext, *, subresource: str = "") -> Result:
        meta = objects.meta(obj)
        if meta.get("name") and meta["name"] != name:
            raise errors.BadRequest(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
        if kind.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and body_ns != namespace:
                raise errors.BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request")
        # each attempt writes a fresh copy of the body (a retry must not see what the last one
        # changed): decoded from its encoding, several times cheaper than a deep copy
        pristine = _encode(obj)

        def mutate(_current: dict[str, Any]) -> dict[str, Any]:
            return dict(_decode(pristine))

        return await self.guaranteed_update(kind, namespace, name, mutate, ctx, subresource=subresource)

    async def patch(self, kind: res.ResourceKind, namespace: str, name: str, patch_body: bytes,
                    content_type: str, ctx: WriteContext, *, subresource: str = "",
                    force: bool = False) -> Result:
        if content_type == patching.APPLY_PATCH:
            return await self.apply(kind, namespace, name, patch_body, ctx, subresource=subresource,
                                    force=force)

        def mutate(current: dict[str, Any]) -> dict[str, Any]:
            return patching.apply_patch(current, patch_body, content_type=content_type,
                                        group=kind.group, version=kind.version, kind=kind.kind)

        return await self.guaranteed_update(kind, namespace, name, mutate, ctx, subresource=subresource)

    async def apply(self, kind: res.ResourceKind, namespace: str, name: str, patch_body: bytes,
                    ctx: WriteContext, *, subresource: str = "", force: bool = False) -> Result:
        """Server-side apply (`application/apply-patch+yaml`): field ownership, conflicts and removal of
        fields a manager stops applying, as structured-merge-diff (`cp.fieldmanager`). A configuration
        of another version (`ctx.served`) is merged in that version and the result stored converted."""
        options.check_write_options(options_kind="PatchOptions", field_manager=ctx.field_manager, apply=True)
        applied = await codec.off_loop(patching.apply_yaml_body, patch_body)
        version = ctx.served or kind
        fieldmanager.check_apply_config(version, applied)
        ctx.warnings.extend(fieldmanager.drop_unknown_fields(version, applied, field_validation=ctx.field_validation))
        ameta = objects.meta(applied)
        if ameta.get("name") and ameta["name"] != name:
            raise errors.BadRequest(
                f"the name of the object ({ameta['name']}) does not match the name on the URL ({name})")
        existing = await self.log.get(**_key(kind, namespace, name))
        if existing is None and not subresource:
            obj, managed = fieldmanager.on_apply(
                kind, None, applied, manager=ctx.field_manager, subresource="", force=force,
                now=clocks.rfc3339(self.clock.now()), namespace=namespace, name=name, served=ctx.served)
            obj = copy.deepcopy(obj)
            objects.meta(obj)["name"] = name
            return await self.create(kind, namespace, obj, ctx, operation="Apply", managed_fields=managed)

        def mutate(current: dict[str, Any]) -> dict[str, Any]:
            new, managed = fieldmanager.on_apply(
                kind, current, applied, manager=ctx.field_manager, subresource=subresource, force=force,
                now=clocks.rfc3339(self.clock.now()), namespace=namespace, name=name, served=ctx.served)
            bodies.check_encoded_size(new, what="the applied object")  # as any patched object
            if new is current:
                new = dict(current)
            new["metadata"] = dict(new.get("metadata") or {})
            if not ameta.get("resourceVersion"):
                # Only a resourceVersion in the configuration is a precondition: otherwise a concurrent
                # write makes guaranteed_update apply again to the newer object, as upstream retries.
                new["metadata"].pop("resourceVersion", None)
            if managed:
                new["metadata"]["managedFields"] = managed
            else:
                new["metadata"].pop("managedFields", None)
            return new

        return await self.guaranteed_update(kind, namespace, name, mutate, ctx, subresource=subresource,
                                            operation="Apply")

    async def guaranteed_update(
        self, kind: res.ResourceKind, namespace: str, name: str,
        mutate: Callable[[dict[str, Any]], dict[str, Any]], ctx: WriteContext, *,
        subresource: str = "", fields: dict[str, Any] | None = None, operation: str = "Update",
    ) -> Result:
        """Read, `mutate`, write; on a storage conflict, read and mutate again (upstream's GuaranteedUpdate):
        a resourceVersion the client sent that is now stale fails the precondition check (409), while a
        patch that did not name one is simply re-applied to the newer object.

        managedFields follow the operation: an "Update" takes ownership of what changed between the
        stored and the new object (`fields` is accepted for compatibility and ignored); "Apply" expects
        `mutate` to have set them (`Store.apply`)."""
        # The first attempt may start from the newest state this server knows (the log's kept objects)
        # instead of a read (upstream's cached existing object): the write's expected revision catches a
        # stale one (conflict, then a read), and every other outcome reached from it (an error, a failed
        # precondition, a no-op) is decided again from a read, as upstream does when
        # `origStateIsCurrent` is false.
        cached = None if ctx.dry_run else await self.log.get(**_key(kind, namespace, name), latest_known=True)
        for _attempt in range(MAX_RETRIES + 1):
            fresh = cached is None
            if cached is not None:
                ev, cached = cached, None
            else:
                ev = await self.get(kind, namespace, name)
            try:
                result = await self._update_attempt(kind, namespace, name, mutate, ctx, ev, fresh=fresh,
                                                    subresource=subresource, fields=fields, operation=operation)
            except Exception:
                if fresh:
                    raise
                continue
            if result is not None:
                return result
        raise errors.Conflict.modified(group=kind.group, plural=kind.plural, name=name)

    async def _update_attempt(
        self, kind: res.ResourceKind, namespace: str, name: str,
        mutate: Callable[[dict[str, Any]], dict[str, Any]], ctx: WriteContext, ev: log.Event, *,
        fresh: bool, subresource: str, fields: dict[str, Any] | None, operation: str,
    ) -> Result | None:
        """One attempt of `guaranteed_update` from `ev`: its Result, or None to read and try again."""
        current = _decode(ev.object)
        new = mutate(_decode(ev.object))  # a second decode is a deep copy, at a fraction of `copy.deepcopy`
        if not isinstance(new, dict):
            raise errors.BadRequest("the object must be a JSON object")
        new_meta = objects.meta(new)
        wanted_rv = new_meta.get("resourceVersion")
        # A resourceVersion the client sent is a precondition ("" or "0": none), parsed as upstream's
        # ObjectResourceVersion ("05" is 5, " 5" a 400). Not a string: the structure check's 400.
        if isinstance(wanted_rv, str) and wanted_rv != str(ev.revision) \
                and options.object_resource_version(wanted_rv) not in (0, ev.revision):
            if not fresh:
                return None
            raise errors.Conflict.modified(group=kind.group, plural=kind.plural, name=name)
        attrs, plugins = self._admission_for(kind, admissions.UPDATE, namespace, name, new, current, ctx,
                                             subresource=subresource)
        if plugins:  # mutating admission sees the defaulted object, as upstream's
            _apply_defaults(kind, new)
            await self.admission.admit(plugins, attrs, self)
            new = attrs.obj if attrs.obj is not None else new
        begun = self.hooks.get((kind.group, kind.plural)) if not subresource else None
        finish = None
        if begun is not None:  # upstream's BeginUpdate: allocation, before the strategy and validation
            _apply_defaults(kind, new)
            finish = await begun.begin_update(self, new, current, ctx)
        try:
            result = await self._write_update(kind, namespace, name, new, current, ev, ctx, attrs, plugins,
                                              subresource=subresource, fields=fields, operation=operation,
                                              fresh=fresh)
        except BaseException:
            if finish is not None:
                await finish(False)
            raise
        if finish is not None:
            await finish(result is not None)
        return result

    async def _write_update(self, kind: res.ResourceKind, namespace: str, name: str, new: dict[str, Any],
                            current: dict[str, Any], ev: log.Event, ctx: WriteContext,
                            attrs: admissions.Attributes, plugins: list[admissions.Plugin], *, subresource: str,
                            fields: dict[str, Any] | None, operation: str, fresh: bool = True) -> Result | None:
        """One attempt of `guaranteed_update` from the mutated object on: its Result, or None when the
        object changed since it was read (the caller reads and mutates again) or when a no-op was
        decided from a remembered, maybe stale, state (`fresh` False)."""
        new = self._prepare_update(kind, new, current, ctx, subresource=subresource,
                                   fields=fields, operation=operation)
        if _same(new, current):
            return Result(body=ev.object) if fresh else None
        cur_meta = current.get("metadata") or {}
        if cur_meta.get("deletionTimestamp") and not new["metadata"].get("finalizers") \
                and _finalized(kind, new):
            if ctx.dry_run:
                return Result(body=_encode(new))
            try:
                out = await self._append(log.Write(
                    type="DELETED", **_key(kind, namespace, name), object=new,
                    expected_revision=ev.revision, time=self.clock.now(), actor=ctx.actor()))
            except log.ConflictError:
                return None  # re-read and re-apply: a stale client resourceVersion fails the check above
            await self._removed(kind, namespace, name, new, ctx)
            return Result(body=out.object)
        if plugins:
            attrs.obj = new
            await self.admission.validate(plugins, attrs, self)
        if ctx.dry_run:
            new["metadata"]["resourceVersion"] = str(ev.revision)
            return Result(body=_encode(new))
        try:
            out = await self._append(log.Write(
                type="MODIFIED", **_key(kind, namespace, name), object=new,
                expected_revision=ev.revision, time=self.clock.now(), actor=ctx.actor()))
        except log.ConflictError as exc:
            if plugins:
                await self.admission.committed(plugins, attrs, self, succeeded=False)
            if exc.current is None:
                raise errors.NotFound.of(group=kind.group, plural=kind.plural, name=name) from None
            return None  # as upstream GuaranteedUpdate: re-read, re-mutate; stale client RVs then get 409
        except BaseException:
            if plugins:
                await self.admission.committed(plugins, attrs, self, succeeded=False)
            raise
        if plugins:
            await self.admission.committed(plugins, attrs, self, succeeded=True)
        return Result(body=out.object)

    async def _removed(self, kind: res.ResourceKind, namespace: str, name: str, obj: dict[str, Any],
                       ctx: WriteContext) -> None:
        """After an object left the log (a delete, or its last finalizer removed): admission plugins
        that hold something for it release it, and so does the kind's registry (upstream's AfterDelete)."""
        hooks = self.hooks.get((kind.group, kind.plural))
        if hooks is not None:
            await hooks.after_delete(self, obj, ctx)
        if self.admission.plugins:
            attrs, plugins = self._admission_for(kind, admissions.DELETE, namespace, name, None, obj, ctx)
            if plugins:
                await self.admission.committed(plugins, attrs, self, succeeded=True)

    def _prepare_update(self, kind: res.ResourceKind, new: dict[str, Any], old: dict[str, Any],
                        ctx: WriteContext, *, subresource: str, fields: dict[str, Any] | None,
                        operation: str) -> dict[str, Any]:
        now = self.clock.now()
        requested_managed = (new.get("metadata") or {}).get("managedFields") \
            if isinstance(new.get("metadata"), dict) else None
        new["apiVersion"] = kind.api_version
        new["kind"] = kind.kind
        new = self._structure(kind, new, ctx)
        old_meta = old.get("metadata") or {}
        if subresource in res.PARTIAL_WRITES:
            # Status writes change status only (spec and metadata from old), but for the metadata the
            # kind's status strategy keeps from the write; `approval` writes, a CSR's conditions; a
            # Pod's `ephemeralcontainers` and `resize`, the part of the spec they own.
            new = strategies.partial_write(kind, new, old, subresource=subresource)
        elif kind.subresource("status") is not None and "status" in old:
            new["status"] = _decode(_encode(old["status"]))  # a copy (faster than copy.deepcopy)
        elif kind.subresource("status") is not None:
            new.pop("status", None)
        meta = objects.meta(new)
        for keep in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                     "namespace", "name"):
            if keep in old_meta:
                meta[keep] = old_meta[keep]
            else:
                meta.pop(keep, None)
        if subresource != "status" and old_meta.get("deletionTimestamp"):
            added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                raise errors.Invalid(kind=kind.kind, group=kind.group, name=str(meta.get("name")),
                                     causes=[errors.Cause("Forbidden", "metadata.finalizers",
                                                          "no new finalizers can be added if the "
                                                          "object is being deleted, found new "
                                                          f"finalizers {sorted(added)!r}")])
        meta["resourceVersion"] = old_meta.get("resourceVersion", "")
        _apply_defaults(kind, new)
        if kind.custom is None:
            disabled.drop_disabled_fields(new, old, group=kind.group, kind=kind.kind,
                                          features=self.registry.features)
            strategies.prepare_for_update(kind, new, old, now=now, subresource=subresource)
        if kind.has_spec:
            generation = int(old_meta.get("generation") or 1)
            if crds.generation_changed(kind.custom, new, old) if kind.custom is not None \
                    else objects.spec_changed(new, old):
                generation += 1
            meta["generation"] = generation
        else:
            meta.pop("generation", None)
        if not meta.get("labels"):
            meta.pop("labels", None)
        if not meta.get("annotations"):
            meta.pop("annotations", None)
        if not meta.get("finalizers"):
            meta.pop("finalizers", None)
        validation.validate_update(new, old, group=kind.group, version=kind.version, kind=kind.kind,
                                   subresource=subresource, features=self.registry.features)
        if kind.custom is not None:
            causes = crds.validate(kind.custom, new, old, subresource=subresource, warnings=ctx.warnings)
            if causes:
                raise errors.Invalid(kind=kind.kind, group=kind.group, name=str(meta.get("name") or ""),
                                     causes=causes)
        if not subresource:
            ctx.warnings.extend(w for w in strategies.warnings(kind, new) if w not in ctx.warnings)
        if kind.group == res.SIM_GROUP:
            sim.validate(new, old, kind=kind.kind)
        if operation == "Apply":
            managed = requested_managed  # computed by Store.apply's mutate
        else:
            meta.pop("managedFields", None)
            managed = fieldmanager.on_update(kind, old, new, manager=ctx.manager(), subresource=subresource,
                                             now=clocks.rfc3339(now), requested=requested_managed,
                                             served=ctx.served)
        if managed:
            meta["managedFields"] = managed
        else:
            meta.pop("managedFields", None)
        return new

    # ---------------------------------------------------------------- delete

    async def delete(self, kind: res.ResourceKind, namespace: str, name: str, delete_options: dict[str, Any],
                     ctx: WriteContext) -> tuple[Result, bool]:
        """Delete one object. Returns (result, deleted_now)."""
        for _attempt in range(MAX_RETRIES):
            ev = await self.get(kind, namespace, name)
            obj = _decode(ev.object)
            meta = objects.meta(obj)
            if self.admission.plugins:
                attrs, plugins = self._admission_for(kind, admissions.DELETE, namespace, name, None, obj, ctx,
                                                     delete_options=delete_options)
                if plugins:
                    await self.admission.validate(plugins, attrs, self)
            pre = delete_options.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != meta.get("uid"):
                raise errors.Conflict(
                    f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
                    f"{meta.get('uid')}", details={"name": name, "kind": kind.plural})
            if pre.get("resourceVersion") and str(pre["resourceVersion"]) != str(ev.revision):
                raise errors.Conflict(
                    f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                    f"ResourceVersion in object meta: {ev.revision}",
                    details={"name": name, "kind": kind.plural})
            now = self.clock.now()
            policy = delete_options.get("propagationPolicy")
            if policy is None and delete_options.get("orphanDependents") is True:
                policy = "Orphan"
            finalizers = list(meta.get("finalizers") or [])
            if (kind.group, kind.plural) == (crds.GROUP, crds.PLURAL) and not meta.get("deletionTimestamp") \
                    and crds.CLEANUP_FINALIZER not in finalizers:
                # A definition's instances go first (`api.crds`), as apiextensions-apiserver's Delete adds
                # its cleanup finalizer on the first delete.
                finalizers.append(crds.CLEANUP_FINALIZER)
            if policy == "Foreground" and "foregroundDeletion" not in finalizers:
                finalizers.append("foregroundDeletion")
            elif policy == "Orphan" and "orphan" not in finalizers:
                finalizers.append("orphan")
            grace = _grace_period(kind, obj, delete_options)
            graceful = grace > 0
            namespace_kind = kind.group == "" and kind.plural == "namespaces"
            terminating = bool(meta.get("deletionTimestamp"))
            if terminating and not (graceful is False and not finalizers and not namespace_kind):
                # Already being deleted: record a shorter grace period or new finalizers only.
                changed = False
                if finalizers != list(meta.get("finalizers") or []):
                    meta["finalizers"] = finalizers
                    changed = True
                old_grace = meta.get("deletionGracePeriodSeconds")
                if kind.plural == "pods" and old_grace is not None and grace < int(old_grace):
                    meta["deletionGracePeriodSeconds"] = grace
                    meta["deletionTimestamp"] = _deletion_time(now, grace)
                    changed = True
                if not changed or ctx.dry_run:
                    return Result(body=ev.object, code=202 if finalizers else 200), False
                try:
                    out = await self._append(log.Write(
                        type="MODIFIED", **_key(kind, namespace, name), object=obj,
                        expected_revision=ev.revision, time=now, actor=ctx.actor()))
                except log.ConflictError:
                    continue
                return Result(body=out.object, code=202 if finalizers else 200), False
            if finalizers or graceful or namespace_kind:
                meta["deletionTimestamp"] = _deletion_time(now, grace if graceful else 0)
                meta["deletionGracePeriodSeconds"] = grace if graceful else 0
                if finalizers:
                    meta["finalizers"] = finalizers
                if kind.has_spec:
                    meta["generation"] = int(meta.get("generation") or 1) + 1
                if namespace_kind:
                    obj.setdefault("status", {})["phase"] = "Terminating"
                if ctx.dry_run:
                    return Result(body=_encode(obj), code=202 if finalizers else 200), False
                try:
                    out = await self._append(log.Write(
                        type="MODIFIED", **_key(kind, namespace, name), object=obj,
                        expected_revision=ev.revision, time=now, actor=ctx.actor()))
                except log.ConflictError:
                    continue
                return Result(body=out.object, code=202 if finalizers else 200), False
            if ctx.dry_run:
                return Result(body=ev.object), True
            try:
                out = await self._append(log.Write(
                    type="DELETED", **_key(kind, namespace, name), object=obj,
                    expected_revision=ev.revision, time=now, actor=ctx.actor()))
            except log.ConflictError:
                continue
            await self._removed(kind, namespace, name, obj, ctx)
            return Result(body=out.object), True
        raise errors.Conflict.modified(group=kind.group, plural=kind.plural, name=name)

    # ---------------------------------------------------------------- subresources

    async def bind(self, namespace: str, name: str, binding: dict[str, Any], ctx: WriteContext) -> None:
        """pods/binding: assign a node, as the scheduler does (`assignPod`)."""
        pods = res.lookup("", "v1", "pods")
        assert pods is not None
        bmeta = binding.get("metadata") or {}
        if bmeta.get("name") and bmeta["name"] != name:
            raise errors.BadRequest(
                f"the name of the object ({bmeta['name']}) does not match the name on the URL ({name})")
        binding = await self.admit_subresource_create(pods, namespace, name, binding, ctx, subresource="binding",
                                                      object_kind=("", "v1", "Binding"))
        bmeta = binding.get("metadata") or {}
        target = binding.get("target") or {}
        node = target.get("name")
        if not node:
            raise errors.Invalid(kind="Binding", group="", name=name,
                                 causes=[errors.Cause("Required", "target.name", "")])

        def mutate(pod: dict[str, Any]) -> dict[str, Any]:
            meta = pod.get("metadata") or {}
            if bmeta.get("uid") and bmeta["uid"] != meta.get("uid"):
                raise errors.Conflict(f"Precondition failed: UID in precondition: {bmeta['uid']}, "
                                      f"UID in object meta: {meta.get('uid')}")
            if meta.get("deletionTimestamp"):
                raise errors.Conflict(f'pod {name} is being deleted, cannot be assigned to a host')
            spec = pod.get("spec") or {}
            if spec.get("nodeName"):
                raise errors.Conflict(f'pod {name} is already assigned to node "{spec["nodeName"]}"')
            return core_strategies.bind_pod(pod, binding, now=self.clock.now())

        # Spec and condition land in one event: nodeName via an internal spec update with the
        # PodScheduled condition carried along.
        async def _bind() -> Result:
            for _ in range(MAX_RETRIES):
                ev = await self.get(pods, namespace, name)
                pod = mutate(_decode(ev.object))
                if ctx.dry_run:
                    return Result(body=_encode(pod))
                try:
                    out = await self._append(log.Write(
                        type="MODIFIED", group="", resource="pods", namespace=namespace, name=name,
                        object=pod, expected_revision=ev.revision, time=self.clock.now(),
                        actor=ctx.actor()))
                except log.ConflictError:
                    continue
                return Result(body=out.object)
            raise errors.Conflict.modified(group="", plural="pods", name=name)

        await _bind()

    async def get_scale(self, kind: res.ResourceKind, namespace: str, name: str) -> dict[str, Any]:
        ev = await self.get(kind, namespace, name)
        return _scale(kind, _decode(ev.object))

    async def update_scale(self, kind: res.ResourceKind, namespace: str, name: str,
                           scale_mutate: Callable[[dict[str, Any]], dict[str, Any]],
                           ctx: WriteContext) -> dict[str, Any]:
        def mutate(current: dict[str, Any]) -> dict[str, Any]:
            scale = scale_mutate(_scale(kind, current))
            smeta = scale.get("metadata") or {}
            if smeta.get("name") and smeta["name"] != name:
                raise errors.BadRequest(
                    f"the name of the object ({smeta['name']}) does not match the name on the URL ({name})")
            replicas = (scale.get("spec") or {}).get("replicas", 0)
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                raise errors.Invalid(kind="Scale", group="autoscaling", name=name, causes=[
                    errors.Cause("Invalid", "spec.replicas", "must be greater than or equal to 0",
                                 replicas)])
            if kind.custom is not None:
                crds.set_path(current, str((kind.custom.scale or {}).get("specReplicasPath") or ".spec.replicas"),
                              replicas)
            else:
                current.setdefault("spec", {})["replicas"] = replicas
            rv = smeta.get("resourceVersion")
            current["metadata"]["resourceVersion"] = rv or ""
            return current

        result = await self.guaranteed_update(kind, namespace, name, mutate, ctx, subresource="scale",
                                              fields={"f:spec": {"f:replicas": {}}})
        return _scale(kind, _decode(result.body))


def _scale(kind: res.ResourceKind, obj: dict[str, Any]) -> dict[str, Any]:
    return crds.scale_of(kind.custom, obj) if kind.custom is not None else scale_of(obj)


def _apply_defaults(kind: res.ResourceKind, obj: dict[str, Any]) -> None:
    if kind.custom is not None:
        crds.apply_defaults(kind.custom, obj)
    else:
        defaulting.apply_defaults(obj, group=kind.group, version=kind.version, kind=kind.kind)


def _check_custom_create(kind: res.ResourceKind, obj: dict[str, Any], ctx: WriteContext) -> None:
    """The custom resource strategy on create: status dropped where it is a subresource, then the
    metadata's checks (a DNS subdomain name), the schema's and the CEL rules'."""
    custom = kind.custom
    if custom.terminating:
        raise errors.MethodNotAllowed(
            "create not allowed while custom resource definition is terminating")
    crds.prepare_for_create(custom, obj)
    validation.validate_create(obj, group=kind.group, version=kind.version, kind=kind.kind,
                               namespaced=kind.namespaced)
    causes = crds.validate(custom, obj, None, warnings=ctx.warnings)
    if causes:
        raise errors.Invalid(kind=kind.kind, group=kind.group, name=str(objects.meta(obj).get("name") or ""),
                             causes=causes)


def _operation_options(operation: str, ctx: WriteContext, delete_options: dict[str, Any] | None) -> dict[str, Any]:
    """The options of a write as admission passes them on (meta.k8s.io/v1 CreateOptions, UpdateOptions
    or DeleteOptions): dryRun and fieldManager as the client gave them, a delete's options body."""
    if operation == admissions.DELETE:
        out = {k: v for k, v in (delete_options or {}).items() if k not in ("kind", "apiVersion")}
        out = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", **out}
    else:
        out = {"kind": "CreateOptions" if operation == admissions.CREATE else "UpdateOptions",
               "apiVersion": "meta.k8s.io/v1"}
        if ctx.field_manager:
            out["fieldManager"] = ctx.field_manager
    if ctx.dry_run:
        out["dryRun"] = ["All"]
    return out


def scale_of(obj: dict[str, Any]) -> dict[str, Any]:
    """autoscaling/v1 Scale of a Deployment or ReplicaSet."""
    from cp import selectors

    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    sel = spec.get("selector")
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if k in meta},
        "spec": {"replicas": spec.get("replicas", 0)},
        "status": {"replicas": status.get("replicas", 0),
                   "selector": str(selectors.from_label_selector_object(sel)) if isinstance(sel, dict) else ""},
    }


def _grace_period(kind: res.ResourceKind, obj: dict[str, Any], delete_options: dict[str, Any]) -> int:
    """Graceful deletion applies to pods that a kubelet must stop (upstream `podStrategy.CheckGracefulDelete`)."""
    if kind.group != "" or kind.plural != "pods":
        return 0
    spec = obj.get("spec") or {}
    phase = (obj.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    grace = delete_options.get("gracePeriodSeconds")
    if grace is None:
        grace = spec.get("terminationGracePeriodSeconds", 30)
    try:
        grace = int(grace)
    except (TypeError, ValueError):
        raise errors.BadRequest("gracePeriodSeconds must be an integer") from None
    return max(grace, 0)


# The longest time.Duration, in seconds: upstream adds the grace period to now as a Duration, which
# wraps beyond this; here the deletion time stops at it (about 290 years on), a time that can be written.
_MAX_GRACE_SECONDS = options.INT64_MAX // 1_000_000_000


def _deletion_time(now: float, grace: int) -> str:
    """`deletionTimestamp` for a deletion `grace` seconds from `now` (any int64 grace period)."""
    return clocks.rfc3339(now + min(grace, _MAX_GRACE_SECONDS))


def _finalized(kind: res.ResourceKind, obj: dict[str, Any]) -> bool:
    """A terminating object with no metadata finalizers goes away, except pods still in their grace
    period (the kubelet deletes them) and namespaces with spec finalizers."""
    meta = obj.get("metadata") or {}
    if kind.group == "" and kind.plural == "namespaces":
        return not (obj.get("spec") or {}).get("finalizers")
    if kind.group == "" and kind.plural == "pods":
        return not meta.get("deletionGracePeriodSeconds")
    return True


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal apart from resourceVersion and managedFields timestamps (upstream skips no-op writes)."""
    if a.keys() != b.keys():
        return False
    for k in a:
        if k == "metadata":
            ma = dict(a[k] or {})
            mb = dict(b[k] or {})
            for m in (ma, mb):
                m.pop("resourceVersion", None)
            if not fieldmanager.same_entries(ma.pop("managedFields", None), mb.pop("managedFields", None)):
                return False
            if ma != mb:
                return False
        elif a[k] != b[k]:
            return False
    return True
