"""Append-only record of agent sessions on the gateway: which agent used which server, when, for what."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, Literal, cast

from host_bridge.gateway.hello import AgentProcess
from host_bridge.jsonlines import JsonLinesLog, read_json_lines
from host_bridge.wire import WireModel

logger = logging.getLogger(__name__)

GATEWAY_AUDIT_FILE = "gateway.jsonl"
"""File name inside the storage directory, beside the ``roots/list`` audit log."""


MAX_TEXT = 4096
"""Longest string kept in an entry (a path fits): agents choose most of them, and one with megabytes of names must
not roll the log over and push earlier sessions out of it."""


def _clipped(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + "…"
    if isinstance(value, dict):
        return {key: _clipped(item) for key, item in cast(dict[str, Any], value).items()}
    return value


class GatewayAuditEntry(WireModel):
    """One event of an agent session."""

    time: datetime
    """When it happened (UTC)."""
    event: Literal["attached", "initialized", "detached", "refused"]
    """``attached``: the agent named a running server; ``initialized``: it said who it is; ``detached``: the session
    ended; ``refused``: the gateway turned the connection away."""
    session: str | None = None
    """The agent session's id (absent for a refusal before a session existed)."""
    server: str
    """The server id the agent asked for."""
    source: str | None = None
    """Where that server is defined (``settings`` or its config file)."""
    fingerprint: str | None = None
    """Its launch-config fingerprint, as in ``audit.jsonl``."""
    agent: AgentProcess | None = None
    """The ``attach`` process and the agent process that started it."""
    peer_uid: int | None = None
    """The connecting process's user id, as the kernel reports it."""
    client_name: str | None = None
    """The agent's ``clientInfo.name`` (after ``initialize``)."""
    client_version: str | None = None
    """The agent's ``clientInfo.version``."""
    protocol_version: str | None = None
    """The MCP revision negotiated with the agent."""
    requests: Mapping[str, int] | None = None
    """Requests the agent sent to the server, by method (on ``detached``)."""
    reason: str | None = None
    """Why it was refused, or why the session ended."""


class GatewayAudit:
    """JSON lines in ``<storage>/gateway.jsonl``, rotated to ``gateway.jsonl.1`` past ``max_bytes``."""

    def __init__(self, storage_dir: str, *, max_bytes: int = 4 << 20) -> None:
        self._log = JsonLinesLog(
            os.path.join(storage_dir, GATEWAY_AUDIT_FILE), max_bytes=max_bytes, what="gateway audit log"
        )
        self.path = self._log.path
        """The current log file."""

    def append(self, entry: GatewayAuditEntry) -> None:
        """Record ``entry`` (each string cut to :data:`MAX_TEXT` characters); a failure to write is logged once and
        never fails the session."""
        self._log.write(_clipped(entry.to_wire()))


def read_gateway_audit(storage_dir: str) -> Iterator[GatewayAuditEntry]:
    """Entries of the rotated and current files, oldest first; damaged lines are skipped."""
    return read_json_lines(os.path.join(storage_dir, GATEWAY_AUDIT_FILE), GatewayAuditEntry.model_validate_json)


def now() -> datetime:
    """The time stamp of an entry."""
    return datetime.now(UTC)
