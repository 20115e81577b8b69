"""``host-bridge connect``: the hub run from a terminal, with consent asked on the terminal.

Candidates are detected in the given folders and printed; the servers come from ``--server`` and ``--config``
(or this repository's example server), and from the ``.vscode/mcp.json`` and ``.mcp.json`` of the given folders
(those start only once trusted). Before any server starts, the saved decisions that apply are listed and the user
is asked on the terminal about each undecided folder for each server. Without a terminal nothing is guessed: only
the folders named with ``--allow`` are shared. Then the hub runs as in the sidecar: servers are given the allowed
folders as roots, ``--list`` and ``--read`` go through the resource broker, and ``--follow`` prints changes until
Ctrl-C.

Exit codes: 0 done; 1 no server could be used (its command is missing, it exited at once, it did not start in
time, its URL cannot be reached, it is not trusted), or a requested listing or read failed; 2 a usage error (a
named folder is missing, options that do not go together); 130 interrupted.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import logging
import os
import shlex
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from host_bridge.consent.policy import ConsentPolicy, Decision
from host_bridge.consent.store import ConsentStore, ConsentStoreError
from host_bridge.core import CoreSettings, open_core
from host_bridge.hosts.tables import candidate_table, is_tty, table_width
from host_bridge.hosts.terminal.options import (
    TRUST_FLAG,
    ConnectOptions,
    UsageError,
    allowed_folder,
    broad_folder,
    configured_servers,
    named_folder,
    with_folders,
)
from host_bridge.hosts.terminal.output import (
    AnnouncingAuditLog,
    Terminal,
    TerminalEvents,
    resource_table,
    root_label,
    tail,
    template_table,
)
from host_bridge.hosts.terminal.prompts import (
    NO_TERMINAL,
    Ask,
    Quit,
    ask_all,
    ask_trust,
    asking_order,
    confirm_broad,
    needs_trust,
    record,
    report_remembered,
    terminal_ask,
    trust,
    untrusted_note,
)
from host_bridge.hub.config import ServerConfig
from host_bridge.hub.connection import ServerConnection
from host_bridge.hub.describe import reach_sentence
from host_bridge.hub.errors import HubError, ResourceNotFoundError
from host_bridge.hub.hub import Hub
from host_bridge.hub.models import ServerState
from host_bridge.hub.resources.labels import sanitize_label
from host_bridge.hub.resources.models import ReadResult, ResourceItem, TemplateItem
from host_bridge.hub.resources.reads import base64_size
from host_bridge.hub.settings import ConnectionSettings
from host_bridge.roots import Root
from host_bridge.sandbox.diagnosis import SandboxAction
from host_bridge.system import IS_WINDOWS
from host_bridge.text import visible
from host_bridge.uris import path_to_uri
from host_bridge.workspace.detect import detect
from host_bridge.workspace.models import Candidate, WorkspaceFolder

_SETTLED = frozenset(
    {
        ServerState.RUNNING,
        ServerState.FAILED,
        ServerState.STOPPED,
        ServerState.AWAITING_TRUST,
        ServerState.AWAITING_FOLDERS,
    }
)
"""States a server stays in without further action; starting and restarting ones are still on their way."""
STDERR_LINES = 10
"""Last stderr lines shown for a server that could not be used."""
NOT_USABLE = 1
"""Exit code: no server could be used, or a listing or read failed."""
USAGE = 2
"""Exit code: the command line cannot be followed."""
INTERRUPTED = 130
"""Exit code after Ctrl-C."""


@dataclass(frozen=True)
class _Plan:
    """Everything decided before the event loop starts."""

    options: ConnectOptions
    servers: tuple[ServerConfig, ...]
    candidates: tuple[Candidate, ...]
    policy: ConsentPolicy


@dataclass
class _Document:
    """What ``--json`` prints: the servers, then what was listed or read."""

    servers: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    resources: list[dict[str, Any]] | None = None
    templates: list[dict[str, Any]] | None = None
    read: dict[str, Any] | None = None

    def to_json(self) -> str:
        payload: dict[str, Any] = {"servers": self.servers}
        for name in ("resources", "templates", "read"):
            if (value := getattr(self, name)) is not None:
                payload[name] = value
        return json.dumps(payload, indent=2, ensure_ascii=False)


def connect(args: argparse.Namespace) -> int:
    """Run ``host-bridge connect``; the exit code (see the module docstring)."""
    options = ConnectOptions.from_args(args)
    terminal = Terminal(sys.stdout, sys.stderr, quiet=options.quiet)
    if not options.verbose:
        # What the connections log (a crash, a failure) is said on the terminal, with the server's stderr.
        logging.getLogger("host_bridge.hub.connection").setLevel(logging.CRITICAL)
    try:
        return run(options, terminal)
    except UsageError as error:
        terminal.warn(f"host-bridge connect: {error}")
        return USAGE
    except Quit:
        terminal.warn("quit: the answers you gave are kept; no server was started")
        return 0
    except KeyboardInterrupt:
        terminal.warn("interrupted; nothing more was shared")
        return INTERRUPTED


def run(options: ConnectOptions, terminal: Terminal, *, ask: Ask | None = None) -> int:
    """Detect, ask for consent, then run the hub for what ``options`` request.

    ``ask`` shows a question and reads one answer; by default from stdin when it is a terminal.
    Raises :class:`UsageError` and :class:`~host_bridge.hosts.terminal.prompts.Quit`.
    """
    options.check()
    folders = [named_folder(path, path) for path in options.paths]
    if ask is None and is_tty(sys.stdin):
        ask = terminal_ask(terminal)
    servers = configured_servers(options.choice, folders, terminal)
    allowed = [allowed_folder(path) for path in options.allow]
    for folder in allowed:
        what = broad_folder(folder)
        if what is not None and not options.confirm_broad:
            confirm_broad(folder, what, terminal, ask, action=f"--allow {folder}")

    detection = detect([WorkspaceFolder(uri=path_to_uri(os.path.abspath(path))) for path in options.paths])
    terminal.say(candidate_table(detection, width=terminal.width()))
    for notice in detection.notices:
        terminal.warn(f"note: {notice.message}")
    candidates = with_folders(detection.candidates, allowed)

    store = ConsentStore(options.storage_dir)
    try:
        store.load()
    except ConsentStoreError as error:
        terminal.warn(f"consent store: {error}")
    policy = ConsentPolicy(store)
    order = asking_order(candidates, [path_to_uri(folder) for folder in folders])
    report_remembered(policy, servers, order, terminal)
    _allow(policy, servers, allowed, options.allow_session, terminal)
    if options.trust_workspace:
        for server in servers:
            if needs_trust(policy, server):
                trust(policy, server, terminal)
    elif ask is not None:
        ask_trust(policy, servers, terminal, ask)
    else:
        untrusted_note(policy, servers, terminal)
    if ask is not None:
        ask_all(policy, servers, order, terminal, ask)
    elif not allowed:
        terminal.warn(NO_TERMINAL)

    plan = _Plan(options=options, servers=servers, candidates=candidates, policy=policy)
    return anyio.run(_session, plan, terminal)


def _allow(
    policy: ConsentPolicy,
    servers: Sequence[ServerConfig],
    folders: Sequence[str],
    session_only: bool,
    terminal: Terminal,
) -> None:
    """Share ``folders`` with every server. For this session only, a saved decision is never changed: a saved allow
    already shares the folder, and a saved deny stays for later sessions."""
    for folder in folders:
        for server in servers:
            saved = policy.decision(server.identity, folder)
            if session_only:
                if saved is Decision.ALLOW:
                    continue
                if saved is Decision.DENY:
                    terminal.warn(
                        f"[{server.id}] {visible(folder)}: shared this session only; your saved deny stays for later"
                    )
                record(policy, server, folder, Decision.ALLOW_SESSION, terminal)
            else:
                if saved is Decision.DENY:
                    terminal.warn(f"[{server.id}] {visible(folder)}: was denied; --allow now allows it")
                record(policy, server, folder, Decision.ALLOW, terminal)


async def _session(plan: _Plan, terminal: Terminal) -> int:
    options = plan.options
    events = TerminalEvents(terminal, show_logs=options.verbose or options.follow, show_changes=options.follow)
    audit = AnnouncingAuditLog(options.storage_dir, events.roots_answered)
    work = anyio.CancelScope()
    code = 0
    settings = CoreSettings(connection=ConnectionSettings(sandbox=options.sandbox, network=options.network))
    async with open_core(options.storage_dir, events, settings=settings, audit=audit, policy=plan.policy) as core:
        core.tasks.start_soon(_cancel_on_interrupt, work, terminal)
        core.registry.set_candidates(plan.candidates)
        with work:
            await core.hub.configure(plan.servers)
            code = await _work(core.hub, events, options, terminal)
        events.closing = True
    if work.cancel_called:
        return 0 if options.follow else INTERRUPTED
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
    def settled(connection: ServerConnection) -> bool:
        # One that failed before it ever ran (exited at once, unreachable) is not waited for while it retries.
        return connection.state in _SETTLED or (
            connection.last_error is not None and connection.id not in events.ever_running
        )

    await events.wait_for(lambda: all(settled(c) for c in hub.connections), options.timeout)
    events.settling = False
    document = _Document()
    for connection in hub.connections:
        document.servers.append(_summary(hub, connection, events, options, terminal))
    if not any(c.state is ServerState.RUNNING for c in hub.connections):
        terminal.warn("host-bridge connect: no server could be used")
        if options.json:
            terminal.result(document.to_json())
        return NOT_USABLE
    # A server reads the roots it was answered after answering requests already in flight: before listing,
    # give each server that declares list changes a moment to announce the list its new roots produce.
    await events.wait_for(lambda: _roots_taken_in(hub, events), _ROOTS_GRACE)
    code = 0
    if options.list_resources:
        code = max(code, await _list(hub, options, terminal, document))
    if options.read is not None:
        code = max(code, await _read(hub, options, terminal, document))
    if options.json:
        terminal.result(document.to_json())
    if options.follow:
        terminal.warn("following the servers; press Ctrl-C to stop")
        await anyio.sleep_forever()
    return code


def _summary(
    hub: Hub, connection: ServerConnection, events: TerminalEvents, options: ConnectOptions, terminal: Terminal
) -> dict[str, Any]:
    """Say how ``connection`` ended up (progress when it runs; why not, with its last stderr lines and exit status,
    when it does not); its ``--json`` entry."""
    name = f"[{connection.id}]"
    status = next(s for s in hub.statuses() if s.id == connection.id)
    shared = [root_label(Root(uri=r.uri, name=r.name)) for r in status.shared_roots]
    entry: dict[str, Any] = {"id": connection.id, "state": connection.state.value, "sharedFolders": shared}
    if connection.state is ServerState.RUNNING:
        terminal.say(f"{name} shared folders: {', '.join(shared) or 'none'}")
        terminal.say(f"{name} {reach_sentence(status)}")
        if status.sandbox is not None:
            terminal.say(f"{name} sandbox: {status.sandbox.summary}")
        return entry
    reason = _why_not(connection, options)
    ended = _exit_words(connection.exit_status)
    terminal.warn(f"{name} could not be used: {sanitize_label(reason)}" + (f" ({ended})" if ended else ""))
    lines = tail(connection.log, STDERR_LINES)
    if lines and not options.verbose:
        terminal.warn(f"{name} its last lines on stderr:")
        for line in lines:
            terminal.warn(f"{name}   {line}")
    entry.update({"reason": reason, "stderr": lines})
    if connection.exit_status is not None:
        entry["exitStatus"] = connection.exit_status
    failure = connection.start_failure
    if failure is not None:
        terminal.warn(f"{name} {sanitize_label(failure.sentence)}")
        for action in failure.actions:
            terminal.warn(f"{name}   {sanitize_label(action.title)}: {_terminal_way(action)}")
        entry["sandboxStartFailure"] = failure.model_dump(mode="json", by_alias=True)
    return entry


def _terminal_way(action: SandboxAction) -> str:
    """How to take ``action`` from the terminal."""
    if action.kind == "sandboxOff":
        return "run again with --sandbox off"
    path = shlex.quote(action.path or "")
    if action.kind == "share":
        return f"run again with --allow {path}"
    return f"host-bridge consent let-read {path}, then run again"


def _why_not(connection: ServerConnection, options: ConnectOptions) -> str:
    if connection.state is ServerState.AWAITING_TRUST or (
        connection.config.workspace_defined and connection.state is ServerState.STOPPED
    ):
        return f"it is defined in a folder and not trusted; answer y when asked on a terminal, or add {TRUST_FLAG}"
    if connection.state is ServerState.AWAITING_FOLDERS:
        return "it waits for you to share a folder (its command line names the shared folders); add --allow PATH"
    if connection.last_error is not None:
        return connection.last_error
    return f"it did not start within {options.timeout:g} s (raise --timeout if it is slow)"


def _exit_words(status: int | None) -> str | None:
    if status is None:
        return None
    if status >= 0:
        return f"exit status {status}"
    try:
        return f"ended by {signal.Signals(-status).name}"
    except ValueError:
        return f"ended by signal {-status}"


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


async def _list(hub: Hub, options: ConnectOptions, terminal: Terminal, document: _Document) -> int:
    items: list[ResourceItem] = []
    cursor: str | None = None
    try:
        while True:
            page = await hub.broker.list_resources(options.server_id, cursor)
            items.extend(page.items)
            for warning in page.warnings:
                terminal.warn(f"warning: {warning}")
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        templates: tuple[TemplateItem, ...] = await hub.broker.list_templates(options.server_id)
    except HubError as error:
        terminal.warn(f"host-bridge connect: {error.message}")
        return NOT_USABLE
    if options.json:
        document.resources = [item.to_wire() for item in items]
        document.templates = [item.to_wire() for item in templates]
        return 0
    width = table_width(terminal.out)
    terminal.result(resource_table(items, width=width))
    if templates:
        terminal.result("")
        terminal.result(template_table(templates, width=width))
    return 0


async def _read(hub: Hub, options: ConnectOptions, terminal: Terminal, document: _Document) -> int:
    """Print (or save) ``--read`` from ``--server-id``, or from the first resource server that has it."""
    assert options.read is not None
    uri = options.read
    candidates = [options.server_id] if options.server_id is not None else list(hub.resource_servers())
    if not candidates:
        terminal.warn(f"host-bridge connect: no running MCP server offers resources; cannot read {uri}")
        return NOT_USABLE
    last: HubError | None = None
    for server in candidates:
        try:
            result = await hub.broker.read(server, uri)
        except ResourceNotFoundError as error:
            last = error
            continue
        except HubError as error:
            terminal.warn(f"host-bridge connect: {error.message}")
            return NOT_USABLE
        if options.output is not None:
            return _save(result, options.output, terminal)
        if options.json:
            document.read = {"server": server, **result.to_wire()}
            return 0
        _show(result, terminal)
        return 0
    assert last is not None
    terminal.warn(f"host-bridge connect: {last.message}")
    return NOT_USABLE


def _show(result: ReadResult, terminal: Terminal) -> None:
    """The contents on stdout: text as it is; bytes as they are when stdout is not a terminal."""
    for content in result.contents:
        if content.text is not None:
            terminal.write(content.text)
            continue
        data = _decode(content.blob or "")
        if data is not None and not is_tty(terminal.out):
            terminal.write_bytes(data)
            continue
        try:
            size = base64_size(content.blob or "")
        except ValueError:
            size = 0
        kind = sanitize_label(content.mime_type or "unknown type")
        terminal.result(f"<binary, {size} bytes, {kind}; save it with --output FILE>")


def _save(result: ReadResult, path: str, terminal: Terminal) -> int:
    """Write the contents to ``path``: text as UTF-8, binary contents as their bytes, one after another."""
    chunks: list[bytes] = []
    for content in result.contents:
        if content.text is not None:
            chunks.append(content.text.encode("utf-8"))
            continue
        data = _decode(content.blob or "")
        if data is None:
            terminal.warn(
                f"host-bridge connect: the server sent binary contents of {_uri_label(result)} that are not valid "
                "base64; nothing was saved"
            )
            return NOT_USABLE
        chunks.append(data)
    data = b"".join(chunks)
    try:
        with open(path, "wb") as handle:
            handle.write(data)
    except OSError as error:
        terminal.warn(f"host-bridge connect: cannot write {path}: {error.strerror or error}")
        return NOT_USABLE
    more = f" ({len(chunks)} contents, one after another)" if len(chunks) > 1 else ""
    terminal.say(f"saved {_uri_label(result)} to {path}: {len(data)} bytes{more}")
    return 0


def _uri_label(result: ReadResult) -> str:
    return sanitize_label(result.uri)


def _decode(blob: str) -> bytes | None:
    try:
        return base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        return None


_ROOTS_GRACE = 3.0
"""Seconds to wait for servers to take in their roots before listing or reading."""
