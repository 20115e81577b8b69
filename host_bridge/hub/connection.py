"""One MCP server's connection, owned by one task for its whole life.

:meth:`ServerConnection.run` opens the server's transport (:mod:`host_bridge.hub.transports`, chosen once by the hub)
and the official ``mcp`` SDK's client over it, keeps it connected, restarts it with jittered exponential backoff when
it crashes, and gives up after too many crashes in a window. Every SDK context, the transport's included, is entered
and exited in that one task, as the SDK's cancel scopes require. Other tasks talk to the server through
:attr:`ServerConnection.client`.
"""

from __future__ import annotations

import logging
import math
import random
import time
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp import Client, MCPDeprecationWarning, MCPError
from mcp.client.auth import OAuthFlowError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from host_bridge import __version__
from host_bridge.auth.flow import ServerAuth
from host_bridge.auth.loopback import SignInError
from host_bridge.auth.urls import OAuthAddressError
from host_bridge.hub.config import ServerConfig
from host_bridge.hub.errors import ServerNotRunningError
from host_bridge.hub.launch import Launch
from host_bridge.hub.models import Reach, ResourceCapabilities, ServerState, ServerStatus, SharedRoot, SignInStatus
from host_bridge.hub.passage import Passage
from host_bridge.hub.settings import ConnectionSettings
from host_bridge.hub.transports.base import Streams, Transport
from host_bridge.roots import Root, VisibleThrough
from host_bridge.sandbox.diagnosis import StartDiagnosis
from host_bridge.sandbox.refusals import Refusal
from host_bridge.uris import UriError, parse_file_uri

logger = logging.getLogger(__name__)

SUPPORTED_VERSIONS: tuple[str, ...] = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
"""Every protocol revision the SDK (and so host_bridge) can speak."""
REFUSALS_PER_MINUTE = 5
"""Refusals reported per server in a minute (a server writes its own stderr: it cannot raise a flood of questions)."""


class ConnectionEvents(Protocol):
    """What a connection reports to its owner (the hub)."""

    def state_changed(self, connection: ServerConnection) -> None:
        """The state, negotiated version or last error changed."""

    def log_line(self, connection: ServerConnection, line: str) -> None:
        """The server wrote a line to its stderr."""

    def roots_answered(self, connection: ServerConnection, roots: Sequence[Root]) -> None:
        """A ``roots/list`` was answered with ``roots``."""

    def notification(self, connection: ServerConnection, message: types.ServerNotification) -> None:
        """The server sent a notification (resources updated, list changed …)."""

    async def connected(self, connection: ServerConnection, client: Client) -> None:
        """Runs in the connection's own task group for as long as it is connected (e.g. listen streams)."""

    def launched(self, connection: ServerConnection, launch: Launch) -> None:
        """The server is being started as ``launch`` says (its folders, its sandbox)."""

    def sandbox_refused(self, connection: ServerConnection, refusal: Refusal) -> None:
        """The sandbox refused the server a path outside its policy (read from its stderr)."""

    def client_options(self, connection: ServerConnection) -> dict[str, Any]:
        """Extra ``mcp.Client`` options for its next session (the gateway's sampling and elicitation callbacks)."""
        ...


class _PermanentFailure(Exception):
    """Restarting would fail the same way (bad command, unsupported protocol revision)."""


class _Crash(Exception):
    """The connection ended without being asked to."""


