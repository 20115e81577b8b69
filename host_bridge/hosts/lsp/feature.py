"""The sidecar's features as units, and the one way every ``hostBridge/*`` request is answered.

A :class:`Feature` holds the state and the handlers of one concern (consent, the workspace, resources, status …).
Features are made once the core is open, so they import what they use at module level: they are loaded after
``initialize`` was answered (:mod:`host_bridge.hosts.lsp.deferred`). The composition root
(:mod:`host_bridge.hosts.lsp.features`) makes them in order and passes each one what it needs — the server, the core,
the features it talks to — then registers it with the server, which keeps one feature per type
(:meth:`~host_bridge.hosts.lsp.server.HostBridgeServer.add_feature`,
:meth:`~host_bridge.hosts.lsp.server.HostBridgeServer.get_feature`) and calls its lifecycle hooks.

A method marked with :func:`request` handles one editor → sidecar request of the message table
(:mod:`host_bridge.hosts.lsp.messages`); the type checker holds its params and result to the table's models. Every
request is answered by :func:`answer`, in the same steps: read the params (absent params are ``{}``), validate them
with the table's params model, wait for the core as the table says (:class:`~host_bridge.hosts.lsp.messages.
AnswerEarly`), call the handler, and send its result as JSON (``to_wire()``, or a plain value); a failure on the way
becomes a JSON-RPC error through one table (:data:`ERRORS`).

This module imports neither pydantic nor the core: it is part of what answers ``initialize``.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from host_bridge.hosts.lsp import messages
from host_bridge.hosts.lsp.progress import WorkDone
from host_bridge.hub.errors import INTERNAL_ERROR, INVALID_PARAMS

if TYPE_CHECKING:
    from pydantic import BaseModel

    from host_bridge.hosts.lsp.server import HostBridgeServer
    from host_bridge.hub.models import ServerStatus
    from host_bridge.sandbox.refusals import Refusal

P = TypeVar("P", bound="BaseModel")
R = TypeVar("R")
F = TypeVar("F", bound="Feature")

_MARK = "__host_bridge_request__"
"""Attribute that :func:`request` sets on a handler: the message it answers."""


class Feature:
    """One unit of the sidecar; subclasses mark their request handlers with :func:`request`.

    The hooks are called by the server, for every feature in the order they were added, after the editor's own
    message was handled; the defaults do nothing.
    """

    async def initialized(self) -> None:
        """Every feature exists and the core is open: start this feature's work (the workspace is applied once every
        hook returned)."""

    async def shutdown(self) -> None:
        """The editor asked to shut down; the core is stopped once every hook returned."""

    def folders_changed(self) -> None:
        """The editor's workspace folders changed (:attr:`HostBridgeServer.folders`)."""

    def settings_changed(self, settings: object) -> None:
        """``workspace/didChangeConfiguration`` arrived with ``settings``, as the editor sent them."""

    def server_changed(self, status: ServerStatus) -> None:
        """A server's status changed (the editor was told already)."""

    def sandbox_refused(self, server_id: str, refusal: Refusal) -> None:
        """The sandbox refused a server a path outside its folders."""


def request(
    message: messages.Request[P, R],
) -> Callable[[Callable[[F, P], Awaitable[R]]], Callable[[F, P], Awaitable[R]]]:
    """Mark a feature method as the handler of ``message``: it takes the validated params model and returns the
    result model (see :func:`answer` for everything around it)."""

    def mark(handler: Callable[[F, P], Awaitable[R]]) -> Callable[[F, P], Awaitable[R]]:
        setattr(handler, _MARK, message)
        return handler

    return mark


def handlers(feature: Feature) -> Iterator[tuple[messages.Request[Any, Any], Callable[[Any], Awaitable[Any]]]]:
    """The requests ``feature`` handles, with its bound handler methods."""
    for cls in type(feature).__mro__:
        for name, value in vars(cls).items():
            message = getattr(value, _MARK, None)
            if isinstance(message, messages.Request):
                yield cast(messages.Request[Any, Any], message), getattr(feature, name)


