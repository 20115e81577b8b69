"""Installing a seccomp filter program in the calling thread (standard library only, for the child before ``exec``).

The program is built in the parent, once, by libseccomp (:mod:`host_bridge.sandbox.seccomp`), which knows each
architecture's system call numbers and checks the architecture of every call; here it is only handed to the kernel
(``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)``), so nothing is allocated or looked up between ``fork`` and ``exec``.
"""

from __future__ import annotations

import ctypes
import os

from host_bridge.libc import LIBC as _LIBC

INSTRUCTION_BYTES = 8
"""``struct sock_filter``: code (16 bits), jt, jf (8 bits each), k (32 bits)."""

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


class _Program(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def load(program: bytes) -> None:
    """Install ``program`` (classic BPF, as ``seccomp_export_bpf`` writes it) for the calling thread and whatever it
    executes; sets ``no_new_privs`` first. Raises ``OSError`` naming the step."""
    if _LIBC is None:
        raise OSError(0, "seccomp needs Linux and its C library")
    if not program or len(program) % INSTRUCTION_BYTES:
        raise OSError(0, f"a seccomp program of {len(program)} bytes is not whole instructions")
    buffer = ctypes.create_string_buffer(program, len(program))
    prog = _Program(len(program) // INSTRUCTION_BYTES, ctypes.cast(buffer, ctypes.c_void_p))
    ctypes.set_errno(0)
    if _LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(code)}")
    if _LIBC.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"loading the seccomp filter failed: {os.strerror(code)}")
