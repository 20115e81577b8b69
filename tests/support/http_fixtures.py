"""Fixture HTTP servers as processes on 127.0.0.1 (``tests/servers/http_server.py``, ``http_stub.py``,
``oauth_server.py``): started, waited for until they listen, always killed."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from support.paths import SERVERS
from support.records import POLL, recorded

START_TIMEOUT = 20.0
"""Seconds a fixture process has to start listening (importing the SDK takes a while on a busy machine)."""


def http_entry(port: int, path: str = "/mcp") -> dict[str, Any]:
    """Editor-style config entry for a streamable HTTP server on the loopback address."""
    return {"type": "http", "url": f"http://127.0.0.1:{port}{path}"}


@dataclass
class Fixture:
    """A fixture process and where it listens."""

    process: anyio.abc.Process
    port: int
    record: Path
    log: Path

    async def kill(self) -> None:
        """SIGKILL the process and reap it (idempotent)."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await self.process.wait()


@asynccontextmanager
async def fixture_process(script: str, record: Path, *args: str) -> AsyncIterator[Fixture]:
    """Run ``tests/servers/<script>.py --record RECORD ARGS…`` until it listens; always killed on exit."""
    log = record.with_suffix(".log")
    command = [sys.executable, str(SERVERS / f"{script}.py"), "--record", str(record), *args]
    with log.open("ab") as stderr:
        process = await anyio.open_process(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
    fixture = Fixture(process, 0, record, log)
    try:
        with anyio.fail_after(START_TIMEOUT):
            while not (ports := recorded(record, "listening")):
                if process.returncode is not None:
                    raise AssertionError(f"{script} exited with {process.returncode}:\n{log.read_text()}")
                await anyio.sleep(POLL)
        fixture.port = ports[-1]
        yield fixture
    finally:
        await fixture.kill()
