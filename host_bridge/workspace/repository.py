"""What git says about one repository, asked so that a hostile ``.git/`` can neither block nor lie.

Every git call runs with a timeout, in a process group of its own (killed as a whole on timeout or on any
error), with a Linux parent-death signal, no standard input (but the paths handed to ``git check-ignore``)
and ``core.fsmonitor`` off, so a FIFO at ``.git/info/exclude``, a config ``include.path`` of ``/dev/stdin`` or
an fsmonitor program cannot hang detection or outlive it. Linked worktrees named by ``.git/worktrees/*/gitdir``
records are offered only when the worktree's own ``.git`` file points back at that record
(:func:`verified_worktrees`).
"""

from __future__ import annotations

import logging
import os
import stat
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from host_bridge.procs import die_with_parent, kill_group
from host_bridge.safe_read import RepoFileError, read_repo_text
from host_bridge.system import IS_WINDOWS
from host_bridge.text import visible

logger = logging.getLogger(__name__)

_LINK_LIMIT = 64 * 1024
"""Bytes read at most of a ``.git`` file, a ``gitdir`` or a ``commondir`` record (each holds one path)."""

_GIT_LOCATION_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_NAMESPACE",
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

    def result(self, timeout: float, *, ok_codes: tuple[int, ...] = (0,), given: bytes | None = None) -> bytes:
        """Git's standard output; :class:`GitTimedOut` or :class:`GitFailed` otherwise. ``given`` is written to its
        standard input (a call started with ``stdin=True``), which is then closed."""
        try:
            stdout, stderr = self._process.communicate(given, timeout=timeout)
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
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def start_git(cwd: str, args: list[str], *, stdin: bool = False) -> GitCall:
    """Start ``git args`` in ``cwd`` (see :class:`GitCall`); :class:`GitFailed` or :class:`GitUnavailable` when
    it cannot start. Start it from a thread that lives until the call is waited for or closed.

    Its standard input is empty, or with ``stdin`` a pipe that :meth:`GitCall.result` writes and closes (never
    this process's own standard input)."""
    command = ["git", "-c", "core.fsmonitor=false", *args]
    posix = not IS_WINDOWS
    try:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
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


def run_git(
    cwd: str, args: list[str], timeout: float, *, ok_codes: tuple[int, ...] = (0,), given: bytes | None = None
) -> bytes:
    """The standard output of ``git args`` run in ``cwd`` (given ``given`` on its standard input, if not ``None``);
    :class:`GitTimedOut`, :class:`GitFailed` or :class:`GitUnavailable` otherwise.

    The child leads a new process group with a parent-death signal (Linux); on timeout or any exception the
    whole group is killed before the child is reaped. Call it from a thread that waits for it (it does).
    """
    return start_git(cwd, args, stdin=given is not None).result(timeout, ok_codes=ok_codes, given=given)


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


def _tagged(text: str, tag: str) -> list[str]:
    """The records of ``text`` (NUL-terminated, with a NUL put before the first) that start with ``tag`` (which
    starts with that NUL): found in the text, for tags that are rare."""
    found: list[str] = []
    start = text.find(tag)
    while start >= 0:
        end = text.find("\0", start + 1)
        found.append(text[start + 1 : end])
        start = text.find(tag, end)
    return found


def _untracked(text: str) -> list[str]:
    """The untracked paths (tag ``?``) of ``git ls-files -z -t`` output, decoded."""
    return [record[2:] for record in _tagged("\0" + text, "\0? ")]


def _tracked(text: str, *, untracked: bool = True) -> tuple[list[str], list[str]]:
    """The index paths and the gitlink paths of ``git ls-files -z -t -s`` output, decoded (``untracked``: whether it
    may hold untracked records, which are left out)."""
    records = text.split("\0")
    records.pop()  # what follows the last NUL
    if untracked:
        tracked = [record.partition("\t")[2] for record in records if record[:1] != "?"]
    else:
        tracked = [record.partition("\t")[2] for record in records]
    # Gitlinks are rare: find them in the text rather than testing every record.
    text = "\0" + text
    gitlinks = [record.partition("\t")[2] for tag in _GITLINK_TAGS for record in _tagged(text, tag)]
    return tracked, gitlinks


def parse_listing(output: bytes) -> tuple[list[str], list[str]]:
    """The paths (the index's, then the untracked ones) and the gitlink paths of ``git ls-files -z -t -s --cached
    --others`` output.

    Each record is a tag and a space, then for a cached entry ``mode object stage<TAB>path`` and for an
    untracked one (tag ``?``) the path alone, so a file name shaped like a cached entry cannot pass for one.
    """
    text = os.fsdecode(output)
    tracked, gitlinks = _tracked(text)
    return tracked + _untracked(text), gitlinks


