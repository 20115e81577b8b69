"""``hostBridge/*`` resource requests, proxied to the hub's resource broker."""

from __future__ import annotations

from typing import Any

from host_bridge.hosts.lsp import methods
from host_bridge.hosts.lsp.progress import WorkDone
from host_bridge.hosts.lsp.server import HostBridgeServer, params_dict, rpc_errors


def setup(server: HostBridgeServer) -> None:
    """Register the resource requests."""

    @server.feature(methods.LIST_RESOURCES)
    @rpc_errors
    async def list_resources(ls: HostBridgeServer, params: Any) -> dict[str, Any]:
        from host_bridge.hosts.lsp.protocol import ListResourcesParams

        request = ListResourcesParams.model_validate(params_dict(params))
        with WorkDone(ls, request.work_done_token, "Listing MCP resources") as progress:
            if not ls.ready.is_set():
                progress.report("waiting for the MCP servers to start")
            core = await ls.ready_core()
            if request.server is not None:
                core.hub.connection(request.server)
                progress.report(f"asking {request.server}")
            else:
                progress.report(f"asking {len(core.hub.resource_servers())} MCP servers")
            page = await core.hub.broker.list_resources(request.server, request.cursor, request.query)
            more = "; more to come" if page.next_cursor else ""
            progress.outcome = f"{len(page.items)} resources{more}"
        return page.to_wire()

    @server.feature(methods.LIST_RESOURCE_TEMPLATES)
    @rpc_errors
    async def list_resource_templates(ls: HostBridgeServer, params: Any) -> dict[str, Any]:
        from host_bridge.hosts.lsp.protocol import ListResourceTemplatesParams, ListResourceTemplatesResult

        request = ListResourceTemplatesParams.model_validate(params_dict(params))
        core = await ls.ready_core()
        if request.server is not None:
            core.hub.connection(request.server)
        items = await core.hub.broker.list_templates(request.server)
        return ListResourceTemplatesResult(items=items).to_wire()

    @server.feature(methods.COMPLETE_ARGUMENT)
    @rpc_errors
    async def complete_argument(ls: HostBridgeServer, params: Any) -> dict[str, Any]:
        from host_bridge.hosts.lsp.protocol import CompleteArgumentParams

        request = CompleteArgumentParams.model_validate(params_dict(params))
        core = await ls.ready_core()
        completion = await core.hub.broker.complete(
            request.server, request.uri_template, request.name, request.value, request.arguments
        )
        return completion.to_wire()

    @server.feature(methods.READ_RESOURCE)
    @rpc_errors
    async def read_resource(ls: HostBridgeServer, params: Any) -> dict[str, Any]:
        from host_bridge.hosts.lsp.protocol import ReadResourceParams

        request = ReadResourceParams.model_validate(params_dict(params))
        core = await ls.ready_core()
        core.hub.connection(request.server)
        result = await core.hub.broker.read(
            request.server, request.uri, uri_template=request.uri_template, arguments=request.arguments
        )
        return result.to_wire()

    @server.feature(methods.SUBSCRIBE)
    @rpc_errors
    async def subscribe(ls: HostBridgeServer, params: Any) -> None:
        from host_bridge.hosts.lsp.protocol import SubscriptionParams

        request = SubscriptionParams.model_validate(params_dict(params))
        core = await ls.ready_core()
        await core.hub.broker.subscribe(request.server, request.uri)

    @server.feature(methods.UNSUBSCRIBE)
    @rpc_errors
    async def unsubscribe(ls: HostBridgeServer, params: Any) -> None:
        from host_bridge.hosts.lsp.protocol import SubscriptionParams

        request = SubscriptionParams.model_validate(params_dict(params))
        core = await ls.ready_core()
        await core.hub.broker.unsubscribe(request.server, request.uri)
