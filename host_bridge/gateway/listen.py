"""``subscriptions/listen`` for agents of the 2026-07-28 revision, whatever revision their server speaks.

Each listen request is one stream: the gateway acknowledges the subset of the agent's filter its server can honor
(``notifications/subscriptions/acknowledged``, the stream's first frame), then passes on, tagged with the request's id
under ``_meta["io.modelcontextprotocol/subscriptionId"]``, the list changes and resource updates it asked for. The
stream's resource subscriptions are held in the hub's book of upstream state under the stream itself, so the server
is subscribed once however many agents and editors follow a resource, through ``resources/subscribe`` or the hub's own
listen stream. The stream lasts until the agent cancels its request (nothing is answered then) or leaves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY

if TYPE_CHECKING:
    from host_bridge.gateway.calls import RequestId
    from host_bridge.gateway.session import AgentSession

MAX_STREAMS = 16
"""Listen streams one agent may have open at once."""

_KINDS = {
    "notifications/tools/list_changed": "tools_list_changed",
    "notifications/prompts/list_changed": "prompts_list_changed",
    "notifications/resources/list_changed": "resources_list_changed",
}


class ListenStream:
    """One ``subscriptions/listen`` request of an agent: a holder of its resources in the book of upstream state."""

    def __init__(self, session: AgentSession, request_id: RequestId, honored: types.SubscriptionFilter) -> None:
        self.session = session
        """The agent's session."""
        self.honored = honored
        """What the stream delivers."""
        self.meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: request_id}
        """The tag on every frame of the stream."""

    def updated(self, uri: str) -> None:
        """A resource the stream follows changed."""
        self.session.notify("notifications/resources/updated", {"uri": uri, "_meta": self.meta})

    def list_changed(self, method: str) -> None:
        """A list changed: passed on when the stream asked for it."""
        if getattr(self.honored, _KINDS[method], None):
            self.session.notify(method, {"_meta": self.meta})


class Listens:
    """The listen streams of one agent session."""

    def __init__(self, session: AgentSession) -> None:
        self._session = session
        self._streams: set[ListenStream] = set()

    async def listen(self, request_id: RequestId, params: dict[str, Any] | None) -> dict[str, Any]:
        """Serve one listen request until it is cancelled (the agent cancelled it or left)."""
        session = self._session
        requested = types.SubscriptionsListenRequestParams.model_validate(params or {}, by_name=False).notifications
        if len(self._streams) >= MAX_STREAMS:
            raise MCPError(
                code=types.INVALID_REQUEST,
                message=f"MCP Host Bridge refused subscriptions/listen: this agent already has {MAX_STREAMS} listen "
                "streams open; cancel one it no longer needs first",
            )
        connection = await session.calls.connection()
        uris = list(dict.fromkeys(requested.resource_subscriptions or ()))
        limit = session.settings.max_subscriptions
        if len(uris) > limit:
            raise MCPError(
                code=types.INVALID_REQUEST,
                message=f"MCP Host Bridge refused subscriptions/listen: it names {len(uris)} resources, more than the "
                f"{limit} one agent may follow",
            )
        honored = _honored(requested, uris, connection.client.server_capabilities)
        stream = ListenStream(session, request_id, honored)
        self._streams.add(stream)
        try:
            for uri in honored.resource_subscriptions or ():
                await session.host.subscribe(session, stream, uri)
            acknowledged = types.SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=stream.meta)
            session.write(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/subscriptions/acknowledged",
                    "params": acknowledged.model_dump(by_alias=True, mode="json", exclude_none=True),
                }
            )
            await anyio.sleep_forever()
        finally:
            self._streams.discard(stream)
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                await session.host.release(stream)
        raise AssertionError("unreachable")  # pragma: no cover

    def list_changed(self, method: str) -> None:
        """A list of the server changed: every stream that asked for it hears of it."""
        for stream in list(self._streams):
            stream.list_changed(method)

    async def close_all(self) -> None:
        """The session ended: let go of what every stream still holds."""
        for stream in list(self._streams):
            self._streams.discard(stream)
            await self._session.host.release(stream)


def _honored(
    requested: types.SubscriptionFilter, uris: list[str], capabilities: types.ServerCapabilities
) -> types.SubscriptionFilter:
    """The part of ``requested`` the server can give (its capabilities say which lists change and whether its resources
    can be followed); kinds it cannot give are left out, as the revision asks."""
    tools, prompts, resources = capabilities.tools, capabilities.prompts, capabilities.resources
    return types.SubscriptionFilter(
        tools_list_changed=True if requested.tools_list_changed and tools and tools.list_changed else None,
        prompts_list_changed=True if requested.prompts_list_changed and prompts and prompts.list_changed else None,
        resources_list_changed=(
            True if requested.resources_list_changed and resources and resources.list_changed else None
        ),
        resource_subscriptions=uris if uris and resources and resources.subscribe else None,
    )
