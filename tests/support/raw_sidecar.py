"""``python -m host_bridge serve`` spoken to with hand-written LSP framing, for tests that send malformed bytes,
end the sidecar in unusual ways or check that every byte it writes to stdout is a well-formed frame."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import re
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

from support.sidecar import SIDECAR_COMMAND, WAIT, options

FRAME_HEADER = re.compile(rb"(Content-Length|Content-Type): ([^\r\n]+)\r\n")


class FramingViolation(AssertionError):
    """The sidecar wrote something to stdout that is not a well-formed LSP frame."""


class RawSidecar:
    """``python -m host_bridge serve`` spoken to with hand-written framing.

    Every byte on its stdout is parsed strictly as ``Content-Length`` frames of JSON-RPC objects; a violation
    fails :meth:`close`. Its stderr is collected.
    """

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.messages: list[dict[str, Any]] = []
        """Every message received, in order."""
        self.stderr = bytearray()
        """Everything the sidecar wrote to stderr so far."""
        self._ids = itertools.count(1)
        self._arrived = asyncio.Event()
        self._reading = asyncio.ensure_future(self._read_stdout())
        self._draining = asyncio.ensure_future(self._read_stderr())

    @classmethod
    async def start(cls, env: dict[str, str] | None = None) -> RawSidecar:
        process = await asyncio.create_subprocess_exec(
            *SIDECAR_COMMAND,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **(env or {})},
            limit=2**20,
        )
        return cls(process)

    @property
    def pid(self) -> int:
        return self.process.pid

    def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request and return the whole response message (result or error)."""
        msg_id = next(self._ids)
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await self.response(msg_id)

    async def response(self, msg_id: int | str | None) -> dict[str, Any]:
        """The first response with ``msg_id`` (``None``: an error about an unidentifiable message)."""
        found = await self.until(lambda: self.responses(msg_id))
        return found[0]

    def responses(self, msg_id: int | str | None) -> list[dict[str, Any]]:
        return [m for m in self.messages if "method" not in m and "id" in m and m["id"] == msg_id]

    async def until(self, condition: Callable[[], Any], timeout: float = WAIT) -> Any:
        """Wait until ``condition()`` is truthy (re-checked on every message) and return it."""
        async with asyncio.timeout(timeout):
            while not (value := condition()):
                if self._reading.done():
                    self._reading.result()
                    raise AssertionError("the sidecar closed its stdout")
                self._arrived.clear()
                await self._arrived.wait()
            return value

    async def handshake(self, tmp_path: Path, servers: dict[str, Any], process_id: int | None = None) -> None:
        """``initialize`` + ``initialized`` with no folders."""
        response = await self.request(
            "initialize",
            {"processId": process_id, "capabilities": {}, "initializationOptions": options(tmp_path, servers)},
        )
        assert response["result"]["serverInfo"]["name"] == "host-bridge"
        self.notify("initialized", {})

    def statuses(self) -> list[dict[str, Any]]:
        return [m["params"] for m in self.messages if m.get("method") == "hostBridge/serverChanged"]

    def logs(self) -> list[str]:
        return [m["params"]["message"] for m in self.messages if m.get("method") == "window/logMessage"]

    async def wait_exit(self, timeout: float) -> int:
        async with asyncio.timeout(timeout):
            return await self.process.wait()

    async def close(self) -> None:
        """End the sidecar (closing stdin, killing it if it lingers), then check all its stdout was frames."""
        if self.process.returncode is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                await self.wait_exit(10)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        await asyncio.wait_for(asyncio.gather(self._reading, self._draining), WAIT)

    async def _read_stdout(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        while (message := await self._read_frame(stdout)) is not None:
            self.messages.append(message)
            self._arrived.set()
        self._arrived.set()

    @staticmethod
    async def _read_frame(stdout: asyncio.StreamReader) -> dict[str, Any] | None:
        headers: dict[bytes, bytes] = {}
        while True:
            line = await stdout.readline()
            if not line:
                if headers:
                    raise FramingViolation(f"stdout ended inside a header: {headers!r}")
                return None
            if line == b"\r\n":
                break
            match = FRAME_HEADER.fullmatch(line)
            if match is None or match[1] in headers:
                raise FramingViolation(f"not an LSP header line on stdout: {line[:200]!r}")
            headers[match[1]] = match[2]
        length = headers.get(b"Content-Length", b"")
        if not length.isdigit():
            raise FramingViolation(f"bad or missing Content-Length: {headers!r}")
        try:
            body = await stdout.readexactly(int(length))
        except asyncio.IncompleteReadError as error:
            raise FramingViolation(f"stdout ended inside a body of {length!r} bytes") from error
        try:
            message = json.loads(body)
        except ValueError as error:
            raise FramingViolation(f"a frame body is not JSON: {body[:200]!r}") from error
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":  # pyright: ignore[reportUnknownMemberType]
            raise FramingViolation(f"a frame body is not a JSON-RPC message: {body[:200]!r}")
        return message  # pyright: ignore[reportUnknownVariableType]

    async def _read_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        while chunk := await stderr.read(65536):
            self.stderr += chunk


@contextlib.asynccontextmanager
async def raw_sidecar(env: dict[str, str] | None = None) -> AsyncGenerator[RawSidecar]:
    """A :class:`RawSidecar` for the block; closed (and its stdout checked) afterwards."""
    sidecar = await RawSidecar.start(env)
    try:
        yield sidecar
    finally:
        await sidecar.close()
