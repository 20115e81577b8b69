"""Fixture MCP server that asks the client for its roots and records every answer.

Handshake era: after ``notifications/initialized`` and on every ``notifications/roots/list_changed`` it sends
``roots/list`` and records the answer. 2026-07-28 era (no server-to-client requests): reading
``recorder://roots/latest`` returns an ``InputRequiredResult`` asking for the roots, and the retried read records
them. Every answer is appended to ``--record`` as one JSON line and logged as ``roots: N`` on stderr; the history is
the resource ``recorder://roots``.

Usage: ``python tests/servers/roots_recorder.py [--record PATH] [--pin VERSION] [--spam-roots N]
[--undeclared-requests] [--request-timeout SECONDS]``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import anyio
import mcp_types as types
from fixture_support import RecordFile, configure_logging, now, serve_stdio
from mcp.server import Server, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

logger = configure_logging("roots_recorder")

HISTORY_URI = "recorder://roots"
LATEST_URI = "recorder://roots/latest"
ROOTS_KEY = "roots"
"""The ``inputRequests`` key under which the 2026 era asks for the roots."""


class MadeUpRequest(types.Request[types.RequestParams | None, Literal["foo/bar"]]):
    """A server-to-client request with a method no MCP revision defines."""

    method: Literal["foo/bar"] = "foo/bar"
    params: types.RequestParams | None = None


@dataclass(frozen=True)
class Options:
    """Command-line options."""

    record: Path | None
    pin: str | None
    spam_roots: int
    undeclared_requests: bool
    request_timeout: float


def parse_options(argv: list[str] | None = None) -> Options:
    """Parse the command line."""
    parser = argparse.ArgumentParser(
        description="Fixture MCP server that asks the client for its roots and records every answer."
    )
    parser.add_argument("--record", type=Path, help="append every roots answer here as a JSON line")
    parser.add_argument("--pin", choices=HANDSHAKE_PROTOCOL_VERSIONS, help="handshake only, negotiating this version")
    parser.add_argument("--spam-roots", type=int, default=0, metavar="N", help="send N roots/list after initialized")
    parser.add_argument(
        "--undeclared-requests", action="store_true", help="send sampling, elicitation and foo/bar after initialized"
    )
    parser.add_argument("--request-timeout", type=float, default=10.0, help="seconds to wait for each client answer")
    args = parser.parse_args(argv)
    return Options(args.record, args.pin, args.spam_roots, args.undeclared_requests, args.request_timeout)


def roots_entry(version: str, trigger: str, result: types.ListRootsResult) -> dict[str, Any]:
    """The record line for one roots answer."""
    roots = [{"uri": str(root.uri), "name": root.name} for root in result.roots]
    return {"time": now(), "protocolVersion": version, "trigger": trigger, "roots": roots}


def error_code(exc: Exception) -> int | str:
    """The JSON-RPC code of a failed request, or ``"invalid"`` when the answer did not validate."""
    return exc.code if isinstance(exc, MCPError) else "invalid"


class RootsRecorder:
    """Asks the client for its roots, keeps every answer and records it."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.record = RecordFile(options.record)
        self.history: list[dict[str, Any]] = []
        """Every roots answer (and failed request) in arrival order."""
        self._lock = anyio.Lock()

    def add(self, entry: dict[str, Any]) -> None:
        """Keep, log and record one answer (logged first, so stderr has the line once the record has it)."""
        self.history.append(entry)
        if "roots" in entry:
            logger.info("roots: %d", len(entry["roots"]))
        else:
            logger.info("roots/list failed: %s", entry["error"])
        self.record.write(entry)

    async def request_roots(self, session: ServerSession) -> types.ListRootsResult:
        """Send one ``roots/list`` to the client."""
        return await session.send_request(
            types.ListRootsRequest(), types.ListRootsResult, request_read_timeout_seconds=self.options.request_timeout
        )

    async def fetch(self, session: ServerSession, trigger: str) -> None:
        """Ask for the roots and record the answer; fetches are serialized so the file keeps their order."""
        async with self._lock:
            version = session.protocol_version
            try:
                result = await self.request_roots(session)
            except (MCPError, ValidationError) as exc:
                self.add({"time": now(), "protocolVersion": version, "trigger": trigger, "error": error_code(exc)})
                return
            self.add(roots_entry(version, trigger, result))

    async def spam(self, session: ServerSession, count: int) -> None:
        """Send ``count`` concurrent ``roots/list`` requests and record how many were answered."""
        outcomes: list[bool] = []

        async def one() -> None:
            try:
                await self.request_roots(session)
            except (MCPError, ValidationError):
                outcomes.append(False)
            else:
                outcomes.append(True)

        try:
            async with anyio.create_task_group() as tg:
                for _ in range(count):
                    tg.start_soon(one)
        finally:
            logger.info("spam: %d of %d answered", outcomes.count(True), count)
            self.record.write({"spam": count, "answered": outcomes.count(True), "failed": outcomes.count(False)})

    async def undeclared(self, session: ServerSession) -> None:
        """Send requests the client never declared and record the error code of each answer (``"ok"`` if none)."""
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hello"))
        schema: dict[str, Any] = {"type": "object", "properties": {}}
        requests: list[tuple[types.Request[Any, Any], type[types.Result]]] = [
            (
                types.CreateMessageRequest(params=types.CreateMessageRequestParams(messages=[message], max_tokens=5)),
                types.CreateMessageResult,
            ),
            (
                types.ElicitRequest(params=types.ElicitRequestFormParams(message="hello", requested_schema=schema)),
                types.ElicitResult,
            ),
            (MadeUpRequest(), types.EmptyResult),
        ]
        codes: dict[str, int | str] = {}
        for request, result_type in requests:
            try:
                await session.send_request(
                    cast(types.ServerRequest, request),
                    result_type,
                    request_read_timeout_seconds=self.options.request_timeout,
                )
            except (MCPError, ValidationError) as exc:
                codes[request.method] = error_code(exc)
            else:
                codes[request.method] = "ok"
        logger.info("undeclared requests answered with %s", codes)
        self.record.write({"undeclared": codes})

    async def on_initialized(self, ctx: ServerRequestContext[Any], params: types.NotificationParams) -> None:
        """Handshake done: fetch the roots, then run the optional request bursts."""
        await self.fetch(ctx.session, "initialized")
        if self.options.spam_roots:
            await self.spam(ctx.session, self.options.spam_roots)
        if self.options.undeclared_requests:
            await self.undeclared(ctx.session)

    async def on_roots_changed(self, ctx: ServerRequestContext[Any], params: types.NotificationParams) -> None:
        """The client says its roots changed: fetch them again."""
        await self.fetch(ctx.session, "list_changed")

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        """The history and the latest answer."""
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=HISTORY_URI, name="roots-history", mime_type="application/json"),
                types.Resource(uri=LATEST_URI, name="roots-latest", mime_type="application/json"),
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        """Serve the history; in the 2026 era reading the latest answer first asks the client for its roots."""
        if params.uri == HISTORY_URI:
            return json_contents(params.uri, self.history)
        if params.uri != LATEST_URI:
            raise MCPError(code=-32002, message="Resource not found", data={"uri": params.uri})
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return json_contents(params.uri, self.history[-1] if self.history else None)
        answer = (params.input_responses or {}).get(ROOTS_KEY)
        if answer is None:
            return types.InputRequiredResult(
                input_requests={ROOTS_KEY: types.ListRootsRequest()}, request_state="recorder-roots"
            )
        result = answer if isinstance(answer, types.ListRootsResult) else as_roots(answer)
        entry = roots_entry(ctx.protocol_version, "input_required", result)
        self.add(entry)
        return json_contents(params.uri, entry)


def as_roots(answer: types.InputResponse) -> types.ListRootsResult:
    """Re-read an input response that pydantic parsed as another union member."""
    return types.ListRootsResult.model_validate(answer.model_dump(by_alias=True, mode="json"))


def json_contents(uri: str, value: Any) -> types.ReadResourceResult:
    """A read result holding ``value`` as JSON text."""
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=json.dumps(value))]
    )


def build_server(recorder: RootsRecorder) -> Server[Any]:
    """The low-level server wired to ``recorder``."""
    server: Server[Any] = Server(
        "roots-recorder",
        version="1.0",
        on_list_resources=recorder.list_resources,
        on_read_resource=recorder.read_resource,
    )
    server.add_notification_handler("notifications/initialized", types.NotificationParams, recorder.on_initialized)
    server.add_notification_handler(
        "notifications/roots/list_changed", types.NotificationParams, recorder.on_roots_changed
    )
    return server


async def main(options: Options) -> None:
    """Serve until the client closes stdin."""
    server = build_server(RootsRecorder(options))
    await serve_stdio(server, server.create_initialization_options(), pin=options.pin)


if __name__ == "__main__":
    anyio.run(main, parse_options())
