"""``hostBridge/status`` and ``hostBridge/restartServer``."""

from __future__ import annotations

from typing import Any

from host_bridge.lsp import protocol
from host_bridge.lsp.protocol import ServerParams, StatusParams, StatusResult
from host_bridge.lsp.server import HostBridgeServer, params_dict, rpc_errors


def setup(server: HostBridgeServer) -> None:
    """Register the status requests."""

    @server.feature(protocol.STATUS)
    @rpc_errors
    async def status(ls: HostBridgeServer, params: Any) -> dict[str, Any]:
        StatusParams.model_validate(params_dict(params))
        core = await ls.ready_core()
        return StatusResult(servers=tuple(core.hub.statuses()), candidates=core.registry.candidates).to_wire()

    @server.feature(protocol.RESTART_SERVER)
    @rpc_errors
    async def restart_server(ls: HostBridgeServer, params: Any) -> None:
        request = ServerParams.model_validate(params_dict(params))
        core = await ls.ready_core()
        core.hub.restart(request.server)
