"""A writer process for the durability and multi-process tests.

    python -m tests.storage.child_writer --url URL --prefix P [--count N] [--tasks T] [--wait-for-go]

Prints `ready`, (optionally waits for a `go` line on stdin), then runs T concurrent writers; each creates
a key and updates it twice, then the next key. Every acknowledged append prints
`ack <revision> <type> <name> <unix time>`; with --count the process prints `done` and exits after N
appends per writer, otherwise it writes until it is killed.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time

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


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--count", type=int)
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--wait-for-go", action="store_true")
    args = parser.parse_args()
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
