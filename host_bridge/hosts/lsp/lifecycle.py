"""The standard LSP messages the shell answers itself: ``initialize``, ``initialized``, ``shutdown``, the workspace
folders and the configuration; and the watch on the editor's process. ``shutdown`` is answered before anything
stops; every MCP server is stopped after the answer and before the process exits.

``initialize`` is answered at once: the core and the features are loaded only after ``initialized``, in the
background. Folder and configuration changes are kept by the server and passed to the features (replayed to them if
they come before the features exist).
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING, Any, cast

from lsprotocol import types

if TYPE_CHECKING:
    from host_bridge.hosts.lsp.server import HostBridgeServer

logger = logging.getLogger(__name__)

WATCHDOG_INTERVAL = 1.0
"""Seconds between checks that the editor's process is still alive."""


def register(server: HostBridgeServer) -> None:
    """Register the handlers of the standard messages."""

    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        server.folders = _folders(params)
        # Validated in `initialized`: pydantic is not imported before the editor has its answer.
        server.raw_options = params.initialization_options
        server.consent_ui = _declares_consent_ui(params.capabilities)
        if params.process_id is not None:
            server.spawn(_watch_editor(server, params.process_id), name="editor watchdog")

    @server.feature(types.INITIALIZED)
    def initialized(params: types.InitializedParams) -> None:
        if server.core_started:
            logger.warning("ignoring a second initialized notification; the core runs already")
            return
        _ = server.options  # validated now, so a bad option is reported at start
        server.start_core()

    @server.feature(types.SHUTDOWN)
    def shutdown(params: None) -> None:
        # Answered at once: editors wait for it only briefly (eglot 1.5 s) and then kill the sidecar, while a
        # server's stop sequence takes seconds. The servers stop after the answer; `exit` waits for that.
        server.begin_shutdown()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_folders(params: types.DidChangeWorkspaceFoldersParams) -> None:
        server.change_folders([(f.uri, f.name) for f in params.event.added], [f.uri for f in params.event.removed])
        server.to_features(lambda feature: feature.folders_changed())

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        settings: object = params.settings
        server.to_features(lambda feature: feature.settings_changed(settings))


def _folders(params: types.InitializeParams) -> list[tuple[str, str | None]]:
    """The editor's folders as ``(uri, name)``."""
    if params.workspace_folders:
        return [(f.uri, f.name) for f in params.workspace_folders]
    if params.root_uri:
        return [(params.root_uri, None)]
    return []


def _declares_consent_ui(capabilities: types.ClientCapabilities) -> bool:
    experimental: object = capabilities.experimental
    if not isinstance(experimental, dict):
        return False
    bridge: object = cast(dict[str, Any], experimental).get("hostBridge")
    return isinstance(bridge, dict) and cast(dict[str, Any], bridge).get("consentUi") is True


async def _watch_editor(server: HostBridgeServer, pid: int) -> None:
    """Exit like on end of input once the editor's process is gone (it may not close our stdin)."""
    while True:
        await asyncio.sleep(WATCHDOG_INTERVAL)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            logger.warning("the editor (process %d) is gone; stopping", pid)
            server.request_exit(0)
            return
        except PermissionError:
            continue
        if _is_zombie(pid):
            server.request_exit(0)
            return


def _is_zombie(pid: int) -> bool:
    """An editor that exited but was not reaped yet (we may be its child) counts as gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[-1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False
