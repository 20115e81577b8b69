"""Append-only record of agent sessions on the gateway: which agent used which server, when, for what."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from host_bridge.consent.lock import UnsafeFileError, check_private_dir, open_private
from host_bridge.gateway.hello import AgentProcess
from host_bridge.wire import WireModel

logger = logging.getLogger(__name__)

GATEWAY_AUDIT_FILE = "gateway.jsonl"
"""File name inside the storage directory, beside the ``roots/list`` audit log."""


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
    """JSON lines in ``<storage>/gateway.jsonl``, rotated to ``gateway.jsonl.1`` past :attr:`max_bytes`."""

    def __init__(self, storage_dir: str, *, max_bytes: int = 4 << 20) -> None:
        self.path = os.path.join(storage_dir, GATEWAY_AUDIT_FILE)
        """The current log file."""
        self.max_bytes = max_bytes
        """Size at which the file is rotated (one old generation is kept)."""
        self._lock = threading.Lock()
        self._failed = False

    def append(self, entry: GatewayAuditEntry) -> None:
        """Record ``entry``; a failure to write is logged once and never fails the session."""
        line = (json.dumps(entry.to_wire(), ensure_ascii=False) + "\n").encode()
        with self._lock:
            try:
                folder = Path(self.path).parent
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                check_private_dir(folder)
                if os.path.exists(self.path) and os.path.getsize(self.path) + len(line) > self.max_bytes:
                    os.replace(self.path, self.path + ".1")
                fd = open_private(Path(self.path), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                try:
                    os.write(fd, line)
                finally:
                    os.close(fd)
                self._failed = False
            except (OSError, UnsafeFileError) as error:
                if not self._failed:
                    logger.error("the gateway audit log %s is not written: %s", self.path, error)
                self._failed = True


def read_gateway_audit(storage_dir: str) -> Iterator[GatewayAuditEntry]:
    """Entries of the rotated and current files, oldest first; damaged lines are skipped."""
    path = os.path.join(storage_dir, GATEWAY_AUDIT_FILE)
    for name in (path + ".1", path):
        try:
            with open(name, encoding="utf-8") as handle:
                for line in handle:
                    try:
                        yield GatewayAuditEntry.model_validate_json(line)
                    except ValueError:
                        logger.warning("skipped a damaged line in %s", name)
        except FileNotFoundError:
            continue


def now() -> datetime:
    """The time stamp of an entry."""
    return datetime.now(UTC)
