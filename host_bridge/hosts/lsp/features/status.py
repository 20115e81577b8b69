"""``hostBridge/status`` and ``hostBridge/restartServer``."""

from __future__ import annotations

from typing import Any

from host_bridge.hosts.lsp import methods
from host_bridge.hosts.lsp.server import HostBridgeServer, params_dict, rpc_errors

STATUS_WAIT = 0.5
"""Seconds ``hostBridge/status`` waits for the first reading of the workspace before answering with what is known."""


def setup(server: HostBridgeServer) -> None:
    """Register the status requests."""

    @server.feature(methods.STATUS)
    @rpc_errors
    async def status(ls: HostBridgeServer, params: Any) -> dict[str, Any]:

        if not ls.core_started:
            await ls.ready_core()  # the error saying initialize/initialized come first
        # While the core is still being imported (in a worker) nothing is configured: answer at once, importing
        # nothing (the import lock would make this wait for the whole import).
        core = await ls.core_within(STATUS_WAIT) if ls.core is not None else None
        if core is None:
            return {"servers": [], "candidates": [], "ready": False}
        from host_bridge.hosts.lsp.protocol import StatusParams, StatusResult

        StatusParams.model_validate(params_dict(params))
        return StatusResult(
            servers=tuple(core.hub.statuses()), candidates=core.registry.candidates, ready=ls.ready.is_set()
        ).to_wire()

    @server.feature(methods.RESTART_SERVER)
    @rpc_errors
    async def restart_server(ls: HostBridgeServer, params: Any) -> None:
        from host_bridge.hosts.lsp.protocol import ServerParams

        request = ServerParams.model_validate(params_dict(params))
        core = await ls.ready_core()
        core.hub.restart(request.server)
        if core.hub.connection(request.server).state.value == "awaitingTrust":
            ls.consent.ask_trust_again(request.server)
