"""Candidate roots: editor folders, git toplevels, worktrees, submodules, nested repositories and projects.

:func:`detect` is synchronous and touches only the file system and git; callers run it in a worker thread.
Inside a git repository the files are listed by one walk of git's per repository (git applies the
ignore rules, :attr:`DetectionSettings.ignore` is applied on top; :func:`~.repository.list_repository`) and
marker files are found by base name. Nested repositories are the untracked ``dir/`` entries, the gitlinks
(submodules, and repositories added without ``.gitmodules``) and the repositories found in the folders git
ignores: those are walked for ``.git`` only (no projects), and heavy ones (named in the ignore setting, or
hidden) only probed one level down. Outside git the folder is walked breadth-first with :func:`os.scandir`,
never following symlinks. Depth, candidate count, entries looked at and time are bounded by
:class:`DetectionSettings`; each bound hit and each skipped input becomes a :class:`DetectionNotice`. A folder
outside any repository is simply walked; a repository git cannot read, a git call that times out
(:mod:`.repository`) or a missing git gives a ``gitError`` notice and a walk. Nothing here raises for a bad
folder, a bad manifest or a failing git. This module searches; what it sees is collected, bounded, named and put in
order by :mod:`.findings`.

What a repository controls is hostile: manifests are read as bounded regular files, linked worktrees are
offered only when git and their back-link agree, and the user's home directory or any folder above it is
never offered unless the editor opened exactly that folder (an enclosing home-directory repository still
lends its ignore rules to the folder below it, but is neither offered nor listed as a whole).
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from host_bridge.uris import UriError, canonical_path, is_within, parse_file_uri, path_to_uri
from host_bridge.workspace import markers
from host_bridge.workspace.findings import Findings, Scan
from host_bridge.workspace.records import DEFAULTS, FolderLike, Found, SettingsLike
from host_bridge.workspace.repository import (
    GitCall,
    GitFailed,
    GitTimedOut,
    GitUnavailable,
    Listing,
    enclosing_toplevel,
    list_repository,
)

if TYPE_CHECKING:
    from host_bridge.workspace.models import Detection

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


@dataclass(frozen=True)
class _Task:
    """One unit of the search below a workspace folder: walk a directory, or list a repository."""

    path: str
    """The directory to walk, or the repository's toplevel."""
    depth: int
    """Levels below the workspace folder (0 for the folder itself and for a toplevel above it)."""
    repo: bool = False
    submodule: bool = False
    listing_dir: str | None = None
    """Where to list the repository from when it is not ``path`` (a folder below the toplevel)."""
    ignored: bool = False
    """A folder git ignores: only repositories are looked for in it, not projects."""
    probe: bool = False
    """A heavy ignored folder (``node_modules`` …): only it and its direct subfolders are looked at for ``.git``."""


@dataclass
class _Scan(Scan):
    """The search below one workspace folder: what is left to do."""

    queue: deque[_Task] = field(default_factory=deque[_Task])
    entries: int = 0
    """Files and folders looked at so far (the entry bound)."""


def _below(base: str, relative: str) -> str:
    return os.path.normpath(os.path.join(base, relative)) if relative else base


def _levels(relative: str) -> int:
    return relative.count("/") + 1 if relative else 0


