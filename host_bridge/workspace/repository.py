"""What git says about one repository, asked so that a hostile ``.git/`` can neither block nor lie.

Every git call runs with a timeout, in a process group of its own (killed as a whole on timeout or on any
error), with a Linux parent-death signal, no standard input and ``core.fsmonitor`` off, so a FIFO at
``.git/info/exclude``, a config ``include.path`` of ``/dev/stdin`` or an fsmonitor program cannot hang
detection or outlive it. Linked worktrees named by ``.git/worktrees/*/gitdir`` records are offered only when
the worktree's own ``.git`` file points back at that record (:func:`verified_worktrees`).
"""

from __future__ import annotations

import logging
import os
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

from host_bridge.procs import die_with_parent, kill_group
from host_bridge.safe_read import RepoFileError, read_repo_text
from host_bridge.system import IS_WINDOWS
from host_bridge.text import visible

logger = logging.getLogger(__name__)

_LINK_LIMIT = 64 * 1024
"""Bytes read at most of a ``.git`` file, a ``gitdir`` or a ``commondir`` record (each holds one path)."""

_GIT_LOCATION_VARIABLES = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_NAMESPACE",
)
"""Inherited from a git hook or alias, these would point every look-up at one repository."""


class GitUnavailable(RuntimeError):
    """There is no git executable to run."""


class GitFailed(RuntimeError):
    """A git call exited with an error; the message is git's first line of complaint."""


class GitTimedOut(RuntimeError):
    """A git call did not finish within its timeout; its process group was killed."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"git did not finish within {seconds:g} s")
        self.seconds = seconds


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARIABLES}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def _first_complaint(stderr: bytes) -> str:
    for line in os.fsdecode(stderr).splitlines():
        line = line.strip().removeprefix("fatal:").removeprefix("error:").strip()
        if line:
            return visible(line[:300])
    return "it failed without saying why"


class GitCall:
    """A git call under way (:func:`start_git`): :meth:`result` waits for it, :meth:`close` ends it if it still runs.

    The child leads a new process group with a parent-death signal (Linux); on timeout, on any exception while
    waiting, or on :meth:`close` before it finished, the whole group is killed before the child is reaped.
    """

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process

    def result(self, timeout: float, *, ok_codes: tuple[int, ...] = (0,)) -> bytes:
        """Git's standard output; :class:`GitTimedOut` or :class:`GitFailed` otherwise."""
        try:
            stdout, stderr = self._process.communicate(timeout=timeout)
        except BaseException as error:
            self._end()
            if isinstance(error, subprocess.TimeoutExpired):
                raise GitTimedOut(timeout) from None
            raise
        if self._process.returncode not in ok_codes:
            raise GitFailed(_first_complaint(stderr))
        return stdout

    def close(self) -> None:
        """End the call unless it has been waited for (idempotent)."""
        if self._process.returncode is None:
            self._end()

    def _end(self) -> None:
        process = self._process
        # Still unreaped here, so the group id cannot have been reused: end the child and whatever it started.
        if process.returncode is None and not IS_WINDOWS:
            kill_group(process.pid)
        process.kill()
        process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def start_git(cwd: str, args: list[str]) -> GitCall:
    """Start ``git args`` in ``cwd`` (see :class:`GitCall`); :class:`GitFailed` or :class:`GitUnavailable` when
    it cannot start. Start it from a thread that lives until the call is waited for or closed."""
    command = ["git", "-c", "core.fsmonitor=false", *args]
    posix = not IS_WINDOWS
    try:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_environment(),
            start_new_session=posix,
            preexec_fn=die_with_parent if posix else None,
        )
    except FileNotFoundError as error:
        if not os.path.isdir(cwd):
            raise GitFailed(f"{cwd} no longer exists") from error
        raise GitUnavailable("no git executable was found on PATH") from error
    except OSError as error:
        raise GitFailed(f"git could not be started ({error.strerror or error})") from error
    return GitCall(process)


def run_git(cwd: str, args: list[str], timeout: float, *, ok_codes: tuple[int, ...] = (0,)) -> bytes:
    """The standard output of ``git args`` run in ``cwd``; :class:`GitTimedOut`, :class:`GitFailed` or
    :class:`GitUnavailable` otherwise.

    The child leads a new process group with a parent-death signal (Linux); on timeout or any exception the
    whole group is killed before the child is reaped. Call it from a thread that waits for it (it does).
    """
    return start_git(cwd, args).result(timeout, ok_codes=ok_codes)


