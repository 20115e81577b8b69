"""The stdio transport for MCP servers: the SDK's process handling with our own bounded line framing.

:func:`stdio_transport` stands in for ``mcp.client.stdio.stdio_client`` and yields the read and write streams that
``mcp.Client`` expects; the MCP session stays the SDK's. What differs is the read side: stdout is read as bytes and
framed by :mod:`host_bridge.jsonrpc_lines`: split on ``b"\\n"`` with a hard per-line cap, so a server writing an
endless line is disconnected with a clear reason instead of growing our memory until a request times out
(docs/security.md C9), and each line parsed once into the SDK's message. Both streams work in the task that uses them
(:class:`LineReader` reads and parses in the SDK's dispatcher, a sender writes its own message): no pump tasks and
memory streams in between, which would cost two hand-overs between tasks per message each way.

Shutdown follows the SDK and the MCP spec: close stdin, give the server a grace period, then end its whole process
group (on POSIX the server is started in a new session, so its pid is its group), also when the server itself exited
at once and left children behind. The whole sequence takes at most :data:`STOP_SECONDS`, which fits in the sidecar's
stop budget. Every group is registered with :mod:`host_bridge.hub.process_groups` while it may have members, and each
server gets the parent-death signal on Linux, so that none outlives host_bridge even when it is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import os
import subprocess
import sys
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import anyio
import anyio.abc
import anyio.lowlevel
import mcp_types as types
from mcp.shared.message import SessionMessage

from host_bridge.hub import process_groups
from host_bridge.hub.limits import AnswerLimits
from host_bridge.jsonrpc_lines import DEFAULT_MAX_LINE_BYTES, LineSplitter, parse_or_take
from host_bridge.procs import die_with_parent

logger = logging.getLogger(__name__)

Streams = tuple["LineReader", "LineWriter"]
"""What ``mcp.Client`` takes from a transport: messages (or parse errors) from the server, messages to it."""

_RECEIVE_BYTES = 2**20
_RELEASE_AFTER = 2**20
"""Lines longer than this are followed by :func:`_release`."""
_RELEASE_ID = "host-bridge/release"
_STDIN_CLOSE_GRACE = 1.5
"""Seconds the server has to exit on its own after its stdin closes."""
_GROUP_TERM_GRACE = 1.0
"""Seconds between SIGTERM and SIGKILL for what is left of the server's process group."""
_REAP_WAIT = 0.5
"""Seconds to wait for the killed server to be reaped."""
_EXIT_POLL_INTERVAL = 0.01
_EXIT_AFTER_EOF = 1.0
"""Seconds a server whose stdout ended has to be seen exiting, so it is reported as exited."""
STOP_SECONDS = _STDIN_CLOSE_GRACE + _GROUP_TERM_GRACE + _REAP_WAIT
"""The longest a stop takes, from the session's end to the last SIGKILL and the server reaped."""


@contextlib.asynccontextmanager
async def stdio_transport(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    stderr: int,
    server: str,
    on_lost: Callable[[str], None],
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    limits: AnswerLimits | None = None,
    preexec_fn: Callable[[], None] | None = None,
    on_exit: Callable[[int | None], None] | None = None,
    on_started: Callable[[], None] | None = None,
) -> AsyncGenerator[Streams]:
    """Start ``command`` with ``args`` and exchange newline-delimited JSON-RPC with it over its stdin/stdout.

    The server gets this process's whole environment with ``env`` merged over it, as VS Code starts its MCP servers
    (proxy, CA-certificate, npm and pip settings must reach them; the SDK's default keeps only a handful of
    variables such as ``HOME`` and ``PATH``). ``stderr`` is the write end of a pipe for the server's
    stderr; it is closed here once the child has it (or the start failed), so its reader sees end-of-file exactly
    when the server and everything it started are gone. ``on_lost`` is called with a sentence naming ``server``
    when the transport ends the connection itself (a line over ``max_line_bytes``); the session then sees the
    stream end. ``limits`` caps the items of answers (:class:`~host_bridge.hub.limits.AnswerLimits`).
    ``preexec_fn`` runs in the forked child before ``exec`` (the OS sandbox; it must end with the parent-death
    signal, :func:`host_bridge.procs.die_with_parent`, which is the default). ``on_exit`` hears the process's
    return code once it is stopped (negative: the signal that ended it); ``on_started`` is called once the process
    exists (before its handshake). Raises ``OSError`` when the command
    cannot be started, ``subprocess.SubprocessError`` when ``preexec_fn`` failed.
    """
    try:
        process = await _start(command, list(args), server_environment(env), cwd, stderr, preexec_fn)
    finally:
        os.close(stderr)
    if on_started is not None:
        on_started()

    assert process.stdin is not None and process.stdout is not None
    stdout = process.stdout
    read_stream = LineReader(stdout, LineSplitter(max_line_bytes), limits)
    write_stream = LineWriter(process.stdin, limits, on_broken=read_stream.close)
    shutting_down = False

    async def drain() -> None:
        with anyio.CancelScope(shield=True):
            await read_stream.wait_idle()
            await _drain(stdout)

    async def on_end(reason: LineEnd) -> None:
        if reason is LineEnd.TOO_LONG:
            tasks.start_soon(drain)
            on_lost(
                f"the MCP server {server!r} wrote a line longer than {max_line_bytes} bytes to stdout "
                f"(the cap is {max_line_bytes} bytes); closed the connection"
            )
        elif reason is LineEnd.END and not shutting_down:
            await _say_why_stdout_ended(process, on_lost)
        elif reason is LineEnd.BROKEN and not shutting_down:
            logger.exception("[%s] reading the server's stdout failed", server)

    read_stream.on_end = on_end

    async def shutdown() -> None:
        # Unblock the reader into the drain first: a server stuck writing stdout cannot read its stdin.
        read_stream.close()
        write_stream.close()
        if not read_stream.ended_by_server:
            tasks.start_soon(drain)
        await _stop(process)
        if on_exit is not None:
            on_exit(process.returncode)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tasks:
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):
                await shutdown()
            tasks.cancel_scope.cancel()


