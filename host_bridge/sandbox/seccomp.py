"""Socket rules Landlock cannot express on this kernel, as a seccomp filter built with libseccomp.

Before Landlock ABI 9 nothing stops a confined process from connecting to a *named* UNIX socket (the gateway's, the
session bus, ssh-agent, Docker), and Landlock's TCP rules (ABI 4) leave UDP, other protocols and TCP Fast Open (a
``sendto`` with ``MSG_FASTOPEN`` connects without ``connect``; seen on Linux 6.18) open. The filter refuses, with
``EACCES`` (the error Landlock gives):

* UNIX sockets, unless the user let the server reach other programs: ``socket(AF_UNIX)`` (no connect, bind or send
  to any named or abstract socket), and ``socketpair(AF_UNIX, SOCK_DGRAM)`` (an unconnected datagram socket can send
  to a named one). Stream ``socketpair`` stays: runtimes talk to their own children and threads over it (asyncio,
  libuv, ``multiprocessing``). glibc's lookups through nscd and systemd fall back to the files when ``socket``
  fails.
* With the network off: every address family but UNIX, IPv4, IPv6 and netlink (which ``getaddrinfo`` uses to read
  the machine's own addresses); IPv4/IPv6 sockets that are not TCP (UDP, raw, SCTP, MPTCP); and sends that carry
  ``MSG_FASTOPEN``. Landlock refuses TCP ``bind`` and ``connect``.
* ``io_uring_setup`` (``ENOSYS``, which runtimes take as "not available" and fall back from): io_uring can create and
  connect sockets without the system calls the filter sees.

The filter is built once per combination in the parent through a maintained libseccomp binding — the official one
(``import seccomp``, Debian's ``python3-seccomp``) when the interpreter has it, else ``pyseccomp`` (from PyPI, the same
API over the system's ``libseccomp.so.2`` through ``ctypes``) — and exported as BPF; the child installs the program
with one ``prctl`` (:mod:`host_bridge.sandbox.bpf`). A call from another architecture (32-bit ``int 0x80``, x32) is
killed: libseccomp's filter checks the architecture first.
"""

from __future__ import annotations

import errno
import functools
import tempfile
from typing import Any

from host_bridge.system import IS_LINUX

AF_UNIX = 1
AF_INET = 2
AF_INET6 = 10
AF_NETLINK = 16
SOCK_STREAM = 1
SOCK_DGRAM = 2
SOCK_TYPE_MASK = 0xF
IPPROTO_TCP = 6
MSG_FASTOPEN = 0x20000000
_OTHER_TYPES = (2, 3, 4, 5, 6, 10)
"""Socket types that are not ``SOCK_STREAM``: datagram, raw, RDM, seqpacket, DCCP, packet."""


def _binding() -> Any:
    """The libseccomp binding of this interpreter (raises ``ImportError`` with the reason when there is none)."""
    if not IS_LINUX:
        raise ImportError("seccomp is a Linux feature")
    try:
        import seccomp  # pyright: ignore[reportMissingImports]

        return seccomp  # pyright: ignore[reportUnknownVariableType]
    except ImportError:
        pass
    try:
        import pyseccomp  # pyright: ignore[reportMissingTypeStubs]
    except ImportError:
        raise ImportError("no libseccomp binding is installed (pip install pyseccomp)") from None
    except (RuntimeError, OSError) as error:
        raise ImportError(f"libseccomp could not be loaded ({error}; install the libseccomp2 package)") from None
    return pyseccomp


@functools.cache
def unavailable_reason() -> str | None:
    """Why seccomp filters cannot be built here, as a sentence, or ``None`` when they can."""
    try:
        _binding()
    except ImportError as error:
        return str(error)
    try:
        program(refuse_unix=True, network=False)
    except OSError as error:
        return f"building the seccomp filter failed: {error}"
    return None


@functools.cache
def program(*, refuse_unix: bool, network: bool) -> bytes | None:
    """The BPF program for a server (``None`` when nothing needs refusing); raises ``ImportError`` without a binding,
    ``OSError`` when libseccomp refuses a rule."""
    if not refuse_unix and network:
        return None
    sc = _binding()
    refuse = sc.ERRNO(errno.EACCES)
    flt = sc.SyscallFilter(sc.ALLOW)

    def arg(index: int, op: Any, value: int, mask: int | None = None) -> Any:
        return sc.Arg(index, op, value) if mask is None else sc.Arg(index, op, mask, value)

    flt.add_rule(sc.ERRNO(errno.ENOSYS), "io_uring_setup")
    if refuse_unix:
        flt.add_rule(refuse, "socket", arg(0, sc.EQ, AF_UNIX))
        flt.add_rule(refuse, "socketpair", arg(0, sc.EQ, AF_UNIX), arg(1, sc.MASKED_EQ, SOCK_DGRAM, SOCK_TYPE_MASK))
    if not network:
        for family in (*range(3, AF_INET6), *range(AF_INET6 + 1, AF_NETLINK)):
            flt.add_rule(refuse, "socket", arg(0, sc.EQ, family))
        flt.add_rule(refuse, "socket", arg(0, sc.GT, AF_NETLINK))
        for family in (AF_INET, AF_INET6):
            for kind in _OTHER_TYPES:
                flt.add_rule(refuse, "socket", arg(0, sc.EQ, family), arg(1, sc.MASKED_EQ, kind, SOCK_TYPE_MASK))
            flt.add_rule(refuse, "socket", arg(0, sc.EQ, family), arg(2, sc.GT, IPPROTO_TCP))
        flt.add_rule(refuse, "sendto", arg(3, sc.MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN))
        flt.add_rule(refuse, "sendmsg", arg(2, sc.MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN))
        flt.add_rule(refuse, "sendmmsg", arg(3, sc.MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN))
    with tempfile.TemporaryFile() as file:
        flt.export_bpf(file)
        file.seek(0)
        data = file.read()
    return bytes(data) if data else None


def describe(refuse_unix: bool, network: bool) -> list[str]:
    """What the filter for these settings refuses, in words (empty when no filter is needed)."""
    said: list[str] = []
    if refuse_unix:
        said.append("UNIX sockets (named and abstract)")
    if not network:
        said.append("UDP and other non-TCP sockets, and TCP Fast Open")
    return said
