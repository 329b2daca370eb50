"""`cplane log import --dump FILE|DIR...`: a cluster's dump (`cp.dumps`) as the starting state of an
EMPTY store, all or nothing (`storage.importing`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cp import importing


def _private_dir(path: Path) -> None:
    """The data dir, created readable by its owner only (it may hold Secrets' values)."""
    if not path.exists():
        path.mkdir(mode=0o700, parents=True)
        path.chmod(0o700)  # whatever the umask


async def run(args: argparse.Namespace, *, url: str) -> int:
    from cp import dumps, importing
    from storage import factory, log
    from storage import importing as writer

    try:
        paths = dumps.files([Path(p) for p in args.dump])
    except dumps.DumpError as exc:
        print(f"cplane log import: {exc}", file=sys.stderr)
        return 1
    if args.data_dir:
        _private_dir(Path(args.data_dir))
    sequencer = importing.Sequencer(keep_secrets=args.keep_secrets, defaults=True)

    def numbered() -> Iterator[importing.Event]:
        try:
            yield from dumps.events(paths, sequencer)
        except dumps.DumpError as exc:
            raise log.ImportRejectedError(str(exc), line=exc.line) from None

    event_log = factory.open_event_log(url=url)
    await event_log.start()
    try:
        count = await writer.import_events(event_log, numbered())
    except log.ImportRejectedError as exc:
        print(f"cplane log import: {exc}; nothing was written", file=sys.stderr)
        return 1
    finally:
        await event_log.close()
    for label, skipped in sorted(sequencer.skipped.items()):
        print(f"skipped {skipped} {label} (a kind cplane does not serve)", file=sys.stderr)
    if sequencer.unchanged:
        print(f"{sequencer.unchanged} objects appeared twice, unchanged: kept once", file=sys.stderr)
    print(f"imported {count} events from {len(paths)} files", file=sys.stderr)
    return 0
