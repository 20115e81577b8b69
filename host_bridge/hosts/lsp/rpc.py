"""pygls' JSON-RPC protocol, overridden where the sidecar must behave otherwise: every override in one place.

- :func:`raw_json_converter`: custom messages keep their params and results as plain JSON (pygls' namedtuples lose
  keys that are not identifiers);
- :class:`HostBridgeProtocol`: a message pygls would drop silently is answered with an error
  (:meth:`~HostBridgeProtocol.receive`); an abandoned request to the editor is cancelled
  (:meth:`~HostBridgeProtocol.send_request`) and its late answer dropped (``_handle_response``); ``hostBridge/*``
  answers are not walked by cattrs (``_serialize_message``) and are written in pieces (``_send_data``); an answer that
  cannot be encoded becomes an error; a JSON-RPC error raised on purpose is no failure of the sidecar
  (``_send_handler_result``); an error about an unidentifiable message carries ``"id": null`` (``_send_error``);
  ``exit`` ends the main loop instead of calling ``sys.exit`` in a callback.

Each override has its own test in ``tests/unit/hosts/lsp/test_rpc.py``. Like the shell, this module imports pygls,
lsprotocol and the standard library only.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Generator
from concurrent.futures import Future
from typing import Any, Protocol, cast

import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCProtocol,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
)
from pygls.protocol.json_rpc import RPCMessage
from pygls.protocol.language_server import lsp_method

from host_bridge.hosts.lsp.frame_writer import frame_pieces
from host_bridge.hub.errors import INTERNAL_ERROR

logger = logging.getLogger(__name__)


class Exits(Protocol):
    """The server side of ``exit``: the shell ends its main loop with this code."""

    def request_exit(self, code: int) -> None:
        """End the main loop: stop the core, then exit with ``code``."""
        ...


def raw_json_converter() -> cattrs.Converter:
    """pygls' converter, except that custom messages keep their params and results as plain JSON.

    pygls turns them into namedtuples, which lose keys that are not identifiers; our handlers validate the
    plain JSON with the models of :mod:`host_bridge.hosts.lsp.protocol` instead.
    """
    converter = default_converter()
    for message in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        converter.register_structure_hook(message, _keep_json)
    return converter


def _keep_json(obj: dict[str, Any], cls: type[Any]) -> Any:
    if cls is not JsonRPCResponseMessage:
        # "params" may be omitted (JSON-RPC 2.0 §4); the handlers treat absent params as {}.
        return cls(**{"params": None, **obj})
    return cls(**obj)


class HostBridgeProtocol(LanguageServerProtocol):
    """pygls' protocol, except that ``exit`` ends the main loop (stopping every MCP server first)
    instead of calling ``sys.exit`` from inside a callback, and that a message pygls would drop silently
    (not JSON, not JSON-RPC, params of the wrong shape, a request after ``shutdown``, a second ``initialize``)
    is answered with an error."""

    _initialize_seen = False
    """An ``initialize`` request was received (a second one would start every server twice)."""

    def receive(self, body: bytes) -> None:
        """Handle one message body from the editor."""
        try:
            raw: object = json.loads(body)
        except ValueError:
            logger.warning(
                "the editor sent a message that is not JSON (%d bytes); answered with a parse error", len(body)
            )
            self._send_error(None, JsonRpcParseError("the message body is not valid UTF-8 JSON"))
            return
        if not isinstance(raw, dict):
            self._send_error(None, JsonRpcInvalidRequest("a message must be a JSON object (batches are not supported)"))
            return
        message = cast(dict[str, Any], raw)
        msg_id: object = message.get("id")
        answer_id = msg_id if isinstance(msg_id, int | str) and not isinstance(msg_id, bool) else None
        is_request = "id" in message and "method" in message
        if message.get("jsonrpc") != JsonRPCProtocol.VERSION:
            self._send_error(answer_id, JsonRpcInvalidRequest('a message must have "jsonrpc": "2.0"'))
            return
        if self._shutdown and is_request and message.get("method") != types.EXIT:
            self._send_error(answer_id, JsonRpcInvalidRequest("the server is shutting down"))
            return
        if message.get("method") == types.INITIALIZE and is_request:
            if self._initialize_seen:
                self._send_error(
                    answer_id,
                    JsonRpcInvalidRequest("initialize was already sent; start a new sidecar for a new session"),
                )
                return
            self._initialize_seen = True
        try:
            structured = self.structure_message(message)
        except JsonRpcException as error:
            if is_request:
                self._send_error(answer_id, error)
            else:
                logger.warning("ignoring a malformed %r message from the editor", message.get("method"))
            return
        self.handle_message(cast(RPCMessage, structured))

    def send_request(
        self,
        method: str,
        params: Any | None = None,
        callback: Callable[[Any], None] | None = None,
        msg_id: str | int | None = None,
    ) -> Future[Any]:
        """pygls' request to the editor, except that when the sidecar stops waiting for the answer (a timeout, a
        server restarted while its question was open, shutdown) the editor is told with ``$/cancelRequest``, so it
        can close the question instead of showing the user one nobody waits for."""
        sent_id = msg_id if msg_id is not None else str(uuid.uuid4())
        future = super().send_request(method, params, callback, sent_id)

        def abandoned(finished: Future[Any]) -> None:
            if finished.cancelled() and self._request_futures.get(sent_id) is finished:
                del self._request_futures[sent_id]
                if self.writer is not None and not self._shutdown:
                    self.notify(types.CANCEL_REQUEST, types.CancelParams(id=sent_id))

        future.add_done_callback(abandoned)
        return future

    def _handle_response(self, msg_id: Any, result: Any | None = None, error: Any | None = None) -> None:
        """pygls' handling of the editor's answer, except that an answer to a request the sidecar no longer waits
        for (it was cancelled, see :meth:`send_request`) is dropped with a debug line instead of an error."""
        future = self._request_futures.get(msg_id)
        if future is None or future.done():
            self._request_futures.pop(msg_id, None)
            logger.debug("the editor answered request %r after the sidecar stopped waiting for it; ignored", msg_id)
            return
        super()._handle_response(msg_id, result, error)

    def _serialize_message(self, data: Any) -> Any:
        """pygls' conversion of a message to JSON, except that the answer to a ``hostBridge/*`` request (a plain
        response, whose result the handler made JSON already) is not walked by cattrs: for a page of 10 000
        resources that walk took longer than encoding it (anything that is not JSON yet still reaches this
        method, as ``json.dumps``' ``default``)."""
        if type(data) is JsonRPCResponseMessage:
            return {"id": data.id, "jsonrpc": data.jsonrpc, "result": data.result}
        return super()._serialize_message(data)

    def _send_data(self, data: Any) -> None:
        """pygls' writer, except that the frame is written in pieces and long strings straight from the result
        (:mod:`host_bridge.hosts.lsp.frame_writer`), so a 16 MiB read result is not copied while it is sent."""
        if not data:
            return
        writer = self.writer
        if writer is None:
            logger.error("cannot send to the editor: no transport")
            return
        content_type = f"{self.CONTENT_TYPE}; charset={self.CHARSET}"
        try:
            pieces = frame_pieces(data, self._serialize_message, content_type)
            first = next(pieces)  # the whole body is encoded before the header is yielded
        except Exception as error:
            logger.exception("a message to the editor could not be encoded as JSON")
            self._answer_unencodable(data, error)
            return
        try:
            writer.write(first)  # a StdoutWriter (serve), which writes and flushes synchronously
            for piece in pieces:
                writer.write(piece)
        except BrokenPipeError:
            logger.info("the editor closed its end of the pipe; a message was not sent")
            raise
        except Exception as error:
            logger.exception("sending a message to the editor failed")
            self._server._report_server_error(error, JsonRpcInternalError)  # pyright: ignore[reportPrivateUsage]

    def _answer_unencodable(self, data: Any, error: Exception) -> None:
        """A response that cannot be encoded is replaced by an error, so the editor never waits for it in vain."""
        if isinstance(data, dict):
            message = cast(dict[str, object], data)
            msg_id, method = message.get("id"), message.get("method")
        else:
            msg_id, method = cast(object, getattr(data, "id", None)), cast(object, getattr(data, "method", None))
        if method is not None or not isinstance(msg_id, int | str) or isinstance(msg_id, bool):
            return
        self._send_error(
            msg_id,
            JsonRpcInternalError(
                f"the sidecar could not encode its answer as JSON ({type(error).__name__}: {error}); see its log"
            ),
        )

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        """pygls' answer to a request, except that a JSON-RPC error raised on purpose (not found, unknown
        server, bad params …) is the answer, not a failure of the sidecar: no traceback, and only an internal error
        (a decision that could not be saved …) reaches the editor's log."""
        error = None if future.cancelled() else future.exception()
        if not isinstance(error, JsonRpcException):
            super()._send_handler_result(future, msg_id=msg_id)
            return
        self._request_futures.pop(msg_id, None)
        if error.code == INTERNAL_ERROR:
            logger.error("a request failed: %s", error.message)
        else:
            logger.debug("request %s answered with error %d: %s", msg_id, error.code, error.message)
        self._send_response(msg_id, error=error.to_response_error())

    def _send_error(self, msg_id: int | str | None, error: JsonRpcException) -> None:
        # pygls leaves out an id of None, but an error about an unidentifiable message must carry "id": null.
        self._send_data(
            {"jsonrpc": JsonRPCProtocol.VERSION, "id": msg_id, "error": {"code": error.code, "message": error.message}}
        )

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        """The editor is done with us."""
        cast(Exits, self._server).request_exit(0 if self._shutdown else 1)
        yield from ()
