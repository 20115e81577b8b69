"""This sidecar's servers, published for ``host-bridge consent`` in a terminal (:mod:`host_bridge.hub.running`).

The file is written after the core opened, whenever a server's state changes or the folders change (a burst of changes
is one write, once they pause for ``QUIET`` seconds, in a worker thread), and removed when the core closes.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from host_bridge.core import Core
from host_bridge.hosts.lsp.feature import Feature
from host_bridge.hub.models import ServerStatus
from host_bridge.hub.running import RunningServer, RunningSidecar, publish, withdraw
from host_bridge.storage import default_storage_dir
from host_bridge.uris import UriError, parse_file_uri

if TYPE_CHECKING:
    from host_bridge.hosts.lsp.server import HostBridgeServer

QUIET = 0.05
"""Seconds without a change before the file is written again."""


def storage_of(server: HostBridgeServer) -> str:
    """The storage folder this sidecar's core uses."""
    return server.options.storage_dir or default_storage_dir()


class RunningFeature(Feature):
    """Keeps ``sidecars/<pid>.json`` in the storage folder in step with this sidecar's servers."""

    def __init__(self, server: HostBridgeServer, core: Core) -> None:
        self._server = server
        self._core = core
        self._storage = storage_of(server)
        self._changed = anyio.Event()
        self._closed = False
        """Shutting down: nothing is published any more."""

    async def initialized(self) -> None:
        """Publish now, then whenever something changed, until the core closes."""
        self._core.tasks.start_soon(self._keep, name="running servers")

    def server_changed(self, status: ServerStatus) -> None:
        """A server's state changed."""
        self._changed.set()

    def folders_changed(self) -> None:
        """The editor's folders changed."""
        self._changed.set()

    async def shutdown(self) -> None:
        """Terminal commands stop addressing this sidecar once it is shutting down."""
        self._closed = True
        await anyio.to_thread.run_sync(withdraw, self._storage, os.getpid())

    async def _keep(self) -> None:
        try:
            while not self._closed:
                uris = [uri for uri, _ in self._server.folders]
                await anyio.to_thread.run_sync(self._publish, uris, self._servers())
                await self._changed.wait()
                while True:  # a burst of changes (an editor's thousands of folder changes) is one write
                    self._changed = anyio.Event()
                    with anyio.move_on_after(QUIET) as quiet:
                        await self._changed.wait()
                    if quiet.cancelled_caught:
                        break
            await anyio.sleep_forever()
        finally:
            withdraw(self._storage, os.getpid())

    def _publish(self, uris: list[str], servers: tuple[RunningServer, ...]) -> None:
        """Write the file (in a worker thread: the folders' paths are thousands of URIs to parse)."""
        folders: list[str] = []
        for uri in uris:
            try:
                folders.append(parse_file_uri(uri))
            except UriError:
                continue
        publish(self._storage, RunningSidecar(pid=os.getpid(), folders=tuple(folders), servers=servers))

    def _servers(self) -> tuple[RunningServer, ...]:
        return tuple(
            RunningServer(
                id=c.id,
                identity=c.config.identity,
                state=c.state.value,
                workspace_defined=c.config.workspace_defined,
            )
            for c in self._core.hub.connections
        )
