"""Errors the hub raises to its callers, each with the JSON-RPC code the editor channel answers with."""

from __future__ import annotations

from typing import Any

INVALID_PARAMS = -32602
"""JSON-RPC: bad params (a refused URI, a missing template variable …) or an unknown server id."""
INTERNAL_ERROR = -32603
"""JSON-RPC: the sidecar failed (see its log)."""
RESOURCE_NOT_FOUND = -32002
"""The MCP server does not know the resource (``data: {uri}``)."""
SERVER_NOT_RUNNING = -32802
"""Application range: the server exists but is not connected (starting, failed, awaiting trust…)."""
UPSTREAM_ERROR = -32803
"""Application range: the MCP server answered with an error or broke the protocol."""


class HubError(Exception):
    """Base of hub errors: ``str(error)`` is a sentence a person can act on."""

    code: int = INTERNAL_ERROR
    """JSON-RPC error code for the editor channel."""

    def __init__(self, message: str, *, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        """What went wrong and what to do."""
        self.data = data
        """Structured details for the editor (``{"uri": …}`` for not found)."""


class UnknownServerError(HubError):
    """No server with that id is configured."""

    code = INVALID_PARAMS

    def __init__(self, server_id: str) -> None:
        super().__init__(
            f"unknown MCP server {server_id!r}; see hostBridge/status for the configured ids",
            data={"server": server_id},
        )


class ServerNotRunningError(HubError):
    """The server is configured but not connected now."""

    code = SERVER_NOT_RUNNING

    def __init__(self, server_id: str, state: str, reason: str | None = None) -> None:
        detail = f": {reason}" if reason else ""
        super().__init__(
            f"MCP server {server_id!r} is {state}{detail}; wait for it to start or restart it",
            data={"server": server_id, "state": state},
        )


class ResourceNotFoundError(HubError):
    """The server does not know the resource (it answered -32002 or -32602, or returned no contents)."""

    code = RESOURCE_NOT_FOUND

    def __init__(self, server_id: str, uri: str, detail: str | None = None) -> None:
        why = f" ({detail})" if detail else ""
        super().__init__(f"resource {uri} was not found on MCP server {server_id!r}{why}", data={"uri": uri})


class ResourceTooLargeError(HubError):
    """A resource's decoded size is over the configured cap."""

    code = UPSTREAM_ERROR

    def __init__(self, server_id: str, uri: str, size: int, limit: int) -> None:
        super().__init__(
            f"resource {uri} from {server_id!r} is too large ({size / 2**20:.1f} MB, limit {limit / 2**20:.1f} MB)",
            data={"uri": uri, "size": size, "limit": limit},
        )


class UpstreamError(HubError):
    """The MCP server answered with an error, timed out, crashed or broke the protocol."""

    code = UPSTREAM_ERROR

    def __init__(self, server_id: str, message: str, *, upstream_code: int | None = None) -> None:
        super().__init__(
            f"MCP server {server_id!r}: {message}",
            data={"server": server_id, **({"upstreamCode": upstream_code} if upstream_code is not None else {})},
        )
        self.upstream_code = upstream_code
        """The server's own error code, if it sent one."""


class InvalidRequestError(HubError):
    """The caller's request cannot be carried out as given (bad template arguments, a URI too long…)."""

    code = INVALID_PARAMS
