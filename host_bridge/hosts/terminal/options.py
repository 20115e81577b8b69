"""The ``connect`` command line validated into types, the servers it names, and the usage errors it can have."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import host_bridge
from host_bridge.hosts.terminal.output import Terminal
from host_bridge.hub.config import ServerConfig, load_config_file, load_servers
from host_bridge.hub.launch import SandboxSetting
from host_bridge.storage import default_storage_dir
from host_bridge.uris import canonical_path, display_name, path_to_uri
from host_bridge.workspace.models import Candidate

EXAMPLE_SERVER = Path(host_bridge.__file__).resolve().parents[1] / "examples" / "workspace_server.py"
"""The server used when none is given: this repository's example, run with this interpreter."""
EXAMPLE_SERVER_ID = "workspace"


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
    sandbox: SandboxSetting = "enforce"
    """The OS sandbox of stdio servers whose config does not say."""

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ConnectOptions:
        """Options from the parsed command line (see :mod:`host_bridge.hosts.cli`)."""
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
            sandbox="off" if getattr(args, "sandbox", "enforce") == "off" else "enforce",
        )


def configured_servers(options: ConnectOptions, folders: Sequence[str], terminal: Terminal) -> tuple[ServerConfig, ...]:
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


def allowed_folder(path: str) -> str:
    """The canonical path of an ``--allow`` folder; a usage error unless it is an existing folder."""
    try:
        real = canonical_path(os.path.abspath(path))
    except OSError:
        raise UsageError(f"--allow {path}: no such folder") from None
    if not os.path.isdir(real):
        raise UsageError(f"--allow {path}: not a folder")
    return real


def with_folders(candidates: Sequence[Candidate], folders: Sequence[str]) -> tuple[Candidate, ...]:
    """``candidates`` plus a candidate for each folder not among them (a folder allowed by name is shared)."""
    known = {c.uri for c in candidates}
    extra = [
        Candidate(uri=uri, name=display_name(folder), kinds=("workspaceFolder",))
        for folder in folders
        if (uri := path_to_uri(folder)) not in known
    ]
    return (*candidates, *extra)