@dataclass(frozen=True)
class Worktree:
    """One working tree of a repository, as ``git worktree list --porcelain`` names it."""

    path: str
    main: bool
    usable: bool
    """Neither bare nor prunable."""


@dataclass(frozen=True)
class Listing:
    """What git says about one repository."""

    files: list[str]
    """``/``-separated paths relative to the listed directory; ``dir/`` is a nested repository."""
    worktrees: list[Worktree]
    """Every working tree whose back-link agrees, the main one first; empty when there are no linked ones."""
    submodules: list[str]
    """Submodule paths relative to the toplevel, from ``.gitmodules``."""
    gitlinks: list[str] = field(default_factory=list[str])
    """Index entries of mode 160000 (submodules and embedded repositories), ``/``-separated, relative to the
    listed directory."""
    ignored: list[str] = field(default_factory=list[str])
    """Directories the ignore rules leave out as a whole, ``/``-separated without the trailing ``/``, relative to
    the listed directory (git does not look inside them)."""


def parse_worktrees(porcelain: str) -> list[Worktree]:
    """The blocks of ``git worktree list --porcelain``, the main working tree first."""
    worktrees: list[Worktree] = []
    for block in porcelain.split("\n\n"):
        path, unusable = None, False
        for line in block.splitlines():
            key, _, value = line.partition(" ")
            if key == "worktree":
                path = value
            elif key in ("bare", "prunable"):
                unusable = True
        if path is not None:
            worktrees.append(Worktree(path, main=not worktrees, usable=not unusable))
    return worktrees


def _read_link(path: str) -> str | None:
    """The one path a ``.git`` file, ``gitdir`` or ``commondir`` record holds, or ``None``."""
    try:
        text = read_repo_text(path, _LINK_LIMIT, follow_symlinks=False)
    except RepoFileError:
        return None
    line = text.splitlines()[0].strip() if text.strip() else ""
    return line or None


def git_dirs(toplevel: str) -> tuple[str, str] | None:
    """The real git directory and common directory of the working tree at ``toplevel``, or ``None``."""
    dotgit = os.path.join(toplevel, ".git")
    try:
        mode = os.lstat(dotgit).st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        gitdir = os.path.realpath(dotgit)
    elif stat.S_ISREG(mode):
        line = _read_link(dotgit)
        if line is None or not line.startswith("gitdir:"):
            return None
        gitdir = os.path.realpath(os.path.join(toplevel, line.removeprefix("gitdir:").strip()))
    else:
        return None
    common = gitdir
    if os.path.lexists(os.path.join(gitdir, "commondir")):
        record = _read_link(os.path.join(gitdir, "commondir"))
        if record is None:
            return None
        common = os.path.realpath(os.path.join(gitdir, record))
    return gitdir, common


def _same(a: str, b: str) -> bool:
    return os.path.normcase(a) == os.path.normcase(b)


def _back_link_agrees(path: str, common: str) -> bool:
    """Whether the linked worktree at ``path`` and its record in ``common/worktrees`` point at each other."""
    dotgit = os.path.join(path, ".git")
    try:
        if not stat.S_ISREG(os.lstat(dotgit).st_mode):
            return False
    except OSError:
        return False
    line = _read_link(dotgit)
    if line is None or not line.startswith("gitdir:"):
        return False
    admin = os.path.realpath(os.path.join(path, line.removeprefix("gitdir:").strip()))
    if not _same(os.path.dirname(admin), os.path.join(common, "worktrees")) or not os.path.isdir(admin):
        return False
    back = _read_link(os.path.join(admin, "gitdir"))
    return back is not None and _same(os.path.realpath(os.path.join(admin, back)), os.path.realpath(dotgit))


def verified_worktrees(worktrees: list[Worktree], common: str) -> list[Worktree]:
    """The usable entries of ``worktrees`` that the file system confirms; the main one first, if confirmed.

    ``git worktree list`` believes the ``.git/worktrees/<name>/gitdir`` records, which a repository can forge
    to name any directory. A linked worktree ``W`` is kept only when ``W/.git`` is a regular file whose
    ``gitdir:`` resolves to ``<common>/worktrees/<name>`` and that record's ``gitdir`` resolves to ``W/.git``;
    the main one only when its ``.git`` (a directory, or a file naming one) is ``common`` itself.
    """
    kept: list[Worktree] = []
    for worktree in worktrees:
        if not worktree.usable:
            continue
        path = os.path.realpath(worktree.path)
        if worktree.main:
            dirs = git_dirs(path)
            if dirs is not None and _same(dirs[0], common):
                kept.append(Worktree(path, main=True, usable=True))
        elif _back_link_agrees(path, common):
            kept.append(Worktree(path, main=False, usable=True))
        else:
            logger.debug("not offering %r as a worktree: its .git back-link does not agree", worktree.path)
    return kept


