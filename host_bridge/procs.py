"""Child processes that never outlive host_bridge: their own process group, and a parent-death signal on Linux.

Every program host_bridge starts (git, MCP servers) leads a new process group, so that it and whatever it starts
can be ended together, and on Linux asks the kernel to kill it when the thread that started it dies (the sidecar
killed with SIGKILL runs no clean-up code of its own).
"""

from __future__ import annotations

import os
import signal

from host_bridge.libc import LIBC
from host_bridge.system import IS_WINDOWS

_PR_SET_PDEATHSIG = 1


_PRCTL = None if LIBC is None else LIBC.prctl
_PARENT = os.getpid()
"""This process: the parent of every child it starts (a child whose parent differs was orphaned while starting)."""


def die_with_parent() -> None:
    """In a forked child before ``exec`` (``preexec_fn``): be killed when the parent dies (Linux only).

    The signal is sent when the *thread* that forked dies, so only start children from a thread that lives as long
    as the process (the event loop's, or a worker that waits for the child). If the parent is already gone, the
    child exits at once.
    """
    if _PRCTL is None:
        return
    _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)  # pyright: ignore[reportCallIssue, reportOptionalCall]
    if os.getppid() != _PARENT:
        os._exit(1)


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Send ``sig`` to process group ``pgid``; whether any process received it (POSIX only)."""
    if IS_WINDOWS or pgid <= 1:
        return False
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def alive(pid: int) -> bool:
    """Whether a process with this id exists (it may belong to another user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
