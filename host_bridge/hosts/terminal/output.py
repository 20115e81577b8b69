"""What ``connect`` prints: results and progress, problems and server logs, the hub's events and the tables.

One table formatter (:func:`format_table`) serves every table the command line prints: the candidate folders
(``host-bridge roots``, ``connect``) and the resources (``connect --list``).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from typing import TextIO

import anyio

from host_bridge.consent.identity import ServerIdentity
from host_bridge.hub.audit import AuditLog
from host_bridge.hub.models import ServerState, ServerStatus
from host_bridge.hub.resources.labels import sanitize_label
from host_bridge.hub.resources.models import ResourceItem
from host_bridge.roots import Root
from host_bridge.sandbox.refusals import Refusal
from host_bridge.text import visible
from host_bridge.uris import UriError, parse_file_uri
from host_bridge.workspace.models import Detection


class Terminal:
    """Where ``connect`` writes: results and progress on ``out``, problems and server logs on ``err``."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        """Results and progress."""
        self.err = err
        """Warnings, errors and server stderr lines."""

    def say(self, text: str) -> None:
        """Print a line of results or progress."""
        print(text, file=self.out, flush=True)

    def warn(self, text: str) -> None:
        """Print a line about a problem."""
        print(text, file=self.err, flush=True)

    def write(self, text: str) -> None:
        """Print resource text as it is (controls removed when ``out`` is a terminal), ending the line."""
        if is_tty(self.out):
            text = "\n".join(sanitize_label(line) for line in text.split("\n"))
        self.out.write(text if text.endswith("\n") else text + "\n")
        self.out.flush()


class TerminalEvents:
    """The hub's events as terminal lines (implements ``HubEvents``); wakes waiters on every event."""

    def __init__(self, terminal: Terminal, *, show_logs: bool, show_changes: bool) -> None:
        self.closing = False
        """Set while shutting down, when servers stopping is expected and not reported."""
        self._terminal = terminal
        self._show_logs = show_logs
        self._show_changes = show_changes
        self._states: dict[str, ServerState] = {}
        """Server id → the state last seen."""
        self.answered: set[str] = set()
        """Servers that were answered a non-empty ``roots/list``."""
        self.relisted: set[str] = set()
        """Servers that announced a changed resource list after their last non-empty roots answer."""
        self._arrived = anyio.Event()

    def server_changed(self, status: ServerStatus) -> None:
        """Report state changes (not every status update, which roots changes also cause)."""
        previous = self._states.get(status.id)
        self._states[status.id] = status.state
        if status.state is not previous:
            self._report(status, previous)
        self._arrived.set()

    def server_log(self, server_id: str, line: str) -> None:
        """A server's stderr line, shown only when asked for."""
        if self._show_logs:
            self._terminal.warn(f"[{server_id}] {sanitize_label(line)}")
        self._arrived.set()

    def resources_changed(self, server_id: str) -> None:
        """A server's resource list changed."""
        if server_id in self.answered:
            self.relisted.add(server_id)
        if self._show_changes:
            self._terminal.say(f"[{server_id}] resource list changed")
        self._arrived.set()

    def resource_updated(self, server_id: str, uri: str) -> None:
        """A subscribed resource changed."""
        if self._show_changes:
            self._terminal.say(f"[{server_id}] updated {sanitize_label(uri)}")
        self._arrived.set()

    def notice(self, server_id: str | None, message: str) -> None:
        """Something the user should know."""
        prefix = f"[{server_id}] " if server_id else ""
        self._terminal.warn(f"{prefix}note: {sanitize_label(message)}")
        self._arrived.set()

    def sandbox_refused(self, server_id: str, refusal: Refusal) -> None:
        """Say which path the sandbox refused and how to share it (the terminal asks nothing mid-run)."""
        self._terminal.warn(
            f"[{server_id}] note: the sandbox refused it {visible(refusal.path)}; to share {visible(refusal.folder)}, "
            f"run again with --allow {shlex.quote(refusal.folder)}"
        )
        self._arrived.set()

    def roots_answered(self, server_id: str, roots: Sequence[Root]) -> None:
        """A server asked for its roots and was answered ``roots``."""
        shared = ", ".join(root_label(root) for root in roots) if roots else "(nothing shared)"
        if roots:
            self.answered.add(server_id)
            self.relisted.discard(server_id)
        self._terminal.say(f"[{server_id}] roots/list answered: {shared}")
        self._arrived.set()

    async def wait_for(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``condition()`` holds, re-checking after every event; whether it did within ``timeout``."""
        with anyio.move_on_after(timeout):
            while not condition():
                self._arrived = anyio.Event()
                await self._arrived.wait()
            return True
        return False

    def _report(self, status: ServerStatus, previous: ServerState | None) -> None:
        name = f"[{status.id}]"
        error = sanitize_label(status.last_error) if status.last_error else None
        if status.state is ServerState.RUNNING:
            self._terminal.say(f"{name} running (protocol {status.protocol_version or 'unknown'})")
        elif status.state is ServerState.FAILED:
            self._terminal.say(f"{name} failed: {error or 'no reason was given'}")
        elif status.state is ServerState.RESTARTING:
            self._terminal.say(f"{name} restarting" + (f" after: {error}" if error else ""))
        elif status.state is ServerState.AWAITING_TRUST:
            self._terminal.say(f"{name} is not started: it needs your trust")
        elif status.state is ServerState.STOPPED and previous is not None and not self.closing:
            self._terminal.say(f"{name} stopped" + (f": {error}" if error else ""))


class AnnouncingAuditLog(AuditLog):
    """The audit log, also telling the terminal each ``roots/list`` answer as it is recorded."""

    def __init__(self, storage_dir: str, on_answer: Callable[[str, Sequence[Root]], None]) -> None:
        super().__init__(storage_dir)
        self._on_answer = on_answer

    def append(self, identity: ServerIdentity, protocol_version: str | None, roots: Sequence[Root]) -> None:
        """Record the answer, then announce it."""
        super().append(identity, protocol_version, roots)
        self._on_answer(identity.server_id, roots)


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table: every column but the last padded to its widest cell, two spaces apart, no trailing
    spaces."""
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header) - 1)]
    return "\n".join(
        "  ".join([*(cell.ljust(widths[c]) for c, cell in enumerate(row[:-1])), row[-1]]).rstrip()
        for row in [header, *rows]
    )


def candidate_table(result: Detection) -> str:
    """The candidates: name, kinds, markers and path, nested ones indented."""
    if not result.candidates:
        return "no candidate folders found"
    depth: dict[str, int] = {}
    rows: list[tuple[str, str, str, str]] = []
    for candidate in result.candidates:
        level = depth.get(candidate.parent, -1) + 1 if candidate.parent else 0
        depth[candidate.uri] = level
        try:
            where = parse_file_uri(candidate.uri)
        except UriError:
            where = candidate.uri
        rows.append(("  " * level + candidate.name, ",".join(candidate.kinds), " ".join(candidate.markers), where))
    return format_table(("NAME", "KINDS", "MARKERS", "PATH"), rows)


def resource_table(items: Sequence[ResourceItem]) -> str:
    """The resources: server, URI, name and MIME type."""
    if not items:
        return "no resources"
    rows = [(i.server, sanitize_label(i.uri), i.name, i.mime_type or "") for i in items]
    return format_table(("SERVER", "URI", "NAME", "MIMETYPE"), rows)


def root_label(root: Root) -> str:
    try:
        where = parse_file_uri(root.uri)
    except UriError:
        where = root.uri
    return f"{where} ({root.name})" if root.name else where


def is_tty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except ValueError:
        return False
