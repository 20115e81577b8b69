"""One agent's MCP session with one server through the gateway, given a narrow host (:class:`SessionHost`).

The session reads the agent's JSON-RPC lines itself and parses each once into plain values; what it need not interpret
is forwarded as the agent sent it, with the agent's id mapped to the server connection's own (:mod:`.calls`), and the
answer is written back as one frame. What it interprets keeps the protocol's rules, with the SDK's models: the era the
agent speaks (the ``initialize`` handshake, 2024-11-05 … 2025-11-25, or the 2026-07-28 per-request envelope, decided by
the agent's first request), ``initialize`` and ``server/discover``, subscriptions and ``subscriptions/listen``
(:mod:`.listen`), the log level, cancellation and progress, and the server's sampling and elicitation requests for
the agent.

Bounds per agent: at most ``max_requests_in_progress`` requests in progress, each counted until its answer is written
to the agent (past that, the next one is refused at once); reading from the agent stops while more than
``max_unwritten_bytes`` of frames wait to be written; notifications are dropped past ``outbox_size`` or
``outbox_bytes`` waiting. So an agent that never reads holds the sidecar to a bounded amount of memory, and its server
and the other agents never wait for it.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import Counter
from collections.abc import Mapping
from typing import Any, Literal, Protocol, TypeVar, cast

import anyio
import anyio.abc
import mcp_types as types
import pydantic_core
from mcp import MCPError
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from pydantic import BaseModel, ValidationError

from host_bridge.gateway import forwarding
from host_bridge.gateway.audit import GatewayAudit, GatewayAuditEntry, now
from host_bridge.gateway.calls import Calls, RequestId
from host_bridge.gateway.hello import Hello
from host_bridge.gateway.listen import Listens
from host_bridge.gateway.settings import GatewaySettings
from host_bridge.gateway.streams import AgentWriter, LineReader
from host_bridge.hub.connection import ServerConnection
from host_bridge.hub.upstream import LOG_LEVELS, Holder
from host_bridge.jsonrpc_lines import loads

logger = logging.getLogger(__name__)

_R = TypeVar("_R", bound=BaseModel)
Era = Literal["handshake", "modern"]
_ENDING_GRACE = 2.0
"""Seconds the answers already made get to reach an agent that closed its side."""


class SessionHost(Protocol):
    """What a session needs of the gateway that runs it."""

    @property
    def settings(self) -> GatewaySettings:
        """Time-outs and limits in force."""
        ...

    @property
    def audit(self) -> GatewayAudit:
        """The agent-session log."""
        ...

    async def running(self, server_id: str) -> ServerConnection:
        """The server's connection once it is running; raises :class:`~host_bridge.hub.errors.HubError`."""
        ...

    def running_now(self, server_id: str) -> ServerConnection | None:
        """The server's connection when it is running now."""
        ...

    def report_error(self, server_id: str, error: MCPError) -> None:
        """A forwarded request failed (the connection may decide to reconnect)."""
        ...

    def opened(self, session: AgentSession) -> None:
        """The session started: it hears its server's notifications from now on."""
        ...

    async def closed(self, session: AgentSession) -> None:
        """The session ended: what it held upstream is let go."""
        ...

    async def subscribe(self, session: AgentSession, holder: Holder, uri: str) -> None:
        """Hold ``uri`` for ``holder`` (the session, or one of its listen streams); raises :class:`MCPError`."""
        ...

    async def unsubscribe(self, holder: Holder, server_id: str, uri: str) -> None:
        """Let go of ``holder``'s subscription to ``uri``."""
        ...

    async def release(self, holder: Holder) -> None:
        """Let go of everything ``holder`` holds."""
        ...

    async def set_log_level(self, session: AgentSession, level: types.LoggingLevel) -> None:
        """Record the log level ``session`` asked for."""
        ...

    def log_level(self, session: AgentSession) -> types.LoggingLevel | None:
        """The log level ``session`` asked for, if any."""
        ...