class LineEnd(enum.Enum):
    """Why a :class:`LineReader` ended."""

    END = "end"
    """The server's stdout reached end-of-file."""
    TOO_LONG = "tooLong"
    """A line went over the cap; the rest of stdout is not read."""
    BROKEN = "broken"
    """Reading failed."""
    CLOSED = "closed"
    """:meth:`LineReader.close`: our own shutdown, or the server's stdin broke."""


class LineReader(anyio.abc.ObjectReceiveStream[SessionMessage | Exception]):
    """The session's read stream: the server's stdout split into lines and parsed in the task that asks for the next
    message (the SDK's dispatcher), one read of stdout at a time and only when asked, so nothing is read ahead.

    Blank lines are skipped; an unfinished last line is dropped with a warning. A line longer than
    :data:`_RELEASE_AFTER` is followed by :func:`_release`. Answers are checked against ``limits`` (see
    :func:`parse_line`). Once stdout ends, a line goes over the cap (after the lines before it were delivered), a read
    fails or :meth:`close` is called, :attr:`on_end` hears why and ``receive`` raises :class:`anyio.EndOfStream`.
    """

    def __init__(
        self, stdout: anyio.abc.ByteReceiveStream, splitter: LineSplitter, limits: AnswerLimits | None = None
    ) -> None:
        self.take: Callable[[object], bool] | None = None
        """Given each parsed message before the SDK validates it; ``True`` when it took it (a
        :class:`~host_bridge.hub.passage.Passage`'s answers), which the session then never sees."""
        self.on_end: Callable[[LineEnd], Awaitable[None]] | None = None
        """Told once why the stream ended, before ``receive`` raises :class:`anyio.EndOfStream`."""
        self.ended_by_server = False
        """Stdout reached end-of-file or went over the cap (so it needs no drain, or has one already)."""
        self._stdout = stdout
        self._splitter = splitter
        self._limits = limits
        self._lines: deque[bytes] = deque()
        self._release_next = False
        self._delivered = False
        self._end: LineEnd | None = None
        self._reading: anyio.CancelScope | None = None
        self._idle: anyio.Event | None = None

    async def receive(self) -> SessionMessage | Exception:
        """The next message (or its parse error); :class:`anyio.EndOfStream` once the stream ended."""
        while True:
            if self._release_next:
                self._release_next = False
                return _release()
            while self._lines:
                # Popped, so neither a finished line nor its message outlives its delivery.
                line = self._lines.popleft()
                if not line or line.isspace():
                    continue
                message = parse_or_take(line, self._limits, self.take)
                if message is None:
                    continue
                self._release_next = len(line) > _RELEASE_AFTER
                self._delivered = True
                return message
            if self._end is not None:
                raise anyio.EndOfStream
            if self._splitter.overflowed:
                await self._ended(LineEnd.TOO_LONG)
                continue
            if self._delivered:
                # The session has just handed the last message on (an answer wakes the task that waits for it):
                # that task goes first, this one reads again after it.
                self._delivered = False
                await anyio.lowlevel.checkpoint()
                continue
            chunk = await self._read()
            if chunk is None:
                continue
            if not chunk:
                if self._splitter.pending:
                    logger.warning(
                        "the server's stdout ended inside a line; ignored its last %d bytes", self._splitter.pending
                    )
                await self._ended(LineEnd.END)
                continue
            self._lines.extend(self._splitter.feed(chunk))

    async def _read(self) -> bytes | None:
        """One read of stdout: its bytes, ``b""`` at end-of-file, ``None`` when the stream ended meanwhile."""
        try:
            with anyio.CancelScope() as self._reading:
                try:
                    return await self._stdout.receive(_RECEIVE_BYTES)
                except anyio.EndOfStream:
                    return b""
                except anyio.ClosedResourceError:
                    await self._ended(LineEnd.CLOSED)  # our own shutdown closed stdout under the read
                except (anyio.BrokenResourceError, ConnectionError):
                    await self._ended(LineEnd.BROKEN)
            if self._end is None:  # cancelled by close()
                await self._ended(LineEnd.CLOSED)
            return None
        finally:
            self._reading = None
            if self._idle is not None:
                self._idle.set()
                self._idle = None

    async def _ended(self, reason: LineEnd) -> None:
        if self._end is not None:
            return
        self._end = reason
        self.ended_by_server = reason in (LineEnd.END, LineEnd.TOO_LONG)
        self._lines.clear()
        if self.on_end is not None:
            await self.on_end(reason)

    def close(self) -> None:
        """End the stream: a read in progress stops, and the reader's task sees :class:`anyio.EndOfStream`."""
        if self._end is None and self._reading is not None:
            self._reading.cancel()
        elif self._end is None:
            self._end = LineEnd.CLOSED
            self._lines.clear()

    async def wait_idle(self) -> None:
        """Until no read of stdout is in progress (another reader may then take the stream)."""
        while self._reading is not None:
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()

    async def aclose(self) -> None:
        """Stop delivering; stdout itself is closed by the transport."""
        self.close()


