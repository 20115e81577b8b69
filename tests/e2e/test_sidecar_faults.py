"""The sidecar under editor-side faults (security matrix E): cancelled requests, an editor that dies without closing
the pipe, malformed frames, stray output. Also work-done progress of listings.

The fault tests drive ``python -m host_bridge serve`` as a bare subprocess with hand-written LSP framing
(:class:`RawSidecar`), so that malformed bytes can be sent and every byte the sidecar writes is checked to be a
well-formed frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import re
import signal
import sys
import textwrap
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import WAIT, BridgeClient, options
from lsprotocol import types
from processes import alive, servers_of
from pygls.exceptions import JsonRpcException

REPO = Path(__file__).resolve().parents[2]
RESOURCES_SERVER = REPO / "tests" / "servers" / "resources_server.py"
REQUEST_CANCELLED = -32800
FRAME_HEADER = re.compile(rb"(Content-Length|Content-Type): ([^\r\n]+)\r\n")



def resources_server(*args: str) -> dict[str, Any]:
    return {"type": "stdio", "command": sys.executable, "args": [str(RESOURCES_SERVER), *args]}


def state_of(statuses: list[dict[str, Any]], server_id: str) -> str | None:
    matching = [s["state"] for s in statuses if s["id"] == server_id]
    return matching[-1] if matching else None


async def record_line(record: Path, matches: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The first line of a fixture's record file that ``matches``, polling the file (tests/servers/README.md)."""
    async with asyncio.timeout(WAIT):
        while True:
            if record.exists():
                for line in record.read_text().splitlines():
                    entry = json.loads(line)
                    if matches(entry):
                        return entry
            await asyncio.sleep(0.02)


# Cancellation and progress, through pytest-lsp.


@pytest.mark.asyncio
async def test_cancelling_a_read_cancels_the_mcp_request_and_applies_no_late_result(
    client: BridgeClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    record = tmp_path / "record.jsonl"
    servers = {"res": resources_server("--fault", "hang-read", "--record", str(record))}
    await client.start_session([], options(tmp_path, servers))
    await client.until(lambda: state_of(client.statuses, "res") == "running")

    reading = asyncio.ensure_future(
        client.protocol.send_request_async(
            "hostBridge/readResource", {"server": "res", "uri": "test://res/1"}, msg_id="read-1"
        )
    )
    parked = await record_line(record, lambda entry: "reading" in entry)
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="read-1"))

    with pytest.raises(JsonRpcException) as cancelled:
        await asyncio.wait_for(reading, WAIT)
    assert cancelled.value.code == REQUEST_CANCELLED
    entry = await record_line(record, lambda entry: "cancelled" in entry)
    assert entry["cancelled"] == parked["reading"]

    page = await client.request("hostBridge/listResources", {"server": "res"})
    assert [item["uri"] for item in page["items"]][:2] == ["test://res/0", "test://res/1"]
    touched = await client.request("hostBridge/readResource", {"server": "res", "uri": "test://control/touch/1"})
    assert touched["uri"] == "test://control/touch/1"
    assert not [r for r in caplog.records if "read-1" in r.getMessage() and "unknown" in r.getMessage()]


@pytest.mark.asyncio
async def test_list_changes_and_updates_of_subscribed_resources_reach_the_editor(
    client: BridgeClient, tmp_path: Path
) -> None:
    servers = {"res": resources_server("--list-changed", "--pin", "2025-11-25")}
    await client.start_session([], options(tmp_path, servers))
    await client.until(lambda: state_of(client.statuses, "res") == "running")
    assert await client.request("hostBridge/subscribe", {"server": "res", "uri": "test://res/1"}) is None

    await client.request("hostBridge/readResource", {"server": "res", "uri": "test://control/touch/1"})

    await client.until(lambda: {"server": "res", "uri": "test://res/1"} in client.updates)
    await client.until(lambda: {"server": "res"} in client.list_changes)
    await client.request("hostBridge/unsubscribe", {"server": "res", "uri": "test://res/1"})
    seen = len(client.updates)
    await client.request("hostBridge/readResource", {"server": "res", "uri": "test://control/touch/1"})
    await client.until(lambda: client.list_changes.count({"server": "res"}) >= 2)
    assert len(client.updates) == seen