class AgentSession:
    """One agent's MCP session with one server, through the gateway."""

    def __init__(self, host: SessionHost, hello: Hello, connection: ServerConnection, peer_uid: int | None) -> None:
        self.id = uuid.uuid4().hex
        """Names this session in the audit log."""
        self.server_id = hello.server
        """The server it uses."""
        self.agent = hello.agent
        """Who attached."""
        self.era: Era | None = None
        """The protocol era the agent speaks, once its first request said."""
        self.protocol_version: str | None = None
        """The revision negotiated with the agent (handshake era) or named by its requests (2026-07-28)."""
        self.requests: Counter[str] = Counter()
        """Requests forwarded, by method."""
        self.outbox_bytes = 0
        """Bytes of notifications queued for the agent and not written yet."""
        self.agent_closed = True
        """Whether the session ended because the agent closed its side (once it ended)."""
        self.reason = "the agent closed the connection"
        """Why the session ended (once it ended), as the audit log says it."""
        self.host = host
        """The gateway that runs the session."""
        self.connection = connection
        """The server's connection, as of the last request."""
        self.calls = Calls(self)
        """The agent's requests in progress upstream, and the server's requests in progress with the agent."""
        self.listens = Listens(self)
        """The agent's ``subscriptions/listen`` streams (2026-07-28)."""
        self._peer_uid = peer_uid
        self._client: types.Implementation | None = None
        self._client_capabilities: types.ClientCapabilities | None = None
        self._writer: AgentWriter | None = None
        self._outbox_count = 0
        self._dropping = 0

    @property
    def unwritten(self) -> int:
        """Bytes of answers and notifications waiting to be written to the agent."""
        return 0 if self._writer is None else self._writer.unwritten

    @property
    def calls_in_flight(self) -> int:
        """Forwarded requests not answered by the server yet."""
        return self.calls.upstream

    @property
    def settings(self) -> GatewaySettings:
        """Time-outs and limits in force."""
        return self.host.settings

    # Life.

    async def run(
        self, read_fd: int, write_fd: int, pending: bytes, *, control: anyio.abc.ByteReceiveStream | None = None
    ) -> None:
        """Serve the agent on two non-blocking descriptors (the connection's socket for both, or the agent's own stdin
        and stdout that ``attach`` handed over) until the agent or the gateway closes them; with ``control`` (the
        connection, after a handover) also until ``attach`` closes it."""
        self._audit("attached")
        self.host.opened(self)
        writer = self._writer = AgentWriter(write_fd)
        reader = LineReader(read_fd, pending, self.settings.max_line_bytes)
        try:
            async with anyio.create_task_group() as tasks:
                self.calls.tasks = tasks
                tasks.start_soon(writer.run)
                with anyio.CancelScope() as reading:
                    if control is not None:
                        tasks.start_soon(self._watch, control, reading)
                    while (line := await reader.receive()) is not None:
                        if writer.unwritten > self.settings.max_unwritten_bytes:
                            await writer.below(self.settings.max_unwritten_bytes)
                        self._receive(line)
                    if reader.overflowed:
                        self.agent_closed = False
                        self.reason = f"the agent sent a message longer than {self.settings.max_line_bytes} bytes"
                if self.agent_closed:
                    self.calls.cancel_all()
                else:
                    self.calls.end_all(self.reason)
                with anyio.move_on_after(_ENDING_GRACE):
                    await self.calls.idle()
                    await writer.drained()
                tasks.cancel_scope.cancel()
        except Exception as error:
            self.agent_closed = False
            self.reason = f"the session failed: {type(error).__name__}: {error}"
            logger.exception("[%s] an agent session failed", self.server_id)
        finally:
            writer.close()
            self.calls.close()
            with anyio.CancelScope(shield=True):
                await self.listens.close_all()
                await self.host.closed(self)
            self._audit("detached", reason=self.reason)

    async def _watch(self, control: anyio.abc.ByteReceiveStream, reading: anyio.CancelScope) -> None:
        """Until ``attach`` closes the connection (it exited): then stop reading the agent."""
        try:
            while await control.receive():
                pass
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        if not reading.cancel_called:
            self.agent_closed = False
            self.reason = "the attach process exited"
            reading.cancel()

    def _audit(self, event: str, *, reason: str | None = None) -> None:
        config = self.connection.config
        client = self._client
        self.host.audit.append(
            GatewayAuditEntry(
                time=now(),
                event=cast(Any, event),
                session=self.id,
                server=self.server_id,
                source=config.source,
                fingerprint=config.fingerprint,
                agent=self.agent if event == "attached" else None,
                peer_uid=self._peer_uid if event == "attached" else None,
                client_name=client.name if client else None,
                client_version=client.version if client else None,
                protocol_version=self.protocol_version if event != "attached" else None,
                requests=dict(self.requests) if event == "detached" else None,
                reason=reason,
            )
        )

    # What the agent sends.

    def _receive(self, line: bytes) -> None:
        """Handle one line from the agent; never waits (work that does runs in a task of its own)."""
        try:
            message = loads(line)
        except ValueError as error:
            self.error(None, types.PARSE_ERROR, f"Parse error: {error}")
            return
        if not isinstance(message, dict):
            self.error(None, types.INVALID_REQUEST, "MCP Host Bridge takes one JSON-RPC message per line (no batches)")
            return
        message = cast(dict[str, Any], message)
        method = message.get("method")
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            self.error(message.get("id"), types.INVALID_PARAMS, "params must be an object")
            return
        if method is None:
            self.calls.answered(message)
        elif not isinstance(method, str):
            self.error(None, types.INVALID_REQUEST, "method must be a string")
        elif "id" not in message:
            self._notified(method, cast(dict[str, Any] | None, params))
        elif not _valid_id(request_id := message["id"]):
            self.error(None, types.INVALID_REQUEST, "the id of a request must be a string or an integer")
        else:
            self._request(request_id, method, cast(dict[str, Any] | None, params))

    def _notified(self, method: str, params: dict[str, Any] | None) -> None:
        if method == "notifications/cancelled" and params is not None:
            request_id = params.get("requestId")
            if isinstance(request_id, str | int):
                self.calls.cancel(request_id)
        # notifications/initialized needs nothing; roots and anything else an agent says go nowhere.

    def _request(self, request_id: RequestId, method: str, params: dict[str, Any] | None) -> None:
        if self.era is None and not self._choose_era(request_id, method, params):
            return
        if self.era == "modern":
            if method in forwarding.HANDSHAKE_ONLY:
                self.error(request_id, types.METHOD_NOT_FOUND, f"{method} does not exist in revision 2026-07-28")
                return
            route = classify_inbound_request({"method": method, "params": params})
            if isinstance(route, InboundLadderRejection):
                self.error(request_id, route.code, route.message, route.data)
                return
        elif method in forwarding.MODERN_ONLY:
            self.error(request_id, types.METHOD_NOT_FOUND, "Method not found", method)
            return
        elif method == "initialize":
            self._initialize(request_id, params)
            return
        elif self.protocol_version is None and method != "ping":
            self.error(request_id, types.INVALID_REQUEST, "the agent must send initialize first")
            return
        if method == "ping":
            self.answer(request_id, {})
        elif method in forwarding.FORWARDED:
            self.calls.forward(request_id, method, params)
        elif method == "server/discover":
            self.answer(request_id, forwarding.discover_result(self.connection))
        elif method == "subscriptions/listen":
            self.calls.start(request_id, method, lambda: self.listens.listen(request_id, params), counted=False)
        elif method in ("resources/subscribe", "resources/unsubscribe"):
            self.calls.start(request_id, method, lambda: self._subscription(method, params))
        elif method == "logging/setLevel":
            self.calls.start(request_id, method, lambda: self._set_level(params))
        else:
            self.error(request_id, types.METHOD_NOT_FOUND, "Method not found", method)

    def _choose_era(self, request_id: RequestId, method: str, params: dict[str, Any] | None) -> bool:
        """The agent's first request decides its era: the 2026-07-28 envelope on anything but ``initialize``."""
        meta = params.get("_meta") if params else None
        if method == "initialize" or not isinstance(meta, dict) or types.PROTOCOL_VERSION_META_KEY not in meta:
            self.era = "handshake"
            return True
        route = classify_inbound_request({"method": method, "params": params})
        if isinstance(route, InboundLadderRejection):
            self.error(request_id, route.code, route.message, route.data)
            return False
        self.era = "modern"
        self.protocol_version = route.protocol_version
        try:
            self._client = types.Implementation.model_validate(route.client_info) if route.client_info else None
        except ValidationError:
            self._client = None
        self._audit("initialized")
        return True

    def _initialize(self, request_id: RequestId, params: dict[str, Any] | None) -> None:
        try:
            init = types.InitializeRequestParams.model_validate(params or {}, by_name=False)
        except ValidationError as error:
            self.error(request_id, types.INVALID_PARAMS, f"Invalid initialize parameters: {error}")
            return
        version = forwarding.negotiate(init.protocol_version)
        self.answer(request_id, forwarding.initialize_result(self.connection, version))
        self.protocol_version = version
        self._client = init.client_info
        self._client_capabilities = init.capabilities
        self._audit("initialized")

    async def _subscription(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        model = types.SubscribeRequestParams if method == "resources/subscribe" else types.UnsubscribeRequestParams
        uri = model.model_validate(params or {}, by_name=False).uri
        if method == "resources/subscribe":
            await self.calls.connection()
            await self.host.subscribe(self, self, uri)
        else:
            await self.host.unsubscribe(self, self.server_id, uri)
        return {}

    async def _set_level(self, params: dict[str, Any] | None) -> dict[str, Any]:
        level = types.SetLevelRequestParams.model_validate(params or {}, by_name=False).level
        await self.calls.connection()
        await self.host.set_log_level(self, level)
        return {}

    # What the agent is sent.

    def answer(self, request_id: RequestId, result: Mapping[str, Any], *, done: Any = None) -> None:
        """Write the result of the agent's request ``request_id``; ``done`` is called once it is written."""
        self.write({"jsonrpc": "2.0", "id": request_id, "result": result}, done)

    def error(self, request_id: Any, code: int, message: str, data: Any = None, *, done: Any = None) -> None:
        """Write an error answer to the agent's request ``request_id`` (``None`` when it could not be read)."""
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.write({"jsonrpc": "2.0", "id": request_id, "error": error}, done)

    def write(self, frame: Mapping[str, Any], done: Any = None) -> None:
        """Write one JSON-RPC message to the agent (queued while the agent does not read)."""
        writer = self._writer
        if writer is None:
            if done is not None:
                done()
            return
        writer.write(_frame(frame), done)

    def notify(self, method: str, params: Mapping[str, Any] | None, size: int | None = None) -> None:
        """Queue a notification for the agent; ``size`` is its params' length as JSON (measured when not given).

        Notifications waiting to be written are bounded by count (``outbox_size``) and by bytes (``outbox_bytes``).
        Past either, the notification is dropped, with one warning naming the agent and the server until the agent
        catches up, rather than the session ended: the server is never made to wait and other agents never notice,
        and a server that floods cannot end the sessions of agents that merely read slowly. The agent that does not
        read misses what was dropped (as it would miss a log message the server never sent).
        """
        if self._writer is None or self.protocol_version is None:
            return
        if size is None:
            size = notification_size(params)
        settings = self.settings
        if self._outbox_count >= settings.outbox_size or (
            self.outbox_bytes and self.outbox_bytes + size > settings.outbox_bytes
        ):
            self._dropped(method)
            return
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            frame["params"] = params
        self._outbox_count += 1
        self.outbox_bytes += size

        def written() -> None:
            self._outbox_count -= 1
            self.outbox_bytes -= size

        self.write(frame, written)
        if self._dropping:
            logger.info(
                "[%s] %s takes notifications again; %d were dropped", self.server_id, self._who(), self._dropping
            )
            self._dropping = 0

    def _dropped(self, method: str) -> None:
        if not self._dropping:
            settings = self.settings
            logger.warning(
                "[%s] %s is not reading its notifications: dropped a %s from MCP server %r, and drop the next ones "
                "until it catches up (it has %d queued, %d bytes; the limits are %d and %d bytes)",
                self.server_id,
                self._who(),
                method,
                self.server_id,
                self._outbox_count,
                self.outbox_bytes,
                settings.outbox_size,
                settings.outbox_bytes,
            )
        self._dropping += 1

    def _who(self) -> str:
        agent = self.agent
        name = f" ({agent.parent_name})" if agent.parent_name else ""
        return f"agent session {self.id} of attach pid {agent.pid}{name}"

    # What the server sends (from the gateway).

    def updated(self, uri: str) -> None:
        """A resource this session subscribed to (handshake era) changed."""
        self.notify("notifications/resources/updated", {"uri": uri})

    def list_changed(self, method: str, params: Mapping[str, Any] | None, size: int) -> None:
        """The server's tools, prompts or resources changed: the agent (or its listen streams) hear of it."""
        if self.era == "modern":
            self.listens.list_changed(method)
        else:
            self.notify(method, params, size)

    def log_message(self, level: types.LoggingLevel, params: Mapping[str, Any] | None, size: int) -> None:
        """A log message of the server, passed on at or above the level the agent asked for (handshake era only: a
        2026-07-28 agent asks for log messages per request)."""
        if self.era != "modern" and self.wants_log(level):
            self.notify("notifications/message", params, size)

    def wants_log(self, level: types.LoggingLevel) -> bool:
        """Whether a log message at ``level`` is at or above what this agent asked for (every one until it asks)."""
        asked = self.host.log_level(self)
        return asked is None or LOG_LEVELS.index(level) >= LOG_LEVELS.index(asked)

    def server_restarted(self) -> None:
        """The server restarted (it may have changed): the agent should list everything again."""
        for method in (
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed",
        ):
            self.list_changed(method, None, 0)

    # Requests from the server.

    async def ask(self, request: types.ServerRequest, capability: str, result_type: type[_R]) -> _R | types.ErrorData:
        """Pass the server's sampling or elicitation request to this agent; its answer, or a refusal."""
        if self.era == "modern":
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=f"MCP Host Bridge refused {request.method}: the agent using this server speaks revision "
                "2026-07-28, whose clients take no requests from their server",
            )
        declared = self._client_capabilities
        if declared is None or getattr(declared, capability, None) is None:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=f"MCP Host Bridge refused {request.method}: the agent using this server did not declare "
                f"{capability} support",
            )
        params = request.params.model_dump(by_alias=True, mode="json", exclude_none=True) if request.params else None
        answer = await self.calls.ask(request.method, params)
        if "error" in answer:
            return types.ErrorData.model_validate(answer["error"], by_name=False)
        return result_type.model_validate(answer.get("result"), by_name=False)


def notification_size(params: Mapping[str, Any] | None) -> int:
    """The length of ``params`` as JSON: what a queued notification holds the sidecar to, near enough."""
    return len(pydantic_core.to_json(params, serialize_unknown=True)) if params else 0


def sentence(message: str) -> str:
    """A hub error as the agent sees it: naming the product, since the agent does not know it talks to a bridge."""
    return f"MCP Host Bridge: {message}"


def _valid_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _frame(message: Mapping[str, Any]) -> bytes:
    """One message as a line. A string that is not Unicode (a lone surrogate a peer sent as an escape) is written
    escaped again."""
    try:
        return pydantic_core.to_json(message) + b"\n"
    except pydantic_core.PydanticSerializationError:
        return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"