class LineWriter(anyio.abc.ObjectSendStream[SessionMessage]):
    """The session's write stream: each message written to the server's stdin as a line by the task that sends it.

    The pipe's buffer takes each message whole and in order (``send`` waits only while the server is not reading),
    so no writer task stands in between. A failed write ends the connection: ``on_broken`` is called (the transport
    ends the read side, so no request waits for an answer for ever) and ``send`` raises
    :class:`anyio.BrokenResourceError`, as the SDK expects of a closed transport.
    """

    def __init__(
        self, stdin: anyio.abc.ByteSendStream, limits: AnswerLimits | None = None, *, on_broken: Callable[[], None]
    ) -> None:
        self._stdin = stdin
        self._pipe = _asyncio_writer(stdin)
        self._limits = limits
        self._on_broken = on_broken
        self._closed = False

    async def send(self, item: SessionMessage) -> None:
        """Write one message as a line."""
        if self._closed:
            raise anyio.ClosedResourceError
        if self._limits is not None:
            self._limits.sent(item.message)
        data = (item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode("utf-8", "replace")
        pipe = self._pipe
        if pipe is not None and not pipe.transport.is_closing() and pipe.transport.get_write_buffer_size() == 0:
            pipe.write(data)
            if not pipe.transport.is_closing():
                return
            self._broken()
        try:
            await self._stdin.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            self._broken()

    def write_request(self, request_id: str, method: str, line: bytes) -> bool:
        """Write a request's ``line`` at once, without waiting (what the pipe does not take yet is buffered by the
        transport); ``False`` when the stream is closed or broke. ``method`` tells the answer limits what is asked."""
        if self._limits is not None:
            self._limits.asked(request_id, method)
        return self._write_now(line)

    def write_notification(self, line: bytes) -> bool:
        """Write a notification's ``line`` at once, as :meth:`write_request` does."""
        return self._write_now(line)

    def _write_now(self, line: bytes) -> bool:
        pipe = self._pipe
        if self._closed or pipe is None or pipe.transport.is_closing():
            return False
        pipe.write(line)
        if pipe.transport.is_closing():
            self._closed = True
            self._on_broken()
            return False
        return True

    def _broken(self) -> NoReturn:
        # The server may still be alive: end the read side so no request waits for an answer forever.
        self._closed = True
        self._on_broken()
        raise anyio.BrokenResourceError from None

    def close(self) -> None:
        """Refuse further messages."""
        self._closed = True

    async def aclose(self) -> None:
        """Refuse further messages; stdin itself is closed by the transport."""
        self.close()


def _asyncio_writer(stdin: anyio.abc.ByteSendStream) -> asyncio.StreamWriter | None:
    """The asyncio writer under anyio's wrapper of a process's stdin (``None`` for any other stream).

    Writing to it directly while its buffer is empty costs no pass of the event loop; anyio's ``send`` makes two (a
    cancellation check before and a checkpoint after), on the path of every request a server is sent. The wrapper's
    attribute is not public in anyio; ``tests/unit/hub/test_stdio_transport.py`` pins it.
    """
    writer = getattr(stdin, "_stream", None)
    return writer if isinstance(writer, asyncio.StreamWriter) else None


def server_environment(env: Mapping[str, str] | None) -> dict[str, str]:
    """The environment a stdio server starts with: this process's, with ``env`` (the server's config) over it."""
    return {**os.environ, **(env or {})}


async def _say_why_stdout_ended(process: anyio.abc.Process, on_lost: Callable[[str], None]) -> None:
    """Report an exited process as exited, not as a closed connection, before the session hears of the end.

    Stdout reaches end-of-file a moment before the exit is seen; without this wait the reason a user reads would
    depend on which of the two the event loop noticed first.
    """
    with anyio.move_on_after(_EXIT_AFTER_EOF):
        while process.returncode is None:  # polled: the process's wait() also waits for pipes a child may hold
            await anyio.sleep(_EXIT_POLL_INTERVAL)
    on_lost("the server process exited" if process.returncode is not None else "the server closed its stdout")


def _release() -> SessionMessage:
    """A response to a request that was never made, which the SDK's dispatcher drops as it drops late answers.

    The dispatcher keeps the last message it received in its loop variable until the next one arrives; after a
    16 MiB answer that is 16 MiB held for as long as the server stays quiet, and on top of the next big answer.
    """
    return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=_RELEASE_ID, result={}))


