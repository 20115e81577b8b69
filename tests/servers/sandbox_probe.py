"""Fixture MCP server that tries to read, list and write paths it is told, and reports what the OS said.

Started under host_bridge's sandbox, it shows which paths the sandbox refused (``errno`` 13, ``EACCES``) and which
worked. The tool ``probe`` takes ``{"read": [paths], "write": [paths], "list": [paths], "tmp": bool}`` and answers
one entry per attempt, as JSON text: ``{"op", "path", "ok", "errno"}`` (``errno`` null on success); with ``tmp`` it
also makes a file with :mod:`tempfile` and reports where it went (``{"op": "tmp", "path": …}``). Writes create or
replace the file with the text ``probe``.

At start, each ``--startup-read PATH`` and ``--startup-write PATH`` is attempted first; a failure is logged on
stderr as Python prints it (``PermissionError: [Errno 13] Permission denied: '/p'``) and the server starts anyway.

The tool ``started_with`` reports its own ``argv``, process id, working directory, ``SHARED_FOLDERS`` variable
(what ``${hostBridge:sharedFolders}`` expanded to), which of ``SSH_AUTH_SOCK`` and ``DBUS_SESSION_BUS_ADDRESS`` it
got, and its effective capabilities (``CapEff`` of ``/proc/self/status``).

The tool ``escape`` tries the ways out of a sandbox besides files, as a hostile server would, and answers one entry
per attempt like ``probe``: ``signal`` (process ids sent ``SIGCONT``, harmless but a real signal), ``unix`` (named
UNIX socket paths to connect to), ``abstract`` (abstract socket names), ``tcp`` and ``udp`` (``host:port`` to connect
to or send to), ``fastopen`` (``host:port`` reached with ``sendto(MSG_FASTOPEN)``, which connects without
``connect``), ``terminal`` (terminal device paths to open for writing and push a character into with ``TIOCSTI``), and
``shm`` (names to create in ``/dev/shm``).

With ``--hold-until PATH`` it answers nothing, not even ``initialize``, until ``PATH`` exists (a server slow to
start). With ``--require-folder`` it exits with status 2 at once when no FOLDER is given, as servers that take
their folders on the command line do (server-filesystem, mcp-server-git's ``--repository``); each FOLDER must then
be a directory it can list, else it exits with status 1 naming it.

Usage: ``python tests/servers/sandbox_probe.py [--startup-read PATH]… [--startup-write PATH]… [--hold-until PATH]
[--require-folder] [FOLDER…]``.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import socket
import sys
import tempfile
import termios
import time
import traceback
from collections.abc import Callable

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
    """How this process was started: its arguments, process id, working directory, ``SHARED_FOLDERS``, the socket
    variables it got, and its effective capabilities."""
    started = {
        "argv": sys.argv[1:],
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "sharedFolders": os.environ.get("SHARED_FOLDERS"),
        "socketVariables": sorted(n for n in ("SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS") if n in os.environ),
        "capEff": _capabilities(),
    }
    return json.dumps(started)


def _capabilities() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as file:
            for line in file:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except OSError:
        return None
    return None


def _outcome(op: str, target: str, action: Callable[[], object]) -> dict[str, object]:
    try:
        action()
    except OSError as error:
        logger.info("%s %s: %s", op, target, error)
        return {"op": op, "path": target, "ok": False, "errno": error.errno}
    return {"op": op, "path": target, "ok": True, "errno": None}


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def _connect(family: int, address: str | tuple[str, int], kind: int = socket.SOCK_STREAM) -> None:
    with socket.socket(family, kind) as sock:
        sock.settimeout(5)
        sock.connect(address)


def _send_udp(address: tuple[str, int]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"probe", address)


def _fast_open(address: tuple[str, int]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.sendto(b"probe", socket.MSG_FASTOPEN, address)


def _inject(path: str) -> None:
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    try:
        os.write(fd, b"")
        fcntl.ioctl(fd, termios.TIOCSTI, b"#")
    finally:
        os.close(fd)


def _shm(name: str) -> None:
    with open(os.path.join("/dev/shm", name), "w", encoding="utf-8") as file:
        file.write("probe")


@server.tool()
def escape(
    signal_pids: list[int] | None = None,
    unix: list[str] | None = None,
    abstract: list[str] | None = None,
    tcp: list[str] | None = None,
    udp: list[str] | None = None,
    fastopen: list[str] | None = None,
    terminal: list[str] | None = None,
    shm: list[str] | None = None,
) -> str:
    """Try each way out besides files (see the module); report the outcome of each as a JSON list."""
    outcomes = [
        *(_outcome("signal", str(pid), lambda pid=pid: os.kill(pid, signal.SIGCONT)) for pid in signal_pids or []),
        *(_outcome("unix", path, lambda path=path: _connect(socket.AF_UNIX, path)) for path in unix or []),
        *(
            _outcome("abstract", name, lambda name=name: _connect(socket.AF_UNIX, "\0" + name))
            for name in abstract or []
        ),
        *(_outcome("tcp", where, lambda where=where: _connect(socket.AF_INET, _address(where))) for where in tcp or []),
        *(_outcome("udp", where, lambda where=where: _send_udp(_address(where))) for where in udp or []),
        *(_outcome("fastopen", where, lambda where=where: _fast_open(_address(where))) for where in fastopen or []),
        *(_outcome("terminal", path, lambda path=path: _inject(path)) for path in terminal or []),
        *(_outcome("shm", name, lambda name=name: _shm(name)) for name in shm or []),
    ]
    return json.dumps(outcomes)


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
