"""Each override of pygls' protocol (host_bridge.hosts.lsp.rpc), one test each, in process: the shell's protocol is fed
message bodies and its frames are read from a writer that keeps them."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any, cast

import anyio
import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from host_bridge.hosts.lsp.main import create_server
from host_bridge.hosts.lsp.rpc import HostBridgeProtocol, raw_json_converter
from host_bridge.hosts.lsp.server import HostBridgeServer
from host_bridge.hub.errors import INVALID_PARAMS


class FrameSink:
    """A writer that keeps every LSP frame written to it and decodes their bodies."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data.extend(data)

    def close(self) -> None:
        """pygls closes its writer on exit."""

    def messages(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        rest = bytes(self.data)
        while rest:
            header, _, rest = rest.partition(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in header.split(b"\r\n") if line.startswith(b"Content-"))
            found.append(json.loads(rest[:length]))
            rest = rest[length:]
        return found


@pytest.fixture
def shell() -> Iterator[tuple[HostBridgeServer, HostBridgeProtocol, FrameSink]]:
    server = create_server()
    sink = FrameSink()
    protocol = cast(HostBridgeProtocol, server.protocol)
    protocol.set_writer(sink)
    yield server, protocol, sink


def body(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


def test_receive_answers_what_pygls_would_drop_with_an_error(
    shell: tuple[HostBridgeServer, HostBridgeProtocol, FrameSink],
) -> None:
    _, protocol, sink = shell
    protocol.receive(b"{not json")
    protocol.receive(b"[1, 2]")
    protocol.receive(body({"jsonrpc": "1.0", "id": 7, "method": "hostBridge/status"}))
    protocol._shutdown = True  # pyright: ignore[reportPrivateUsage]
    protocol.receive(body({"jsonrpc": "2.0", "id": 8, "method": "hostBridge/status", "params": {}}))
    errors = [(m["id"], m["error"]["code"]) for m in sink.messages()]
    assert errors == [(None, -32700), (None, -32600), (7, -32600), (8, -32600)]
    assert "shutting down" in sink.messages()[-1]["error"]["message"]


def test_receive_refuses_a_second_initialize(shell: tuple[HostBridgeServer, HostBridgeProtocol, FrameSink]) -> None:
    _, protocol, sink = shell
    protocol._initialize_seen = True  # pyright: ignore[reportPrivateUsage]
    protocol.receive(body({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"capabilities": {}}}))
    [answer] = sink.messages()
    assert answer["id"] == 2 and "already sent" in answer["error"]["message"]


@pytest.mark.anyio
async def test_send_request_tells_the_editor_when_the_sidecar_stops_waiting(
    shell: tuple[HostBridgeServer, HostBridgeProtocol, FrameSink],
) -> None:
    _, protocol, sink = shell
    params = types.ShowMessageRequestParams(type=types.MessageType.Info, message="?")
    future = protocol.send_request(types.WINDOW_SHOW_MESSAGE_REQUEST, params, msg_id="q1")
    future.cancel()
    sent = sink.messages()
    assert [m.get("method") for m in sent] == ["window/showMessageRequest", "$/cancelRequest"]
    assert sent[1]["params"] == {"id": "q1"}
    assert "q1" not in protocol._request_futures  # pyright: ignore[reportPrivateUsage]


def test_a_late_answer_to_an_abandoned_request_is_dropped_quietly(
    shell: tuple[HostBridgeServer, HostBridgeProtocol, FrameSink], caplog: pytest.LogCaptureFixture
) -> None:
    _, protocol, sink = shell
    done: Future[Any] = Future()
    done.set_result(None)
    protocol._request_futures["late"] = done  # pyright: ignore[reportPrivateUsage]
    with caplog.at_level(logging.DEBUG):
        protocol.receive(body({"jsonrpc": "2.0", "id": "late", "result": {"title": "Allow"}}))
        protocol.receive(body({"jsonrpc": "2.0", "id": "never-asked", "result": None}))
    assert sink.messages() == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert "late" not in protocol._request_futures  # pyright: ignore[reportPrivateUsage]


def test_an_answer_is_sent_as_the_handler_made_it_without_cattrs(
    shell: tuple[HostBridgeServer, HostBridgeProtocol, FrameSink],
) -> None:
    _, protocol, _sink = shell
    from pygls.protocol import JsonRPCResponseMessage

    result = {"file:///a b": [1, {"not-an-identifier": True}]}
    message = JsonRPCResponseMessage(id=3, jsonrpc="2.0", result=result)
    assert protocol._serialize_message(message) == {"id": 3, "jsonrpc": "2.0", "result": result}  # pyright: ignore[reportPrivateUsage]


def test_an_answer_that_cannot_be_encoded_becomes_an_error_with_its_id(
    shell: tuple[HostBridgeServer, HostBridgeProtocol, FrameSink],
) -> None:
    _, protocol, sink = shell
    protocol._send_data({"jsonrpc": "2.0", "id": 4, "result": {"bad": object()}})  # pyright: ignore[reportPrivateUsage]
    [answer] = sink.messages()
    assert answer["id"] == 4 and answer["error"]["code"] == -32603
    assert "could not encode" in answer["error"]["message"]


@pytest.mark.anyio
async def test_an_error_raised_on_purpose_is_the_answer_not_a_failure(
    shell: tuple[HostBridgeServer, HostBridgeProtocol, FrameSink], caplog: pytest.LogCaptureFixture
) -> None:
    server, protocol, sink = shell

    @server.feature("test/refuse")
    async def refuse(params: Any) -> None:
        raise JsonRpcException("no such server 'x'", INVALID_PARAMS)

    with caplog.at_level(logging.DEBUG):
        protocol.receive(body({"jsonrpc": "2.0", "id": 5, "method": "test/refuse", "params": {}}))
        with anyio.fail_after(5):
            while not sink.messages():
                await anyio.sleep(0)
    [answer] = sink.messages()
    assert answer == {"jsonrpc": "2.0", "id": 5, "error": {"code": INVALID_PARAMS, "message": "no such server 'x'"}}
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]


def test_an_error_about_an_unidentifiable_message_carries_a_null_id(
    shell: tuple[HostBridgeServer, HostBridgeProtocol, FrameSink],
) -> None:
    _, protocol, sink = shell
    protocol._send_error(None, JsonRpcException("bad", -32600))  # pyright: ignore[reportPrivateUsage]
    raw = bytes(sink.data).partition(b"\r\n\r\n")[2]
    assert b'"id": null' in raw or b'"id":null' in raw


@pytest.mark.parametrize(("after_shutdown", "code"), [(True, 0), (False, 1)])
def test_exit_ends_the_main_loop_with_0_after_shutdown_else_1(
    shell: tuple[HostBridgeServer, HostBridgeProtocol, FrameSink], after_shutdown: bool, code: int
) -> None:
    server, protocol, _ = shell
    protocol._shutdown = after_shutdown  # pyright: ignore[reportPrivateUsage]
    protocol.receive(body({"jsonrpc": "2.0", "method": types.EXIT}))
    assert server.exit_code == code
    assert server._exit.is_set()  # pyright: ignore[reportPrivateUsage]


def test_custom_messages_keep_their_params_as_plain_json() -> None:
    converter = raw_json_converter()
    from pygls.protocol import JsonRPCNotification

    params = {"file:///x": {"a-b": 1}}
    message = converter.structure({"jsonrpc": "2.0", "method": "hostBridge/x", "params": params}, JsonRPCNotification)
    assert message.params == params
    absent = converter.structure({"jsonrpc": "2.0", "method": "hostBridge/x"}, JsonRPCNotification)
    assert absent.params is None
