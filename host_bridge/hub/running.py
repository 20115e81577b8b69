"""Which servers every running sidecar runs, for ``host-bridge consent`` to address them from a terminal.

Each sidecar writes ``sidecars/<pid>.json`` in its storage folder (a private file in a private folder, replaced
atomically) whenever its servers change, and removes it when it stops; readers skip the files of processes that are
gone. A server is addressed by its short *handle* (:func:`server_handle`), the same in every window and in
``host-bridge consent list``, or by its id in a running sidecar. Nothing here decides anything: a decision made
through a handle is written to the consent store, which every sidecar watches.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from host_bridge.consent import files
from host_bridge.consent.identity import ServerIdentity
from host_bridge.procs import alive
from host_bridge.wire import WireModel

logger = logging.getLogger(__name__)

FOLDER = "sidecars"
"""The folder in the storage folder holding one file per running sidecar."""
HANDLE_LENGTH = 7
"""Hex digits of a handle (as short as git's abbreviated commits; a clash is reported as ambiguous)."""


def server_handle(identity: ServerIdentity) -> str:
    """The short stable handle of a server identity: the start of its key's hash."""
    return identity.key.removeprefix("identity:")[:HANDLE_LENGTH]


def record_handle(identity: ServerIdentity, path: str) -> str:
    """The short stable handle of one saved decision (a server identity and a folder)."""
    text = f"{identity.key}\0{path}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(text).hexdigest()[:HANDLE_LENGTH]


class RunningServer(WireModel):
    """One server of a running sidecar."""

    id: str
    """Its id in the sidecar."""
    identity: ServerIdentity
    """Who its decisions belong to."""
    state: str
    """Its state (``running``, ``awaitingTrust`` …)."""
    workspace_defined: bool
    """Defined by a workspace file, so it starts only once trusted."""

    @property
    def handle(self) -> str:
        """Its handle (:func:`server_handle`)."""
        return server_handle(self.identity)


class RunningSidecar(WireModel):
    """What one sidecar publishes."""

    pid: int
    """Its process id (files of processes that are gone are skipped)."""
    folders: tuple[str, ...]
    """The editor's workspace folders (canonical paths)."""
    servers: tuple[RunningServer, ...]
    """Its servers, in configuration order."""


def _folder(storage_dir: str | os.PathLike[str]) -> Path:
    return Path(storage_dir) / FOLDER


def publish(storage_dir: str | os.PathLike[str], sidecar: RunningSidecar) -> None:
    """Write (or replace) this sidecar's file; a failure is logged (terminal commands then cannot see it)."""
    folder = _folder(storage_dir)
    target = folder / f"{sidecar.pid}.json"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        temp, _ = files.write_private_temp(target, sidecar.model_dump_json(by_alias=True).encode())
        os.replace(temp, target)
    except OSError as error:
        logger.warning("could not record this sidecar's servers for host-bridge consent in %s: %s", folder, error)


def withdraw(storage_dir: str | os.PathLike[str], pid: int) -> None:
    """Remove this sidecar's file."""
    with contextlib.suppress(OSError):
        (_folder(storage_dir) / f"{pid}.json").unlink()


def running_sidecars(storage_dir: str | os.PathLike[str]) -> list[RunningSidecar]:
    """Every sidecar whose process is alive, newest file first."""
    folder = _folder(storage_dir)
    try:
        entries = sorted(folder.glob("*.json"), key=_mtime, reverse=True)
    except OSError:
        return []
    found: list[RunningSidecar] = []
    for entry in entries:
        try:
            sidecar = RunningSidecar.model_validate_json(entry.read_bytes())
        except (OSError, ValidationError, ValueError):
            continue
        if alive(sidecar.pid):
            found.append(sidecar)
    return found


def running_servers(sidecars: Sequence[RunningSidecar]) -> list[tuple[RunningSidecar, RunningServer]]:
    """Every server of ``sidecars``, with the sidecar running it."""
    return [(sidecar, server) for sidecar in sidecars for server in sidecar.servers]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
