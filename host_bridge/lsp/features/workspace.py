"""Workspace folders → candidate roots and server configs, re-applied when the editor's folders change.

Bursts of ``workspace/didChangeWorkspaceFolders`` are debounced into one detection, one reconfiguration of
the hub and one batch of consent prompts. Config problems (a bad server entry, a broken ``.vscode/mcp.json``)
are logged on every load and shown to the user (``window/showMessage``) when they are new.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import TYPE_CHECKING

from lsprotocol import types

from host_bridge.lsp.server import HostBridgeServer

if TYPE_CHECKING:
    from host_bridge.hub.config import ConfigProblem
    from host_bridge.lsp.server import Core
    from host_bridge.workspace.models import WorkspaceFolder

# Detection, the config loader and the models are imported when first used, after ``initialize`` is answered.

logger = logging.getLogger(__name__)

DEBOUNCE = 0.2
"""Seconds of quiet after a folder change before the workspace is detected again."""
MAX_DELAY = 2.0
"""Seconds after the first change of a burst by which the workspace is detected again, however long the burst."""
SHOWN_PROBLEMS = 5
"""Config problems listed in one message to the user; the rest are only in the log."""


class WorkspaceSync:
    """Keeps the registry's candidates and the hub's servers in step with the editor's folders."""

    def __init__(self, server: HostBridgeServer, debounce: float = DEBOUNCE, max_delay: float = MAX_DELAY) -> None:
        self._server = server
        self._debounce = debounce
        self._max_delay = max_delay
        self._dirty = asyncio.Event()
        """Set when the folders changed since the last refresh."""
        self._problems: frozenset[str] = frozenset()
        """The config problems of the last load, so that one already shown is not shown again."""
        self.refreshes = 0
        """How many refreshes ran (one per burst of changes)."""

    def folders_changed(self, added: list[WorkspaceFolder], removed: list[str]) -> None:
        """Apply an editor change to the folder list and schedule a refresh."""
        kept = [f for f in self._server.folders if f.uri not in removed]
        known = {f.uri for f in kept}
        kept.extend(f for f in added if f.uri not in known)
        self._server.folders = kept
        self._dirty.set()

    async def start(self, core: Core) -> None:
        """Apply the initial folders, then keep refreshing in the core's task group."""
        try:
            await self._refresh(core)
        finally:
            self._server.ready.set()
        core.tasks.start_soon(self._run, core, name="workspace sync")

    async def _run(self, core: Core) -> None:
        import anyio

        while True:
            await self._dirty.wait()
            deadline = anyio.current_time() + self._max_delay
            while True:
                self._dirty.clear()
                await anyio.sleep(min(self._debounce, max(0.0, deadline - anyio.current_time())))
                if not self._dirty.is_set() or anyio.current_time() >= deadline:
                    break
            self._dirty.clear()
            try:
                await self._refresh(core)
            except Exception:
                logger.exception("re-reading the workspace failed; keeping the previous candidates and servers")

    async def _refresh(self, core: Core) -> None:
        import anyio.to_thread

        from host_bridge.hub.config import load_servers
        from host_bridge.workspace.detect import detect

        folders = list(self._server.folders)
        options = self._server.options
        detection = await anyio.to_thread.run_sync(detect, folders)
        for notice in detection.notices:
            logger.warning("%s", notice.message)
        servers = await anyio.to_thread.run_sync(
            partial(load_servers, options.servers, _folder_paths(folders), read_workspace=options.read_workspace_config)
        )
        self._report(servers.problems)
        self.refreshes += 1
        core.registry.set_candidates(detection.candidates)
        core.hub.configure(servers.servers)
        self._server.consent.review()

    def _report(self, problems: tuple[ConfigProblem, ...]) -> None:
        """Log every config problem; show the user, in one message, those the last load did not have."""
        texts = [problem.describe("initializationOptions.servers") for problem in problems]
        for text in texts:
            logger.warning("%s", text)
        new = [text for text in dict.fromkeys(texts) if text not in self._problems]
        self._problems = frozenset(texts)
        if not new:
            return
        listed = "; ".join(new[:SHOWN_PROBLEMS])
        more = f"; and {len(new) - SHOWN_PROBLEMS} more (see the log)" if len(new) > SHOWN_PROBLEMS else ""
        self._server.show_to_user(
            types.MessageType.Warning, f"Part of the MCP server configuration could not be used: {listed}{more}"
        )


def _folder_paths(folders: list[WorkspaceFolder]) -> list[str]:
    from host_bridge.uris import UriError, canonical_path, parse_file_uri

    paths: list[str] = []
    for folder in folders:
        try:
            paths.append(canonical_path(parse_file_uri(folder.uri)))
        except (UriError, OSError):
            continue
    return paths


def setup(server: HostBridgeServer) -> None:
    """Register the folder-change handler and the sync state."""
    server.sync = WorkspaceSync(server)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_folders(ls: HostBridgeServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        from host_bridge.workspace.models import WorkspaceFolder

        added = [WorkspaceFolder(uri=f.uri, name=f.name) for f in params.event.added]
        ls.sync.folders_changed(added, [f.uri for f in params.event.removed])
