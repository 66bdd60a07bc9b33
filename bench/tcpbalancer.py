"""A round-robin TCP balancer for the scale-out benchmark: each accepted connection goes
to the next backend in turn (skipping one that refuses), bytes copied both ways
untouched, so TLS ends at the apiservers (they share one serving certificate).

    python bench/tcpbalancer.py LISTEN_PORT HOST:PORT [HOST:PORT ...]

It prints `listening on 127.0.0.1:PORT` once it accepts connections.
"""

from __future__ import annotations

import asyncio
import signal
import sys

from draemu.streams import splice


class Balancer:
    def __init__(self, backends: list[tuple[str, int]]) -> None:
        if not backends:
            raise ValueError("no backends")
        self.backends = backends
        self.next = 0
        self.connections = [0] * len(backends)  # connections given to each backend

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        last: Exception | None = None
        for _ in range(len(self.backends)):
            index = self.next
            self.next = (self.next + 1) % len(self.backends)
            try:
                pair = await asyncio.open_connection(*self.backends[index])
            except OSError as e:
                last = e
                continue
            self.connections[index] += 1
            return pair
        raise ConnectionError(f"no backend answers: {last}")

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await self._connect()
        except ConnectionError:
            writer.close()
            return
        try:
            await splice((reader, writer), (up_reader, up_writer))
        except asyncio.CancelledError:  # the balancer stops: its connections go with it
            writer.close()
            up_writer.close()

    async def serve(self, host: str, port: int) -> asyncio.Server:
        return await asyncio.start_server(self.handle, host, port)


def parse_backend(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


async def _main(port: int, backends: list[tuple[str, int]]) -> None:
    balancer = Balancer(backends)
    server = await balancer.serve("127.0.0.1", port)
    print(f"listening on 127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with server:
        await stop.wait()
    print("connections per backend: " + ", ".join(
        f"{host}:{port} {n}" for (host, port), n in zip(backends, balancer.connections,
                                                        strict=True)), flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    from draemu import aio  # uvloop when installed, as draemu's commands run

    aio.run(_main(int(sys.argv[1]), [parse_backend(b) for b in sys.argv[2:]]))
