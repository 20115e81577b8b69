"""An agent's requests while they are in progress, and the server's requests while the agent answers them.

Each request of the agent runs in a task of its own under a cancel scope: ``notifications/cancelled`` from the agent
cancels it (the SDK then sends the server its own ``notifications/cancelled``) and nothing is answered. A forwarded
request goes to the server's one live ``mcp.Client`` as plain JSON (:func:`host_bridge.gateway.upstream.raw_request`:
the agent's id is mapped to the connection's own, its progress token and envelope are taken out), and the result comes
back as the server sent it, shaped for the agent's revision only when the two differ. A request counts against
``max_requests_in_progress`` until its answer is written to the agent, not only until the server answered.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client, MCPError
from mcp.shared.dispatcher import CallOptions, ProgressFnT
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from host_bridge.gateway import forwarding
from host_bridge.gateway.upstream import outgoing_params, raw_request
from host_bridge.hub.connection import ServerConnection
from host_bridge.hub.errors import HubError

if TYPE_CHECKING:
    from host_bridge.gateway.session import AgentSession

logger = logging.getLogger(__name__)

RequestId = str | int
"""A JSON-RPC request id, as MCP allows it."""


@dataclass
class _Call:
    """One request of the agent in progress."""

    id: RequestId
    method: str
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    cancelled: bool = False
    """The agent cancelled it: nothing is answered."""
    ended: str | None = None
    """The gateway ended the session under it: answered with this reason."""


@dataclass
class _Passing:
    """One request of the agent passed to the server as a plain frame (:class:`~host_bridge.hub.passage.Passage`)."""

    id: RequestId
    method: str
    connection: ServerConnection
    upstream: str
    """Its id on the server's connection."""
    deadline: float


@dataclass
class _Ask:
    """One request of the server in progress with the agent."""

    answered: anyio.Event = field(default_factory=anyio.Event)
    message: dict[str, Any] | None = None


def _key(request_id: RequestId) -> tuple[bool, RequestId]:
    # 1 and "1" are two requests.
    return isinstance(request_id, str), request_id


