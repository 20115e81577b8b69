"""The ``attach`` subcommand's arguments, light enough to build with every ``host-bridge`` parser.

What runs the command (:mod:`host_bridge.gateway.attach`, with pydantic and the sidecar registry) is imported only
when ``attach`` is the command given.
"""

from __future__ import annotations

import argparse

_DESCRIPTION = "host-bridge attach SERVER_ID: the stdio MCP server an agent starts to use a server the sidecar runs."


def add_attach_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:  # pyright: ignore[reportPrivateUsage]
    """Add ``attach`` to ``host-bridge``'s subcommands."""
    attach = commands.add_parser(
        "attach",
        help="run as a stdio MCP server that uses SERVER_ID from the running sidecar (for agents: .mcp.json …)",
        description=_DESCRIPTION,
    )
    attach.add_argument("server_id", metavar="SERVER_ID", help="the server's id in the sidecar's configuration")
    attach.add_argument(
        "--workspace", metavar="DIR", help="the workspace whose sidecar to use (default: the current directory)"
    )
    attach.add_argument(
        "--storage-dir",
        metavar="DIR",
        help="the sidecar's storage directory (default: the user data dir; every sidecar registers there)",
    )
    attach.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from host_bridge.gateway.attach import run

    return run(args)
