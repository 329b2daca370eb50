"""Storage benchmarks (issue #2): appends, fan-out, time-travel lists, export/import; and (issue #22)
`cplane log events --name/--user` on a 1,000,000-event SQLite log (`--only-queries`: that alone).

    .venv/bin/python -m bench.storage            # full run (~3-5 min on 2 cores)
    .venv/bin/python -m bench.storage --quick    # smaller sizes (~1 min)
    options: --pg-url URL (default: env CPLANE_TEST_PG_URL or postgresql+asyncpg://postgres@127.0.0.1:5432/test),
             --no-pg, --dir DIR (scratch space; default a temporary directory),
             --only-queries (the log-query figures only, ~1 min)

Prints one table; each figure sits beside its target or its reference point from the same run.
PostgreSQL runs in a fresh schema that is dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import msgspec
import structlog

from storage import factory, log, ndjson, sql

PG_URL = os.environ.get("CPLANE_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")

_encode = msgspec.json.Encoder().encode


class Row(msgspec.Struct):
    benchmark: str
    backend: str
    measured: str
    target: str


def pod(name: str, *, namespace: str = "bench") -> dict[str, object]:
    """A modest Pod (~480 bytes of JSON)."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"6f1c2a9e-0000-4000-8000-{name[-12:]:0>12}",
                     "labels": {"app": "web", "tier": "frontend"},
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"nodeName": "node-1", "containers": [
            {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
             "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]},
        "status": {"phase": "Running", "podIP": "10.0.0.1"},
    }


def added(name: str) -> log.Write:
    return log.Write(type="ADDED", group="", resource="pods", namespace="bench", name=name, object=pod(name),
                     expected_revision=0, time=time.time(), actor=log.Actor(user="bench", field_manager="bench"))


@contextlib.asynccontextmanager
async def opened(url: str) -> AsyncIterator[sql.SqlEventLog]:
    event_log = factory.open_event_log(url=url)
    await event_log.start()
    try:
        yield event_log
    finally:
        await event_log.close()


class Stores:
    """Fresh databases: SQLite files under `directory`, PostgreSQL schemas (dropped at the end)."""

    def __init__(self, *, directory: Path, pg_url: str | None) -> None:
        self.directory = directory
        self.pg_url = pg_url
        self._schemas: list[str] = []

    def sqlite(self, name: str) -> str:
        path = self.directory / f"{name}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        return f"sqlite+aiosqlite:///{path}"

    def postgres(self, name: str) -> str:
        assert self.pg_url is not None
        schema = f"cplane_bench_{name}_{uuid.uuid4().hex[:8]}"
        self._schemas.append(schema)
        return f"{self.pg_url}{'&' if '?' in self.pg_url else '?'}schema={schema}"

    async def drop(self) -> None:
        if self._schemas and self.pg_url:
            connection = await asyncpg.connect(self.pg_url.replace("postgresql+asyncpg://", "postgresql://", 1))
            try:
                for schema in self._schemas:
                    await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            finally:
                await connection.close()


# -- appends -------------------------------------------------------------------------------------

async def appends(url: str, *, writers: int, total: int) -> tuple[float, float]:
    """(appends per second, CPU microseconds per append) with `writers` concurrent writers."""
    async with opened(url) as event_log:
        per_writer = total // writers

        async def writer(n: int) -> None:
            for i in range(per_writer):
                await event_log.append(added(f"w{n}-{i:07d}"))

        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(writer(n) for n in range(writers)))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    count = per_writer * writers
    return count / wall, cpu / count * 1e6


