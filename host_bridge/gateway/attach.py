"""``host-bridge attach SERVER_ID``: the stdio MCP server an agent starts to use a server the sidecar runs.

It finds the running sidecar of the workspace (:func:`host_bridge.gateway.registry.find_sidecar`), connects to its
gateway and names the server in the hello line: the MCP session itself is served by the SDK in the sidecar, against
the server's one live connection (so there is one process tree per server, and the user's per-folder consent holds for
the agent too). When stdin and stdout are pipes or sockets (as an agent starts it) ``attach`` hands them to the gateway,
which then reads and writes the agent's messages itself, and waits for the session's end: no process stands between
the agent and the sidecar, which saves two hand-overs between processes per message. Otherwise (a terminal, a file, or
a gateway that does not take them) it carries the messages both ways unchanged. stdout carries nothing but the
gateway's MCP messages; every sentence goes to stderr.

When no sidecar serves the workspace, ``attach`` starts a headless one for it (:mod:`host_bridge.hosts.headless`),
shared by every later ``attach`` there and gone a while (``$HOST_BRIDGE_HEADLESS_IDLE`` seconds, default 30) after
the last agent left. It uses only saved decisions and never asks; ``attach`` says so once on stderr, with the
``host-bridge consent`` command that shares the folder when nothing is shared with the server yet.

Exit codes: 0 when the agent closed stdin, 1 when the sidecar went away during the session, 2 when no sidecar runs for
the workspace and none could be started (or the platform has no gateway), 3 when the sidecar refused the server
(unknown, not running).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import stat
import subprocess
import sys
import threading
import time

from pydantic import ValidationError

from host_bridge.gateway.hello import MAX_HELLO_BYTES, AgentProcess, Hello, HelloAnswer, SessionEnd
from host_bridge.gateway.registry import SUPPORTED, NoSidecarError, SidecarEntry, connect_address, find_sidecar

NO_SIDECAR = 2
"""Exit code: no sidecar runs for the workspace."""
REFUSED = 3
"""Exit code: the sidecar refused the server."""
LOST = 1
"""Exit code: the sidecar closed the connection while the agent was still using it."""
ANSWER_TIMEOUT = 120.0
"""Seconds to wait for the gateway's answer (it waits up to a minute for the server to be running)."""
HEADLESS_START_WAIT = 60.0
"""Seconds to wait for a headless sidecar to register (it reads the folder's config files and detects its folders)."""
IDLE_VARIABLE = "HOST_BRIDGE_HEADLESS_IDLE"
"""Environment variable: seconds a headless sidecar stays after its last agent left."""
_CHUNK = 1 << 16
_POLL = 0.05


def run(args: argparse.Namespace) -> int:
    """The ``attach`` command."""
    return attach(args.server_id, workspace=args.workspace, storage_dir=args.storage_dir)


def attach(server_id: str, *, workspace: str | None = None, storage_dir: str | None = None) -> int:
    """Bridge this process's stdin and stdout to ``server_id`` of the workspace's sidecar; the exit code."""
    if not SUPPORTED:
        return _fail(NO_SIDECAR, "the gateway is not available on Windows yet; run the server directly")
    workspace = os.path.realpath(workspace or os.getcwd())
    try:
        try:
            entry = find_sidecar(workspace, storage_dir)
        except NoSidecarError:
            entry = _start_headless(workspace, storage_dir)
        connection = _connect(entry)
    except NoSidecarError as error:
        return _fail(NO_SIDECAR, str(error))
    with connection:
        hello = Hello(server=server_id, agent=_agent(), handover=_can_hand_over(), secret=entry.secret)
        connection.sendall(hello.model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n")
        connection.settimeout(ANSWER_TIMEOUT)
        try:
            line, rest = _read_line(connection)
            answer = HelloAnswer.model_validate_json(line)
        except (OSError, ValueError) as error:
            return _fail(LOST, f"the MCP Host Bridge sidecar (process {entry.pid}) did not answer: {error}")
        if not answer.ok:
            return _fail(REFUSED, answer.error or f"the MCP Host Bridge sidecar refused server {server_id!r}")
        connection.settimeout(None)
        if answer.advice:
            print(f"host-bridge attach: {answer.advice}", file=sys.stderr, flush=True)
        if answer.handover and hello.handover:
            return _hand_over(connection, rest)
        return _relay(connection, rest)


def _start_headless(workspace: str, storage_dir: str | None) -> SidecarEntry:
    """Start a headless sidecar for ``workspace`` and wait until it registered; its entry.

    Another ``attach`` may start one at the same time: only one runs (it holds the workspace's lock), the other exits
    at once, and both ``attach`` find the one that runs. Raises :class:`NoSidecarError`.
    """
    command = [sys.executable, "-m", "host_bridge.hosts.headless", "--workspace", workspace]
    if storage_dir:
        command += ["--storage-dir", storage_dir]
    if idle := os.environ.get(IDLE_VARIABLE):
        command += ["--idle", idle]
    try:
        child = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # it outlives this attach, and the agent's signals to its group
            close_fds=True,
        )
    except OSError as error:
        raise NoSidecarError(
            f"no MCP Host Bridge sidecar runs for {workspace}, and none could be started: {error}"
        ) from None
    deadline = time.monotonic() + HEADLESS_START_WAIT
    while True:
        try:
            entry = find_sidecar(workspace, storage_dir)
        except NoSidecarError:
            pass
        else:
            if entry.headless and entry.pid == child.pid:
                print(
                    f"host-bridge attach: no editor has {workspace} open: started MCP Host Bridge without an editor "
                    f"(process {entry.pid}). It shares only the folders you decided to share before and starts only "
                    "the servers you trust; it never asks",
                    file=sys.stderr,
                    flush=True,
                )
            return entry
        code = child.poll()
        if (code is not None and code != 0) or time.monotonic() > deadline:
            if code is None:
                child.kill()
            raise NoSidecarError(
                f"no MCP Host Bridge sidecar runs for {workspace}, and the one started without an editor did not "
                f"register within {HEADLESS_START_WAIT:g} s (exit status {child.wait()}); its log is in the "
                "`gateway` folder of MCP Host Bridge's storage. Open this folder in an editor with MCP Host Bridge, "
                "then start this server again"
            )
        time.sleep(_POLL)