class _Detector:
    """One detection run: searches every workspace folder, telling :attr:`found` what it sees."""

    def __init__(self, settings: SettingsLike, started: dict[str, GitCall]) -> None:
        self.settings = settings
        self.started = started
        """Walks already under way (:func:`~.repository.start_listings`) by listing folder, until taken."""
        self.ignore = frozenset(settings.ignore)
        self.use_git = settings.git
        self.found = Findings(settings)
        """The candidates and notices so far."""
        self.walk_only: set[str] = set()
        """Repositories searched without git: git failed or timed out there, or they hold the home folder."""

    def add_folder(self, folder: FolderLike) -> _Scan | None:
        """Register an editor folder as a candidate; the search below it is returned, or ``None``."""
        label = repr(folder.name) if folder.name else folder.uri
        try:
            declared = parse_file_uri(folder.uri)
        except UriError as error:
            return self.found.skip("unsupportedFolder", label, error.detail, folder.uri)
        try:
            real = canonical_path(declared)
        except (FileNotFoundError, NotADirectoryError):
            reason = "it does not exist; reopen it or remove it from the workspace"
            return self.found.skip("missingFolder", declared, reason, folder.uri)
        except OSError as error:
            return self.found.skip("unreadable", declared, error.strerror or type(error).__name__, folder.uri)
        if not os.path.isdir(real):
            return self.found.skip("unsupportedFolder", declared, "it is a file, not a folder", folder.uri)
        try:
            scan = _Scan(real, path_to_uri(real))
        except UriError as error:
            return self.found.skip("unsupportedFolder", label, error.detail, folder.uri)
        self.found.opened.add(os.path.normcase(real))
        draft = self.found.add(scan, real, "workspaceFolder")
        if draft is None:
            return None
        if not draft.declared:
            draft.declared = True
            if os.path.normcase(declared) != os.path.normcase(real):
                draft.declared_uri = folder.uri
        draft.editor_name = draft.editor_name or folder.name
        return scan

    def search(self, scan: _Scan) -> None:
        """Find every candidate below (and the repository around) one workspace folder."""
        toplevel = enclosing_toplevel(scan.root) if self.use_git else None
        if toplevel is None:
            scan.queue.append(_Task(scan.root, 0))
        else:
            listing_dir = scan.root if toplevel != scan.root else None
            scan.queue.append(_Task(toplevel, 0, repo=True, listing_dir=listing_dir))
        while scan.queue and not scan.stopped:
            if self.found.expired():
                self.found.bound(scan, "deadline")
                break
            task = scan.queue.popleft()
            if task.repo:
                self._visit_repo(scan, task)
            elif task.probe:
                self._probe(scan, task)
            else:
                self._visit_dir(scan, task)
        self.found.assign_members(scan)

    def _entries(self, scan: _Scan, path: str) -> list[os.DirEntry[str]] | None:
        """The entries of ``path``; ``None`` when it is unreadable (reported), vanished or no longer a directory."""
        try:
            with os.scandir(path) as iterator:
                return list(iterator)
        except PermissionError:
            self.found.unreadable(scan, path)
            return None
        except OSError:
            return None

    def _visit_dir(self, scan: _Scan, task: _Task) -> None:
        entries = self._entries(scan, task.path)
        if entries is None:
            return
        entries = self._spend(scan, entries)
        found: set[str] = set()
        subdirs: list[str] = []
        heavy: list[str] = []
        has_git = False
        for entry in entries:
            name = entry.name
            if name == ".git":
                has_git = True
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if not self._heavy(name):
                    subdirs.append(entry.path)
                elif task.ignored:
                    heavy.append(entry.path)
            elif markers.is_marker(name) and not task.ignored:
                found.add(name)
        if has_git and task.path not in self.walk_only:
            if self.use_git:
                scan.queue.append(_Task(task.path, task.depth, repo=True))
                return
            self.found.add(scan, task.path, "git", found=(".git",))
        if found:
            self.found.add_project(scan, task.path, found)
        if (subdirs or heavy) and task.depth >= self.settings.max_depth:
            self.found.bound(scan, "max_depth")
            return
        tasks = [_Task(path, task.depth + 1, ignored=task.ignored) for path in sorted(subdirs)]
        tasks += (_Task(path, task.depth + 1, ignored=True, probe=True) for path in sorted(heavy))
        scan.queue.extend(tasks)

    def _heavy(self, name: str) -> bool:
        """Whether a folder of this name is never walked: a hidden folder or one named by the ignore setting."""
        return name in self.ignore or name.startswith(".")

    def _probe(self, scan: _Scan, task: _Task) -> None:
        """Look for ``.git`` in a heavy ignored folder and in its direct subfolders, and search what has one."""
        if os.path.lexists(os.path.join(task.path, ".git")):
            scan.queue.append(_Task(task.path, task.depth, repo=True))
            return
        entries = self._entries(scan, task.path)
        if entries is None:
            return
        repositories: list[str] = []
        dotgit = os.sep + ".git"
        for entry in self._spend(scan, entries):
            try:
                if entry.is_dir(follow_symlinks=False):
                    os.lstat(entry.path + dotgit)  # one system call per folder: a node_modules has thousands
                    repositories.append(entry.path)
            except OSError:
                continue
        if repositories and task.depth >= self.settings.max_depth:
            self.found.bound(scan, "max_depth")
            return
        scan.queue.extend(_Task(path, task.depth + 1, repo=True) for path in sorted(repositories))

    def _visit_repo(self, scan: _Scan, task: _Task) -> None:
        listing_dir = task.listing_dir or task.path
        if task.listing_dir is None and self.found.forbidden(task.path):
            # A repository holding the home folder, met below a folder the user opened above home: its listing
            # would be the whole home directory; look at it as plain folders, without offering it.
            self.walk_only.add(task.path)
            scan.queue.append(_Task(task.path, task.depth))
            return
        try:
            started = self.started.pop(listing_dir, None)
            listing = list_repository(task.path, listing_dir, self._git_timeout, started=started)
        except GitUnavailable as error:
            self.use_git = False
            self._git_failed(scan, task, listing_dir, f"git is not available ({error})")
            return
        except GitTimedOut as error:
            self.walk_only.add(task.path)
            if self.found.expired():
                scan.queue.append(_Task(listing_dir, task.depth))
                self.found.bound(scan, "deadline")
                return
            reason = (
                f"git did not finish within {error.seconds:g} s in the repository {task.path} and was stopped "
                "(look for a named pipe or a hung mount in its .git folder, or raise the gitTimeout setting)"
            )
            self._git_failed(scan, task, listing_dir, reason)
            return
        except (GitFailed, OSError) as error:
            logger.debug("git failed in %s", task.path, exc_info=True)
            self.walk_only.add(task.path)
            self._git_failed(scan, task, listing_dir, f"git could not read {task.path} ({error})")
            return
        self.found.add(scan, task.path, "git", *(("submodule",) if task.submodule else ()), found=(".git",))
        self.found.add_worktrees(scan, listing.worktrees)
        if task.listing_dir is not None and not self.found.forbidden(task.path):
            self._add_own_markers(scan, task.path)
        if task.listing_dir is not None and not listing.files:
            # The folder may be ignored as a whole by an enclosing repository (a home-directory repository
            # ignoring "*"); its content is still the user's, so look at it directly.
            scan.queue.append(_Task(listing_dir, task.depth))
            return
        self._take_listing(scan, task, listing_dir, listing)

    def _add_own_markers(self, scan: _Scan, toplevel: str) -> None:
        """Markers of a toplevel above the workspace folder, whose listing does not cover it."""
        try:
            with os.scandir(toplevel) as iterator:
                found = {
                    entry.name
                    for entry in iterator
                    if markers.is_marker(entry.name) and not entry.is_dir(follow_symlinks=False)
                }
        except OSError:
            return
        if found:
            self.found.add_project(scan, toplevel, found)

    def _git_timeout(self) -> float:
        """Seconds the next git call may take: the gitTimeout setting, cut to what is left of the deadline."""
        return max(min(self.settings.git_timeout, self.found.ends_at - time.monotonic()), 0.001)

    def _git_failed(self, scan: _Scan, task: _Task, listing_dir: str, reason: str) -> None:
        key = "git" if not self.use_git else f"git:{task.path}"
        if key not in scan.noticed:
            scan.noticed.add(key)
            self.found.notice(
                "gitError", f"{reason}; searched {listing_dir} without git ignore rules instead.", scan.uri
            )
        scan.queue.append(_Task(listing_dir, task.depth))

    def _take_listing(self, scan: _Scan, task: _Task, listing_dir: str, listing: Listing) -> None:
        files = self._spend(scan, listing.files)
        exact, suffixes = markers.MARKER_FILES, markers.SUFFIXES
        found: dict[str, set[str]] = {}
        nested: list[str] = []
        for relative in files:
            directory, _, name = relative.rpartition("/")
            if not name:
                nested.append(directory)
            elif name in exact or name.endswith(suffixes):
                found.setdefault(directory, set()).add(name)
        projects: list[tuple[int, str, set[str]]] = []
        for directory, names in found.items():
            names = {name for name in names if markers.is_marker(name)}
            if names and self._allowed(scan, directory, task.depth + _levels(directory)):
                projects.append((task.depth + _levels(directory), directory, names))
        for _, directory, names in sorted(projects, key=lambda p: (p[0], p[1])):
            self.found.add_project(scan, _below(listing_dir, directory), names)
        for directory in sorted(nested):
            depth = task.depth + _levels(directory)
            if self._allowed(scan, directory, depth):
                scan.queue.append(_Task(_below(listing_dir, directory), depth, repo=True))
        submodules: set[str] = set()
        for relative in listing.submodules:
            path = _below(task.path, relative)
            if path == listing_dir or not is_within(path, listing_dir):
                continue
            submodules.add(path)
            inner = os.path.relpath(path, listing_dir).replace(os.sep, "/")
            if not self._allowed(scan, inner, task.depth + _levels(inner)):
                continue
            if os.path.isdir(path) and os.path.lexists(os.path.join(path, ".git")):
                scan.queue.append(_Task(path, task.depth + _levels(inner), repo=True, submodule=True))
        for relative in sorted(listing.gitlinks):
            # A repository added inside this one without .gitmodules (`git add` of a cloned folder).
            path = _below(listing_dir, relative)
            depth = task.depth + _levels(relative)
            if path in submodules or not self._allowed(scan, relative, depth):
                continue
            if os.path.isdir(path) and os.path.lexists(os.path.join(path, ".git")):
                scan.queue.append(_Task(path, depth, repo=True))
        self._take_ignored(scan, task, listing_dir, listing.ignored)

    def _take_ignored(self, scan: _Scan, task: _Task, listing_dir: str, ignored: list[str]) -> None:
        """Search the folders git ignores for repositories: walk them, but only probe heavy ones."""
        for relative in sorted(self._spend(scan, ignored)):
            if relative in ("", "."):
                continue  # the listed folder itself: its tracked files were listed
            depth = task.depth + _levels(relative)
            if depth > self.settings.max_depth:
                self.found.bound(scan, "max_depth")
                continue
            heavy = any(self._heavy(name) for name in relative.split("/"))
            scan.queue.append(_Task(_below(listing_dir, relative), depth, ignored=True, probe=heavy))

    def _allowed(self, scan: _Scan, relative: str, depth: int) -> bool:
        """Whether a directory from a listing is searched: not ignored by name, within the depth bound."""
        if relative and not self.ignore.isdisjoint(relative.split("/")):
            return False
        if depth > self.settings.max_depth:
            self.found.bound(scan, "max_depth")
            return False
        return True

    def _spend(self, scan: _Scan, entries: list[_T]) -> list[_T]:
        """Count ``entries`` against the per-folder entry bound, cutting them off where it is hit."""
        budget = self.settings.max_entries - scan.entries
        if len(entries) > budget:
            entries = entries[: max(budget, 0)]
            self.found.bound(scan, "max_entries")
        scan.entries += len(entries)
        return entries