@pytest.mark.asyncio
async def test_a_listing_reports_work_done_progress_under_the_editors_token(
    client: BridgeClient, tmp_path: Path
) -> None:
    servers = {"a": resources_server("--count", "30", "--page-size", "20"), "b": resources_server("--count", "5")}
    capabilities = types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True))
    await client.initialize_session(
        types.InitializeParams(capabilities=capabilities, initialization_options=options(tmp_path, servers))
    )
    await client.until(lambda: state_of(client.statuses, "a") == state_of(client.statuses, "b") == "running")
    client.progress_reports["listing-1"] = []

    page = await client.request("hostBridge/listResources", {"workDoneToken": "listing-1"})

    reports = client.progress_reports["listing-1"]
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].title == "Listing MCP resources"
    assert any(isinstance(r, types.WorkDoneProgressReport) and r.message == "asking 2 MCP servers" for r in reports)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
    assert reports[-1].message == "25 resources; more to come"
    assert len(page["items"]) == 25 and page["nextCursor"]

    client.progress_reports["listing-2"] = []
    last = await client.request(
        "hostBridge/listResources", {"cursor": page["nextCursor"], "workDoneToken": "listing-2"}
    )
    assert len(last["items"]) == 10 and "nextCursor" not in last
    assert [type(r) for r in client.progress_reports["listing-2"]] == [
        types.WorkDoneProgressBegin,
        types.WorkDoneProgressReport,
        types.WorkDoneProgressEnd,
    ]
    end = client.progress_reports["listing-2"][-1]
    assert isinstance(end, types.WorkDoneProgressEnd) and end.message == "10 resources"

    unsolicited = await client.request("hostBridge/listResources", {"server": "b"})
    assert len(unsolicited["items"]) == 5
    assert set(client.progress_reports) == {"listing-1", "listing-2"}


# Editor-side faults, over raw stdio.


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
            sys.executable,
            "-m",
            "host_bridge",
            "serve",
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
        found = await self.until(lambda: self._responses(msg_id))
        return found[0]

    def _responses(self, msg_id: int | str | None) -> list[dict[str, Any]]:
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
    sidecar = await RawSidecar.start(env)
    try:
        yield sidecar
    finally:
        await sidecar.close()


@pytest.mark.asyncio
async def test_e2_the_sidecar_exits_when_the_editor_process_dies_without_closing_the_pipe(tmp_path: Path) -> None:
    editor = await asyncio.create_subprocess_exec("sleep", "60")
    async with raw_sidecar() as sidecar:
        await sidecar.handshake(tmp_path, {"res": resources_server()}, process_id=editor.pid)
        await sidecar.until(lambda: state_of(sidecar.statuses(), "res") == "running")
        mcp_children = servers_of(sidecar.pid)
        assert mcp_children, "the fixture server runs as a child of the sidecar"

        editor.send_signal(signal.SIGKILL)
        await editor.wait()
        returncode = await sidecar.wait_exit(5)

        assert returncode == 0
        assert not [pid for pid in mcp_children if alive(pid)]
        assert any("the editor (process" in line for line in sidecar.logs())


@pytest.mark.asyncio
async def test_e3_malformed_frames_are_answered_or_skipped_and_the_sidecar_keeps_answering(tmp_path: Path) -> None:
    async with raw_sidecar() as sidecar:
        await sidecar.handshake(tmp_path, {})

        sidecar.write(b"Content-Length: 9\r\n\r\nnot json!")
        parse_error = await sidecar.response(None)
        assert parse_error["error"]["code"] == -32700
        assert "result" in await sidecar.request("hostBridge/status", {})

        sidecar.send({"jsonrpc": "1.0", "id": 41, "method": "hostBridge/status"})
        assert (await sidecar.response(41))["error"]["code"] == -32600
        sidecar.write(b"Content-Length: 9\r\n\r\n[1, 2, 3]")
        await sidecar.until(lambda: len(sidecar._responses(None)) == 2)  # pyright: ignore[reportPrivateUsage]
        assert (await sidecar.request("hostBridge/status", [1]))["error"]["code"] == -32602
        mistyped = await sidecar.request("workspace/executeCommand", {"command": 5})
        assert mistyped["error"]["code"] in (-32602, -32603), "pygls alone would drop it and leave the editor waiting"

        garbage = [
            b'Content-Length: abc\r\n\r\n{"jsonrpc": "2.0", "id": 97, "method": "shutdown"}',
            b'Content-Length: 5\r\nContent-Length: 6\r\n\r\n{"jsonrpc": "2.0", "id": 98, "method": "shutdown"}',
            b"\x00\xff\xfe garbage without any header\r\n\r\n",
            b"X" * 20_000,
            b"Content-Length: -4\r\n\r\n",
        ]
        for chunk in garbage:
            sidecar.write(chunk)
            answer = await sidecar.request("hostBridge/status", {})
            assert "result" in answer, (chunk[:40], answer)
        assert not sidecar._responses(97) and not sidecar._responses(98)  # pyright: ignore[reportPrivateUsage]
        assert b"skipped" in sidecar.stderr

        shutdown = await sidecar.request("shutdown")
        assert "result" in shutdown
        assert (await sidecar.request("hostBridge/status", {}))["error"]["code"] == -32600
        sidecar.notify("exit", None)
        assert await sidecar.wait_exit(10) == 0


