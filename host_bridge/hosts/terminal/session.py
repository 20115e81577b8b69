"""``host-bridge connect``: the hub run from a terminal, with consent asked on the terminal.

Candidates are detected in the given folders and printed; the servers come from ``--server`` and ``--config``
(or this repository's example server). Before any server starts, the user is asked on the terminal about each
undecided folder for each server. Without a terminal nothing is guessed: only the folders named with
``--allow`` are shared. Then the hub runs as in the sidecar: servers are given the allowed folders as roots,
``--list`` and ``--read`` go through the resource broker, and ``--follow`` prints changes until Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import anyio

import host_bridge
from host_bridge.consent.identity import ServerIdentity
from host_bridge.consent.policy import ConsentPolicy, Decision, DecisionNotSaved
from host_bridge.consent.store import ConsentStore, ConsentStoreError
from host_bridge.core import open_core
from host_bridge.hosts.cli import format_table
from host_bridge.hub.audit import AuditLog
from host_bridge.hub.config import ServerConfig, load_config_file, load_servers
from host_bridge.hub.describe import PRODUCT, launch_lines, server_name
from host_bridge.hub.errors import HubError, ResourceNotFoundError
from host_bridge.hub.hub import Hub
from host_bridge.hub.models import ServerState, ServerStatus
from host_bridge.hub.resources.labels import sanitize_label
from host_bridge.hub.resources.models import ResourceItem
from host_bridge.hub.resources.reads import base64_size
from host_bridge.roots import Root, containing
from host_bridge.storage import default_storage_dir
from host_bridge.system import IS_WINDOWS
from host_bridge.text import visible
from host_bridge.uris import UriError, canonical_path, display_name, parse_file_uri, path_to_uri
from host_bridge.workspace.detect import detect
from host_bridge.workspace.models import Candidate, WorkspaceFolder

EXAMPLE_SERVER = Path(host_bridge.__file__).resolve().parents[1] / "examples" / "workspace_server.py"
"""The server used when none is given: this repository's example, run with this interpreter."""
EXAMPLE_SERVER_ID = "workspace"
NO_TERMINAL = (
    "no terminal to ask for consent; pass --allow PATH for each folder to share "
    "(add --allow-session to not remember it)"
)
_ANSWERS: dict[str, Decision | None] = {
    "y": Decision.ALLOW,
    "yes": Decision.ALLOW,
    "s": Decision.ALLOW_SESSION,
    "session": Decision.ALLOW_SESSION,
    "n": None,
    "no": None,
    "d": Decision.DENY,
    "deny": Decision.DENY,
}
"""What each answer to the consent question records (``None``: nothing, ask again next time)."""
_SETTLED = frozenset({ServerState.RUNNING, ServerState.FAILED, ServerState.STOPPED, ServerState.AWAITING_TRUST})
"""States a server stays in without further action; starting and restarting ones are still on their way."""


class UsageError(Exception):
    """The command line cannot be followed; the message says what to change."""


@dataclass(frozen=True)
class ConnectOptions:
    """The ``connect`` command line, validated into types."""

    paths: tuple[str, ...]
    """Folders to detect candidates in."""
    servers: tuple[str, ...]
    """``ID=COMMAND`` specs."""
    config: str | None
    """A ``.vscode/mcp.json`` or ``.mcp.json`` file."""
    storage_dir: str
    """Where consent and the audit log live."""
    allow: tuple[str, ...]
    """Folders to share with every server without asking."""
    allow_session: bool
    """Share the ``allow`` folders for this run only."""
    list_resources: bool
    """List every resource."""
    read: str | None
    """A resource URI to print."""
    server_id: str | None
    """The server ``list_resources`` and ``read`` ask."""
    follow: bool
    """Print changes until interrupted."""
    timeout: float
    """Seconds to wait for the servers to start."""
    verbose: bool
    """Show the servers' stderr."""

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ConnectOptions:
        """Options from the parsed command line (see ``host_bridge.hosts.cli``)."""
        return cls(
            paths=tuple(args.paths or ["."]),
            servers=tuple(args.server),
            config=args.config,
            storage_dir=args.storage_dir or default_storage_dir(),
            allow=tuple(args.allow),
            allow_session=bool(args.allow_session),
            list_resources=bool(args.list),
            read=args.read,
            server_id=args.server_id,
            follow=bool(args.follow),
            timeout=float(args.timeout),
            verbose=bool(getattr(args, "verbose", False)),
        )


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
        if _is_tty(self.out):
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

    def roots_answered(self, server_id: str, roots: Sequence[Root]) -> None:
        """A server asked for its roots and was answered ``roots``."""
        shared = ", ".join(_root_label(root) for root in roots) if roots else "(nothing shared)"
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