async def _drain(stdout: anyio.abc.ByteReceiveStream) -> None:
    """Discard what is left on stdout until it closes, so a server flushing its output can still exit."""
    with (
        anyio.CancelScope(shield=True),
        contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError),
    ):
        while True:
            await stdout.receive(_RECEIVE_BYTES)


async def _start(
    command: str,
    args: list[str],
    env: dict[str, str],
    cwd: str | Path | None,
    stderr: int,
    preexec_fn: Callable[[], None] | None = None,
) -> anyio.abc.Process:
    if sys.platform == "win32":  # pragma: no cover
        from mcp.os.win32.utilities import create_windows_process, get_windows_executable_command

        command = get_windows_executable_command(command)
        return await create_windows_process(command, args, env, stderr, cwd)  # pyright: ignore
    # anyio.open_process takes no preexec_fn; its backend passes it on to subprocess. The child is forked here, on
    # the event loop's thread, which lives as long as the process: the parent-death signal follows the forking thread.
    backend = anyio.lowlevel.get_async_backend()  # pyright: ignore[reportPrivateImportUsage]
    process = await backend.open_process(
        [command, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        cwd=cwd,
        env=env,
        start_new_session=True,
        preexec_fn=preexec_fn or die_with_parent,
    )
    process_groups.register(process.pid)
    return process


async def _stop(process: anyio.abc.Process) -> None:
    """Close stdin, wait out the grace period, then end the whole process group (or job) and release the pipes."""
    assert process.stdin is not None and process.stdout is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    with anyio.move_on_after(_STDIN_CLOSE_GRACE):
        while process.returncode is None:
            await anyio.sleep(_EXIT_POLL_INTERVAL)
    if sys.platform == "win32":  # pragma: no cover
        from mcp.os.win32.utilities import close_process_job, terminate_windows_process_tree

        if process.returncode is None:
            await terminate_windows_process_tree(process)
        close_process_job(process)
    else:
        await _end_group(process)
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()
    # The asyncio subprocess transport would otherwise stay open (and warn when collected) while a survivor
    # holds a pipe; nothing public closes it without waiting for the pipes.
    close: Any = getattr(getattr(getattr(process, "_process", None), "_transport", None), "close", None)
    if callable(close):
        with contextlib.suppress(PermissionError):
            close()


async def _end_group(process: anyio.abc.Process) -> None:
    """SIGTERM what is left of the server's process group, SIGKILL it after a grace period, reap the leader, and
    forget the group: every member is dead or has been sent SIGKILL, so nothing is left to end at exit.

    The server leads its own group (``start_new_session``), so its pid is the group id even after it was reaped.
    """
    from mcp.os.posix.utilities import terminate_posix_process_tree

    await terminate_posix_process_tree(process, _GROUP_TERM_GRACE)
    with anyio.move_on_after(_REAP_WAIT):
        while process.returncode is None:
            await anyio.sleep(_EXIT_POLL_INTERVAL)
    # Not on cancellation: a group that may still have live members stays registered for the exit path.
    process_groups.unregister(process.pid)
