"""The gateway in the sidecar: a Unix domain socket on which agents reach the hub's running MCP servers.

Each connection starts with a hello naming one server (:mod:`host_bridge.gateway.hello`); then it is one MCP session
served by the ``mcp`` SDK's server side (:class:`mcp.server.Server` driven by its loop-mode runner) whose handlers
forward to that server's one live :class:`mcp.Client`, owned by the hub. The session runs on the connection itself,
or, when ``attach`` hands them over, directly on the agent's own stdin and stdout (the connection then only tells
``attach`` how it ended, and closing it ends the session). The rules:

- **Forwarded**: ``tools/*``, ``prompts/*``, ``resources/*`` (list, templates, read, subscribe, unsubscribe),
  ``completion/complete`` and ``logging/setLevel``; progress is relayed to the agent that asked for it, and an agent's
  ``notifications/cancelled`` cancels the forwarded request, which makes the SDK send the server its own
  ``notifications/cancelled``. Log messages, list changes and updates of the resources an agent subscribed to reach
  the agents of that server. When the agent and the server speak the same protocol revision, results are passed on
  as the server sent them (no second validation); otherwise the SDK shapes them for the agent's revision.
- **Answered here**: ``initialize`` (with the server's own name, capabilities and instructions) and ``ping``.
- **Ignored**: everything an agent says about roots. The server's ``roots/list`` is answered by the hub from consent;
  an agent's ``notifications/roots/list_changed`` has no handler and goes nowhere.
- **Sampling and elicitation** that the server asks for go to the agent whose call caused them: the caller itself
  when the SDK asks from inside that call (2026-07-28 servers), else the one agent with a call in progress on that
  server; with none, or several, the request is refused with a sentence saying why.
- **Audit**: every session is recorded in ``gateway.jsonl`` (:mod:`host_bridge.gateway.audit`).
- **Limits** (:class:`GatewaySettings`): a hello line within ``hello_timeout`` seconds, and at most
  ``max_pending_hellos`` connections waiting to send theirs; messages up to ``max_line_bytes``; per agent, at most
  ``max_requests_in_progress`` requests, ``max_subscriptions`` subscriptions, and ``outbox_size`` notifications or
  ``outbox_bytes`` bytes of them waiting to be written. Whatever happens on one connection ends that connection at
  most, and running out of descriptors only pauses accepting new ones.

Agents speak the handshake revisions (2024-11-05 … 2025-11-25) here; a 2026-07-28 client's ``server/discover`` is
answered with -32601 and it falls back to ``initialize``, as it would with any handshake-only server.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import logging
import math
import os
import socket
import stat
import struct
import sys
import uuid
import warnings
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import anyio
import anyio.abc
import mcp_types as types
import pydantic_core
from anyio.streams.memory import MemoryObjectSendStream
from mcp import Client, MCPDeprecationWarning, MCPError
from mcp.client.session import ClientRequestContext
from mcp.server import Server, ServerRequestContext
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult
from mcp.server.models import InitializationOptions
from mcp.server.runner import ServerRunner, aclose_shielded
from mcp.shared.dispatcher import CallOptions, DispatchContext, OnRequest, ProgressFnT
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from host_bridge.gateway import registry
from host_bridge.gateway.audit import GatewayAudit, GatewayAuditEntry, now
from host_bridge.gateway.hello import MAX_HELLO_BYTES, Hello, HelloAnswer, SessionEnd
from host_bridge.gateway.streams import HelloError, message_streams, read_hello
from host_bridge.gateway.upstream import outgoing_params, raw_request
from host_bridge.hub.connection import ServerConnection
from host_bridge.hub.errors import HubError, ServerNotRunningError
from host_bridge.hub.hub import Hub
from host_bridge.hub.models import ServerState
from host_bridge.jsonrpc_lines import DEFAULT_MAX_LINE_BYTES

logger = logging.getLogger(__name__)

FORWARDED: dict[str, type[BaseModel]] = {
    "tools/list": types.PaginatedRequestParams,
    "tools/call": types.CallToolRequestParams,
    "prompts/list": types.PaginatedRequestParams,
    "prompts/get": types.GetPromptRequestParams,
    "resources/list": types.PaginatedRequestParams,
    "resources/templates/list": types.PaginatedRequestParams,
    "resources/read": types.ReadResourceRequestParams,
    "completion/complete": types.CompleteRequestParams,
}
"""Requests passed to the server as they are (params validated unless both sides speak the same revision)."""
INPUT_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
"""Requests a 2026-07-28 server may answer with ``InputRequiredResult``: they go through the SDK's typed calls, whose
driver answers roots from consent and sampling or elicitation through the caller."""
LOG_LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
"""Logging levels, least severe first."""

ACCEPT_RETRY = 0.1
"""Seconds before accepting again when the process is out of descriptors."""
_OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})

_R = TypeVar("_R", bound=BaseModel)
_T = TypeVar("_T")

_Queued = tuple[str, dict[str, Any] | None, int]
_LIST_CHANGED = frozenset(
    {"notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed"}
)
"""A server's list changes, which every agent of that server hears."""
"""A notification for an agent: method, params, and the params' length as JSON."""

