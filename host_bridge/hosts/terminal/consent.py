"""``host-bridge consent list|allow|deny|forget|let-read|trust|untrust``: saved decisions, read and changed here.

The same store ``connect`` and the editor sidecars use, with the same identities: a decision belongs to a server as
defined (where, its id, its launch configuration). ``list`` shows every saved decision and every server a running
sidecar runs, each with a short stable handle. The other actions address what ``list`` shows:

- a **record handle** (one saved decision): ``host-bridge consent forget 3f9c1a2``;
- a **server handle**, or the **id of a server a running sidecar runs**: ``host-bridge consent allow fs ~/acme``;
- a **description** (``--server ID=COMMAND``, ``--config FILE``; by default the embedded example server and the
  servers of the named folders' ``.vscode/mcp.json`` / ``.mcp.json``). A ``--server`` description must describe a
  server host_bridge knows (one with a saved decision or trust answer, or one a sidecar runs): a command line that
  differs in anything (its environment, say) is another server, and is refused rather than given a record nobody
  uses.

A decision reaches every running sidecar within about a second (they watch the store): ``allow`` shares the folder
with the running server (``--read-only``: read only), ``forget`` makes it ask again, ``trust`` starts a
workspace-defined server waiting for it. ``let-read`` shares nothing: it lets a server's sandbox read a path it was
refused at start (a package or runtime folder), which is never offered to it as a root; a failed server starts again
with it.

Exit codes: 0 done; 1 the store cannot be read or changed; 2 a usage error (nothing is changed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from host_bridge.consent.identity import ServerIdentity
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
from host_bridge.hub.running import (
    RunningServer,
    RunningSidecar,
    record_handle,
    running_servers,
    running_sidecars,
    server_handle,
)
from host_bridge.storage import default_storage_dir
from host_bridge.text import visible
from host_bridge.uris import canonical_path

_SHOWN = {
    "allow": "allow",
    "allowReadOnly": "allow read only",
    "allowSession": "allow this session",
    "allowSessionReadOnly": "allow read only this session",
    "deny": "deny",
    "readOnly": "let its sandbox read (not shared)",
}
_DECISIONS = {"allow": Decision.ALLOW, "deny": Decision.DENY, "let-read": Decision.LET_READ}
_DONE = {
    Decision.ALLOW: "allowed (read and write)",
    Decision.ALLOW_READ_ONLY: "allowed read only",
    Decision.DENY: "denied",
    Decision.LET_READ: "readable by its sandbox, not shared (a path it was refused)",
}
FOLDER_ACTIONS = ("allow", "deny", "forget", "let-read")
TRUST_ACTIONS = ("trust", "untrust")


def consent(args: argparse.Namespace) -> int:
    """Run ``host-bridge consent ACTION``; the exit code (see the module docstring)."""
    terminal = Terminal(sys.stdout, sys.stderr)
    try:
        return _run(args, terminal)
    except UsageError as error:
        terminal.warn(f"host-bridge consent {args.action}: {error}")
        return 2


@dataclass(frozen=True)
class Known:
    """Every server the command can address: saved in the store, or run by a live sidecar."""

    store: ConsentStore
    sidecars: list[RunningSidecar]
    identities: dict[str, ServerIdentity] = field(default_factory=dict[str, ServerIdentity])
    """Identity key → identity, of every record, trust answer and running server."""

    @classmethod
    def gather(cls, store: ConsentStore, sidecars: list[RunningSidecar]) -> Known:
        known = cls(store, sidecars)
        for record in (*store.roots(), *store.trust_records()):
            if record.source is not None:
                identity = ServerIdentity(
                    source=record.source, server_id=record.server_id, fingerprint=record.fingerprint
                )
                known.identities[identity.key] = identity
        for _, server in running_servers(sidecars):
            known.identities[server.identity.key] = server.identity
        return known

    def by_server_handle(self, text: str) -> ServerIdentity | None:
        matches = [i for i in self.identities.values() if server_handle(i) == text]
        return matches[0] if len(matches) == 1 else None

    def by_record_handle(self, text: str) -> tuple[ServerIdentity, RootRecord] | None:
        for record in self.store.roots():
            identity = _owner(record)
            if identity is not None and record_handle(identity, record.path) == text:
                return identity, record
        return None

    def running_with_id(self, server_id: str) -> list[RunningServer]:
        found: dict[str, RunningServer] = {}
        for _, server in running_servers(self.sidecars):
            if server.id == server_id:
                found.setdefault(server.identity.key, server)
        return list(found.values())


def _owner(record: RootRecord) -> ServerIdentity | None:
    if record.source is None:
        return None
    return ServerIdentity(source=record.source, server_id=record.server_id, fingerprint=record.fingerprint)


def _run(args: argparse.Namespace, terminal: Terminal) -> int:
    storage = args.storage_dir or default_storage_dir()
    store = ConsentStore(storage)
    try:
        store.load()
    except ConsentStoreError as error:
        terminal.warn(f"consent store: {error}")
    if store.blocked:
        return 1
    policy = ConsentPolicy(store)
    known = Known.gather(store, running_sidecars(storage))
    if args.action == "list":
        return _list(args, known, terminal)
    targets = _resolve(args, known, terminal)
    if args.action in TRUST_ACTIONS:
        return _trust(policy, targets.servers, trusted=args.action == "trust", terminal=terminal)
    if args.action == "allow" and not args.confirm_broad:
        ask = terminal_ask(terminal) if is_tty(sys.stdin) else None
        for folder in targets.folders:
            if (what := broad_folder(folder)) is not None:
                confirm_broad(folder, what, terminal, ask, action=f"consent allow {folder}")
    code = 0
    read_only = bool(getattr(args, "read_only", False))
    for identity in targets.servers:
        for folder in targets.folders:
            code = max(code, _change(policy, identity, folder, args.action, terminal, read_only))
    for identity, path in targets.records:
        code = max(code, _change(policy, identity, path, args.action, terminal, read_only))
    return code


@dataclass
class Targets:
    """What an ``allow``/``deny``/``forget``/``trust``/``untrust`` command addresses."""

    servers: list[ServerIdentity] = field(default_factory=list[ServerIdentity])
    folders: list[str] = field(default_factory=list[str])
    records: list[tuple[ServerIdentity, str]] = field(default_factory=list[tuple[ServerIdentity, str]])


def _resolve(args: argparse.Namespace, known: Known, terminal: Terminal) -> Targets:
    """The servers, folders and records the arguments name; a usage error for anything that names nothing."""
    targets = Targets()
    named_servers = False
    for text in args.targets:
        if args.action in FOLDER_ACTIONS and (found := known.by_record_handle(text)) is not None:
            targets.records.append((found[0], found[1].path))
        elif (identity := known.by_server_handle(text)) is not None:
            _add(targets.servers, identity)
            named_servers = True
        elif args.action in FOLDER_ACTIONS and (os.path.exists(text) or (args.action == "forget" and os.sep in text)):
            targets.folders.append(_forgotten_folder(text) if args.action == "forget" else named_folder(text, text))
        elif running := known.running_with_id(text):
            _add(targets.servers, _one_running(text, running))
            named_servers = True
        else:
            raise UsageError(
                f"{text!r} is not a folder, a handle or the id of a server a running sidecar runs; "
                "`host-bridge consent list` shows the handles"
            )
    if args.server_id is not None and not args.server and args.config is None:
        identity = known.by_server_handle(args.server_id)
        if identity is None and (running := known.running_with_id(args.server_id)):
            identity = _one_running(args.server_id, running)
        if identity is not None:
            _add(targets.servers, identity)
            named_servers = True
    if not named_servers and not targets.records:
        for server in _described(args, targets.folders, known, terminal):
            _add(targets.servers, server.identity)
    if args.action in FOLDER_ACTIONS and targets.servers and not targets.folders:
        raise UsageError("name the folders to decide about (or a record's handle from `host-bridge consent list`)")
    return targets


def _add(servers: list[ServerIdentity], identity: ServerIdentity) -> None:
    if identity not in servers:
        servers.append(identity)


def _one_running(server_id: str, running: list[RunningServer]) -> ServerIdentity:
    if len(running) > 1:
        handles = ", ".join(server.handle for server in running)
        raise UsageError(
            f"{server_id!r} is the id of {len(running)} different servers in running sidecars; name one by its "
            f"handle: {handles}"
        )
    return running[0].identity


def _described(
    args: argparse.Namespace, folders: Sequence[str], known: Known, terminal: Terminal
) -> list[ServerConfig]:
    """The servers the options describe (see the module docstring); a ``--server`` one must be known."""
    choice = ServerChoice.from_args(args)
    servers = [
        s
        for s in configured_servers(choice, [f for f in folders if os.path.isdir(f)], terminal)
        if choice.server_id in (None, s.id)
    ]
    typed = {spec.partition("=")[0].strip() for spec in choice.servers}
    for server in servers:
        if server.id not in typed or server.identity.key in known.identities:
            continue
        running = known.running_with_id(server.id)
        hint = (
            f"; a running sidecar runs {server.id!r} with another launch configuration: use its handle "
            f"{', '.join(r.handle for r in running)}"
            if running
            else "; `host-bridge consent list` shows the servers it knows, with their handles"
        )
        raise UsageError(
            f"--server {server.id!r} describes no server host_bridge knows (no saved decision and no running sidecar "
            f"has this exact launch configuration), so nothing was recorded{hint}"
        )
    return servers


def _forgotten_folder(path: str) -> str:
    """A folder to forget: its canonical path, or (when it no longer exists) its absolute one."""
    try:
        return canonical_path(os.path.abspath(path))
    except OSError:
        return os.path.abspath(path)


def _change(
    policy: ConsentPolicy,
    identity: ServerIdentity,
    folder: str,
    action: str,
    terminal: Terminal,
    read_only: bool = False,
) -> int:
    who = identity.describe()
    try:
        if action == "forget":
            had = policy.decision(identity, folder)
            policy.forget(identity, folder)
            done = f"forgot {_SHOWN[had.value]}" if had is not None else "nothing saved"
        else:
            decision = _DECISIONS[action]
            if action == "allow" and read_only:
                decision = Decision.ALLOW_READ_ONLY
            policy.set(identity, folder, decision)
            done = _DONE[decision]
    except DecisionNotSaved as error:
        terminal.warn(f"host-bridge consent {action}: {error}")
        return 1
    terminal.warn(f"{visible(folder)}: {done} for {visible(who)}")
    return 0


def _trust(policy: ConsentPolicy, servers: list[ServerIdentity], *, trusted: bool, terminal: Terminal) -> int:
    if not servers:
        raise UsageError("name the servers to trust by handle or id (`host-bridge consent list` shows them)")
    code = 0
    for identity in servers:
        if identity.source == "settings":
            terminal.warn(f"{visible(identity.describe())} is defined in your own settings: it needs no trust")
            continue
        try:
            policy.set_trust(identity, trusted)
        except DecisionNotSaved as error:
            terminal.warn(f"host-bridge consent: {error}")
            code = 1
            continue
        terminal.warn(f"{'trusted' if trusted else 'not trusted'}: {visible(identity.describe())}")
    return code


def _list(args: argparse.Namespace, known: Known, terminal: Terminal) -> int:
    choice = ServerChoice.from_args(args)
    folders = [named_folder(path, path) for path in args.paths]
    described = [s for s in configured_servers(choice, folders, terminal) if choice.server_id in (None, s.id)]
    running = running_servers(known.sidecars)
    in_use = {s.identity.key for s in described} | {server.identity.key for _, server in running}
    records = [r for r in known.store.roots() if args.all or _key(r) in in_use]
    if args.json:
        for record in records:
            identity = _owner(record)
            handle = record_handle(identity, record.path) if identity is not None else None
            dumped = record.model_dump(mode="json", by_alias=True)
            terminal.result(
                json.dumps({"kind": "decision", "handle": handle, **dumped, "inUse": _key(record) in in_use})
            )
        for sidecar, server in running:
            terminal.result(json.dumps(_running_json(sidecar, server)))
        return 0
    if records:
        header = ["HANDLE", "SERVER", "DECISION", "PATH", "DEFINED IN", "SAVED"]
        rows = [_row(record) for record in records]
        if args.all:
            header.append("IN USE")
            for row, record in zip(rows, records, strict=True):
                row.append("yes" if _key(record) in in_use else "no")
        terminal.result(format_table(header, rows, width=table_width(terminal.out), keep_end=(3, 4)))
    else:
        names = ", ".join(s.id for s in described)
        terminal.warn(f"no saved decisions for {names}" if not args.all else "no saved decisions")
    if running:
        header = ["HANDLE", "SERVER", "STATE", "SIDECAR", "FOLDERS", "DEFINED IN"]
        rows = [
            [
                server.handle,
                visible(server.id),
                server.state,
                str(sidecar.pid),
                visible(", ".join(sidecar.folders)),
                _where(server.identity.source),
            ]
            for sidecar, server in running
        ]
        terminal.result("")
        terminal.result(format_table(header, rows, width=table_width(terminal.out), keep_end=(4, 5)))
    return 0


def _key(record: RootRecord) -> str | None:
    identity = _owner(record)
    return identity.key if identity is not None else None


def _running_json(sidecar: RunningSidecar, server: RunningServer) -> dict[str, object]:
    return {
        "kind": "server",
        "handle": server.handle,
        "serverId": server.id,
        "state": server.state,
        "source": server.identity.source,
        "fingerprint": server.identity.fingerprint,
        "workspaceDefined": server.workspace_defined,
        "sidecar": sidecar.pid,
        "folders": list(sidecar.folders),
    }


def _where(source: str | None) -> str:
    source = source or "(not yet claimed)"
    return "your settings" if source == "settings" else visible(source)


def _row(record: RootRecord) -> list[str]:
    identity = _owner(record)
    handle = record_handle(identity, record.path) if identity is not None else "-"
    saved = record.updated.astimezone().strftime("%Y-%m-%d %H:%M")
    return [
        handle,
        visible(record.server_id),
        _SHOWN[record.decision],
        visible(record.path),
        _where(record.source),
        saved,
    ]
