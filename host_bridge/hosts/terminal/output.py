"""What ``connect`` prints: results, progress, problems and server logs, the hub's events and the tables.

Results (resource lists, contents, followed changes) go to stdout and nothing else does, so ``connect --read URI >
file.md`` writes only the resource; progress, questions, problems and server logs go to stderr.

One table formatter (:func:`format_table`) serves every table the command line prints: the candidate folders
(``host-bridge roots``, ``connect``), the resources and templates (``connect --list``) and the saved decisions
(``consent list``). On a terminal (or with ``COLUMNS`` set) tables fit its width: the widest columns shrink and
their cells are cut with "…" (paths and URIs keep their end); piped, cells are never cut.
"""

from __future__ import annotations

import shlex
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import BinaryIO, TextIO

import anyio

from host_bridge.consent.identity import ServerIdentity
from host_bridge.hosts.tables import format_table, is_tty, table_width
from host_bridge.hub.audit import AuditLog
from host_bridge.hub.models import ServerState, ServerStatus
from host_bridge.hub.resources.labels import sanitize_label
from host_bridge.hub.resources.models import ResourceItem, TemplateItem
from host_bridge.roots import Root
from host_bridge.sandbox.refusals import Refusal
from host_bridge.text import visible
from host_bridge.uris import UriError, parse_file_uri


class Terminal:
    """Where ``connect`` writes: results on ``out``; progress, questions, problems and server logs on ``err``."""

    def __init__(self, out: TextIO, err: TextIO, *, quiet: bool = False) -> None:
        self.out = out
        """Results only."""
        self.err = err
        """Progress, questions, warnings, errors and server stderr lines."""
        self.quiet = quiet
        """Leave out progress (:meth:`say`)."""

    def say(self, text: str) -> None:
        """Print a line of progress (left out when quiet)."""
        if not self.quiet:
            print(text, file=self.err, flush=True)

    def warn(self, text: str) -> None:
        """Print a line about a problem, or a note the user must see."""
        print(text, file=self.err, flush=True)

    def ask(self, question: str) -> None:
        """Show a question (no line break: the answer follows it)."""
        self.err.write(question)
        self.err.flush()

    def result(self, text: str) -> None:
        """Print a line of results."""
        print(text, file=self.out, flush=True)

    def write(self, text: str) -> None:
        """Print resource text: as it is when ``out`` is not a terminal (a file gets exactly the resource); on a
        terminal with controls removed and a final line break."""
        if is_tty(self.out):
            text = "\n".join(sanitize_label(line) for line in text.split("\n"))
            text = text if text.endswith("\n") else text + "\n"
        self.out.write(text)
        self.out.flush()

    def write_bytes(self, data: bytes) -> None:
        """Write binary resource contents to ``out`` as they are (never to a terminal: see :meth:`write`)."""
        self.out.flush()
        binary: BinaryIO = self.out.buffer
        binary.write(data)
        binary.flush()

    def width(self) -> int | None:
        """The width tables printed on ``err`` should fit (:func:`table_width`)."""
        return table_width(self.err)


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
        self.ever_running: set[str] = set()
        """Servers that reached ``running`` in this run."""
        self.settling = True
        """Set until the first summary of the servers: failures and restarts are left to it, not reported as they
        happen."""
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
            self._terminal.result(f"[{server_id}] resource list changed")
        self._arrived.set()

    def resource_updated(self, server_id: str, uri: str) -> None:
        """A subscribed resource changed."""
        if self._show_changes:
            self._terminal.result(f"[{server_id}] updated {sanitize_label(uri)}")
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
            self.ever_running.add(status.id)
            self._terminal.say(f"{name} running (protocol {status.protocol_version or 'unknown'})")
        elif self.settling:
            return  # the summary after the servers settled says why each one that is not running is not
        elif status.state is ServerState.FAILED:
            self._terminal.warn(f"{name} failed: {error or 'no reason was given'}")
        elif status.state is ServerState.RESTARTING:
            self._terminal.warn(f"{name} restarting" + (f" after: {error}" if error else ""))
        elif status.state is ServerState.STOPPED and previous is not None and not self.closing:
            self._terminal.warn(f"{name} stopped" + (f": {error}" if error else ""))


class AnnouncingAuditLog(AuditLog):
    """The audit log, also telling the terminal each ``roots/list`` answer as it is recorded."""

    def __init__(self, storage_dir: str, on_answer: Callable[[str, Sequence[Root]], None]) -> None:
        super().__init__(storage_dir)
        self._on_answer = on_answer

    def append(self, identity: ServerIdentity, protocol_version: str | None, roots: Sequence[Root]) -> None:
        """Record the answer, then announce it."""
        super().append(identity, protocol_version, roots)
        self._on_answer(identity.server_id, roots)


def resource_table(items: Sequence[ResourceItem], *, width: int | None = None) -> str:
    """The resources: server, URI, name and MIME type."""
    if not items:
        return "no resources"
    rows = [(i.server, sanitize_label(i.uri), sanitize_label(i.name), i.mime_type or "") for i in items]
    return format_table(("SERVER", "URI", "NAME", "MIMETYPE"), rows, width=width, keep_end=(1,))


def template_table(items: Sequence[TemplateItem], *, width: int | None = None) -> str:
    """The resource templates: server, URI template, name and MIME type."""
    if not items:
        return "no resource templates"
    rows = [(i.server, sanitize_label(i.uri_template), sanitize_label(i.name), i.mime_type or "") for i in items]
    return format_table(("SERVER", "URI TEMPLATE", "NAME", "MIMETYPE"), rows, width=width, keep_end=(1,))


def tail(lines: Iterable[str], count: int) -> list[str]:
    """The last ``count`` of ``lines``, fit for a terminal."""
    return [sanitize_label(line) for line in deque(lines, maxlen=count)]


def root_label(root: Root) -> str:
    try:
        where = parse_file_uri(root.uri)
    except UriError:
        where = root.uri
    return f"{where} ({root.name})" if root.name else where