_CALLER: contextvars.ContextVar[AgentSession | None] = contextvars.ContextVar("gateway_caller", default=None)
"""The agent session whose forwarded call the current task is making."""


@dataclass(frozen=True)
class GatewaySettings:
    """How the gateway behaves; every field has a default."""

    start_timeout: float = 60.0
    """Seconds an agent's hello (or request) waits for its server to be running before it is refused."""
    request_timeout: float = math.inf
    """Seconds a forwarded request may take. No limit by default: the agent's own cancellation (or its leaving) is what
    ends a long one, and a request without a deadline arms no timer in the SDK (20 µs of the sidecar's time per
    request)."""
    hello_timeout: float = 10.0
    """Seconds a new connection has to send its hello line."""
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    """Longest message an agent may send."""
    outbox_size: int = 1000
    """Notifications queued for one agent; past this, new ones are dropped (with a warning) until it reads."""
    outbox_bytes: int = 4 * 2**20
    """Bytes of notifications (as JSON) queued for one agent; past this, new ones are dropped (with a warning) until
    it reads. One that does not fit even an empty outbox is still queued alone, so no notification is too long to
    ever reach an agent that reads."""
    max_requests_in_progress: int = 256
    """Requests one agent may have in progress at once; past this, new ones are refused at once (an agent that never
    stops sending would otherwise grow the sidecar's memory and load its server without bound)."""
    max_subscriptions: int = 1000
    """Resources one agent may be subscribed to at once; past this, ``resources/subscribe`` is refused."""
    max_pending_hellos: int = 64
    """Connections that have not sent their hello yet; past this, new ones are closed at once (a flood of silent
    connections would otherwise hold a descriptor each for ``hello_timeout`` seconds)."""


