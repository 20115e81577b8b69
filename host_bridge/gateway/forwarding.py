"""What the gateway forwards and what it answers itself, in both protocol eras, and the servers' requests routed back.

- **Forwarded** (:data:`FORWARDED`): ``tools/*``, ``prompts/*``, ``resources/*`` (list, templates, read) and
  ``completion/complete`` go to the server's one live connection as the agent sent them (its id mapped, its
  progress token and protocol envelope taken out). The result comes back as the server sent it when the agent and the
  server speak the same revision; otherwise it is shaped for the agent's revision by the SDK's own per-revision result
  models (:func:`shaped`).
- **Answered here**: ``initialize`` (handshake era) and ``server/discover`` (2026-07-28) with the server's own name,
  capabilities and instructions; ``ping``. Subscriptions, ``subscriptions/listen`` and ``logging/setLevel`` are held
  in the hub's book of upstream state for the agent.
- **Ignored**: everything an agent says about roots (the server's roots come from consent).
- **Sampling and elicitation** the server asks for (:class:`ServerRequestRouter`) go to the agent whose call caused
  them: the caller itself when the SDK asks from inside that call (2026-07-28 servers), else the one agent with a call
  in progress on that server; with none, or several, or an agent of the 2026-07-28 era (which takes no requests from
  its server), the request is refused with a sentence saying why.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar, cast

import mcp_types as types
from mcp.client.session import ClientRequestContext
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from host_bridge.hub.connection import ServerConnection

FORWARDED = frozenset(
    {
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "completion/complete",
    }
)
"""Requests passed to the server as the agent sent them."""
INPUT_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
"""Requests a 2026-07-28 server may answer with ``InputRequiredResult``: they go through the SDK's typed calls, whose
driver answers roots from consent and sampling or elicitation through the caller."""
HANDSHAKE_ONLY = frozenset({"initialize", "resources/subscribe", "resources/unsubscribe", "logging/setLevel"})
"""Requests that do not exist in the 2026-07-28 revision."""
MODERN_ONLY = frozenset({"server/discover", "subscriptions/listen"})
"""Requests that exist only in the 2026-07-28 revision."""

_R = TypeVar("_R", bound=BaseModel)


def is_modern(version: str | None) -> bool:
    """Whether ``version`` is of the 2026-07-28 era."""
    return version in MODERN_PROTOCOL_VERSIONS


def negotiate(requested: str) -> str:
    """The handshake revision an agent that asked for ``requested`` in its ``initialize`` gets."""
    return requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION


def capabilities(connection: ServerConnection) -> types.ServerCapabilities:
    """What the agent is told the server offers: its own capabilities, whatever era it speaks (list changes and
    resource updates of a 2026-07-28 server reach the agent through the hub's listen stream)."""
    return connection.client.server_capabilities.model_copy(update={"extensions": None})


def server_info(connection: ServerConnection) -> types.Implementation:
    """The server's own name and version, as the agent sees it."""
    return connection.client.server_info or types.Implementation(name=connection.id, version="")


def initialize_result(connection: ServerConnection, version: str) -> dict[str, Any]:
    """The answer to a handshake-era agent's ``initialize``, negotiated at ``version``."""
    result = types.InitializeResult(
        protocol_version=version,
        capabilities=capabilities(connection),
        server_info=server_info(connection),
        instructions=connection.client.instructions,
    )
    return shaped("initialize", version, result.model_dump(by_alias=True, mode="json", exclude_none=True))


def discover_result(connection: ServerConnection) -> dict[str, Any]:
    """The answer to a 2026-07-28 agent's ``server/discover``."""
    result = types.DiscoverResult(
        supported_versions=list(MODERN_PROTOCOL_VERSIONS),
        capabilities=capabilities(connection),
        instructions=connection.client.instructions,
        cache_scope="private",
        result_type="complete",
    )
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return stamped(dumped, connection)


def shaped(method: str, version: str, result: Mapping[str, Any]) -> dict[str, Any]:
    """``result`` of ``method`` in the shape of revision ``version`` (the SDK's per-revision result models; fields the
    revision does not have are dropped). Raises :class:`pydantic.ValidationError` for a result that is not one."""
    if is_modern(version):
        # A handshake-era answer is complete, and says nothing of caching: it is fresh now, and only for this user.
        hints = {"ttlMs": 0, "cacheScope": "private"} if method in methods.CACHEABLE_METHODS else {}
        result = {"resultType": "complete", **hints, **result}
    try:
        dumped = methods.serialize_server_result(method, version, result)
    except KeyError:
        dumped = dict(result)
    if is_modern(version) and dumped.get("resultType") is None:
        dumped["resultType"] = "complete"
    return dumped


def stamped(result: dict[str, Any], connection: ServerConnection) -> dict[str, Any]:
    """A 2026-07-28 result with the server's identity in its ``_meta`` (unless the server put its own there)."""
    meta = result.get("_meta")
    info = server_info(connection).model_dump(by_alias=True, mode="json", exclude_none=True)
    if not isinstance(meta, dict):
        result["_meta"] = {types.SERVER_INFO_META_KEY: info}
    elif cast(dict[str, Any], meta).get(types.SERVER_INFO_META_KEY) is None:
        result["_meta"] = {**cast(dict[str, Any], meta), types.SERVER_INFO_META_KEY: info}
    return result


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
