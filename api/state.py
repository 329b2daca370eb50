"""Typed application and request keys (aiohttp `AppKey`), shared by the API modules."""

from __future__ import annotations

import asyncio

from aiohttp import web

from api import metrics as metrics_
from api import reads
from api import store as stores
from cp import clock as clocks
from cp import tables

STORE = web.AppKey("store", stores.Store)
CLOCK = web.AppKey("clock", clocks.Clock)
WATCHES = web.AppKey("watches", set[asyncio.Task[object]])
METRICS = web.AppKey("metrics", metrics_.Metrics)
READY = web.AppKey("ready", asyncio.Event)
TABLE_ROWS = web.AppKey("table_rows", tables.RowCache)

# Per-request keys.
USER = web.RequestKey("user", str)
REQUEST_ID = web.RequestKey("request_id", str)
TARGET = web.RequestKey("target", reads.Target)
