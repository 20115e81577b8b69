"""MCP over a gateway connection: newline-delimited JSON-RPC, as on stdio, read and written as the SDK's streams.

The framing is the stdio transport's: lines split with the hub's :class:`~host_bridge.hub.stdio_transport.LineSplitter`
(a hard cap per line) and parsed with its :func:`~host_bridge.hub.stdio_transport.parse_line`, which hands the SDK
a message validated by its own JSON-RPC models (or the parse error, as the SDK's readers do).
"""

from __future__ import annotations

from collections import deque
from types import TracebackType
from typing import Self

import anyio
import anyio.abc
from mcp.shared.message import SessionMessage

from host_bridge.hub.stdio_transport import DEFAULT_MAX_LINE_BYTES, LineSplitter, parse_line

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


class MessageReader:
    """The SDK's read stream over the connection: each line parsed when the dispatcher asks for the next message.

    Reading in the dispatcher's own task (no pump task and memory stream in between) saves two hand-overs per message.
    """

    def __init__(self, stream: anyio.abc.ByteReceiveStream, pending: bytes, max_line_bytes: int) -> None:
        self._stream = stream
        self._splitter = LineSplitter(max_line_bytes)
        self._lines: deque[bytes] = deque(self._splitter.feed(pending))
        self._ended = False

    async def receive(self) -> SessionMessage | Exception:
        """The next message (or its parse error); :class:`anyio.EndOfStream` once the peer closed."""
        while True:
            while self._lines:
                line = self._lines.popleft()
                if line and not line.isspace():
                    return parse_line(line)
            if self._ended or self._splitter.overflowed:
                raise anyio.EndOfStream
            try:
                chunk = await self._stream.receive(_RECEIVE_BYTES)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                self._ended = True
                continue
            self._lines.extend(self._splitter.feed(chunk))

    async def aclose(self) -> None:
        """Nothing to release: the connection belongs to the gateway."""
        self._ended = True

    def __aiter__(self) -> MessageReader:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        await self.aclose()


class MessageWriter:
    """The SDK's write stream over the connection: each message written by the task that sends it, one at a time."""

    def __init__(self, stream: anyio.abc.ByteSendStream) -> None:
        self._stream = stream
        self._lock = anyio.Lock()
        self._closed = False

    async def send(self, item: SessionMessage, /) -> None:
        """Write one message as a line; a peer that went away makes it :class:`anyio.ClosedResourceError`."""
        if self._closed:
            raise anyio.ClosedResourceError
        data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8", "replace") + b"\n"
        async with self._lock:
            try:
                await self._stream.send(data)
            except (anyio.BrokenResourceError, OSError):
                self._closed = True
                raise anyio.ClosedResourceError from None

    async def aclose(self) -> None:
        """Stop writing (the connection itself is closed by the gateway)."""
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        await self.aclose()


def message_streams(
    stream: anyio.abc.ByteStream, pending: bytes = b"", *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> tuple[MessageReader, MessageWriter]:
    """The SDK's stream pair over ``stream``; ``pending`` are bytes already read past the hello line.

    The read side ends at end of input, or after a line longer than ``max_line_bytes`` (nothing after it can be
    framed).
    """
    return MessageReader(stream, pending, max_line_bytes), MessageWriter(stream)
