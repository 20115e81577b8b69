"""``hostBridge/*`` resource requests, proxied to the hub's resource broker."""

from __future__ import annotations

from typing import Any

from host_bridge.lsp import protocol
from host_bridge.lsp.protocol import (
    CompleteArgumentParams,
    ListResourcesParams,
    ListResourceTemplatesParams,
    ListResourceTemplatesResult,
    ReadResourceParams,
    SubscriptionParams,
)
from host_bridge.lsp.server import HostBridgeServer, params_dict, rpc_errors


def setup(server: HostBridgeServer) -> None:
    """Register the resource requests."""

    @server.feature(protocol.LIST_RESOURCES)
    @rpc_errors
    async def list_resources(ls: HostBridgeServer, params: Any) -> dict[str, Any]:
        request = ListResourcesParams.model_validate(params_dict(params))
        core = await ls.ready_core()
        if request.server is not None:
            core.hub.connection(request.server)
        page = await core.hub.broker.list_resources(request.server, request.cursor, request.query)
        return page.to_wire()

    @server.feature(protocol.LIST_RESOURCE_TEMPLATES)
    @rpc_errors
    async def list_resource_templates(ls: HostBridgeServer, params: Any) -> dict[str, Any]:
        request = ListResourceTemplatesParams.model_validate(params_dict(params))
        core = await ls.ready_core()
        if request.server is not None:
            core.hub.connection(request.server)
        items = await core.hub.broker.list_templates(request.server)
        return ListResourceTemplatesResult(items=items).to_wire()

    @server.feature(protocol.COMPLETE_ARGUMENT)
    @rpc_errors
    async def complete_argument(ls: HostBridgeServer, params: Any) -> dict[str, Any]:
        request = CompleteArgumentParams.model_validate(params_dict(params))
        core = await ls.ready_core()
        completion = await core.hub.broker.complete(
            request.server, request.uri_template, request.name, request.value, request.arguments
        )
        return completion.to_wire()

    @server.feature(protocol.READ_RESOURCE)
    @rpc_errors
    async def read_resource(ls: HostBridgeServer, params: Any) -> dict[str, Any]:
        request = ReadResourceParams.model_validate(params_dict(params))
        core = await ls.ready_core()
        core.hub.connection(request.server)
        result = await core.hub.broker.read(
            request.server, request.uri, uri_template=request.uri_template, arguments=request.arguments
        )
        return result.to_wire()

    @server.feature(protocol.SUBSCRIBE)
    @rpc_errors
    async def subscribe(ls: HostBridgeServer, params: Any) -> None:
        request = SubscriptionParams.model_validate(params_dict(params))
        core = await ls.ready_core()
        await core.hub.broker.subscribe(request.server, request.uri)

    @server.feature(protocol.UNSUBSCRIBE)
    @rpc_errors
    async def unsubscribe(ls: HostBridgeServer, params: Any) -> None:
        request = SubscriptionParams.model_validate(params_dict(params))
        core = await ls.ready_core()
        await core.hub.broker.unsubscribe(request.server, request.uri)
