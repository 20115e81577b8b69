"""The seam between a server's connection and the way it is reached: :class:`Transport`, and what a transport tells
its connection (:class:`TransportEvents`).

A transport knows how to open one start of a server (a child process, an HTTP session …) and what that start means
for the user: how the shared folders reach the server besides roots, its sandbox, which failures would recur on a
restart. The connection keeps the server's life (states, restarts, roots, the handshake) and never asks which
transport it has.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from host_bridge.hub.launch import Launch, SandboxSetting
from host_bridge.hub.models import Reach, SandboxState
from host_bridge.sandbox.refusals import Refusal

Streams = tuple[Any, Any]
"""What ``mcp.Client`` takes from a transport: the stream of messages (or parse errors) from the server, and the
stream of messages to it."""


class TransportEvents(Protocol):
    """What a transport reports about the start it opened: the server's
    :class:`~host_bridge.hub.connection.ServerConnection` hears it."""

    def started(self) -> None:
        """The server exists now (its process was started), before its handshake."""

    def exited(self, status: int | None) -> None:
        """Its process ended with ``status`` (minus the signal that ended it; ``None``: unknown)."""

    def log_line(self, line: str) -> None:
        """The server wrote ``line`` to its log (stderr)."""

    def lost(self, reason: str) -> None:
        """The transport ended the connection itself, or saw it end; ``reason`` says why, for the user."""

    def launched(self, launch: Launch) -> None:
        """The server is being started as ``launch`` says (its folders on the command line, its sandbox)."""

    def sandbox_refused(self, refusal: Refusal) -> None:
        """The sandbox refused the server a path outside its policy."""


class Transport(Protocol):
    """One way of reaching a configured server, made once per connection and opened once per start."""

    @property
    def launch(self) -> Launch | None:
        """How the server's process was last started (its folders and sandbox); ``None`` for a server host_bridge
        does not start, or before its first start."""
        ...

    @property
    def closed_request_ends_session(self) -> bool:
        """Whether a request that failed because the connection closed means the session is gone (a process's pipes
        closed), rather than one response stream (HTTP, where the session lives on)."""
        ...

    def open(self, folders: Sequence[str], events: TransportEvents) -> AbstractAsyncContextManager[Streams]:
        """One start of the server, with ``folders`` (canonical paths) shared with it now: entered and left by the
        connection's own task (through ``mcp.Client``), it yields the streams and owns whatever runs beside them
        until it is left; ``events`` hears what happens meanwhile."""
        ...

    def needs_restart(self, folders: Sequence[str]) -> bool:
        """Whether the current start holds shared folders other than ``folders`` in a way the server cannot be told
        (its command line, its sandbox), so that only a restart gives it the new ones."""
        ...

    def reach(self) -> tuple[Reach, ...]:
        """How the shared folders reach the server besides the roots it asks for (its command line, its sandbox)."""
        ...

    def sandbox(self) -> SandboxState | None:
        """The OS sandbox the server runs in, for its status; ``None`` for a server host_bridge does not start."""
        ...

    def start_failed(self, reason: str, exit_status: int | None) -> None:
        """The current start ended before the server ran (``reason``; its process's ``exit_status`` when known): a
        transport that confines the server explains it in :meth:`sandbox`."""
        ...

    def start_ran(self) -> None:
        """The current start reached running (an earlier failure's explanation is over)."""
        ...

    def choose_sandbox(self, setting: SandboxSetting) -> None:
        """The user's sandbox setting for this session (``off`` after a refused start), over the config's."""
        ...

    def permanent_failure(self, error: BaseException) -> str | None:
        """What to tell the user when ``error`` ended a start and would end every restart the same way (a command that
        does not exist); ``None`` when a restart may help."""
        ...
