"""An agent's connection as lines: the hello line, then newline-delimited JSON-RPC read and written on descriptors.

The framing is MCP's stdio framing (:mod:`host_bridge.jsonrpc_lines`): lines split under a hard cap. The gateway reads
and writes the agent's non-blocking descriptors itself, with no pump task in between: :class:`LineReader` hands out
raw lines (the session parses only what it must), and :class:`AgentWriter` writes each frame at once while the
descriptor takes it, queues the rest, and counts the bytes not written yet, so the session can hold an agent that does
not read to a bound.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable
from typing import TypeAlias

import anyio
import anyio.abc
import anyio.lowlevel

from host_bridge.jsonrpc_lines import DEFAULT_MAX_LINE_BYTES, LineSplitter

_RECEIVE_BYTES = 1 << 20
_Frame: TypeAlias = "tuple[memoryview[int], Callable[[], None] | None]"
"""What is left to write of a frame, and what to call once it is written."""


class HelloError(Exception):
    """The first line did not arrive, was too long, or was not a hello; the message says which."""


async def read_hello(stream: anyio.abc.ByteReceiveStream, max_bytes: int) -> tuple[bytes, bytes]:
    """The first line (without its newline) and whatever followed it in the same reads.

    Raises :class:`HelloError` when the peer closes first or the line grows past ``max_bytes``.
    """
    buffer = b""
    while (end := buffer.find(b"\n")) < 0:
        if len(buffer) > max_bytes:
            raise HelloError(f"the first line is longer than {max_bytes} bytes")
        try:
            buffer += await stream.receive(max_bytes)
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            raise HelloError("the connection closed before the hello line") from None
    return buffer[:end], buffer[end + 1 :]


class LineReader:
    """The agent's lines, read from a non-blocking descriptor when asked for.

    Reading the descriptor directly (waiting for it only when it has nothing) saves the event loop pass a byte
    stream's ``receive`` makes before every read. A line that is there without waiting for the descriptor is handed
    out only after the other tasks ran, so an agent that never stops sending cannot starve the rest of the sidecar;
    one that arrived while the reader waited (an agent that waits for each answer) is handed out at once.
    """

    def __init__(self, fd: int, pending: bytes = b"", max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self._fd = fd
        self._splitter = LineSplitter(max_line_bytes)
        self._lines: deque[bytes] = deque(self._splitter.feed(pending))
        self._ended = False
        self._delivered = False

    @property
    def overflowed(self) -> bool:
        """A line went over the cap (the reader has ended)."""
        return self._splitter.overflowed

    async def receive(self) -> bytes | None:
        """The next line that is not blank (without its newline); ``None`` once the agent closed its side or sent a
        line over the cap."""
        while True:
            while self._lines:
                if self._delivered:
                    self._delivered = False
                    await anyio.lowlevel.checkpoint()
                line = self._lines.popleft()
                if line and not line.isspace():
                    self._delivered = True
                    return line
            if self._ended or self._splitter.overflowed:
                return None
            try:
                chunk = os.read(self._fd, _RECEIVE_BYTES)
            except BlockingIOError:
                self._delivered = False
                await anyio.wait_readable(self._fd)
                continue
            except OSError:
                chunk = b""
            if not chunk:
                self._ended = True
                continue
            self._lines.extend(self._splitter.feed(chunk))


class AgentWriter:
    """Frames for the agent, written whole and in order to a non-blocking descriptor.

    :meth:`write` never waits: a frame the descriptor takes at once costs no pass of the event loop; the rest is queued
    and written by :meth:`run` as the descriptor drains. Each frame may carry a callback called once it is written
    whole (or dropped, when the writer closes): the session counts an answer against the agent until then. A
    descriptor that fails closes the writer.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._queue: deque[_Frame] = deque()
        self._waiting = anyio.Event()
        self._drained = anyio.Event()
        self._drained.set()
        self._progress = anyio.Event()
        self.unwritten = 0
        """Bytes queued and not written yet."""
        self.closed = False
        """The descriptor failed or the session ended: nothing more is written."""

    def write(self, data: bytes, done: Callable[[], None] | None = None) -> None:
        """Write ``data`` (one or more whole frames), now as far as the descriptor takes it, the rest later."""
        if self.closed:
            if done is not None:
                done()
            return
        view = memoryview(data)
        if not self._queue:
            view = view[self._write(view) :]
            if not view:
                if done is not None:
                    done()
                return
            if self.closed:
                if done is not None:
                    done()
                return
        if not self._queue:
            self._drained = anyio.Event()
        self._queue.append((view, done))
        self.unwritten += len(view)
        self._waiting.set()

    def _write(self, view: memoryview) -> int:
        try:
            return os.write(self._fd, view)
        except BlockingIOError:
            return 0
        except OSError:
            self.close()
            return 0

    async def run(self) -> None:
        """Write what is queued as the descriptor drains, until :meth:`close` (or a failed write)."""
        while not self.closed:
            if not self._queue:
                self._waiting = anyio.Event()
                await self._waiting.wait()
                continue
            with contextlib.suppress(OSError):
                await anyio.wait_writable(self._fd)
            while self._queue and not self.closed:
                frame: _Frame = self._queue[0]
                view, done = frame
                written = self._write(view)
                if not written:
                    break
                self._progress.set()
                self.unwritten -= written
                if written < len(view):
                    rest: _Frame = (view[written:], done)
                    self._queue[0] = rest
                    break
                self._queue.popleft()
                if done is not None:
                    done()
            if not self._queue:
                self._drained.set()

    async def below(self, limit: int) -> None:
        """Until at most ``limit`` bytes wait to be written (or the writer closed)."""
        while self.unwritten > limit and not self.closed:
            self._progress = anyio.Event()
            await self._progress.wait()

    async def drained(self) -> None:
        """Until nothing is queued (or the writer closed)."""
        while self._queue and not self.closed:
            await self._drained.wait()

    def close(self) -> None:
        """Write nothing more: what is queued is dropped, and its callbacks are called."""
        if self.closed:
            return
        self.closed = True
        queue = self._queue
        self._queue = deque[_Frame]()
        self.unwritten = 0
        for _view, done in queue:
            if done is not None:
                done()
        self._waiting.set()
        self._drained.set()
        self._progress.set()
