"""Append-only record of every ``roots/list`` answer: which server saw which folders, when."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Literal

from host_bridge.consent.identity import ServerIdentity
from host_bridge.hub.launch import Launch
from host_bridge.jsonlines import JsonLinesLog, read_json_lines
from host_bridge.roots import Root
from host_bridge.uris import path_to_uri
from host_bridge.wire import WireModel

logger = logging.getLogger(__name__)

AUDIT_FILE = "audit.jsonl"
"""File name inside the storage directory."""


class AuditEntry(WireModel):
    """One answered ``roots/list``, or one start of a stdio server."""

    kind: Literal["roots", "launch"] = "roots"
    """``roots``: a ``roots/list`` answer; ``launch``: a start, with the folders and the sandbox it got."""
    time: datetime
    """When it was answered (UTC)."""
    server: str
    """Server id."""
    source: str | None = None
    """Where the server is defined: ``settings`` or its config file's real path (absent in older entries)."""
    fingerprint: str
    """Launch-config fingerprint the consent was checked against."""
    protocol_version: str | None = None
    """Negotiated protocol revision (``roots`` entries)."""
    roots: tuple[str, ...] = ()
    """URIs answered, in order; for a ``launch``, the shared folders it was started with."""
    sandbox: str | None = None
    """For a ``launch``: its sandbox, as one sentence (enforced or not, and what it may reach)."""


class AuditLog:
    """JSON lines in ``<storage>/audit.jsonl``, rotated to ``audit.jsonl.1`` past ``max_bytes``."""

    def __init__(self, storage_dir: str, *, max_bytes: int = 8 << 20) -> None:
        self._log = JsonLinesLog(os.path.join(storage_dir, AUDIT_FILE), max_bytes=max_bytes, what="roots audit log")
        self.path = self._log.path
        """The current log file."""

    def append(self, identity: ServerIdentity, protocol_version: str | None, roots: Sequence[Root]) -> None:
        """Record one answer for the server ``identity``; a failure to write is logged once, never blocks the answer."""
        self._write(
            AuditEntry(
                time=datetime.now(UTC),
                server=identity.server_id,
                source=identity.source,
                fingerprint=identity.fingerprint,
                protocol_version=protocol_version,
                roots=tuple(r.uri for r in roots),
            )
        )

    def append_launch(self, identity: ServerIdentity, launch: Launch) -> None:
        """Record one start of a stdio server: the folders it got and its sandbox (the effective policy)."""
        policy = launch.policy
        if policy is None or not policy.enforced:
            sandbox = f"not enforced: {policy.summary if policy is not None else 'turned off'}"
        else:
            sandbox = f"enforced ({policy.mechanism}): {policy.summary}"
        self._write(
            AuditEntry(
                kind="launch",
                time=datetime.now(UTC),
                server=identity.server_id,
                source=identity.source,
                fingerprint=identity.fingerprint,
                roots=tuple(path_to_uri(f) for f in launch.folders),
                sandbox=sandbox,
            )
        )

    def _write(self, entry: AuditEntry) -> None:
        self._log.write(entry.model_dump(mode="json", by_alias=True))


def read_audit(storage_dir: str) -> Iterator[AuditEntry]:
    """Entries of the rotated and current files, oldest first; unreadable lines are skipped."""
    return read_json_lines(os.path.join(storage_dir, AUDIT_FILE), AuditEntry.model_validate_json)
