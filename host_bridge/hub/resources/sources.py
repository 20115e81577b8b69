"""Where the resource broker's servers come from, and how their failures become hub errors.

:class:`ResourceSources` is what the broker needs of the hub; :func:`upstream_error` turns a failed MCP request into
the :class:`~host_bridge.hub.errors.UpstreamError` the editor is answered with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import mcp_types as types
from mcp import Client, MCPError

from host_bridge.hub.errors import UpstreamError
from host_bridge.hub.limits import ANSWER_OVER_LIMIT
from host_bridge.hub.resources.labels import upstream_text
from host_bridge.hub.upstream import is_modern_version

__all__ = ["NOT_FOUND_CODES", "ResourceSources", "is_modern_version", "upstream", "upstream_error"]

NOT_FOUND_CODES = frozenset({-32002, types.INVALID_PARAMS})
"""Error codes with which servers say a resource does not exist."""


class ResourceSources(Protocol):
    """Where the broker gets its servers: implemented by the hub over its connections."""

    def resource_servers(self) -> Sequence[str]:
        """Ids of running servers that declared a resources capability, in configuration order."""
        ...

    async def ready(self, server_id: str) -> None:
        """Wait (bounded) while the server is starting or restarting; raises UnknownServerError for unknown ids."""
        ...

    def client(self, server_id: str) -> Client:
        """The live client; raises UnknownServerError or ServerNotRunningError (host_bridge.hub.errors)."""
        ...

    def report_error(self, server_id: str, error: MCPError) -> None:
        """A request to ``server_id`` failed with ``error`` (the connection may decide to reconnect)."""
        ...

    def protocol_version(self, server_id: str) -> str:
        """The protocol revision negotiated with the server."""
        ...


def upstream(sources: ResourceSources, server: str, error: MCPError, action: str, client: Client) -> UpstreamError:
    """Map a failed request to a hub error, and let the server's connection see the failure first."""
    sources.report_error(server, error)
    return upstream_error(server, error, action, client)


def upstream_error(server: str, error: MCPError, action: str, client: Client) -> UpstreamError:
    """The hub error for a failed request: timeouts, a lost connection and an answer refused for its size get
    sentences of their own."""
    if error.code == ANSWER_OVER_LIMIT:
        return UpstreamError(server, error.message)
    if error.code == types.REQUEST_TIMEOUT:
        timeout = client.read_timeout_seconds
        within = f"within {timeout:g} s" if timeout is not None else "in time"
        return UpstreamError(server, f"did not answer {within} ({action})", upstream_code=error.code)
    if error.code == types.CONNECTION_CLOSED:
        return UpstreamError(server, f"server exited or closed the connection ({action})", upstream_code=error.code)
    return UpstreamError(
        server, f"{action} failed: {upstream_text(error.message)} (code {error.code})", upstream_code=error.code
    )