def _connect(entry: SidecarEntry) -> socket.socket:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(connect_address(entry.socket))
    except OSError as error:
        connection.close()
        raise NoSidecarError(
            f"the MCP Host Bridge sidecar (process {entry.pid}) does not accept connections on {entry.socket} "
            f'({error.strerror or error}); restart it (in VS Code: "MCP: Restart Host Bridge") and try again'
        ) from None
    return connection


def _agent() -> AgentProcess:
    parent = os.getppid()
    name: str | None = None
    with contextlib.suppress(OSError), open(f"/proc/{parent}/comm", encoding="utf-8", errors="replace") as comm:
        name = comm.read().strip() or None
    return AgentProcess(pid=os.getpid(), parent_pid=parent, parent_name=name, cwd=os.getcwd())


def _read_line(connection: socket.socket) -> tuple[bytes, bytes]:
    buffer = b""
    while (end := buffer.find(b"\n")) < 0:
        if len(buffer) > MAX_HELLO_BYTES:
            raise ValueError("its answer is too long")
        chunk = connection.recv(_CHUNK)
        if not chunk:
            raise ValueError("it closed the connection")
        buffer += chunk
    return buffer[:end], buffer[end + 1 :]


def _can_hand_over() -> bool:
    """Whether stdin and stdout are pipes or sockets, which the gateway can serve itself."""
    try:
        return all(stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) for mode in (os.fstat(0).st_mode, os.fstat(1).st_mode))
    except OSError:
        return False


def _hand_over(connection: socket.socket, pending: bytes) -> int:
    """Send stdin and stdout to the gateway, let go of them, and wait for the session's end."""
    try:
        socket.send_fds(connection, [b"\0"], [0, 1])
    except OSError as error:
        return _fail(LOST, f"could not hand the session to the MCP Host Bridge sidecar: {error}")
    # Only the gateway holds the agent's pipes now, so the agent sees them close exactly when the session ends.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    buffer = pending
    try:
        while b"\n" not in buffer and len(buffer) <= MAX_HELLO_BYTES and (chunk := connection.recv(_CHUNK)):
            buffer += chunk
    except OSError as error:
        return _fail(LOST, f"the connection to the MCP Host Bridge sidecar failed: {error}")
    try:
        end = SessionEnd.model_validate_json(buffer.partition(b"\n")[0])
    except ValidationError:
        return _fail(
            LOST, "the MCP Host Bridge sidecar closed the connection (it stopped or restarted); start this server again"
        )
    if end.agent_closed:
        return 0
    return _fail(LOST, end.reason or "the MCP Host Bridge sidecar ended the session; start this server again")


def _relay(connection: socket.socket, pending: bytes) -> int:
    """Copy stdin to the socket (in a thread) and the socket to stdout until either side ends."""
    agent_done = threading.Event()

    def upstream() -> None:
        try:
            while chunk := os.read(0, _CHUNK):
                connection.sendall(chunk)
        except OSError:
            pass
        finally:
            agent_done.set()
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_WR)

    threading.Thread(target=upstream, name="stdin to gateway", daemon=True).start()
    try:
        if pending:
            _write_all(pending)
        while chunk := connection.recv(_CHUNK):
            _write_all(chunk)
    except BrokenPipeError:
        return 0
    except OSError as error:
        return _fail(LOST, f"the connection to the MCP Host Bridge sidecar failed: {error}")
    if agent_done.is_set():
        return 0
    return _fail(
        LOST, "the MCP Host Bridge sidecar closed the connection (it stopped or restarted); start this server again"
    )


def _write_all(data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(1, view)
        view = view[written:]


def _fail(code: int, message: str) -> int:
    print(f"host-bridge attach: {message}", file=sys.stderr, flush=True)
    return code
