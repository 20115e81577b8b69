"""LSP framing on the editor's pipe: ``Content-Length`` headers and JSON bodies, read strictly but forgivingly.

pygls' own loop allocates whatever ``Content-Length`` announces and, after a malformed header, stays out of step
with the stream. :class:`FrameReader` instead never buffers more than :data:`MAX_MESSAGE_BYTES` and resynchronises
on the next ``Content-Length`` header after garbage. A message announced larger than the cap ends the connection
(:class:`FramingError`): the stream cannot be trusted to be in step after it, and skipping a terabyte would hang.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import BinaryIO, cast

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 64 * 2**20
"""Largest body the editor may send; a larger ``Content-Length`` ends the connection."""
MAX_HEADER_BYTES = 8192
"""Longest header block; a longer one is garbage and skipped."""
CHUNK_BYTES = 65536
"""Bytes asked for per read of the pipe."""

_HEADER_END = b"\r\n\r\n"
_HEADER_LINE = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*")
_CONTENT_LENGTH = re.compile(rb"content-length:", re.IGNORECASE)
_DIGITS = re.compile(rb"[0-9]{1,20}")


class FramingError(Exception):
    """The editor's stream is beyond repair (an oversized message); the connection must end."""


class FrameReader:
    """Splits a byte stream into LSP message bodies.

    ``read_chunk`` returns the next bytes of the stream, ``b""`` at its end. Garbage before a header, a header
    block without a valid ``Content-Length`` and an overlong header are logged and skipped up to the next
    ``Content-Length:``.
    """

    def __init__(
        self,
        read_chunk: Callable[[], Awaitable[bytes]],
        *,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        max_header_bytes: int = MAX_HEADER_BYTES,
    ) -> None:
        self._read_chunk = read_chunk
        self._max_message = max_message_bytes
        self._max_header = max_header_bytes
        self._buffer = bytearray()
        self._eof = False
        self.skipped = 0
        """Bytes skipped as garbage so far."""

    async def next_body(self) -> bytes | None:
        """The next message body; None at the end of the stream. Raises :class:`FramingError`."""
        while True:
            end = self._buffer.find(_HEADER_END, 0, self._max_header + len(_HEADER_END))
            if end < 0:
                if len(self._buffer) > self._max_header:
                    self._resync(f"a header longer than {self._max_header} bytes", 1)
                    continue
                if not await self._fill():
                    self._discard_rest()
                    return None
                continue
            length = self._content_length(bytes(self._buffer[:end]))
            if length is None:
                self._resync("a header without a valid Content-Length", end + len(_HEADER_END))
                continue
            if length > self._max_message:
                raise FramingError(
                    f"the editor announced a message of {length} bytes (the limit is {self._max_message});"
                    " closing the connection"
                )
            start = end + len(_HEADER_END)
            while len(self._buffer) < start + length:
                if not await self._fill():
                    logger.warning("the editor's stream ended inside a message; ignoring its last bytes")
                    self._buffer.clear()
                    return None
            body = bytes(self._buffer[start : start + length])
            del self._buffer[: start + length]
            return body

    async def _fill(self) -> bool:
        if self._eof:
            return False
        chunk = await self._read_chunk()
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    def _content_length(self, header: bytes) -> int | None:
        length: int | None = None
        for line in header.split(b"\r\n"):
            match = _HEADER_LINE.fullmatch(line)
            if match is None:
                return None
            name, value = match.groups()
            if name.lower() != b"content-length":
                continue
            if not _DIGITS.fullmatch(value) or (length is not None and length != int(value)):
                return None
            length = int(value)
        return length

    def _resync(self, what: str, at_least: int) -> None:
        """Drop bytes up to the next ``Content-Length:`` after the first byte; without one, at least ``at_least``
        bytes and everything but a tail that could begin a header."""
        found = _CONTENT_LENGTH.search(self._buffer, 1)
        tail = len(self._buffer) - len(b"content-length:") + 1
        cut = found.start() if found is not None else max(at_least, tail)
        self._note_skipped(cut, what)
        del self._buffer[:cut]

    def _discard_rest(self) -> None:
        if self._buffer.strip():
            self._note_skipped(len(self._buffer), "an incomplete header at the end of the stream")
        self._buffer.clear()

    def _note_skipped(self, count: int, what: str) -> None:
        self.skipped += count
        logger.warning("the editor sent %s; skipped %d bytes", what, count)


def chunk_reader(stream: BinaryIO, pool: ThreadPoolExecutor) -> Callable[[], Awaitable[bytes]]:
    """Read whatever is available from a blocking ``stream`` (up to :data:`CHUNK_BYTES`) without blocking the loop."""
    read1: object = getattr(stream, "read1", None)
    reader = cast(Callable[[int], bytes], read1) if callable(read1) else partial(os.read, stream.fileno())

    def read_chunk() -> Awaitable[bytes]:
        return asyncio.get_running_loop().run_in_executor(pool, reader, CHUNK_BYTES)

    return read_chunk