def raw_sqlite(path: Path, *, total: int, batch: int) -> float:
    """Rows per second for stdlib sqlite3 inserting the same rows (event + head upsert) into the same
    tables, WAL + synchronous=NORMAL, `batch` rows per transaction; objects encoded beforehand."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript("""
        CREATE TABLE events (revision INTEGER PRIMARY KEY, type TEXT NOT NULL, api_group TEXT NOT NULL,
          resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, uid TEXT NOT NULL,
          prev_revision BIGINT NOT NULL, time FLOAT NOT NULL, actor_user TEXT NOT NULL,
          actor_field_manager TEXT NOT NULL, actor_user_agent TEXT NOT NULL, actor_request_id TEXT NOT NULL,
          object BLOB NOT NULL);
        CREATE UNIQUE INDEX events_key_prev_revision ON events (resource, api_group, namespace, name, prev_revision);
        CREATE TABLE heads (resource TEXT, api_group TEXT, namespace TEXT, name TEXT, revision BIGINT NOT NULL,
          deleted BOOLEAN NOT NULL, PRIMARY KEY (resource, api_group, namespace, name)) WITHOUT ROWID;
    """)
    rows = []
    for revision in range(1, total + 1):
        name = f"r-{revision:07d}"
        obj = pod(name)
        obj["metadata"]["resourceVersion"] = str(revision)  # type: ignore[index]
        rows.append((revision, "ADDED", "", "pods", "bench", name, "uid", 0, time.time(), "bench", "bench", "", "",
                     _encode(obj)))
    started = time.perf_counter()
    for i in range(0, total, batch):
        chunk = rows[i:i + batch]
        db.execute("BEGIN IMMEDIATE")
        db.executemany(f"INSERT INTO events VALUES ({', '.join(['?'] * 14)})", chunk)
        db.executemany("INSERT INTO heads VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
                       "revision = excluded.revision, deleted = excluded.deleted",
                       [(r[3], r[2], r[4], r[5], r[0], False) for r in chunk])
        db.execute("COMMIT")
    elapsed = time.perf_counter() - started
    db.close()
    return total / elapsed


# -- fan-out ---------------------------------------------------------------------------------------

async def fanout(url: str, *, subscribers: int, events: int) -> dict[str, float]:
    """Delivery latency percentiles (ms) of one event to every subscriber, measured from the start of
    append() ("append_*", includes the commit) and from the moment the committed event is published
    to the subscriptions ("publish_*")."""
    async with opened(url) as event_log:
        subs = [await event_log.subscribe(group="", resource="pods", namespace=None, after=0)
                for _ in range(subscribers)]
        from_append: list[float] = []
        from_publish: list[float] = []
        started = published = 0.0
        remaining = 0
        all_received = asyncio.Event()
        broadcaster = event_log._broadcaster
        publish = broadcaster.publish

        def timed_publish(batch: list[log.Event]) -> None:
            nonlocal published
            published = time.perf_counter()
            publish(batch)

        broadcaster.publish = timed_publish  # type: ignore[method-assign,assignment]

        async def consume(subscription: log.Subscription) -> None:
            nonlocal remaining
            while (batch := await subscription.next_batch(timeout=None)) is not None:
                now = time.perf_counter()
                for _ in batch:
                    from_append.append(now - started)
                    from_publish.append(now - published)
                    remaining -= 1
                if remaining == 0:
                    all_received.set()

        tasks = [asyncio.create_task(consume(s)) for s in subs]
        remaining = subscribers
        await event_log.append(added("warm-up"))  # not measured: first wake-up of every task
        await all_received.wait()
        from_append.clear()
        from_publish.clear()
        for i in range(events):
            all_received.clear()
            remaining = subscribers
            started = time.perf_counter()
            await event_log.append(added(f"e{i}"))
            await all_received.wait()
        for s in subs:
            s.close()
        await asyncio.gather(*tasks)
    out = {}
    for name, samples in (("append", from_append), ("publish", from_publish)):
        ms = sorted(x * 1000 for x in samples)
        out[f"{name}_p50"], out[f"{name}_p99"], out[f"{name}_max"] = ms[len(ms) // 2], ms[int(len(ms) * 0.99)], ms[-1]
    return out


# -- a big log: import, time travel, export ----------------------------------------------------------

def write_log_file(path: Path, *, objects: int, events: int) -> None:
    """NDJSON: `objects` pods ADDED, then MODIFIED round-robin up to `events` events."""
    with path.open("wb") as out:
        for revision in range(1, events + 1):
            i = (revision - 1) % objects
            name = f"pod-{i:07d}"
            obj = pod(name)
            obj["metadata"]["resourceVersion"] = str(revision)  # type: ignore[index]
            obj["status"]["observedRevision"] = revision  # type: ignore[index]
            meta = obj["metadata"]
            prev = 0 if revision <= objects else revision - objects
            out.write(_encode(ndjson.Line(
                revision=revision, type="ADDED" if prev == 0 else "MODIFIED", group="", resource="pods",
                namespace="bench", name=name, uid=meta["uid"], prev_revision=prev,  # type: ignore[index]
                time=1.7e9 + revision / 1000, actor=log.Actor(user="bench"), object=msgspec.Raw(_encode(obj)))))
            out.write(b"\n")


async def big_log(url: str, *, source: Path, objects: int, events: int, runs: int) -> dict[str, float]:
    out: dict[str, float] = {}
    async with opened(url) as event_log:
        with source.open("rb") as lines:
            started = time.perf_counter()
            count = await ndjson.import_events(event_log, lines=lines)
            out["import"] = count / (time.perf_counter() - started)
        assert count == events
        for label, revision in (("tt_old", objects), ("tt_mid", events // 2), ("latest", None)):
            timings = []
            for _ in range(runs):
                started = time.perf_counter()
                result = await event_log.list_objects(group="", resource="pods", namespace="bench", revision=revision)
                timings.append(time.perf_counter() - started)
                assert len(result.events) == objects, (label, len(result.events))
            out[label] = statistics.median(timings)
        with open(os.devnull, "wb") as sink:  # noqa: ASYNC230 (export_events writes to a binary file)
            started = time.perf_counter()
            exported = await ndjson.export_events(event_log, out=sink)
            out["export"] = exported / (time.perf_counter() - started)
    return out


# -- log queries: `cplane log events --name/--user` (issue #22) -----------------------------------------

QUERY_RUNS = 5


def fill_query_log(path: Path, *, events: int, objects: int, users: int) -> None:
    """A data dir's cplane.db holding `events` events, written straight into SQLite in one transaction
    (not through the API: seconds, not minutes): `objects` pods spread over 100 namespaces, MODIFIED
    round-robin, each event written by one of `users` node users. The secondary indexes are dropped
    during the load and built again at the end, as `cplane log import` does."""
    asyncio.run(_create_empty(path))
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=OFF")
        db.execute("BEGIN IMMEDIATE")
        indexes = db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' "
                             "AND sql IS NOT NULL").fetchall()
        for name, _ in indexes:
            db.execute(f'DROP INDEX "{name}"')

        def rows() -> Iterator[tuple[object, ...]]:
            for revision in range(1, events + 1):
                i = (revision - 1) % objects
                prev = 0 if revision <= objects else revision - objects
                body = b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pod-%07d","namespace":"ns-%02d",' \
                       b'"resourceVersion":"%d"},"spec":{"nodeName":"node-%04d"}}' % (i, i % 100, revision, i % users)
                yield (revision, "ADDED" if prev == 0 else "MODIFIED", "", "pods", f"ns-{i % 100:02d}",
                       f"pod-{i:07d}", f"uid-{i}", prev, 1.7e9 + revision / 1000,
                       f"system:node:node-{revision * 7919 % users:04d}", "kubelet", "kubelet/v1.37.0", "",
                       body)

        db.executemany(f"INSERT INTO events ({sql._COLS}) VALUES ({', '.join('?' * 14)})", rows())
        db.executemany("INSERT INTO heads VALUES ('pods', '', ?, ?, ?, 0)",
                       ((f"ns-{i % 100:02d}", f"pod-{i:07d}", events - (events - 1 - i) % objects)
                        for i in range(min(objects, events))))
        for _, definition in indexes:
            db.execute(definition)
        db.execute("COMMIT")
    finally:
        db.close()


async def _create_empty(path: Path) -> None:
    async with opened(f"sqlite+aiosqlite:///{path}"):
        pass


def _events_args(data_dir: Path, **kw: object) -> argparse.Namespace:
    base: dict[str, object] = {"log_command": "events", "data_dir": data_dir, "db": None, "file": None,
                               "resource": None, "namespace": None, "name": None, "actor": None, "user": None,
                               "type": None, "since": None, "until": None, "limit": None, "follow": False,
                               "output": "table"}
    base.update(kw)
    return argparse.Namespace(**base)


async def _log_events(args: argparse.Namespace) -> tuple[float, int]:
    """Seconds of one `cplane log events` in process (open, query, render the table), and its lines."""
    import io

    from cp.cli import log as log_command

    sink = io.BytesIO()
    started = time.perf_counter()
    assert await log_command.log_events(args, out=sink) == 0
    return time.perf_counter() - started, sink.getvalue().count(b"\n") - 1


async def _full_scan(data_dir: Path, **fields: str) -> tuple[float, int]:
    """The path `log events` took before the indexes: every event read, filtered in Python."""
    from storage import recording

    flt = recording.EventFilter(**fields)
    started = time.perf_counter()
    found = 0
    async with recording.opened(str(data_dir), expect="dir") as source:
        async for page in recording.events_between(source, 0, source.last):
            found += sum(1 for ev in page if flt(ev))
    return time.perf_counter() - started, found


def _not_indexed(path: Path, **fields: str) -> tuple[float, int]:
    """The same SQL as the indexed query, with `NOT INDEXED`: SQLite scans the table."""
    from storage import codec

    text, args = sql.scan_matching_sql(start=1, end=1 << 62, limit=1 << 62, name=fields.get("name"),
                                       user=fields.get("user"), indexed=False)
    db = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        started = time.perf_counter()
        found = [codec.event_from_row(row) for row in db.execute(text, args)]
        return time.perf_counter() - started, len(found)
    finally:
        db.close()


async def log_queries(directory: Path, *, events: int) -> list[Row]:
    data_dir = directory / "queries"
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "cplane.db"
    started = time.perf_counter()
    await asyncio.to_thread(fill_query_log, path, events=events, objects=10_000, users=5_000)
    print(f"  log queries: wrote {events:,} events in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    rows: list[Row] = []
    label = f"{events:,}-event log"
    for flag, fields in (("--name", {"name": "pod-0004242"}), ("--user", {"user": "system:node:node-0042"})):
        value = next(iter(fields.values()))
        timings = []
        for _ in range(QUERY_RUNS):
            seconds, lines = await _log_events(_events_args(data_dir, **fields))
            timings.append(seconds)
        scan_seconds, scanned = await _full_scan(data_dir, **fields)
        raw_seconds, raw = await asyncio.to_thread(_not_indexed, path, **fields)
        assert lines == scanned == raw, (lines, scanned, raw)
        rows.append(Row(benchmark=f"log events {flag} {value} ({label}, {lines} events), indexed", backend="SQLite",
                        measured=f"{statistics.median(timings) * 1000:.0f} ms (median of {QUERY_RUNS})",
                        target="<= 100 ms"))
        rows.append(Row(benchmark="  same, previous path: every event read, filtered in Python", backend="SQLite",
                        measured=f"{scan_seconds * 1000:,.0f} ms", target="reference"))
        rows.append(Row(benchmark="  same SQL with NOT INDEXED (table scan, rows decoded)", backend="SQLite",
                        measured=f"{raw_seconds * 1000:,.0f} ms", target="reference"))
    return rows


# -- driver ----------------------------------------------------------------------------------------

async def pg_reachable(url: str) -> str | None:
    try:
        connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1), timeout=5)
        await connection.close()
    except (OSError, asyncpg.PostgresError, TimeoutError) as error:
        return f"{type(error).__name__}: {error}"
    return None


async def run(*, quick: bool, pg_url: str | None, directory: Path) -> list[Row]:
    size = {
        "append_1": 1_000 if quick else 5_000, "append_32": 6_400 if quick else 32_000,
        "raw": 5_000 if quick else 20_000, "fanout_events": 10 if quick else 50,
        "objects": 10_000, "events": 100_000 if quick else 1_000_000, "runs": 3,
    }
    rows: list[Row] = []
    stores = Stores(directory=directory, pg_url=pg_url)
    backends = [("SQLite", stores.sqlite)] + ([("PostgreSQL", stores.postgres)] if pg_url else [])
    try:
        raw_1 = raw_sqlite(directory / "raw.db", total=size["raw"] // 4, batch=1)
        raw_32 = raw_sqlite(directory / "raw.db", total=size["raw"], batch=32)
        raw_1000 = raw_sqlite(directory / "raw.db", total=size["raw"], batch=1000)
        rows.append(Row(benchmark="raw sqlite3 insert, 1 row/txn", backend="sqlite3", measured=f"{raw_1:,.0f}/s",
                        target="reference"))
        rows.append(Row(benchmark="raw sqlite3 insert, 32 rows/txn", backend="sqlite3",
                        measured=f"{raw_32:,.0f}/s", target="reference"))
        rows.append(Row(benchmark="raw sqlite3 insert, 1000 rows/txn", backend="sqlite3",
                        measured=f"{raw_1000:,.0f}/s", target="reference"))
        for backend, new_url in backends:
            for writers, total in ((1, size["append_1"]), (32, size["append_32"])):
                rate, cpu = await appends(new_url(f"append{writers}"), writers=writers, total=total)
                if backend == "SQLite":
                    reference = (f">= 10,000/s (raw sqlite3 1 row/txn: {raw_1:,.0f}/s)" if writers == 32
                                 else f"raw sqlite3 1 row/txn: {raw_1:,.0f}/s")
                else:
                    reference = "-"
                rows.append(Row(benchmark=f"append, {writers} writer{'s' if writers > 1 else ''}", backend=backend,
                                measured=f"{rate:,.0f}/s ({cpu:,.0f} us CPU/append)", target=reference))
        for backend, new_url in backends:
            f = await fanout(new_url("fanout"), subscribers=1000, events=size["fanout_events"])
            rows.append(Row(benchmark="fan-out 1 event -> 1,000 subscribers, from commit", backend=backend,
                            measured=f"p50 {f['publish_p50']:.1f} ms, p99 {f['publish_p99']:.1f} ms "
                                     f"(max {f['publish_max']:.1f})", target="p99 <= 10 ms"))
            rows.append(Row(benchmark="  same, from the append() call", backend=backend,
                            measured=f"p50 {f['append_p50']:.1f} ms, p99 {f['append_p99']:.1f} ms "
                                     f"(max {f['append_max']:.1f})", target="(includes the commit)"))
        source = directory / "log.ndjson"
        write_log_file(source, objects=size["objects"], events=size["events"])
        for backend, new_url in backends:
            result = await big_log(new_url("big"), source=source, objects=size["objects"], events=size["events"],
                                   runs=size["runs"])
            events = f"{size['events']:,}-event log"
            rows.append(Row(benchmark=f"time-travel list, 10,000 objects at rev 10,000 ({events})", backend=backend,
                            measured=f"{result['tt_old'] * 1000:.0f} ms", target="<= 500 ms"))
            rows.append(Row(benchmark=f"time-travel list, 10,000 objects at rev {size['events'] // 2:,}",
                            backend=backend, measured=f"{result['tt_mid'] * 1000:.0f} ms", target="<= 500 ms"))
            rows.append(Row(benchmark="list latest, 10,000 objects", backend=backend,
                            measured=f"{result['latest'] * 1000:.0f} ms", target="a few tens of ms"))
            rows.append(Row(benchmark=f"import ({events}, from a file)", backend=backend,
                            measured=f"{result['import']:,.0f} events/s", target=">= 50,000/s"))
            rows.append(Row(benchmark=f"export ({events}, to /dev/null)", backend=backend,
                            measured=f"{result['export']:,.0f} events/s", target=">= 50,000/s"))
        rows.extend(await log_queries(directory, events=size["events"]))
    finally:
        await stores.drop()
    return rows


def print_table(rows: list[Row]) -> None:
    headers = ("Benchmark", "Backend", "Measured", "Target / reference")
    cells = [headers] + [(r.benchmark, r.backend, r.measured, r.target) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(4)]
    for n, cell in enumerate(cells):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)) + " |")
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--pg-url", default=PG_URL)
    parser.add_argument("--no-pg", action="store_true", help="SQLite only")
    parser.add_argument("--dir", type=Path, help="scratch directory (default: a temporary one)")
    parser.add_argument("--only-queries", action="store_true",
                        help="only `log events --name/--user` on a 1M-event log (issue #22)")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
                        logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    pg_url = None if args.no_pg else args.pg_url
    if pg_url and (reason := asyncio.run(pg_reachable(pg_url))):
        print(f"PostgreSQL skipped: {reason}", file=sys.stderr)
        pg_url = None
    # As a long-running server should after start-up: move the start-up objects out of the
    # collector's way, so a full collection does not walk every imported module's objects.
    gc.collect()
    gc.freeze()
    directory = args.dir or Path(tempfile.mkdtemp(prefix="cplane-bench-"))
    directory.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    try:
        if args.only_queries:
            rows = asyncio.run(log_queries(directory, events=100_000 if args.quick else 1_000_000))
        else:
            rows = asyncio.run(run(quick=args.quick, pg_url=pg_url, directory=directory))
    finally:
        if args.dir is None:
            shutil.rmtree(directory, ignore_errors=True)
    print(f"bench.storage {'--quick ' if args.quick else ''}({os.cpu_count()} CPUs, Python "
          f"{sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}; {time.perf_counter() - started:.0f} s; "
          f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after)")
    print_table(rows)


if __name__ == "__main__":
    main()
