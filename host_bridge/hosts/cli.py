"""Command line: ``host-bridge serve``, ``roots``, ``audit``, ``connect``, ``consent`` and ``attach``.

Every command prints its results on stdout and its notes and problems on stderr; a user error is one sentence on
stderr and exit code 2 (1 when something the command tried failed), never a traceback; Ctrl-C exits with 130 and a
closed stdout (``host-bridge roots --json | head -1``) quietly ends the command.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from host_bridge.workspace.records import Folder
    from host_bridge.workspace.repository import GitCall

# Subcommands import what they need when they run: `serve` must answer `initialize` quickly.

DESCRIPTION = (
    "Share the folders you choose with MCP servers, with your consent. Commands: serve (the editor sidecar), "
    "roots (the folders that could be shared), connect (servers from the terminal), consent (your saved "
    "decisions), audit (what was shared, when), attach (for agents) and agents (the agents' configuration entries)."
)


class CommandError(Exception):
    """A user error found while a command runs; the message is one sentence saying what to change (exit code 2)."""


def whole_number(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, not {value}")
        return value

    return parse


def seconds(high: float = 86_400.0) -> Callable[[str], float]:
    """An argparse type: a number of seconds above 0 and at most ``high``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        if not 0 < value <= high:
            raise argparse.ArgumentTypeError(f"must be a number of seconds above 0 and at most {high:g}, not {text}")
        return value

    return parse


def storage_dir(text: str) -> str:
    """An argparse type: a folder for host_bridge's files (it may not exist yet, but must not be a file)."""
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    return text


def _is_uri(arg: str) -> bool:
    return "://" in arg or arg.lower().startswith("file:")


def _folder(arg: str) -> Folder:
    from host_bridge.uris import path_to_uri
    from host_bridge.workspace.records import Folder

    if _is_uri(arg):
        return Folder(uri=arg)
    if not os.path.exists(arg):
        raise CommandError(f"{arg}: no such folder")
    return Folder(uri=path_to_uri(os.path.abspath(arg)))


def _roots(args: argparse.Namespace) -> int:
    # git starts walking the folders before the rest of detection is even imported (issue 17).
    from host_bridge.workspace.repository import start_listings

    paths: list[str] = args.paths or ["."]
    started = start_listings(os.path.realpath(p) for p in paths if not _is_uri(p) and os.path.isdir(p))
    try:
        return _detect_roots(args, paths, started)
    finally:
        for call in started.values():  # those detection did not take over (it closes the others)
            call.close()


def _detect_roots(args: argparse.Namespace, paths: list[str], started: dict[str, GitCall]) -> int:
    # Plain records, not the wire models: pydantic would be most of the command's start-up.
    from host_bridge.hosts.tables import candidate_table, table_width
    from host_bridge.uris import UriError
    from host_bridge.workspace.detect import find_candidates
    from host_bridge.workspace.records import Settings

    try:
        folders = [_folder(p) for p in paths]
    except UriError as error:
        raise CommandError(str(error)) from None
    given = {
        "max_depth": args.max_depth,
        "max_candidates": args.max_candidates,
        "git_timeout": args.git_timeout,
        "deadline": args.deadline,
    }
    # The parser's types check the ranges DetectionLimits declares.
    settings = Settings(**{name: value for name, value in given.items() if value is not None})
    result = find_candidates(folders, settings, started=started)
    if args.json:
        payload = {
            "candidates": [c.to_wire() for c in result.candidates],
            "notices": [n.to_wire() for n in result.notices],
        }
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        print(candidate_table(result, width=table_width(sys.stdout)))
    sys.stdout.flush()
    for notice in result.notices:
        print(f"note: {notice.message}", file=sys.stderr)
    return 0


