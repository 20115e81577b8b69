"""Capabilities a server never gets, even when host_bridge runs as root (a dev container): standard library only.

A root process keeps every capability across ``exec``; ``no_new_privs`` (which Landlock sets) only stops it from
gaining more. So before ``exec`` the child shrinks its *bounding set* to :data:`KEPT` (what a container runtime's
default gives a root process, less ``CAP_MKNOD``, and less ``CAP_NET_RAW`` when the server's network is off) and
clears its inheritable and ambient sets; the kernel then computes the server's capabilities from what is left.

Without ``CAP_SYS_ADMIN`` a process cannot push input into a terminal that is not its controlling terminal
(``TIOCSTI``), and a server has no controlling terminal (it leads a new session); nor can it steal one
(``TIOCSCTTY``), load kernel modules, or mount. A process that is not root has no capability to drop (``no_new_privs``
stops file capabilities), and the bounding set cannot be changed without ``CAP_SETPCAP``: then nothing is done.
"""

from __future__ import annotations

import ctypes
import errno
import os

from host_bridge.libc import LIBC as _LIBC

CAP_CHOWN = 0
CAP_DAC_OVERRIDE = 1
CAP_FOWNER = 3
CAP_FSETID = 4
CAP_KILL = 5
CAP_SETGID = 6
CAP_SETUID = 7
CAP_SETPCAP = 8
CAP_NET_BIND_SERVICE = 10
CAP_NET_RAW = 13
CAP_SYS_CHROOT = 18
CAP_SYS_ADMIN = 21
CAP_AUDIT_WRITE = 29

KEPT = frozenset(
    {
        CAP_CHOWN,
        CAP_DAC_OVERRIDE,
        CAP_FOWNER,
        CAP_FSETID,
        CAP_KILL,
        CAP_SETGID,
        CAP_SETUID,
        CAP_NET_BIND_SERVICE,
        CAP_NET_RAW,
        CAP_SYS_CHROOT,
        CAP_AUDIT_WRITE,
    }
)
"""The capabilities a root-run server may keep: a container runtime's default set without ``CAP_MKNOD``,
``CAP_SETPCAP`` and ``CAP_SETFCAP`` (no file it writes gets capabilities for whoever runs it later). Landlock
still confines each (``CAP_DAC_OVERRIDE`` reads nothing outside the policy; ``CAP_KILL`` signals nothing outside the
sandbox where the kernel scopes signals)."""

_PR_CAPBSET_READ = 23
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAPABILITY_VERSION_3 = 0x20080522
_LAST_CAP_FILE = "/proc/sys/kernel/cap_last_cap"


class _Header(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _Data(ctypes.Structure):
    _fields_ = (("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32))


def kept(*, network: bool) -> frozenset[int]:
    """The capabilities a server keeps: :data:`KEPT`, without ``CAP_NET_RAW`` when its network is off."""
    return KEPT if network else KEPT - {CAP_NET_RAW}


def last_capability() -> int:
    """The highest capability number this kernel knows."""
    try:
        with open(_LAST_CAP_FILE, encoding="ascii") as file:
            return int(file.read().strip())
    except (OSError, ValueError):
        return 40


def drop(*, network: bool = True) -> bool:
    """In the child before ``exec``: shrink the bounding set to :func:`kept` and clear the inheritable and ambient
    sets. ``False`` when there was nothing this process may drop (not root: it has no capability to lose).

    Raises ``OSError`` when a drop that should work fails (the server must then not start).
    """
    if _LIBC is None:
        return False
    ctypes.set_errno(0)
    _LIBC.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if _LIBC.prctl(_PR_CAPBSET_READ, CAP_SETPCAP, 0, 0, 0) != 1 or not _has_effective(CAP_SETPCAP):
        return False
    keep = kept(network=network)
    for capability in range(last_capability() + 1):
        if capability in keep or _LIBC.prctl(_PR_CAPBSET_READ, capability, 0, 0, 0) != 1:
            continue
        if _LIBC.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"dropping capability {capability} failed: {os.strerror(code)}")
    _clear_inheritable()
    return True


def _capget() -> tuple[_Header, ctypes.Array[_Data]]:
    assert _LIBC is not None
    header = _Header(_CAPABILITY_VERSION_3, 0)
    data = (_Data * 2)()
    if _LIBC.capget(ctypes.byref(header), data) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"capget failed: {os.strerror(code)}")
    return header, data


def _has_effective(capability: int) -> bool:
    try:
        _, data = _capget()
    except OSError:
        return False
    return bool(data[capability // 32].effective & (1 << (capability % 32)))


def _clear_inheritable() -> None:
    assert _LIBC is not None
    header, data = _capget()
    if not (data[0].inheritable or data[1].inheritable):
        return
    data[0].inheritable = data[1].inheritable = 0
    if _LIBC.capset(ctypes.byref(header), data) != 0:
        code = ctypes.get_errno()
        if code != errno.EPERM:
            raise OSError(code, f"clearing the inheritable capabilities failed: {os.strerror(code)}")
