"""The consent store's lock that serialises writers across processes.

Several editor windows run several sidecars that share one consent file, so every change is a
read-modify-write under :class:`FileLock`. The lock file is a private file
(:mod:`host_bridge.private_files`): one that is a symlink, not ours, or writable by others is refused.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from types import TracebackType

from host_bridge.private_files import open_private

# sys.platform written out (not IS_WINDOWS): type checkers narrow imports and definitions on it.
if sys.platform == "win32":
    import msvcrt
else:
    import fcntl


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
