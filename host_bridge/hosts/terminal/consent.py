"""``host-bridge consent list|allow|deny|forget``: the saved decisions, read and changed from the terminal.

The same store ``connect`` and the editor sidecar use, with the same identities: a decision belongs to a server as
defined (``--server``, ``--config``, the embedded example server, or the ``.vscode/mcp.json`` / ``.mcp.json`` of the
folders named), its id and its launch configuration. ``allow``, ``deny`` and ``forget`` act for every server named
(or the one of ``--server-id``); ``list`` shows their decisions, or every saved one with ``--all``.

Exit codes: 0 done; 1 the store cannot be read or changed; 2 a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from host_bridge.consent.policy import ConsentPolicy, Decision, DecisionNotSaved
from host_bridge.consent.store import ConsentStore, ConsentStoreError, RootRecord
from host_bridge.hosts.tables import format_table, is_tty, table_width
from host_bridge.hosts.terminal.options import (
    ServerChoice,
    UsageError,
    broad_folder,
    configured_servers,
    named_folder,
)
from host_bridge.hosts.terminal.output import Terminal
from host_bridge.hosts.terminal.prompts import confirm_broad, terminal_ask
from host_bridge.hub.config import ServerConfig
from host_bridge.storage import default_storage_dir
from host_bridge.text import visible
from host_bridge.uris import canonical_path

_SHOWN = {
    "allow": "allow",
    "allowReadOnly": "allow read only",
    "allowSession": "allow this session",
    "allowSessionReadOnly": "allow read only this session",
    "deny": "deny",
    "readOnly": "may read (after a refusal)",
}
_DECISIONS = {"allow": Decision.ALLOW, "deny": Decision.DENY}


def consent(args: argparse.Namespace) -> int:
    """Run ``host-bridge consent ACTION``; the exit code (see the module docstring)."""
    terminal = Terminal(sys.stdout, sys.stderr)
    try:
        return _run(args, terminal)
    except UsageError as error:
        terminal.warn(f"host-bridge consent {args.action}: {error}")
        return 2


def _run(args: argparse.Namespace, terminal: Terminal) -> int:
    store = ConsentStore(args.storage_dir or default_storage_dir())
    try:
        store.load()
    except ConsentStoreError as error:
        terminal.warn(f"consent store: {error}")
    if store.blocked:
        return 1
    policy = ConsentPolicy(store)
    choice = ServerChoice.from_args(args)
    if args.action == "list":
        folders = [named_folder(path, path) for path in args.paths]
        servers = _chosen(configured_servers(choice, folders, terminal), choice)
        return _list(store, servers, show_all=bool(args.all), as_json=bool(args.json), terminal=terminal)
    if args.action == "forget":
        folders = [_forgotten_folder(path) for path in args.paths]
    else:
        folders = [named_folder(path, path) for path in args.paths]
    servers = _chosen(configured_servers(choice, [f for f in folders if os.path.isdir(f)], terminal), choice)
    if args.action == "allow" and not args.confirm_broad:
        ask = terminal_ask(terminal) if is_tty(sys.stdin) else None
        for folder in folders:
            if (what := broad_folder(folder)) is not None:
                confirm_broad(folder, what, terminal, ask, action=f"consent allow {folder}")
    code = 0
    for server in servers:
        for folder in folders:
            read_only = bool(getattr(args, "read_only", False))
            code = max(code, _change(policy, server, folder, args.action, terminal, read_only))
    return code


def _chosen(servers: Sequence[ServerConfig], choice: ServerChoice) -> list[ServerConfig]:
    return [s for s in servers if choice.server_id in (None, s.id)]


def _forgotten_folder(path: str) -> str:
    """A folder to forget: its canonical path, or (when it no longer exists) its absolute one."""
    try:
        return canonical_path(os.path.abspath(path))
    except OSError:
        return os.path.abspath(path)


def _change(
    policy: ConsentPolicy, server: ServerConfig, folder: str, action: str, terminal: Terminal, read_only: bool = False
) -> int:
    who = server.identity.describe()
    try:
        if action == "forget":
            had = policy.decision(server.identity, folder)
            policy.forget(server.identity, folder)
            done = f"forgot {_SHOWN[had.value]}" if had is not None else "nothing saved"
        else:
            decision = _DECISIONS[action]
            if action == "allow" and read_only:
                decision = Decision.ALLOW_READ_ONLY
            policy.set(server.identity, folder, decision)
            done = {Decision.ALLOW: "allowed (read and write)", Decision.ALLOW_READ_ONLY: "allowed read only"}.get(
                decision, "denied"
            )
    except DecisionNotSaved as error:
        terminal.warn(f"host-bridge consent {action}: {error}")
        return 1
    terminal.warn(f"{visible(folder)}: {done} for {visible(who)}")
    return 0


def _list(
    store: ConsentStore, servers: Sequence[ServerConfig], *, show_all: bool, as_json: bool, terminal: Terminal
) -> int:
    known = {(s.identity.source, s.identity.server_id, s.identity.fingerprint) for s in servers}
    records = [r for r in store.roots() if show_all or r.owner in known]
    if as_json:
        for record in records:
            terminal.result(
                json.dumps({**record.model_dump(mode="json", by_alias=True), "inUse": record.owner in known})
            )
        return 0
    if not records:
        names = ", ".join(s.id for s in servers)
        terminal.warn(f"no saved decisions for {names}" if not show_all else "no saved decisions")
        return 0
    header = ["SERVER", "DECISION", "PATH", "DEFINED IN", "SAVED"]
    rows = [_row(record) for record in records]
    if show_all:
        header.append("IN USE")
        for row, record in zip(rows, records, strict=True):
            row.append("yes" if record.owner in known else "no")
    terminal.result(format_table(header, rows, width=table_width(terminal.out), keep_end=(2, 3)))
    return 0


def _row(record: RootRecord) -> list[str]:
    source = record.source or "(not yet claimed)"
    where = "your settings" if source == "settings" else source
    saved = record.updated.astimezone().strftime("%Y-%m-%d %H:%M")
    return [visible(record.server_id), _SHOWN[record.decision], visible(record.path), visible(where), saved]
