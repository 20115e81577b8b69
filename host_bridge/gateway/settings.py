"""How the gateway behaves: its time-outs and the limits it holds each agent and each connection to."""

from __future__ import annotations

import math
from dataclasses import dataclass

from host_bridge.jsonrpc_lines import DEFAULT_MAX_LINE_BYTES


@dataclass(frozen=True)
class GatewaySettings:
    """How the gateway behaves; every field has a default."""

    start_timeout: float = 60.0
    """Seconds an agent's hello (or request) waits for its server to be running before it is refused."""
    request_timeout: float = math.inf
    """Seconds a forwarded request may take. No limit by default: the agent's own cancellation (or its leaving) is what
    ends a long one, and a request without a deadline arms no timer in the SDK (20 µs of the sidecar's time per
    request)."""
    hello_timeout: float = 10.0
    """Seconds a new connection has to send its hello line."""
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    """Longest message an agent may send."""
    outbox_size: int = 1000
    """Notifications queued for one agent; past this, new ones are dropped (with a warning) until it reads."""
    outbox_bytes: int = 4 * 2**20
    """Bytes of notifications (as JSON) queued for one agent; past this, new ones are dropped (with a warning) until
    it reads. One that does not fit even an empty outbox is still queued alone, so no notification is too long to
    ever reach an agent that reads."""
    max_requests_in_progress: int = 256
    """Requests one agent may have in progress at once, each counted until its answer is written to the agent; past
    this, new ones are refused at once (an agent that never stops sending would otherwise grow the sidecar's memory and
    load its server without bound)."""
    max_unwritten_bytes: int = 8 * 2**20
    """Bytes of answers and notifications waiting to be written to one agent; past this, the gateway reads nothing
    more from that agent until it has read some (an answer already on its way is still written whole)."""
    max_subscriptions: int = 1000
    """Resources one agent may be subscribed to at once; past this, ``resources/subscribe`` is refused."""
    max_pending_hellos: int = 64
    """Connections that have not sent their hello yet; past this, new ones are closed at once (a flood of silent
    connections would otherwise hold a descriptor each for ``hello_timeout`` seconds)."""
    abstract_socket: bool | None = None
    """Listen on a Linux abstract socket instead of a file; ``None``: where a sandbox can refuse those
    (:func:`host_bridge.gateway.admission.abstract_sockets_scoped`)."""
    headless: bool = False
    """This is a sidecar ``attach`` started for a folder no editor has open (:mod:`host_bridge.hosts.headless`): its
    registry entry says so, a server waiting for trust is refused at once, and ``attach`` is told which
    ``host-bridge consent`` command shares the folder."""
