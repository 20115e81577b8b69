"""Raw stdio JSON-RPC fixture for framing and wire faults that the SDK server cannot produce.

Hand-written newline-delimited JSON-RPC with no MCP SDK on the server side. Apart from its fault, every mode
behaves like a minimal handshake-era server: ``initialize`` (echoing the offered version when it is a known
handshake revision, else 2025-06-18), ``server/discover`` → -32601, ``ping``, ``resources/list`` (one resource
``test://raw/1``), ``resources/templates/list`` (none), ``resources/read`` (text); anything else → -32601.

Usage: ``python tests/servers/raw_faults.py MODE [VERSION] [--mb N] [--flawed-first]``; see ``MODES``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, BinaryIO, cast

MODES = ("garbage", "badutf8", "huge-line", "no-newline", "late-response", "version", "stdout-log", "lone-surrogate")
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
DEFAULT_VERSION = "2025-06-18"
CHUNK = 1 << 16
LONE_SURROGATE = "\ud800"
"""Valid in JSON text as the escape ``\\ud800`` (json.dumps writes it so), but not a Unicode character."""
UNKNOWN_IDS = (987654, "no-such-id")
"""Ids of the responses late-response sends for requests that never existed."""

logger = logging.getLogger("raw_faults")

Message = dict[str, Any]
RequestId = int | str


def parse_options(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the command line; the ``version`` mode needs its VERSION argument."""
    parser = argparse.ArgumentParser(description="Raw stdio JSON-RPC fixture for framing and wire faults.")
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("version", nargs="?", help="protocolVersion answered by the version mode")
    parser.add_argument("--mb", type=float, default=20.0, help="size of the huge-line answer in MB")
    parser.add_argument(
        "--flawed-first", action="store_true", help="garbage: send every malformed copy before the correct answer"
    )
    options = parser.parse_args(argv)
    if options.mode == "version" and not options.version:
        parser.error("the version mode needs a VERSION")
    return options


def resource(tag: str) -> dict[str, str]:
    """A listed resource whose URI and name carry ``tag``."""
    return {"uri": f"test://raw/{tag}", "name": f"raw-{tag}", "mimeType": "text/plain"}