_LIST_FILES = ["ls-files", "-z", "-t", "-s", "--cached", "--others", "--exclude-standard"]
"""Every file but the ignored ones, a nested repository as ``dir/``: what :attr:`Listing.files` holds."""
_LIST_ALL = ["ls-files", "-z", "-t", "-s", "--cached", "--others", "--directory"]
"""The index, and what is not in it with no ignore rules applied: an untracked folder as a whole ``dir/``, never
entered (``node_modules/``), untracked files of tracked folders one by one. The one walk of the working tree."""
_CHECK_IGNORE = ["check-ignore", "--no-index", "-z", "--stdin"]
"""Which of the paths given (untracked ones, so the index has nothing to say) the ignore rules leave out."""
_LIST_UNTRACKED = ["--literal-pathspecs", "ls-files", "-z", "--others", "--exclude-standard"]
_LIST_IGNORED = ["--literal-pathspecs", "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"]
_MAX_PATHSPECS = 256
_PATHSPEC_CHARACTERS = 16_000
"""Untracked folders listed by name at most (a Windows command line holds 32 767 characters, and git matches every
path it meets against every pathspec); more, and the whole listed folder is walked again instead."""

_Sorted = Callable[[], tuple[list[str], list[str]]]
"""Waits for, and gives, the untracked files (ignore rules applied) and the ignored folders."""
_Start = Callable[[str, list[str]], GitCall]
"""Starts ``git args`` in a folder, to be closed with the other calls of one listing."""


def enclosing_toplevel(path: str) -> str | None:
    """The nearest directory at or above ``path`` holding a ``.git`` entry (what git would open)."""
    current = path
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def start_listings(folders: Iterable[str], *, at_most: int = 4) -> dict[str, GitCall]:
    """Start the walk :func:`list_repository` begins with in each of the first ``at_most`` canonical ``folders``
    that lie in a git working tree, keyed by folder, for it to take over (``started``).

    ``host-bridge roots`` calls it before importing the rest of detection, so git walks meanwhile. Start them from
    a thread that lives until they are waited for, and close whatever is not taken. Nothing is raised: a git that
    cannot start is met again, and reported, by detection itself.
    """
    started: dict[str, GitCall] = {}
    for folder in folders:
        if len(started) >= at_most:
            break
        if folder in started or enclosing_toplevel(folder) is None:
            continue
        try:
            started[folder] = start_git(folder, _LIST_ALL)
        except (GitFailed, GitUnavailable):
            break
    return started


def list_repository(
    toplevel: str,
    listing_dir: str,
    timeout: Callable[[], float],
    *,
    ignored: bool = True,
    started: GitCall | None = None,
) -> Listing:
    """Files (ignore rules applied), gitlinks, confirmed worktrees, submodules and, with ``ignored``, the
    ignored directories of the repository at ``toplevel``.

    ``listing_dir`` is where files are listed from (``toplevel`` or a folder below it); ``timeout`` gives the
    seconds the next git call may take; ``started`` is that walk already under way in ``listing_dir``
    (:func:`start_listings`; taken over, and closed, here). Raises what :func:`run_git` raises; a failure to find
    the ignored folders only leaves them out.

    The working tree is walked once, without ignore rules (:data:`_LIST_ALL`), alongside the worktree and
    submodule look-ups; ``git check-ignore`` then sorts what is untracked, and only the untracked folders that are
    not ignored are listed again, by name, for their files and ignored folders (:func:`_sort_untracked`), while
    the index paths are parsed. Without ``ignored``, one ``git ls-files`` with the ignore rules.
    """
    calls: list[GitCall] = [] if started is None else [started]

    def start(cwd: str, args: list[str]) -> GitCall:
        calls.append(start_git(cwd, args))
        return calls[-1]

    try:
        if started is not None and ignored:
            listing = started
        else:
            listing = start(listing_dir, _LIST_ALL if ignored else _LIST_FILES)
        dirs = git_dirs(toplevel)
        worktree_call = (
            start(toplevel, ["worktree", "list", "--porcelain"])
            if dirs is not None and os.path.isdir(os.path.join(dirs[1], "worktrees"))
            else None
        )
        submodule_call = start(toplevel, _SUBMODULE_PATHS) if _has_gitmodules(toplevel) else None
        text = os.fsdecode(listing.result(timeout()))
        worktrees: list[Worktree] = []
        if worktree_call is not None and dirs is not None:
            porcelain = os.fsdecode(worktree_call.result(timeout()))
            worktrees = verified_worktrees(parse_worktrees(porcelain), dirs[1])
        submodules: list[str] = []
        if submodule_call is not None:
            records = os.fsdecode(submodule_call.result(timeout(), ok_codes=(0, 1))).split("\0")  # 1: no paths
            submodules = [value for record in records if (value := record.partition("\n")[2])]
        untracked = _untracked(text)
        if not ignored:
            tracked, gitlinks = _tracked(text, untracked=bool(untracked))
            return Listing(tracked + untracked, worktrees, submodules, gitlinks)
        sorted_untracked = _sort_untracked(listing_dir, untracked, timeout, start)
        tracked, gitlinks = _tracked(text, untracked=bool(untracked))
        files, ignored_dirs = sorted_untracked()
    finally:
        for call in calls:
            call.close()
    return Listing(tracked + files, worktrees, submodules, gitlinks, ignored_dirs)


