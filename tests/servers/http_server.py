"""Fixture MCP server over streamable HTTP on 127.0.0.1: the resources of ``resources_server.py``, served by uvicorn.

The endpoint is ``http://127.0.0.1:PORT/mcp``. Without ``--pin`` the SDK's session manager serves both eras: a
``mode="auto"`` client negotiates 2026-07-28 (no sessions, subscriptions through ``subscriptions/listen``), a
``mode="legacy"`` one 2025-11-25 with an ``Mcp-Session-Id``. ``--pin VERSION`` makes it a handshake-era server:
``server/discover`` (and anything else sent with a 2026 ``Mcp-Protocol-Version`` header) is answered with
JSON-RPC -32601, so an auto client falls back to ``initialize``, which always negotiates VERSION, and the
connection then has a session id. Sessions live in this process only: a new process on the same port answers
the old id with 404 "Session not found".

``--port 0`` (the default) picks a free port. ``--record PATH`` receives JSON lines: ``{"listening": port}`` once
uvicorn serves, ``{"initialize": protocolVersion}`` per ``initialize`` (the negotiated version),
``{"subscribe": uri}`` / ``{"unsubscribe": uri}`` per handshake-era (un)subscribe, ``{"listen": [uri, …]}`` per
2026 ``subscriptions/listen`` stream, and ``{"cancelled": id, "reason": …}`` as in ``resources_server.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import mcp_types as types
import uvicorn
from fixture_support import configure_logging
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from resources_server import Options, ResourcesFixture, build_server

logger = configure_logging("http_server")

HOST = "127.0.0.1"
"""Loopback only."""
PATH = "/mcp"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def parse_options(argv: list[str] | None = None) -> tuple[Options, int]:
    """The resources options and the port."""
    parser = argparse.ArgumentParser(description="Fixture MCP resources server over streamable HTTP on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1; 0 picks a free one")
    parser.add_argument("--count", type=int, default=25, help="number of test://res/{i} resources")
    parser.add_argument("--page-size", type=int, default=10, help="resources per resources/list page")
    parser.add_argument("--record", type=Path, help="append observations here as JSON lines")
    parser.add_argument("--pin", choices=HANDSHAKE_PROTOCOL_VERSIONS, help="handshake only, negotiating this version")
    parser.add_argument("--many-items", type=int, metavar="N", help="resources_server's many-items fault with N items")
    args = parser.parse_args(argv)
    options = Options(
        count=args.count,
        page_size=args.page_size,
        not_found_code=-32002,
        update_every=None,
        list_changed=False,
        fault="many-items" if args.many_items is not None else None,
        answer_version="",
        big_mb=0.0,
        flood_updates=0,
        flood_list_changed=0,
        record=args.record,
        pin=args.pin,
        many=args.many_items or 0,
    )
    return options, args.port


class HttpFixture(ResourcesFixture):
    """The resources fixture, recording handshakes and subscriptions."""

    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        self.record.write({"subscribe": params.uri})
        return await super().subscribe(ctx, params)

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self.record.write({"unsubscribe": params.uri})
        return await super().unsubscribe(ctx, params)

    async def listen(
        self, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        self.record.write({"listen": list(params.notifications.resource_subscriptions or ())})
        return await super().listen(ctx, params)

    async def middleware(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        result = await super().middleware(ctx, call_next)
        if ctx.method == "initialize":
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            self.record.write({"initialize": version or (ctx.params or {}).get("protocolVersion")})
        return result


class HandshakeOnly:
    """ASGI wrapper that makes the SDK's dual-era endpoint a handshake-era server negotiating ``pin``.

    2026-era POSTs (``server/discover``, or a non-handshake ``Mcp-Protocol-Version`` header) get JSON-RPC -32601
    the way a legacy server answers an unknown method; ``initialize`` has its offered version rewritten to ``pin``.
    """

    def __init__(self, app: ASGIApp, pin: str) -> None:
        self.app = app
        self.pin = pin

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        header = dict(scope["headers"]).get(b"mcp-protocol-version", b"").decode("latin-1")
        if isinstance(request, dict):
            if request.get("method") == "server/discover" or (header and header not in HANDSHAKE_PROTOCOL_VERSIONS):
                await self.refuse(request, send)
                return
            if request.get("method") == "initialize" and isinstance(request.get("params"), dict):
                request["params"]["protocolVersion"] = self.pin
                body = json.dumps(request).encode()
                headers = [(k, v) for k, v in scope["headers"] if k != b"content-length"]
                scope = {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def refuse(self, request: dict[str, Any], send: Send) -> None:
        """-32601 for a request, 202 for a notification."""
        if "id" not in request:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        error = {"code": types.METHOD_NOT_FOUND, "message": "Method not found", "data": request.get("method")}
        body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class RecordingServer(uvicorn.Server):
    """Records ``{"listening": port}`` once uvicorn serves (the app's lifespan has started by then)."""

    def __init__(self, config: uvicorn.Config, fixture: HttpFixture, port: int) -> None:
        super().__init__(config)
        self.fixture = fixture
        self.port = port

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if not self.should_exit:
            logger.info("http_server: listening on http://%s:%d%s", HOST, self.port, PATH)
            self.fixture.record.write({"listening": self.port})


def bind(port: int) -> socket.socket:
    """A listening socket on the loopback address (reusable right after a previous server on it was killed)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen(128)
    return sock


def main() -> None:
    """Bind, then serve until killed (SIGINT/SIGTERM shut uvicorn down gracefully)."""
    options, port = parse_options()
    fixture = HttpFixture(options)
    server = build_server(fixture)
    app: ASGIApp = server.streamable_http_app(streamable_http_path=PATH, host=HOST)
    if options.pin is not None:
        app = HandshakeOnly(app, options.pin)
    sock = bind(port)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    uvicorn_server = RecordingServer(config, fixture, sock.getsockname()[1])
    asyncio.run(uvicorn_server.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
