"""`kubectl exec` into a process-runtime container: the command runs in the container's
namespaces, root and identity (the runtime's command line for it) with the environment
the container started with, its stdin, stdout and stderr streamed to the caller, or a
pseudo-terminal when a TTY is asked for (resizable)."""

from __future__ import annotations

import asyncio
import fcntl
import os
import struct
import termios
from collections.abc import AsyncIterator

STDOUT, STDERR = 1, 2


class ExecError(Exception):
    """A command cannot be run in the container (the kubelet's message)."""


class ExecSession:
    def __init__(self, proc: asyncio.subprocess.Process, master: int | None) -> None:
        self.proc = proc
        self.master = master
        self._queue: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue()
        self._readers: list[asyncio.Task[None]] = []

    @classmethod
    async def start(cls, command: list[str], env: dict[str, str], stdin: bool,
                    tty: bool) -> ExecSession:
        if tty:
            master, slave = os.openpty()
            try:
                proc = await asyncio.create_subprocess_exec(
                    *command, stdin=slave, stdout=slave, stderr=slave,
                    env=env, start_new_session=True)
            finally:
                os.close(slave)
            os.set_blocking(master, False)
            session = cls(proc, master)
            session._readers.append(asyncio.create_task(session._read_pty()))
            return session
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
            start_new_session=True)
        session = cls(proc, None)
        session._readers = [asyncio.create_task(session._read(proc.stdout, STDOUT)),
                            asyncio.create_task(session._read(proc.stderr, STDERR))]
        return session

    async def _read(self, stream: asyncio.StreamReader | None, channel: int) -> None:
        assert stream is not None
        while data := await stream.read(32768):
            await self._queue.put((channel, data))
        await self._queue.put(None)

    async def _read_pty(self) -> None:
        assert self.master is not None
        loop = asyncio.get_running_loop()
        readable = asyncio.Event()
        loop.add_reader(self.master, readable.set)
        try:
            while True:
                await readable.wait()
                readable.clear()
                try:
                    data = os.read(self.master, 32768)
                except BlockingIOError:
                    continue
                except OSError:  # EIO: the terminal's other side is closed
                    break
                if not data:
                    break
                await self._queue.put((STDOUT, data))
        finally:
            loop.remove_reader(self.master)
            await self._queue.put(None)

    async def output(self) -> AsyncIterator[tuple[int, bytes]]:
        """(channel, data) until the command's output ends."""
        open_streams = len(self._readers)
        while open_streams:
            item = await self._queue.get()
            if item is None:
                open_streams -= 1
                continue
            yield item

    async def write(self, data: bytes) -> None:
        if self.master is not None:
            os.write(self.master, data)
        elif self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.write(data)
            await self.proc.stdin.drain()

    def close_stdin(self) -> None:
        if self.master is not None:
            os.write(self.master, b"\x04")  # end of input on a terminal
        elif self.proc.stdin is not None:
            self.proc.stdin.close()

    def resize(self, width: int, height: int) -> None:
        if self.master is not None:
            fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", height, width,
                                                                      0, 0))

    async def wait(self) -> int:
        code = await self.proc.wait()
        await asyncio.gather(*self._readers, return_exceptions=True)
        if self.master is not None:
            os.close(self.master)
            self.master = None
        return code if code >= 0 else 128 - code

    def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
