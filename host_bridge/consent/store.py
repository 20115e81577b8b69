"""The durable consent store: ``consent.json`` in the host_bridge storage folder.

Several sidecars (one per editor window) share the file. Every change is a read-modify-write under an
exclusive lock on ``consent.lock``: the file is re-read, changed, written to a temporary file that is
synced, the previous good file is kept as ``consent.json.bak``, and the temporary file is renamed over
``consent.json``. A crash at any point leaves the old or the new file, never a partial one.

Whatever cannot be trusted fails closed, meaning no persisted decision is used (security matrix B1, B2,
B5): a corrupt file is moved aside and a fresh one started; a file from a newer host_bridge is left
alone and nothing can be saved; an unsafe file (symlink, foreign owner, writable by others) is refused
until the user fixes it. Each problem is logged once and kept in :attr:`ConsentStore.problem`.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Literal, Self, cast

from pydantic import AwareDatetime, ConfigDict, Field, ValidationError, field_validator, model_validator

from host_bridge.consent.lock import (
    SAFE_OPEN_FLAGS,
    FileLock,
    UnsafeFileError,
    check_private_dir,
    open_private,
)
from host_bridge.wire import WireModel

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
"""The only ``version`` of ``consent.json`` this host_bridge reads and writes."""
FILE_NAME = "consent.json"
LOCK_NAME = "consent.lock"

PersistedDecision = Literal["allow", "deny"]
"""A decision that outlives the process; session decisions are never written."""


class _FileModel(WireModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class RootRecord(_FileModel):
    """One persisted decision about one folder for one server."""

    server: str = Field(min_length=1)
    """Fingerprint of the server's launch configuration (see :mod:`host_bridge.consent.fingerprint`)."""
    path: str = Field(min_length=1)
    """Canonical real path of the folder."""
    decision: PersistedDecision
    """``allow`` shares the folder; ``deny`` keeps it private and suppresses further prompts."""
    server_id: str
    """The server's display id when the decision was made, for people reading the file."""
    updated: AwareDatetime
    """When the decision was made."""

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not os.path.isabs(value):
            raise ValueError("path must be absolute")
        return value


class TrustRecord(_FileModel):
    """Whether the user trusts a server defined by a workspace (not by themselves) to be started at all."""

    server: str = Field(min_length=1)
    """Fingerprint of the server's launch configuration."""
    trusted: bool
    """The user's answer."""
    server_id: str
    """The server's display id when the answer was given."""
    updated: AwareDatetime
    """When the answer was given."""


class ConsentFile(_FileModel):
    """The whole of ``consent.json``."""

    version: Literal[1]
    """Format version; a file with a higher one is left untouched (see :data:`FORMAT_VERSION`)."""
    roots: tuple[RootRecord, ...] = ()
    """Folder decisions, at most one per (server, path), sorted."""
    trust: tuple[TrustRecord, ...] = ()
    """Trust answers, at most one per server, sorted."""

    @model_validator(mode="after")
    def _unique(self) -> Self:
        if len({(r.server, r.path) for r in self.roots}) != len(self.roots):
            raise ValueError("two root records have the same server and path")
        if len({t.server for t in self.trust}) != len(self.trust):
            raise ValueError("two trust records have the same server")
        return self


_EMPTY = ConsentFile(version=FORMAT_VERSION)


class StoreProblem(StrEnum):
    """What is wrong with the consent store; values are stable and may be shown or logged."""

    CORRUPT = "corrupt"
    NEWER_VERSION = "newerVersion"
    UNSAFE = "unsafe"
    UNREADABLE = "unreadable"
    WRITE_FAILED = "writeFailed"


class ConsentStoreError(Exception):
    """The consent store cannot be used as asked; the message names the file and says what to do."""

    def __init__(self, kind: StoreProblem, path: Path, message: str, *, blocks_writes: bool) -> None:
        self.kind = kind
        """What went wrong."""
        self.path = path
        """The file or folder concerned."""
        self.blocks_writes = blocks_writes
        """Whether decisions cannot be saved until the user acts (a moved-aside corrupt file does not)."""
        super().__init__(message)


