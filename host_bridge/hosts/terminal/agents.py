"""``host-bridge agents``: the configuration entries that route agents to the servers host_bridge runs for a folder.

For each server of the folder (those its ``.vscode/mcp.json`` and ``.mcp.json`` define, and those a running editor
sidecar runs there) it prints the entry that starts ``host-bridge attach ID --workspace FOLDER`` in the format of
Claude Code (``.mcp.json``, ``claude mcp add``), Codex (``~/.codex/config.toml``), Gemini CLI
(``.gemini/settings.json``), VS Code's agent sessions (``.mcp.json``) and any MCP client (a command line). Through
those entries an agent uses host_bridge's one copy of each server, with the folders you shared and its sandbox.

``--write FILE`` shows the change to FILE as a diff and writes it only after a yes on the terminal (or ``--yes``);
every other entry and key of the file is kept. Entries in the agents' files that start a server of their own, a
second copy of one host_bridge runs, outside consent and the sandbox, are pointed out.

Exit codes: 0 done (or nothing to change); 1 the file could not be written; 2 a usage error, a file that cannot be
changed safely, or a write not confirmed.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from host_bridge.hosts.tables import is_tty
from host_bridge.hosts.terminal.agent_configs import (
    ConfigError,
    Entry,
    Format,
    existing_servers,
    format_of,
    is_attach,
    json_entry,
    toml_entry,
    with_entries,
)
from host_bridge.hosts.terminal.options import UsageError, named_folder
from host_bridge.hosts.terminal.output import Terminal
from host_bridge.hub.config import ServerConfig, load_servers
from host_bridge.hub.running import running_sidecars
from host_bridge.storage import default_storage_dir
from host_bridge.text import visible
from host_bridge.uris import is_within


@dataclass(frozen=True)
class FolderServer:
    """A server host_bridge runs for the folder: its id, and its launch when a config file of the folder defines it."""

    id: str
    config: ServerConfig | None


def agents(args: argparse.Namespace) -> int:
    """Run ``host-bridge agents``; the exit code (see the module docstring)."""
    terminal = Terminal(sys.stdout, sys.stderr)
    try:
        return _run(args, terminal)
    except UsageError as error:
        terminal.warn(f"host-bridge agents: {error}")
        return 2
    except ConfigError as error:
        terminal.warn(f"host-bridge agents: {args.write}: {error}; nothing was written")
        return 2


def _run(args: argparse.Namespace, terminal: Terminal) -> int:
    folder = named_folder(args.path, args.path)
    servers = folder_servers(folder, args.storage_dir or default_storage_dir(), terminal)
    if args.server_id:
        unknown = [s for s in args.server_id if s not in {server.id for server in servers}]
        if unknown:
            raise UsageError(
                f"--server-id {', '.join(map(repr, unknown))} is not a server host_bridge runs for {folder}: "
                f"{', '.join(s.id for s in servers)}"
            )
        servers = [s for s in servers if s.id in args.server_id]
    if not servers:
        raise UsageError(
            f"host_bridge runs no MCP server for {folder}: no running editor sidecar has one there and its "
            ".vscode/mcp.json and .mcp.json define none; add a server first (docs/editors.md)"
        )
    command = _command(args.command)
    attach_args = ["--workspace", folder] + (["--storage-dir", args.storage_dir] if args.storage_dir else [])
    if args.write is not None:
        return _write(Path(args.write), servers, command, attach_args, assume_yes=args.yes, terminal=terminal)
    _print_all(folder, servers, command, attach_args, terminal)
    for path in agent_files(folder):
        point_out_copies(path, servers, terminal)
    return 0


def folder_servers(folder: str, storage_dir: str, terminal: Terminal) -> list[FolderServer]:
    """The servers host_bridge runs for ``folder``: its config files' (in their order), then a running sidecar's."""
    loaded = load_servers(None, [folder], read_workspace=True)
    found = {config.id: FolderServer(config.id, config) for config in loaded.servers}
    for sidecar in running_sidecars(storage_dir):
        if any(is_within(folder, f) or is_within(f, folder) for f in sidecar.folders):
            for server in sidecar.servers:
                found.setdefault(server.id, FolderServer(server.id, None))
    return list(found.values())


def _command(given: str | None) -> list[str]:
    """How an agent starts host_bridge: as given, else ``host-bridge`` when it is on PATH, else this Python."""
    if given:
        return shlex.split(given)
    if shutil.which("host-bridge") is not None:
        return ["host-bridge"]
    return [sys.executable, "-m", "host_bridge"]


def entries_for(
    servers: Sequence[FolderServer],
    command: list[str],
    attach_args: list[str],
    taken: dict[str, dict[str, Any]],
    *,
    keep_definitions: bool = False,
) -> list[Entry]:
    """One attach entry per server, named by the server's id. With ``keep_definitions`` (a file host_bridge reads its
    servers from, such as ``.mcp.json``) a server of its own in ``taken`` (the file's entries) under that name is
    kept, since it is the definition host_bridge runs, and the entry gets another name; elsewhere it is replaced."""
    entries: list[Entry] = []
    for server in servers:
        name = server.id
        current = taken.get(name)
        if keep_definitions and current is not None and not is_attach(current):
            name = f"{server.id}-via-host-bridge"
        entries.append(Entry(name, command[0], (*command[1:], "attach", server.id, *attach_args)))
    return entries


def _print_all(
    folder: str, servers: Sequence[FolderServer], command: list[str], attach_args: list[str], terminal: Terminal
) -> None:
    entries = entries_for(servers, command, attach_args, {})
    names = ", ".join(s.id for s in servers)
    mcp_json = json.dumps({"mcpServers": {e.name: json_entry(e, Format.MCP_SERVERS) for e in entries}}, indent=2)
    out = terminal.result
    out(f"# MCP servers host_bridge runs for {visible(folder)}: {visible(names)}")
    out("# Each entry starts `attach`, which hands the agent to host_bridge's own copy of the server.")
    out("")
    out(f"## Claude Code: {os.path.join(folder, '.mcp.json')} (or `host-bridge agents --write .mcp.json`)")
    out(mcp_json)
    out("## Claude Code, from the command line instead:")
    for entry in entries:
        out(shlex.join(["claude", "mcp", "add", entry.name, "--", entry.command, *entry.args]))
    out("")
    out("## Codex: ~/.codex/config.toml")
    out("\n".join(toml_entry(entry) for entry in entries).rstrip("\n"))
    out("")
    out(f"## Gemini CLI: {os.path.join(folder, '.gemini', 'settings.json')} (or ~/.gemini/settings.json)")
    out(mcp_json)
    out("")
    out(f"## VS Code agent sessions: {os.path.join(folder, '.mcp.json')} (the same entries as Claude Code's)")
    out("")
    out("## Any MCP client: a stdio server with this command line")
    for entry in entries:
        out(f"{entry.name}: {shlex.join([entry.command, *entry.args])}")


def agent_files(folder: str) -> list[Path]:
    """The agents' configuration files that apply to ``folder`` and exist."""
    candidates = [
        Path(folder, ".mcp.json"),
        Path(folder, ".gemini", "settings.json"),
        Path.home() / ".gemini" / "settings.json",
        Path.home() / ".codex" / "config.toml",
    ]
    return [path for path in candidates if path.is_file()]


def unconfined_copies(text: str, fmt: Format, servers: Sequence[FolderServer]) -> list[tuple[str, str]]:
    """Entries of a file that start a server of their own which host_bridge runs too: (entry name, server id)."""
    found: list[tuple[str, str]] = []
    try:
        entries = existing_servers(text, fmt)
    except ConfigError:
        return found
    for name, entry in entries.items():
        if is_attach(entry):
            continue
        for server in servers:
            if name == server.id or _same_launch(entry, server.config):
                found.append((name, server.id))
                break
    return found


def _same_launch(entry: dict[str, Any], config: ServerConfig | None) -> bool:
    if config is None or config.command is None:
        return config is not None and config.url is not None and entry.get("url") == config.url
    args: Any = entry.get("args", [])
    if not isinstance(args, list):
        return False
    return entry.get("command") == config.command and tuple(str(a) for a in cast(list[Any], args)) == config.args


def point_out_copies(path: Path, servers: Sequence[FolderServer], terminal: Terminal, text: str | None = None) -> None:
    """Warn about every entry of ``path`` that starts its own copy of a server host_bridge runs."""
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return
    for name, server_id in unconfined_copies(text, format_of(str(path)), servers):
        moved = (
            " (host_bridge reads it there too: move the definition to .vscode/mcp.json)"
            if path.name == ".mcp.json"
            else ""
        )
        terminal.warn(
            f"note: {visible(str(path))}: {visible(name)!r} starts its own copy of the server host_bridge runs as "
            f"{visible(server_id)!r}; an agent using it runs it outside your consent and the sandbox{moved}. Use the "
            "attach entry instead and remove this one."
        )


def _write(
    path: Path,
    servers: Sequence[FolderServer],
    command: list[str],
    attach_args: list[str],
    *,
    assume_yes: bool,
    terminal: Terminal,
) -> int:
    fmt = format_of(str(path))
    try:
        before = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"it cannot be read ({error})") from None
    read_by_host_bridge = path.name == ".mcp.json" or fmt is Format.SERVERS
    entries = entries_for(
        servers, command, attach_args, existing_servers(before, fmt), keep_definitions=read_by_host_bridge
    )
    after = with_entries(before, fmt, entries)
    point_out_copies(path, servers, terminal, after)
    if after == before:
        terminal.warn(f"{visible(str(path))} routes these servers through host_bridge already; nothing to change")
        return 0
    diff = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), str(path), f"{path} (new)"
    )
    terminal.result("".join(diff).rstrip("\n"))
    if not assume_yes:
        if not is_tty(sys.stdin):
            raise UsageError(f"not written: confirm on a terminal, or add --yes to write {path}")
        terminal.ask(f"Write this change to {visible(str(path))}? [y/N] ")
        answer = sys.stdin.readline().strip().lower()
        if answer not in ("y", "yes"):
            terminal.warn(f"not written: {visible(str(path))} is unchanged")
            return 0
    try:
        _replace(path, after)
    except OSError as error:
        terminal.warn(f"host-bridge agents: {path}: {error.strerror or error}")
        return 1
    terminal.warn(f"wrote {visible(str(path))}: {', '.join(entry.name for entry in entries)}")
    return 0


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, keeping an existing file's permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.host-bridge-{os.getpid()}")
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
