"""Linux Landlock through ``ctypes``: ABI detection, a file system ruleset, and restricting the calling thread.

Standard library only: :mod:`host_bridge.sandbox.run` imports this module before anything else of host_bridge, and
the code that runs in a forked child before ``exec`` (:mod:`host_bridge.sandbox.apply`) must not need more.

The ruleset *handles* every file system access right the running kernel's ABI knows, so anything not granted by a
rule is refused (``EACCES``; ``EXDEV`` for a rename or link across rules). Beyond files it handles what the ABI offers
(:func:`attributes_for`): TCP ``bind``/``connect`` (ABI 4) when the server's network is off, the scopes of ABI 6
(signals to processes outside the sandbox; abstract UNIX sockets created outside it), and connections to pathname UNIX
sockets (ABI 9, ``LANDLOCK_ACCESS_FS_RESOLVE_UNIX``) unless the user let the server reach other programs' sockets.

A restriction is permanent for the thread and everything it later executes, and it only ever narrows: a second
ruleset is intersected with the first (the kernel enforces every layer).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from host_bridge.libc import LIBC as _LIBC
from host_bridge.system import IS_LINUX

ACCESS_FS_EXECUTE = 1 << 0
ACCESS_FS_WRITE_FILE = 1 << 1
ACCESS_FS_READ_FILE = 1 << 2
ACCESS_FS_READ_DIR = 1 << 3
ACCESS_FS_REMOVE_DIR = 1 << 4
ACCESS_FS_REMOVE_FILE = 1 << 5
ACCESS_FS_MAKE_CHAR = 1 << 6
ACCESS_FS_MAKE_DIR = 1 << 7
ACCESS_FS_MAKE_REG = 1 << 8
ACCESS_FS_MAKE_SOCK = 1 << 9
ACCESS_FS_MAKE_FIFO = 1 << 10
ACCESS_FS_MAKE_BLOCK = 1 << 11
ACCESS_FS_MAKE_SYM = 1 << 12
ACCESS_FS_REFER = 1 << 13
"""ABI 2: link or rename a file into another directory."""
ACCESS_FS_TRUNCATE = 1 << 14
"""ABI 3: ``truncate``, ``ftruncate`` and ``open(O_TRUNC)``."""
ACCESS_FS_IOCTL_DEV = 1 << 15
"""ABI 5: ``ioctl`` on character and block devices."""
ACCESS_FS_RESOLVE_UNIX = 1 << 16
"""ABI 9: connect or send to a pathname UNIX socket (one created outside the sandbox needs a rule)."""

ACCESS_NET_BIND_TCP = 1 << 0
"""ABI 4: bind a TCP socket to a port."""
ACCESS_NET_CONNECT_TCP = 1 << 1
"""ABI 4: connect a TCP socket to a port."""
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
"""ABI 6: no connection to an abstract UNIX socket created outside the sandbox."""
SCOPE_SIGNAL = 1 << 1
"""ABI 6: no signal to a process outside the sandbox."""

_ABI_1_FS = (1 << 13) - 1
_ABI_5_FS = _ABI_1_FS | ACCESS_FS_REFER | ACCESS_FS_TRUNCATE | ACCESS_FS_IOCTL_DEV
FS_RIGHTS_BY_ABI: dict[int, int] = {
    1: _ABI_1_FS,
    2: _ABI_1_FS | ACCESS_FS_REFER,
    3: _ABI_1_FS | ACCESS_FS_REFER | ACCESS_FS_TRUNCATE,
    4: _ABI_1_FS | ACCESS_FS_REFER | ACCESS_FS_TRUNCATE,
    5: _ABI_5_FS,
    6: _ABI_5_FS,
    7: _ABI_5_FS,
    8: _ABI_5_FS,
    9: _ABI_5_FS | ACCESS_FS_RESOLVE_UNIX,
}
"""The file system rights each ABI version knows (6: scopes, 7: audit logging and 8: all threads added none)."""
NET_ABI = 4
"""The first ABI with TCP port rules."""
SCOPE_ABI = 6
"""The first ABI with scopes (signals, abstract UNIX sockets)."""
RESOLVE_UNIX_ABI = 9
"""The first ABI that controls connections to pathname UNIX sockets."""

FILE_RIGHTS = (
    ACCESS_FS_EXECUTE
    | ACCESS_FS_WRITE_FILE
    | ACCESS_FS_READ_FILE
    | ACCESS_FS_TRUNCATE
    | ACCESS_FS_IOCTL_DEV
    | ACCESS_FS_RESOLVE_UNIX
)
"""The only rights a rule on a non-directory may carry (the kernel refuses others with ``EINVAL``)."""

READ = ACCESS_FS_READ_FILE | ACCESS_FS_READ_DIR
"""Open files for reading and list directories."""
READ_EXECUTE = READ | ACCESS_FS_EXECUTE
"""Read, and execute programs."""
READ_WRITE = ((1 << 16) - 1) & ~(ACCESS_FS_MAKE_CHAR | ACCESS_FS_MAKE_BLOCK | ACCESS_FS_IOCTL_DEV)
"""Read, write, create, remove, rename and execute files, folders, links, FIFOs and sockets (masked to what the ABI
knows). Never device nodes: a server running as root could otherwise make one for a disk in a folder it may write, and
read or write the disk through it."""
DEVICE = ACCESS_FS_READ_FILE | ACCESS_FS_WRITE_FILE | ACCESS_FS_TRUNCATE | ACCESS_FS_IOCTL_DEV
"""What ``/dev/null`` and the other devices granted need: read, write, ``O_TRUNC`` (shell redirections) and ioctls."""

_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_O_PATH = getattr(os, "O_PATH", 0o10000000)


class LandlockError(OSError):
    """A Landlock step failed; the message names the step, the path if any, and the errno."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


