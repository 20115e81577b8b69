"""``initialize`` / ``initialized`` / ``shutdown``: read the editor's options, start and stop the core, and
watch the editor's process.

``initialize`` is answered at once: the ``mcp`` SDK is imported and servers are started only after
``initialized``, in the background.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING, Any, cast

from lsprotocol import types

from host_bridge.hosts.lsp.server import HostBridgeServer

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from host_bridge.core import Core
    from host_bridge.roots import Access

# The core, pydantic and the models are imported after ``initialize`` is answered, where they are used.

logger = logging.getLogger(__name__)

WATCHDOG_INTERVAL = 1.0
"""Seconds between checks that the editor's process is still alive."""


def setup(server: HostBridgeServer) -> None:
    """Register the lifecycle handlers."""

    @server.feature(types.INITIALIZE)
    def initialize(ls: HostBridgeServer, params: types.InitializeParams) -> None:
        ls.set_initial_folders(_folders(params))
        # Validated in `initialized`: pydantic is not imported before the editor has its answer.
        ls.raw_options = params.initialization_options
        ls.consent_ui = _declares_consent_ui(params.capabilities)
        if params.process_id is not None:
            ls.spawn(_watch_editor(ls, params.process_id), name="editor watchdog")

    @server.feature(types.INITIALIZED)
    def initialized(ls: HostBridgeServer, params: types.InitializedParams) -> None:
        if ls.core_started:
            logger.warning("ignoring a second initialized notification; the core runs already")
            return
        _ = ls.options  # validated now, so a bad option is reported at start
        ls.start_core(_show_notices(ls), ls.sync.start)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: HostBridgeServer, params: None) -> None:
        await ls.stop_core()


def _notice_kind(access: Access) -> types.MessageType:
    """A shared folder that became unusable is a warning; one that recovered is news."""
    from host_bridge.roots import Access

    return types.MessageType.Info if access is Access.OK else types.MessageType.Warning


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


def _show_notices(ls: HostBridgeServer) -> Callable[[Core], Awaitable[None]]:
    """A core starter: shared folders that become unusable (or recover) are shown to the user; one whose symlink
    now leads elsewhere makes the workspace be detected again, so the new target is offered (asked about)."""

    async def start(core: Core) -> None:
        from host_bridge.roots import Access, AccessNotice

        def shown(notice: AccessNotice) -> None:
            ls.show_to_user(_notice_kind(notice.access), notice.message)
            if notice.access is Access.MOVED:
                ls.sync.redetect()

        core.registry.subscribe_notices(shown)

    return start


async def _watch_editor(ls: HostBridgeServer, pid: int) -> None:
    """Exit like on end of input once the editor's process is gone (it may not close our stdin)."""
    while True:
        await asyncio.sleep(WATCHDOG_INTERVAL)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            logger.warning("the editor (process %d) is gone; stopping", pid)
            ls.request_exit(0)
            return
        except PermissionError:
            continue
        if _is_zombie(pid):
            ls.request_exit(0)
            return


def _is_zombie(pid: int) -> bool:
    """An editor that exited but was not reaped yet (we may be its child) counts as gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[-1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False
