"""The durable consent store: ``consent.json`` in the host_bridge storage folder, and this process's copy of it.

Several sidecars (one per editor window) share the file. Every change is a read-modify-write under an exclusive
lock on ``consent.lock`` (waited for at most :attr:`ConsentStore.lock_timeout` seconds): the file is re-read,
changed, written to a temporary file that is synced, the previous good file is kept as ``consent.json.bak``, and
the temporary file is renamed over ``consent.json``. A crash at any point leaves the old or the new file, never a
partial one; so a reader never needs the lock, and :meth:`ConsentStore.reload` picks up other windows' changes
without waiting for writers. The file's format and its migration are in :mod:`host_bridge.consent.schema`.

Whatever cannot be trusted fails closed, meaning no persisted decision is used (docs/security.md B1, B2, B5): a
corrupt file is moved aside and a fresh one started; a file from a newer host_bridge is left alone and nothing
can be saved; an unsafe file (symlink, foreign owner, writable by others) is refused until the user fixes it.
Each problem is logged once and kept in :attr:`ConsentStore.problem`.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from host_bridge.consent import files
from host_bridge.consent.identity import ServerIdentity
from host_bridge.consent.lock import FileLock, LockTimeoutError
from host_bridge.consent.schema import (
    EMPTY,
    FORMAT_VERSION,
    ConsentFile,
    InvalidFile,
    NewerFile,
    PersistedDecision,
    RootRecord,
    TrustRecord,
    document,
    parse,
)
from host_bridge.private_files import UnsafeFileError, check_private_dir, open_private, unsafe_reason
from host_bridge.system import IS_WINDOWS

logger = logging.getLogger(__name__)

__all__ = [
    "FILE_NAME",
    "FORMAT_VERSION",
    "LOCK_NAME",
    "ConsentStore",
    "ConsentStoreError",
    "PersistedDecision",
    "RootRecord",
    "StoreProblem",
    "TrustRecord",
]

FILE_NAME = "consent.json"
LOCK_NAME = "consent.lock"


class StoreProblem(StrEnum):
    """What is wrong with the consent store; values are stable and may be shown or logged."""

    CORRUPT = "corrupt"
    NEWER_VERSION = "newerVersion"
    UNSAFE = "unsafe"
    UNREADABLE = "unreadable"
    WRITE_FAILED = "writeFailed"
    LOCKED = "locked"


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


_RootKey = tuple[str, str]
"""(identity key, canonical path)."""


@dataclass(frozen=True)
class _View:
    """One read of the file, indexed."""

    document: ConsentFile
    roots: dict[_RootKey, RootRecord]
    """Bound folder decisions by (identity key, path)."""
    trust: dict[str, TrustRecord]
    """Bound trust answers by identity key."""


class ConsentStore:
    """Persisted consent decisions and trust answers, shared safely by several processes.

    Call :meth:`load` once before use and :meth:`reload` when :attr:`file_path` changes on disk. Methods are
    thread-safe; the ones that write wait for the lock in the calling thread, so call them from a worker thread
    where blocking matters. Before :meth:`load`, nothing is allowed.
    """

    def __init__(self, storage_dir: str | os.PathLike[str], *, lock_timeout: float = 5.0) -> None:
        self.storage_dir = Path(storage_dir)
        """The folder holding the store; created with mode 0700 on first write."""
        self.file_path = self.storage_dir / FILE_NAME
        """``consent.json``; watch it and call :meth:`reload` to see other windows' decisions."""
        self.backup_path = self.storage_dir / f"{FILE_NAME}.bak"
        """The state before the last change."""
        self.lock_path = self.storage_dir / LOCK_NAME
        """The lock file that serialises writers."""
        self.lock_timeout = lock_timeout
        """Seconds a write waits for another process holding the lock before it fails with a clear error."""
        self._mutex = threading.RLock()
        """Serialises reading and writing the file; readers of :attr:`_view` never take it."""
        self._loaded = False
        self._view = _View(EMPTY, {}, {})
        """What was read last; replaced whole, so readers always see one consistent state without a lock."""
        self._signature: files.Signature | None = None
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
        """Every persisted folder decision, unbound version 1 records included (none while :attr:`blocked`)."""
        return self._view.document.roots

    def root(self, identity: ServerIdentity, path: str) -> RootRecord | None:
        """The persisted decision about ``path`` for ``identity``, if any."""
        return self._view.roots.get((identity.key, path))

    def decisions(self) -> dict[_RootKey, PersistedDecision]:
        """Every bound decision by (identity key, path)."""
        return {key: record.decision for key, record in self._view.roots.items()}

    def trust_records(self) -> tuple[TrustRecord, ...]:
        """Every persisted trust answer, unbound ones included (none while :attr:`blocked`)."""
        return self._view.document.trust

    def trust_record(self, identity: ServerIdentity) -> TrustRecord | None:
        """The persisted trust answer for ``identity``, if any."""
        return self._view.trust.get(identity.key)

    def trust_answers(self) -> dict[str, bool]:
        """Every bound trust answer by identity key."""
        return {key: record.trusted for key, record in self._view.trust.items()}

    def claimable(self, identity: ServerIdentity) -> bool:
        """Whether unbound version 1 records wait for ``identity`` (see :meth:`claim`); no I/O."""
        document = self._view.document
        return any(r.claimable_by(identity) for r in (*document.roots, *document.trust))

    def load(self) -> None:
        """Read the file. Raises :class:`ConsentStoreError` when this read finds a problem.

        The store is usable afterwards either way: on a problem it fails closed and :attr:`problem` says what is
        wrong. A corrupt file is reported by the load that moves it aside, and not again.
        """
        with self._mutex:
            self._loaded = True
            error = self._refresh()
            if error is not None:
                raise error

    def reload(self) -> bool:
        """Re-read the file if it changed on disk; whether decisions, trust or :attr:`problem` changed.

        Never raises: problems are logged and kept in :attr:`problem`. Does not wait for the lock unless the file
        is corrupt (it is then moved aside under the lock).
        """
        with self._mutex:
            if self._loaded and not self.blocked and files.stat_signature(self.file_path) == self._signature:
                return False
            self._loaded = True
            before = (self._view.document, str(self._problem))
            self._refresh()
            return (self._view.document, str(self._problem)) != before

    def set_root(self, identity: ServerIdentity, path: str, decision: PersistedDecision | None) -> bool:
        """Persist ``decision`` about ``path`` for ``identity``; ``None`` removes it. Whether the file changed.

        ``path`` must be absolute and should be canonical (:func:`host_bridge.uris.canonical_path`). Raises
        :class:`ConsentStoreError` when the store is blocked, locked too long or cannot be written, and
        :class:`ValueError` for a path that is not absolute or not valid text.
        """
        return self.set_roots(identity, {path: decision})

    def set_roots(self, identity: ServerIdentity, decisions: Mapping[str, PersistedDecision | None]) -> bool:
        """:meth:`set_root` for several folders of one server at once, in one write."""
        for path in decisions:
            if not os.path.isabs(path):
                raise ValueError(f"consent needs an absolute folder path, not {path!r}")
            path.encode("utf-8")

        def change(current: ConsentFile) -> ConsentFile:
            mine = {r.path: r for r in current.roots if r.owned_by(identity)}
            kept = [r for r in current.roots if not (r.owned_by(identity) and r.path in decisions)]
            changed = False
            for path, decision in decisions.items():
                existing = mine.get(path)
                if decision is None:
                    changed |= existing is not None
                elif existing is not None and existing.decision == decision:
                    kept.append(existing)
                else:
                    changed = True
                    kept.append(
                        RootRecord(
                            source=identity.source,
                            server_id=identity.server_id,
                            fingerprint=identity.fingerprint,
                            path=path,
                            decision=decision,
                            updated=_now(),
                        )
                    )
            return document(kept, current.trust) if changed else current

        return self._update(change)

    def set_trust(self, identity: ServerIdentity, trusted: bool | None) -> bool:
        """Persist whether ``identity`` is trusted; ``None`` removes the answer. Whether the file changed.

        Raises :class:`ConsentStoreError` as :meth:`set_root` does.
        """

        def change(current: ConsentFile) -> ConsentFile:
            kept = [t for t in current.trust if not t.owned_by(identity)]
            existing = next((t for t in current.trust if t.owned_by(identity)), None)
            if trusted is not None:
                if existing is not None and existing.trusted == trusted:
                    return current
                kept.append(
                    TrustRecord(
                        source=identity.source,
                        server_id=identity.server_id,
                        fingerprint=identity.fingerprint,
                        trusted=trusted,
                        updated=_now(),
                    )
                )
            elif existing is None:
                return current
            return document(current.roots, kept)

        return self._update(change)

    def claim(self, identity: ServerIdentity) -> bool:
        """Bind the unbound version 1 records of ``identity``'s id and fingerprint to it, for good; whether any.

        Once bound they belong to this identity alone (another source with the same id and fingerprint never
        gets them). Raises :class:`ConsentStoreError` as :meth:`set_root` does; the records then stay unbound.
        """

        def bind(current: ConsentFile) -> ConsentFile:
            if not any(r.claimable_by(identity) for r in (*current.roots, *current.trust)):
                return current
            source = {"source": identity.source}
            taken = {r.path for r in current.roots if r.owned_by(identity)}
            roots = [
                r.model_copy(update=source) if r.claimable_by(identity) else r
                for r in current.roots
                if not (r.claimable_by(identity) and r.path in taken)
            ]
            has_trust = any(t.owned_by(identity) for t in current.trust)
            trust = [
                t.model_copy(update=source) if t.claimable_by(identity) else t
                for t in current.trust
                if not (t.claimable_by(identity) and has_trust)
            ]
            return document(roots, trust)

        with self._mutex:
            if not self.claimable(identity):
                return False
            return self._update(bind)

    # Reading.

    def _adopt(self, doc: ConsentFile, signature: files.Signature | None) -> None:
        identities: dict[tuple[str | None, str, str], str] = {}

        def key_of(owner: tuple[str | None, str, str]) -> str | None:
            source, server_id, fingerprint = owner
            if source is None:
                return None
            if owner not in identities:
                identities[owner] = ServerIdentity(source=source, server_id=server_id, fingerprint=fingerprint).key
            return identities[owner]

        self._view = _View(
            doc,
            {(key, r.path): r for r in doc.roots if (key := key_of(r.owner)) is not None},
            {key: t for t in doc.trust if (key := key_of(t.owner)) is not None},
        )
        self._signature = signature
        # A corrupt-file notice stays until a good file exists again; other problems end with them.
        if self._problem is not None and (self._problem.blocks_writes or signature is not None):
            self._problem = None

    def _fail(self, error: ConsentStoreError, signature: files.Signature | None) -> ConsentStoreError:
        if self._problem is None or str(self._problem) != str(error):
            logger.error("%s", error)
        self._adopt(EMPTY, signature)
        self._problem = error
        return error

    def _refresh(self) -> ConsentStoreError | None:
        """Read the file and adopt it; the problem found by this read, if any."""
        if not self.storage_dir.exists():
            self._adopt(EMPTY, None)
            return None
        try:
            check_private_dir(self.storage_dir)
            self._check_lock_file()
            _, corrupt = self._read(under_lock=False)
            return corrupt
        except UnsafeFileError as error:
            return self._unsafe(error)
        except ConsentStoreError as error:
            return error
        except OSError as error:
            return self._fail(self._unreadable(self.lock_path, error), files.stat_signature(self.file_path))

    def _check_lock_file(self) -> None:
        """Refuse a lock file that is not ours even when this read does not need the lock (writes would)."""
        try:
            st = os.lstat(self.lock_path)
        except FileNotFoundError:
            return
        problem = unsafe_reason(st, self.lock_path)
        if problem is not None:
            raise UnsafeFileError(self.lock_path, problem)

    def _read(self, *, under_lock: bool, tighten: bool = False) -> tuple[ConsentFile, ConsentStoreError | None]:
        """Read, validate and adopt ``consent.json``.

        Returns the document and, for a corrupt file, the (non-blocking) problem after moving it aside (which
        takes the lock when the caller does not hold it). Raises :class:`ConsentStoreError` for a blocking problem.
        With ``tighten`` (lock held, about to replace the file), a file readable by others is made private.
        """
        try:
            fd = open_private(self.file_path, os.O_RDONLY)
        except FileNotFoundError:
            self._adopt(EMPTY, None)
            return EMPTY, None
        except UnsafeFileError as error:
            raise self._unsafe(error) from None
        except OSError as error:
            raise self._fail(self._unreadable(self.file_path, error), files.stat_signature(self.file_path)) from None
        try:
            st = os.fstat(fd)
            raw = files.read_all(fd)
            if not IS_WINDOWS and tighten and st.st_mode & 0o077:
                os.fchmod(fd, 0o600)
        except OSError as error:
            raise self._fail(self._unreadable(self.file_path, error), files.stat_signature(self.file_path)) from None
        finally:
            os.close(fd)
        try:
            parsed = parse(raw)
        except NewerFile as newer:
            raise self._fail(self._newer_error(newer.version), files.signature_of(st)) from None
        except InvalidFile as invalid:
            if not under_lock:
                return self._read_corrupt_under_lock()
            moved = files.move_aside(self.file_path, st)
            error = self._corrupt_error(str(invalid), moved)
            self._fail(error, None if moved is not None else files.signature_of(st))
            if error.blocks_writes:
                raise error from None
            return EMPTY, error
        if parsed.migrated_from is not None and parsed.dropped and self._signature != files.signature_of(st):
            logger.warning(
                "%s is from an older host_bridge: %d decision(s) were given to a launch configuration that several "
                "servers shared, so they cannot be kept for one server; you will be asked again",
                self.file_path,
                parsed.dropped,
            )
        self._adopt(parsed.document, files.signature_of(st))
        return parsed.document, None

    def _read_corrupt_under_lock(self) -> tuple[ConsentFile, ConsentStoreError | None]:
        try:
            with FileLock(self.lock_path, timeout=self.lock_timeout):
                return self._read(under_lock=True)
        except LockTimeoutError as error:
            problem = ConsentStoreError(StoreProblem.LOCKED, self.lock_path, str(error), blocks_writes=False)
            self._fail(problem, None)
            return EMPTY, problem

    def _unsafe(self, error: UnsafeFileError) -> ConsentStoreError:
        message = f"{error} Until then no folder is shared from saved consent, and nothing can be saved."
        problem = ConsentStoreError(StoreProblem.UNSAFE, error.path, message, blocks_writes=True)
        return self._fail(problem, files.stat_signature(self.file_path))

    def _unreadable(self, path: Path, error: OSError) -> ConsentStoreError:
        message = (
            f"{path} cannot be used ({error.strerror or error}); check that it is yours and readable. "
            "Until then no folder is shared from saved consent."
        )
        return ConsentStoreError(StoreProblem.UNREADABLE, path, message, blocks_writes=True)

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
        return ConsentStoreError(StoreProblem.CORRUPT, self.file_path, message, blocks_writes=moved is None)

    def _backup_is_valid(self) -> bool:
        try:
            fd = open_private(self.backup_path, os.O_RDONLY)
        except (OSError, UnsafeFileError):
            return False
        try:
            parse(files.read_all(fd))
        except (OSError, ValueError, NewerFile):
            return False
        finally:
            os.close(fd)
        return True

    # Writing.

    def _ensure_dir(self) -> None:
        if not self.storage_dir.exists():
            self.storage_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not IS_WINDOWS:
                os.chmod(self.storage_dir, 0o700)
        check_private_dir(self.storage_dir)

    def _update(self, change: Callable[[ConsentFile], ConsentFile]) -> bool:
        with self._mutex:
            self._loaded = True
            if not self.storage_dir.exists() and change(EMPTY) == EMPTY:
                return False
            try:
                self._ensure_dir()
                with FileLock(self.lock_path, timeout=self.lock_timeout):
                    current, _ = self._read(under_lock=True, tighten=True)
                    updated = change(current)
                    if updated == current:
                        return False
                    files.remove_stale_temps(self.file_path)
                    data = _serialise(updated)
                    temp, signature = files.write_private_temp(self.file_path, data)
                    files.replace_keeping_backup(self.file_path, self.backup_path, temp)
                    self._adopt(updated, signature)
                    return True
            except UnsafeFileError as error:
                raise self._unsafe(error) from None
            except LockTimeoutError as error:
                message = f"the decision was not saved: {error}"
                raise ConsentStoreError(StoreProblem.LOCKED, self.lock_path, message, blocks_writes=False) from error
            except OSError as error:
                message = (
                    f"could not save consent to {self.file_path} ({error.strerror or error}); the decision "
                    "was not saved. Check free disk space and the folder's permissions."
                )
                raise ConsentStoreError(
                    StoreProblem.WRITE_FAILED, self.file_path, message, blocks_writes=False
                ) from error


def _serialise(document: ConsentFile) -> bytes:
    """The file's bytes; unbound records keep their explicit ``"source": null``."""
    return (json.dumps(document.model_dump(mode="json", by_alias=True), indent=2, ensure_ascii=False) + "\n").encode()


def _now() -> datetime:
    return datetime.now(UTC)