async def answer(server: HostBridgeServer, message: messages.Request[Any, Any], params: object) -> object:
    """The result of request ``message`` with raw ``params``, as JSON; raises the JSON-RPC error to answer with.

    Params that are not an object are refused first. A message that answers early
    (:class:`~host_bridge.hosts.lsp.messages.AnswerEarly`) is answered with :attr:`AnswerEarly.before_core` at once
    while the core is still loading. Otherwise params are validated before anything waits, so a malformed request is
    refused at once. A message with a ``progress`` title reports work-done
    progress from here on (when the editor passed a token; the handler reports through
    :func:`host_bridge.hosts.lsp.progress.current`). Then the request waits for the core: until the workspace was
    applied (at most ``READY_TIMEOUT``), or, for a message that answers early, at most :attr:`AnswerEarly.within`
    seconds, after which its handler answers with what is known.
    """
    try:
        given = params_dict(params)
        if not server.core_started:
            await server.ready_core()  # the error saying initialize/initialized come first
        early = message.early
        if early is not None and server.core is None:
            # Still loading: answer at once, importing nothing (the import lock would make this wait for the whole
            # import of the core), so the params are not validated with their model.
            return dict(early.before_core)
        validated = message.params_model().model_validate(given)
        token: int | str | None = getattr(validated, "work_done_token", None)
        with WorkDone(server if message.progress else None, token, message.progress or "") as progress:
            if early is not None:
                await server.core_within(early.within)
            else:
                if not server.ready.is_set():
                    progress.report("waiting for the MCP servers to start")
                await server.ready_core()
            result = await server.handler(message)(validated)
    except Exception as error:
        mapped = rpc_error(error)
        if mapped is None or mapped is error:
            raise
        raise mapped from error
    return wire(result)


def wire(result: object) -> object:
    """A handler's result as JSON: a model's ``to_wire()``, else the value itself (``None``, a plain dict)."""
    to_wire = getattr(result, "to_wire", None)
    return to_wire() if callable(to_wire) else result


def params_dict(params: object) -> dict[str, Any]:
    """Raw params of a custom message as a dict (absent params are ``{}``)."""
    if params is None:
        return {}
    if isinstance(params, dict):
        return {str(k): v for k, v in cast(dict[object, Any], params).items()}
    raise JsonRpcInvalidParams("params must be an object")


@dataclass(frozen=True)
class ErrorRule:
    """How one kind of failure is answered. The class is named by module and name, so that this table imports
    nothing: an exception of a class whose module was never imported cannot have been raised."""

    module: str
    """The module that defines the exception class."""
    name: str
    """The class; its subclasses match too."""
    to_rpc: Callable[[Any], JsonRpcException]
    """The JSON-RPC error the editor is answered with."""


def _invalid_params(error: Any) -> JsonRpcException:
    details = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'params'}: {e['msg']}" for e in error.errors())
    return JsonRpcInvalidParams(f"invalid params: {details}")


ERRORS = (
    ErrorRule("pygls.exceptions", "JsonRpcException", lambda error: error),
    ErrorRule("host_bridge.hub.errors", "HubError", lambda e: JsonRpcException(e.message, e.code, e.data)),
    ErrorRule("pydantic_core._pydantic_core", "ValidationError", _invalid_params),
    ErrorRule("host_bridge.uris", "UriError", lambda e: JsonRpcException(str(e), INVALID_PARAMS)),
    ErrorRule("host_bridge.consent.policy", "DecisionNotSaved", lambda e: JsonRpcException(str(e), INTERNAL_ERROR)),
)
"""Every failure a request can be answered with on purpose, first match wins: a JSON-RPC error as raised; a hub error
with its code, message and data (unknown server -32602, not found -32002, not running -32802, upstream -32803); bad
params -32602 naming each field; a refused URI -32602; a decision that could not be saved -32603 with the sentence
for the user (handlers that can say more, such as ``hostBridge/setConsent``, answer it themselves). Anything else is
a failure of the sidecar: logged with its traceback and answered as pygls' internal error."""


def rpc_error(error: Exception) -> JsonRpcException | None:
    """The JSON-RPC error :data:`ERRORS` maps ``error`` to, or ``None``."""
    for rule in ERRORS:
        cls: object = getattr(sys.modules.get(rule.module), rule.name, None)
        if isinstance(cls, type) and isinstance(error, cls):
            return rule.to_rpc(error)
    return None
