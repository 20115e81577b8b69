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
from host_bridge.hub.describe import defined_in
from host_bridge.hub.launch import NetworkSetting, SandboxSetting
from host_bridge.storage import default_storage_dir
from host_bridge.uris import canonical_path, display_name, path_to_uri
from host_bridge.workspace.models import Candidate

EXAMPLE_SERVER = Path(host_bridge.__file__).resolve().parents[1] / "examples" / "workspace_server.py"
"""The server used when none is given: this repository's example, run with this interpreter."""
EXAMPLE_SERVER_ID = "workspace"
TRUST_FLAG = "--trust-workspace-servers"
"""The ``connect`` option that trusts the servers the folders' own config files define."""
BROAD_FLAG = "--confirm-broad"
"""The option that allows ``/`` or the home folder without a question on the terminal."""


class UsageError(Exception):
    """The command line cannot be followed; the message says what to change."""


@dataclass(frozen=True)
class ServerChoice:
    """The options that name servers, shared by ``connect`` and ``consent``."""

    servers: tuple[str, ...] = ()
    """``ID=COMMAND`` (or ``ID=URL``) specs."""
    config: str | None = None
    """A ``.vscode/mcp.json`` or ``.mcp.json`` file."""
    server_id: str | None = None
    """One server among them."""

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ServerChoice:
        """The choice from the parsed command line."""
        return cls(servers=tuple(args.server), config=args.config, server_id=args.server_id)


@dataclass(frozen=True)
class ConnectOptions:
    """The ``connect`` command line, validated into types."""

    paths: tuple[str, ...]
    """Folders to detect candidates in."""
    choice: ServerChoice
    """The servers named on the command line."""
    storage_dir: str
    """Where consent and the audit log live."""
    allow: tuple[str, ...]
    """Folders to share with every server without asking."""
    allow_session: bool
    """Share the ``allow`` folders for this run only."""
    list_resources: bool
    """List every resource and resource template."""
    read: str | None
    """A resource URI to print."""
    follow: bool
    """Print changes until interrupted."""
    timeout: float
    """Seconds to wait for the servers to start."""
    verbose: bool
    """Show the servers' stderr."""
    sandbox: SandboxSetting = "enforce"
    """The OS sandbox of stdio servers whose config does not say."""
    network: NetworkSetting = "on"
    """The network of sandboxed stdio servers whose config does not say (a workspace file cannot turn it on)."""
    output: str | None = None
    """Where ``read`` saves the contents (instead of stdout)."""
    json: bool = False
    """Print one JSON document on stdout instead of tables and text."""
    quiet: bool = False
    """Leave out progress lines."""
    confirm_broad: bool = False
    """``allow`` may name ``/`` or the home folder without a question."""
    trust_workspace: bool = False
    """Trust the servers defined in the folders' own config files."""

    @property
    def server_id(self) -> str | None:
        """The server ``list_resources`` and ``read`` ask."""
        return self.choice.server_id

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ConnectOptions:
        """Options from the parsed command line (see :mod:`host_bridge.hosts.cli`)."""
        return cls(
            paths=tuple(args.paths or ["."]),
            choice=ServerChoice.from_args(args),
            storage_dir=args.storage_dir or default_storage_dir(),
            allow=tuple(args.allow),
            allow_session=bool(args.allow_session),
            list_resources=bool(args.list),
            read=args.read,
            follow=bool(args.follow),
            timeout=float(args.timeout),
            verbose=bool(getattr(args, "verbose", False)),
            sandbox="off" if getattr(args, "sandbox", "enforce") == "off" else "enforce",
            network="off" if getattr(args, "network", "on") == "off" else "on",
            output=args.output,
            json=bool(args.json),
            quiet=bool(args.quiet),
            confirm_broad=bool(args.confirm_broad),
            trust_workspace=bool(args.trust_workspace_servers),
        )

    def check(self) -> None:
        """Raise :class:`UsageError` for options that do not go together."""
        if self.allow_session and not self.allow:
            raise UsageError("--allow-session applies to --allow PATH; give the folders to share")
        if self.output is not None and self.read is None:
            raise UsageError("--output FILE saves what --read URI reads; add --read URI")
        if self.json and self.follow:
            raise UsageError("--json prints one document at the end, and --follow never ends; use one of them")


