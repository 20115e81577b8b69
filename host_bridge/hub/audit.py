"""Append-only record of every ``roots/list`` answer: which server saw which folders, when."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from host_bridge.consent.identity import ServerIdentity
from host_bridge.consent.lock import UnsafeFileError, check_private_dir, open_private
from host_bridge.hub.launch import Launch
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
    """JSON lines in ``<storage>/audit.jsonl``, rotated to ``audit.jsonl.1`` past :attr:`max_bytes`."""

    def __init__(self, storage_dir: str, *, max_bytes: int = 8 << 20) -> None:
        self.path = os.path.join(storage_dir, AUDIT_FILE)
        """The current log file."""
        self.max_bytes = max_bytes
        """Size at which the file is rotated (one old generation is kept)."""
        self._lock = threading.Lock()
        self._failed = False

    def append(self, identity: ServerIdentity, protocol_version: str | None, roots: Sequence[Root]) -> None:
        """Record one answer for the server ``identity``; a failure to write is logged once, never blocks the answer."""
        self._write(
            AuditEntry(
                time=datetime.now(UTC), server=identity.server_id, source=identity.source,
                fingerprint=identity.fingerprint, protocol_version=protocol_version, roots=tuple(r.uri for r in roots),
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
                kind="launch", time=datetime.now(UTC), server=identity.server_id, source=identity.source,
                fingerprint=identity.fingerprint, roots=tuple(path_to_uri(f) for f in launch.folders), sandbox=sandbox,
            )
        )

    def _write(self, entry: AuditEntry) -> None:
        line = (json.dumps(entry.model_dump(mode="json", by_alias=True), ensure_ascii=False) + "\n").encode()
        with self._lock:
            try:
                folder = Path(self.path).parent
                if not folder.exists():
                    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                # In a folder others can write to, the log could be another user's file or a link to one.
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
                    reason = error if isinstance(error, UnsafeFileError) else error.strerror or error
                    logger.error("the roots audit log %s is not written: %s", self.path, reason)
                self._failed = True


def read_audit(storage_dir: str) -> Iterator[AuditEntry]:
    """Entries of the rotated and current files, oldest first; unreadable lines are skipped."""
    path = os.path.join(storage_dir, AUDIT_FILE)
    for name in (path + ".1", path):
        try:
            with open(name, encoding="utf-8") as handle:
                for line in handle:
                    try:
                        yield AuditEntry.model_validate_json(line)
                    except ValueError:
                        logger.warning("skipped a damaged line in %s", name)
        except FileNotFoundError:
            continue
