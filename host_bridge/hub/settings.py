"""How the hub runs its connections: time-outs, the restart policy, the caps on what a server may send, the sandbox
default. Read by :class:`~host_bridge.hub.connection.ServerConnection` and by the transports
(:mod:`host_bridge.hub.transports`)."""

from __future__ import annotations

from dataclasses import dataclass

from host_bridge.hub.launch import NetworkSetting, SandboxSetting
from host_bridge.hub.limits import DEFAULT_MAX_PAGE_ITEMS, DEFAULT_MAX_READ_CONTENTS, AnswerLimits
from host_bridge.jsonrpc_lines import DEFAULT_MAX_LINE_BYTES


@dataclass(frozen=True)
class ConnectionSettings:
    """Timeouts and restart policy; every field has a default."""

    initialize_timeout: float = 30.0
    """Seconds a server has to finish the handshake before it is killed and counted as a crash."""
    request_timeout: float = 30.0
    """Seconds any request may take; on expiry the SDK sends ``notifications/cancelled``."""
    max_crashes: int = 5
    """Crashes within :attr:`crash_window` after which the server is left stopped."""
    crash_window: float = 180.0
    """Seconds over which crashes are counted."""
    backoff_initial: float = 0.5
    """First restart delay in seconds; doubles per crash in the window, with jitter."""
    backoff_max: float = 30.0
    """Longest restart delay."""
    malformed_budget: int = 20
    """Malformed messages tolerated within a minute before the connection is restarted."""
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    """Longest line a stdio server may write to stdout; a longer one ends the connection (counted as a crash)."""
    max_body_bytes: int = DEFAULT_MAX_LINE_BYTES
    """Largest decoded body (after gzip/deflate) of one HTTP response that is not an event stream; a larger one
    fails its request."""
    max_page_items: int = DEFAULT_MAX_PAGE_ITEMS
    """Most resources or resource templates in one listing answer; a bigger page fails its request, before the SDK
    builds a model per item."""
    max_read_contents: int = DEFAULT_MAX_READ_CONTENTS
    """Most content items in one ``resources/read`` answer; more fail the read, before the SDK builds a model each."""
    log_lines: int = 500
    """Stderr lines kept per server."""
    sandbox: SandboxSetting = "enforce"
    """The sandbox of stdio servers whose config does not say (``enforce`` where the OS supports it, or ``off``)."""
    refetch_grace: float = 0.5
    """Seconds a server whose folders changed is given to fetch its new roots after ``list_changed``, before the
    restart that enforces the change (only a server that asks for roots is waited for)."""
    network: NetworkSetting = "on"
    """The network of sandboxed stdio servers whose config does not say; a workspace file cannot turn it on."""

    def answer_limits(self, server: str) -> AnswerLimits:
        """Fresh item caps for one connection of ``server`` (they remember its requests in flight)."""
        return AnswerLimits(server, max_page_items=self.max_page_items, max_read_contents=self.max_read_contents)
