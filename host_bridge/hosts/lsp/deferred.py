"""Everything the sidecar imports only after ``initialize`` was answered, in one place.

The shell that answers ``initialize`` (:mod:`~host_bridge.hosts.lsp.server`, :mod:`~host_bridge.hosts.lsp.lifecycle`,
:mod:`~host_bridge.hosts.lsp.feature`, :mod:`~host_bridge.hosts.lsp.messages`, the framing) imports pygls, lsprotocol
and the standard library only: pydantic, the models and the core (the ``mcp`` SDK) cost most of a second to import,
and a bare pygls server is the budget (``bench/sidecar.py``: at most 1.10×). What comes later is reached through this
module: :func:`load` imports the core and the features in a worker thread after ``initialized``; the rest is cheap
once it ran. The models of the message table are imported by :mod:`~host_bridge.hosts.lsp.messages` on first use
(the first request's params). A test checks that making the server imports none of them.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from host_bridge.core import Core
    from host_bridge.hosts.lsp.feature import Feature
    from host_bridge.hosts.lsp.protocol import InitializationOptions
    from host_bridge.hosts.lsp.server import HostBridgeServer


def load() -> None:
    """Import the core and the features (call it in a worker thread: it takes most of a second)."""
    for module in ("host_bridge.core", "host_bridge.hosts.lsp.features"):
        importlib.import_module(module)


def initialization_options(raw: object) -> tuple[InitializationOptions, list[str]]:
    """``initializationOptions`` validated field by field, with a sentence per value replaced by its default."""
    from host_bridge.hosts.lsp.protocol import InitializationOptions

    return InitializationOptions.lenient(raw)


@contextlib.asynccontextmanager
async def open_core(server: HostBridgeServer) -> AsyncGenerator[Core]:
    """:func:`host_bridge.core.open_core` as the editor's options say (storage folder, default sandbox), whose events
    reach the editor and the features through :class:`~host_bridge.hosts.lsp.features.events.EditorEvents`."""
    from host_bridge.core import CoreSettings, open_core
    from host_bridge.hosts.lsp.features.events import EditorEvents
    from host_bridge.hub.settings import ConnectionSettings
    from host_bridge.storage import default_storage_dir

    options = server.options
    settings = CoreSettings(connection=ConnectionSettings(sandbox=options.sandbox, network=options.network))
    async with open_core(options.storage_dir or default_storage_dir(), EditorEvents(server), settings=settings) as core:
        yield core


def create_features(server: HostBridgeServer, core: Core) -> Sequence[Feature]:
    """Every feature, in order, each given what it needs (:func:`host_bridge.hosts.lsp.features.create_features`)."""
    from host_bridge.hosts.lsp.features import create_features

    return create_features(server, core)


def kill_server_groups() -> None:
    """SIGKILL whatever is left of every MCP server's process group (nothing to do if none was ever started)."""
    if "host_bridge.hub.process_groups" in sys.modules:
        from host_bridge.hub.process_groups import kill_all_server_groups

        kill_all_server_groups()
