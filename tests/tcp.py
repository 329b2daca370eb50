"""The tests' TCP proxy: `Balancer` (the scale-out tests' load balancer, the database proxy the fault
tests cut and restore) and the splicing of two streams it does."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence


class Balancer:
    """A TCP load balancer on 127.0.0.1: each connection goes to the first backend that accepts it
    (haproxy's server + backup), and is cut when that backend goes away. `cut()` ends every
    connection and stops listening (as a stopped server: new connections are refused); `restore()`
    listens again on the same port."""

    def __init__(self, backends: Sequence[str]) -> None:
        self.backends = [host_port(url) for url in backends]
        self.server: asyncio.Server | None = None
        self.port = 0
        self.url = ""
        self.connections: dict[int, int] = {}  # backend index -> connections made
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    async def __aenter__(self) -> Balancer:
        await self.restore()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.cut()

    async def restore(self) -> None:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self.server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"

    async def cut(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in list(self._writers):  # ends every spliced connection; no task is cancelled
            writer.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            for index, (host, port) in enumerate(self.backends):
                try:
                    up_reader, up_writer = await asyncio.open_connection(host, port)
                except OSError:
                    continue
                self.connections[index] = self.connections.get(index, 0) + 1
                self._writers.add(up_writer)
                try:
                    await splice(reader, writer, up_reader, up_writer)
                finally:
                    self._writers.discard(up_writer)
                    up_writer.close()
                return
        finally:
            self._writers.discard(writer)
            writer.close()
            self._tasks.discard(task)


def host_port(url: str) -> tuple[str, int]:
    """(host, port) of `scheme://host:port[/...]`."""
    rest = url.split("://", 1)[1].split("@")[-1].split("/", 1)[0]
    host, _, port = rest.rpartition(":")
    return host, int(port)


async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await src.read(65536):
            dst.write(data)
            await dst.drain()


async def splice(r1: asyncio.StreamReader, w1: asyncio.StreamWriter, r2: asyncio.StreamReader,
                 w2: asyncio.StreamWriter) -> None:
    """Copy both ways until either side ends, then end both (as haproxy in TCP mode does)."""
    tasks = [asyncio.ensure_future(pipe(r1, w2)), asyncio.ensure_future(pipe(r2, w1))]
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    w1.close()
    w2.close()
    await asyncio.gather(*tasks, return_exceptions=True)