def find_candidates(
    folders: Sequence[FolderLike], settings: SettingsLike = DEFAULTS, *, started: Mapping[str, GitCall] | None = None
) -> Found:
    """:func:`detect` as plain records (:mod:`.records`), without loading pydantic: what ``host-bridge roots`` uses.

    ``started``: git walks already under way (:func:`~.repository.start_listings`), taken over where detection
    lists those folders; the rest are closed before it returns.
    """
    detector = _Detector(settings, dict(started or {}))
    try:
        scans = [scan for folder in folders if (scan := detector.add_folder(folder)) is not None]
        searched: set[str] = set()
        for scan in scans:
            if scan.root not in searched:
                searched.add(scan.root)
                detector.search(scan)
    finally:
        for call in detector.started.values():
            call.close()
    return detector.found.result()


def detect(folders: Sequence[FolderLike], settings: SettingsLike = DEFAULTS) -> Detection:
    """Candidate roots for the editor's workspace folders; never raises for bad folders or a failing git.

    Synchronous and file-system bound: run it in a worker thread. See the module docstring for the rules.
    """
    from host_bridge.workspace.models import Candidate, Detection, DetectionNotice

    found = find_candidates(folders, settings)
    return Detection(
        candidates=tuple(
            Candidate(
                uri=c.uri, name=c.name, kinds=c.kinds, markers=c.markers, parent=c.parent, declared_uri=c.declared_uri
            )
            for c in found.candidates
        ),
        notices=tuple(DetectionNotice(kind=n.kind, message=n.message, uri=n.uri) for n in found.notices),
    )


def _has_marker(directory: str) -> bool:
    try:
        with os.scandir(directory) as iterator:
            return any(entry.name == ".git" or markers.is_marker(entry.name) for entry in iterator)
    except OSError:
        return False


def root_for_file(path: str, home: str | None = None) -> str | None:
    """The project root of a single file opened without a folder, or ``None``.

    Walks up from the file's directory to the nearest directory holding a project marker or ``.git``, never
    above ``home`` (default: the user's home directory); for a file outside ``home`` only its own directory
    is considered. Returns the canonical path.
    """
    try:
        real = canonical_path(path)
    except OSError:
        return None
    directory = real if os.path.isdir(real) else os.path.dirname(real)
    limit = os.path.realpath(home if home is not None else os.path.expanduser("~"))
    if not is_within(directory, limit):
        return directory if _has_marker(directory) else None
    current = directory
    while True:
        if _has_marker(current):
            return current
        if os.path.normcase(current) == os.path.normcase(limit):
            return None
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
