"""Shared folders that become unusable, or usable again, are shown to the user.

A folder whose symlink now leads elsewhere makes the workspace be detected again, so the new target is offered (and
asked about) like a new folder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from host_bridge.core import Core
from host_bridge.hosts.lsp.feature import Feature
from host_bridge.hosts.lsp.features.workspace import WorkspaceFeature
from host_bridge.roots import Access, AccessNotice

if TYPE_CHECKING:
    from host_bridge.hosts.lsp.server import HostBridgeServer


class NoticesFeature(Feature):
    """Shows the registry's access notices (``window/showMessage``)."""

    def __init__(self, server: HostBridgeServer, core: Core, workspace: WorkspaceFeature) -> None:
        self._server = server
        self._core = core
        self._workspace = workspace

    async def initialized(self) -> None:
        """Listen to the registry's notices (before the first detection, so none is missed)."""
        self._core.registry.subscribe_notices(self._shown)

    def _shown(self, notice: AccessNotice) -> None:
        self._server.show_to_user(_notice_kind(notice.access), notice.message)
        if notice.access is Access.MOVED:
            self._workspace.redetect()


def _notice_kind(access: Access) -> types.MessageType:
    """A shared folder that became unusable is a warning; one that recovered is news."""
    return types.MessageType.Info if access is Access.OK else types.MessageType.Warning
