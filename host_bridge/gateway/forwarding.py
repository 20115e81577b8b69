"""What the gateway forwards, and how: the SDK server every agent session runs, and the server's requests routed back.

- **Forwarded** (:data:`FORWARDED`): ``tools/*``, ``prompts/*``, ``resources/*`` (list, templates, read), and
  ``completion/complete``, passed to the server's one live connection; ``resources/subscribe``, ``unsubscribe`` and
  ``logging/setLevel`` are held in the hub's book of upstream state for the agent.
- **Answered here**: ``initialize`` (with the server's own name, capabilities and instructions) and ``ping``.
- **Ignored**: everything an agent says about roots (no handler: the server's roots come from consent).
- **Sampling and elicitation** the server asks for (:class:`ServerRequestRouter`) go to the agent whose call caused
  them: the caller itself when the SDK asks from inside that call (2026-07-28 servers), else the one agent with a call
  in progress on that server; with none, or several, the request is refused with a sentence saying why.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar

import mcp_types as types
from mcp.client.session import ClientRequestContext
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.models import InitializationOptions
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from host_bridge.hub.connection import ServerConnection

FORWARDED: dict[str, type[BaseModel]] = {
    "tools/list": types.PaginatedRequestParams,
    "tools/call": types.CallToolRequestParams,
    "prompts/list": types.PaginatedRequestParams,
    "prompts/get": types.GetPromptRequestParams,
    "resources/list": types.PaginatedRequestParams,
    "resources/templates/list": types.PaginatedRequestParams,
    "resources/read": types.ReadResourceRequestParams,
    "completion/complete": types.CompleteRequestParams,
}
"""Requests passed to the server as they are (params validated unless both sides speak the same revision)."""
INPUT_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
"""Requests a 2026-07-28 server may answer with ``InputRequiredResult``: they go through the SDK's typed calls, whose
driver answers roots from consent and sampling or elicitation through the caller."""

_R = TypeVar("_R", bound=BaseModel)


class Forwarded(Protocol):
    """What the SDK server's handlers need of an agent session (its lifespan context)."""

    async def forward(self, ctx: ServerRequestContext[Any, Any]) -> dict[str, Any] | BaseModel:
        """Forward the request of ``ctx`` to the server; its result."""
        ...

    async def subscribe(self, uri: str) -> None:
        """Hold a subscription to ``uri`` for the agent."""
        ...

    async def unsubscribe(self, uri: str) -> None:
        """Let go of the agent's subscription to ``uri``."""
        ...

    async def set_log_level(self, level: types.LoggingLevel) -> None:
        """Record the log level the agent asked for."""
        ...

    def initialized(self, params: Mapping[str, Any] | None) -> None:
        """The agent's ``initialize`` was answered."""
        ...


class Asked(Protocol):
    """What routing a server's request to an agent needs of its session."""

    @property
    def server_id(self) -> str:
        """The server the agent uses."""
        ...

    @property
    def calls_in_flight(self) -> int:
        """Forwarded requests not answered yet."""
        ...

    async def ask(self, request: types.ServerRequest, capability: str, result_type: type[_R]) -> _R | types.ErrorData:
        """Pass the server's request to the agent; its answer, or a refusal."""
        ...


CALLER: contextvars.ContextVar[Asked | None] = contextvars.ContextVar("gateway_caller", default=None)
"""The agent session whose forwarded call the current task is making."""


def forwarding_server() -> Server[Forwarded]:
    """The SDK server every agent session runs: forwarding handlers, and a middleware that records who initialized."""
    server: Server[Forwarded] = Server("host-bridge-gateway")

    async def forward(ctx: ServerRequestContext[Forwarded, Any], params: BaseModel) -> HandlerResult:
        return await ctx.lifespan_context.forward(ctx)

    for method, params_type in FORWARDED.items():
        server.add_request_handler(method, params_type, forward)

    async def subscribe(ctx: ServerRequestContext[Forwarded, Any], params: types.SubscribeRequestParams) -> None:
        await ctx.lifespan_context.subscribe(params.uri)

    async def unsubscribe(ctx: ServerRequestContext[Forwarded, Any], params: types.UnsubscribeRequestParams) -> None:
        await ctx.lifespan_context.unsubscribe(params.uri)

    async def set_level(ctx: ServerRequestContext[Forwarded, Any], params: types.SetLevelRequestParams) -> None:
        await ctx.lifespan_context.set_log_level(params.level)

    server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)

    async def record_initialize(ctx: ServerRequestContext[Forwarded, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "initialize":
            ctx.lifespan_context.initialized(ctx.params)
        return result

    server.middleware = [record_initialize]
    return server


def initialization_options(connection: ServerConnection) -> InitializationOptions:
    """What the agent's ``initialize`` is answered with: the server's own identity, capabilities and instructions.

    Change notifications are relayed for handshake-era servers only, so a 2026-07-28 server is presented without
    ``listChanged`` and ``subscribe``.
    """
    client = connection.client
    info = client.server_info or types.Implementation(name=connection.id, version="")
    capabilities = client.server_capabilities.model_copy(update={"extensions": None})
    if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
        capabilities = capabilities.model_copy(
            update={
                "tools": types.ToolsCapability() if capabilities.tools else None,
                "prompts": types.PromptsCapability() if capabilities.prompts else None,
                "resources": types.ResourcesCapability() if capabilities.resources else None,
            }
        )
    return InitializationOptions(
        server_name=info.name,
        server_version=info.version,
        title=info.title,
        description=info.description,
        capabilities=capabilities,
        instructions=client.instructions,
        website_url=info.website_url,
        icons=info.icons,
    )


class ServerRequestRouter:
    """The sampling and elicitation callbacks of the servers' clients: each request goes to the agent that caused it."""

    def __init__(self, sessions: Callable[[], Iterable[Asked]]) -> None:
        self._sessions = sessions

    def client_options(self, server_id: str) -> dict[str, Any]:
        """Sampling and elicitation callbacks for ``server_id``'s next session."""

        async def sampling(
            context: ClientRequestContext, params: types.CreateMessageRequestParams
        ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
            request = types.CreateMessageRequest(params=params)
            return await self.ask(server_id, request, "sampling", types.CreateMessageResult)

        async def elicitation(
            context: ClientRequestContext, params: types.ElicitRequestParams
        ) -> types.ElicitResult | types.ErrorData:
            request = types.ElicitRequest(params=params)
            return await self.ask(server_id, request, "elicitation", types.ElicitResult)

        return {"sampling_callback": sampling, "elicitation_callback": elicitation}

    async def ask(
        self, server_id: str, request: types.ServerRequest, capability: str, result_type: type[_R]
    ) -> _R | types.ErrorData:
        """Ask the agent whose call caused ``request``; a refusal naming why when that cannot be told."""
        caller = CALLER.get()
        if caller is None or caller.server_id != server_id:
            busy = [s for s in self._sessions() if s.server_id == server_id and s.calls_in_flight]
            if len(busy) != 1:
                why = (
                    "no agent has a call in progress on it"
                    if not busy
                    else f"{len(busy)} agents have calls in progress on it, so it cannot tell whose call caused this"
                )
                return types.ErrorData(
                    code=types.INVALID_REQUEST,
                    message=f"MCP Host Bridge refused {request.method} from MCP server {server_id!r}: {why}",
                )
            caller = busy[0]
        return await caller.ask(request, capability, result_type)
