"""Reading files a repository controls (manifests, ``.vscode/mcp.json``, envFiles, ``.git`` links) as hostile input.

A cloned repository decides what sits at a path: a named pipe that blocks whoever opens it, a device, a
symlink to ``/proc/self/fd/0`` (the sidecar's own LSP input), a gigabyte of data, bytes that are not UTF-8.
:func:`read_repo_file` reads only bounded regular files and refuses everything else with a
:class:`RepoFileError` that names the file and what is wrong with it; nothing it does can block.
"""

from __future__ import annotations

import codecs
import os
import stat
from typing import Literal

from host_bridge.system import IS_LINUX, IS_WINDOWS
from host_bridge.text import visible

_SYSTEM_TREES = () if IS_WINDOWS else ("/proc", "/sys", "/dev")
"""Pseudo file systems whose "files" are processes, kernel state and devices, never repository content."""

_FLAGS = os.O_RDONLY | sum(getattr(os, flag, 0) for flag in ("O_NONBLOCK", "O_NOCTTY", "O_CLOEXEC", "O_BINARY"))
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FD_LINKS = "/proc/self/fd" if IS_LINUX else None

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symbolic link"),
)


RepoFileProblem = Literal["missing", "symlink", "system", "special", "unreadable", "too_large", "not_utf8"]
"""Why a repository file was refused: it does not exist, it is a symlink that is not followed, it leads into
``/proc``, ``/sys`` or ``/dev``, it is not a regular file, the OS would not let it be read, it is over the
limit, it is not UTF-8."""


class RepoFileError(Exception):
    """A repository file that was not read: it is missing, not a regular file, too large or not UTF-8."""

    def __init__(self, path: str, reason: str, problem: RepoFileProblem = "unreadable") -> None:
        super().__init__(path, reason, problem)
        self.path = path
        """The path as it was given."""
        self.reason = reason
        """What is wrong and what to do, as a clause: ``it is a named pipe (FIFO), not a regular file; …``."""
        self.problem: RepoFileProblem = problem
        """The kind of refusal, for callers that treat some as ordinary (a missing optional file)."""

    def __str__(self) -> str:
        return visible(f"cannot read {self.path}: {self.reason}")


def _system_tree(real: str) -> str | None:
    for tree in _SYSTEM_TREES:
        if real == tree or real.startswith(tree + "/"):
            return tree
    return None


def _not_regular(path: str, mode: int) -> RepoFileError:
    kind = next((name for test, name in _KINDS if test(mode)), "something else")
    reason = f"it is {kind}, not a regular file; only regular files are read, replace or remove it"
    return RepoFileError(path, reason, "special")


def _system_file(path: str, real: str) -> RepoFileError:
    return RepoFileError(
        path, f"it leads to {real}, a system file under {_system_tree(real)}, never read as a repository file", "system"
    )


def read_repo_file(path: str, limit: int, *, follow_symlinks: bool = True, truncate: bool = False) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them; :class:`RepoFileError` otherwise.

    Refused, without ever blocking: anything that is not a regular file (FIFOs, sockets, devices,
    directories), anything whose real path is under ``/proc``, ``/sys`` or ``/dev`` (also through symlinks,
    checked again on the opened descriptor on Linux), symlinks at all when ``follow_symlinks`` is false, and
    a file larger than ``limit`` bytes unless ``truncate`` is true (then its first ``limit`` bytes are
    returned). The file is opened non-blocking, so a FIFO swapped in after the checks cannot block either.
    """
    try:
        info = os.stat(path, follow_symlinks=follow_symlinks)
    except FileNotFoundError:
        raise RepoFileError(path, "it does not exist (or is a broken symbolic link)", "missing") from None
    except OSError as error:
        reason = f"it cannot be looked at ({error.strerror or error}); check its permissions"
        raise RepoFileError(path, reason, "unreadable") from None
    if not follow_symlinks and stat.S_ISLNK(info.st_mode):
        reason = "it is a symbolic link, which is not followed here; put the file itself there"
        raise RepoFileError(path, reason, "symlink")
    real = os.path.realpath(path)
    if _system_tree(real) is not None:
        raise _system_file(path, real)
    if not stat.S_ISREG(info.st_mode):
        raise _not_regular(path, info.st_mode)
    try:
        fd = os.open(path, _FLAGS | (0 if follow_symlinks else _NOFOLLOW))
    except OSError as error:
        reason = f"it cannot be opened ({error.strerror or error}); check its permissions"
        raise RepoFileError(path, reason, "unreadable") from None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise _not_regular(path, opened.st_mode)  # replaced between the checks and the open
        if _FD_LINKS is not None:
            try:
                where = os.readlink(f"{_FD_LINKS}/{fd}")
            except OSError:
                where = real
            if _system_tree(where) is not None:
                raise _system_file(path, where)
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError as error:
        raise RepoFileError(path, f"reading it failed ({error.strerror or error})", "unreadable") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        if not truncate:
            raise RepoFileError(path, f"it is larger than {limit} bytes; make it smaller", "too_large")
        data = data[:limit]
    return data


def decode_utf8(path: str, data: bytes, *, truncated: bool = False) -> str:
    """``data`` read from ``path`` as strict UTF-8 text without a leading BOM; :class:`RepoFileError` if it is not.

    With ``truncated``, a multi-byte character cut off at the very end (by a read limit) is dropped, not an error.
    """
    try:
        text = codecs.getincrementaldecoder("utf-8")("strict").decode(data, final=not truncated)
    except UnicodeDecodeError as error:
        byte = data[error.start : error.start + 1].hex()
        reason = f"it is not valid UTF-8 (byte 0x{byte} at offset {error.start}); save it as UTF-8"
        raise RepoFileError(path, reason, "not_utf8") from None
    return text.removeprefix("\ufeff")


def read_repo_text(path: str, limit: int, *, follow_symlinks: bool = True, truncate: bool = False) -> str:
    """:func:`read_repo_file`, decoded with :func:`decode_utf8`; every failure is a :class:`RepoFileError`."""
    data = read_repo_file(path, limit, follow_symlinks=follow_symlinks, truncate=truncate)
    return decode_utf8(path, data, truncated=truncate and len(data) == limit)