class Gateway:
    """The socket, the agent sessions on it, and the routing of what the hub's servers send them."""

    def __init__(
        self,
        hub: Hub,
        storage_dir: str,
        *,
        folders: Callable[[], Sequence[str]] = lambda: (),
        settings: GatewaySettings | None = None,
        audit: GatewayAudit | None = None,
    ) -> None:
        self.hub = hub
        """The servers agents reach."""
        self.storage_dir = storage_dir
        """Where the socket, the registry entries and ``gateway.jsonl`` live."""
        self.settings = settings or GatewaySettings()
        """Time-outs and limits in force."""
        self.audit = audit if audit is not None else GatewayAudit(storage_dir)
        """The agent-session log."""
        self.socket_path: str | None = None
        """Where it listens, once :meth:`serve` started."""
        self.sessions: set[AgentSession] = set()
        """The agent sessions open now."""
        self._folders = folders
        self._entry: registry.SidecarEntry | None = None
        self._entry_files: list[registry.Path] = []
        self._starts: dict[str, int] = {}
        self.waiting_for_hello = 0
        """Connections that have not sent their hello yet."""
        self._turning_away = False
        self._subscribers: dict[tuple[str, str], set[AgentSession]] = {}
        self._sdk_server = _forwarding_server()
        self._tasks: anyio.abc.TaskGroup | None = None
        hub.observers.append(self)
        hub.broker.keep_upstream(lambda server, uri: bool(self._subscribers.get((server, uri))))

    # Lifetime.

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen until cancelled; ``task_status.started()`` once agents can connect and find this sidecar.

        On the way out the socket and the registry entries are removed and every agent session is closed.
        """
        if not registry.SUPPORTED:
            logger.warning("%s", registry.NOT_SUPPORTED)
            task_status.started()
            return
        path = registry.socket_path(self.storage_dir, os.getpid())
        registry.private_dir(path.parent)
        registry.remove_files([path])
        listener = await anyio.create_unix_listener(path)
        os.chmod(path, 0o600)
        self.socket_path = str(path)
        try:
            async with listener, anyio.create_task_group() as tasks:
                self._tasks = tasks
                self._entry = registry.new_entry(os.getpid(), path, self.storage_dir, self._folders())
                self._entry_files = registry.write_entry(self._entry, registry.entry_dirs(self.storage_dir))
                logger.info("the gateway listens on %s", path)
                task_status.started()
                await self._listen(listener, tasks)
        finally:
            self._tasks = None
            registry.remove_files([*self._entry_files, path])
            self._entry_files = []
            self.socket_path = None
            self.hub.observers.remove(self)

    def folders_changed(self) -> None:
        """The workspace folders changed: rewrite the registry entries so ``attach`` finds this sidecar by them."""
        if self._entry is None:
            return
        folders = tuple(os.path.realpath(f) for f in self._folders())
        if folders != self._entry.folders:
            self._entry = self._entry.model_copy(update={"folders": folders})
            self._entry_files = registry.write_entry(self._entry, registry.entry_dirs(self.storage_dir))

    # Connections.

    async def _listen(self, listener: anyio.abc.SocketListener, tasks: anyio.abc.TaskGroup) -> None:
        """Accept connections until cancelled; running out of descriptors only pauses accepting."""
        exhausted = False
        while True:
            try:
                stream = await listener.accept()
            except anyio.BrokenResourceError as error:
                cause = error.__cause__
                if not isinstance(cause, OSError) or cause.errno not in _OUT_OF_DESCRIPTORS:
                    raise
                if not exhausted:
                    logger.warning("the gateway cannot accept connections for now: %s", cause.strerror or cause)
                exhausted = True
                # The pending connection stays queued until a descriptor is free: try again shortly.
                await anyio.sleep(ACCEPT_RETRY)
                continue
            exhausted = False
            if not self._admit():
                # Closing a connection that was never read from or written to does not wait for the peer.
                await stream.aclose()
                continue
            tasks.start_soon(self._accept, stream)

    def _admit(self) -> bool:
        """Count a new connection among those waiting for their hello; ``False`` (it is to be closed at once) when
        ``max_pending_hellos`` are waiting already, said in the log once per burst."""
        limit = self.settings.max_pending_hellos
        if self.waiting_for_hello < limit:
            self.waiting_for_hello += 1
            self._turning_away = False
            return True
        if not self._turning_away:
            logger.warning(
                "the gateway closes new connections at once: %d connections have not sent their hello yet "
                "(they have %g seconds each)",
                limit,
                self.settings.hello_timeout,
            )
        self._turning_away = True
        return False

    async def _accept(self, stream: anyio.abc.SocketStream) -> None:
        """Serve one connection; whatever an agent or a server does there ends that connection at most."""
        try:
            await self._serve_connection(stream)
        except Exception:
            logger.exception("an agent connection to the gateway failed")

    async def _serve_connection(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            try:
                peer_uid = _peer_uid(stream)
                if peer_uid is not None and peer_uid != os.getuid():
                    logger.warning("refused a gateway connection from user id %d", peer_uid)
                    return
                with anyio.fail_after(self.settings.hello_timeout):
                    line, pending = await read_hello(stream, MAX_HELLO_BYTES)
                hello = Hello.model_validate_json(line)
            except (HelloError, TimeoutError, ValidationError) as error:
                reason = "no hello line in time" if isinstance(error, TimeoutError) else str(error).splitlines()[0]
                await _answer(stream, HelloAnswer(ok=False, reason="badHello", error=f"not a gateway hello: {reason}"))
                return
            finally:
                self.waiting_for_hello -= 1
            try:
                connection = await self.running(hello.server)
            except HubError as error:
                self._refused(hello, peer_uid, error)
                code = "notRunning" if isinstance(error, ServerNotRunningError) else "unknownServer"
                await _answer(stream, HelloAnswer(ok=False, reason=code, error=_sentence(error.message)))
                return
            session = AgentSession(self, hello, connection, peer_uid)
            if not hello.handover:
                await _answer(stream, HelloAnswer(ok=True, session=session.id))
                fd = stream.extra(anyio.abc.SocketAttribute.raw_socket).fileno()
                await session.run(fd, fd, pending)
                return
            await _answer(stream, HelloAnswer(ok=True, session=session.id, handover=True))
            try:
                with anyio.fail_after(self.settings.hello_timeout):
                    agent_in, agent_out = await _receive_stdio(cast(anyio.abc.UNIXSocketStream, stream), pending)
            except (OSError, anyio.EndOfStream, anyio.BrokenResourceError, ValueError, RuntimeError) as error:
                logger.warning("[%s] attach did not hand over its stdin and stdout: %s", hello.server, error)
                return
            try:
                await session.run(agent_in, agent_out, b"", control=stream)
            finally:
                os.close(agent_in)
                os.close(agent_out)
            end = SessionEnd(agent_closed=session.agent_closed, reason=None if session.agent_closed else session.reason)
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await stream.send(end.model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n")

    async def running(self, server_id: str) -> ServerConnection:
        """The connection of ``server_id`` once it is running, waiting at most ``start_timeout`` seconds.

        Raises :class:`HubError`: unknown server, a failed one, or one still not running after the wait.
        """
        connection = self.hub.connection(server_id)
        if connection.state is not ServerState.RUNNING:
            connection = await self.hub.wait_for(
                server_id, lambda c: c.state in (ServerState.RUNNING, ServerState.FAILED), self.settings.start_timeout
            )
        if connection.state is ServerState.RUNNING:
            return connection
        reason = connection.last_error
        if connection.state is ServerState.AWAITING_TRUST:
            reason = "it waits for you to trust it in MCP Host Bridge's prompt"
        raise ServerNotRunningError(server_id, connection.state.value, reason)

    def _refused(self, hello: Hello, peer_uid: int | None, error: HubError) -> None:
        self.audit.append(
            GatewayAuditEntry(
                time=now(),
                event="refused",
                server=hello.server,
                agent=hello.agent,
                peer_uid=peer_uid,
                reason=error.message,
            )
        )

    # HubObserver.

    def server_state(self, connection: ServerConnection) -> None:
        """After a restart, tell the server's agents to list again and resubscribe."""
        if connection.state is not ServerState.RUNNING:
            return
        previous = self._starts.get(connection.id)
        self._starts[connection.id] = connection.starts
        if previous is None or previous == connection.starts:
            return
        for session in [s for s in self.sessions if s.server_id == connection.id]:
            session.server_restarted()
        uris = sorted(uri for server, uri in self._subscribers if server == connection.id)
        if uris and self._tasks is not None:
            self._tasks.start_soon(self._resubscribe, connection.id, uris)

    async def _resubscribe(self, server_id: str, uris: Sequence[str]) -> None:
        """After a restart: subscribe again to what agents hold, and report each URI as updated (changes may have been
        missed meanwhile)."""
        for uri in uris:
            holders = sorted(self._subscribers.get((server_id, uri), ()), key=lambda s: s.id)
            if not holders:
                continue
            if uri not in self.hub.broker.subscriptions(server_id):
                try:
                    await holders[0].call("resources/subscribe", {"uri": uri}, None)
                except (MCPError, HubError) as error:
                    logger.warning("[%s] could not subscribe again to %s for its agents: %s", server_id, uri, error)
                    continue
            for session in holders:
                session.notify("notifications/resources/updated", {"uri": uri})

    def server_notification(self, server_id: str, message: types.ServerNotification) -> None:
        """Route a server's notification to the agents it concerns (converted and sized only when one does)."""
        recipients: Sequence[AgentSession]
        if isinstance(message, types.ResourceUpdatedNotification):
            recipients = tuple(self._subscribers.get((server_id, message.params.uri), ()))
        elif isinstance(message, types.LoggingMessageNotification):
            level = message.params.level
            recipients = [s for s in self.sessions if s.server_id == server_id and s.wants_log(level)]
        elif message.method in _LIST_CHANGED:
            recipients = [s for s in self.sessions if s.server_id == server_id]
        else:
            return
        if not recipients:
            return
        params = message.params.model_dump(by_alias=True, mode="json", exclude_none=True) if message.params else None
        size = notification_size(params)
        for session in recipients:
            session.notify(message.method, params, size)

    def client_options(self, server_id: str) -> dict[str, Any]:
        """Sampling and elicitation callbacks that route the server's requests to the agent that caused them."""

        async def sampling(
            context: ClientRequestContext, params: types.CreateMessageRequestParams
        ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
            request = types.CreateMessageRequest(params=params)
            return await self._ask_agent(server_id, request, "sampling", types.CreateMessageResult)

        async def elicitation(
            context: ClientRequestContext, params: types.ElicitRequestParams
        ) -> types.ElicitResult | types.ErrorData:
            request = types.ElicitRequest(params=params)
            return await self._ask_agent(server_id, request, "elicitation", types.ElicitResult)

        return {"sampling_callback": sampling, "elicitation_callback": elicitation}

    async def _ask_agent(
        self, server_id: str, request: types.ServerRequest, capability: str, result_type: type[_R]
    ) -> _R | types.ErrorData:
        caller = _CALLER.get()
        if caller is None or caller.server_id != server_id:
            busy = [s for s in self.sessions if s.server_id == server_id and s.calls_in_flight]
            if len(busy) != 1:
                why = (
                    "no agent has a call in progress on it"
                    if not busy
                    else f"{len(busy)} agents have calls in progress on it, so it cannot tell whose call caused this"
                )
                return types.ErrorData(
                    code=types.INVALID_REQUEST,
                    message=f"MCP Host Bridge refused {request.method} from MCP server {server_id!r}: {why}",
                )
            caller = busy[0]
        return await caller.ask(request, capability, result_type)

    # Subscriptions (handshake-era servers).

    async def subscribe(self, session: AgentSession, uri: str) -> None:
        """Subscribe ``session`` to ``uri``; the server is asked only by the first subscriber.

        Raises :class:`MCPError` when ``session`` holds ``max_subscriptions`` already (each costs the sidecar memory
        and may keep the server watching a resource).
        """
        limit = self.settings.max_subscriptions
        if uri not in session.subscriptions and len(session.subscriptions) >= limit:
            raise MCPError(
                code=types.INVALID_REQUEST,
                message=f"MCP Host Bridge refused resources/subscribe: this agent is already subscribed to {limit} "
                f"resources of MCP server {session.server_id!r}; unsubscribe from those it no longer needs first",
            )
        key = (session.server_id, uri)
        holders = self._subscribers.setdefault(key, set())
        first = not holders
        holders.add(session)
        session.subscriptions.add(uri)
        if first and uri not in self.hub.broker.subscriptions(session.server_id):
            try:
                await session.call("resources/subscribe", {"uri": uri}, None)
            except BaseException:
                holders.discard(session)
                session.subscriptions.discard(uri)
                if not holders:
                    del self._subscribers[key]
                raise

    async def unsubscribe(self, session: AgentSession, uri: str) -> None:
        """Remove ``session``'s subscription; the server is told when nobody (no agent, not the editor) needs it."""
        key = (session.server_id, uri)
        holders = self._subscribers.get(key)
        if holders is None or session not in holders:
            return
        holders.discard(session)
        session.subscriptions.discard(uri)
        if holders:
            return
        del self._subscribers[key]
        if uri in self.hub.broker.subscriptions(session.server_id):
            return
        try:
            await session.call("resources/unsubscribe", {"uri": uri}, None)
        except (MCPError, HubError) as error:
            logger.info("[%s] unsubscribing from %s for the last agent: %s", session.server_id, uri, error)

    def forget(self, session: AgentSession) -> list[str]:
        """Drop ``session``'s subscriptions; the URIs nobody else holds (to unsubscribe from the server)."""
        orphaned: list[str] = []
        session.subscriptions.clear()
        for key, holders in list(self._subscribers.items()):
            if session in holders:
                holders.discard(session)
                if not holders:
                    del self._subscribers[key]
                    orphaned.append(key[1])
        return orphaned

    def log_level_changed(self, server_id: str) -> types.LoggingLevel | None:
        """The most verbose level any agent of ``server_id`` asked for (what the server is set to)."""
        levels = [s.log_level for s in self.sessions if s.server_id == server_id and s.log_level is not None]
        return LOG_LEVELS[min(LOG_LEVELS.index(level) for level in levels)] if levels else None


class AgentSession:
    """One agent's MCP session with one server, through the gateway."""

    def __init__(self, gateway: Gateway, hello: Hello, connection: ServerConnection, peer_uid: int | None) -> None:
        self.id = uuid.uuid4().hex
        """Names this session in the audit log."""
        self.server_id = hello.server
        """The server it uses."""
        self.agent = hello.agent
        """Who attached."""
        self.calls_in_flight = 0
        """Forwarded requests not answered yet."""
        self.log_level: types.LoggingLevel | None = None
        """The level this agent asked for with ``logging/setLevel`` (``None``: every message)."""
        self.requests: Counter[str] = Counter()
        """Requests forwarded, by method."""
        self.connection: Connection | None = None
        """The SDK's view of the agent's side, while the session runs."""
        self.subscriptions: set[str] = set()
        """The resource URIs this agent is subscribed to."""
        self._gateway = gateway
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
        gateway = self._gateway
        self._audit("attached")
        gateway.sessions.add(self)
        outbox, inbox = anyio.create_memory_object_stream[_Queued](gateway.settings.outbox_size)
        self._outbox = outbox
        try:
            read, write = message_streams(read_fd, write_fd, pending, max_line_bytes=gateway.settings.max_line_bytes)
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
                runner = ServerRunner(
                    gateway._sdk_server,  # pyright: ignore[reportPrivateUsage]
                    self.connection,
                    self,
                    init_options=_initialization_options(self._server),
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
            gateway.sessions.discard(self)
            orphaned = gateway.forget(self)
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                for uri in orphaned:
                    if uri not in gateway.hub.broker.subscriptions(self.server_id):
                        with contextlib.suppress(MCPError, HubError):
                            await self.call("resources/unsubscribe", {"uri": uri}, None)
            self._audit("detached", reason=self.reason)

    def _audit(self, event: str, *, reason: str | None = None) -> None:
        config = self._server.config
        client = self._client
        self._gateway.audit.append(
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
        settings = self._gateway.settings
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
            settings = self._gateway.settings
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
        """Whether a log message at ``level`` is at or above what this agent asked for."""
        return self.log_level is None or LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level)

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
            limit = self._gateway.settings.max_requests_in_progress
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
        opts: CallOptions = {"timeout": self._gateway.settings.request_timeout}
        if token is not None and progress is not None:
            opts["on_progress"] = progress
        return await self._tracked(method, lambda: raw_request(connection.client, method, out, opts))

    async def _typed(self, client: Client, ctx: ServerRequestContext[Any, Any]) -> BaseModel:
        out, token = outgoing_params(ctx.params)
        meta = out.pop("_meta", None)
        timeout = self._gateway.settings.request_timeout
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
        token = _CALLER.set(self)
        try:
            return await send()
        except MCPError as error:
            self._gateway.hub.report_error(self.server_id, error)
            raise
        except HubError as error:
            raise MCPError(code=error.code, message=_sentence(error.message), data=error.data) from error
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
            _CALLER.reset(token)
            self.calls_in_flight -= 1

    async def _connection(self) -> ServerConnection:
        try:
            self._server = await self._gateway.running(self.server_id)
        except HubError as error:
            raise MCPError(code=error.code, message=_sentence(error.message), data=error.data) from error
        return self._server

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
            {"timeout": self._gateway.settings.request_timeout},
        )
        return result_type.model_validate(raw, by_name=False)


def notification_size(params: Mapping[str, Any] | None) -> int:
    """The length of ``params`` as JSON: what a queued notification holds the sidecar to, near enough."""
    return len(pydantic_core.to_json(params, serialize_unknown=True)) if params else 0


def _initialization_options(connection: ServerConnection) -> InitializationOptions:
    """What the agent's ``initialize`` is answered with: the server's own identity, capabilities and instructions.

    Change notifications are relayed for handshake-era servers only, so a 2026-07-28 server is presented without
    ``listChanged`` and ``subscribe``.
    """
    client = connection.client
    info = client.server_info or types.Implementation(name=connection.id, version="")
    capabilities = client.server_capabilities.model_copy(update={"extensions": None})
    if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
        capabilities = capabilities.model_copy(
            update={
                "tools": types.ToolsCapability() if capabilities.tools else None,
                "prompts": types.PromptsCapability() if capabilities.prompts else None,
                "resources": types.ResourcesCapability() if capabilities.resources else None,
            }
        )
    return InitializationOptions(
        server_name=info.name,
        server_version=info.version,
        title=info.title,
        description=info.description,
        capabilities=capabilities,
        instructions=client.instructions,
        website_url=info.website_url,
        icons=info.icons,
    )


def _forwarding_server() -> Server[AgentSession]:
    """The SDK server every agent session runs: forwarding handlers, and a middleware that records who initialized."""
    server: Server[AgentSession] = Server("host-bridge-gateway")

    async def forward(ctx: ServerRequestContext[AgentSession, Any], params: BaseModel) -> HandlerResult:
        return await ctx.lifespan_context.forward(ctx)

    for method, params_type in FORWARDED.items():
        server.add_request_handler(method, params_type, forward)

    async def subscribe(ctx: ServerRequestContext[AgentSession, Any], params: types.SubscribeRequestParams) -> None:
        session = ctx.lifespan_context
        await session._connection()  # pyright: ignore[reportPrivateUsage]
        await session._gateway.subscribe(session, params.uri)  # pyright: ignore[reportPrivateUsage]

    async def unsubscribe(ctx: ServerRequestContext[AgentSession, Any], params: types.UnsubscribeRequestParams) -> None:
        session = ctx.lifespan_context
        await session._gateway.unsubscribe(session, params.uri)  # pyright: ignore[reportPrivateUsage]

    async def set_level(ctx: ServerRequestContext[AgentSession, Any], params: types.SetLevelRequestParams) -> None:
        session = ctx.lifespan_context
        session.log_level = params.level
        level = session._gateway.log_level_changed(session.server_id)  # pyright: ignore[reportPrivateUsage]
        connection = await session._connection()  # pyright: ignore[reportPrivateUsage]
        capabilities = connection.capabilities
        if level is not None and capabilities is not None and capabilities.logging is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await session.call("logging/setLevel", {"level": level}, None)

    server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)

    async def record_initialize(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "initialize":
            ctx.lifespan_context.initialized(ctx.params)
        return result

    server.middleware = [record_initialize]
    return server


async def _receive_stdio(stream: anyio.abc.UNIXSocketStream, pending: bytes) -> tuple[int, int]:
    """The agent's stdin and stdout, handed over by ``attach``: two pipes or sockets, made non-blocking.

    Raises ``ValueError`` (after closing whatever arrived) when anything else came.
    """
    if pending:
        raise ValueError("it sent more than its hello line")
    # Room for one more than expected: when fewer fit, the kernel closes the rest unseen and two would look right.
    _message, fds = await stream.receive_fds(1, 3)
    try:
        if len(fds) != 2:
            raise ValueError(f"it sent {len(fds)} descriptors instead of its stdin and stdout")
        for fd in fds:
            mode = os.fstat(fd).st_mode
            if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
                raise ValueError("its stdin or stdout is neither a pipe nor a socket")
            os.set_blocking(fd, False)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds[0], fds[1]


async def _answer(stream: anyio.abc.ByteStream, answer: HelloAnswer) -> None:
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stream.send(answer.model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n")


def _sentence(message: str) -> str:
    """A hub error as the agent sees it: naming the product, since the agent does not know it talks to a bridge."""
    return f"MCP Host Bridge: {message}"


def _peer_uid(stream: anyio.abc.SocketStream) -> int | None:
    """The connecting process's user id (Linux ``SO_PEERCRED``); ``None`` where the platform does not say."""
    if sys.platform != "linux":
        return None
    raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
    try:
        data = raw.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    _pid, uid, _gid = struct.unpack("3i", data)
    return uid
