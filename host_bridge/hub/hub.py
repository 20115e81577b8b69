"""The hub: configured servers → one :class:`ServerConnection` each, roots served from the registry,
resources brokered for the editor.

The hub is the single owner of the connections' task group. It wires the pieces: the roots registry's
change events become ``roots/list_changed`` for exactly the server concerned; every ``roots/list``
answer is audited; resource notifications go to the broker; trust gates workspace-defined servers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from mcp import Client, MCPError

from host_bridge.consent.policy import ConsentPolicy
from host_bridge.hub.audit import AuditLog
from host_bridge.hub.config import ServerConfig
from host_bridge.hub.connection import ServerConnection
from host_bridge.hub.errors import UnknownServerError
from host_bridge.hub.launch import Launch, SandboxSetting
from host_bridge.hub.models import ServerState, ServerStatus
from host_bridge.hub.resources.broker import ResourceBroker
from host_bridge.hub.resources.models import ResourceSettings
from host_bridge.hub.settings import ConnectionSettings
from host_bridge.hub.transports import transport_for
from host_bridge.roots import Root, RootsRegistry
from host_bridge.sandbox.refusals import Refusal
from host_bridge.uris import UriError, parse_file_uri

logger = logging.getLogger(__name__)


class HubEvents(Protocol):
    """What the hub reports to its host (the LSP layer or the terminal host)."""

    def server_changed(self, status: ServerStatus) -> None:
        """A server's state, version, shared folders or error changed."""

    def server_log(self, server_id: str, line: str) -> None:
        """A server wrote a line to stderr."""

    def resources_changed(self, server_id: str) -> None:
        """A server's resource list changed (coalesced)."""

    def resource_updated(self, server_id: str, uri: str) -> None:
        """A subscribed resource changed (coalesced)."""

    def notice(self, server_id: str | None, message: str) -> None:
        """Something the user should know (a server was unsubscribed for flooding …)."""

    def sandbox_refused(self, server_id: str, refusal: Refusal) -> None:
        """The sandbox refused a server a path outside its folders: the host may offer to share it (or let it read)."""


class HubObserver(Protocol):
    """Follows every server besides the host: the agent gateway (``host_bridge.gateway``)."""

    def server_state(self, connection: ServerConnection) -> None:
        """A connection's state changed (it is running, restarting, stopped …)."""

    def server_notification(self, server_id: str, message: types.ServerNotification) -> None:
        """A server sent a notification (log message, list changed, resource updated …)."""

    def client_options(self, server_id: str) -> dict[str, Any]:
        """Extra ``mcp.Client`` options for the server's next session."""
        ...