def _sort_untracked(listing_dir: str, untracked: list[str], timeout: Callable[[], float], start: _Start) -> _Sorted:
    """What ``git ls-files --others --exclude-standard`` and the ignored folders would have said, from the untracked
    paths of :data:`_LIST_ALL` (folders as ``dir/``); the git calls still needed are started with ``start``.

    The ignored folders are among those paths or inside the untracked folders that are not ignored; so are the
    untracked files that are not ignored, and the nested repositories (``dir/``). If ``check-ignore`` cannot sort
    them, or there are too many such folders to name, the whole listed folder is listed again."""
    if not untracked:
        return lambda: ([], [])
    # "./" before each path: a name starting with ":" would otherwise be read as pathspec magic.
    given = b"".join(os.fsencode("./" + path) + b"\0" for path in untracked)
    try:
        verdicts = run_git(listing_dir, _CHECK_IGNORE, timeout(), ok_codes=(0, 1), given=given)  # 1: none ignored
    except GitFailed as error:
        logger.debug("git check-ignore failed in %s (%s); listing it again", listing_dir, error)
        return _list_untracked(listing_dir, None, timeout, start)
    ignored = {verdict.removeprefix("./") for verdict in os.fsdecode(verdicts).split("\0") if verdict}
    ignored_dirs = [path.removesuffix("/") for path in untracked if path in ignored and path.endswith("/")]
    files = [path for path in untracked if path not in ignored and not path.endswith("/")]
    folders = [path for path in untracked if path not in ignored and path.endswith("/")]
    if not folders:
        return lambda: (files, ignored_dirs)
    if len(folders) > _MAX_PATHSPECS or sum(len(folder) + 1 for folder in folders) > _PATHSPEC_CHARACTERS:
        return _list_untracked(listing_dir, None, timeout, start)
    inside = _list_untracked(listing_dir, folders, timeout, start)

    def result() -> tuple[list[str], list[str]]:
        more_files, more_ignored = inside()
        return files + more_files, ignored_dirs + more_ignored

    return result


def _list_untracked(
    listing_dir: str, folders: list[str] | None, timeout: Callable[[], float], start: _Start
) -> _Sorted:
    """Start listing the untracked files (ignore rules applied; a nested repository as ``dir/``) and the ignored
    folders in ``folders`` (paths relative to ``listing_dir``, read literally), or in all of ``listing_dir`` for
    ``None``; the result waits for both."""
    pathspecs = ["--", *folders] if folders is not None else []
    untracked_call = start(listing_dir, [*_LIST_UNTRACKED, *pathspecs])
    ignored_call = start(listing_dir, [*_LIST_IGNORED, *pathspecs])

    def result() -> tuple[list[str], list[str]]:
        files = [path for path in os.fsdecode(untracked_call.result(timeout())).split("\0") if path]
        try:
            entries = os.fsdecode(ignored_call.result(timeout())).split("\0")
        except GitFailed as error:
            logger.debug("git could not list the ignored folders of %s: %s", listing_dir, error)
            return files, []
        return files, [entry.removesuffix("/") for entry in entries if entry.endswith("/")]

    return result


_SUBMODULE_PATHS = ["config", "--file", ".gitmodules", "--null", "--get-regexp", r"^submodule\..*\.path$"]


def _has_gitmodules(toplevel: str) -> bool:
    """Whether ``toplevel`` holds a regular ``.gitmodules`` file (never a FIFO or a symlink)."""
    try:
        return stat.S_ISREG(os.lstat(os.path.join(toplevel, ".gitmodules")).st_mode)
    except OSError:
        return False
