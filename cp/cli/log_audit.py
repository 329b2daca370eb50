"""`cplane log import --audit FILE...`: kube-apiserver audit logs into an EMPTY store, all or nothing
(`cp.auditlog` reads them, `cp.importing.Sequencer` numbers the changes, `storage.importing` writes
them). A summary per resource goes to stderr: what was imported and what the log could not tell.
docs/replay.md, "Bringing a real cluster in: audit logs".

Inputs of `WORKER_BYTES` or more are read in a worker process while this one writes: reading,
decoding and numbering take about half as long again as the database's inserts, and the two overlap
on two cores. The worker sends the numbered events in chunks over a pipe (msgpack: an event is encoded
as its store row, decoded here straight into rows), read ahead by a thread here; the database inserts
each chunk and upserts its keys' heads meanwhile, so that only the commit is left after the last
chunk. An error the worker meets is sent back (file:line) and rejects the import; a worker that dies
is reported as an error, and one whose importing process stops finds its pipe broken and ends.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from cp import auditlog, importing

WORKER_BYTES = 64 << 20
_CHUNK = 2000
_AHEAD = 16  # chunks a worker may be ahead of the database


def add_arguments(imp: argparse.ArgumentParser) -> None:
    """`--audit` (with `--keep-secrets`, shared with `--dump`) on `cplane log import`."""
    imp.add_argument("--audit", nargs="+", type=Path, metavar="FILE",
                     help="instead of NDJSON: kube-apiserver audit logs (audit.k8s.io/v1 Event JSON lines or "
                          "EventList documents; rotated and .gz files too), merged by time (see docs/replay.md)")


class _Outcome:
    """What the reading side counted (sent back by a worker as plain values)."""

    def __init__(self, *, report: auditlog.Report, skipped: dict[str, int], missed_deletes: int,
                 missed_subresources: int, unchanged: int) -> None:
        self.report = report
        self.skipped = skipped
        self.missed_deletes = missed_deletes
        self.missed_subresources = missed_subresources
        self.unchanged = unchanged


async def run(args: argparse.Namespace, *, store_url: str) -> int:
    from cp import collector
    from storage import factory, log
    from storage import importing as writer

    missing, size = _prepare(args)
    if missing:
        print(f"cplane log import: {missing}: no such file", file=sys.stderr)
        return 1
    # Long-lived objects pile up (each live object's last version): full collections would walk them
    # again and again, for no cycles (decoded JSON has none).
    collector.tune(thresholds=collector.CONTROLLERS)
    outcome: list[_Outcome] = []
    keep = bool(args.keep_secrets)
    stop: Callable[[], None] = _nothing
    rows: Generator[list[tuple[Any, ...]], None, None] | None = None
    if size >= WORKER_BYTES:  # started before any thread
        rows, stop = _from_worker(args.audit, keep_secrets=keep, outcome=outcome)
        events: Generator[Any, None, None] = rows
    else:
        events = _in_process(args.audit, keep_secrets=keep, outcome=outcome)
    event_log = factory.open_event_log(url=store_url)
    try:
        await event_log.start()
        try:
            if rows is not None:
                # The worker is the slower side: the database keeps its indexes and the keys' heads up
                # to date meanwhile, chunk by chunk, instead of after the last.
                count = await writer.import_rows(event_log, rows, keep_indexes=True)
            else:
                count = await writer.import_events(event_log, events)
        except log.ImportRejectedError as exc:
            print(f"cplane log import: {exc}", file=sys.stderr)
            return 1
    finally:
        events.close()
        stop()  # (a generator never started runs no finally)
        await event_log.close()
    _summary(outcome[0], count)
    return 0


def _nothing() -> None:
    return None


def _summary(outcome: _Outcome, count: int) -> None:
    for line in outcome.report.lines():
        print(line, file=sys.stderr)
    if outcome.skipped:
        print("kinds cplane does not serve: " + ", ".join(f"{k} {n}" for k, n in sorted(outcome.skipped.items())),
              file=sys.stderr)
    if outcome.missed_deletes:
        print(f"deletions of objects not in the log: {outcome.missed_deletes}", file=sys.stderr)
    if outcome.missed_subresources:
        print(f"bindings and scale writes of objects not in the log: {outcome.missed_subresources}", file=sys.stderr)
    if outcome.unchanged:
        print(f"writes that changed nothing: {outcome.unchanged}", file=sys.stderr)
    print(f"imported {count} events from {outcome.report.events} audit events", file=sys.stderr)


def _prepare(args: argparse.Namespace) -> tuple[str, int]:
    """The first audit file that is missing (or "") and the files' total size; the data dir is
    created (0700)."""
    size = 0
    for path in args.audit:
        if not Path(path).is_file():
            return str(path), 0
        size += Path(path).stat().st_size
    if args.data_dir:
        Path(args.data_dir).mkdir(mode=0o700, parents=True, exist_ok=True)
    return "", size


def _reading(paths: list[Path], *, keep_secrets: bool) -> tuple[Iterator[importing.Event], Callable[[], _Outcome]]:
    from cp import auditlog, importing

    sequencer = importing.Sequencer(keep_secrets=keep_secrets)
    translator = auditlog.Translator()

    def outcome() -> _Outcome:
        return _Outcome(report=translator.report, skipped=sequencer.skipped,
                        missed_deletes=sequencer.missed_deletes, missed_subresources=sequencer.missed_subresources,
                        unchanged=sequencer.unchanged)
    return auditlog.events(paths, sequencer=sequencer, translator=translator), outcome


def _in_process(paths: list[Path], *, keep_secrets: bool, outcome: list[_Outcome]) -> Generator[importing.Event, None, None]:
    """The events, read here; an AuditError becomes the store's ImportRejectedError (nothing written)."""
    from cp import auditlog
    from storage import log

    events, counted = _reading(paths, keep_secrets=keep_secrets)
    try:
        yield from events
    except auditlog.AuditError as exc:
        raise log.ImportRejectedError(str(exc), line=exc.line) from None
    outcome.append(counted())


