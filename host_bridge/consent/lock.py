"""Private files of the consent store: opening them safely, and the lock that serialises writers.

Several editor windows run several sidecars that share one consent file, so every change is a
read-modify-write under :class:`FileLock`. Whoever can replace or edit the consent file can grant
folders to servers, so a file or folder that is a symlink, not ours, or writable by others is refused
(docs/security.md B5) with an :class:`UnsafeFileError` that says what to do.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import threading
from pathlib import Path
from types import TracebackType

from host_bridge.system import IS_WINDOWS

# sys.platform written out (not IS_WINDOWS): type checkers narrow imports and definitions on it.
if sys.platform == "win32":
    import msvcrt
else:
    import fcntl

_O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
_O_BINARY: int = getattr(os, "O_BINARY", 0)
SAFE_OPEN_FLAGS = _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC | _O_BINARY
"""Added to every open of a store file: never follow a symlink, never hang on a FIFO, never inherit."""


class UnsafeFileError(Exception):
    """A store file or folder that must not be trusted; the message names it and says what to do."""

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
        return (
            f"{path} is writable by other users (mode {stat.S_IMODE(st.st_mode):03o}); "
            f"run: chmod {mode} {path}"
        )
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


class LockTimeoutError(TimeoutError):
    """Another process held the lock for the whole wait; the message names the lock file and what to do."""

    def __init__(self, path: Path, timeout: float) -> None:
        self.path = path
        """The lock file."""
        super().__init__(
            f"another process has held {path} for {timeout:g} s (a stuck host_bridge window?); close the other "
            "host_bridge windows or end the process that holds the file, then try again"
        )


class FileLock:
    """An exclusive lock on a separate lock file, held across processes; use it as a context manager.

    Not reentrant. The operating system releases it when the holder dies, so a killed writer never
    leaves it held. The lock file itself is never deleted (deleting it would let two writers in).
    Waiting blocks the calling thread for at most ``timeout`` seconds: call it from a worker thread.
    """

    def __init__(self, path: Path, *, timeout: float = 5.0) -> None:
        self.path = path
        """The lock file; created (mode 0600) on first use."""
        self.timeout = timeout
        """Seconds to wait for another holder before :class:`LockTimeoutError`."""
        self._fd: int | None = None

    def __enter__(self) -> FileLock:
        fd = open_private(self.path, os.O_RDWR | os.O_CREAT)
        try:
            locked = _try_lock(fd)
        except BaseException:
            os.close(fd)
            raise
        if not locked and not _wait_for_lock(fd, self.timeout):
            raise LockTimeoutError(self.path, self.timeout)
        self._fd = fd
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            _unlock(fd)
        finally:
            os.close(fd)


def _wait_for_lock(fd: int, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for the lock on ``fd``; whether it was taken.

    The wait is a blocking lock call in a helper thread (the kernel queues waiters, so a busy lock is handed on
    in turn instead of going to whoever polls at the right moment). On a time-out the helper owns ``fd``: it
    releases the lock if it gets it later and closes ``fd`` either way. On success the caller owns ``fd``; on
    failure the caller must not touch it.
    """
    handed_over = threading.Lock()
    outcome: list[bool] = []
    taken = threading.Event()

    def wait() -> None:
        try:
            _lock(fd)
        except OSError:
            with handed_over:
                if not outcome:
                    outcome.append(False)
                    taken.set()
                    return
            os.close(fd)
            return
        with handed_over:
            if not outcome:
                outcome.append(True)
                taken.set()
                return
        _unlock(fd)
        os.close(fd)

    threading.Thread(target=wait, name="consent-lock-wait", daemon=True).start()
    taken.wait(timeout)
    with handed_over:
        if outcome:
            if not outcome[0]:
                os.close(fd)
            return outcome[0]
        outcome.append(False)
        return False


if sys.platform == "win32":

    def _lock(fd: int) -> None:
        # LK_LOCK retries for about ten seconds, then raises OSError.
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_LOCK, 1)

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
