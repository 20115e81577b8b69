"""``hostBridge/*`` resource requests, answered by the hub's resource broker."""

from __future__ import annotations

from typing import TYPE_CHECKING

from host_bridge.core import Core
from host_bridge.hosts.lsp import messages, progress
from host_bridge.hosts.lsp.feature import Feature, request
from host_bridge.hosts.lsp.protocol import (
    CompleteArgumentParams,
    ListResourcesParams,
    ListResourceTemplatesParams,
    ListResourceTemplatesResult,
    ReadResourceParams,
    SubscriptionParams,
)
from host_bridge.hub.resources.models import Completion, ReadResult, ResourcePage

if TYPE_CHECKING:
    from host_bridge.hosts.lsp.server import HostBridgeServer


class ResourcesFeature(Feature):
    """Listing, templates, completion, reads and subscriptions, for the editor's pickers and documents."""

    def __init__(self, server: HostBridgeServer, core: Core) -> None:
        self._server = server
        self._core = core

    @request(messages.LIST_RESOURCES)
    async def list_resources(self, params: ListResourcesParams) -> ResourcePage:
        """One page of resources; progress says whom it asks and how many it found."""
        hub = self._core.hub
        work = progress.current()
        if params.server is not None:
            hub.connection(params.server)
            work.report(f"asking {params.server}")
        else:
            work.report(f"asking {len(hub.resource_servers())} MCP servers")
        page = await hub.broker.list_resources(params.server, params.cursor, params.query, params.limit)
        more = "; more to come" if page.next_cursor else ""
        work.outcome = f"{len(page.items)} resources{more}"
        return page

    @request(messages.LIST_RESOURCE_TEMPLATES)
    async def list_resource_templates(self, params: ListResourceTemplatesParams) -> ListResourceTemplatesResult:
        """The templates of one server, or of every resource server."""
        if params.server is not None:
            self._core.hub.connection(params.server)
        return ListResourceTemplatesResult(items=await self._core.hub.broker.list_templates(params.server))

    @request(messages.COMPLETE_ARGUMENT)
    async def complete_argument(self, params: CompleteArgumentParams) -> Completion:
        """Suggestions for one template argument."""
        return await self._core.hub.broker.complete(
            params.server, params.uri_template, params.name, params.value, params.arguments
        )

    @request(messages.READ_RESOURCE)
    async def read_resource(self, params: ReadResourceParams) -> ReadResult:
        """A resource (or a template's expansion) from the server that named it."""
        self._core.hub.connection(params.server)
        return await self._core.hub.broker.read(
            params.server, params.uri, uri_template=params.uri_template, arguments=params.arguments
        )

    @request(messages.SUBSCRIBE)
    async def subscribe(self, params: SubscriptionParams) -> None:
        """Follow a resource: ``hostBridge/resourceUpdated`` when it changes."""
        await self._core.hub.broker.subscribe(params.server, params.uri)

    @request(messages.UNSUBSCRIBE)
    async def unsubscribe(self, params: SubscriptionParams) -> None:
        """Stop following a resource."""
        await self._core.hub.broker.unsubscribe(params.server, params.uri)
