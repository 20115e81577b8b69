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
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import anyio

from host_bridge.consent.policy import ConsentPolicy, Decision
from host_bridge.consent.store import ConsentStore, ConsentStoreError
from host_bridge.core import CoreSettings, open_core
from host_bridge.hosts.terminal.options import (
    ConnectOptions,
    UsageError,
    allowed_folder,
    configured_servers,
    with_folders,
)
from host_bridge.hosts.terminal.output import (
    AnnouncingAuditLog,
    Terminal,
    TerminalEvents,
    candidate_table,
    is_tty,
    resource_table,
    root_label,
)
from host_bridge.hosts.terminal.prompts import NO_TERMINAL, ask_all, record
from host_bridge.hub.config import ServerConfig
from host_bridge.hub.connection import ConnectionSettings
from host_bridge.hub.describe import reach_sentence
from host_bridge.hub.errors import HubError, ResourceNotFoundError
from host_bridge.hub.hub import Hub
from host_bridge.hub.models import ServerState
from host_bridge.hub.resources.labels import sanitize_label
from host_bridge.hub.resources.models import ResourceItem
from host_bridge.hub.resources.reads import base64_size
from host_bridge.roots import Root
from host_bridge.system import IS_WINDOWS
from host_bridge.uris import path_to_uri
from host_bridge.workspace.detect import detect
from host_bridge.workspace.models import Candidate, WorkspaceFolder

_SETTLED = frozenset({ServerState.RUNNING, ServerState.FAILED, ServerState.STOPPED, ServerState.AWAITING_TRUST})
"""States a server stays in without further action; starting and restarting ones are still on their way."""


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
    servers = configured_servers(options, [f for f in folders if os.path.isdir(f)], terminal)
    if options.server_id is not None and options.server_id not in {s.id for s in servers}:
        raise UsageError(f"--server-id {options.server_id!r} is not one of the servers: {_ids(servers)}")
    if options.allow_session and not options.allow:
        raise UsageError("--allow-session applies to --allow PATH; give the folders to share")
    allowed = [allowed_folder(path) for path in options.allow]

    detection = detect([WorkspaceFolder(uri=path_to_uri(folder)) for folder in folders])
    terminal.say(candidate_table(detection))
    for notice in detection.notices:
        terminal.warn(f"note: {notice.message}")
    candidates = with_folders(detection.candidates, allowed)

    store = ConsentStore(options.storage_dir)
    try:
        store.load()
    except ConsentStoreError as error:
        terminal.warn(f"consent store: {error}")
    policy = ConsentPolicy(store)
    granted = Decision.ALLOW_SESSION if options.allow_session else Decision.ALLOW
    for folder in allowed:
        for server in servers:
            record(policy, server, folder, granted, terminal)
    if ask is None and is_tty(sys.stdin):
        ask = input
    if ask is not None:
        ask_all(policy, servers, candidates, terminal, ask)
    elif not allowed:
        terminal.warn(NO_TERMINAL)

    plan = _Plan(options=options, servers=servers, candidates=candidates, policy=policy)
    return anyio.run(_session, plan, terminal)


def _ids(servers: Sequence[ServerConfig]) -> str:
    return ", ".join(s.id for s in servers)


async def _session(plan: _Plan, terminal: Terminal) -> int:
    options = plan.options
    events = TerminalEvents(terminal, show_logs=options.verbose or options.follow, show_changes=options.follow)
    audit = AnnouncingAuditLog(options.storage_dir, events.roots_answered)
    work = anyio.CancelScope()
    code = 0
    settings = CoreSettings(connection=ConnectionSettings(sandbox=options.sandbox))
    async with open_core(options.storage_dir, events, settings=settings, audit=audit, policy=plan.policy) as core:
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
        shared = ", ".join(root_label(Root(uri=r.uri, name=r.name)) for r in status.shared_roots) or "none"
        terminal.say(f"[{status.id}] shared folders: {shared}")
        terminal.say(f"[{status.id}] {reach_sentence(status)}")
        if status.sandbox is not None:
            terminal.say(f"[{status.id}] sandbox: {status.sandbox.summary}")
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
    terminal.say(resource_table(items))
    return 0


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
