"""The stdio transport's streams: lines read from stdout on demand (C9 when one is too long), writes to stdin, the stop
budget. The framing itself is tested in tests/unit/test_jsonrpc_lines.py."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from host_bridge.hub import stdio_transport
from host_bridge.hub.stdio_transport import LineEnd, LineReader, LineWriter
from host_bridge.jsonrpc_lines import LineSplitter

pytestmark = pytest.mark.anyio


def notification(tag: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": tag}}).encode()


def tags(items: Sequence[SessionMessage | Exception]) -> list[str]:
    result: list[str] = []
    for item in items:
        if isinstance(item, Exception):
            result.append("error")
        else:
            assert isinstance(item.message, types.JSONRPCNotification) and item.message.params is not None
            result.append(item.message.params["data"])
    return result


class Chunks:
    """A byte stream that hands out the given chunks, then end-of-file; counts the reads."""

    def __init__(self, chunks: Sequence[bytes]) -> None:
        self._chunks = list(chunks)
        self.reads = 0

    async def receive(self, max_bytes: int = 65536) -> bytes:
        self.reads += 1
        if not self._chunks:
            raise anyio.EndOfStream
        return self._chunks.pop(0)


def reader(chunks: Sequence[bytes] | Chunks, max_bytes: int = 1024) -> tuple[LineReader, list[LineEnd]]:
    """A reader over ``chunks`` and the list its end reason is put in."""
    ends: list[LineEnd] = []

    async def on_end(reason: LineEnd) -> None:
        ends.append(reason)

    stdout = chunks if isinstance(chunks, Chunks) else Chunks(chunks)
    line_reader = LineReader(stdout, LineSplitter(max_bytes))  # type: ignore[arg-type]
    line_reader.on_end = on_end
    return line_reader, ends


async def delivered(chunks: Sequence[bytes], max_bytes: int = 1024) -> list[SessionMessage | Exception]:
    line_reader, _ = reader(chunks, max_bytes)
    with anyio.fail_after(5):
        return [item async for item in line_reader]


@pytest.mark.requirement("C11", "C12")
async def test_invalid_lines_reach_the_session_as_exceptions_between_the_messages() -> None:
    items = await delivered([notification("first") + b"\nnot json\n", notification("second") + b"\n"])
    assert tags(items) == ["first", "error", "second"]


async def test_blank_lines_are_skipped() -> None:
    assert tags(await delivered([b"\n  \r\n", notification("only") + b"\n\n"])) == ["only"]


async def test_an_unfinished_line_at_end_of_file_is_dropped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="host_bridge.hub.stdio_transport"):
        items = await delivered([notification("whole") + b"\n" + notification("cut")[:20]])
    assert tags(items) == ["whole"]
    assert "ended inside a line; ignored its last 20 bytes" in caplog.text


@pytest.mark.requirement("C9")
async def test_an_over_long_line_stops_delivery_after_the_lines_before_it_and_says_why() -> None:
    line_reader, ends = reader([notification("before") + b"\n" + b"x" * 600, b"x" * 600, notification("after") + b"\n"])
    with anyio.fail_after(5):
        assert tags([item async for item in line_reader]) == ["before"]
        with pytest.raises(anyio.EndOfStream):
            await line_reader.receive()
    assert ends == [LineEnd.TOO_LONG]


async def test_stdout_is_read_only_when_the_session_asks_for_a_message() -> None:
    stdout = Chunks([notification("one") + b"\n" + notification("two") + b"\n", notification("three") + b"\n"])
    line_reader, ends = reader(stdout)
    with anyio.fail_after(5):
        assert tags([await line_reader.receive(), await line_reader.receive()]) == ["one", "two"]
        assert stdout.reads == 1
        assert tags([await line_reader.receive()]) == ["three"]
        assert stdout.reads == 2 and ends == []
        with pytest.raises(anyio.EndOfStream):
            await line_reader.receive()
    assert ends == [LineEnd.END]


class Stalled:
    """A byte stream that never has data, and a send stream whose peer is gone."""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await anyio.sleep_forever()
        raise AssertionError

    async def send(self, item: bytes) -> None:
        raise anyio.BrokenResourceError


async def test_a_failed_write_to_stdin_ends_the_read_side_so_no_request_waits_for_ever() -> None:
    ends: list[LineEnd] = []

    async def on_end(reason: LineEnd) -> None:
        ends.append(reason)

    line_reader = LineReader(Stalled(), LineSplitter(1024))  # type: ignore[arg-type]
    line_reader.on_end = on_end
    writer = LineWriter(Stalled(), on_broken=line_reader.close)  # type: ignore[arg-type]
    request = SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=1, method="ping"))
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:

            async def read() -> None:
                with pytest.raises(anyio.EndOfStream):
                    await line_reader.receive()

            tasks.start_soon(read)
            await anyio.wait_all_tasks_blocked()
            with pytest.raises(anyio.BrokenResourceError):
                await writer.send(request)
        with pytest.raises(anyio.ClosedResourceError):
            await writer.send(request)
    assert ends == [LineEnd.CLOSED]


async def test_a_long_line_is_followed_by_an_answer_to_no_request_so_the_sdk_lets_go_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stdio_transport, "_RELEASE_AFTER", 100)
    items = await delivered([notification("x" * 100) + b"\n" + notification("short") + b"\n"])
    assert tags(items[:1]) == ["x" * 100] and tags(items[2:]) == ["short"]
    release = items[1]
    assert isinstance(release, SessionMessage) and isinstance(release.message, types.JSONRPCResponse)
    assert isinstance(release.message.id, str) and release.message.result == {}


@pytest.mark.requirement("E1", "H1")
def test_a_servers_whole_stop_sequence_fits_in_the_sidecars_stop_budget() -> None:
    from host_bridge.hosts.lsp.server import STOP_TIMEOUT

    assert stdio_transport.STOP_SECONDS < STOP_TIMEOUT


async def test_messages_to_a_real_process_arrive_whole_and_in_order_when_one_is_larger_than_the_pipe() -> None:
    # The writer writes at once while the pipe's buffer is empty and waits for it to drain otherwise: a message bigger
    # than the pipe leaves the rest buffered, and the next ones must queue behind it, not overtake it.
    big = "x" * (1 << 20)
    messages = [notification(tag).decode() for tag in ("first", big, "third", "fourth")]
    process = await anyio.open_process(["cat"])
    async with process:
        assert process.stdin is not None and process.stdout is not None
        assert stdio_transport._asyncio_writer(process.stdin) is not None  # pyright: ignore[reportPrivateUsage]
        writer = LineWriter(process.stdin, on_broken=lambda: None)
        reader = LineReader(process.stdout, LineSplitter(4 << 20))
        received: list[SessionMessage | Exception] = []
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tasks:

                async def read() -> None:
                    while len(received) < len(messages):
                        item = await reader.receive()
                        # After a long line the reader adds an answer to no request (the SDK's cue to let go of it).
                        if not (isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCResponse)):
                            received.append(item)

                tasks.start_soon(read)
                for text in messages:
                    await writer.send(SessionMessage(types.jsonrpc_message_adapter.validate_json(text)))
        await process.stdin.aclose()
    assert tags(received) == ["first", big, "third", "fourth"]
