"""Plumbing shared by the SDK-based fixture servers: logging, record files and serving stdio in one or both eras.

The fixture scripts run as ``python tests/servers/<name>.py``, so this folder is on ``sys.path`` and they import
this module by its bare name.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import AsyncIterable, Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.server import Server
from mcp.server.models import InitializationOptions
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

Relay = Callable[[], Coroutine[Any, Any, None]]


def configure_logging(name: str) -> logging.Logger:
    """Log this fixture's messages to stderr verbatim (one message a line); the SDK logs only warnings."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    logger = logging.getLogger(name)
    logger.setLevel(logging.INFO)
    return logger


class RecordFile:
    """An append-only JSON-lines file that a test polls; each line is flushed and fsynced before ``write`` returns.

    Without a path every write is a no-op, so fixtures can record unconditionally.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        """Where the lines go, or ``None`` to record nothing."""

    def write(self, entry: Mapping[str, Any]) -> None:
        """Append ``entry`` as one JSON line and make it durable."""
        if self.path is None:
            return
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        with self.path.open("a", encoding="utf-8") as file:
            file.write(line)
            file.flush()
            os.fsync(file.fileno())


def now() -> float:
    """Wall-clock seconds since the epoch, the ``time`` field of record lines."""
    return time.time()


def pin_initialize(
    read_stream: AsyncIterable[SessionMessage | Exception], version: str
) -> tuple[MemoryObjectReceiveStream[SessionMessage | Exception], Relay]:
    """Rewrite the protocol version the client offers in ``initialize`` so the server negotiates ``version``.

    Returns the stream to serve from and the relay coroutine that must run beside the server.
    """
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

    async def relay() -> None:
        async with send:
            async for item in read_stream:
                message = item.message if isinstance(item, SessionMessage) else None
                if isinstance(message, types.JSONRPCRequest) and message.method == "initialize":
                    message.params = {**(message.params or {}), "protocolVersion": version}
                await send.send(item)

    return receive, relay


async def serve_stdio(
    server: Server[Any], init_options: InitializationOptions, *, pin: str | None = None, legacy_only: bool = False
) -> None:
    """Serve ``server`` on stdin/stdout until the client closes stdin.

    By default the connection's era follows the client's first request (``Server.run``). With ``legacy_only`` or
    ``pin`` the server is handshake-only (``serve_loop``: ``server/discover`` gets -32601, so ``mode="auto"``
    clients fall back to ``initialize``); with ``pin`` it also always negotiates that version.
    """
    async with stdio_server() as (read_stream, write_stream):
        if pin is None and not legacy_only:
            await server.run(read_stream, write_stream, init_options)
            return
        async with server.lifespan(server) as state:
            if pin is None:
                await serve_loop(server, read_stream, write_stream, lifespan_state=state, init_options=init_options)
                return
            pinned, relay = pin_initialize(read_stream, pin)
            async with anyio.create_task_group() as tg:
                tg.start_soon(relay)
                await serve_loop(server, pinned, write_stream, lifespan_state=state, init_options=init_options)
                tg.cancel_scope.cancel()