def configured_servers(
    choice: ServerChoice, folders: Sequence[str], terminal: Terminal, *, workspace: bool = True
) -> tuple[ServerConfig, ...]:
    """The servers of ``--server`` and ``--config`` (or the embedded example server), then, with ``workspace``,
    those the ``.vscode/mcp.json`` and ``.mcp.json`` of ``folders`` define (as the editor sidecar reads them).

    Usage errors for bad ``--server`` specs or an unknown ``--server-id``; warnings for bad config entries.
    """
    settings: dict[str, Any] = {}
    for spec in choice.servers:
        server_id, entry = _parse_server(spec)
        if server_id in settings:
            raise UsageError(f"--server {server_id!r} is given twice; give each server its own id")
        settings[server_id] = entry
    if not settings and choice.config is None:
        if not EXAMPLE_SERVER.is_file():
            raise UsageError(
                f"no servers given, and the example server {EXAMPLE_SERVER} does not exist; "
                "pass --server ID=COMMAND or --config FILE"
            )
        settings[EXAMPLE_SERVER_ID] = {"command": sys.executable, "args": [str(EXAMPLE_SERVER)]}
    real = [canonical_path(f) for f in folders]
    loaded = load_servers(settings, real, read_workspace=False)
    if loaded.problems:
        raise UsageError("; ".join(p.describe("--server") for p in loaded.problems))
    servers = list(loaded.servers)
    config_file: str | None = None
    if choice.config is not None:
        config_file = os.path.realpath(choice.config)
        from_file = load_config_file(choice.config)
        for problem in from_file.problems:
            terminal.warn(f"warning: {problem.describe('--server')}")
        for server in from_file.servers:
            if server.id in settings:
                terminal.warn(f"warning: {choice.config}: server {server.id!r} is also given with --server; skipped")
            else:
                servers.append(server)
        if not from_file.servers and not settings:
            raise UsageError(f"{choice.config} has no usable MCP server")
    if workspace:
        found = load_servers(None, real, read_workspace=True)
        for problem in found.problems:
            terminal.warn(f"warning: {problem.describe('--server')}")
        taken = {s.id: s for s in servers}
        for server in found.servers:
            if server.origin == config_file:
                continue  # the file given with --config: the user chose it, so it needs no trust
            if server.id in taken:
                terminal.warn(
                    f"warning: {defined_in(server.ref())}: server {server.id!r} is also defined in "
                    f"{defined_in(taken[server.id].ref())}; this definition is ignored (rename one of them)"
                )
                continue
            taken[server.id] = server
            servers.append(server)
    if choice.server_id is not None and choice.server_id not in {s.id for s in servers}:
        raise UsageError(
            f"--server-id {choice.server_id!r} is not one of the servers: {', '.join(s.id for s in servers)}"
        )
    return tuple(servers)


def _parse_server(spec: str) -> tuple[str, dict[str, Any]]:
    """``ID=COMMAND`` → the id and a config entry (``COMMAND`` split like a shell would); ``ID=URL`` → an HTTP
    server."""
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
    if len(words) == 1 and words[0].lower().startswith(("http://", "https://")):
        return server_id.strip(), {"type": "http", "url": words[0]}
    return server_id.strip(), {"command": words[0], "args": words[1:]}


def named_folder(path: str, what: str) -> str:
    """The canonical path of a folder named on the command line; a usage error unless it is an existing folder.

    ``what`` names it in the message (``--allow /x``, or the path alone).
    """
    try:
        real = canonical_path(os.path.abspath(path))
    except OSError:
        raise UsageError(f"{what}: no such folder") from None
    if not os.path.isdir(real):
        raise UsageError(f"{what}: not a folder")
    return real


def allowed_folder(path: str) -> str:
    """The canonical path of an ``--allow`` folder; a usage error unless it is an existing folder."""
    return named_folder(path, f"--allow {path}")


def broad_folder(path: str) -> str | None:
    """What sharing ``path`` would share, in words, when that is the whole file system or the home folder (or a
    folder holding it); ``None`` for any narrower folder."""
    home = os.path.realpath(os.path.expanduser("~"))
    if os.path.dirname(path) == path:
        return "the whole file system"
    if path == home:
        return "your whole home folder"
    if home.startswith(path.rstrip(os.sep) + os.sep):
        return "a folder holding your whole home folder"
    return None


def with_folders(candidates: Sequence[Candidate], folders: Sequence[str]) -> tuple[Candidate, ...]:
    """``candidates`` plus a candidate for each folder not among them (a folder allowed by name is shared)."""
    known = {c.uri for c in candidates}
    extra = [
        Candidate(uri=uri, name=display_name(folder), kinds=("workspaceFolder",))
        for folder in folders
        if (uri := path_to_uri(folder)) not in known
    ]
    return (*candidates, *extra)