@dataclass(frozen=True)
class _Plan:
    """Everything decided before the event loop starts."""

    options: ConnectOptions
    servers: tuple[ServerConfig, ...]
    candidates: tuple[Candidate, ...]
    policy: ConsentPolicy


def connect(args: argparse.Namespace) -> int:
    """Run ``host-bridge connect``; the exit code: 0 done, 1 a requested read or listing failed, 2 usage."""
    terminal = Terminal(sys.stdout, sys.stderr)
    try:
        return run(ConnectOptions.from_args(args), terminal)
    except UsageError as error:
        terminal.warn(f"host-bridge connect: {error}")
        return 2
    except KeyboardInterrupt:
        terminal.warn("interrupted; nothing more was shared")
        return 130


def run(options: ConnectOptions, terminal: Terminal, *, ask: Callable[[str], str] | None = None) -> int:
    """Detect, ask for consent, then run the hub for what ``options`` request.

    ``ask`` reads one answer after showing a question; by default :func:`input` when stdin is a terminal.
    Raises :class:`UsageError`.
    """
    folders = [os.path.abspath(path) for path in options.paths]
    servers = _servers(options, [f for f in folders if os.path.isdir(f)], terminal)
    if options.server_id is not None and options.server_id not in {s.id for s in servers}:
        raise UsageError(f"--server-id {options.server_id!r} is not one of the servers: {_ids(servers)}")
    if options.allow_session and not options.allow:
        raise UsageError("--allow-session applies to --allow PATH; give the folders to share")
    allowed = [_allowed_folder(path) for path in options.allow]

    detection = detect([WorkspaceFolder(uri=path_to_uri(folder)) for folder in folders])
    terminal.say(format_table(detection))
    for notice in detection.notices:
        terminal.warn(f"note: {notice.message}")
    candidates = _with_folders(detection.candidates, allowed)

    store = ConsentStore(options.storage_dir)
    try:
        store.load()
    except ConsentStoreError as error:
        terminal.warn(f"consent store: {error}")
    policy = ConsentPolicy(store)
    granted = Decision.ALLOW_SESSION if options.allow_session else Decision.ALLOW
    for folder in allowed:
        for server in servers:
            _record(policy, server, folder, granted, terminal)
    if ask is None and _is_tty(sys.stdin):
        ask = input
    if ask is not None:
        _ask_all(policy, servers, candidates, terminal, ask)
    elif not allowed:
        terminal.warn(NO_TERMINAL)

    plan = _Plan(options=options, servers=servers, candidates=candidates, policy=policy)
    return anyio.run(_session, plan, terminal)


# Configuration.


def _servers(options: ConnectOptions, folders: Sequence[str], terminal: Terminal) -> tuple[ServerConfig, ...]:
    """The configured servers; usage errors for bad ``--server`` specs, warnings for bad config entries."""
    settings: dict[str, Any] = {}
    for spec in options.servers:
        server_id, entry = _parse_server(spec)
        if server_id in settings:
            raise UsageError(f"--server {server_id!r} is given twice; give each server its own id")
        settings[server_id] = entry
    if not settings and options.config is None:
        if not EXAMPLE_SERVER.is_file():
            raise UsageError(
                f"no servers given, and the example server {EXAMPLE_SERVER} does not exist; "
                "pass --server ID=COMMAND or --config FILE"
            )
        settings[EXAMPLE_SERVER_ID] = {"command": sys.executable, "args": [str(EXAMPLE_SERVER)]}
    loaded = load_servers(settings, [canonical_path(f) for f in folders], read_workspace=False)
    if loaded.problems:
        raise UsageError("; ".join(p.describe("--server") for p in loaded.problems))
    servers = list(loaded.servers)
    if options.config is not None:
        from_file = load_config_file(options.config)
        for problem in from_file.problems:
            terminal.warn(f"warning: {problem.describe('--server')}")
        for server in from_file.servers:
            if server.id in settings:
                terminal.warn(f"warning: {options.config}: server {server.id!r} is also given with --server; skipped")
            else:
                servers.append(server)
    if not servers:
        raise UsageError(f"{options.config} has no usable MCP server")
    return tuple(servers)


def _parse_server(spec: str) -> tuple[str, dict[str, Any]]:
    """``ID=COMMAND`` → the id and a config entry (``COMMAND`` split like a shell would)."""
    server_id, separator, command = spec.partition("=")
    example = "e.g. --server files='npx -y @modelcontextprotocol/server-filesystem'"
    if not separator or not server_id.strip():
        raise UsageError(f"--server {spec!r}: write ID=COMMAND, {example}")
    try:
        words = shlex.split(command)
    except ValueError as error:
        raise UsageError(f"--server {spec!r}: {error}") from None
    if not words:
        raise UsageError(f"--server {spec!r}: the command is empty; {example}")
    return server_id.strip(), {"command": words[0], "args": words[1:]}


