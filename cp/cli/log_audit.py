"""`cplane log import --audit FILE...`: kube-apiserver audit logs into an EMPTY store, all or nothing
(`cp.auditlog` reads them, `cp.importing.Sequencer` numbers the changes, `storage.importing` writes
them). A summary per resource goes to stderr: what was imported and what the log could not tell.
docs/replay.md, "Bringing a real cluster in: audit logs".
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cp import importing


def add_arguments(imp: argparse.ArgumentParser, source: argparse._MutuallyExclusiveGroup) -> None:
    source.add_argument("--audit", nargs="+", type=Path, metavar="FILE",
                        help="kube-apiserver audit logs (audit.k8s.io/v1 Event JSON lines or EventList "
                             "documents; rotated and .gz files too), merged by time")
    if not any("--keep-secrets" in a.option_strings for a in imp._actions):
        imp.add_argument("--keep-secrets", action="store_true",
                         help="keep Secret and ConfigMap values (default: redacted)")


async def run(args: argparse.Namespace, *, store_url: str) -> int:
    from cp import auditlog, collector, importing
    from storage import factory, log
    from storage import importing as writer

    missing = _prepare(args)
    if missing:
        print(f"cplane log import: {missing}: no such file", file=sys.stderr)
        return 1
    # Long-lived objects pile up (each live object's last version): full collections would walk them
    # again and again, for no cycles (decoded JSON has none).
    collector.tune(thresholds=collector.CONTROLLERS)
    sequencer = importing.Sequencer(keep_secrets=bool(args.keep_secrets))
    translator = auditlog.Translator()
    event_log = factory.open_event_log(url=store_url)
    await event_log.start()
    try:
        try:
            count = await writer.import_events(
                event_log, _checked(auditlog.events(args.audit, sequencer=sequencer, translator=translator)))
        except log.ImportRejectedError as exc:
            print(f"cplane log import: {exc}", file=sys.stderr)
            return 1
    finally:
        await event_log.close()
    report = translator.report
    for line in report.lines():
        print(line, file=sys.stderr)
    notes = []
    if sequencer.skipped:
        notes.append("kinds cplane does not serve: " + ", ".join(f"{k} {n}" for k, n in sorted(sequencer.skipped.items())))
    if sequencer.missed_deletes:
        notes.append(f"deletions of objects not in the log: {sequencer.missed_deletes}")
    if sequencer.unchanged:
        notes.append(f"writes that changed nothing: {sequencer.unchanged}")
    for note in notes:
        print(note, file=sys.stderr)
    print(f"imported {count} events from {report.events} audit events", file=sys.stderr)
    return 0


def _prepare(args: argparse.Namespace) -> str:
    """The first audit file that is missing, or "" once the data dir exists (created 0700)."""
    for path in args.audit:
        if not Path(path).is_file():
            return str(path)
    if args.data_dir:
        Path(args.data_dir).mkdir(mode=0o700, parents=True, exist_ok=True)
    return ""


def _checked(events: Iterator[importing.Event]) -> Iterator[importing.Event]:
    """`events`, an AuditError turned into the store's ImportRejectedError (nothing is written)."""
    from cp import auditlog
    from storage import log

    try:
        yield from events
    except auditlog.AuditError as exc:
        raise log.ImportRejectedError(str(exc), line=exc.line) from None
