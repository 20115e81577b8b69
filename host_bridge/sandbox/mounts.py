"""A mount namespace around a server through bubblewrap: a private ``/dev``, and read-only binds over the files in
its writable folders that git, editors and shells later run outside any sandbox.

Landlock grants only ever add up beneath a folder, so a writable folder cannot hold a file the server may not
change, and git must write beside ``.git/config`` (its lock files) to work at all. A mount namespace can: each
existing ``.git/hooks``, ``.git/config``, ``.vscode``, ``.mcp.json`` and ``.envrc`` of a read-write folder is bound
over itself read-only, so writing there fails with ``EROFS`` whatever the server's rights. Landlock forbids mounting
once applied, so bubblewrap goes first and ``python -m host_bridge.sandbox.run`` applies Landlock inside it.

The same namespace gives the server a ``/dev`` of its own (bubblewrap's ``--dev``): its own pseudo-terminal instance
and its own ``/dev/shm``, which are then granted; without it neither the user's terminals nor the shared ``/dev/shm``
are granted at all.

Bubblewrap (Debian's ``bubblewrap``) needs user namespaces or root with ``CAP_SYS_ADMIN``; a container that allows
neither (Docker's default) has no mount layer, and status says so. A path that does not exist yet cannot be bound:
status names the ones the server could still create.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass

from host_bridge.sandbox.landlock import DEVICE, READ_WRITE, Rule

PLANTED = (".git/hooks", ".git/config", ".vscode", ".mcp.json", ".envrc")
"""Paths in a folder that other programs run or read as configuration outside any sandbox: git's hooks and settings
(``core.fsmonitor`` runs on ``git status``), VS Code's workspace settings and MCP servers, Claude Code's MCP servers,
direnv's script."""

PRIVATE_DEVICES = (
    Rule("/dev/pts", DEVICE),
    Rule("/dev/ptmx", DEVICE),
    Rule("/dev/tty", DEVICE),
    Rule("/dev/shm", READ_WRITE),
)
"""What a private ``/dev`` adds to the Landlock rules: the server's own terminals and shared memory."""

_PROBE_TIMEOUT = 10.0


@dataclass(frozen=True)
class MountLayer:
    """The bubblewrap command line that starts a server in its own mount namespace."""

    bwrap: str
    """The ``bwrap`` executable."""
    protected: tuple[str, ...]
    """Existing planted-file paths bound read-only."""
    missing: tuple[str, ...]
    """Planted-file paths that do not exist yet, so could still be created by the server."""

    def command(self) -> list[str]:
        """``bwrap`` and its options, up to and including ``--``."""
        args = [self.bwrap, "--bind", "/", "/", "--dev", "/dev", "--die-with-parent"]
        for path in self.protected:
            args += ["--ro-bind", path, path]
        return [*args, "--"]


def find_bwrap() -> str | None:
    """The ``bwrap`` on this machine (the system's, then ``PATH``), or ``None``."""
    for candidate in ("/usr/bin/bwrap", shutil.which("bwrap")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@functools.cache
def unavailable_reason() -> str | None:
    """Why there is no mount layer here, as a sentence, or ``None`` when bubblewrap works (probed once)."""
    bwrap = find_bwrap()
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        done = subprocess.run(
            [bwrap, "--bind", "/", "/", "--dev", "/dev", "--", "/bin/true"],
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT,
            check=False,
            start_new_session=True,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return f"bubblewrap could not be started ({error})"
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit status {done.returncode}"
        return f"bubblewrap cannot make a mount namespace here ({said}; it needs user namespaces or CAP_SYS_ADMIN)"
    return None


def layer_for(writable_folders: Iterable[str]) -> MountLayer | None:
    """The mount layer for a server that may write ``writable_folders``, or ``None`` when there is none here."""
    if unavailable_reason() is not None:
        return None
    bwrap = find_bwrap()
    assert bwrap is not None
    protected: list[str] = []
    missing: list[str] = []
    for path in planted_paths(writable_folders):
        (protected if os.path.exists(path) else missing).append(path)
    return MountLayer(bwrap, tuple(protected), tuple(missing))


def planted_paths(folders: Iterable[str]) -> list[str]:
    """The planted-file paths of each folder (:data:`PLANTED`): a ``.git`` file's real git folder followed, and
    ``.git`` itself where there is none (a new repository would bring its own hooks and settings)."""
    paths: list[str] = []
    for folder in folders:
        dot_git = os.path.join(folder, ".git")
        if os.path.isdir(dot_git):
            paths += [os.path.join(dot_git, "hooks"), os.path.join(dot_git, "config")]
        elif os.path.lexists(dot_git):
            for git_dir in _linked_git_dirs(dot_git):
                paths += [os.path.join(git_dir, "hooks"), os.path.join(git_dir, "config")]
        else:
            paths.append(dot_git)
        paths += [os.path.join(folder, relative) for relative in PLANTED if not relative.startswith(".git/")]
    return list(dict.fromkeys(paths))


def _linked_git_dirs(dot_git: str) -> list[str]:
    """For a ``.git`` *file* (a worktree or submodule): the git folder it names and that folder's common folder."""
    if not os.path.isfile(dot_git):
        return []
    try:
        with open(dot_git, encoding="utf-8", errors="replace") as file:
            first = file.readline(4096).strip()
    except OSError:
        return []
    if not first.startswith("gitdir:"):
        return []
    git_dir = os.path.normpath(os.path.join(os.path.dirname(dot_git), first.removeprefix("gitdir:").strip()))
    found = [git_dir]
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8", errors="replace") as file:
            common = file.readline(4096).strip()
        if common:
            found.append(os.path.normpath(os.path.join(git_dir, common)))
    except OSError:
        pass
    return found
