"""The gateway in the sidecar: a Unix domain socket on which agents reach the hub's running MCP servers.

:class:`Gateway` is the facade the hosts own; each concern lives in its own module of :mod:`host_bridge.gateway`:

- :mod:`~host_bridge.gateway.listener`: the socket, the registry entry, who is admitted, the descriptor handover;
- :mod:`~host_bridge.gateway.session`: one agent's MCP session with one server, its outbox and its limits;
- :mod:`~host_bridge.gateway.forwarding`: what is forwarded and answered, and the servers' requests routed back;
- :mod:`~host_bridge.gateway.settings`: time-outs and limits.

The gateway is a client of the hub's book of upstream state (:class:`~host_bridge.hub.upstream.Upstream`), beside the
editor's broker: an agent's subscriptions and log level are held there under its session, and the server's
notifications reach the agents they concern from there. Every session is recorded in ``gateway.jsonl``
(:mod:`host_bridge.gateway.audit`).

Agents speak the handshake revisions (2024-11-05 … 2025-11-25) here; a 2026-07-28 client's ``server/discover`` is
answered with -32601 and it falls back to ``initialize``, as it would with any handshake-only server.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable, Sequence

import anyio
import anyio.abc
import mcp_types as types
from mcp import MCPError

from host_bridge.gateway import registry
from host_bridge.gateway.audit import GatewayAudit, GatewayAuditEntry, now
from host_bridge.gateway.forwarding import ServerRequestRouter
from host_bridge.gateway.hello import Hello, HelloAnswer
from host_bridge.gateway.listen import ListenStream
from host_bridge.gateway.listener import Listener, Refused
from host_bridge.gateway.session import AgentSession, notification_size, sentence
from host_bridge.gateway.settings import GatewaySettings
from host_bridge.hub.connection import ServerConnection
from host_bridge.hub.errors import HubError, ServerNotRunningError
from host_bridge.hub.hub import Hub
from host_bridge.hub.models import ServerState
from host_bridge.hub.running import server_handle
from host_bridge.hub.upstream import Holder

logger = logging.getLogger(__name__)

_LIST_CHANGED = frozenset(
    {"notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed"}
)
"""A server's list changes, which every agent of that server hears."""


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
        self._settings = settings or GatewaySettings()
        self._audit = audit if audit is not None else GatewayAudit(storage_dir)
        self.sessions: set[AgentSession] = set()
        """The agent sessions open now."""
        self.listener = Listener(storage_dir, self._settings, self, folders=folders)
        """The socket and the admission of connections."""
        self._requests = ServerRequestRouter(lambda: self.sessions)

    @property
    def settings(self) -> GatewaySettings:
        """Time-outs and limits in force."""
        return self._settings

    @property
    def audit(self) -> GatewayAudit:
        """The agent-session log."""
        return self._audit

    @property
    def address(self) -> str | None:
        """Where it listens, as its registry entry says (a path, or ``@name`` for an abstract socket)."""
        return self.listener.address

    @property
    def socket_path(self) -> str | None:
        """The socket's file, while listening (``None`` for an abstract socket)."""
        return self.listener.socket_path

    # Lifetime.

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen until cancelled; ``task_status.started()`` once agents can connect and find this sidecar.

        While it runs, the gateway is a client of the hub's book of upstream state and answers the servers' sampling
        and elicitation requests. On the way out the socket and the registry entries are removed and every agent
        session is closed.
        """
        if not registry.SUPPORTED:
            logger.warning("%s", registry.NOT_SUPPORTED)
            task_status.started()
            return
        self.hub.upstream.attach(self)
        self.hub.server_requests = self._requests
        try:
            await self.listener.serve(task_status=task_status)
        finally:
            self.hub.upstream.detach(self)
            if self.hub.server_requests is self._requests:
                self.hub.server_requests = None

    def folders_changed(self) -> None:
        """The workspace folders changed: register under the new ones so ``attach`` finds this sidecar by them."""
        self.listener.folders_changed()

    def running_now(self, server_id: str) -> ServerConnection | None:
        """The connection of ``server_id`` when it is running now (``None``: unknown, or not running)."""
        try:
            connection = self.hub.connection(server_id)
        except HubError:
            return None
        return connection if connection.state is ServerState.RUNNING else None

    async def running(self, server_id: str) -> ServerConnection:
        """The connection of ``server_id`` once it is running, waiting at most ``start_timeout`` seconds.

        Raises :class:`HubError`: unknown server, a failed one, or one still not running after the wait.
        """
        settled = {ServerState.RUNNING, ServerState.FAILED}
        if self._settings.headless:
            settled.add(ServerState.AWAITING_TRUST)  # nobody here will be asked: say so at once
        connection = self.hub.connection(server_id)
        if connection.state is not ServerState.RUNNING:
            connection = await self.hub.wait_for(server_id, lambda c: c.state in settled, self._settings.start_timeout)
        if connection.state is ServerState.RUNNING:
            return connection
        reason = connection.last_error
        if connection.state is ServerState.AWAITING_TRUST:
            reason = "it waits for you to trust it in MCP Host Bridge's prompt"
            if self._settings.headless:
                handle = server_handle(connection.config.identity)
                reason = (
                    "it is defined in a folder's config file and you have not trusted it; no editor is open here to "
                    f"ask you, so trust it with `host-bridge consent trust {handle}` and start it again"
                )
        raise ServerNotRunningError(server_id, connection.state.value, reason)

    def advice(self, server_id: str) -> str | None:
        """For a headless sidecar: the command that shares the workspace folder with ``server_id`` when you have not
        decided about it yet (nothing is shared until you do); ``None`` otherwise."""
        if not self._settings.headless:
            return None
        try:
            connection = self.hub.connection(server_id)
        except HubError:
            return None
        if self.hub.registry.roots_for(server_id):
            return None
        identity = connection.config.identity
        undecided = [f for f in self.listener.folders() if self.hub.policy.decision(identity, f) is None]
        if not undecided:
            return None
        handle = server_handle(identity)
        folders = " ".join(shlex.quote(f) for f in undecided)
        return (
            f"MCP server {server_id!r} sees no folder: no editor has this folder open, and MCP Host Bridge shares only "
            f"what you decided before (it never asks here). To share it: `host-bridge consent allow {handle} "
            f"{folders}` (the running session sees it within a second)"
        )

    # SessionSource (host_bridge.gateway.listener).

    async def open_session(self, hello: Hello, peer_uid: int | None) -> AgentSession:
        """A session with the server ``hello`` names, once it runs; :class:`Refused` with the reason otherwise."""
        try:
            connection = await self.running(hello.server)
        except HubError as error:
            self.refused(hello, peer_uid, error.message)
            code = "notRunning" if isinstance(error, ServerNotRunningError) else "unknownServer"
            message = sentence(error.message)
            if code == "unknownServer" and self._settings.headless:
                known = ", ".join(repr(c.id) for c in self.hub.connections) or "none"
                message = (
                    f"MCP Host Bridge: no editor has this folder open, and its .vscode/mcp.json and .mcp.json define "
                    f"no MCP server {hello.server!r} (they define: {known}); `host-bridge agents` prints the entries "
                    "for the servers it defines"
                )
            raise Refused(HelloAnswer(ok=False, reason=code, error=message)) from error
        return AgentSession(self, hello, connection, peer_uid)

    def refused(self, hello: Hello, peer_uid: int | None, reason: str) -> None:
        """Record a refused connection in the audit log."""
        self._audit.append(
            GatewayAuditEntry(
                time=now(), event="refused", server=hello.server, agent=hello.agent, peer_uid=peer_uid, reason=reason
            )
        )

    # SessionHost (host_bridge.gateway.session).

    def report_error(self, server_id: str, error: MCPError) -> None:
        """A forwarded request failed: let the server's connection decide whether to reconnect."""
        self.hub.report_error(server_id, error)

    def opened(self, session: AgentSession) -> None:
        """``session`` started: it hears its server's notifications from now on."""
        self.sessions.add(session)

    async def closed(self, session: AgentSession) -> None:
        """``session`` ended: let go of what it held upstream (bounded, and done even when cancelled)."""
        self.sessions.discard(session)
        await self.release(session)

    async def subscribe(self, session: AgentSession, holder: Holder, uri: str) -> None:
        """Hold ``uri`` for ``holder`` (``session`` itself, or one of its listen streams) in the book; the server is
        asked only when nobody held it yet.

        Raises :class:`MCPError` when ``holder`` holds ``max_subscriptions`` already (each costs the sidecar memory
        and may keep the server watching a resource), or as the server refused.
        """
        upstream = self.hub.upstream
        limit = self._settings.max_subscriptions
        held = upstream.holds(self, holder, session.server_id, uri)
        if not held and upstream.count(self, holder) >= limit:
            raise MCPError(
                code=types.INVALID_REQUEST,
                message=f"MCP Host Bridge refused resources/subscribe: this agent is already subscribed to {limit} "
                f"resources of MCP server {session.server_id!r}; unsubscribe from those it no longer needs first",
            )
        try:
            await upstream.subscribe(self, holder, session.server_id, uri)
        except HubError as error:
            raise MCPError(code=error.code, message=sentence(error.message), data=error.data) from error

    async def unsubscribe(self, holder: Holder, server_id: str, uri: str) -> None:
        """Let go of ``holder``'s subscription; the server is told when nobody (no agent, not the editor) holds it."""
        await self.hub.upstream.unsubscribe(self, holder, server_id, uri)

    async def release(self, holder: Holder) -> None:
        """Let go of everything ``holder`` holds (bounded, and done even when cancelled)."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(2):
            await self.hub.upstream.release(self, holder)

    async def set_log_level(self, session: AgentSession, level: types.LoggingLevel) -> None:
        """Record the level ``session`` asked for; the server is set to the most verbose level anyone asked for."""
        await self.hub.upstream.set_log_level(session, session.server_id, level)

    def log_level(self, session: AgentSession) -> types.LoggingLevel | None:
        """The level ``session`` asked for, if any."""
        return self.hub.upstream.log_level(session, session.server_id)

    # UpstreamClient (host_bridge.hub.upstream).

    def resource_updated(self, server_id: str, uri: str, holders: frozenset[Holder]) -> None:
        """A resource changed: tell the agents (and the listen streams) that hold it."""
        for holder in holders:
            if isinstance(holder, AgentSession | ListenStream):
                holder.updated(uri)

    def server_notification(self, server_id: str, message: types.ServerNotification) -> None:
        """Route a server's notification to the agents it concerns (converted and sized only when one does)."""
        sessions = [s for s in self.sessions if s.server_id == server_id]
        if not sessions:
            return
        if isinstance(message, types.LoggingMessageNotification):
            level = message.params.level
            if not any(s.wants_log(level) for s in sessions):
                return
        elif message.method not in _LIST_CHANGED:
            return
        params = message.params.model_dump(by_alias=True, mode="json", exclude_none=True) if message.params else None
        size = notification_size(params)
        for session in sessions:
            if isinstance(message, types.LoggingMessageNotification):
                session.log_message(message.params.level, params, size)
            else:
                session.list_changed(message.method, params, size)

    def server_restarted(self, server_id: str) -> None:
        """After a restart, tell the server's agents to list again (their subscriptions were made again)."""
        for session in [s for s in self.sessions if s.server_id == server_id]:
            session.server_restarted()

    def subscriptions_lost(self, server_id: str, uris: Sequence[str], reason: str) -> None:
        """Say which agent subscriptions did not survive a restart (their agents hear nothing more of them)."""
        logger.warning("[%s] %s; agents no longer follow %s", server_id, reason, ", ".join(uris))

    def listening(self, server_id: str) -> None:
        """Nothing to do: agents list for themselves."""
