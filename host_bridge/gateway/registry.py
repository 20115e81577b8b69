"""Where a sidecar's gateway listens, and how ``host-bridge attach`` finds the sidecar of a workspace.

Layout, under the storage directory (the extension's global storage in VS Code)::

    <storage>/gateway/            0700, refused when it is a link, another user's, or writable by others
    <storage>/gateway/<pid>.sock  0600, the socket of the sidecar with that process id (none where it is abstract)
    <storage>/gateway/<pid>.json  0600, its :class:`SidecarEntry`: socket, secret, workspace folders, start time

Where the kernel lets a sandbox refuse abstract UNIX sockets
(:func:`host_bridge.gateway.admission.abstract_sockets_scoped`) the gateway listens on one instead of a file
(:func:`abstract_name`), and the entry names it ``@<name>``. The entry also holds the sidecar's secret, which
``attach`` presents in its hello; no sandbox policy grants this folder.

A socket path must fit in ``sockaddr_un`` (about 100 bytes); when ``<storage>/gateway/<pid>.sock`` would not, the socket
goes to a 0700 folder of this user's in ``$XDG_RUNTIME_DIR`` (or the temporary folder) and the entry names it. When the
storage directory is not the default one, the entry is also written to the default one's ``gateway`` folder, so that
``attach`` without ``--storage-dir`` (Claude Code, a terminal) finds a VS Code window's sidecar. Entries are removed
when the sidecar exits; one left behind by a killed sidecar is recognised by its dead process id and removed by the
next reader.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from host_bridge.private_files import UnsafeFileError, check_private_dir, open_private
from host_bridge.procs import alive
from host_bridge.storage import default_storage_dir
from host_bridge.wire import WireModel

logger = logging.getLogger(__name__)

GATEWAY_DIR = "gateway"
"""Folder inside the storage directory that holds sockets and registry entries."""
MAX_SOCKET_PATH = 100
"""Longest socket path used, in bytes (``sun_path`` holds 108 on Linux and 104 on macOS, its terminator included)."""
SUPPORTED = sys.platform != "win32"
"""Whether this platform has the gateway (Windows would need a named pipe; it is not there yet)."""
NOT_SUPPORTED = (
    "the MCP Host Bridge gateway is not available on Windows yet (it needs a named pipe there); "
    "agents cannot use host_bridge's servers on this machine"
)
"""The sentence given on Windows."""


class SidecarEntry(WireModel):
    """One running sidecar's gateway, as written to ``<storage>/gateway/<pid>.json``."""

    version: int = 2
    """Format version of this file (2: with :attr:`secret`)."""
    pid: int
    """Process id of the sidecar."""
    socket: str
    """Path of its Unix domain socket, or ``@<name>`` for a Linux abstract socket."""
    secret: str | None = None
    """What ``attach`` presents in its hello to be admitted (absent in entries of sidecars before version 2)."""
    storage_dir: str
    """Its storage directory (where its consent store and audit logs are)."""
    folders: tuple[str, ...]
    """Its workspace folders (real paths), in the editor's order."""
    started: float
    """When it started listening (seconds since the epoch)."""
    headless: bool = False
    """A sidecar ``attach`` started for a folder no editor had open: an editor's sidecar for the same folder is
    preferred to it (:func:`find_sidecar`)."""


class NoSidecarError(Exception):
    """No running sidecar serves the workspace; the message says what to start."""


def gateway_dir(storage_dir: str | os.PathLike[str]) -> Path:
    """The gateway folder of a storage directory."""
    return Path(storage_dir) / GATEWAY_DIR


def private_dir(path: Path) -> Path:
    """Create ``path`` (mode 0700) if needed and make sure it is a folder only this user can use.

    Raises :class:`UnsafeFileError` naming the folder and what to do, or :class:`OSError`.
    """
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    check_private_dir(path)
    if sys.platform != "win32" and os.stat(path).st_mode & 0o077:
        raise UnsafeFileError(path, f"{path} can be read by other users; run `chmod 700 {path}` and start again")
    return path


def socket_path(storage_dir: str | os.PathLike[str], pid: int) -> Path:
    """Where the sidecar ``pid`` of ``storage_dir`` listens (see the module docstring for the long-path fallback)."""
    preferred = gateway_dir(storage_dir) / f"{pid}.sock"
    if len(os.fsencode(preferred)) <= MAX_SOCKET_PATH:
        return preferred
    digest = hashlib.sha256(os.fsencode(os.path.realpath(storage_dir))).hexdigest()[:12]
    candidates = [os.environ.get("XDG_RUNTIME_DIR"), tempfile.gettempdir()]
    for runtime in [c for c in candidates if c]:
        path = Path(runtime) / f"host-bridge-{os.getuid()}" / f"{digest}-{pid}.sock"
        if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
            return path
    return Path("/tmp") / f"host-bridge-{os.getuid()}" / f"{digest}-{pid}.sock"


def abstract_name(pid: int) -> str:
    """A new abstract socket name for the sidecar ``pid``, as the entry writes it (``@host-bridge/…``): this user's,
    this process's, and a random part so that no other process can have bound it first."""
    return f"@host-bridge/{os.getuid()}/{pid}-{secrets.token_hex(8)}"


def connect_address(socket: str) -> str:
    """What to pass to ``connect`` for an entry's :attr:`SidecarEntry.socket` (``@name`` → the abstract name)."""
    return "\0" + socket[1:] if socket.startswith("@") else socket


