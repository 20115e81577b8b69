"""``hostBridge/status`` and ``hostBridge/restartServer``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from host_bridge.core import Core
from host_bridge.hosts.lsp import messages
from host_bridge.hosts.lsp.feature import Feature, request
from host_bridge.hosts.lsp.features.consent import ConsentFeature
from host_bridge.hosts.lsp.protocol import ServerParams, StatusParams, StatusResult
from host_bridge.hub.models import ServerState

if TYPE_CHECKING:
    from host_bridge.hosts.lsp.server import HostBridgeServer


class StatusFeature(Feature):
    """What every server and candidate folder is now; restarting a server."""

    def __init__(self, server: HostBridgeServer, core: Core, consent: ConsentFeature) -> None:
        self._server = server
        self._core = core
        self._consent = consent

    @request(messages.STATUS)
    async def status(self, params: StatusParams) -> StatusResult:
        """Every server and candidate known now; ``ready: false`` until the workspace was first applied (the table
        lets this request answer early, docs/protocol.md "Start-up")."""
        core = self._core
        return StatusResult(
            servers=tuple(core.hub.statuses()), candidates=core.registry.candidates, ready=self._server.ready.is_set()
        )

    @request(messages.RESTART_SERVER)
    async def restart_server(self, params: ServerParams) -> None:
        """Restart a server; a workspace-defined one that waits for trust is asked about again."""
        hub = self._core.hub
        hub.restart(params.server)
        if hub.connection(params.server).state is ServerState.AWAITING_TRUST:
            self._consent.ask_trust_again(params.server)
