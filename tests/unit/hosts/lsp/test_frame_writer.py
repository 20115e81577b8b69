"""Frames written in pieces carry exactly the bytes ``json.dumps`` would have produced, long strings included."""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import pytest

from host_bridge.hosts.lsp import frame_writer
from host_bridge.hosts.lsp.frame_writer import frame_pieces

CONTENT_TYPE = "application/vscode-jsonrpc; charset=utf-8"


class Message:
    """Stands in for a pygls message object that only ``default`` can turn into JSON."""

    def __init__(self, result: Any) -> None:
        self.result = result


def default(value: Any) -> Any:
    if isinstance(value, Message):
        return {"jsonrpc": "2.0", "id": 1, "result": value.result}
    raise TypeError(f"cannot encode {type(value).__name__}")


def framed(message: Any) -> bytes:
    return b"".join(frame_pieces(message, default, CONTENT_TYPE))


def expected(message: Any) -> bytes:
    body = json.dumps(message, default=default).encode()
    return f"Content-Length: {len(body)}\r\nContent-Type: {CONTENT_TYPE}\r\n\r\n".encode() + body


@pytest.fixture(autouse=True)
def small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frame_writer, "LONG_STRING", 16)
    monkeypatch.setattr(frame_writer, "PIECE_CHARS", 7)


BLOB = base64.b64encode(os.urandom(100)).decode()


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "result": {"short": "text", "n": [1, 2.5, None, True]}},
        {"jsonrpc": "2.0", "id": 2, "result": {"contents": [{"uri": "t://b", "blob": BLOB}]}},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {"contents": [{"text": 'quotes " and \\ backslashes, tabs\t and\n' * 3}]},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "result": {"contents": [{"text": "héllo wörld 日本語 🙂 lone \ud800 surrogate" * 5}]},
        },
        {"jsonrpc": "2.0", "id": 5, "result": {"contents": [BLOB, "short", (BLOB, {"deep": BLOB})], "again": BLOB}},
        {"jsonrpc": "2.0", "id": 6, "result": {"contents": [{"mimicry": '"\\u0000abc:0\\u0000"' * 4}]}},
        {"jsonrpc": "2.0", "id": 7, "result": {"items": [{"uri": BLOB, "name": BLOB}]}},
        Message({"contents": [{"uri": "t://b", "blob": BLOB, "mimeType": "application/octet-stream"}]}),
        Message({"nothing": "long"}),
    ],
    ids=[
        "no-long",
        "blob",
        "escapes",
        "non-ascii",
        "nested",
        "token-lookalike",
        "long-but-not-read",
        "message-object",
        "message-short",
    ],
)
def test_the_frame_is_byte_for_byte_what_json_dumps_writes(message: Any) -> None:
    assert framed(message) == expected(message)


def test_the_callers_data_is_left_untouched() -> None:
    inner = {"blob": BLOB}
    message = {"jsonrpc": "2.0", "id": 1, "result": {"contents": [inner]}}
    framed(message)
    assert message == {"jsonrpc": "2.0", "id": 1, "result": {"contents": [{"blob": BLOB}]}}
    assert message["result"]["contents"][0] is inner


def test_a_long_string_of_a_read_result_is_written_in_pieces_no_longer_than_a_slice() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "result": {"contents": [{"blob": BLOB}]}}
    pieces = list(frame_pieces(message, default, CONTENT_TYPE))
    assert len(pieces) > 4
    assert max(len(piece) for piece in pieces[1:]) <= max(
        frame_writer.PIECE_CHARS, len('{"jsonrpc": "2.0", "id": 1, "result": {"contents": [{"blob": ')
    )


def test_a_message_that_is_not_a_read_result_is_encoded_in_one_piece_without_a_walk() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "result": {"items": [{"uri": BLOB}]}}
    assert list(frame_pieces(message, default, CONTENT_TYPE))[1:] == [json.dumps(message).encode()]


class Capture:
    """Stands in for the sidecar's stdout writer."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data


def test_an_answer_that_cannot_be_encoded_is_replaced_by_an_error_so_the_editor_is_not_left_waiting() -> None:
    from host_bridge.hosts.lsp.main import create_server

    protocol = create_server().protocol
    out = Capture()
    protocol.set_writer(out)  # pyright: ignore[reportArgumentType]

    protocol._send_data({"jsonrpc": "2.0", "id": 7, "result": {"odd": object()}})  # pyright: ignore[reportPrivateUsage]

    header, _, body = bytes(out.data).partition(b"\r\n\r\n")
    answer = json.loads(body)
    assert header.startswith(b"Content-Length: %d" % len(body))
    assert answer["id"] == 7 and answer["error"]["code"] == -32603
    assert "could not encode its answer as JSON" in answer["error"]["message"]