_Signature = tuple[int, int, int, int, int, int]
"""(device, inode, mtime ns, size, mode, owner) of the file: cheap evidence that it changed."""


def _signature_of(st: os.stat_result) -> _Signature:
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size, st.st_mode, st.st_uid)


class _Invalid(ValueError):
    """The bytes are not a valid version-1 consent file; the message says why."""


class _Newer(ValueError):
    def __init__(self, version: int) -> None:
        self.version = version
        super().__init__(f"version {version}")


def _parse(raw: bytes) -> ConsentFile:
    if not raw.strip():
        raise _Invalid("the file is empty")
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise _Invalid("it is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise _Invalid(f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}") from None
    if not isinstance(data, dict):
        raise _Invalid("the top level is not a JSON object")
    version = cast(dict[str, object], data).get("version")
    if type(version) is not int:
        raise _Invalid("'version' is missing or not a whole number")
    if version > FORMAT_VERSION:
        raise _Newer(version)
    try:
        return ConsentFile.model_validate_json(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "file"
        raise _Invalid(f"{where}: {first['msg']}") from None


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_dir(path: Path) -> None:
    if sys.platform == "win32":
        return
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _now() -> datetime:
    return datetime.now(UTC)


def _document(roots: Iterable[RootRecord], trust: Iterable[TrustRecord]) -> ConsentFile:
    return ConsentFile(
        version=FORMAT_VERSION,
        roots=tuple(sorted(roots, key=lambda r: (r.server, r.path))),
        trust=tuple(sorted(trust, key=lambda t: t.server)),
    )


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """A new ``consent.json`` written and synced to a temporary file, not yet renamed into place."""

    temp_path: Path
    """The temporary file, beside ``consent.json``."""
    document: ConsentFile
    """What it holds."""
    signature: _Signature
    """Its stat signature, which ``consent.json`` has once it is committed."""


class ConsentStore:
    """Persisted consent decisions and trust answers, shared safely by several processes.

    Call :meth:`load` once before use and :meth:`reload` when :attr:`file_path` changes on disk.
    Methods are thread-safe. Before :meth:`load`, nothing is allowed.
    """

    def __init__(self, storage_dir: str | os.PathLike[str]) -> None:
        self.storage_dir = Path(storage_dir)
        """The folder holding the store; created with mode 0700 on first write."""
        self.file_path = self.storage_dir / FILE_NAME
        """``consent.json``; watch it and call :meth:`reload` to see other windows' decisions."""
        self.backup_path = self.storage_dir / f"{FILE_NAME}.bak"
        """The state before the last change."""
        self.lock_path = self.storage_dir / LOCK_NAME
        """The lock file that serialises writers."""
        self._mutex = threading.RLock()
        self._loaded = False
        self._document = _EMPTY
        self._roots: dict[tuple[str, str], RootRecord] = {}
        self._trust: dict[str, TrustRecord] = {}
        self._signature: _Signature | None = None
        self._problem: ConsentStoreError | None = None

    @property
    def problem(self) -> ConsentStoreError | None:
        """What is wrong with the store now, or what was found wrong (a moved-aside corrupt file)."""
        return self._problem

    @property
    def blocked(self) -> bool:
        """Whether persisted decisions are ignored and cannot be saved until the user acts."""
        return self._problem is not None and self._problem.blocks_writes

    def roots(self) -> tuple[RootRecord, ...]:
        """Every persisted folder decision (none while :attr:`blocked`)."""
        with self._mutex:
            return self._document.roots

    def root(self, server: str, path: str) -> RootRecord | None:
        """The persisted decision about ``path`` for ``server``, if any."""
        with self._mutex:
            return self._roots.get((server, path))

    def trust_records(self) -> tuple[TrustRecord, ...]:
        """Every persisted trust answer (none while :attr:`blocked`)."""
        with self._mutex:
            return self._document.trust

    def trust_record(self, server: str) -> TrustRecord | None:
        """The persisted trust answer for ``server``, if any."""
        with self._mutex:
            return self._trust.get(server)

    def load(self) -> None:
        """Read the file. Raises :class:`ConsentStoreError` when this read finds a problem.

        The store is usable afterwards either way: on a problem it fails closed and :attr:`problem`
        says what is wrong. A corrupt file is reported by the load that moves it aside, and not again.
        """
        with self._mutex:
            self._loaded = True
            error = self._refresh()
            if error is not None:
                raise error

    def reload(self) -> bool:
        """Re-read the file if it changed on disk; whether decisions, trust or :attr:`problem` changed.

        Never raises: problems are logged and kept in :attr:`problem`.
        """
        with self._mutex:
            if self._loaded and not self.blocked and self._stat_signature() == self._signature:
                return False
            self._loaded = True
            before = (self._document, str(self._problem))
            self._refresh()
            return (self._document, str(self._problem)) != before

    def set_root(
        self, server: str, path: str, decision: PersistedDecision | None, *, server_id: str = ""
    ) -> bool:
        """Persist ``decision`` about ``path`` for ``server``; ``None`` removes it. Whether the file changed.

        ``path`` must be absolute and should be canonical (:func:`host_bridge.uris.canonical_path`).
        Raises :class:`ConsentStoreError` when the store is blocked or the file cannot be written, and
        :class:`ValueError` for a path that is not absolute or not valid text.
        """
        if not os.path.isabs(path):
            raise ValueError(f"consent needs an absolute folder path, not {path!r}")
        path.encode("utf-8")
        key = (server, path)

        def change(current: ConsentFile) -> ConsentFile:
            roots = {(r.server, r.path): r for r in current.roots}
            existing = roots.get(key)
            if decision is None:
                roots.pop(key, None)
            elif existing is None or existing.decision != decision or existing.server_id != server_id:
                roots[key] = RootRecord(
                    server=server, path=path, decision=decision, server_id=server_id, updated=_now()
                )
            return _document(roots.values(), current.trust)

        return self._update(change)

    def set_trust(self, server: str, trusted: bool | None, *, server_id: str = "") -> bool:
        """Persist whether ``server`` is trusted; ``None`` removes the answer. Whether the file changed.

        Raises :class:`ConsentStoreError` as :meth:`set_root` does.
        """

        def change(current: ConsentFile) -> ConsentFile:
            trust = {t.server: t for t in current.trust}
            existing = trust.get(server)
            if trusted is None:
                trust.pop(server, None)
            elif existing is None or existing.trusted != trusted or existing.server_id != server_id:
                trust[server] = TrustRecord(
                    server=server, trusted=trusted, server_id=server_id, updated=_now()
                )
            return _document(current.roots, trust.values())

        return self._update(change)

    def _stat_signature(self) -> _Signature | None:
        try:
            return _signature_of(os.lstat(self.file_path))
        except OSError:
            return None

    def _adopt(self, document: ConsentFile, signature: _Signature | None) -> None:
        self._document = document
        self._roots = {(r.server, r.path): r for r in document.roots}
        self._trust = {t.server: t for t in document.trust}
        self._signature = signature
        # A corrupt-file notice stays until a good file exists again; other problems end with them.
        if self._problem is not None and (self._problem.blocks_writes or signature is not None):
            self._problem = None

    def _fail(self, error: ConsentStoreError, signature: _Signature | None) -> ConsentStoreError:
        if self._problem is None or str(self._problem) != str(error):
            logger.error("%s", error)
        self._adopt(_EMPTY, signature)
        self._problem = error
        return error

    def _refresh(self) -> ConsentStoreError | None:
        """Read the file under the lock and adopt it; the problem found by this read, if any."""
        if not self.storage_dir.exists():
            self._adopt(_EMPTY, None)
            return None
        try:
            check_private_dir(self.storage_dir)
            with FileLock(self.lock_path):
                _, corrupt = self._read_locked()
            return corrupt
        except UnsafeFileError as error:
            return self._unsafe(error)
        except ConsentStoreError as error:
            return error
        except OSError as error:
            return self._fail(self._unreadable(self.lock_path, error), self._stat_signature())

    def _unsafe(self, error: UnsafeFileError) -> ConsentStoreError:
        message = f"{error} Until then no folder is shared from saved consent, and nothing can be saved."
        problem = ConsentStoreError(StoreProblem.UNSAFE, error.path, message, blocks_writes=True)
        return self._fail(problem, self._stat_signature())

    def _unreadable(self, path: Path, error: OSError) -> ConsentStoreError:
        message = (
            f"{path} cannot be used ({error.strerror or error}); check that it is yours and readable. "
            "Until then no folder is shared from saved consent."
        )
        return ConsentStoreError(StoreProblem.UNREADABLE, path, message, blocks_writes=True)

    def _read_locked(self, *, tighten: bool = False) -> tuple[ConsentFile, ConsentStoreError | None]:
        """Read, validate and adopt ``consent.json``; the lock must be held.

        Returns the document and, for a corrupt file, the (non-blocking) problem after moving it aside.
        Raises :class:`ConsentStoreError` for a blocking problem. With ``tighten``, a file readable by
        others is made private (it is about to be replaced and kept as the backup).
        """
        try:
            fd = open_private(self.file_path, os.O_RDONLY)
        except FileNotFoundError:
            self._adopt(_EMPTY, None)
            return _EMPTY, None
        except UnsafeFileError as error:
            raise self._unsafe(error) from None
        except OSError as error:
            raise self._fail(self._unreadable(self.file_path, error), self._stat_signature()) from None
        try:
            st = os.fstat(fd)
            raw = _read_all(fd)
            if sys.platform != "win32" and tighten and st.st_mode & 0o077:
                os.fchmod(fd, 0o600)
        except OSError as error:
            raise self._fail(self._unreadable(self.file_path, error), self._stat_signature()) from None
        finally:
            os.close(fd)
        try:
            document = _parse(raw)
        except _Newer as newer:
            raise self._fail(self._newer_error(newer.version), _signature_of(st)) from None
        except _Invalid as invalid:
            moved = self._move_aside(st)
            error = self._corrupt_error(str(invalid), moved)
            self._fail(error, None if moved is not None else _signature_of(st))
            if error.blocks_writes:
                raise error from None
            return _EMPTY, error
        self._adopt(document, _signature_of(st))
        return document, None

    def _newer_error(self, version: int) -> ConsentStoreError:
        message = (
            f"{self.file_path} was written by a newer host_bridge (format version {version}; this one "
            f"understands version {FORMAT_VERSION}). It is left untouched and nothing in it is used, so no "
            "folder is shared from saved consent and new decisions cannot be saved. Update host_bridge, "
            "or move the file away to start over with this version."
        )
        return ConsentStoreError(StoreProblem.NEWER_VERSION, self.file_path, message, blocks_writes=True)

    def _corrupt_error(self, detail: str, moved: Path | None) -> ConsentStoreError:
        message = (
            f"{self.file_path} is not a valid consent file ({detail}). Nothing in it is used: no folder "
            "is shared from saved consent until you agree again."
        )
        if moved is None:
            message += " It could not be moved aside; move it away yourself so host_bridge can start anew."
        else:
            message += f" It was moved to {moved}; a new file is started with your next decision."
        if self._backup_is_valid():
            message += (
                f" {self.backup_path} holds the state before the last change; to restore it, copy it over "
                f"{self.file_path}."
            )
        kind = StoreProblem.CORRUPT
        return ConsentStoreError(kind, self.file_path, message, blocks_writes=moved is None)

    def _move_aside(self, st: os.stat_result) -> Path | None:
        """Rename the corrupt file to a new ``consent.json.corrupt-<UTC time>`` name; never overwrites."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        try:
            current = os.lstat(self.file_path)
            if (current.st_dev, current.st_ino) != (st.st_dev, st.st_ino):
                return None
            for attempt in range(1000):
                suffix = f"-{attempt}" if attempt else ""
                target = self.storage_dir / f"{FILE_NAME}.corrupt-{stamp}{suffix}"
                try:
                    os.link(self.file_path, target)
                except FileExistsError:
                    continue
                except OSError:
                    # No hard links on this file system; every writer holds the lock, so the check is safe.
                    if os.path.lexists(target):
                        continue
                    os.rename(self.file_path, target)
                    return target
                os.unlink(self.file_path)
                _fsync_dir(self.storage_dir)
                return target
        except OSError as error:
            logger.error("could not move the corrupt consent file %s aside: %s", self.file_path, error)
        return None

    def _backup_is_valid(self) -> bool:
        try:
            fd = open_private(self.backup_path, os.O_RDONLY)
        except (OSError, UnsafeFileError):
            return False
        try:
            _parse(_read_all(fd))
        except (OSError, ValueError):
            return False
        finally:
            os.close(fd)
        return True

    def _ensure_dir(self) -> None:
        if not self.storage_dir.exists():
            self.storage_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            if sys.platform != "win32":
                os.chmod(self.storage_dir, 0o700)
        check_private_dir(self.storage_dir)

    def _update(self, change: Callable[[ConsentFile], ConsentFile]) -> bool:
        with self._mutex:
            self._loaded = True
            if not self.storage_dir.exists() and change(_EMPTY) == _EMPTY:
                return False
            try:
                self._ensure_dir()
                with FileLock(self.lock_path):
                    current, _ = self._read_locked(tighten=True)
                    updated = change(current)
                    if updated == current:
                        return False
                    self._remove_stale_temps()
                    self._commit(self._write_temp(updated))
                    return True
            except UnsafeFileError as error:
                raise self._unsafe(error) from None
            except OSError as error:
                message = (
                    f"could not save consent to {self.file_path} ({error.strerror or error}); the decision "
                    "was not saved. Check free disk space and the folder's permissions."
                )
                raise ConsentStoreError(
                    StoreProblem.WRITE_FAILED, self.file_path, message, blocks_writes=False
                ) from error

    def _remove_stale_temps(self) -> None:
        """Delete temporary files of writers that died; only lock holders create them."""
        for stale in self.storage_dir.glob(f"{FILE_NAME}*.tmp-*"):
            stale.unlink(missing_ok=True)

    def _write_temp(self, document: ConsentFile) -> PendingWrite:
        """First half of a save (lock held): write ``document`` to a new private file and sync it."""
        data = (json.dumps(document.to_wire(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        temp = self.storage_dir / f"{FILE_NAME}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | SAFE_OPEN_FLAGS, 0o600)
        try:
            if sys.platform != "win32":
                os.fchmod(fd, 0o600)
            _write_all(fd, data)
            os.fsync(fd)
            signature = _signature_of(os.fstat(fd))
        except BaseException:
            os.close(fd)
            temp.unlink(missing_ok=True)
            raise
        os.close(fd)
        return PendingWrite(temp, document, signature)

    def _commit(self, pending: PendingWrite) -> None:
        """Second half of a save (lock held): keep the current file as the backup, rename the new one in."""
        try:
            if os.path.lexists(self.file_path):
                backup_temp = self.storage_dir / f"{FILE_NAME}.bak.tmp-{os.getpid()}-{secrets.token_hex(4)}"
                try:
                    os.link(self.file_path, backup_temp)
                except OSError:
                    self._copy_private(self.file_path, backup_temp)
                os.replace(backup_temp, self.backup_path)
            os.replace(pending.temp_path, self.file_path)
            _fsync_dir(self.storage_dir)
        except BaseException:
            pending.temp_path.unlink(missing_ok=True)
            raise
        self._adopt(pending.document, pending.signature)

    def _copy_private(self, source: Path, target: Path) -> None:
        fd = open_private(source, os.O_RDONLY)
        try:
            data = _read_all(fd)
        finally:
            os.close(fd)
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | SAFE_OPEN_FLAGS, 0o600)
        try:
            _write_all(out, data)
            os.fsync(out)
        finally:
            os.close(out)
