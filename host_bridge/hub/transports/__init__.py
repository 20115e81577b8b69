"""How the hub reaches MCP servers: one module per transport, each behind :class:`.base.Transport`.

A server's transport is chosen once, from its config, when the hub makes its connection (:func:`transport_for`);
:class:`~host_bridge.hub.connection.ServerConnection` then opens it for every start and never asks which one it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from host_bridge.hub.config import ServerConfig
from host_bridge.hub.settings import ConnectionSettings
from host_bridge.hub.transports.base import Transport
from host_bridge.hub.transports.http import HttpTransport
from host_bridge.hub.transports.stdio import StdioTransport


def transport_for(
    config: ServerConfig,
    settings: ConnectionSettings,
    *,
    allowed_read: Callable[[], Sequence[str]] = tuple,
    workspace_folders: Callable[[], Sequence[str]] = tuple,
    shared_read_only: Callable[[], Sequence[str]] = tuple,
) -> Transport:
    """The transport of ``config``'s server. ``allowed_read`` (the paths the user let it read after a refusal) and
    ``workspace_folders`` (the candidate folders) and ``shared_read_only`` (its folders shared read only) are asked at
    each start of a server host_bridge runs itself."""
    match config.transport:
        case "stdio":
            return StdioTransport(
                config,
                settings,
                allowed_read=allowed_read,
                workspace_folders=workspace_folders,
                shared_read_only=shared_read_only,
            )
        case "http":
            return HttpTransport(config, settings)