def _audit(args: argparse.Namespace) -> int:
    from host_bridge.hub.audit import read_audit
    from host_bridge.storage import default_storage_dir

    storage = args.storage_dir or default_storage_dir()
    entries = list(read_audit(storage))
    if args.json:
        for entry in entries:
            print(json.dumps(entry.model_dump(mode="json", by_alias=True), ensure_ascii=False))
        return 0
    if not entries:
        print(f"no roots/list answers recorded in {storage}", file=sys.stderr)
        return 0
    for entry in entries:
        shared = ", ".join(entry.roots) if entry.roots else "(nothing)"
        when = entry.time.isoformat(timespec="seconds")
        if entry.kind == "launch":
            print(f"{when}  {entry.server}  started with {shared}; sandbox {entry.sandbox}")
        else:
            print(f"{when}  {entry.server}  {entry.protocol_version or '?'}  {shared}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    # The editor waits for `initialize` meanwhile: a full collection among the modules being imported costs
    # 30-70 ms and finds next to nothing, so collect none, then freeze them out of every later collection.
    gc.disable()
    from host_bridge.hosts.lsp.main import run_stdio

    gc.freeze()
    gc.enable()
    run_stdio()


def _connect(args: argparse.Namespace) -> int:
    from host_bridge.hosts.terminal.session import connect

    return connect(args)


def _consent(args: argparse.Namespace) -> int:
    from host_bridge.hosts.terminal.consent import consent

    return consent(args)


def _agents(args: argparse.Namespace) -> int:
    from host_bridge.hosts.terminal.agents import agents

    return agents(args)


def _agents_arguments(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:  # pyright: ignore[reportPrivateUsage]
    parser = commands.add_parser(
        "agents",
        help="print (or write) the entries that route Claude Code, Codex, Gemini CLI and other agents through "
        "host-bridge attach",
        description="For the MCP servers host_bridge runs for a folder (those its .vscode/mcp.json and .mcp.json "
        "define, and those a running editor sidecar runs there), print the configuration entries that make an agent "
        "use host_bridge's own copy of each server through `host-bridge attach`: Claude Code (.mcp.json, claude mcp "
        "add), Codex (~/.codex/config.toml), Gemini CLI (.gemini/settings.json), VS Code's agent sessions "
        "(.mcp.json) and any MCP client. Entries in those files that start a second copy of such a server, outside "
        "your consent and the sandbox, are pointed out. With --write FILE the change is shown and written only "
        "after you confirm it (or with --yes); the file's other entries and keys are kept.",
    )
    parser.add_argument("path", nargs="?", default=".", metavar="PATH", help="the project folder (default: .)")
    parser.add_argument(
        "--server-id", action="append", metavar="ID", help="only this server (repeatable; default: every one)"
    )
    parser.add_argument(
        "--write",
        metavar="FILE",
        help="add the entries to FILE: .mcp.json and settings.json (mcpServers), .vscode/mcp.json (servers) or "
        "config.toml (Codex's [mcp_servers.ID])",
    )
    parser.add_argument("--yes", action="store_true", help="with --write: write without asking")
    parser.add_argument(
        "--command",
        metavar="COMMAND",
        help="how agents start host_bridge (default: host-bridge when it is on PATH, else this Python -m host_bridge)",
    )
    parser.add_argument(
        "--storage-dir",
        type=storage_dir,
        metavar="DIR",
        help="the storage folder of the sidecars to use (passed on to attach; default: the user data folder)",
    )
    parser.set_defaults(handler=_agents)


def _server_arguments(parser: argparse.ArgumentParser, *, what: str) -> None:
    """The options naming servers and the storage folder, shared by ``connect`` and ``consent``."""
    parser.add_argument(
        "--server",
        action="append",
        default=[],
        metavar="ID=COMMAND",
        help="a stdio MCP server, or ID=URL for an HTTP one (repeatable); without --server and --config: the "
        "embedded workspace server",
    )
    parser.add_argument("--config", metavar="FILE", help="servers from a .vscode/mcp.json or .mcp.json file")
    parser.add_argument(
        "--storage-dir",
        type=storage_dir,
        metavar="DIR",
        help="where host_bridge keeps its files (default: the user data folder)",
    )
    parser.add_argument("--server-id", metavar="ID", help=what)


def _broad_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--confirm-broad",
        action="store_true",
        help="allow / or your home folder without being asked to confirm (needed when there is no terminal)",
    )


def _connect_arguments(connect: argparse.ArgumentParser) -> None:
    connect.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="folders to look for candidates in; their .vscode/mcp.json and .mcp.json servers are used too "
        "(default: .)",
    )
    _server_arguments(connect, what="the server --list and --read ask")
    connect.add_argument(
        "--allow", action="append", default=[], metavar="PATH", help="share this folder with every server"
    )
    connect.add_argument("--allow-session", action="store_true", help="do not remember the --allow decisions")
    _broad_argument(connect)
    connect.add_argument(
        "--trust-workspace-servers",
        action="store_true",
        help="trust (and remember it) the servers defined in the .vscode/mcp.json and .mcp.json of the folders given",
    )
    connect.add_argument("--list", action="store_true", help="list the servers' resources and resource templates")
    connect.add_argument("--read", metavar="URI", help="print the contents of a resource")
    connect.add_argument(
        "--output", metavar="FILE", help="with --read: save the contents in FILE, binary ones as bytes"
    )
    connect.add_argument("--follow", action="store_true", help="print resource changes and logs until Ctrl-C")
    connect.add_argument(
        "--json", action="store_true", help="print the servers, resources and contents as one JSON document"
    )
    connect.add_argument(
        "-q", "--quiet", action="store_true", help="print only results, questions and problems (no progress)"
    )
    connect.add_argument(
        "--timeout",
        type=seconds(),
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for servers to start (default 30)",
    )
    connect.add_argument(
        "--sandbox",
        choices=("enforce", "off"),
        default="enforce",
        help="confine stdio servers to their shared folders with the OS sandbox (default: enforce where supported)",
    )
    connect.add_argument(
        "--network",
        choices=("on", "off"),
        default="on",
        help="the network of sandboxed stdio servers whose entry does not say (off: the kernel refuses them TCP and "
        "other protocols; a workspace file cannot turn it on)",
    )
    connect.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="print the servers' stderr"
    )
    connect.set_defaults(handler=_connect)


