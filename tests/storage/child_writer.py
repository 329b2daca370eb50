"""Writer and reader processes for the durability and multi-process tests.

    python -m tests.storage.child_writer --url URL --prefix P [--count N] [--tasks T] [--wait-for-go]

Prints `ready`, (optionally waits for a `go` line on stdin), then runs T concurrent writers; each creates
a key and updates it twice, then the next key. Every acknowledged append prints
`ack <revision> <type> <name> <unix time>`; with --count the process prints `done` and exits after N
appends per writer, otherwise it writes until it is killed.

    python -m tests.storage.child_writer --url POSTGRES_URL --read-until N

Reads the events table directly (asyncpg, no EventLog) as fast as it can until it has seen revision N;
every read must continue exactly where the previous one ended. Prints `ready`, then
`read <reads>` or `violation <details>`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time

import asyncpg
import sqlalchemy as sa
import structlog

from storage import factory, log


def ack(event: log.Event) -> None:
    sys.stdout.write(f"ack {event.revision} {event.type} {event.name} {time.time():.6f}\n")
    sys.stdout.flush()


async def writer(event_log: log.EventLog, *, prefix: str, count: int | None) -> None:
    done = 0
    key = 0
    while count is None or done < count:
        name = f"{prefix}-{key}"
        event = await event_log.append(log.Write(
            type="ADDED", group="", resource="pods", namespace="durability", name=name,
            object={"metadata": {"name": name, "namespace": "durability", "uid": name}},
            expected_revision=0, time=time.time()))
        ack(event)
        for step in range(2):
            event = await event_log.append(log.Write(
                type="MODIFIED", group="", resource="pods", namespace="durability", name=name,
                object={"metadata": {"name": name, "namespace": "durability", "uid": name}, "step": step},
                expected_revision=event.revision, time=time.time()))
            ack(event)
        done += 3
        key += 1


async def read_table(url: str, *, until: int) -> None:
    parsed = sa.make_url(url)
    schema = parsed.query.get("schema")
    dsn = parsed.difference_update_query(["schema"]).set(drivername="postgresql").render_as_string(
        hide_password=False)
    connection = await asyncpg.connect(dsn, server_settings={"search_path": schema} if schema else {})
    print("ready", flush=True)
    last = reads = 0
    try:
        while last < until:
            rows = await connection.fetch("SELECT revision FROM events WHERE revision > $1 ORDER BY revision", last)
            seen = [row[0] for row in rows]
            if seen != list(range(last + 1, last + 1 + len(seen))):
                print(f"violation after {last}: saw {seen[:10]}", flush=True)
                return
            last += len(seen)
            reads += 1
    finally:
        await connection.close()
    print(f"read {reads}", flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--read-until", type=int)
    parser.add_argument("--prefix")
    parser.add_argument("--count", type=int)
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--wait-for-go", action="store_true")
    args = parser.parse_args()
    if args.read_until is not None:
        await read_table(args.url, until=args.read_until)
        return
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
                        logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    event_log = factory.open_event_log(url=args.url)
    await event_log.start()
    print("ready", flush=True)
    if args.wait_for_go:
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    try:
        await asyncio.gather(*(writer(event_log, prefix=f"{args.prefix}{n}", count=args.count)
                               for n in range(args.tasks)))
    finally:
        await event_log.close()
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
