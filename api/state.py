"""Typed application and request keys (aiohttp `AppKey`), shared by the API modules."""

from __future__ import annotations

import asyncio

from aiohttp import web

from api import audit as audit_
from api import codec, crds, reads
from api import limits as limits_
from api import metrics as metrics_
from api import store as stores
from api.webhooks import client as webhook_client
from cp import allocation, rbac, tables
from cp import clock as clocks

STORE = web.AppKey("store", stores.Store)
CLOCK = web.AppKey("clock", clocks.Clock)
WATCHES = web.AppKey("watches", set[asyncio.Task[object]])
METRICS = web.AppKey("metrics", metrics_.Metrics)
READY = web.AppKey("ready", asyncio.Event)
TABLE_ROWS = web.AppKey("table_rows", tables.RowCache)
PROTOBUF_ITEMS = web.AppKey("protobuf_items", codec.ProtobufItems)
LIMITS = web.AppKey("limits", limits_.Limits)
WATCH_WRITES = web.AppKey("watch_writes", limits_.Deadlines)  # the stalled-write bound of watches
SERVICE_RANGES = web.AppKey("service_ranges", allocation.ServiceRanges)  # --service-cluster-ip-range, ...
DEFINITIONS = web.AppKey("definitions", crds.Definitions)  # the CRD controllers of the server (api.crds)
BOOTSTRAP = web.AppKey("bootstrap", bool)  # the server writes its own objects (not a replay)
# The app's HTTPS client for admission and CRD conversion webhooks (api.webhooks), closed with the app.
WEBHOOK_CLIENT = web.AppKey("webhook_client", webhook_client.WebhookClient)
AUDITOR = web.AppKey("auditor", audit_.Auditor)  # --audit-log-path and --audit-policy-file (api.audit), if given

# Per-request keys.
USER = web.RequestKey("user", str)
USER_INFO = web.RequestKey("user_info", rbac.UserInfo)  # set by authentication (api.auth)
REQUEST_ID = web.RequestKey("request_id", str)
TARGET = web.RequestKey("target", reads.Target)
AUDIT = web.RequestKey("audit", audit_.RequestAudit)  # the request's audit events, when the app audits
NEGOTIATED = web.RequestKey("negotiated", codec.Negotiated)  # the response's media type (api.codec.negotiate)