_ATTR_SIZE_BY_FIELDS = {1: 8, 2: 16, 3: 24}


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def _syscall_numbers() -> tuple[int, int, int]:
    # Landlock came after the syscall tables were unified: 444–446 everywhere except alpha.
    base = 554 if platform.machine() == "alpha" else 444
    return base, base + 1, base + 2


_CREATE, _ADD_RULE, _RESTRICT = _syscall_numbers()


def _syscall(number: int, *args: object) -> int:
    assert _LIBC is not None
    ctypes.set_errno(0)
    result: int = _LIBC.syscall(number, *args)
    return result


def _describe(code: int) -> str:
    name = errno.errorcode.get(code, f"errno {code}")
    return f"{name} ({os.strerror(code)})"


def landlock_abi() -> int:
    """The Landlock ABI version of the running kernel, or 0 when Landlock cannot be used.

    0 covers: not Linux, a kernel without Landlock (``ENOSYS``), and Landlock built in but not enabled at boot
    (``EOPNOTSUPP``; it must be in the ``lsm=`` list). :func:`unsupported_reason` says which.
    """
    if _LIBC is None:
        return 0
    version = _syscall(_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(version, 0)


def unsupported_reason() -> str | None:
    """Why Landlock cannot be used here, as a sentence, or ``None`` when it can."""
    if not IS_LINUX:
        return f"Landlock is a Linux feature; this is {sys.platform}"
    if _LIBC is None:
        return "the C library could not be loaded to call Landlock"
    version = _syscall(_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    if version >= 1:
        return None
    code = ctypes.get_errno()
    if code == errno.ENOSYS:
        return "this Linux kernel has no Landlock (it needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK)"
    if code == errno.EOPNOTSUPP:
        return "Landlock is built into this kernel but disabled; add landlock to the lsm= boot parameter"
    return f"the Landlock version query failed with {_describe(code)}"


def handled_rights(abi: int) -> int:
    """Every file system right ``abi`` knows (the newest this module knows for later versions); 0 for ABI 0."""
    if abi <= 0:
        return 0
    return FS_RIGHTS_BY_ABI[min(abi, max(FS_RIGHTS_BY_ABI))]


@dataclass(frozen=True)
class Attributes:
    """What a ruleset handles: file system rights, network rights, and scopes (``struct landlock_ruleset_attr``)."""

    fs: int
    """File system rights refused unless a rule grants them."""
    net: int = 0
    """TCP rights refused (no port rule is ever added: a server with its network off binds and connects to none)."""
    scoped: int = 0
    """Scopes: IPC with processes outside the sandbox that is refused."""

    def size(self) -> int:
        """The bytes of ``struct landlock_ruleset_attr`` to pass: only as many fields as are used, so that a kernel
        older than a field never sees it."""
        return _ATTR_SIZE_BY_FIELDS[3 if self.scoped else 2 if self.net else 1]


def attributes_for(abi: int, *, network: bool = True, unix_sockets: bool = False) -> Attributes:
    """What a ruleset for ``abi`` handles: every file system right it knows; TCP bind and connect when ``network``
    is off (ABI 4+); the signal scope, and the abstract UNIX socket scope unless ``unix_sockets`` (ABI 6+); and
    connections to pathname UNIX sockets unless ``unix_sockets`` (ABI 9+)."""
    fs = handled_rights(abi)
    if unix_sockets:
        fs &= ~ACCESS_FS_RESOLVE_UNIX
    net = ACCESS_NET_BIND_TCP | ACCESS_NET_CONNECT_TCP if abi >= NET_ABI and not network else 0
    scoped = 0
    if abi >= SCOPE_ABI:
        scoped = SCOPE_SIGNAL if unix_sockets else SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET
    return Attributes(fs=fs, net=net, scoped=scoped)


@dataclass(frozen=True)
class Rule:
    """Allow ``access`` (``READ``, ``READ_EXECUTE``, ``READ_WRITE``, ``DEVICE`` …) on ``path`` and beneath it."""

    path: str
    access: int


class Ruleset:
    """A Landlock ruleset being built; :meth:`restrict_self` applies it to the calling thread and closes it.

    Use it as a context manager so the descriptor is closed on every path.
    """

    def __init__(self, abi: int | None = None, attributes: Attributes | None = None) -> None:
        self.abi = landlock_abi() if abi is None else abi
        """The ABI version whose rights the ruleset handles."""
        if self.abi < 1:
            raise LandlockError(errno.ENOSYS, f"cannot create a Landlock ruleset: {unsupported_reason()}")
        self.attributes = attributes if attributes is not None else attributes_for(self.abi)
        """What it handles (file system rights, network rights, scopes)."""
        self.handled = self.attributes.fs
        """The file system rights this ruleset restricts; a rule's rights are masked to these."""
        attr = _RulesetAttr(self.handled, self.attributes.net, self.attributes.scoped)
        size = self.attributes.size()
        fd = _syscall(_CREATE, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
        if fd < 0:
            code = ctypes.get_errno()
            raise LandlockError(code, f"landlock_create_ruleset failed: {_describe(code)}")
        self._fd = fd
        self._attr = _PathBeneathAttr()

    def __enter__(self) -> Ruleset:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the ruleset's descriptor (idempotent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def add(self, rule: Rule) -> bool:
        """Allow ``rule.access`` beneath ``rule.path``; ``False`` (and no rule) when the path does not exist.

        A path that is not a directory gets only the rights a file can have. Raises :class:`LandlockError` naming
        the path and the errno for anything else that goes wrong.
        """
        try:
            fd = os.open(rule.path, _O_PATH | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError as error:
            raise LandlockError(
                error.errno, f"cannot open {rule.path!r} for a Landlock rule: {_describe(error.errno or 0)}"
            ) from None
        try:
            access = rule.access & self.handled
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                access &= FILE_RIGHTS
            if not access:
                return False
            self._attr.allowed_access = access
            self._attr.parent_fd = fd
            if (
                _syscall(
                    _ADD_RULE,
                    ctypes.c_int(self._fd),
                    ctypes.c_int(_RULE_PATH_BENEATH),
                    ctypes.byref(self._attr),
                    ctypes.c_uint32(0),
                )
                != 0
            ):
                code = ctypes.get_errno()
                raise LandlockError(code, f"landlock_add_rule for {rule.path!r} failed: {_describe(code)}")
            return True
        finally:
            os.close(fd)

    def restrict_self(self) -> None:
        """Set ``no_new_privs`` and confine the calling thread (and whatever it executes) to the rules added.

        Closes the ruleset. Raises :class:`LandlockError` naming the step and the errno.
        """
        assert _LIBC is not None
        try:
            ctypes.set_errno(0)
            if _LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                code = ctypes.get_errno()
                raise LandlockError(code, f"prctl(PR_SET_NO_NEW_PRIVS) failed: {_describe(code)}")
            if _syscall(_RESTRICT, ctypes.c_int(self._fd), ctypes.c_uint32(0)) != 0:
                code = ctypes.get_errno()
                raise LandlockError(code, f"landlock_restrict_self failed: {_describe(code)}")
        finally:
            self.close()


def restrict(rules: Iterable[Rule], abi: int | None = None, attributes: Attributes | None = None) -> list[str]:
    """Confine the calling thread to ``rules`` (see :class:`Ruleset`; ``attributes`` default to every file system
    right and the scopes of ``abi``); the paths skipped because they do not exist.

    Call it in a process with a single thread (a forked child before ``exec``, or a fresh interpreter): Landlock
    restricts only the calling thread.
    """
    skipped: list[str] = []
    with Ruleset(abi, attributes) as ruleset:
        for rule in rules:
            if not ruleset.add(rule):
                skipped.append(rule.path)
        ruleset.restrict_self()
    return skipped