class ServerConnection:
    """The life of one configured server: its states, its restarts, its roots; a
    :class:`~host_bridge.hub.transports.base.TransportEvents` for the transport it opens at each start."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        transport: Transport,
        roots: Callable[[], Sequence[Root]],
        events: ConnectionEvents,
        settings: ConnectionSettings | None = None,
    ) -> None:
        self.config = config
        """Launch configuration; replaced only by creating a new connection."""
        self.transport = transport
        """How the server is reached (chosen once, from :attr:`config`)."""
        self.settings = settings or ConnectionSettings()
        self.state = ServerState.STOPPED
        """Current state."""
        self.last_error: str | None = None
        """Why it last failed; kept after a successful restart so the user can see what happened."""
        self.protocol_version: str | None = None
        """Negotiated revision while connected."""
        self.server_info: types.Implementation | None = None
        """The server's self-description while connected."""
        self.capabilities: types.ServerCapabilities | None = None
        """The server's capabilities while connected."""
        self.log: deque[str] = deque(maxlen=self.settings.log_lines)
        """Last lines of the server's log (stderr)."""
        self.exit_status: int | None = None
        """How its process last ended: the exit status, or minus the signal that ended it (``None``: no process of it
        has ended yet). A server that exits at once is reported with it."""
        self.starts = 0
        """How many times a process was started or a connection opened."""
        self._roots = roots
        self._events = events
        self.process_started = False
        """Its process of this start exists: a starting server that is not a command that failed to run."""
        self.roots_asked_at: datetime | None = None
        """When the server last asked for its roots (``None``: never, in this sidecar)."""
        self._client: Client | None = None
        self.passage = Passage(config.id)
        """Plain JSON-RPC requests beside the SDK's session on the same transport (the agent gateway's forwarding)."""
        self._wake = anyio.Event()
        """Set to interrupt a wait: stop, restart or a lost transport."""
        """Set while the state is running."""
        self._stop_requested = False
        self._restart_requested = False
        self._lost: str | None = None
        """Why the transport was lost, set by the transport or the malformed-message budget."""
        self._crashes: deque[float] = deque()
        self._malformed: deque[float] = deque()
        self._fetched_since_notify = False
        """The server asked for roots since the last ``list_changed`` (only then is another one sent)."""
        self._refetched = anyio.Event()
        """Set when it asks for roots after a ``list_changed``."""
        self._ran = False
        """The current start reached running."""
        self._refusal_times: deque[float] = deque()
        """When refusals were last reported (at most :data:`REFUSALS_PER_MINUTE` a minute)."""
        self._answered: tuple[Root, ...] | None = None
        """What the last ``roots/list`` answer contained."""
        self._handshake: anyio.CancelScope | None = None
        """The handshake's deadline, lifted while the user signs in."""
        if transport.sign_in is not None:
            transport.sign_in.on_change = self._sign_in_changed

    @property
    def start_failure(self) -> StartDiagnosis | None:
        """Why its last start may have failed because of its sandbox, and what the user can do (until it runs)."""
        sandbox = self.transport.sandbox()
        return sandbox.start_failure if sandbox is not None else None

    @property
    def id(self) -> str:
        """The server's id."""
        return self.config.id

    @property
    def launch(self) -> Launch | None:
        """How its process was last started (its folders and sandbox), by its transport; ``None`` for a server
        host_bridge does not start, or before its first start."""
        return self.transport.launch

    @property
    def sign_in(self) -> ServerAuth | None:
        """Its sign-in, by its transport (an http server that may ask for one); ``None`` for every other server."""
        return self.transport.sign_in

    @property
    def client(self) -> Client:
        """The live SDK client; raises :class:`ServerNotRunningError` unless running."""
        if self._client is None or self.state is not ServerState.RUNNING:
            raise ServerNotRunningError(self.id, self.state.value, self.last_error)
        return self._client

    def status(self, shared: Sequence[Root], visible: Sequence[VisibleThrough] = ()) -> ServerStatus:
        """The editor-facing status, with ``shared`` as the folders it may see (and ``visible`` inside them)."""
        resources = self.capabilities.resources if self.capabilities else None
        return ServerStatus(
            **self.config.ref().model_dump(),
            state=self.state,
            protocol_version=self.protocol_version,
            server_info=self.server_info.model_dump(mode="json", by_alias=True, exclude_none=True)
            if self.server_info
            else None,
            resources=ResourceCapabilities(
                subscribe=bool(resources.subscribe), list_changed=bool(resources.list_changed)
            )
            if resources
            else None,
            shared_roots=tuple(SharedRoot(uri=r.uri, name=r.name) for r in shared),
            visible_through=tuple(visible),
            last_error=self.last_error,
            roots_asked_at=self.roots_asked_at,
            reach=self._reach(),
            sandbox=self.transport.sandbox(),
            sign_in=self._sign_in_status(),
        )

    def _reach(self) -> tuple[Reach, ...]:
        """How the shared folders reach it: roots it asked for (and was given some), then what its transport says."""
        asked = self.roots_asked_at is not None and bool(self._answered)  # it asked, in this start, and got folders
        return ("roots", *self.transport.reach()) if asked else self.transport.reach()

    def stop(self) -> None:
        """Ask :meth:`run` to disconnect and return."""
        self._stop_requested = True
        self._wake.set()

    def restart(self) -> None:
        """Reconnect now; also revives a server that was left stopped after failures."""
        self._restart_requested = True
        self._crashes.clear()
        self._wake.set()
        if self.state is ServerState.RUNNING:
            # Said at once: the old process must not be reported as running with folders it was never given.
            self._set_state(ServerState.RESTARTING)

    def report_error(self, error: MCPError) -> None:
        """Reconnect when a request failed because the connection or its session is gone.

        The SDK leaves a streamable HTTP session dead after the server forgot it (a 404 on the session id)
        and a stdio session unusable after its process exited; a new connection (with a new ``initialize``)
        is the only remedy. Other errors belong to the request alone.
        """
        message = error.message.lower()
        if error.code == types.CONNECTION_CLOSED:
            if self.transport.closed_request_ends_session:
                self._lose("the server closed the connection")
        elif error.code in (types.INVALID_REQUEST, types.METHOD_NOT_FOUND) and (
            "session" in message or message == "not found"
        ):
            self._lose(f"the server lost the session ({error.message}); reconnecting")

    async def roots_changed(self, roots: Sequence[Root]) -> None:
        """Follow a change of its shared folders: tell it, restart it, or start it.

        A server waiting for folders starts once it has one; a failed server that host_bridge starts is started again
        (consent may be what it lacked). One whose command line or sandbox holds its folders is restarted (a Landlock
        ruleset cannot change), after it was told with ``roots/list_changed`` when it asks for roots, and given a
        moment to ask: a revoke is felt at once, and enforced by the restart. Servers that keep their last list when
        told the new one is empty would go on seeing folders the user revoked, so a shrink to empty restarts the
        server instead.
        """
        folders = _root_paths(roots)
        if self.state is ServerState.AWAITING_FOLDERS:
            if folders:
                logger.info("[%s] a folder is shared with it now; starting it", self.id)
                self.restart()
            return
        if self.state is ServerState.FAILED and self.transport.launch is not None:
            if tuple(sorted(folders)) != self.transport.launch.folders:
                logger.info("[%s] its shared folders changed; starting it again after its failure", self.id)
                self.restart()
            return
        live = self.state in (ServerState.STARTING, ServerState.RESTARTING, ServerState.RUNNING)
        if live and self.transport.needs_restart(folders):
            logger.info(
                "[%s] its shared folders changed; restarting it (its command line or sandbox holds them)", self.id
            )
            if self.state is ServerState.RUNNING and await self._notify_roots_changed():
                with anyio.move_on_after(self.settings.refetch_grace):
                    await self._refetched.wait()
            self.restart()
            return
        if self.state is not ServerState.RUNNING or self._client is None:
            return
        if not roots and self._answered:
            logger.info("[%s] every shared folder was withdrawn; restarting it so it forgets them", self.id)
            self.restart()
            return
        await self._notify_roots_changed()

    async def _notify_roots_changed(self) -> bool:
        """Send ``roots/list_changed`` if it asked for roots since the last one (handshake era); whether it was sent."""
        client = self._client
        if client is None or not self._fetched_since_notify or self.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return False
        self._fetched_since_notify = False
        self._refetched = anyio.Event()
        with warnings.catch_warnings():
            # Roots are deprecated in 2026-07-28 but remain the way to share folders; the warning fires
            # when the coroutine is created, so only that call is covered.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            sending = client.session.send_roots_list_changed()  # pyright: ignore[reportDeprecated]
        try:
            await sending
        except Exception as error:
            logger.warning("[%s] could not send roots/list_changed: %s", self.id, error)
            return False
        return True

    def _needs_folders(self) -> bool:
        """Its launch needs shared folders (``${hostBridge:sharedFolders}``) and none is shared now."""
        return self.config.uses_shared_folders and not _root_paths(self._roots())

    async def run(self) -> None:
        """Connect, stay connected, restart on crashes; returns after :meth:`stop`."""
        while not self._stop_requested:
            self._restart_requested = False
            if self._needs_folders():
                # Started without a folder it would exit or serve nothing; it starts once one is shared.
                self._crashes.clear()
                self.last_error = None
                self._set_state(ServerState.AWAITING_FOLDERS)
                await self._wait_for_request()
                continue
            self._set_state(ServerState.STARTING if not self._crashes else ServerState.RESTARTING)
            try:
                await self._connect_once()
            except _PermanentFailure as failure:
                self._start_ended(str(failure))
                self._fail(str(failure))
                await self._wait_for_request()
                continue
            except _Crash as crash:
                if self._stop_requested:
                    break
                if self._restart_requested:
                    continue
                self._start_ended(str(crash))
                if self._record_crash(str(crash)):
                    await self._wait_for_request()
                    continue
                self._set_state(ServerState.RESTARTING)
                await self._backoff()
        self._set_state(ServerState.STOPPED)

    # TransportEvents, from the transport of the current start.

    def started(self) -> None:
        """Its process exists: tell the owner (not a new state, but now its folders may be asked about)."""
        self.process_started = True
        if self.state is ServerState.STARTING:
            self._events.state_changed(self)

    def exited(self, status: int | None) -> None:
        """Keep how its process ended."""
        if status is not None:
            self.exit_status = status

    def log_line(self, line: str) -> None:
        """Keep a line of its log and pass it on."""
        self.log.append(line)
        self._events.log_line(self, line)

    def lost(self, reason: str) -> None:
        """The connection ended under it: a crash, unless it was being stopped or restarted anyway."""
        if not (self._stop_requested or self._restart_requested):
            self._lose(reason)

    def launched(self, launch: Launch) -> None:
        """Pass on how the server is being started."""
        self._events.launched(self, launch)

    def sandbox_refused(self, refusal: Refusal) -> None:
        """Pass on a path the sandbox refused it, at most :data:`REFUSALS_PER_MINUTE` a minute."""
        now = time.monotonic()
        while self._refusal_times and now - self._refusal_times[0] > 60.0:
            self._refusal_times.popleft()
        if len(self._refusal_times) >= REFUSALS_PER_MINUTE:
            logger.info("[%s] the sandbox refused it %s (not asked about: too many refusals)", self.id, refusal.path)
            return
        self._refusal_times.append(now)
        self._events.sandbox_refused(self, refusal)

    def _start_ended(self, reason: str) -> None:
        """A start failed before it ran: let the transport explain it (its sandbox may be the cause)."""
        if not self._ran:
            self.transport.start_failed(reason, self.exit_status if self.process_started else None)

    # Internals.

    async def _connect_once(self) -> None:
        self._wake = anyio.Event()
        self._lost = None
        self._answered = None
        self._fetched_since_notify = False
        self.process_started = False
        self._ran = False
        self.starts += 1
        try:
            await self._session(self.transport.open(_root_paths(self._roots()), self))
        except Exception as error:
            raise self._classify(_root_cause(error)) from None
        finally:
            self._client = None
            self.protocol_version = None
            self.capabilities = None

    async def _session(self, transport: AbstractAsyncContextManager[Streams]) -> None:
        client = Client(
            self.passage.wrap(transport),
            mode="auto",
            read_timeout_seconds=self.settings.request_timeout,
            list_roots_callback=self._list_roots,
            message_handler=self._on_message,
            client_info=types.Implementation(name="host-bridge", version=__version__),
            **self._events.client_options(self),
        )
        with anyio.CancelScope(deadline=anyio.current_time() + self.settings.initialize_timeout) as handshake:
            self._handshake = handshake
            async with client:
                handshake.deadline = math.inf
                self._handshake = None
                if self.transport.sign_in is not None:
                    self.transport.sign_in.signed_in()
                if self._restart_requested or self._stop_requested:
                    # Asked for during the handshake (its folders changed, and its command line or sandbox holds
                    # them): this process is never reported running, with folders it was not started with.
                    return
                self._client = client
                self.protocol_version = client.protocol_version
                self.server_info = client.server_info
                self.capabilities = client.server_capabilities
                self._ran = True
                self.transport.start_ran()
                self._set_state(ServerState.RUNNING)
                async with anyio.create_task_group() as helpers:
                    helpers.start_soon(self._serve_connected, client)
                    if self._answered is not None and self._answered != tuple(self._roots()):
                        # Consent changed during the handshake, after the server had fetched its roots (it is asked
                        # about while it starts): tell it now, as roots_changed did not while it was starting.
                        helpers.start_soon(self.roots_changed, tuple(self._roots()))
                    await self._wait_for_wake()
                    self._client = None
                    self.passage.close()
                    helpers.cancel_scope.cancel()
        if handshake.cancelled_caught:
            raise _Crash(f"did not finish the MCP handshake within {self.settings.initialize_timeout:g} s")
        if self._lost is not None and not (self._stop_requested or self._restart_requested):
            raise _Crash(self._lost)

    async def _serve_connected(self, client: Client) -> None:
        try:
            await self._events.connected(self, client)
        except Exception:
            logger.exception("[%s] connection helper failed", self.id)

    async def _list_roots(self, context: Any) -> types.ListRootsResult:
        roots = tuple(self._roots())
        reach_before = self._reach()
        self.roots_asked_at = datetime.now(UTC)
        self._fetched_since_notify = True
        self._refetched.set()
        self._answered = roots
        self._events.roots_answered(self, roots)
        if self._reach() != reach_before:
            self._events.state_changed(self)  # the editor's status says how folders reach it; only on a change
        return types.ListRootsResult(roots=[types.Root(uri=r.uri, name=r.name) for r in roots])  # pyright: ignore[reportArgumentType]

    async def _on_message(self, message: types.ServerNotification | Exception) -> None:
        if isinstance(message, Exception):
            now = time.monotonic()
            self._malformed.append(now)
            while self._malformed and now - self._malformed[0] > 60.0:
                self._malformed.popleft()
            logger.warning("[%s] ignored a malformed message: %s", self.id, message)
            if len(self._malformed) > self.settings.malformed_budget:
                self._malformed.clear()
                self._lose(f"sent more than {self.settings.malformed_budget} malformed messages in a minute")
            return
        self._events.notification(self, message)

    def _sign_in_status(self) -> SignInStatus | None:
        sign_in = self.transport.sign_in
        if sign_in is None or sign_in.state is None:
            return None
        return SignInStatus(state=sign_in.state, message=sign_in.message)

    def _sign_in_changed(self) -> None:
        """The sign-in's state changed: status says so; the handshake waits for as long as the user signs in."""
        sign_in, handshake = self.transport.sign_in, self._handshake
        if sign_in is not None and handshake is not None:
            if sign_in.state == "waiting":
                handshake.deadline = math.inf
            elif math.isinf(handshake.deadline):
                handshake.deadline = anyio.current_time() + self.settings.initialize_timeout
        self._events.state_changed(self)

    async def sign_out(self) -> bool:
        """Forget this server's kept sign-in and start it again (it then asks for a sign-in); whether there was one."""
        sign_in = self.transport.sign_in
        if sign_in is None:
            return False
        forgotten = await sign_in.sign_out()
        if self.state is not ServerState.STOPPED:
            self.restart()
        return forgotten

    def _lose(self, reason: str) -> None:
        if self._lost is None:
            self._lost = reason
        self._wake.set()

    def _classify(self, error: BaseException) -> Exception:
        if isinstance(error, _PermanentFailure | _Crash):
            return error
        text = str(error)
        if isinstance(error, RuntimeError) and "Unsupported protocol version" in text:
            theirs = text.rsplit(":", 1)[-1].strip()
            return _PermanentFailure(
                f"the server speaks MCP protocol revision {theirs}, which host_bridge does not support "
                f"(it supports {', '.join(SUPPORTED_VERSIONS)}); update the server or host_bridge"
            )
        if isinstance(error, MCPError) and error.code == types.UNSUPPORTED_PROTOCOL_VERSION:
            return _PermanentFailure(
                f"the server supports none of host_bridge's MCP protocol revisions ({', '.join(SUPPORTED_VERSIONS)}): "
                f"{error.message}; update the server or host_bridge"
            )
        if (permanent := self.transport.permanent_failure(error)) is not None:
            return _PermanentFailure(permanent)
        if isinstance(error, MCPError) and error.code == types.CONNECTION_CLOSED:
            return _Crash(self._lost or "the server closed the connection")
        return _Crash(self._lost or f"{type(error).__name__}: {text}")

    def _record_crash(self, reason: str) -> bool:
        """Count a crash; returns whether the server is now left stopped."""
        now = time.monotonic()
        self._crashes.append(now)
        while self._crashes and now - self._crashes[0] > self.settings.crash_window:
            self._crashes.popleft()
        self.last_error = reason
        logger.warning("[%s] %s", self.id, reason)
        if len(self._crashes) >= self.settings.max_crashes:
            minutes = self.settings.crash_window / 60
            self._fail(
                f"crashed {len(self._crashes)} times in {minutes:g} minutes (last: {reason}); "
                "fix the server, then restart it"
            )
            return True
        return False

    def _fail(self, reason: str) -> None:
        self.last_error = reason
        logger.error("[%s] %s", self.id, reason)
        self._set_state(ServerState.FAILED)

    async def _backoff(self) -> None:
        attempt = max(len(self._crashes), 1)
        delay = min(self.settings.backoff_max, self.settings.backoff_initial * 2 ** (attempt - 1))
        delay *= random.uniform(0.5, 1.0)
        with anyio.move_on_after(delay):
            await self._wait_for_request()

    async def _wait_for_request(self) -> None:
        """Wait for :meth:`stop` or :meth:`restart` (not for a lost transport: there is none now)."""
        while not (self._stop_requested or self._restart_requested):
            self._wake = anyio.Event()
            await self._wake.wait()

    async def _wait_for_wake(self) -> None:
        await self._wake.wait()
        self._wake = anyio.Event()

    def _set_state(self, state: ServerState) -> None:
        if state is not self.state or state is ServerState.FAILED:
            self.state = state
            self._events.state_changed(self)


def _root_paths(roots: Sequence[Root]) -> list[str]:
    paths: list[str] = []
    for root in roots:
        try:
            paths.append(parse_file_uri(root.uri))
        except UriError:
            continue
    return paths


def _root_cause(error: BaseException) -> BaseException:
    """The most telling exception inside (possibly nested) exception groups."""
    leaves: list[BaseException] = []
    pending = [error]
    while pending:
        current = pending.pop(0)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        else:
            leaves.append(current)
    preferences = (_PermanentFailure, _Crash, SignInError, OAuthFlowError, OAuthAddressError, RuntimeError, MCPError)
    for preferred in (*preferences, OSError):
        for leaf in leaves:
            if isinstance(leaf, preferred):
                return leaf
    return leaves[0] if leaves else error
