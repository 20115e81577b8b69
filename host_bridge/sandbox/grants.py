"""One granted path of a sandbox policy, and the path arithmetic every part of the policy shares.

Containment is always by whole path components (``/a/b`` is within ``/a``, ``/a/bc`` is not), and canonical paths
are real paths (symlinks resolved), the form Landlock and Seatbelt both match.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from host_bridge.wire import WireModel

GrantKind = Literal["system", "device", "runtime", "package", "cache", "hostBridge", "tmp", "shared", "allowed"]
"""Why a path is in a policy: system paths, device nodes, the server's runtime, the package tree of its program,
a package runner's private cache, host_bridge's own interpreter, the private temp folder, a consented folder, or a
path the user allowed read-only after a refusal."""


class PathGrant(WireModel):
    """One path the sandbox lets a server use (and everything beneath it, for a directory)."""

    path: str
    """Canonical absolute path."""
    kind: GrantKind
    """Why it is granted."""
    why: str
    """The reason in words, e.g. ``"node's install prefix"``."""
    create: bool = False
    """Created (mode 0700, with its parents) before the sandbox is applied when missing: a package runner's private
    cache, which must be writable even on its first use, when its parent is not."""


def canonical(path: str | Path) -> Path:
    """``path`` with ``~`` expanded and every symlink resolved."""
    return Path(os.path.realpath(os.path.expanduser(str(path))))


def within(path: str, folder: str) -> bool:
    """``path`` is ``folder`` or beneath it (whole components)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def is_home_or_above(path: Path, home: Path) -> bool:
    """``path`` is the home folder or one of its ancestors (``/`` included), as given or resolved."""
    resolved = str(canonical(path))
    return any(within(str(candidate), resolved) for candidate in (home, canonical(home)))


def is_root(path: Path) -> bool:
    """``path`` is a file system root (``/``)."""
    return path == Path(path.anchor)


def same_file(a: Path, b: Path) -> bool:
    """``a`` and ``b`` are the same file (``False`` when either is missing)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
