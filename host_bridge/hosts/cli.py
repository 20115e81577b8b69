"""Command line: ``host-bridge serve``, ``host-bridge roots [PATH…] [--json]``, ``host-bridge audit``,
``host-bridge connect [PATH…]``."""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from host_bridge.workspace.models import WorkspaceFolder

# Subcommands import what they need when they run: `serve` must answer `initialize` quickly.


def _folder(arg: str) -> WorkspaceFolder:
    from host_bridge.uris import path_to_uri
    from host_bridge.workspace.models import WorkspaceFolder

    if "://" in arg or arg.lower().startswith("file:"):
        return WorkspaceFolder(uri=arg)
    return WorkspaceFolder(uri=path_to_uri(os.path.abspath(arg)))


def _roots(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from host_bridge.hosts.roots_table import candidate_table
    from host_bridge.uris import UriError
    from host_bridge.workspace.detect import detect
    from host_bridge.workspace.models import DetectionSettings

    try:
        folders = [_folder(p) for p in args.paths or ["."]]
    except UriError as error:
        print(f"host-bridge roots: {error}", file=sys.stderr)
        return 2
    given = {
        "max_depth": args.max_depth,
        "max_candidates": args.max_candidates,
        "git_timeout": args.git_timeout,
        "deadline": args.deadline,
    }
    try:
        settings = DetectionSettings(**{name: value for name, value in given.items() if value is not None})
    except ValidationError as error:
        for problem in error.errors():
            option = "--" + str(problem["loc"][0]).replace("_", "-")
            print(f"host-bridge roots: {option}: {problem['msg'].lower()}", file=sys.stderr)
        return 2
    result = detect(folders, settings)
    if args.json:
        payload = {
            "candidates": [c.to_wire() for c in result.candidates],
            "notices": [n.to_wire() for n in result.notices],
        }
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        print(candidate_table(result))
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
        print(f"no roots/list answers recorded in {storage}")
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


def _connect_arguments(connect: argparse.ArgumentParser) -> None:
    connect.add_argument("paths", nargs="*", metavar="PATH", help="folders to look for candidates in (default: .)")
    connect.add_argument(
        "--server", action="append", default=[], metavar="ID=COMMAND", help="a stdio MCP server (repeatable)"
    )
    connect.add_argument("--config", metavar="FILE", help="servers from a .vscode/mcp.json or .mcp.json file")
    connect.add_argument("--storage-dir", help="where host_bridge keeps its files (default: the user data dir)")
    connect.add_argument(
        "--allow", action="append", default=[], metavar="PATH", help="share this folder with every server"
    )
    connect.add_argument("--allow-session", action="store_true", help="do not remember the --allow decisions")
    connect.add_argument("--list", action="store_true", help="list the servers' resources")
    connect.add_argument("--read", metavar="URI", help="print the contents of a resource")
    connect.add_argument("--server-id", metavar="ID", help="the server --list and --read ask")
    connect.add_argument("--follow", action="store_true", help="print resource changes and logs until Ctrl-C")
    connect.add_argument(
        "--timeout", type=float, default=30.0, metavar="SECONDS", help="how long to wait for servers to start"
    )
    connect.add_argument(
        "--sandbox",
        choices=("enforce", "off"),
        default="enforce",
        help="confine stdio servers to their shared folders with the OS sandbox (default: enforce where supported)",
    )
    connect.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="print the servers' stderr"
    )
    connect.set_defaults(handler=_connect)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``host-bridge``."""
    parser = argparse.ArgumentParser(prog="host-bridge", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details to stderr")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the editor sidecar: LSP and hostBridge/* on stdin/stdout")
    serve.set_defaults(handler=_serve)

    roots = commands.add_parser("roots", help="list the folders that could be shared (candidate roots)")
    roots.add_argument("paths", nargs="*", metavar="PATH", help="folders or file:// URIs (default: .)")
    roots.add_argument("--json", action="store_true", help="print the Candidate JSON (docs/protocol.md)")
    roots.add_argument("--max-depth", type=int, help="directory levels searched below each folder (default 8)")
    roots.add_argument("--max-candidates", type=int, help="candidates listed at most (default 500)")
    roots.add_argument(
        "--git-timeout", type=float, metavar="SECONDS", help="seconds one git call may take (default 10)"
    )
    roots.add_argument("--deadline", type=float, metavar="SECONDS", help="seconds detection may take (default 20)")
    roots.set_defaults(handler=_roots)

    audit = commands.add_parser("audit", help="show which folders each MCP server was given, and when")
    audit.add_argument("--storage-dir", help="where host_bridge keeps its files (default: the user data dir)")
    audit.add_argument("--json", action="store_true", help="one JSON object per line")
    audit.set_defaults(handler=_audit)

    connect = commands.add_parser(
        "connect", help="connect MCP servers from the terminal and share the folders you allow with them"
    )
    _connect_arguments(connect)

    from host_bridge.gateway.command import add_attach_command

    add_attach_command(commands)
    return parser


_GIT_LOCATION_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")
"""Inherited from a git hook or alias, these would point every repository look-up at one repository."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``host-bridge`` console script."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments == ["serve"]:
        # What editors run, then wait for `initialize`: building the parser costs milliseconds (and shutil).
        args = argparse.Namespace(verbose=False, handler=_serve)
    else:
        args = build_parser().parse_args(arguments)
    for name in _GIT_LOCATION_VARIABLES:
        os.environ.pop(name, None)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
