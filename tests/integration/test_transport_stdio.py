"""StdioTransport with a real process: one start reports its plan, its process, its stderr and its end to the
connection."""

from __future__ import annotations

import sys
import textwrap

import anyio
import pytest

from host_bridge.hub.config import load_servers
from host_bridge.hub.launch import Launch
from host_bridge.hub.settings import ConnectionSettings
from host_bridge.hub.transports.stdio import StdioTransport
from host_bridge.sandbox.refusals import Refusal

pytestmark = pytest.mark.anyio


class Heard:
    """A TransportEvents that keeps what it is told, and wakes waiters."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.lines: list[str] = []
        self.status: int | None = None
        self.launches: list[Launch] = []
        self.changed = anyio.Event()

    def _told(self, what: str) -> None:
        self.calls.append(what)
        self.changed.set()
        self.changed = anyio.Event()

    def started(self) -> None:
        self._told("started")

    def exited(self, status: int | None) -> None:
        self.status = status
        self._told("exited")

    def log_line(self, line: str) -> None:
        self.lines.append(line)
        self._told("log_line")

    def lost(self, reason: str) -> None:
        self._told("lost")

    def launched(self, launch: Launch) -> None:
        self.launches.append(launch)
        self._told("launched")

    def sandbox_refused(self, refusal: Refusal) -> None:
        self._told("sandbox_refused")


async def test_a_start_is_planned_then_reports_its_process_its_stderr_lines_and_its_exit_status() -> None:
    body = textwrap.dedent(
        """
        import sys
        sys.stderr.write("first line\\nsecond line\\n")
        sys.stderr.flush()
        sys.stdin.read()
        """
    )
    loaded = load_servers({"talker": {"command": sys.executable, "args": ["-c", body], "sandbox": "off"}}, [])
    transport = StdioTransport(loaded.servers[0], ConnectionSettings())
    heard = Heard()
    with anyio.fail_after(30):
        async with transport.open([], heard):
            while heard.lines != ["first line", "second line"]:
                await heard.changed.wait()
            assert heard.calls[:2] == ["launched", "started"]
            assert transport.launch is heard.launches[0]
            assert heard.launches[0].folders == ()
        assert heard.status == 0 and "exited" in heard.calls