def reachable(entry: SidecarEntry) -> bool:
    """Whether ``entry``'s socket may be connected to: an abstract one always, a file one while it exists."""
    return entry.socket.startswith("@") or os.path.exists(entry.socket)


def entry_dirs(storage_dir: str | os.PathLike[str]) -> list[Path]:
    """The folders an entry of a sidecar with ``storage_dir`` is written to: its own, and the default one."""
    own = gateway_dir(storage_dir)
    default = gateway_dir(default_storage_dir())
    same = os.path.realpath(own) == os.path.realpath(default)
    return [own] if same else [own, default]


def write_entry(entry: SidecarEntry, directories: Iterable[Path]) -> list[Path]:
    """Write ``entry`` as ``<pid>.json`` (0600, atomically) into each folder; the files written.

    A folder that cannot be used is logged and skipped: the sidecar still runs, agents just cannot find it there.
    """
    written: list[Path] = []
    data = entry.model_dump_json(by_alias=True).encode()
    for directory in directories:
        target = directory / f"{entry.pid}.json"
        temporary = directory / f".{entry.pid}.json.tmp"
        try:
            private_dir(directory)
            fd = open_private(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            os.replace(temporary, target)
            written.append(target)
        except (OSError, UnsafeFileError) as error:
            logger.warning("the gateway cannot register itself in %s: %s", directory, error)
    return written


def remove_files(paths: Iterable[Path]) -> None:
    """Remove registry entries or sockets; missing ones are fine."""
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


MAX_ENTRY_BYTES = 64 << 20
"""The largest entry read: a workspace of 100 000 folders with long paths fits (10 000 folders take about 1 MiB)."""


def _read_bounded(fd: int) -> bytes:
    """The whole file ``fd``; ``ValueError`` when it is over :data:`MAX_ENTRY_BYTES`."""
    chunks: list[bytes] = []
    size = 0
    while chunk := os.read(fd, 1 << 20):
        size += len(chunk)
        if size > MAX_ENTRY_BYTES:
            raise ValueError(f"the entry is over {MAX_ENTRY_BYTES >> 20} MiB")
        chunks.append(chunk)
    return b"".join(chunks)


def read_entries(directory: Path) -> list[SidecarEntry]:
    """The entries of live sidecars in ``directory``; entries of dead ones are removed, damaged ones skipped."""
    entries: list[SidecarEntry] = []
    try:
        names = sorted(directory.glob("*.json"))
    except OSError:
        return entries
    for path in names:
        try:
            fd = open_private(path, os.O_RDONLY)
            try:
                raw = _read_bounded(fd)
            finally:
                os.close(fd)
            entry = SidecarEntry.model_validate_json(raw)
        except FileNotFoundError:
            continue
        except (OSError, UnsafeFileError, ValueError) as error:
            logger.info("skipped the gateway entry %s: %s", path, error)
            continue
        if not alive(entry.pid):
            remove_files([path])
            continue
        entries.append(entry)
    return entries


def _rank(entry: SidecarEntry, workspace: str) -> tuple[int, int] | None:
    """How well ``entry`` serves ``workspace``: its own folder, inside one of its folders (deepest first), or a
    folder that holds one of its folders; ``None`` when unrelated."""
    best: tuple[int, int] | None = None
    for folder in entry.folders:
        if folder == workspace:
            score = (3, len(folder))
        elif workspace.startswith(folder.rstrip(os.sep) + os.sep):
            score = (2, len(folder))
        elif folder.startswith(workspace.rstrip(os.sep) + os.sep):
            score = (1, -len(folder))
        else:
            continue
        best = score if best is None else max(best, score)
    return best


def find_sidecar(workspace: str, storage_dir: str | None = None) -> SidecarEntry:
    """The running sidecar that serves ``workspace`` best (see :func:`_rank`; an editor's before a headless one, then
    the newest among equals).

    Raises :class:`NoSidecarError` with a sentence naming what to start.
    """
    if not SUPPORTED:
        raise NoSidecarError(NOT_SUPPORTED)
    where = os.path.realpath(workspace)
    directory = gateway_dir(storage_dir or default_storage_dir())
    ranked: list[tuple[tuple[int, int], bool, float, SidecarEntry]] = []
    for entry in read_entries(directory):
        rank = _rank(entry, where)
        if rank is not None and reachable(entry):
            ranked.append((rank, not entry.headless, entry.started, entry))
    if not ranked:
        raise NoSidecarError(
            f"no MCP Host Bridge sidecar is running for {where} (looked in {directory}); open this folder in VS Code "
            "with the MCP Host Bridge extension (or start `host-bridge serve` from your editor), then start this "
            "server again"
        )
    ranked.sort(key=lambda item: item[:3])
    return ranked[-1][3]


def new_entry(
    pid: int, socket: str, storage_dir: str, folders: Sequence[str], secret: str, *, headless: bool = False
) -> SidecarEntry:
    """The entry of this sidecar now (``socket``: a path, or ``@name`` for an abstract socket)."""
    return SidecarEntry(
        headless=headless,
        pid=pid,
        socket=socket,
        secret=secret,
        storage_dir=os.path.realpath(storage_dir),
        folders=tuple(os.path.realpath(f) for f in folders),
        started=time.time(),
    )
