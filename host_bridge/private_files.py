"""Private files in host_bridge's storage folder: opened safely, refused when they cannot be trusted.

The consent store, the audit logs and the gateway's registry live in the user's storage folder. Whoever can replace
or edit those files can grant folders to servers or forge what was shared, so a file or folder that is a symlink,
not ours, or writable by others is refused (docs/security.md B5) with an :class:`UnsafeFileError` that says what to
do.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from host_bridge.system import IS_WINDOWS

_O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
_O_BINARY: int = getattr(os, "O_BINARY", 0)
SAFE_OPEN_FLAGS = _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC | _O_BINARY
"""Added to every open of a private file: never follow a symlink, never hang on a FIFO, never inherit."""


class UnsafeFileError(Exception):
    """A private file or folder that must not be trusted; the message names it and says what to do."""

    def __init__(self, path: Path, message: str) -> None:
        self.path = path
        """The refused file or folder."""
        super().__init__(message)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def unsafe_reason(st: os.stat_result, path: Path, *, directory: bool = False) -> str | None:
    """Why ``st`` (of ``path``) is not a private regular file (or folder), or ``None`` if it is.

    On Windows only the kind is checked; ownership and mode bits do not carry the same meaning there.
    """
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link; host_bridge does not follow links here. Remove the link."
    if directory and not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory; move it away so host_bridge can create its consent folder."
    if not directory and not stat.S_ISREG(st.st_mode):
        return f"{path} is {_kind(st.st_mode)}; move it away so host_bridge can create its own file."
    if IS_WINDOWS:
        return None
    uid = os.geteuid()
    if st.st_uid != uid:
        return (
            f"{path} is owned by uid {st.st_uid}, not by you (uid {uid}), so someone else may have "
            f"placed it. Check it, then remove it or run: chown {uid} {path}"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        mode = "700" if directory else "600"
        return f"{path} is writable by other users (mode {stat.S_IMODE(st.st_mode):03o}); run: chmod {mode} {path}"
    return None


def check_private_dir(path: Path) -> None:
    """Raise :class:`UnsafeFileError` unless ``path`` is a folder of ours that only we can write.

    The folder may be reached through a symlink (a dotfiles setup); its target is what is checked.
    """
    problem = unsafe_reason(os.stat(path), path, directory=True)
    if problem is not None:
        raise UnsafeFileError(path, problem)


def open_private(path: Path, flags: int) -> int:
    """Open ``path`` with ``flags`` plus :data:`SAFE_OPEN_FLAGS` and return the descriptor.

    Raises :class:`UnsafeFileError` when it is a symlink or fails :func:`unsafe_reason`, and
    :class:`OSError` as :func:`os.open` does (``FileNotFoundError`` when it is missing).
    """
    if IS_WINDOWS and os.path.islink(path):
        raise UnsafeFileError(path, unsafe_reason(os.lstat(path), path) or f"{path} is a link")
    try:
        fd = os.open(path, flags | SAFE_OPEN_FLAGS, 0o600)
    except OSError as error:
        # O_NOFOLLOW reports a symlink as ELOOP (EMLINK on FreeBSD).
        if error.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(path):
            raise UnsafeFileError(path, unsafe_reason(os.lstat(path), path) or f"{path} is a link") from None
        raise
    try:
        problem = unsafe_reason(os.fstat(fd), path)
        if problem is not None:
            raise UnsafeFileError(path, problem)
    except BaseException:
        os.close(fd)
        raise
    return fd
