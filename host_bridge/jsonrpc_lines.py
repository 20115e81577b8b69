"""JSON-RPC messages as newline-delimited lines (MCP's stdio framing): lines split under a hard cap, each parsed once
into the SDK's message.

The stdio transport reads a server's stdout with it, and the gateway reads an agent's connection with it. The cap
per line means a peer writing an endless line is disconnected with a clear reason instead of growing our memory
(docs/security.md C9). Each line is parsed once into Python objects and validated with the SDK's own JSON-RPC models,
without the SDK reader's extra copies of the text (a 16 MiB line costs 16 MiB of parsed message, not four times that).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol

import mcp_types as types
import pydantic_core
from mcp.shared.message import SessionMessage

DEFAULT_MAX_LINE_BYTES = 64 * 2**20
"""Longest line (without its newline) a peer may write before it is disconnected."""


class MessageCheck(Protocol):
    """Looks at each parsed message before the SDK validates it (:class:`host_bridge.hub.limits.AnswerLimits`)."""

    def check(self, value: object) -> types.JSONRPCError | None:
        """The error that replaces ``value`` (one parsed message), or ``None`` when it may pass."""
        ...


class LineSplitter:
    """Splits a byte stream into lines on ``b"\\n"``, refusing any line longer than ``max_bytes``.

    Lines come back without their ``b"\\n"``; a ``b"\\r"`` before it is kept (JSON reads it as whitespace). A line
    is joined from its pieces once, when its newline arrives, and the pieces are dropped right after. (Growing one
    ``bytearray`` instead costs more: reallocations copy it, and the JSON parser copies a mutable buffer again.)
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.max_bytes = max_bytes
        """The cap on one line, in bytes, newline excluded."""
        self._parts: list[bytes] = []
        self._size = 0
        self.overflowed = False
        """A line went over the cap: nothing after it can be trusted, the connection must end."""

    @property
    def pending(self) -> int:
        """Bytes of an unfinished line held so far."""
        return self._size

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines completed by ``chunk``, in order.

        A line over the cap sets :attr:`overflowed` and ends the feed there (the line and the rest of the chunk are
        forgotten); the lines completed before it are still returned, for the caller to deliver before it stops.
        """
        lines: list[bytes] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if self._over(self._size + end - start):
                return lines
            piece = chunk[start:end]
            if self._parts:
                self._parts.append(piece)
                piece = b"".join(self._parts)
                self._parts, self._size = [], 0
            lines.append(piece)
            start = end + 1
        if start < len(chunk) and not self._over(self._size + len(chunk) - start):
            self._parts.append(chunk[start:] if start else chunk)
            self._size += len(chunk) - start
        return lines

    def _over(self, size: int) -> bool:
        if size > self.max_bytes:
            self._parts, self._size = [], 0
            self.overflowed = True
        return self.overflowed


def parse_line(line: bytes, limits: MessageCheck | None = None) -> SessionMessage | Exception:
    """One line from the peer as the SDK's message, or the parse error as a value (the SDK reader's contract).

    The JSON is read into Python objects once and validated with the SDK's JSON-RPC union in Python mode, which
    keeps the parsed strings instead of copying them per union member as JSON-mode validation does. A line that is
    not valid UTF-8 is read again with the bad bytes replaced, as the SDK reader does with ``errors="replace"``.
    An answer with more items than ``limits`` allow becomes an error for its request before anything is validated.
    """
    message = parse_or_take(line, limits)
    assert message is not None
    return message


def parse_or_take(
    line: bytes, limits: MessageCheck | None = None, take: Callable[[object], bool] | None = None
) -> SessionMessage | Exception | None:
    """:func:`parse_line`, with ``take`` given each parsed message first (after ``limits``): ``None`` when it took
    the message, which is then never validated into the SDK's models."""
    try:
        value = loads(line)
        if limits is not None and (refusal := limits.check(value)) is not None:
            if take is not None and take(refusal.model_dump(by_alias=True, mode="json", exclude_none=True)):
                return None
            return SessionMessage(refusal)
        if take is not None and take(value):
            return None
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(value, by_name=False))
    except ValueError as error:
        return error


def loads(line: bytes) -> Any:
    """``line`` as Python objects, a line that is not valid UTF-8 read with the bad bytes replaced and a lone surrogate
    escape kept; raises ``ValueError`` when it is not JSON."""
    try:
        return pydantic_core.from_json(line)
    except ValueError:
        if line.isascii() and b"\\u" not in line:
            raise
    text = line.decode("utf-8", "replace")
    try:
        return pydantic_core.from_json(text)
    except ValueError:
        if "\\u" not in text:
            raise
    # A lone surrogate escape ("\\ud800") is valid JSON text that pydantic's parser refuses; refusing the line
    # would leave its request unanswered until it times out. The standard parser keeps it as a lone surrogate.
    return json.loads(text, parse_constant=_not_json)


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not valid JSON")
