"""Item counts of MCP answers, checked where their JSON is first parsed, before the SDK builds a model per item.

A byte cap does not bound memory: a page of a million tiny resources fits in a few tens of MB of JSON, yet the SDK
validates it into a million pydantic models (gigabytes) before the broker sees it. :class:`AnswerLimits` remembers
the method of every request sent to a server and, given the parsed JSON of an answer, replaces an answer with too
many items by a JSON-RPC error for the same request, so the request fails at once with a sentence that names the
count and the limit. The stdio transport checks each line as it parses it; over streamable HTTP the SDK parses the
body itself, so :func:`limited_streams` checks each message before the session validates its result.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.message import SessionMessage

logger = logging.getLogger(__name__)

ANSWER_OVER_LIMIT = -32070
"""Code of the error that stands in for an answer with too many items (implementation-defined server error range)."""
DEFAULT_MAX_PAGE_ITEMS = 10_000
"""Most resources or resource templates one listing answer may hold."""
DEFAULT_MAX_READ_CONTENTS = 1_000
"""Most content items one ``resources/read`` answer may hold."""


@dataclass(frozen=True)
class _Counted:
    field: str
    """The result's list."""
    what: str
    """What its items are, for people."""
    read: bool
    """A read (else a listing page)."""


_COUNTED: Mapping[str, _Counted] = {
    "resources/list": _Counted("resources", "resources", read=False),
    "resources/templates/list": _Counted("resourceTemplates", "resource templates", read=False),
    "resources/read": _Counted("contents", "content items", read=True),
}
_MAX_PENDING = 4096
"""Requests remembered at most (an answer never sent must not grow the map for ever)."""


class AnswerLimits:
    """Item caps for the answers of one server's connection.

    :meth:`sent` sees every message to the server, :meth:`check` the parsed JSON of every message from it.
    """

    def __init__(self, server: str, *, max_page_items: int, max_read_contents: int) -> None:
        self.server = server
        """The server's id, for the log."""
        self.max_page_items = max_page_items
        """Most resources or templates in one listing answer."""
        self.max_read_contents = max_read_contents
        """Most content items in one read answer."""
        self._pending: dict[int | str, _Counted] = {}

    def sent(self, message: types.JSONRPCMessage) -> None:
        """Remember a counted request, or forget one the client cancelled."""
        if isinstance(message, types.JSONRPCRequest):
            self.asked(message.id, message.method)
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            cancelled: object = (message.params or {}).get("requestId")
            if isinstance(cancelled, int | str):
                self._pending.pop(cancelled, None)

    def asked(self, request_id: int | str, method: str) -> None:
        """Remember request ``request_id`` of ``method`` when its answer is counted."""
        counted = _COUNTED.get(method)
        if counted is not None:
            if len(self._pending) >= _MAX_PENDING:
                self._pending.pop(next(iter(self._pending)))
            self._pending[request_id] = counted

    def check(self, value: object) -> types.JSONRPCError | None:
        """The error that replaces ``value`` (one parsed message) when it answers a counted request with too many
        items; ``None`` when it may pass."""
        if type(value) is not dict:
            return None
        message = cast(dict[str, Any], value)
        if "method" in message:
            return None
        msg_id: object = message.get("id")
        if not isinstance(msg_id, int | str) or isinstance(msg_id, bool):
            return None
        counted = self._pending.pop(msg_id, None)
        result: object = message.get("result")
        if counted is None or type(result) is not dict:
            return None
        items: object = cast(dict[str, Any], result).get(counted.field)
        limit = self.max_read_contents if counted.read else self.max_page_items
        if type(items) is not list or len(cast(list[Any], items)) <= limit:
            return None
        count = len(cast(list[Any], items))
        if counted.read:
            text = (
                f"its resources/read answer held {count} {counted.what}, over host_bridge's limit of {limit} per read; "
                "the resource was not read (ask the server's author to return fewer contents per resource)"
            )
        else:
            method = next(name for name, known in _COUNTED.items() if known is counted)
            text = (
                f"its {method} answer held {count} {counted.what} in one page, over host_bridge's limit of {limit} "
                "per page; the page was refused (the server must split its list into pages with nextCursor)"
            )
        logger.warning("[%s] MCP server %r: %s", self.server, self.server, text)
        return types.JSONRPCError(jsonrpc="2.0", id=msg_id, error=types.ErrorData(code=ANSWER_OVER_LIMIT, message=text))

    def check_message(self, message: types.JSONRPCMessage) -> types.JSONRPCMessage:
        """:meth:`check` for a message the SDK already parsed (streamable HTTP): the message, or its replacement."""
        if not isinstance(message, types.JSONRPCResponse):
            return message
        if message.id not in self._pending:
            return message
        replacement = self.check({"id": message.id, "result": message.result})
        return message if replacement is None else replacement


class _LimitedReceive(anyio.abc.ObjectReceiveStream[SessionMessage | Exception]):
    """The SDK's read stream of a transport, with every answer checked by :class:`AnswerLimits` on the way."""

    def __init__(self, inner: Any, limits: AnswerLimits) -> None:
        self._inner = inner
        self._limits = limits

    @property
    def last_context(self) -> Any:
        """The sender's context of the last message (the SDK's dispatcher runs handlers in it)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        item: SessionMessage | Exception = await self._inner.receive()
        if isinstance(item, SessionMessage):
            checked = self._limits.check_message(item.message)
            if checked is not item.message:
                return SessionMessage(checked)
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()


class _LimitedSend(anyio.abc.ObjectSendStream[SessionMessage]):
    """The SDK's write stream of a transport, telling :class:`AnswerLimits` what is asked."""

    def __init__(self, inner: Any, limits: AnswerLimits) -> None:
        self._inner = inner
        self._limits = limits

    async def send(self, item: SessionMessage) -> None:
        self._limits.sent(item.message)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()


def limited_streams(streams: tuple[Any, Any], limits: AnswerLimits) -> tuple[Any, Any]:
    """A transport's (read, write) streams with answers checked against ``limits``."""
    read, write = streams
    return _LimitedReceive(read, limits), _LimitedSend(write, limits)
