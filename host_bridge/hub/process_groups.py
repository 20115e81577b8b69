"""Every live MCP server process group of this process, so that none outlives it, however it ends.

The stdio transport registers a server's process group (the server leads it, so its pid is the group id) as soon as
the server is started and forgets it once the whole group is gone. Three things act on the registry:

* :func:`kill_all_server_groups`, synchronous, which the sidecar's exit path calls as its last step and an
  ``atexit`` hook calls for every other host: whatever the graceful stop left behind gets SIGKILL.
* On POSIX, a reaper process (:mod:`host_bridge.hub._reaper`) started at the first registration holds the read
  end of a pipe from this process and is told every registration. When this process dies without running any code
  (SIGKILL, the OOM killer), the kernel closes the pipe and the reaper SIGKILLs every group still registered: the
  servers' children too, which the parent-death signal alone would orphan.
* Each server also gets the parent-death signal (:func:`host_bridge.procs.die_with_parent`) on Linux.

A process that leaves its group (``setsid``, a daemonizing server) escapes all three by design.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

from host_bridge.procs import kill_group
from host_bridge.system import IS_WINDOWS

logger = logging.getLogger(__name__)

_REAPER_SCRIPT = Path(__file__).with_name("_reaper.py")
_lock = threading.Lock()
_groups: set[int] = set()
_reaper: subprocess.Popen[bytes] | None = None
_reaper_pipe: int | None = None


def register(pgid: int) -> None:
    """Remember a server's process group until :func:`unregister`; starts the reaper on first use (POSIX)."""
    with _lock:
        _groups.add(pgid)
        _tell(f"+{pgid}\n")


def unregister(pgid: int) -> None:
    """Forget a process group whose members are all gone (its id may be reused from now on)."""
    with _lock:
        _groups.discard(pgid)
        _tell(f"-{pgid}\n")


def live_groups() -> frozenset[int]:
    """The process groups registered now."""
    with _lock:
        return frozenset(_groups)


def kill_all_server_groups() -> int:
    """SIGKILL every registered process group at once; the number of groups that still had a member.

    Synchronous and safe to call more than once: the exit path calls it after the graceful stop, for whatever did
    not end within its budget. Groups stay registered until their transport sees them gone.
    """
    with _lock:
        groups = sorted(_groups)
    ended = sum(kill_group(pgid) for pgid in groups)
    if ended:
        logger.warning("ended %d MCP server process group(s) that were still running at exit", ended)
    return ended


def reaper_pid() -> int | None:
    """The pid of the running reaper, if one was started."""
    with _lock:
        return _reaper.pid if _reaper is not None and _reaper.poll() is None else None


def _tell(line: str) -> None:
    """Pass a registration to the reaper, (re)starting it with the whole registry when needed. Holds ``_lock``."""
    global _reaper_pipe
    if IS_WINDOWS:  # pragma: no cover - Job Objects end the children there
        return
    if _reaper_pipe is not None:
        try:
            os.write(_reaper_pipe, line.encode("ascii"))
            return
        except OSError as error:
            logger.warning("the MCP server reaper is gone (%s); starting a new one", error)
            _stop_reaper()
    if not _groups:
        return
    try:
        _start_reaper()
    except OSError as error:
        logger.warning(
            "could not start the MCP server reaper (%s): if host_bridge is killed, the servers' children may "
            "outlive it",
            error,
        )
        return
    assert _reaper_pipe is not None
    with contextlib.suppress(OSError):
        os.write(_reaper_pipe, "".join(f"+{pgid}\n" for pgid in sorted(_groups)).encode("ascii"))


def _start_reaper() -> None:
    global _reaper, _reaper_pipe
    read_end, write_end = os.pipe()  # neither end is inherited by servers started later (PEP 446)
    try:
        _reaper = subprocess.Popen(
            [sys.executable, "-I", "-S", str(_REAPER_SCRIPT)],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    _reaper_pipe = write_end


def _stop_reaper() -> None:
    global _reaper, _reaper_pipe
    if _reaper_pipe is not None:
        with contextlib.suppress(OSError):
            os.close(_reaper_pipe)
        _reaper_pipe = None
    if _reaper is not None:
        _reaper.poll()
        _reaper = None


atexit.register(kill_all_server_groups)