class Calls:
    """The requests of one agent session in progress, both ways."""

    def __init__(self, session: AgentSession) -> None:
        self._session = session
        self.tasks: anyio.abc.TaskGroup | None = None
        """Where the requests run (the session's task group, while it runs)."""
        self.answering = 0
        """Requests of the agent counted against its limit: in progress, or answered and not written yet."""
        self.upstream = 0
        """Requests forwarded to the server and not answered by it yet."""
        self._calls: dict[tuple[bool, RequestId], _Call] = {}
        self._idle = anyio.Event()
        self._idle.set()
        self._asks: dict[str, _Ask] = {}
        self._asked = 0
        self._closed = False
        self._passing: dict[tuple[bool, RequestId], _Passing] = {}
        self._deadlines: deque[tuple[float, tuple[bool, RequestId], _Passing]] = deque()
        self._expiring = False
        self._expire_wake: anyio.Event | None = None

    # The agent's requests.

    def forward(self, request_id: RequestId, method: str, params: dict[str, Any] | None) -> None:
        """Forward ``method`` to the server and answer the agent with its result.

        While the server runs over stdio, and the agent and the server both speak a handshake-era revision, a request
        without a progress token is passed as a plain frame (:meth:`_pass`): no task, no SDK session in between, the
        answer written to the agent from the task that reads the server. Anything else goes through the SDK's session
        in a task of its own.
        """
        session = self._session
        connection = session.host.running_now(session.server_id)
        if (
            connection is not None
            and connection.passage.open
            and not forwarding.is_modern(connection.protocol_version)
            and session.era == "handshake"
        ):
            out, token = outgoing_params(params)
            if token is None and self._pass(request_id, method, out, connection):
                return
        self.start(request_id, method, lambda: self._forward(method, params))

    def _pass(self, request_id: RequestId, method: str, params: dict[str, Any], connection: ServerConnection) -> bool:
        """Pass the request to the server as a frame; ``False`` when the passage closed meanwhile (nothing sent)."""
        session = self._session
        limit = session.settings.max_requests_in_progress
        if self.answering >= limit:
            return False  # start() refuses it with its sentence
        key = _key(request_id)
        if key in self._calls or key in self._passing or self.tasks is None:
            session.error(request_id, types.INVALID_REQUEST, f"request id {request_id!r} is already in progress")
            return True
        deadline = anyio.current_time() + session.settings.request_timeout
        entry = _Passing(request_id, method, connection, "", deadline)
        try:
            upstream = connection.passage.send(method, params, lambda message: self._passed(key, entry, message))
        except PydanticSerializationError:
            session.error(request_id, types.INVALID_PARAMS, _not_unicode(method))
            return True
        if upstream is None:
            return False
        entry.upstream = upstream
        session.connection = connection
        session.requests[method] += 1
        self._passing[key] = entry
        self._idle = anyio.Event()
        self.answering += 1
        self.upstream += 1
        if deadline == math.inf:
            return True
        self._deadlines.append((deadline, key, entry))
        if not self._expiring:
            self._expiring = True
            self.tasks.start_soon(self._expire)
        elif self._expire_wake is not None:
            self._expire_wake.set()
        return True

    def _passed(self, key: tuple[bool, RequestId], entry: _Passing, message: dict[str, Any]) -> None:
        """The server answered a passed request: answer the agent (in the task that read the answer)."""
        if self._passing.get(key) is not entry:
            return
        self._drop(key)
        session = self._session
        error: object = message.get("error")
        if error is not None:
            code, text, data = _error_fields(error)
            session.host.report_error(session.server_id, MCPError(code=code, message=text, data=data))
            session.error(entry.id, code, text, data, done=self._release)
            return
        result: object = message.get("result")
        if type(result) is not dict:
            session.error(
                entry.id,
                types.INTERNAL_ERROR,
                f"MCP server {session.server_id!r} sent an answer that does not follow the protocol: its result is "
                "not an object",
                done=self._release,
            )
            return
        answer = cast(dict[str, Any], result)
        version = session.protocol_version or ""
        if version != entry.connection.protocol_version:
            try:
                answer = forwarding.shaped(entry.method, version, answer)
            except ValidationError as invalid:
                failure = _unlike_protocol(session.server_id, invalid)
                session.error(entry.id, failure.error.code, failure.error.message, done=self._release)
                return
        session.answer(entry.id, answer, done=self._release)

    def _drop(self, key: tuple[bool, RequestId]) -> None:
        del self._passing[key]
        self.upstream -= 1
        deadlines = self._deadlines
        while deadlines and self._passing.get(deadlines[0][1]) is not deadlines[0][2]:
            deadlines.popleft()
        if not self._calls and not self._passing:
            self._idle.set()

    def _give_up(self, key: tuple[bool, RequestId], reason: str) -> _Passing:
        """Stop waiting for a passed request: the server is told it is cancelled; its answer is not counted any more."""
        entry = self._passing[key]
        self._drop(key)
        entry.connection.passage.forget(entry.upstream, reason)
        return entry

    def _abandon(self, key: tuple[bool, RequestId], reason: str) -> None:
        """Give up a passed request that will never be answered to the agent (it cancelled it, or left)."""
        self._give_up(key, reason)
        self._release()

    def _abandon_all(self) -> None:
        for key in list(self._passing):
            self._abandon(key, "the agent left")

    async def _expire(self) -> None:
        """Answer passed requests the server did not answer in time with the SDK's time-out error."""
        while True:
            deadlines = self._deadlines
            while deadlines and deadlines[0][0] <= anyio.current_time():
                _, key, entry = deadlines.popleft()
                if self._passing.get(key) is entry:
                    self._give_up(key, "timed out")
                    error = MCPError(code=types.REQUEST_TIMEOUT, message=f"Request {entry.method!r} timed out")
                    self._session.host.report_error(self._session.server_id, error)
                    self._session.error(entry.id, error.error.code, error.error.message, done=self._release)
            if deadlines:
                await anyio.sleep_until(deadlines[0][0])
            else:
                self._expire_wake = anyio.Event()
                await self._expire_wake.wait()
                self._expire_wake = None

    def start(
        self,
        request_id: RequestId,
        method: str,
        work: Callable[[], Awaitable[dict[str, Any]]],
        *,
        counted: bool = True,
    ) -> None:
        """Run ``work`` for the agent's request in a task of its own and answer with its result or error.

        A ``counted`` request past ``max_requests_in_progress`` is refused at once (an agent that never stops sending
        would otherwise grow the sidecar's memory and load its server without bound).
        """
        session = self._session
        limit = session.settings.max_requests_in_progress
        if counted and self.answering >= limit:
            session.error(
                request_id,
                types.INVALID_REQUEST,
                f"MCP Host Bridge refused {method}: this agent already has {limit} requests in progress on MCP server "
                f"{session.server_id!r}; wait for their answers or cancel some",
            )
            return
        key = _key(request_id)
        if key in self._calls or self.tasks is None:
            session.error(request_id, types.INVALID_REQUEST, f"request id {request_id!r} is already in progress")
            return
        call = self._calls[key] = _Call(request_id, method)
        self._idle = anyio.Event()
        if counted:
            self.answering += 1
        self.tasks.start_soon(self._run, call, work, counted)

    async def _run(self, call: _Call, work: Callable[[], Awaitable[dict[str, Any]]], counted: bool) -> None:
        session = self._session
        done = self._release if counted else None
        answered = False
        try:
            with call.scope:
                try:
                    result = await work()
                except MCPError as error:
                    answered = True
                    data = error.error.data
                    session.error(call.id, error.error.code, error.error.message, data, done=done)
                except ValidationError as error:
                    answered = True
                    message = f"Invalid parameters for {call.method}: {error}"
                    session.error(call.id, types.INVALID_PARAMS, message, done=done)
                else:
                    answered = True
                    session.answer(call.id, result, done=done)
            if not answered and call.ended is not None:
                answered = True
                session.error(call.id, types.CONNECTION_CLOSED, _ended(call.ended), done=done)
        finally:
            del self._calls[_key(call.id)]
            if not answered and counted:
                self._release()
            if not self._calls:
                self._idle.set()

    def _release(self) -> None:
        self.answering -= 1

    def cancel(self, request_id: RequestId) -> None:
        """The agent cancelled ``request_id``: stop it, and answer nothing."""
        key = _key(request_id)
        if key in self._passing:
            self._abandon(key, "the agent cancelled it")
        call = self._calls.get(key)
        if call is not None:
            call.cancelled = True
            call.scope.cancel()

    def cancel_all(self) -> None:
        """Stop every request of the agent (it left): nothing is answered."""
        self._abandon_all()
        for call in list(self._calls.values()):
            call.cancelled = True
            call.scope.cancel()

    def end_all(self, reason: str) -> None:
        """Stop every request of the agent, answering each with an error that gives ``reason``."""
        for key in list(self._passing):
            entry = self._give_up(key, reason)
            self._session.error(entry.id, types.CONNECTION_CLOSED, _ended(reason), done=self._release)
        for call in list(self._calls.values()):
            call.ended = reason
            call.scope.cancel()

    async def idle(self) -> None:
        """Until no request of the agent is in progress."""
        await self._idle.wait()

    async def connection(self) -> ServerConnection:
        """The server's connection once it is running (an error naming why when it does not come)."""
        session = self._session
        try:
            session.connection = await session.host.running(session.server_id)
        except HubError as error:
            raise MCPError(code=error.code, message=f"MCP Host Bridge: {error.message}", data=error.data) from error
        return session.connection

    async def _forward(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        session = self._session
        connection = await self.connection()
        out, token = outgoing_params(params)
        timeout = session.settings.request_timeout
        progress = self._progress(token) if token is not None else None
        self.upstream += 1
        session.requests[method] += 1
        caller = forwarding.CALLER.set(session)
        try:
            if method in forwarding.INPUT_METHODS and forwarding.is_modern(connection.protocol_version):
                typed = await _typed(connection.client, method, out, timeout, progress)
                result = typed.model_dump(by_alias=True, mode="json", exclude_none=True)
            else:
                opts: CallOptions = {"timeout": timeout}
                if progress is not None:
                    opts["on_progress"] = progress
                result = await raw_request(connection.client, method, out, opts)
        except MCPError as error:
            session.host.report_error(session.server_id, error)
            raise
        except HubError as error:
            raise MCPError(code=error.code, message=f"MCP Host Bridge: {error.message}", data=error.data) from error
        except PydanticSerializationError as error:
            # A lone surrogate escape in the agent's JSON: valid JSON text, but nothing UTF-8 can carry to the server.
            raise MCPError(code=types.INVALID_PARAMS, message=_not_unicode(method)) from error
        except ValidationError as error:
            raise _unlike_protocol(session.server_id, error) from error
        finally:
            forwarding.CALLER.reset(caller)
            self.upstream -= 1
        version = session.protocol_version or connection.protocol_version or ""
        if version != connection.protocol_version:
            try:
                result = forwarding.shaped(method, version, result)
            except ValidationError as error:
                raise _unlike_protocol(session.server_id, error) from error
        if forwarding.is_modern(version):
            result = forwarding.stamped(result, connection)
        return result

    def _progress(self, token: object) -> ProgressFnT:
        session = self._session

        async def report(progress: float, total: float | None, message: str | None) -> None:
            params: dict[str, Any] = {"progressToken": token, "progress": progress}
            if total is not None:
                params["total"] = total
            if message is not None:
                params["message"] = message
            session.notify("notifications/progress", params)

        return report

    # The server's requests to the agent.

    async def ask(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Send the agent a request of the server's; its answer message (with ``result`` or ``error``)."""
        if self._closed:
            return {"error": {"code": types.CONNECTION_CLOSED, "message": "the agent left"}}
        self._asked += 1
        request_id = f"host-bridge-{self._asked}"
        ask = self._asks[request_id] = _Ask()
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            frame["params"] = params
        self._session.write(frame)
        try:
            with anyio.fail_after(self._session.settings.request_timeout):
                await ask.answered.wait()
        except TimeoutError:
            self._session.notify("notifications/cancelled", {"requestId": request_id, "reason": "timed out"})
            return {"error": {"code": types.REQUEST_TIMEOUT, "message": f"the agent did not answer {method} in time"}}
        finally:
            self._asks.pop(request_id, None)
        return ask.message or {"error": {"code": types.CONNECTION_CLOSED, "message": "the agent left"}}

    def answered(self, message: dict[str, Any]) -> None:
        """The agent answered a request of the server's; an answer to nothing asked is dropped."""
        request_id = message.get("id")
        ask = self._asks.get(request_id) if isinstance(request_id, str) else None
        if ask is None:
            logger.debug("[%s] dropped an answer to no request: %r", self._session.server_id, request_id)
            return
        ask.message = message
        ask.answered.set()

    def close(self) -> None:
        """The session ended: the server's requests still waiting for the agent fail, and the server is told the
        agent's passed requests are cancelled."""
        self._closed = True
        self._abandon_all()
        for ask in self._asks.values():
            ask.answered.set()


async def _typed(
    client: Client,
    method: str,
    params: dict[str, Any],
    timeout: float,
    progress: ProgressFnT | None,
) -> BaseModel:
    """A request a 2026-07-28 server may answer with ``InputRequiredResult``, through the SDK's typed call (its driver
    answers the server's input requests: roots from consent, sampling and elicitation through the caller)."""
    meta = params.pop("_meta", None)
    if method == "tools/call":
        return await client.call_tool(str(params.get("name")), params.get("arguments"), timeout, progress, meta=meta)
    if method == "prompts/get":
        return await client.get_prompt(str(params.get("name")), params.get("arguments"), meta=meta)
    return await client.read_resource(str(params.get("uri")), meta=meta, cache_mode="bypass")


def _ended(reason: str) -> str:
    return f"MCP Host Bridge ended the session: {reason}"


def _not_unicode(method: str) -> str:
    return (
        f"MCP Host Bridge refused {method}: it holds a string that is not Unicode (a lone surrogate), which cannot be "
        "sent to the server"
    )


def _error_fields(error: object) -> tuple[int, str, Any]:
    """Code, message and data of a JSON-RPC error object a server sent (one that is not one: an internal error)."""
    if isinstance(error, dict):
        fields = cast(dict[str, Any], error)
        code, message = fields.get("code"), fields.get("message")
        if type(code) is int and isinstance(message, str):
            return code, message, fields.get("data")
    return types.INTERNAL_ERROR, "the MCP server sent an error that does not follow the protocol", None


def _unlike_protocol(server_id: str, error: ValidationError) -> MCPError:
    return MCPError(
        code=types.INTERNAL_ERROR,
        message=f"MCP server {server_id!r} sent an answer that does not follow the protocol: {error}",
    )
