"""Fixture MCP server that tries to read, list and write paths it is told, and reports what the OS said.

Started under host_bridge's sandbox, it shows which paths the sandbox refused (``errno`` 13, ``EACCES``) and which
worked. The tool ``probe`` takes ``{"read": [paths], "write": [paths], "list": [paths], "tmp": bool}`` and answers
one entry per attempt, as JSON text: ``{"op", "path", "ok", "errno"}`` (``errno`` null on success); with ``tmp`` it
also makes a file with :mod:`tempfile` and reports where it went (``{"op": "tmp", "path": …}``). Writes create or
replace the file with the text ``probe``.

At start, each ``--startup-read PATH`` and ``--startup-write PATH`` is attempted first; a failure is logged on
stderr as Python prints it (``PermissionError: [Errno 13] Permission denied: '/p'``) and the server starts anyway.

The tool ``started_with`` reports its own ``argv``, process id, working directory and ``SHARED_FOLDERS`` variable
(what ``${hostBridge:sharedFolders}`` expanded to).

With ``--hold-until PATH`` it answers nothing, not even ``initialize``, until ``PATH`` exists (a server slow to
start). With ``--require-folder`` it exits with status 2 at once when no FOLDER is given, as servers that take
their folders on the command line do (server-filesystem, mcp-server-git's ``--repository``); each FOLDER must then
be a directory it can list, else it exits with status 1 naming it.

Usage: ``python tests/servers/sandbox_probe.py [--startup-read PATH]… [--startup-write PATH]… [--hold-until PATH]
[--require-folder] [FOLDER…]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback

from fixture_support import configure_logging
from mcp.server.mcpserver import MCPServer

logger = configure_logging("sandbox_probe")

server = MCPServer("sandbox-probe")


def attempt(op: str, path: str) -> dict[str, object]:
    """Try ``op`` (``read``, ``write`` or ``list``) on ``path``; the outcome with the errno of a failure."""
    try:
        if op == "read":
            with open(path, encoding="utf-8", errors="replace") as file:
                file.read()
        elif op == "write":
            with open(path, "w", encoding="utf-8") as file:
                file.write("probe")
        else:
            os.listdir(path)
    except OSError as error:
        logger.info("%s", traceback.format_exception_only(error)[-1].strip())
        return {"op": op, "path": path, "ok": False, "errno": error.errno}
    return {"op": op, "path": path, "ok": True, "errno": None}


@server.tool()
def probe(
    read: list[str] | None = None, write: list[str] | None = None, list: list[str] | None = None, tmp: bool = False
) -> str:
    """Try each read, write and listing; report the outcome of each as a JSON list."""
    outcomes = [
        *(attempt("read", path) for path in read or []),
        *(attempt("write", path) for path in write or []),
        *(attempt("list", path) for path in list or []),
    ]
    if tmp:
        with tempfile.NamedTemporaryFile("w", prefix="probe-", delete=False) as file:
            file.write("probe")
        outcomes.append({"op": "tmp", "path": file.name, "ok": True, "errno": None})
    return json.dumps(outcomes)


@server.tool()
def started_with() -> str:
    """How this process was started: its arguments, process id, working directory and ``SHARED_FOLDERS``."""
    started = {
        "argv": sys.argv[1:],
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "sharedFolders": os.environ.get("SHARED_FOLDERS"),
    }
    return json.dumps(started)


def main() -> None:
    parser = argparse.ArgumentParser(description="Fixture MCP server that reports what the OS let it touch.")
    parser.add_argument("--startup-read", action="append", default=[], metavar="PATH", help="read PATH at start")
    parser.add_argument("--startup-write", action="append", default=[], metavar="PATH", help="write PATH at start")
    parser.add_argument(
        "--hold-until", metavar="PATH", help="answer nothing (not even initialize) until PATH exists: a slow start"
    )
    parser.add_argument("--require-folder", action="store_true", help="exit at once without a FOLDER it can list")
    parser.add_argument("folders", nargs="*", metavar="FOLDER", help="folders it was given (reported by started_with)")
    options = parser.parse_args()
    if options.require_folder:
        if not options.folders:
            print("usage: sandbox_probe.py --require-folder FOLDER... (no folder was given)", file=sys.stderr)
            sys.exit(2)
        for folder in options.folders:
            os.listdir(folder)
    for path in options.startup_read:
        attempt("read", path)
    for path in options.startup_write:
        attempt("write", path)
    while options.hold_until and not os.path.exists(options.hold_until):
        time.sleep(0.05)
    server.run("stdio")


if __name__ == "__main__":
    main()