def _consent_arguments(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:  # pyright: ignore[reportPrivateUsage]
    consent = commands.add_parser(
        "consent",
        help="list or change your saved decisions: which folders each MCP server may see, which servers you trust",
        description="Your saved decisions, per server as connect and the editor see it: where it is defined, its id "
        "and its exact launch configuration (a changed command line is a new server, asked again). 'list' shows a "
        "short handle for every saved decision and for every server a running editor sidecar runs; the other actions "
        "take a handle, the id of a server a running sidecar runs, or a description (--server, --config, the folders' "
        "own config files). A decision reaches every running sidecar within about a second.",
    )
    actions = consent.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser(
        "list", help="the saved decisions and the servers running sidecars run, with their handles"
    )
    _server_arguments(listing, what="only this server's decisions")
    listing.add_argument("--all", action="store_true", help="every saved decision, of every server ever asked")
    listing.add_argument("--json", action="store_true", help="one JSON object per decision and per running server")
    listing.add_argument("paths", nargs="*", metavar="PATH", help="folders whose own servers to include")
    targets_help = (
        "a record's handle; or a server (its handle, or its id in a running sidecar) followed by the folders; "
        "or only folders, for the servers described by --server/--config (default: the embedded server and the "
        "folders' own config files)"
    )
    for action, text in (
        ("allow", "share these folders with the servers from now on"),
        ("deny", "never share these folders with the servers, and do not ask again"),
        ("forget", "remove the saved decisions about these folders, so you are asked again (also in running editors)"),
        (
            "let-read",
            "not sharing: let the servers' sandbox read these paths it refused at start (package or runtime folders)",
        ),
        ("trust", "trust these workspace-defined servers: a running editor starts them"),
        ("untrust", "do not trust these workspace-defined servers: a running editor stops them"),
    ):
        change = actions.add_parser(action, help=text, description=text)
        _server_arguments(change, what="only this server: an id, or a handle (default: every server named)")
        if action == "allow":
            _broad_argument(change)
            change.add_argument(
                "--read-only",
                action="store_true",
                help="share them read only: the server's sandbox lets it read, never write, there",
            )
        if action in ("trust", "untrust"):
            change.add_argument("targets", nargs="+", metavar="SERVER", help="handles or ids of running servers")
        else:
            change.add_argument("targets", nargs="+", metavar="TARGET", help=targets_help)
    consent.set_defaults(handler=_consent)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``host-bridge``."""
    from host_bridge import __version__

    parser = argparse.ArgumentParser(prog="host-bridge", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"host-bridge {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details to stderr")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the editor sidecar: LSP and hostBridge/* on stdin/stdout")
    serve.set_defaults(handler=_serve)

    roots = commands.add_parser("roots", help="list the folders that could be shared (candidate roots)")
    roots.add_argument("paths", nargs="*", metavar="PATH", help="folders or file:// URIs (default: .)")
    roots.add_argument("--json", action="store_true", help="print the Candidate JSON (docs/protocol.md)")
    roots.add_argument(
        "--max-depth",
        type=whole_number(0, 64),
        metavar="N",
        help="directory levels searched below each folder (default 8)",
    )
    roots.add_argument(
        "--max-candidates", type=whole_number(1, 100_000), metavar="N", help="candidates listed at most (default 500)"
    )
    roots.add_argument(
        "--git-timeout", type=seconds(600), metavar="SECONDS", help="seconds one git call may take (default 10)"
    )
    roots.add_argument(
        "--deadline", type=seconds(3600), metavar="SECONDS", help="seconds detection may take (default 20)"
    )
    roots.set_defaults(handler=_roots)

    audit = commands.add_parser("audit", help="show which folders each MCP server was given, and when")
    audit.add_argument(
        "--storage-dir",
        type=storage_dir,
        metavar="DIR",
        help="where host_bridge keeps its files (default: the user data folder)",
    )
    audit.add_argument("--json", action="store_true", help="one JSON object per line")
    audit.set_defaults(handler=_audit)

    connect = commands.add_parser(
        "connect", help="connect MCP servers from the terminal and share the folders you allow with them"
    )
    _connect_arguments(connect)
    _consent_arguments(commands)
    _agents_arguments(commands)

    from host_bridge.gateway.command import add_attach_command

    add_attach_command(commands)
    return parser


_GIT_LOCATION_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")
"""Inherited from a git hook or alias, these would point every repository look-up at one repository."""

INTERRUPTED = 130
"""Exit code after Ctrl-C (128 + SIGINT, as a shell reports it)."""
CLOSED_PIPE = 141
"""Exit code when stdout was closed by its reader (128 + SIGPIPE, as a shell reports it)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``host-bridge`` console script."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments == ["serve"]:
        # What editors run, then wait for `initialize`: building the parser costs milliseconds (and shutil).
        args = argparse.Namespace(verbose=False, handler=_serve, command="serve")
    else:
        try:
            args = build_parser().parse_args(arguments)
        except KeyboardInterrupt:
            return INTERRUPTED
    for name in _GIT_LOCATION_VARIABLES:
        os.environ.pop(name, None)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    """Run the command's handler; user errors, Ctrl-C and a closed stdout end it with a sentence, not a traceback."""
    name = f"host-bridge {args.command}" if getattr(args, "command", None) else "host-bridge"
    try:
        code = int(args.handler(args))
        sys.stdout.flush()
        return code
    except CommandError as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:
        return _closed_pipe()
    except BaseExceptionGroup as group:  # from inside an event loop (connect)
        if group.split(BrokenPipeError)[1] is not None:
            raise
        return _closed_pipe()
    except OSError as error:
        print(f"{name}: {_os_error(error)}", file=sys.stderr)
        return 1


def _closed_pipe() -> int:
    """The reader of stdout went away (``| head -1``): nothing more can be said there, and nothing is wrong."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return CLOSED_PIPE


def _os_error(error: OSError) -> str:
    """``[Errno 20] Not a directory: '/x/audit.jsonl'`` as ``/x/audit.jsonl: not a directory``."""
    reason = (error.strerror or str(error)).lower()
    return f"{error.filename}: {reason}" if error.filename else reason


if __name__ == "__main__":
    sys.exit(main())