_GITLINK_TAGS = ("\0H 160000 ", "\0S 160000 ")
"""How a record of a gitlink (a submodule, or a repository added inside another without ``.gitmodules``) starts:
the tag of a cached (``H``) or skip-worktree (``S``) entry, then mode 160000."""


def parse_listing(output: bytes) -> tuple[list[str], list[str]]:
    """The paths and the gitlink paths of ``git ls-files -z -t -s --cached --others`` output.

    Each record is a tag and a space, then for a cached entry ``mode object stage<TAB>path`` and for an
    untracked one (tag ``?``) the path alone, so a file name shaped like a cached entry cannot pass for one.
    """
    text = os.fsdecode(output)
    records = text.split("\0")
    records.pop()  # what follows the last NUL
    files = [record[2:] if record[:1] == "?" else record.partition("\t")[2] for record in records]
    # Gitlinks are rare: find them in the text rather than testing every record.
    gitlinks: list[str] = []
    text = "\0" + text
    for tag in _GITLINK_TAGS:
        start = text.find(tag)
        while start >= 0:
            end = text.find("\0", start + 1)
            gitlinks.append(text[start + 1 : end].partition("\t")[2])
            start = text.find(tag, end)
    return files, gitlinks


_LIST_FILES = ["ls-files", "-z", "-t", "-s", "--cached", "--others", "--exclude-standard"]
_LIST_IGNORED = ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"]


def list_repository(
    toplevel: str, listing_dir: str, timeout: Callable[[], float], *, ignored: bool = True
) -> Listing:
    """Files (ignore rules applied), gitlinks, confirmed worktrees, submodules and, with ``ignored``, the
    ignored directories of the repository at ``toplevel``.

    ``listing_dir`` is where files are listed from (``toplevel`` or a folder below it); ``timeout`` gives the
    seconds the next git call may take. The ignored directories are listed by a second git running alongside
    the first; a failure of that one only leaves them out. Raises what :func:`run_git` raises.
    """
    ignored_call = start_git(listing_dir, _LIST_IGNORED) if ignored else None
    try:
        files, gitlinks = parse_listing(run_git(listing_dir, _LIST_FILES, timeout()))
        worktrees: list[Worktree] = []
        dirs = git_dirs(toplevel)
        if dirs is not None and os.path.isdir(os.path.join(dirs[1], "worktrees")):
            porcelain = os.fsdecode(run_git(toplevel, ["worktree", "list", "--porcelain"], timeout()))
            worktrees = verified_worktrees(parse_worktrees(porcelain), dirs[1])
        submodules = _submodules(toplevel, timeout)
        ignored_dirs: list[str] = []
        if ignored_call is not None:
            try:
                output = ignored_call.result(timeout())
            except GitFailed as error:
                logger.debug("git could not list the ignored folders of %s: %s", toplevel, error)
            else:
                ignored_dirs = [
                    entry.removesuffix("/") for entry in os.fsdecode(output).split("\0") if entry.endswith("/")
                ]
    finally:
        if ignored_call is not None:
            ignored_call.close()
    return Listing(files, worktrees, submodules, gitlinks, ignored_dirs)


def _submodules(toplevel: str, timeout: Callable[[], float]) -> list[str]:
    """Submodule paths from a regular ``.gitmodules`` file at ``toplevel``."""
    gitmodules = os.path.join(toplevel, ".gitmodules")
    try:
        regular = stat.S_ISREG(os.lstat(gitmodules).st_mode)
    except OSError:
        regular = False
    if not regular:
        return []
    config = run_git(
        toplevel,
        ["config", "--file", ".gitmodules", "--null", "--get-regexp", r"^submodule\..*\.path$"],
        timeout(),
        ok_codes=(0, 1),  # 1: no submodule has a path
    )
    records = os.fsdecode(config).split("\0")
    return [value for record in records if (value := record.partition("\n")[2])]
