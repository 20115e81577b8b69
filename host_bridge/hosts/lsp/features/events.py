"""The core's events as the editor hears them: :class:`host_bridge.hub.hub.HubEvents` for the sidecar.

A server's status becomes ``hostBridge/serverChanged`` (then the features hear it), resource changes become
``hostBridge/resourcesChanged`` and ``hostBridge/resourceUpdated``, a server's stderr lines and notices go to the
editor's log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from host_bridge.hosts.lsp import messages
from host_bridge.hosts.lsp.protocol import ResourceUpdatedNotification, ServerNotification
from host_bridge.hub.models import ServerStatus
from host_bridge.sandbox.refusals import Refusal

if TYPE_CHECKING:
    from host_bridge.hosts.lsp.server import HostBridgeServer


class EditorEvents:
    """Implements :class:`host_bridge.hub.hub.HubEvents` by telling the editor (and the features)."""

    def __init__(self, server: HostBridgeServer) -> None:
        self._server = server
        self._told: dict[str, ServerStatus] = {}
        """The last status the editor was sent of each server."""

    def server_changed(self, status: ServerStatus) -> None:
        """Tell the editor unless it was told exactly this last time (a starting server's process came up: only its
        folders' question depends on that), then the features."""
        if self._told.get(status.id) != status:
            self._told[status.id] = status
            self._server.notify_editor(messages.SERVER_CHANGED, status)
        self._server.to_features(lambda feature: feature.server_changed(status), replay=False)

    def server_log(self, server_id: str, line: str) -> None:
        """Forward an MCP server's stderr line to the editor's log."""
        self._server.log_to_editor(types.MessageType.Log, f"[{server_id}] {line}")

    def resources_changed(self, server_id: str) -> None:
        """``hostBridge/resourcesChanged``."""
        self._server.notify_editor(messages.RESOURCES_CHANGED, ServerNotification(server=server_id))

    def resource_updated(self, server_id: str, uri: str) -> None:
        """``hostBridge/resourceUpdated``."""
        self._server.notify_editor(messages.RESOURCE_UPDATED, ResourceUpdatedNotification(server=server_id, uri=uri))

    def notice(self, server_id: str | None, message: str) -> None:
        """Something the user should know."""
        prefix = f"[{server_id}] " if server_id else ""
        self._server.log_to_editor(types.MessageType.Warning, prefix + message)

    def sandbox_refused(self, server_id: str, refusal: Refusal) -> None:
        """The features decide what to ask (the consent feature offers to share or to let it read)."""
        self._server.to_features(lambda feature: feature.sandbox_refused(server_id, refusal), replay=False)
