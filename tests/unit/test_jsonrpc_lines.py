"""JSON-RPC line framing: splitting, the per-line cap (C9), parsing into the SDK's messages (C10, C11)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from host_bridge.jsonrpc_lines import LineSplitter, parse_line


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


def test_a_line_split_across_reads_is_joined() -> None:
    splitter = LineSplitter(100)
    assert splitter.feed(b'{"a"') == []
    assert splitter.feed(b": 1") == []
    assert splitter.pending == 7
    assert splitter.feed(b"}\n") == [b'{"a": 1}']
    assert splitter.pending == 0


def test_several_lines_in_one_read_come_out_in_order_and_the_rest_waits() -> None:
    splitter = LineSplitter(100)
    assert splitter.feed(b"one\ntwo\nthree\nfou") == [b"one", b"two", b"three"]
    assert splitter.feed(b"r\n\n") == [b"four", b""]


def test_crlf_keeps_the_carriage_return_which_json_reads_as_whitespace() -> None:
    (line,) = LineSplitter(100).feed(notification("crlf") + b"\r\n")
    assert line.endswith(b"\r")
    assert tags([parse_line(line)]) == ["crlf"]


@pytest.mark.requirement("C9")
def test_a_line_exactly_at_the_cap_is_accepted() -> None:
    splitter = LineSplitter(10)
    assert splitter.feed(b"0123456789\n") == [b"0123456789"]
    assert splitter.feed(b"01234") == []
    assert splitter.feed(b"56789") == []
    assert splitter.feed(b"\n") == [b"0123456789"]


@pytest.mark.parametrize("chunks", [[b"0123456789A\n"], [b"01234", b"56789A"], [b"0123456789", b"A\n"]])
@pytest.mark.requirement("C9")
def test_one_byte_over_the_cap_is_refused_whether_or_not_its_newline_arrived(chunks: list[bytes]) -> None:
    splitter = LineSplitter(10)
    lines = [line for chunk in chunks for line in splitter.feed(chunk)]
    assert lines == [] and splitter.overflowed
    assert splitter.pending == 0


@pytest.mark.requirement("C9")
def test_lines_before_an_over_long_one_in_the_same_read_are_not_lost_to_the_caller() -> None:
    splitter = LineSplitter(10)
    assert splitter.feed(b"ok\n" + b"x" * 11 + b"\nlater\n") == [b"ok"]
    assert splitter.overflowed


def test_a_valid_line_becomes_the_sdks_session_message() -> None:
    message = parse_line(b'{"jsonrpc": "2.0", "id": 7, "result": {"contents": []}}')
    assert isinstance(message, SessionMessage)
    assert isinstance(message.message, types.JSONRPCResponse)
    assert message.message.id == 7 and message.message.result == {"contents": []}


@pytest.mark.parametrize(
    "line",
    [b"this is not JSON", b'{"jsonrpc": "2.0"}', b'[{"jsonrpc": "2.0", "method": "x"}]', b'{"id": 1, "result": {}}'],
)
@pytest.mark.requirement("C11")
def test_a_line_that_is_not_a_json_rpc_message_is_returned_as_an_exception(line: bytes) -> None:
    assert isinstance(parse_line(line), ValueError)


@pytest.mark.requirement("C10")
def test_invalid_utf8_inside_a_string_is_replaced_as_the_sdk_reader_does() -> None:
    message = parse_line(b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "a\xffb"}}')
    assert tags([message]) == ["a\ufffdb"]


def test_a_lone_surrogate_escape_is_valid_json_and_reaches_the_session_as_a_lone_surrogate() -> None:
    for line in (
        b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "a\\ud800b"}}',
        '{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "é\\udc00"}}'.encode(),
    ):
        (message,) = [parse_line(line)]
        assert not isinstance(message, Exception), message
        assert isinstance(message.message, types.JSONRPCNotification) and message.message.params is not None
        assert message.message.params["data"] in ("a\ud800b", "é\udc00")


def test_a_line_with_an_escape_that_is_still_not_json_is_a_parse_error() -> None:
    assert isinstance(parse_line(b'{"data": "\\ud800", NaN}'), ValueError)
    assert isinstance(parse_line(b'{"jsonrpc": "2.0", "id": NaN, "result": {}, "x": "\\ud800"}'), ValueError)
