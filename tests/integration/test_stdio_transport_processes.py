"""The stdio transport with real child processes: framing, the line cap (C9), stderr and the process group."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import anyio
import anyio.to_thread
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from host_bridge.hub.stdio_transport import stdio_transport

pytestmark = pytest.mark.anyio

HELLO = '{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hello"}}'


def child(body: str) -> list[str]:
    return ["-c", textwrap.dedent(body)]


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
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


async def test_a_command_that_cannot_start_raises_and_closes_the_stderr_write_end() -> None:
    read_fd, write_fd = os.pipe()
    with pytest.raises(OSError):
        async with stdio_transport("/nonexistent/mcp-server", stderr=write_fd, server="missing", on_lost=print):
            pass
    assert os.read(read_fd, 10) == b""
    os.close(read_fd)