class Hub:
    """Every configured MCP server, connected and kept current."""

    def __init__(
        self,
        policy: ConsentPolicy,
        registry: RootsRegistry,
        events: HubEvents,
        *,
        audit: AuditLog | None = None,
        connection_settings: ConnectionSettings | None = None,
        resource_settings: ResourceSettings | None = None,
    ) -> None:
        self.policy = policy
        """Consent, including trust of workspace-defined servers."""
        self.registry = registry
        """Effective roots per server."""
        self.broker = ResourceBroker(
            self,
            settings=resource_settings or ResourceSettings(),
            on_updated=events.resource_updated,
            on_list_changed=events.resources_changed,
            on_notice=events.notice,
        )
        """Resources across servers, for the editor's pickers."""
        self._events = events
        self._audit = audit
        self._connection_settings = connection_settings or ConnectionSettings()
        self._connections: dict[str, ServerConnection] = {}
        """Server id → its connection, in configuration order."""
        self._tasks: anyio.abc.TaskGroup | None = None
        self._running: dict[ServerConnection, anyio.Event] = {}
        self._state_pulse = anyio.Event()
        """Set (and replaced) whenever a server's state changes or its connection is replaced."""
        self._configuring = 0
        """Configuration changes under way: a server missing meanwhile may be about to be added again."""
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._loop_thread: int | None = None
        """Connections whose task is alive → set when it returns."""
        registry.subscribe(self._roots_changed)
        policy.on_change(self._consent_changed)
        self.observers: list[HubObserver] = []
        """Parties following every server besides the host (the agent gateway); see :class:`HubObserver`."""

    # Configuration and lifecycle.

    async def configure(self, servers: Sequence[ServerConfig]) -> None:
        """Apply a new set of server configs: start new ones, stop removed ones, restart changed ones.

        A server whose identity changed (where it is defined, or its launch configuration) is a new server: the old
        one is stopped, and the new one asks for trust and consent again. Every new server's roots are computed
        before it starts, so its first ``roots/list`` is answered in full.
        """
        self._configuring += 1
        try:
            await self._configure(servers)
        finally:
            self._configuring -= 1
            self._pulse()

    async def _configure(self, servers: Sequence[ServerConfig]) -> None:
        wanted = {config.id: config for config in servers}
        for server_id in list(self._connections):
            current = self._connections[server_id]
            if server_id not in wanted or wanted[server_id].identity != current.config.identity:
                self._remove(server_id)
        added = [config for server_id, config in wanted.items() if server_id not in self._connections]
        for config in added:
            if self.policy.store.claimable(config.identity):
                await anyio.to_thread.run_sync(self.policy.claim, config.identity)
            self.registry.set_server(config.id, config.identity)
        if added:
            await self.registry.refresh()
        for config in added:
            if config.id not in self._connections:
                self._add(config)
        self._connections = {sid: self._connections[sid] for sid in wanted if sid in self._connections}

    def connection(self, server_id: str) -> ServerConnection:
        """The connection of ``server_id``; raises :class:`UnknownServerError`."""
        try:
            return self._connections[server_id]
        except KeyError:
            raise UnknownServerError(server_id) from None

    @property
    def connections(self) -> tuple[ServerConnection, ...]:
        """All connections, in configuration order."""
        return tuple(self._connections.values())

    def statuses(self) -> list[ServerStatus]:
        """Every server's status, in configuration order."""
        return [self._status(c) for c in self._connections.values()]

    def trust(self, server_id: str, trusted: bool) -> None:
        """Record the user's trust in a workspace-defined server and start (or keep stopped) accordingly.

        Raises :class:`host_bridge.consent.policy.DecisionNotSaved` when the answer holds for this session only.
        """
        try:
            self.save_trust(server_id, trusted)
        finally:
            self.apply_trust(server_id, trusted)

    def save_trust(self, server_id: str, trusted: bool) -> None:
        """The saving half of :meth:`trust` (may wait for the store's lock: call it from a worker thread)."""
        self.policy.set_trust(self.connection(server_id).config.identity, trusted)

    def apply_trust(self, server_id: str, trusted: bool) -> None:
        """The starting half of :meth:`trust`, on the event loop: start the server, or keep it stopped."""
        connection = self.connection(server_id)
        if trusted and connection.state in (ServerState.AWAITING_TRUST, ServerState.STOPPED):
            if connection not in self._running:
                self._start(connection)
        elif not trusted:
            if connection in self._running:
                # A connection is good for one life; a fresh one waits for trust to be given again.
                connection.stop()
                connection = self._connections[server_id] = self._new_connection(connection.config)
            self._hold_untrusted(connection)

    def restart(self, server_id: str, *, sandbox: SandboxSetting | None = None) -> None:
        """Restart a server now (also one that gave up after repeated crashes).

        A workspace-defined server the user has not trusted (or refused to trust) goes back to waiting for trust:
        asking to start it is asking to be asked again. ``sandbox`` is the user's own choice for this session (``off``
        when they turned the sandbox off after a refused start); it holds until the sidecar exits.
        """
        connection = self.connection(server_id)
        if sandbox is not None:
            connection.transport.choose_sandbox(sandbox)
        if connection.state in (ServerState.STOPPED, ServerState.AWAITING_TRUST):
            if self._needs_trust(connection):
                if connection.state is not ServerState.AWAITING_TRUST:
                    connection.last_error = None
                    self._set_state(connection, ServerState.AWAITING_TRUST)
                return
            self._start(connection)
        else:
            connection.restart()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Own every connection until cancelled; on cancellation stop them all (their children included)."""
        self._token = anyio.lowlevel.current_token()
        self._loop_thread = threading.get_ident()
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            tasks.start_soon(self.registry.run)
            tasks.start_soon(self.broker.run)
            for connection in self._connections.values():
                if connection.state is ServerState.STOPPED and not self._needs_trust(connection):
                    self._start(connection)
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self._tasks = None
                with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                    await self._stop_all()
                tasks.cancel_scope.cancel()

    # ResourceSources, for the broker.

    def resource_servers(self) -> Sequence[str]:
        """Running servers that declared resources."""
        return [
            c.id
            for c in self._connections.values()
            if c.state is ServerState.RUNNING and c.capabilities is not None and c.capabilities.resources is not None
        ]

    async def ready(self, server_id: str) -> None:
        """Wait (bounded by the initialize time-out) while ``server_id`` is starting or restarting."""
        await self.wait_for(
            server_id,
            lambda c: c.state not in (ServerState.STARTING, ServerState.RESTARTING),
            self._connection_settings.initialize_timeout,
        )

    async def wait_for(
        self, server_id: str, done: Callable[[ServerConnection], bool], timeout: float
    ) -> ServerConnection:
        """``server_id``'s connection once ``done`` holds for it, or as it is after ``timeout`` seconds.

        Judged again on every state change of any server and whenever a configuration change replaces the
        connection, so a wait that began on a connection being replaced goes on with its successor. Raises
        :class:`UnknownServerError` when the server is (or becomes) unknown.
        """
        with anyio.move_on_after(timeout):
            while True:
                try:
                    connection = self.connection(server_id)
                except UnknownServerError:
                    if not self._configuring:
                        raise
                else:
                    if done(connection):
                        return connection
                await self._state_pulse.wait()
        return self.connection(server_id)

    def client(self, server_id: str) -> Client:
        """The live client of a running server."""
        return self.connection(server_id).client

    def report_error(self, server_id: str, error: MCPError) -> None:
        """A request to ``server_id`` failed; let its connection decide whether to reconnect."""
        connection = self._connections.get(server_id)
        if connection is not None:
            connection.report_error(error)

    def protocol_version(self, server_id: str) -> str:
        """The negotiated revision of a running server."""
        connection = self.connection(server_id)
        _ = connection.client
        return connection.protocol_version or ""

    # ConnectionEvents, from the connections.

    def state_changed(self, connection: ServerConnection) -> None:
        """Forward a connection's new state to the host."""
        self._pulse()
        if connection.state is ServerState.RUNNING:
            self.broker.server_running(connection.id)
        else:
            self.broker.forget_server(connection.id)
        self._events.server_changed(self._status(connection))
        for observer in self.observers:
            observer.server_state(connection)

    def log_line(self, connection: ServerConnection, line: str) -> None:
        """Forward a server's stderr line."""
        self._events.server_log(connection.id, line)

    def roots_answered(self, connection: ServerConnection, roots: Sequence[Root]) -> None:
        """Audit a ``roots/list`` answer; a list of resources fetched with other roots is not kept."""
        self.broker.roots_answered(connection.id, [root.uri for root in roots])
        if self._audit is not None:
            self._audit.append(connection.config.identity, connection.protocol_version, roots)

    def notification(self, connection: ServerConnection, message: types.ServerNotification) -> None:
        """Hand resource notifications to the broker."""
        self.broker.handle_notification(connection.id, message)
        for observer in self.observers:
            observer.server_notification(connection.id, message)

    async def connected(self, connection: ServerConnection, client: Client) -> None:
        """While connected: re-establish subscriptions and serve listen streams."""
        await self.broker.resubscribe(connection.id)
        await self.broker.serve_subscriptions(connection.id, client)

    def launched(self, connection: ServerConnection, launch: Launch) -> None:
        """Audit how a server is started: its folders on the command line and its sandbox."""
        if self._audit is not None:
            self._audit.append_launch(connection.config.identity, launch)

    def sandbox_refused(self, connection: ServerConnection, refusal: Refusal) -> None:
        """Forward a sandbox refusal to the host."""
        logger.warning("[%s] the sandbox refused it %s (not shared with it)", connection.id, refusal.path)
        self._events.sandbox_refused(connection.id, refusal)

    def client_options(self, connection: ServerConnection) -> dict[str, Any]:
        """The observers' extra ``mcp.Client`` options for the connection's next session."""
        options: dict[str, Any] = {}
        for observer in self.observers:
            options.update(observer.client_options(connection.id))
        return options

    # Internals.

    def _set_state(self, connection: ServerConnection, state: ServerState) -> None:
        """Set a connection's state from outside its task (only while it is not running)."""
        connection.state = state
        self._pulse()
        self._events.server_changed(self._status(connection))

    def _pulse(self) -> None:
        """Wake every :meth:`wait_for` to judge the servers again."""
        self._state_pulse.set()
        self._state_pulse = anyio.Event()

    def _hold_untrusted(self, connection: ServerConnection) -> None:
        connection.last_error = "you did not trust this workspace-defined server; it is not started"
        self._set_state(connection, ServerState.STOPPED)

    def _status(self, connection: ServerConnection) -> ServerStatus:
        return connection.status(self.registry.roots_for(connection.id), self.registry.visible_through(connection.id))

    def _needs_trust(self, connection: ServerConnection) -> bool:
        return connection.config.workspace_defined and self.policy.trusted(connection.config.identity) is not True

    def _new_connection(self, config: ServerConfig) -> ServerConnection:
        transport = transport_for(
            config,
            self._connection_settings,
            allowed_read=lambda: self.policy.read_only_paths(config.identity),
            workspace_folders=self._candidate_paths,
            shared_read_only=lambda: self.policy.shared_read_only(config.identity),
        )
        return ServerConnection(
            config,
            transport=transport,
            roots=lambda: self.registry.roots_for(config.id),
            events=self,
            settings=self._connection_settings,
        )

    def _candidate_paths(self) -> list[str]:
        paths: list[str] = []
        for candidate in self.registry.candidates:
            try:
                paths.append(parse_file_uri(candidate.uri))
            except UriError:
                continue
        return paths

    def _consent_changed(self, identities: frozenset[str]) -> None:
        """A sandbox also holds the paths a user allowed read-only after a refusal: when those change, restart.

        Called in the thread that changed consent; the restart itself happens on the event loop."""
        token = self._token
        if token is None or threading.get_ident() == self._loop_thread:
            self._restart_for_read_only(identities)
            self._trust_changed(identities)
        else:
            anyio.from_thread.run_sync(self._restart_for_read_only, identities, token=token)
            anyio.from_thread.run_sync(self._trust_changed, identities, token=token)

    def _trust_changed(self, identities: frozenset[str]) -> None:
        """Trust given or withdrawn anywhere (another window, ``host-bridge consent trust``, ``connect
        --trust-workspace-servers``) applies to this hub's workspace-defined servers at once: a server waiting for it
        starts; one no longer trusted stops."""
        for connection in list(self._connections.values()):
            config = connection.config
            if not config.workspace_defined or config.identity.key not in identities:
                continue
            trusted = self.policy.trusted(config.identity)
            held = connection.state is ServerState.AWAITING_TRUST or (
                connection.state is ServerState.STOPPED and connection not in self._running
            )
            if trusted is True and held:
                connection.last_error = None
                self.apply_trust(connection.id, True)
            elif trusted is False and connection.state is not ServerState.STOPPED:
                self.apply_trust(connection.id, False)

    def _restart_for_read_only(self, identities: frozenset[str]) -> None:
        for connection in self._connections.values():
            launch = connection.launch
            if connection.config.identity.key not in identities or launch is None or launch.policy is None:
                continue
            allowed = tuple(self.policy.read_only_paths(connection.config.identity))
            read_only = set(self.policy.shared_read_only(connection.config.identity)) & set(launch.folders)
            if launch.policy.enforced and (allowed != launch.allowed_read or read_only != set(launch.read_only)):
                logger.info("[%s] the paths it may read changed; restarting it with the new sandbox", connection.id)
                connection.restart()

    def _add(self, config: ServerConfig) -> None:
        connection = self._connections[config.id] = self._new_connection(config)
        if self._needs_trust(connection):
            if self.policy.trusted(config.identity) is False:
                self._hold_untrusted(connection)
            else:
                self._set_state(connection, ServerState.AWAITING_TRUST)
        elif self._tasks is not None:
            self._start(connection)

    def _start(self, connection: ServerConnection) -> None:
        if self._tasks is None:
            return
        connection.state = ServerState.STARTING
        self._pulse()
        self._tasks.start_soon(self._own, connection, name=f"mcp-server {connection.id}")

    async def _own(self, connection: ServerConnection) -> None:
        done = self._running[connection] = anyio.Event()
        try:
            await connection.run()
        except Exception:
            logger.exception("[%s] connection task failed", connection.id)
            connection.last_error = "host_bridge failed while managing this server; see the log"
            self._set_state(connection, ServerState.FAILED)
        finally:
            done.set()
            self._running.pop(connection, None)

    def _remove(self, server_id: str) -> None:
        connection = self._connections.pop(server_id)
        connection.stop()
        self.registry.remove_server(server_id)
        self.broker.forget_server(server_id)

    def _roots_changed(self, server_id: str, roots: tuple[Root, ...]) -> None:
        connection = self._connections.get(server_id)
        if connection is None:
            return
        self._events.server_changed(self._status(connection))
        self.broker.roots_changed(server_id)
        if self._tasks is not None:
            self._tasks.start_soon(connection.roots_changed, roots)

    async def _stop_all(self) -> None:
        running = list(self._running.items())
        for connection, _ in running:
            connection.stop()
        for _, done in running:
            await done.wait()