@pytest.mark.asyncio
async def test_e3_a_huge_content_length_ends_the_connection_with_a_logged_error_without_allocating(
    tmp_path: Path,
) -> None:
    """An announced 1 TB body is refused before any of it is buffered: the stream cannot be trusted to be in step
    after it, so the sidecar logs an error, stops its MCP servers and exits 1 (it does not answer later requests)."""
    async with raw_sidecar() as sidecar:
        await sidecar.handshake(tmp_path, {"res": resources_server()})
        await sidecar.until(lambda: state_of(sidecar.statuses(), "res") == "running")
        mcp_children = servers_of(sidecar.pid)

        sidecar.write(b"Content-Length: %d\r\n\r\n{" % 10**12)
        sidecar.send({"jsonrpc": "2.0", "id": 77, "method": "hostBridge/status"})
        returncode = await sidecar.wait_exit(10)

        assert returncode == 1
        assert any("1000000000000 bytes" in line for line in sidecar.logs())
        assert b"1000000000000 bytes" in sidecar.stderr
        assert not sidecar._responses(77)  # pyright: ignore[reportPrivateUsage]
        assert not [pid for pid in mcp_children if alive(pid)]


NOISY_SERVER = """
import os, runpy, sys, threading, time
noise = b"Content-Length: 2\\r\\n\\r\\n{}" + b"\\xff\\xfe\\x1b[31m binary noise\\n" + b"y" * 100_000 + b"\\n"
os.write(2, noise)
def chatter():
    while True:
        os.write(2, b"Content-Length: 9\\r\\n\\r\\nnot json!\\n")
        time.sleep(0.01)
threading.Thread(target=chatter, daemon=True).start()
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(sys.argv[0]))
runpy.run_path(sys.argv[0], run_name="__main__")
"""

STRAY_OUTPUT = """
import os, sys, threading, time
def stray():
    # Wait until the sidecar owns stdout (host_bridge.hosts.lsp.server.run_stdio), then scribble on it.
    while sys.stdout is not sys.stderr:
        time.sleep(0.005)
    for _ in range(20):
        print("stray print from inside the sidecar")
        os.write(1, b"Content-Length: 3\\r\\n\\r\\nraw write to fd 1\\n")
        time.sleep(0.01)
threading.Thread(target=stray, daemon=True).start()
"""


@pytest.mark.asyncio
async def test_e4_stray_output_never_reaches_the_editor_stream(tmp_path: Path) -> None:
    noisy = tmp_path / "noisy.py"
    noisy.write_text(NOISY_SERVER)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(STRAY_OUTPUT))
    pythonpath = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    servers = {"noisy": {"type": "stdio", "command": sys.executable, "args": [str(noisy), str(RESOURCES_SERVER)]}}

    async with raw_sidecar(env={"PYTHONPATH": pythonpath}) as sidecar:
        await sidecar.handshake(tmp_path, servers)
        await sidecar.until(lambda: state_of(sidecar.statuses(), "noisy") == "running")
        await sidecar.until(lambda: len([line for line in sidecar.logs() if "not json!" in line]) >= 10)
        page = await sidecar.request("hostBridge/listResources", {"server": "noisy"})
        assert len(page["result"]["items"]) == 10
        await sidecar.until(lambda: sidecar.stderr.count(b"stray print from inside the sidecar") == 20)
        assert sidecar.stderr.count(b"raw write to fd 1") == 20
    # close() has parsed every byte of stdout as frames: the noise and the stray writes went to stderr.
    assert any(line.startswith("[noisy] ") and "binary noise" in line for line in sidecar.logs())
    assert logging.getLogger("host_bridge").level in (logging.NOTSET, logging.WARNING, logging.DEBUG, logging.INFO)