def _worker(paths: list[Path], keep_secrets: bool, conn: Connection, other_end: Connection) -> None:
    """The worker process: the numbered events sent in chunks of the store's rows (msgpack, b"R"),
    then the outcome (b"D") or the error (b"E")."""
    import gc
    import itertools
    import pickle

    import msgspec

    from cp import auditlog

    other_end.close()  # (inherited by the fork) so that the pipe breaks when the importing process stops
    # Decoded JSON holds no cycles: cyclic collections in this short-lived process would be pure cost.
    gc.disable()
    events, counted = _reading(paths, keep_secrets=keep_secrets)
    encoder = msgspec.msgpack.Encoder()
    try:
        while chunk := list(itertools.islice(events, _CHUNK)):
            conn.send_bytes(b"R" + encoder.encode(chunk))
        out = counted()
        conn.send_bytes(b"D" + pickle.dumps(out))
    except auditlog.AuditError as exc:
        conn.send_bytes(b"E" + pickle.dumps((str(exc), exc.line)))
    except BrokenPipeError:  # the importing process stopped
        pass
    finally:
        conn.close()


def _from_worker(paths: list[Path], *, keep_secrets: bool, outcome: list[_Outcome]
                 ) -> tuple[Generator[list[tuple[Any, ...]], None, None], Callable[[], None]]:
    """The events, read by a worker process (see the module), started now: before this process
    starts the database's thread."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)
    process = context.Process(target=_worker, args=(paths, keep_secrets, sending, receiving), daemon=True,
                              name="audit-import-reader")
    process.start()
    sending.close()

    def stop() -> None:
        receiving.close()  # a worker still sending stops (BrokenPipeError)
        process.join(timeout=5)
        if process.is_alive():
            process.kill()
            process.join()
    return _received(receiving, stop, outcome=outcome), stop


def _received(receiving: Connection, stop: Callable[[], None], *, outcome: list[_Outcome]
              ) -> Generator[list[tuple[Any, ...]], None, None]:
    import pickle
    import queue
    import threading

    import msgspec

    from storage import importing as writer
    from storage import log

    decoder = msgspec.msgpack.Decoder(list[writer.WireRow])  # an Event is encoded as its row
    # A thread keeps the pipe drained (a few chunks ahead), so that the worker goes on reading while
    # this process waits for the database.
    ahead: queue.Queue[bytes | None] = queue.Queue(maxsize=_AHEAD)

    def drain() -> None:
        try:
            while True:
                message = receiving.recv_bytes()
                ahead.put(message)
                if message[:1] != b"R":
                    return
        except (EOFError, OSError, TypeError):  # the worker is gone, or `stop` closed the pipe (TypeError:
            ahead.put(None)                     # closed while this thread was reading it)

    threading.Thread(target=drain, name="audit-import-pipe", daemon=True).start()
    try:
        while True:
            message = ahead.get()
            if message is None:
                raise log.ImportRejectedError("the audit log reader stopped unexpectedly", line=0)
            if message[:1] == b"R":
                yield decoder.decode(memoryview(message)[1:])
            elif message[:1] == b"E":
                text, line = pickle.loads(message[1:])
                raise log.ImportRejectedError(text, line=line)
            else:
                outcome.append(pickle.loads(message[1:]))
                return
    finally:
        stop()
