"""The agent gateway in the editor sidecar (:mod:`host_bridge.gateway`): it listens before the workspace's servers
start and is registered under the editor's workspace folders, so ``host-bridge attach`` finds this window."""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from host_bridge.core import Core
from host_bridge.gateway.service import Gateway
from host_bridge.hosts.lsp.feature import Feature
from host_bridge.private_files import UnsafeFileError
from host_bridge.storage import default_storage_dir
from host_bridge.uris import UriError, parse_file_uri

if TYPE_CHECKING:
    from host_bridge.hosts.lsp.server import HostBridgeServer

logger = logging.getLogger(__name__)


class GatewayFeature(Feature):
    """Opens the gateway for the core's lifetime; one that cannot open is logged, and the sidecar runs on without it."""

    def __init__(self, server: HostBridgeServer, core: Core) -> None:
        self._server = server
        self._core = core
        self.gateway = Gateway(core.hub, server.options.storage_dir or default_storage_dir(), folders=self._paths)
        """The gateway agents connect to."""

    async def initialized(self) -> None:
        """Start listening (before the workspace's servers start, so their clients get the agents' callbacks)."""
        await self._core.tasks.start(self._serve, name="agent gateway")

    def folders_changed(self) -> None:
        """Register under the new folders."""
        self.gateway.folders_changed()

    async def _serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            await self.gateway.serve(task_status=task_status)
        except (OSError, UnsafeFileError) as error:
            logger.error("agents cannot use this window's MCP servers: the gateway did not open: %s", error)
            with contextlib.suppress(RuntimeError):  # it failed before it listened
                task_status.started()

    def _paths(self) -> list[str]:
        paths: list[str] = []
        for uri, _name in self._server.folders:
            try:
                paths.append(parse_file_uri(uri))
            except UriError:
                continue
        return paths