def _ids(servers: Sequence[ServerConfig]) -> str:
    return ", ".join(s.id for s in servers)


def _allowed_folder(path: str) -> str:
    """The canonical path of an ``--allow`` folder; a usage error unless it is an existing folder."""
    try:
        real = canonical_path(os.path.abspath(path))
    except OSError:
        raise UsageError(f"--allow {path}: no such folder") from None
    if not os.path.isdir(real):
        raise UsageError(f"--allow {path}: not a folder")
    return real


def _with_folders(candidates: Sequence[Candidate], folders: Sequence[str]) -> tuple[Candidate, ...]:
    """``candidates`` plus a candidate for each folder not among them (a folder allowed by name is shared)."""
    known = {c.uri for c in candidates}
    extra = [
        Candidate(uri=uri, name=display_name(folder), kinds=("workspaceFolder",))
        for folder in folders
        if (uri := path_to_uri(folder)) not in known
    ]
    return (*candidates, *extra)


# Consent.


def _ask_all(
    policy: ConsentPolicy,
    servers: Sequence[ServerConfig],
    candidates: Sequence[Candidate],
    terminal: Terminal,
    ask: Callable[[str], str],
) -> None:
    """Ask about every undecided (server, folder) pair; end of input leaves the rest unshared.

    Each server is described once (what runs, where it is defined); a folder inside one already shared with it is
    not asked about, since the server sees it anyway.
    """
    try:
        for server in servers:
            introduced = False
            identity = server.identity
            for candidate in candidates:
                try:
                    folder = parse_file_uri(candidate.uri)
                except UriError:
                    continue
                shared = [c.uri for c in candidates if _allowed(policy, identity, c.uri)]
                through = containing(candidate.uri, shared)
                if through is not None and candidate.uri not in shared:
                    terminal.warn(f"note: {visible(folder)} is visible to {server.id} through {_path(through)}, "
                                  "which is shared with it; not asked")
                    continue
                if policy.decision(identity, folder) is not None:
                    continue
                if not introduced:
                    terminal.warn(_introduction(server))
                    introduced = True
                kinds = ", ".join(candidate.kinds)
                question = (
                    f"  Share {visible(folder)} ({visible(candidate.name)}, {kinds}) with {server.id}? "
                    "[y]es / [s]ession / [n]o / [d]eny always: "
                )
                decision = _answer(question, terminal, ask)
                if decision is not None:
                    _record(policy, server, folder, decision, terminal)
    except EOFError:
        terminal.warn("\nno more answers; the folders not answered are not shared")


def _introduction(server: ServerConfig) -> str:
    ref = server.ref()
    lines = [f"{PRODUCT}: the MCP server {server_name(ref)} would see the folders you share with it.",
             *(f"  {line}" for line in launch_lines(ref))]
    return "\n".join(lines)


def _allowed(policy: ConsentPolicy, identity: ServerIdentity, uri: str) -> bool:
    try:
        return policy.is_allowed(identity, parse_file_uri(uri))
    except UriError:
        return False


def _path(uri: str) -> str:
    try:
        return visible(parse_file_uri(uri))
    except UriError:
        return visible(uri)


def _answer(question: str, terminal: Terminal, ask: Callable[[str], str]) -> Decision | None:
    while True:
        answer = ask(question).strip().lower()
        if answer in _ANSWERS:
            return _ANSWERS[answer]
        terminal.say("please answer y (share, remember), s (share this time), n (not now) or d (never)")


def _record(policy: ConsentPolicy, server: ServerConfig, folder: str, decision: Decision, terminal: Terminal) -> None:
    """Record ``decision``; when it cannot be saved it still holds for this run (an allow for this run only), and
    the user is told."""
    try:
        policy.set(server.identity, folder, decision)
    except DecisionNotSaved as error:
        terminal.warn(f"warning: {error}")


# The running hub.


async def _session(plan: _Plan, terminal: Terminal) -> int:
    options = plan.options
    events = TerminalEvents(terminal, show_logs=options.verbose or options.follow, show_changes=options.follow)
    audit = AnnouncingAuditLog(options.storage_dir, events.roots_answered)
    work = anyio.CancelScope()
    code = 0
    async with open_core(options.storage_dir, events, audit=audit, policy=plan.policy) as core:
        core.tasks.start_soon(_cancel_on_interrupt, work, terminal)
        core.registry.set_candidates(plan.candidates)
        with work:
            await core.hub.configure(plan.servers)
            code = await _work(core.hub, events, options, terminal)
        events.closing = True
    if work.cancel_called:
        return 0 if options.follow else 130
    return code


