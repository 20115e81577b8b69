"""Raw loopback HTTP stub for streamable-HTTP transport faults (no SDK, hand-written minimal HTTP/1.1).

Listens on ``127.0.0.1:PORT`` (``--port 0``, the default, picks a free port) and accepts any path.

* Default mode, ``drop-sse`` (docs/security.md D1): ``server/discover`` is answered with JSON-RPC -32601, so a
  ``mode="auto"`` client falls back to the handshake; ``initialize`` is answered correctly as JSON (negotiating
  ``--version``, default 2025-11-25, with an ``Mcp-Session-Id``); notifications get 202. Every later request is
  answered ``200`` with ``Content-Type: text/event-stream``, one SSE comment, and then the connection is closed in
  the middle of the chunked body, without a response. ``GET`` (the standalone stream) gets 405, ``DELETE`` 200.
* ``--redirect-to URL`` (D2): every request, whatever its method, is answered ``307`` with ``Location: URL``.
* ``--gzip-bomb MB`` (D4, H2): as the default mode up to ``initialize``; every later request is answered ``200``
  ``application/json`` with ``Content-Encoding: gzip``: a valid JSON-RPC answer (an empty list) followed by MB
  megabytes of spaces, which compress about a thousandfold.

``--record PATH`` receives JSON lines: ``{"listening": port}`` once bound, then one
``{"request": {"http": "POST", "path": "/mcp", "method": "initialize" | null, "host": "127.0.0.1:…"}}`` per HTTP
request (before it is answered), ``{"initialize": version}`` per answered ``initialize``, ``{"dropped": method}``
per dropped stream and ``{"redirected": method}`` per redirect (``method`` is the JSON-RPC method, or the HTTP
method when the body carried none). A second stub serves well as a redirect target that must see no request.
"""

from __future__ import annotations

import argparse
import json
import zlib
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream
from fixture_support import RecordFile, configure_logging

logger = configure_logging("http_stub")

HOST = "127.0.0.1"
"""Loopback only."""
MAX_HEAD = 64 * 1024
MAX_BODY = 4 * 2**20
REASONS = {200: "OK", 202: "Accepted", 307: "Temporary Redirect", 400: "Bad Request", 405: "Method Not Allowed"}


class Stub:
    """Answers each connection's requests in order, per the mode."""

    def __init__(self, record: RecordFile, version: str, redirect_to: str | None, gzip_bomb_mb: float = 0) -> None:
        self.record = record
        self.version = version
        self.redirect_to = redirect_to
        self.gzip_bomb_mb = gzip_bomb_mb
        self.sessions = 0

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        """Serve one keep-alive connection until the client closes it or a stream is dropped."""
        async with stream:
            reader = BufferedByteReceiveStream(stream)
            try:
                while await self.one_request(stream, reader):
                    pass
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.DelimiterNotFound, anyio.BrokenResourceError):
                return
            except OSError as error:
                logger.info("http_stub: connection ended: %s", error)

    async def one_request(self, stream: anyio.abc.SocketStream, reader: BufferedByteReceiveStream) -> bool:
        """Read and answer one request; returns whether the connection stays open."""
        head = (await reader.receive_until(b"\r\n\r\n", MAX_HEAD)).decode("latin-1")
        request_line, *header_lines = head.split("\r\n")
        http_method, _, rest = request_line.partition(" ")
        path = rest.partition(" ")[0]
        headers: dict[str, str] = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            await stream.send(response(400, body=b"chunked request bodies are not supported", close=True))
            return False
        length = int(headers.get("content-length") or 0)
        if length > MAX_BODY:
            await stream.send(response(400, body=b"body too large", close=True))
            return False
        body = await reader.receive_exactly(length) if length else b""
        message = parse_json(body)
        rpc_method = message.get("method") if isinstance(message, dict) else None
        self.record.write(
            {"request": {"http": http_method, "path": path, "method": rpc_method, "host": headers.get("host")}}
        )
        if self.redirect_to is not None:
            self.record.write({"redirected": rpc_method or http_method})
            await stream.send(response(307, {"Location": self.redirect_to}))
            return True
        if http_method == "GET":
            await stream.send(response(405, {"Allow": "POST, DELETE"}))
            return True
        if http_method == "DELETE":
            await stream.send(response(200))
            return True
        if http_method != "POST" or not isinstance(message, dict):
            await stream.send(response(400, body=b"expected a JSON-RPC message in a POST"))
            return True
        if "id" not in message:
            await stream.send(response(202))
            return True
        if rpc_method == "server/discover":
            error = {"code": -32601, "message": "Method not found", "data": rpc_method}
            await stream.send(json_response({"jsonrpc": "2.0", "id": message["id"], "error": error}))
            return True
        if rpc_method == "initialize":
            self.sessions += 1
            result = {
                "protocolVersion": self.version,
                "capabilities": {"resources": {"subscribe": True, "listChanged": False}},
                "serverInfo": {"name": "http-stub", "version": "1.0"},
            }
            self.record.write({"initialize": self.version})
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            await stream.send(json_response(answer, {"Mcp-Session-Id": f"stub-session-{self.sessions}"}))
            return True
        if self.gzip_bomb_mb:
            self.record.write({"bomb": rpc_method})
            bomb = gzip_bomb(message["id"], int(self.gzip_bomb_mb * 2**20))
            headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
            await stream.send(response(200, headers, bomb))
            return True
        self.record.write({"dropped": rpc_method})
        logger.info("http_stub: dropping the SSE stream of %s", rpc_method)
        await stream.send(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + chunk(b": stub\n\n")
        )
        return False


