"""MCP over a gateway connection: newline-delimited JSON-RPC, as on stdio, read and written as the SDK's streams.

The framing is the stdio transport's (:mod:`host_bridge.jsonrpc_lines`): lines split with a
:class:`~host_bridge.jsonrpc_lines.LineSplitter` (a hard cap per line) and parsed with
:func:`~host_bridge.jsonrpc_lines.parse_line`, which hands the SDK a message validated by its own JSON-RPC models (or
the parse error, as the SDK's readers do).
"""

from __future__ import annotations

import os
from collections import deque

import anyio
import anyio.abc
import anyio.lowlevel
from mcp.shared.message import SessionMessage

from host_bridge.jsonrpc_lines import DEFAULT_MAX_LINE_BYTES, LineSplitter, parse_line

_RECEIVE_BYTES = 1 << 20


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


class MessageReader(anyio.abc.ObjectReceiveStream[SessionMessage | Exception]):
    """The SDK's read stream over the connection: each line parsed when the dispatcher asks for the next message.

    Reading in the dispatcher's own task (no pump task and memory stream in between) saves two hand-overs per message,
    and reading the non-blocking descriptor directly (waiting for it only when it has nothing) saves the event loop
    pass that a byte stream's ``receive`` makes before every read. Before reading again after a message, it lets the
    other tasks run first: the dispatcher has just started the handler of that message, which then forwards it before
    this task looks for the next one (and an agent that never stops sending cannot starve the other tasks).
    """

    def __init__(self, fd: int, pending: bytes, max_line_bytes: int) -> None:
        self._fd = fd
        self._splitter = LineSplitter(max_line_bytes)
        self._lines: deque[bytes] = deque(self._splitter.feed(pending))
        self._ended = False
        self._delivered = False

    async def receive(self) -> SessionMessage | Exception:
        """The next message (or its parse error); :class:`anyio.EndOfStream` once the peer closed."""
        while True:
            while self._lines:
                line = self._lines.popleft()
                if line and not line.isspace():
                    self._delivered = True
                    return parse_line(line)
            if self._ended or self._splitter.overflowed:
                raise anyio.EndOfStream
            if self._delivered:
                self._delivered = False
                await anyio.lowlevel.checkpoint()
                continue
            try:
                chunk = os.read(self._fd, _RECEIVE_BYTES)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            except OSError:
                chunk = b""
            if not chunk:
                self._ended = True
                continue
            self._lines.extend(self._splitter.feed(chunk))

    async def aclose(self) -> None:
        """Nothing to release: the descriptor belongs to the gateway."""
        self._ended = True


class MessageWriter(anyio.abc.ObjectSendStream[SessionMessage]):
    """The SDK's write stream over the connection: each message written by the task that sends it, whole and in order.

    A message that fits in the descriptor's buffer is written at once, without a pass of the event loop; one that
    does not is finished under a lock (later messages queue behind it) while the descriptor drains.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = anyio.Lock()
        self._queued = 0
        self._closed = False

    async def send(self, item: SessionMessage) -> None:
        """Write one message as a line; a peer that went away makes it :class:`anyio.ClosedResourceError`."""
        if self._closed:
            raise anyio.ClosedResourceError
        data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8", "replace") + b"\n"
        if not self._queued:
            written = self._write(data)
            if written == len(data):
                return
            data = data[written:]
        self._queued += 1
        try:
            async with self._lock:
                view = memoryview(data)
                while view:
                    await anyio.wait_writable(self._fd)
                    if self._closed:
                        raise anyio.ClosedResourceError
                    view = view[self._write(view) :]
        except BaseException:
            # Part of a message may be out: nothing after it could be framed.
            self._closed = True
            raise
        finally:
            self._queued -= 1

    def _write(self, data: bytes | memoryview) -> int:
        try:
            return os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except OSError:
            self._closed = True
            raise anyio.ClosedResourceError from None

    async def aclose(self) -> None:
        """Stop writing (the descriptor itself is closed by the gateway)."""
        self._closed = True


def message_streams(
    read_fd: int, write_fd: int, pending: bytes = b"", *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> tuple[MessageReader, MessageWriter]:
    """The SDK's stream pair over two non-blocking descriptors (the same one for a socket); ``pending`` are bytes
    already read past the hello line.

    The read side ends at end of input, or after a line longer than ``max_line_bytes`` (nothing after it can be
    framed).
    """
    return MessageReader(read_fd, pending, max_line_bytes), MessageWriter(write_fd)