async def _cancel_on_interrupt(scope: anyio.CancelScope, terminal: Terminal) -> None:
    """Turn Ctrl-C (and SIGTERM) into cancelling ``scope``; the hub then stops every server."""
    if IS_WINDOWS:
        return
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            terminal.warn("stopping the servers…")
            scope.cancel()
            return


async def _work(hub: Hub, events: TerminalEvents, options: ConnectOptions, terminal: Terminal) -> int:
    def settled() -> bool:
        return all(c.state in _SETTLED for c in hub.connections)

    if not await events.wait_for(settled, options.timeout):
        for connection in hub.connections:
            if connection.state not in _SETTLED:
                terminal.warn(f"[{connection.id}] is still {connection.state.value} after {options.timeout:g} s")
    for status in hub.statuses():
        shared = ", ".join(_root_label(Root(uri=r.uri, name=r.name)) for r in status.shared_roots) or "none"
        terminal.say(f"[{status.id}] shared folders: {shared}")
    # A server reads the roots it was answered after answering requests already in flight: before listing,
    # give each server that declares list changes a moment to announce the list its new roots produce.
    await events.wait_for(lambda: _roots_taken_in(hub, events), _ROOTS_GRACE)
    code = 0
    if options.list_resources:
        code = max(code, await _list(hub, options.server_id, terminal))
    if options.read is not None:
        code = max(code, await _read(hub, options.read, options.server_id, terminal))
    if options.follow:
        terminal.warn("following the servers; press Ctrl-C to stop")
        await anyio.sleep_forever()
    return code


def _roots_taken_in(hub: Hub, events: TerminalEvents) -> bool:
    for connection in hub.connections:
        if connection.state is not ServerState.RUNNING or not hub.registry.roots_for(connection.id):
            continue
        if connection.id not in events.answered:
            return False
        resources = connection.capabilities.resources if connection.capabilities else None
        if resources is not None and resources.list_changed and connection.id not in events.relisted:
            return False
    return True


async def _list(hub: Hub, server_id: str | None, terminal: Terminal) -> int:
    items: list[ResourceItem] = []
    cursor: str | None = None
    try:
        while True:
            page = await hub.broker.list_resources(server_id, cursor)
            items.extend(page.items)
            for warning in page.warnings:
                terminal.warn(f"warning: {warning}")
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
    except HubError as error:
        terminal.warn(f"host-bridge connect: {error.message}")
        return 1
    terminal.say(_resource_table(items))
    return 0


def _resource_table(items: Sequence[ResourceItem]) -> str:
    if not items:
        return "no resources"
    header = ("SERVER", "URI", "NAME", "MIMETYPE")
    rows = [(i.server, sanitize_label(i.uri), i.name, i.mime_type or "") for i in items]
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(3)]
    return "\n".join(
        "  ".join([*(cell.ljust(widths[c]) for c, cell in enumerate(row[:3])), row[3]]).rstrip()
        for row in [header, *rows]
    )


async def _read(hub: Hub, uri: str, server_id: str | None, terminal: Terminal) -> int:
    """Print ``uri`` from ``server_id``, or from the first resource server that has it."""
    candidates = [server_id] if server_id is not None else list(hub.resource_servers())
    if not candidates:
        terminal.warn(f"host-bridge connect: no running MCP server offers resources; cannot read {uri}")
        return 1
    last: HubError | None = None
    for server in candidates:
        try:
            result = await hub.broker.read(server, uri)
        except ResourceNotFoundError as error:
            last = error
            continue
        except HubError as error:
            terminal.warn(f"host-bridge connect: {error.message}")
            return 1
        for content in result.contents:
            if content.text is not None:
                terminal.write(content.text)
            else:
                try:
                    size = base64_size(content.blob or "")
                except ValueError:
                    size = 0
                terminal.say(f"<binary, {size} bytes, {sanitize_label(content.mime_type or 'unknown type')}>")
        return 0
    assert last is not None
    terminal.warn(f"host-bridge connect: {last.message}")
    return 1


_ROOTS_GRACE = 3.0
"""Seconds to wait for servers to take in their roots before listing or reading."""


def _root_label(root: Root) -> str:
    try:
        where = parse_file_uri(root.uri)
    except UriError:
        where = root.uri
    return f"{where} ({root.name})" if root.name else where


def _is_tty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except ValueError:
        return False