def gzip_bomb(request_id: Any, padding: int) -> bytes:
    """Gzip of a JSON-RPC answer to ``request_id`` followed by ``padding`` spaces, compressed a piece at a time."""
    answer = {"jsonrpc": "2.0", "id": request_id, "result": {"resources": [], "resourceTemplates": [], "contents": []}}
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(json.dumps(answer).encode())]
    spaces = b" " * 2**20
    for start in range(0, padding, len(spaces)):
        parts.append(packer.compress(spaces[: padding - start]))
    parts.append(packer.flush())
    return b"".join(parts)


def parse_json(body: bytes) -> Any:
    """The JSON in ``body``, or None."""
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def response(status: int, headers: dict[str, str] | None = None, body: bytes = b"", *, close: bool = False) -> bytes:
    """A complete HTTP/1.1 response."""
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def json_response(message: dict[str, Any], headers: dict[str, str] | None = None) -> bytes:
    """200 with a JSON body."""
    return response(200, {"Content-Type": "application/json", **(headers or {})}, json.dumps(message).encode())


async def serve(port: int, stub: Stub) -> None:
    """Bind, record the port, serve forever."""
    listener = await anyio.create_tcp_listener(local_host=HOST, local_port=port, reuse_port=False)
    bound = listener.listeners[0].extra(anyio.abc.SocketAttribute.local_port)
    logger.info("http_stub: listening on http://%s:%d", HOST, bound)
    stub.record.write({"listening": bound})
    async with listener:
        await listener.serve(stub.handle)


def main() -> None:
    parser = argparse.ArgumentParser(description="Raw loopback HTTP stub for streamable-HTTP faults.")
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1; 0 picks a free one")
    parser.add_argument("--record", type=Path, help="append observations here as JSON lines")
    parser.add_argument("--version", default="2025-11-25", help="protocolVersion answered to initialize")
    parser.add_argument("--redirect-to", metavar="URL", help="answer every request with 307 to URL")
    parser.add_argument("--gzip-bomb", type=float, metavar="MB", default=0, help="answer with MB of gzipped padding")
    args = parser.parse_args()
    anyio.run(serve, args.port, Stub(RecordFile(args.record), args.version, args.redirect_to, args.gzip_bomb))


if __name__ == "__main__":
    main()
