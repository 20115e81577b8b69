"""Requests passed through to a server as plain JSON-RPC frames, beside the SDK's session on the same connection.

The agent gateway forwards requests it does not interpret, and passes their answers back as the server sent them.
Through the SDK's session each one would cost a task, a memory stream, a tracing span, a request clock, a typed
request built and dumped, and an answer validated into the SDK's models before it is written out again. A
:class:`Passage` writes the request itself on the connection's stdio transport, with an id of its own
(``host-bridge-pass-N``, which the SDK's integer ids never take), and takes the answer off the transport's parsed
lines before the SDK validates them (:meth:`take`), handing it to the sender's callback in the reading task: no task
switch between the server's answer and the agent's. Item limits on answers
(:class:`~host_bridge.hub.limits.AnswerLimits`) hold for these requests as for the SDK's. Everything else on the
connection stays the SDK session's.

A passage is open only over a stdio transport (which exposes :class:`PassageWriter`); the caller keeps its own
time-outs, and :meth:`forget` tells the server a request it gave up on is cancelled.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol, cast

import mcp_types as types
import pydantic_core

logger = logging.getLogger(__name__)

Answer = Callable[[dict[str, Any]], None]
"""Hears the server's answer message (with ``result`` or ``error``), on the event loop; it must not block."""
Streams = tuple[Any, Any]
"""The transport's stream of messages from the server, and of messages to it (as ``mcp.Client`` takes them)."""

PREFIX = "host-bridge-pass-"
"""Ids of passed requests start with this."""
CLOSED = "Connection closed"
"""The error message of a request whose connection ended before it was answered (as the SDK words it)."""


class PassageWriter(Protocol):
    """What a transport's write stream offers a passage (the stdio transport's :class:`LineWriter`)."""

    def write_request(self, request_id: str, method: str, line: bytes) -> bool:
        """Write a request's line at once; ``False`` when the stream is closed."""
        ...

    def write_notification(self, line: bytes) -> bool:
        """Write a notification's line at once; ``False`` when the stream is closed."""
        ...


class PassageReader(Protocol):
    """What a transport's read stream offers a passage (the stdio transport's :class:`LineReader`)."""

    take: Callable[[object], bool] | None
    """Given each parsed message before the SDK sees it; ``True`` when it took the message."""


class Passage:
    """Plain JSON-RPC requests on one server connection (see the module docstring)."""

    def __init__(self, server_id: str) -> None:
        self.server_id = server_id
        """The server, for the log."""
        self._writer: PassageWriter | None = None
        self._waiting: dict[str, Answer] = {}
        self._count = 0

    @property
    def open(self) -> bool:
        """Whether requests can be sent now (a stdio session's transport is open)."""
        return self._writer is not None

    def wrap(self, transport: AbstractAsyncContextManager[Streams]) -> AbstractAsyncContextManager[Streams]:
        """``transport``, with the passage open on it while it is (give this to ``mcp.Client``)."""
        return self._wrapped(transport)

    @asynccontextmanager
    async def _wrapped(self, transport: AbstractAsyncContextManager[Streams]) -> AsyncGenerator[Streams]:
        async with transport as streams:
            read_stream, write_stream = streams
            usable = hasattr(read_stream, "take") and hasattr(write_stream, "write_request")
            if usable:
                cast(PassageReader, read_stream).take = self.take
                self._writer = cast(PassageWriter, write_stream)
            try:
                yield streams
            finally:
                self.close()
                if usable:
                    cast(PassageReader, read_stream).take = None

    def close(self) -> None:
        """Send nothing more (the session is ending): the requests still waiting are answered with an error."""
        self._writer = None
        self._fail_all()

    def send(self, method: str, params: dict[str, Any] | None, answer: Answer) -> str | None:
        """Send ``method`` with ``params``; ``answer`` hears the server's answer message. The request's id, or
        ``None`` when the passage is closed (nothing was sent).

        Raises :class:`pydantic_core.PydanticSerializationError` when ``params`` holds what JSON cannot carry (a lone
        surrogate): nothing is sent.
        """
        writer = self._writer
        if writer is None:
            return None
        self._count += 1
        request_id = f"{PREFIX}{self._count}"
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params:
            frame["params"] = params
        line = pydantic_core.to_json(frame) + b"\n"
        self._waiting[request_id] = answer
        if not writer.write_request(request_id, method, line):
            del self._waiting[request_id]
            return None
        return request_id

    def forget(self, request_id: str, reason: str) -> None:
        """Stop waiting for ``request_id`` and tell the server it is cancelled (its answer, if any, is dropped)."""
        if self._waiting.pop(request_id, None) is None:
            return
        writer = self._writer
        if writer is not None:
            frame = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request_id, "reason": reason},
            }
            writer.write_notification(pydantic_core.to_json(frame) + b"\n")

    def take(self, value: object) -> bool:
        """Whether ``value`` (one parsed message from the server) answers a request of the passage's, which it then
        hands to that request's callback."""
        if type(value) is not dict:
            return False
        message = cast(dict[str, Any], value)
        request_id = message.get("id")
        if type(request_id) is not str or not request_id.startswith(PREFIX) or "method" in message:
            return False
        answer = self._waiting.pop(request_id, None)
        if answer is None:
            logger.debug("[%s] dropped a late answer to %s", self.server_id, request_id)
            return True
        try:
            answer(message)
        except Exception:
            logger.exception("[%s] passing an answer on failed", self.server_id)
        return True

    def _fail_all(self) -> None:
        waiting, self._waiting = self._waiting, {}
        if not waiting:
            return
        closed = {"error": {"code": types.CONNECTION_CLOSED, "message": CLOSED}}
        for answer in waiting.values():
            try:
                answer(closed)
            except Exception:
                logger.exception("[%s] passing an answer on failed", self.server_id)
