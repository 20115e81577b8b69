"""Servers host_bridge starts itself: a child process in its OS sandbox, MCP over its stdin and stdout.

Each start is planned anew (:func:`~host_bridge.hub.launch.plan_launch`: the shared folders on its command line, its
sandbox), runs through :func:`~host_bridge.hub.stdio_transport.stdio_transport` (the process, its group, the bounded
line framing), and has its stderr read line by line in a worker thread: each line goes to the server's log, and a
line in which the sandbox refused a path is reported once per folder.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncGenerator, Callable, Sequence

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from host_bridge.hub.config import ServerConfig
from host_bridge.hub.launch import (
    Launch,
    SandboxSetting,
    depends_on_folders,
    network_allowed,
    plan_launch,
    planned_sandbox,
)
from host_bridge.hub.models import Reach, SandboxState
from host_bridge.hub.settings import ConnectionSettings
from host_bridge.hub.stdio_transport import stdio_transport
from host_bridge.hub.transports.base import Streams, TransportEvents
from host_bridge.sandbox.confinement import channels, not_confined_sentence
from host_bridge.sandbox.diagnosis import StartDiagnosis, diagnose_start
from host_bridge.sandbox.refusals import Refusal, find_refusals

logger = logging.getLogger(__name__)

_MAX_STDERR_LINE = 8192
_START_LINES = 200
"""Stderr lines of one start kept for its diagnosis."""


class StdioTransport:
    """A :class:`~host_bridge.hub.transports.base.Transport` for a ``stdio`` server config."""

    closed_request_ends_session = True
    """A closed connection means the process's pipes closed: the session is gone."""
    sign_in = None
    """A process on this machine never asks for a sign-in."""

    def __init__(
        self,
        config: ServerConfig,
        settings: ConnectionSettings,
        *,
        allowed_read: Callable[[], Sequence[str]] = tuple,
        workspace_folders: Callable[[], Sequence[str]] = tuple,
        shared_read_only: Callable[[], Sequence[str]] = tuple,
    ) -> None:
        assert config.command is not None
        self._config = config
        self._settings = settings
        self._allowed_read = allowed_read
        self._workspace_folders = workspace_folders
        self._shared_read_only = shared_read_only
        self._launch: Launch | None = None
        self._refused: set[str] = set()
        """Folders the sandbox refused in this start (each reported once)."""
        self._start_lines: list[str] = []
        """Stderr lines of the current start (capped), for the diagnosis of a start that fails."""
        self._failure: StartDiagnosis | None = None
        """Why its last start may have failed because of its sandbox (until it runs)."""
        self._failed_how: str | None = None
        """How its last start failed, while :attr:`_failure` stands: stderr lines read after the exit (the pipe drains
        after the process is reaped) still join its diagnosis."""
        self._override: SandboxSetting | None = None
        """The sandbox setting the user chose for this session, over the config's."""
        self._first_runtime: tuple[str, ...] | None = None
        """The runtime paths of its first sandboxed start: later starts get nothing beyond them without the user."""

    @property
    def launch(self) -> Launch | None:
        """How the server was last started (its folders and sandbox)."""
        return self._launch

    @contextlib.asynccontextmanager
    async def open(self, folders: Sequence[str], events: TransportEvents) -> AsyncGenerator[Streams]:
        """Plan this start, start the process with its stderr pumped to ``events``, and remove its private temporary
        folder once it is gone."""
        settings = self._settings
        launch = self._launch = plan_launch(
            self._config,
            folders,
            sandbox_default=settings.sandbox,
            sandbox_override=self._override,
            allowed_read=self._allowed_read(),
            workspace_folders=self._workspace_folders(),
            runtime_limit=self._first_runtime,
            read_only=self._shared_read_only(),
            network_default=settings.network,
        )
        try:
            policy = launch.policy
            if policy is not None:
                for warning in policy.warnings:
                    logger.warning("[%s] sandbox: %s", self._config.id, warning)
                if policy.enforced and self._first_runtime is None:
                    self._first_runtime = policy.runtime_paths()
            self._refused = set()
            self._start_lines = []
            self._failed_how = None
            events.launched(launch)
            if policy is not None:
                for grant in policy.withheld:
                    self._refuse(Refusal(path=grant.path, folder=grant.path, line=f"withheld: {grant.why}"), events)
            read_fd, write_fd = os.pipe()
            async with anyio.create_task_group() as helpers:
                helpers.start_soon(self._pump_stderr, read_fd, events)
                async with stdio_transport(
                    launch.command,
                    launch.args,
                    env=launch.env,
                    cwd=launch.cwd,
                    preexec_fn=launch.preexec_fn,
                    stderr=write_fd,
                    server=self._config.id,
                    on_lost=events.lost,
                    on_exit=events.exited,
                    on_started=events.started,
                    max_line_bytes=settings.max_line_bytes,
                    limits=settings.answer_limits(self._config.id),
                ) as streams:
                    yield streams
                helpers.cancel_scope.cancel()
        finally:
            launch.clean_up()

    def needs_restart(self, folders: Sequence[str]) -> bool:
        """Its folders are on its command line or fence its sandbox, and they are not ``folders``."""
        launch = self._launch
        return (
            launch is not None and depends_on_folders(self._config, launch) and tuple(sorted(folders)) != launch.folders
        )

    def reach(self) -> tuple[Reach, ...]:
        """``launch`` when its config passes the shared folders, ``sandbox`` when its sandbox is enforced."""
        reach: list[Reach] = []
        if self._config.uses_shared_folders:
            reach.append("launch")
        launch = self._launch
        if launch is not None and launch.policy is not None and launch.policy.enforced:
            reach.append("sandbox")
        return tuple(reach)

    def sandbox(self) -> SandboxState:
        """Its setting, what this machine enforces of it for the current start, and why a failed start may have
        failed because of it."""
        setting = self._override or self._config.sandbox or self._settings.sandbox
        policy = self._launch.policy if self._launch is not None else None
        if policy is None:
            planned = planned_sandbox(setting)
            network = network_allowed(self._config, self._settings.network)
            return planned.model_copy(update={"network": "on" if network else "off"})
        launch = self._launch
        assert launch is not None
        found = channels(policy, mount_layer=launch.mount_layer)
        summary = policy.summary
        if self._override == "off" and not policy.requested:
            summary = (
                "You turned the sandbox off for this server until host_bridge restarts: it can read and write every "
                "file your account can."
            )
        elif (open_channels := not_confined_sentence(found)) is not None:
            summary = f"{summary} {open_channels}"
        return SandboxState(
            setting=setting,
            enforced=policy.enforced,
            mechanism=policy.mechanism,
            summary=summary,
            warnings=policy.warnings,
            network="on" if policy.network else "off",
            unix_sockets=policy.unix_sockets,
            read_only=launch.read_only,
            channels=found,
            start_failure=self._failure,
        )

    def start_failed(self, reason: str, exit_status: int | None) -> None:
        """Explain a start that failed before it ran, when its sandbox may be the cause."""
        launch = self._launch
        if launch is None or launch.policy is None or not launch.policy.enforced:
            return
        if exit_status is not None and exit_status >= 0:
            how = f"exited with status {exit_status}"
        elif exit_status is not None:
            how = f"was ended by signal {-exit_status}"
        else:
            how = f"failed ({reason})"
        self._failed_how = how
        self._diagnose()

    def _diagnose(self) -> None:
        """(Re)compute the diagnosis of the failed start from the stderr lines read so far."""
        launch = self._launch
        if launch is None or launch.policy is None or self._failed_how is None:
            return
        self._failure = diagnose_start(
            self._start_lines,
            launch.args,
            launch.policy,
            how=self._failed_how,
            workspace_folders=self._workspace_folders(),
            home=os.path.expanduser("~"),
        )

    def start_ran(self) -> None:
        """The start reached running: no failure to explain."""
        self._failure = None
        self._failed_how = None

    def choose_sandbox(self, setting: SandboxSetting) -> None:
        """The user's sandbox setting for this session, over the config's (taken at the next start)."""
        self._override = setting

    def permanent_failure(self, error: BaseException) -> str | None:
        """A command that cannot be run (missing, not executable) fails the same way at every start."""
        if isinstance(error, FileNotFoundError | PermissionError):
            return (
                f"cannot start {self._config.command!r}: {error.strerror or error}; check the command in "
                f"{self._config.source}"
            )
        return None

    async def _pump_stderr(self, fd: int, events: TransportEvents) -> None:
        token = anyio.lowlevel.current_token()

        def deliver(line: bytes) -> None:
            anyio.from_thread.run_sync(self._stderr_line, line, events, token=token)

        await anyio.to_thread.run_sync(
            _read_lines, fd, deliver, abandon_on_cancel=True, limiter=anyio.CapacityLimiter(1)
        )
        events.lost("the server process exited")

    def _stderr_line(self, raw: bytes, events: TransportEvents) -> None:
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        events.log_line(text)
        if len(self._start_lines) < _START_LINES:
            self._start_lines.append(text)
            if self._failed_how is not None:
                self._diagnose()
        policy = self._launch.policy if self._launch is not None else None
        if policy is not None and policy.enforced:
            for refusal in find_refusals([text], policy):
                self._refuse(refusal, events)

    def _refuse(self, refusal: Refusal, events: TransportEvents) -> None:
        """Report a refusal of this start, each folder once."""
        if refusal.folder not in self._refused:
            self._refused.add(refusal.folder)
            events.sandbox_refused(refusal)


def _read_lines(fd: int, deliver: Callable[[bytes], None]) -> None:
    """Read ``fd`` to end-of-file in this worker thread, handing over each line (capped); then close it.

    The reading thread owns the descriptor: closing it from the event loop while a read is blocked would
    hang, and after the loop stopped listening the remaining output is simply drained.
    """
    pending = b""
    try:
        while chunk := os.read(fd, 65536):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            if len(pending) > _MAX_STDERR_LINE:
                lines.append(pending[:_MAX_STDERR_LINE])
                pending = b""
            for line in lines:
                with contextlib.suppress(RuntimeError):
                    deliver(line[:_MAX_STDERR_LINE])
        if pending:
            with contextlib.suppress(RuntimeError):
                deliver(pending)
    finally:
        os.close(fd)
