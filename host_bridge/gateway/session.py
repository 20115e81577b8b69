"""One agent's MCP session with one server through the gateway, given a narrow host (:class:`SessionHost`).

The session runs the SDK's server side (:func:`host_bridge.gateway.forwarding.forwarding_server`, driven by its
loop-mode runner) on the agent's descriptors, forwards to the server's one live ``mcp.Client``, and queues the
notifications meant for the agent in a bounded outbox. When the agent and the server speak the same protocol revision,
results are passed on as the server sent them (no second validation); otherwise the SDK shapes them for the agent's
revision. Per agent, at most ``max_requests_in_progress`` requests are in progress, and ``outbox_size``
notifications or ``outbox_bytes`` bytes of them wait to be written.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar, cast

import anyio
import anyio.abc
import mcp_types as types
import pydantic_core
from anyio.streams.memory import MemoryObjectSendStream
from mcp import Client, MCPError
from mcp.server import ServerRequestContext
from mcp.server.connection import Connection
from mcp.server.runner import ServerRunner, aclose_shielded
from mcp.shared.dispatcher import CallOptions, DispatchContext, OnRequest, ProgressFnT
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from host_bridge.gateway.audit import GatewayAudit, GatewayAuditEntry, now
from host_bridge.gateway.forwarding import (
    CALLER,
    FORWARDED,
    INPUT_METHODS,
    Forwarded,
    forwarding_server,
    initialization_options,
)
from host_bridge.gateway.hello import Hello
from host_bridge.gateway.settings import GatewaySettings
from host_bridge.gateway.streams import message_streams
from host_bridge.gateway.upstream import outgoing_params, raw_request
from host_bridge.hub.connection import ServerConnection
from host_bridge.hub.errors import HubError
from host_bridge.hub.upstream import LOG_LEVELS

logger = logging.getLogger(__name__)

_R = TypeVar("_R", bound=BaseModel)
_T = TypeVar("_T")

_Queued = tuple[str, dict[str, Any] | None, int]
"""A notification for an agent: method, params, and the params' length as JSON."""

