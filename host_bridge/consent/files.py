"""Atomic-write plumbing of the consent store: private temporary files, rename into place, a backup, a corrupt
file moved aside. Every function here expects the caller to hold the store's lock when it changes files.
"""

from __future__ import annotations

import logging
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path

from host_bridge.private_files import SAFE_OPEN_FLAGS, open_private
from host_bridge.system import IS_WINDOWS

logger = logging.getLogger(__name__)

Signature = tuple[int, int, int, int, int, int]
"""(device, inode, mtime ns, size, mode, owner) of a file: cheap evidence that it changed."""


def signature_of(st: os.stat_result) -> Signature:
    """The :data:`Signature` of a stat result."""
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size, st.st_mode, st.st_uid)


def stat_signature(path: Path) -> Signature | None:
    """The :data:`Signature` of ``path`` (not following a symlink), or ``None`` when it cannot be stat'ed."""
    try:
        return signature_of(os.lstat(path))
    except OSError:
        return None


def read_all(fd: int) -> bytes:
    """Everything left to read from ``fd``."""
    chunks: list[bytes] = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_dir(path: Path) -> None:
    """Make a rename inside ``path`` durable (no-op on Windows)."""
    if IS_WINDOWS:
        return
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp_name(target: Path) -> Path:
    return target.with_name(f"{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")


def write_private_temp(target: Path, data: bytes) -> tuple[Path, Signature]:
    """Write ``data`` to a new private (0600) file beside ``target`` and sync it; its path and signature."""
    temp = _temp_name(target)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | SAFE_OPEN_FLAGS, 0o600)
    try:
        if not IS_WINDOWS:
            os.fchmod(fd, 0o600)
        write_all(fd, data)
        os.fsync(fd)
        signature = signature_of(os.fstat(fd))
    except BaseException:
        os.close(fd)
        temp.unlink(missing_ok=True)
        raise
    os.close(fd)
    return temp, signature


def replace_keeping_backup(target: Path, backup: Path, temp: Path) -> None:
    """Keep ``target`` as ``backup``, then rename ``temp`` over ``target``; ``temp`` is removed on failure."""
    try:
        if os.path.lexists(target):
            backup_temp = _temp_name(backup)
            try:
                os.link(target, backup_temp)
            except OSError:
                _copy_private(target, backup_temp)
            os.replace(backup_temp, backup)
        os.replace(temp, target)
        fsync_dir(target.parent)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _copy_private(source: Path, target: Path) -> None:
    fd = open_private(source, os.O_RDONLY)
    try:
        data = read_all(fd)
    finally:
        os.close(fd)
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | SAFE_OPEN_FLAGS, 0o600)
    try:
        write_all(out, data)
        os.fsync(out)
    finally:
        os.close(out)


def remove_stale_temps(target: Path) -> None:
    """Delete temporary files of writers that died; only lock holders create them."""
    for stale in target.parent.glob(f"{target.name}*.tmp-*"):
        stale.unlink(missing_ok=True)


def move_aside(target: Path, st: os.stat_result) -> Path | None:
    """Rename the corrupt ``target`` (still the file ``st`` describes) to a new ``<name>.corrupt-<UTC time>``.

    Never overwrites an earlier copy; ``None`` when the file changed meanwhile or cannot be moved.
    """
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    try:
        current = os.lstat(target)
        if (current.st_dev, current.st_ino) != (st.st_dev, st.st_ino):
            return None
        for attempt in range(1000):
            suffix = f"-{attempt}" if attempt else ""
            moved = target.with_name(f"{target.name}.corrupt-{stamp}{suffix}")
            try:
                os.link(target, moved)
            except FileExistsError:
                continue
            except OSError:
                # No hard links on this file system; every writer holds the lock, so the check is safe.
                if os.path.lexists(moved):
                    continue
                os.rename(target, moved)
                return moved
            os.unlink(target)
            fsync_dir(target.parent)
            return moved
    except OSError as error:
        logger.error("could not move the corrupt consent file %s aside: %s", target, error)
    return None
