"""The stdio transport with real child processes: framing, the line cap (docs/security.md C9), stderr and the process
group."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import anyio.to_thread
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage
from support.processes import alive

from host_bridge.hub import process_groups
from host_bridge.hub.stdio_transport import stdio_transport

pytestmark = pytest.mark.anyio

HELLO = '{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hello"}}'


def child(body: str) -> list[str]:
    return ["-c", textwrap.dedent(body)]


@pytest.mark.requirement("C9")
async def test_messages_arrive_and_an_over_long_line_ends_the_connection_with_the_server_and_the_cap() -> None:
    script = child(
        f"""
        import sys
        out = sys.stdout.buffer
        out.write({HELLO!r}.encode() + b"\\n")
        out.flush()
        while True:
            out.write(b"x" * 65536)
            out.flush()
        """
    )
    lost: list[str] = []
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    with anyio.fail_after(20):
        async with stdio_transport(
            sys.executable, script, stderr=write_fd, server="spew", on_lost=lost.append, max_line_bytes=2**20
        ) as (read_stream, _):
            first = await read_stream.receive()
            assert isinstance(first, SessionMessage) and isinstance(first.message, types.JSONRPCNotification)
            with pytest.raises(anyio.EndOfStream):
                await read_stream.receive()
    assert lost == [
        "the MCP server 'spew' wrote a line longer than 1048576 bytes to stdout (the cap is 1048576 bytes); "
        "closed the connection"
    ]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("import sys; sys.exit(3)", "the server process exited"),
        ("import os, time; os.close(1); time.sleep(3600)", "the server closed its stdout"),
    ],
    ids=["exits", "closes-stdout-and-stays"],
)
async def test_the_end_of_stdout_is_reported_as_an_exit_only_when_the_process_exited_before_the_stream_ends(
    body: str, reason: str
) -> None:
    lost: list[str] = []
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    with anyio.fail_after(20):
        async with stdio_transport(sys.executable, ["-c", body], stderr=write_fd, server="s", on_lost=lost.append) as (
            read_stream,
            _,
        ):
            with pytest.raises(anyio.EndOfStream):
                await read_stream.receive()
            assert lost == [reason]  # said before the session can see the stream end


@pytest.mark.requirement("C23")
async def test_stderr_reaches_end_of_file_once_the_server_and_its_children_are_gone(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    script = child(
        f"""
        import subprocess, sys
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        open({str(pid_file)!r}, "w").write(str(grandchild.pid))
        sys.stderr.write("started\\n")
        sys.stderr.flush()
        sys.stdin.read()
        """
    )
    read_fd, write_fd = os.pipe()
    with anyio.fail_after(20):
        async with stdio_transport(sys.executable, script, stderr=write_fd, server="parent", on_lost=print):
            with pytest.raises(OSError):
                os.fstat(write_fd)  # the parent's copy of the write end is closed once the child has it
            assert await anyio.to_thread.run_sync(os.read, read_fd, 100) == b"started\n"
        # The grandchild held stderr too; end-of-file proves the whole process group was ended.
        assert await anyio.to_thread.run_sync(os.read, read_fd, 100) == b""
    os.close(read_fd)
    assert not alive(int(pid_file.read_text())), "a zombie left for init to reap is not running"


async def test_a_command_that_cannot_start_raises_and_closes_the_stderr_write_end() -> None:
    read_fd, write_fd = os.pipe()
    with pytest.raises(OSError):
        async with stdio_transport("/nonexistent/mcp-server", stderr=write_fd, server="missing", on_lost=print):
            pass
    assert os.read(read_fd, 10) == b""
    os.close(read_fd)


@pytest.mark.requirement("C23", "H1")
async def test_a_running_server_group_is_registered_until_the_transport_has_ended_it() -> None:
    before = process_groups.live_groups()
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    with anyio.fail_after(20):
        async with stdio_transport(
            sys.executable, child("import sys; sys.stdin.read()"), stderr=write_fd, server="plain", on_lost=print
        ):
            (pgid,) = process_groups.live_groups() - before
            assert os.getpgid(pgid) == pgid, "the server leads its own process group"
            assert process_groups.reaper_pid() is not None, "the reaper is started with the first server"
        assert pgid not in process_groups.live_groups()


@pytest.mark.requirement("H1")
async def test_the_reaper_kills_the_groups_still_registered_when_its_pipe_closes_and_spares_forgotten_ones() -> None:
    def leader() -> subprocess.Popen[bytes]:
        return subprocess.Popen(["sleep", "60"], start_new_session=True)

    kept, forgotten = leader(), leader()
    reaper_script = Path(process_groups.__file__).with_name("_reaper.py")
    reaper = subprocess.Popen([sys.executable, "-I", "-S", str(reaper_script)], stdin=subprocess.PIPE)
    try:
        assert reaper.stdin is not None
        reaper.stdin.write(f"+{kept.pid}\n+{forgotten.pid}\nnot a line\n-{forgotten.pid}\n".encode())
        reaper.stdin.close()
        with anyio.fail_after(10):
            assert await anyio.to_thread.run_sync(kept.wait) == -signal.SIGKILL
            assert await anyio.to_thread.run_sync(reaper.wait) == 0
        assert forgotten.poll() is None
    finally:
        for process in (kept, forgotten, reaper):
            process.kill()
            process.wait()


@pytest.mark.requirement("H1")
async def test_a_host_that_exits_normally_sigkills_every_group_still_registered(tmp_path: Path) -> None:
    pid_file = tmp_path / "leader.pid"
    host = f"""
        import signal, subprocess
        from host_bridge.hub import process_groups
        leader = subprocess.Popen(["sleep", "60"], start_new_session=True, preexec_fn=lambda: signal.signal(
            signal.SIGTERM, signal.SIG_IGN))
        process_groups.register(leader.pid)
        open({str(pid_file)!r}, "w").write(str(leader.pid))
        """
    with anyio.fail_after(20):
        finished = await anyio.run_process([sys.executable, *child(host)], check=False)
    assert finished.returncode == 0, finished.stderr
    leader = int(pid_file.read_text())
    with anyio.fail_after(5):
        while alive(leader):
            await anyio.sleep(0.02)
