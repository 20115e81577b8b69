"""Workspace folders → candidate roots and server configs, re-applied when anything they come from changes.

Bursts of ``workspace/didChangeWorkspaceFolders`` are debounced into one detection, one reconfiguration of the hub
and one batch of consent prompts. The servers' config files (``.vscode/mcp.json``, ``.mcp.json`` and the envFiles
they name) are watched: adding, editing or removing one re-loads the servers, and a server whose launch
configuration changed restarts under its new identity (and is asked again). ``workspace/didChangeConfiguration``
with ``settings.hostBridge.servers`` (or ``readWorkspaceConfig``) does the same for the editor's settings. Config
problems (a bad server entry, a broken ``.vscode/mcp.json``) are logged on every load and shown to the user
(``window/showMessage``) when they are new.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.to_thread
from lsprotocol import types

from host_bridge.core import Core
from host_bridge.directory_watch import DirectoryWatcher
from host_bridge.hosts.lsp.feature import Feature
from host_bridge.hosts.lsp.features.consent import ConsentFeature
from host_bridge.hub.config import ConfigProblem, ServerSet, load_servers
from host_bridge.uris import UriError, canonical_path, parse_file_uri
from host_bridge.workspace.detect import detect
from host_bridge.workspace.models import WorkspaceFolder

if TYPE_CHECKING:
    from host_bridge.hosts.lsp.server import HostBridgeServer

logger = logging.getLogger(__name__)

DEBOUNCE = 0.2
"""Seconds of quiet after a change before the workspace (or the server configs) is read again."""
MAX_DELAY = 2.0
"""Seconds after the first change of a burst by which the workspace is read again, however long the burst."""
FIRST_DETECTION_WAIT = 2.0
"""Seconds the servers wait for a detection before they start with the candidates known so far (a repository
built to slow detection down must not keep the user's own servers from starting)."""
SHOWN_PROBLEMS = 5
"""Config problems listed in one message to the user; the rest are only in the log."""
CONFIG_FILES = (os.path.join(".vscode", "mcp.json"), ".mcp.json")
"""The servers' config files in each workspace folder, relative to it."""
_WATCH_SETTLE = 0.25
"""Seconds after the watched folders change before the configs are read once more (a file written while the new
OS watch was being set up is not missed)."""


class WorkspaceFeature(Feature):
    """Keeps the registry's candidates and the hub's servers in step with the editor's folders and config files."""

    def __init__(
        self,
        server: HostBridgeServer,
        core: Core,
        consent: ConsentFeature,
        debounce: float = DEBOUNCE,
        max_delay: float = MAX_DELAY,
    ) -> None:
        self._server = server
        self._core = core
        self._consent = consent
        self._debounce = debounce
        self._max_delay = max_delay
        self._dirty = asyncio.Event()
        """Set when something changed since the last refresh."""
        self._detect_next = True
        """The next refresh detects candidates again (not only server configs)."""
        self._problems: frozenset[str] = frozenset()
        """The config problems of the last load, so that one already shown is not shown again."""
        self._settings: dict[str, Any] | None = None
        """``hostBridge.servers`` from ``workspace/didChangeConfiguration``, replacing the initialization option."""
        self._read_workspace: bool | None = None
        """``hostBridge.readWorkspaceConfig`` from ``workspace/didChangeConfiguration``."""
        self._watched: dict[str, frozenset[str]] = {}
        """Watched directory → the file names in it whose change re-loads the servers."""
        self._watcher: DirectoryWatcher | None = None
        self._generation = 0
        """Number of the latest detection started; an older one finishing late is not applied."""
        self.refreshes = 0
        """How many detections ran (one per burst of folder changes)."""
        self.reloads = 0
        """How many times the server configs were loaded."""

    def folders_changed(self) -> None:
        """The editor's folders changed: schedule a refresh."""
        self.redetect()

    def redetect(self) -> None:
        """Detect the candidates (and load the servers) again soon."""
        self._detect_next = True
        self._dirty.set()

    def reload_servers(self) -> None:
        """Load the server configs again soon (candidates stay as they are)."""
        self._dirty.set()

    def settings_changed(self, settings: object) -> None:
        """``workspace/didChangeConfiguration``: take ``hostBridge.servers`` and ``readWorkspaceConfig`` from it."""
        if not isinstance(settings, dict):
            return
        bridge = cast(dict[str, Any], settings).get("hostBridge")
        if not isinstance(bridge, dict):
            return
        bridge = cast(dict[str, Any], bridge)
        servers = bridge.get("servers")
        if isinstance(servers, dict):
            self._settings = {str(k): v for k, v in cast(dict[object, Any], servers).items()}
        elif "servers" in bridge:
            logger.warning("hostBridge.servers must be an object of servers; ignoring the changed setting")
        read = bridge.get("readWorkspaceConfig")
        if isinstance(read, bool):
            self._read_workspace = read
        self.reload_servers()

    async def initialized(self) -> None:
        """Apply the initial folders, then keep refreshing in the core's task group."""
        core = self._core
        self._watcher = DirectoryWatcher(self._on_files_changed, debounce_ms=50)
        core.tasks.start_soon(self._watcher.run, name="config file watcher")
        self._detect_next = False
        await self._refresh(core, detect=True)
        core.tasks.start_soon(self._run, core, name="workspace sync")

    async def _run(self, core: Core) -> None:
        while True:
            await self._dirty.wait()
            deadline = anyio.current_time() + self._max_delay
            while True:
                self._dirty.clear()
                await anyio.sleep(min(self._debounce, max(0.0, deadline - anyio.current_time())))
                if not self._dirty.is_set() or anyio.current_time() >= deadline:
                    break
            self._dirty.clear()
            detect, self._detect_next = self._detect_next, False
            try:
                await self._refresh(core, detect=detect)
            except Exception:
                logger.exception("re-reading the workspace failed; keeping the previous candidates and servers")

    async def _refresh(self, core: Core, *, detect: bool) -> None:
        late: list[bool] = []  # set once this refresh stopped waiting: the detection then asks its own questions
        if detect:
            self._generation += 1
            detected = anyio.Event()
            core.tasks.start_soon(self._detect, core, self._generation, detected, late, name="detection")
            with anyio.move_on_after(FIRST_DETECTION_WAIT):
                await detected.wait()
            if not detected.is_set():
                late.append(True)
                logger.warning(
                    "detecting the workspace's folders takes longer than %g s; the servers start meanwhile",
                    FIRST_DETECTION_WAIT,
                )
        await self._load_servers(core)
        self._consent.review()

    async def _detect(self, core: Core, generation: int, done: anyio.Event, late: list[bool]) -> None:
        """Detect the candidates in a worker thread and apply them, unless a newer detection started meanwhile."""

        try:
            settings = self._server.options.detection.settings()
            detection = await anyio.to_thread.run_sync(detect, _workspace_folders(self._server.folders), settings)
        except Exception:
            logger.exception("detecting the workspace's folders failed; keeping the previous candidates")
            done.set()
            return
        if generation == self._generation:
            for notice in detection.notices:
                logger.warning("%s", notice.message)
            self.refreshes += 1
            core.registry.set_candidates(detection.candidates)
            if late:
                self._consent.review()
        done.set()

    async def _load_servers(self, core: Core) -> None:

        options = self._server.options
        read_workspace = options.read_workspace_config if self._read_workspace is None else self._read_workspace
        settings = options.servers if self._settings is None else self._settings
        folders = self._server.folders

        def load() -> tuple[list[str], ServerSet]:
            paths = _folder_paths(folders)  # off the loop: a realpath each, for thousands of folders
            return paths, load_servers(settings, paths, read_workspace=read_workspace)

        paths, servers = await anyio.to_thread.run_sync(load)
        self.reloads += 1
        self._report(servers.problems)
        self._watch(paths if read_workspace else [], servers)
        await core.hub.configure(servers.servers)

    def _watch(self, folders: list[str], servers: ServerSet) -> None:
        """Watch the config files of ``folders`` and the envFiles of ``servers``."""
        watched: dict[str, set[str]] = {}
        for folder in folders:
            for relative in CONFIG_FILES:
                directory, name = os.path.split(os.path.join(folder, relative))
                watched.setdefault(directory, set()).add(name)
            watched.setdefault(folder, set()).add(".vscode")
        for config in servers.servers:
            if config.env_file is not None:
                directory, name = os.path.split(config.env_file)
                watched.setdefault(directory, set()).add(name)
        frozen = {directory: frozenset(names) for directory, names in watched.items()}
        if frozen != self._watched and self._watcher is not None:
            self._watched = frozen
            self._watcher.watch(frozen)
            # A file written while the new OS watch was being set up is read by this second look.
            asyncio.get_running_loop().call_later(_WATCH_SETTLE, self.reload_servers)

    def _on_files_changed(self, paths: set[str]) -> None:
        for path in paths:
            directory, name = os.path.split(path)
            if name in self._watched.get(directory, ()):
                logger.info("%s changed; loading the MCP server configs again", path)
                self.reload_servers()
                return

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


def _workspace_folders(folders: list[tuple[str, str | None]]) -> list[WorkspaceFolder]:
    return [WorkspaceFolder(uri=uri, name=name) for uri, name in folders]


def _folder_paths(folders: list[tuple[str, str | None]]) -> list[str]:
    paths: list[str] = []
    for uri, _ in folders:
        try:
            paths.append(canonical_path(parse_file_uri(uri)))
        except (UriError, OSError):
            continue
    return paths
