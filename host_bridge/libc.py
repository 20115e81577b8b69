"""The C library as ``ctypes`` sees it, loaded once for the system calls of processes and the sandbox (standard
library only).

``None`` where it cannot be used: not Linux, or no C library to load. Errors are kept in ``errno``.
"""

from __future__ import annotations

import ctypes

from host_bridge.system import IS_LINUX


def _load() -> ctypes.CDLL | None:
    if not IS_LINUX:
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


LIBC = _load()
"""The process's C library (``prctl``, ``syscall``, ``capget`` …), or ``None`` off Linux."""