class RawServer:
    """Reads requests line by line and writes hand-framed answers, with the mode's fault."""

    def __init__(self, options: argparse.Namespace, out: BinaryIO) -> None:
        self.mode: str = options.mode
        self.version: str | None = options.version
        self.huge_bytes = int(options.mb * 1024 * 1024)
        self.flawed_first: bool = options.flawed_first
        self.out = out
        self.hanging_reads: set[RequestId] = set()
        """Ids of ``resources/read`` requests late-response has not answered yet."""

    def write_raw(self, data: bytes) -> None:
        """Write bytes to stdout as they are."""
        self.out.write(data)
        self.out.flush()

    def write(self, message: Any) -> None:
        """Write one JSON value as a line."""
        self.write_raw(json.dumps(message).encode() + b"\n")

    def result(self, request_id: RequestId, result: Message) -> None:
        """Answer a request."""
        self.write({"jsonrpc": "2.0", "id": request_id, "result": result})

    def error(self, request_id: RequestId, code: int, message: str) -> None:
        """Fail a request."""
        self.write({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    def serve(self, lines: BinaryIO) -> None:
        """Handle every line until stdin closes."""
        if self.mode == "garbage":
            self.write_raw(b"garbage fixture starting up (this banner is not JSON)\n")
        if self.mode == "stdout-log":
            self.write_raw(b"Server started!\n")
        for line in lines:
            try:
                message = json.loads(line)
            except ValueError:
                logger.warning("ignoring a line that is not JSON: %r", line[:80])
                continue
            if isinstance(message, dict):
                self.handle(cast(Message, message))

    def handle(self, message: Message) -> None:
        """Route one message; responses from the client are ignored."""
        method, request_id = message.get("method"), message.get("id")
        if method is None:
            return
        if request_id is None:
            self.notification(method, message.get("params") or {})
            return
        if self.mode == "stdout-log":
            self.write_raw(f"[info] handling {method}\n".encode())
        handler = self.handlers().get(method)
        if handler is None:
            self.error(request_id, -32601, "Method not found")
        else:
            handler(request_id, message.get("params") or {})

    def handlers(self) -> dict[str, Callable[[RequestId, Message], None]]:
        """Request handlers by method."""
        return {
            "initialize": self.initialize,
            "ping": lambda request_id, params: self.result(request_id, {}),
            "resources/list": self.list_resources,
            "resources/templates/list": lambda request_id, params: self.result(request_id, {"resourceTemplates": []}),
            "resources/read": self.read_resource,
        }

    def notification(self, method: str, params: Message) -> None:
        """late-response answers a read once the client cancels it."""
        cancelled = params.get("requestId")
        if method == "notifications/cancelled" and isinstance(cancelled, int | str) and cancelled in self.hanging_reads:
            self.answer_late(cancelled)

    def initialize_result(self, params: Message) -> Message:
        """The ``initialize`` answer for the offered version."""
        offered = params.get("protocolVersion")
        version = self.version or (offered if offered in HANDSHAKE_VERSIONS else DEFAULT_VERSION)
        return {
            "protocolVersion": version,
            "capabilities": {"resources": {}},
            "serverInfo": {"name": f"raw-faults-{self.mode}", "version": "0"},
        }

    def initialize(self, request_id: RequestId, params: Message) -> None:
        """Answer ``initialize``; no-newline then starts its endless line."""
        result = self.initialize_result(params)
        if self.mode == "garbage":
            self.garbage_answer(
                request_id, result, lambda tag: {**result, "serverInfo": {"name": f"garbage-{tag}", "version": "0"}}
            )
            return
        if self.mode == "badutf8":
            self.write_raw(b"\xff\xfe\n")
        self.result(request_id, result)
        if self.mode == "no-newline":
            self.endless_line()

    def list_resources(self, request_id: RequestId, params: Message) -> None:
        """Answer ``resources/list`` with the mode's fault."""
        if self.mode == "garbage":
            self.garbage_answer(request_id, {"resources": [resource("ok")]}, lambda tag: {"resources": [resource(tag)]})
        elif self.mode == "huge-line":
            self.huge_answer(request_id)
        elif self.mode == "lone-surrogate":
            self.result(request_id, {"resources": [{**resource("1"), "name": f"lone {LONE_SURROGATE} surrogate"}]})
        else:
            if self.mode == "badutf8":
                self.write_raw(b"\xff\xfe\n")
            self.result(request_id, {"resources": [resource("1")]})

    def read_resource(self, request_id: RequestId, params: Message) -> None:
        """Answer ``resources/read``; late-response holds the answer until the client cancels."""
        if self.mode == "late-response":
            self.hanging_reads.add(request_id)
            logger.info("late-response: holding read %r until it is cancelled", request_id)
            return
        self.result(request_id, self.read_result(params.get("uri", "")))

    def read_result(self, uri: str) -> Message:
        """The text contents of ``uri`` (lone-surrogate: with a lone low surrogate, once short, once over 64 KiB)."""
        if self.mode == "lone-surrogate":
            texts = ["short \udc00 text", "\udc00" + "y" * 70_000]
            return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": text} for text in texts]}
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": f"raw content of {uri}"}]}

    def answer_late(self, request_id: RequestId) -> None:
        """After the cancel: the late answer, a duplicate of it and answers to ids never used."""
        self.hanging_reads.discard(request_id)
        late = self.read_result("test://raw/late")
        self.result(request_id, late)
        self.result(request_id, late)
        for unknown in UNKNOWN_IDS:
            self.result(unknown, late)
        logger.info("late-response: answered cancelled read %r late, twice, and ids %r", request_id, UNKNOWN_IDS)

    def garbage_answer(self, request_id: RequestId, good: Message, marked: Callable[[str], Message]) -> None:
        """Malformed messages around the correct answer; each malformed one carries a marker naming its flaw.

        Lines no JSON-RPC parser accepts come first. The two flaws the SDK client does accept for a pending
        request (an ``id`` of ``"1"`` for ``1``, and ``result`` beside ``error``, read as the error) come after the
        correct answer, as stray duplicates, unless ``--flawed-first``.
        """
        self.write_raw(b"this line is not JSON\n")
        self.write({"id": request_id, "result": marked("missing-jsonrpc")})
        self.write([{"jsonrpc": "2.0", "id": request_id, "result": marked("batch")}])
        if not self.flawed_first:
            self.result(request_id, good)
        self.write({"jsonrpc": "2.0", "id": str(request_id), "result": marked("string-id")})
        self.write(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": marked("result-and-error"),
                "error": {"code": -32603, "message": "result and error"},
            }
        )
        if self.flawed_first:
            self.result(request_id, good)

    def huge_answer(self, request_id: RequestId) -> None:
        """A valid ``resources/list`` answer on one line of about ``--mb`` MB, written in chunks."""
        head = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"resources": [resource("huge")]}})
        prefix, suffix = head[: -len("}]}}")] + ', "description": "', '"}]}}\n'
        self.write_raw(prefix.encode())
        remaining = self.huge_bytes
        while remaining > 0:
            size = min(CHUNK, remaining)
            self.write_raw(b"x" * size)
            remaining -= size
        self.write_raw(suffix.encode())

    def endless_line(self) -> None:
        """Start a notification and never finish its line; returns only when the reader goes away."""
        self.write_raw(b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "')
        while True:
            self.write_raw(b"x" * CHUNK)


def main() -> None:
    """Serve stdin/stdout until the client closes either."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    server = RawServer(parse_options(), sys.stdout.buffer)
    try:
        server.serve(sys.stdin.buffer)
    except BrokenPipeError:
        logger.info("client closed stdout; exiting")
        os._exit(0)


if __name__ == "__main__":
    main()