_FORWARDING = forwarding_server()


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
        """The server's connection once it is running; raises :class:`HubError` when it does not come."""
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

    async def subscribe(self, session: AgentSession, uri: str) -> None:
        """Hold ``uri`` for ``session``; raises :class:`MCPError` (a limit, or the server's refusal)."""
        ...

    async def unsubscribe(self, session: AgentSession, uri: str) -> None:
        """Let go of ``session``'s subscription to ``uri``."""
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
        self.calls_in_flight = 0
        """Forwarded requests not answered yet."""
        self.requests: Counter[str] = Counter()
        """Requests forwarded, by method."""
        self.connection: Connection | None = None
        """The SDK's view of the agent's side, while the session runs."""
        self._host = host
        self._server = connection
        self._peer_uid = peer_uid
        self._in_progress = 0
        self._client: types.Implementation | None = None
        self._outbox: MemoryObjectSendStream[_Queued] | None = None
        self._dropping = 0
        self.outbox_bytes = 0
        """Bytes of notifications (their params as JSON) queued for the agent and not written yet."""
        self.agent_closed = True
        """Whether the session ended because the agent closed its side (once it ended)."""
        self.reason = "the agent closed the connection"
        """Why the session ended (once it ended), as the audit log says it."""

    # Life.

    async def run(
        self, read_fd: int, write_fd: int, pending: bytes, *, control: anyio.abc.ByteReceiveStream | None = None
    ) -> None:
        """Serve the agent on two non-blocking descriptors (the connection's socket for both, or the agent's own stdin
        and stdout that ``attach`` handed over) until the agent or the gateway closes them; with ``control`` (the
        connection, after a handover) also until ``attach`` closes it."""
        settings = self._host.settings
        self._audit("attached")
        self._host.opened(self)
        outbox, inbox = anyio.create_memory_object_stream[_Queued](settings.outbox_size)
        self._outbox = outbox
        try:
            read, write = message_streams(read_fd, write_fd, pending, max_line_bytes=settings.max_line_bytes)
            async with anyio.create_task_group() as tasks:
                dispatcher: JSONRPCDispatcher[Any] = JSONRPCDispatcher(
                    read, write, inline_methods=frozenset({"initialize"})
                )
                self.connection = Connection.for_loop(dispatcher)

                async def deliver() -> None:
                    async with inbox:
                        async for method, params, size in inbox:
                            assert self.connection is not None
                            try:
                                await self.connection.notify(method, params)
                            finally:
                                self.outbox_bytes -= size

                async def watch(control: anyio.abc.ByteReceiveStream) -> None:
                    with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                        while await control.receive():
                            pass
                    self.agent_closed = False
                    self.reason = "the attach process exited"
                    tasks.cancel_scope.cancel()

                tasks.start_soon(deliver)
                if control is not None:
                    tasks.start_soon(watch, control)
                forwarded: Forwarded = self
                runner = ServerRunner(
                    _FORWARDING, self.connection, forwarded, init_options=initialization_options(self._server)
                )
                try:
                    await dispatcher.run(self._requests(runner.on_request), runner.on_notify)
                finally:
                    await aclose_shielded(self.connection)
                tasks.cancel_scope.cancel()
        except Exception as error:
            self.agent_closed = False
            self.reason = f"the session failed: {type(error).__name__}: {error}"
            logger.exception("[%s] an agent session failed", self.server_id)
        finally:
            outbox.close()
            self._outbox = None
            await self._host.closed(self)
            self._audit("detached", reason=self.reason)

    def _audit(self, event: str, *, reason: str | None = None) -> None:
        config = self._server.config
        client = self._client
        self._host.audit.append(
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
                protocol_version=self.connection.protocol_version if self.connection and event != "attached" else None,
                requests=dict(self.requests) if event == "detached" else None,
                reason=reason,
            )
        )

    def initialized(self, params: Mapping[str, Any] | None) -> None:
        """The agent's ``initialize`` was answered: record who it says it is."""
        try:
            init = types.InitializeRequestParams.model_validate(params or {}, by_name=False)
        except ValidationError:
            return
        self._client = init.client_info
        self._audit("initialized")

    # Notifications to the agent.

    def notify(self, method: str, params: dict[str, Any] | None, size: int | None = None) -> None:
        """Queue a notification for the agent; ``size`` is its params' length as JSON (measured when not given).

        The outbox is bounded by count (``outbox_size``) and by bytes (``outbox_bytes``). Past either, the notification
        is dropped, with one warning naming the agent and the server until the agent catches up, rather than the
        session ended: the server is never made to wait and other agents never notice, and a server that floods
        cannot end the sessions of agents that merely read slowly. The agent that does not read misses what was
        dropped (as it would miss a log message the server never sent).
        """
        if self._outbox is None or self.connection is None or not self.connection.initialize_accepted:
            return
        if size is None:
            size = notification_size(params)
        settings = self._host.settings
        if self.outbox_bytes and self.outbox_bytes + size > settings.outbox_bytes:
            self._dropped(method)
            return
        try:
            self._outbox.send_nowait((method, params, size))
        except anyio.WouldBlock:
            self._dropped(method)
            return
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return
        self.outbox_bytes += size
        if self._dropping:
            logger.info(
                "[%s] %s takes notifications again; %d were dropped", self.server_id, self._who(), self._dropping
            )
            self._dropping = 0

    def _dropped(self, method: str) -> None:
        if not self._dropping:
            settings = self._host.settings
            logger.warning(
                "[%s] %s is not reading its notifications: dropped a %s from MCP server %r, and drop the next ones "
                "until it catches up (it has %d queued, %d bytes; the limits are %d and %d bytes)",
                self.server_id,
                self._who(),
                method,
                self.server_id,
                self._outbox.statistics().current_buffer_used if self._outbox else 0,
                self.outbox_bytes,
                settings.outbox_size,
                settings.outbox_bytes,
            )
        self._dropping += 1

    def _who(self) -> str:
        agent = self.agent
        name = f" ({agent.parent_name})" if agent.parent_name else ""
        return f"agent session {self.id} of attach pid {agent.pid}{name}"

    def wants_log(self, level: types.LoggingLevel) -> bool:
        """Whether a log message at ``level`` is at or above what this agent asked for (every one until it asks)."""
        asked = self._host.log_level(self)
        return asked is None or LOG_LEVELS.index(level) >= LOG_LEVELS.index(asked)

    def server_restarted(self) -> None:
        """The server restarted (it may have changed): the agent should list everything again."""
        for method in (
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed",
        ):
            self.notify(method, None)

    # Requests from the agent.

    def _requests(self, sdk: OnRequest) -> OnRequest:
        """The agent's requests: passed to the server as they are when both sides speak the same revision, else
        through the SDK server's handlers (:func:`_forwarding_server`)."""

        async def on_request(
            dctx: DispatchContext[Any], method: str, params: Mapping[str, Any] | None
        ) -> dict[str, Any]:
            limit = self._host.settings.max_requests_in_progress
            if self._in_progress >= limit:
                raise MCPError(
                    code=types.INVALID_REQUEST,
                    message=f"MCP Host Bridge refused {method}: this agent already has {limit} requests in progress "
                    f"on MCP server {self.server_id!r}; wait for their answers or cancel some",
                )
            self._in_progress += 1
            try:
                if method in FORWARDED and self.same_revision():
                    # The server's result is already what the agent expects: no context, middleware or result copy.
                    return await self.call(method, params, dctx.progress)
                return await sdk(dctx, method, params)
            finally:
                self._in_progress -= 1

        return on_request

    def same_revision(self) -> bool:
        """Whether results can pass as the server sent them: the agent finished ``initialize`` and negotiated the
        revision the server speaks."""
        connection = self.connection
        return (
            connection is not None
            and connection.initialize_accepted
            and connection.protocol_version == self._server.protocol_version
        )

    async def forward(self, ctx: ServerRequestContext[Any, Any]) -> dict[str, Any] | BaseModel:
        """Forward the request of ``ctx`` to the server; its result, or :class:`MCPError` as the server sent it."""
        method, params = ctx.method, ctx.params
        connection = await self._connection()
        if method in INPUT_METHODS and connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await self._typed(connection.client, ctx)
        return await self.call(method, params, ctx.session.report_progress)

    async def call(self, method: str, params: Mapping[str, Any] | None, progress: ProgressFnT | None) -> dict[str, Any]:
        """Send ``method`` to the server as plain JSON (its progress relayed to ``progress`` when the agent asked for
        it) and return its result."""
        connection = await self._connection()
        out, token = outgoing_params(params)
        opts: CallOptions = {"timeout": self._host.settings.request_timeout}
        if token is not None and progress is not None:
            opts["on_progress"] = progress
        return await self._tracked(method, lambda: raw_request(connection.client, method, out, opts))

    async def _typed(self, client: Client, ctx: ServerRequestContext[Any, Any]) -> BaseModel:
        out, token = outgoing_params(ctx.params)
        meta = out.pop("_meta", None)
        timeout = self._host.settings.request_timeout
        method = ctx.method
        if method == "tools/call":
            progress = ctx.session.report_progress if token is not None else None
            return await self._tracked(
                method,
                lambda: client.call_tool(str(out.get("name")), out.get("arguments"), timeout, progress, meta=meta),
            )
        if method == "prompts/get":
            return await self._tracked(
                method, lambda: client.get_prompt(str(out.get("name")), out.get("arguments"), meta=meta)
            )
        return await self._tracked(
            method, lambda: client.read_resource(str(out.get("uri")), meta=meta, cache_mode="bypass")
        )

    async def _tracked(self, method: str, send: Callable[[], Awaitable[_T]]) -> _T:
        self.calls_in_flight += 1
        self.requests[method] += 1
        token = CALLER.set(self)
        try:
            return await send()
        except MCPError as error:
            self._host.report_error(self.server_id, error)
            raise
        except HubError as error:
            raise MCPError(code=error.code, message=sentence(error.message), data=error.data) from error
        except PydanticSerializationError as error:
            # A lone surrogate escape in the agent's JSON: valid JSON text, but nothing UTF-8 can carry to the server.
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"MCP Host Bridge refused {method}: it holds a string that is not Unicode (a lone surrogate), "
                "which cannot be sent to the server",
            ) from error
        except ValidationError as error:
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message=f"MCP server {self.server_id!r} sent an answer that does not follow the protocol: {error}",
            ) from error
        finally:
            CALLER.reset(token)
            self.calls_in_flight -= 1

    async def _connection(self) -> ServerConnection:
        """The server's connection once it is running (an error naming why when it does not come)."""
        try:
            self._server = await self._host.running(self.server_id)
        except HubError as error:
            raise MCPError(code=error.code, message=sentence(error.message), data=error.data) from error
        return self._server

    # Held upstream for the agent (the hub's book of upstream state, through the host).

    async def subscribe(self, uri: str) -> None:
        """Hold a subscription to ``uri`` for this agent (see :meth:`SessionHost.subscribe`)."""
        await self._connection()
        await self._host.subscribe(self, uri)

    async def unsubscribe(self, uri: str) -> None:
        """Let go of this agent's subscription to ``uri``."""
        await self._host.unsubscribe(self, uri)

    async def set_log_level(self, level: types.LoggingLevel) -> None:
        """Record the level this agent asked for; the server is set to the most verbose one anyone asked for."""
        await self._connection()
        await self._host.set_log_level(self, level)

    # Requests from the server.

    async def ask(self, request: types.ServerRequest, capability: str, result_type: type[_R]) -> _R | types.ErrorData:
        """Pass the server's sampling or elicitation request to this agent; its answer, or a refusal."""
        connection = self.connection
        declared = connection.client_capabilities if connection is not None else None
        if connection is None or declared is None or getattr(declared, capability, None) is None:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=f"MCP Host Bridge refused {request.method}: the agent using this server did not declare "
                f"{capability} support",
            )
        raw = await connection.send_raw_request(
            request.method,
            request.params.model_dump(by_alias=True, mode="json", exclude_none=True) if request.params else None,
            {"timeout": self._host.settings.request_timeout},
        )
        return result_type.model_validate(raw, by_name=False)


def notification_size(params: Mapping[str, Any] | None) -> int:
    """The length of ``params`` as JSON: what a queued notification holds the sidecar to, near enough."""
    return len(pydantic_core.to_json(params, serialize_unknown=True)) if params else 0


def sentence(message: str) -> str:
    """A hub error as the agent sees it: naming the product, since the agent does not know it talks to a bridge."""
    return f"MCP Host Bridge: {message}"
