"""Candidate roots: editor folders, git toplevels, worktrees, submodules, nested repositories and projects.

:func:`detect` is synchronous and touches only the file system and git; callers run it in a worker thread.
Inside a git repository the files are listed with one ``git ls-files`` per repository (git applies the
ignore rules, :attr:`DetectionSettings.ignore` is applied on top) and marker files are found by base
name; outside git the folder is walked breadth-first with :func:`os.scandir`, never following symlinks.
Depth, candidate count and entries looked at are bounded by :class:`DetectionSettings`; each bound hit
and each skipped input becomes a :class:`DetectionNotice`. A folder outside any repository is simply
walked; a repository git cannot read (or a missing git) gives a ``gitError`` notice and a walk. Nothing
here raises for a bad folder, a bad manifest or a failing git.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from host_bridge.uris import UriError, canonical_path, display_name, is_within, parse_file_uri, path_to_uri
from host_bridge.workspace import markers
from host_bridge.workspace.models import (
    KIND_ORDER,
    Candidate,
    CandidateKind,
    Detection,
    DetectionNotice,
    DetectionSettings,
    WorkspaceFolder,
)

logger = logging.getLogger(__name__)

_DEFAULT_SETTINGS = DetectionSettings()
_T = TypeVar("_T")

_Bound = Literal["max_depth", "max_candidates", "max_entries"]

_BOUND_MESSAGES: dict[_Bound, str] = {
    "max_depth": "Did not look for projects more than {value} folder levels below {folder}; "
    "raise the maxDepth setting to look deeper.",
    "max_candidates": "Found more than {value} candidate folders while searching {folder}; only {value} are "
    "offered; raise the maxCandidates setting to see more.",
    "max_entries": "Stopped searching {folder} after looking at {value} files and folders; "
    "raise the maxEntries setting to search further.",
}


@dataclass
class _Draft:
    """A candidate being assembled; several sources may add kinds and markers to it."""

    path: str
    uri: str
    kinds: set[CandidateKind] = field(default_factory=set[CandidateKind])
    markers: set[str] = field(default_factory=set[str])
    editor_name: str | None = None
    declared: bool = False
    """Whether a workspace folder named it already (the first one decides ``declared_uri``)."""
    declared_uri: str | None = None
    worktree_of: str | None = None
    """Path of the main working tree, for a linked worktree."""
    member_of: str | None = None
    """Path of the monorepo root that lists this project as a member."""


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


@dataclass
class _Scan:
    """The search below one workspace folder."""

    root: str
    uri: str
    queue: deque[_Task] = field(default_factory=deque[_Task])
    entries: int = 0
    stopped: bool = False
    noticed: set[str] = field(default_factory=set[str])
    """Notice keys already given for this folder, so each is given once."""
    projects: dict[str, None] = field(default_factory=dict[str, None])
    """Directories added as projects during this search (an ordered set), for member matching."""


@dataclass(frozen=True)
class _Worktree:
    path: str
    main: bool
    usable: bool


@dataclass(frozen=True)
class _Listing:
    """What git says about one repository."""

    files: list[str]
    """``/``-separated paths relative to the listed directory; ``dir/`` is a nested repository."""
    worktrees: list[_Worktree]
    """Every working tree of the repository, the main one first; empty when there are no linked ones."""
    submodules: list[str]
    """Submodule paths relative to the toplevel, from ``.gitmodules``."""


class _GitUnavailable(RuntimeError):
    """GitPython cannot be used at all (no git executable found)."""


def _list_repository(toplevel: str, listing_dir: str) -> _Listing:
    try:
        import git  # lazily: GitPython refuses to import when it finds no git executable
    except ImportError as error:
        raise _GitUnavailable(str(error).splitlines()[0] if str(error) else "git was not found") from error

    with git.Repo(toplevel) as repo:
        try:
            # A repository's own config could name an fsmonitor program; never let listing run it.
            output = git.Git(listing_dir)(c="core.fsmonitor=false").ls_files(
                "-z", "--cached", "--others", "--exclude-standard", stdout_as_string=False
            )
        except git.GitCommandNotFound as error:
            raise _GitUnavailable(f"{error.command[0] if error.command else 'git'} was not found") from error
        files = os.fsdecode(output).split("\0") if isinstance(output, bytes) else []
        worktrees: list[_Worktree] = []
        if os.path.isdir(os.path.join(repo.common_dir, "worktrees")):
            worktrees = _parse_worktrees(str(repo.git.worktree("list", "--porcelain")))
        submodules: list[str] = []
        gitmodules = os.path.join(toplevel, ".gitmodules")
        if os.path.isfile(gitmodules):
            try:
                config = str(
                    repo.git.config("--file", gitmodules, "--null", "--get-regexp", r"^submodule\..*\.path$")
                )
            except git.GitCommandError:
                config = ""  # exit status 1: no submodule has a path
            submodules = [value for record in config.split("\0") if (value := record.partition("\n")[2])]
    return _Listing([f for f in files if f], worktrees, submodules)


def _parse_worktrees(porcelain: str) -> list[_Worktree]:
    worktrees: list[_Worktree] = []
    for block in porcelain.split("\n\n"):
        path, unusable = None, False
        for line in block.splitlines():
            key, _, value = line.partition(" ")
            if key == "worktree":
                path = value
            elif key in ("bare", "prunable"):
                unusable = True
        if path is not None:
            worktrees.append(_Worktree(path, main=not worktrees, usable=not unusable))
    return worktrees


def _enclosing_toplevel(path: str) -> str | None:
    """The nearest directory at or above ``path`` holding a ``.git`` entry (what git would open)."""
    current = path
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _below(base: str, relative: str) -> str:
    return os.path.normpath(os.path.join(base, relative)) if relative else base


def _levels(relative: str) -> int:
    return relative.count("/") + 1 if relative else 0


def _inside(path: str, root: str) -> bool:
    """:func:`is_within` for canonical native paths, without building path objects (it runs per pair)."""
    path, root = os.path.normcase(path), os.path.normcase(root)
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


def _sort_key(path: str) -> list[str]:
    return os.path.normcase(path).split(os.sep)


def _short(error: Exception) -> str:
    """A one-line reason for a GitPython failure, for a person."""
    import git  # only reached after GitPython imported fine

    if isinstance(error, git.InvalidGitRepositoryError):
        return "it is not a valid git repository"
    if isinstance(error, git.NoSuchPathError):
        return "it no longer exists"
    text = error.stderr if isinstance(error, git.GitCommandError) else str(error)
    lines = [line.strip().removeprefix("stderr: ").strip("'") for line in str(text).splitlines()]
    return next((line for line in lines if line), type(error).__name__)[:300]


class _Detector:
    """One detection run: collects drafts and notices across all workspace folders."""

    def __init__(self, settings: DetectionSettings) -> None:
        self.settings = settings
        self.ignore = frozenset(settings.ignore)
        self.use_git = settings.git
        self.drafts: dict[str, _Draft] = {}
        self.notices: list[DetectionNotice] = []
        self.texts: dict[str, str | None] = {}
        """Manifest contents read so far (names and member lists read the same files)."""
        self.broken_repos: set[str] = set()

    def add_folder(self, folder: WorkspaceFolder) -> _Scan | None:
        """Register an editor folder as a candidate; the search below it is returned, or ``None``."""
        label = repr(folder.name) if folder.name else folder.uri
        try:
            declared = parse_file_uri(folder.uri)
        except UriError as error:
            return self._skip("unsupportedFolder", label, error.detail, folder.uri)
        try:
            real = canonical_path(declared)
        except (FileNotFoundError, NotADirectoryError):
            reason = "it does not exist; reopen it or remove it from the workspace"
            return self._skip("missingFolder", declared, reason, folder.uri)
        except OSError as error:
            return self._skip("unreadable", declared, error.strerror or type(error).__name__, folder.uri)
        if not os.path.isdir(real):
            return self._skip("unsupportedFolder", declared, "it is a file, not a folder", folder.uri)
        try:
            scan = _Scan(real, path_to_uri(real))
        except UriError as error:
            return self._skip("unsupportedFolder", label, error.detail, folder.uri)
        draft = self._add(scan, real, "workspaceFolder")
        if draft is None:
            return None
        if not draft.declared:
            draft.declared = True
            if os.path.normcase(declared) != os.path.normcase(real):
                draft.declared_uri = folder.uri
        draft.editor_name = draft.editor_name or folder.name
        return scan

    def _skip(self, kind: str, folder: str, reason: str, uri: str) -> None:
        self._notice(kind, f"Skipped the workspace folder {folder}: {reason}.", uri)

    def search(self, scan: _Scan) -> None:
        """Find every candidate below (and the repository around) one workspace folder."""
        toplevel = _enclosing_toplevel(scan.root) if self.use_git else None
        if toplevel is None:
            scan.queue.append(_Task(scan.root, 0))
        else:
            listing_dir = scan.root if toplevel != scan.root else None
            scan.queue.append(_Task(toplevel, 0, repo=True, listing_dir=listing_dir))
        while scan.queue and not scan.stopped:
            task = scan.queue.popleft()
            if task.repo:
                self._visit_repo(scan, task)
            else:
                self._visit_dir(scan, task)
        self._assign_members(scan)

    def _visit_dir(self, scan: _Scan, task: _Task) -> None:
        try:
            with os.scandir(task.path) as iterator:
                entries = list(iterator)
        except PermissionError:
            self._unreadable(scan, task.path)
            return
        except OSError:
            return  # vanished or not a directory any more
        entries = self._spend(scan, entries)
        found: set[str] = set()
        subdirs: list[str] = []
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
                if name not in self.ignore and not name.startswith("."):
                    subdirs.append(entry.path)
            elif markers.is_marker(name):
                found.add(name)
        if has_git and task.path not in self.broken_repos:
            if self.use_git:
                scan.queue.append(_Task(task.path, task.depth, repo=True))
                return
            self._add(scan, task.path, "git", found=(".git",))
        if found:
            self._add_project(scan, task.path, found)
        if subdirs and task.depth >= self.settings.max_depth:
            self._bound(scan, "max_depth")
        elif subdirs:
            scan.queue.extend(_Task(path, task.depth + 1) for path in sorted(subdirs))

    def _visit_repo(self, scan: _Scan, task: _Task) -> None:
        listing_dir = task.listing_dir or task.path
        try:
            listing = _list_repository(task.path, listing_dir)
        except _GitUnavailable as error:
            self.use_git = False
            self._git_failed(scan, task, listing_dir, f"git is not available ({error})")
            return
        except Exception as error:  # GitPython fails in many ways; every one becomes a notice and a walk
            logger.debug("git failed in %s", task.path, exc_info=True)
            self.broken_repos.add(task.path)
            self._git_failed(scan, task, listing_dir, f"git could not read {task.path} ({_short(error)})")
            return
        self._add(scan, task.path, "git", *(("submodule",) if task.submodule else ()), found=(".git",))
        self._add_worktrees(scan, listing.worktrees)
        if task.listing_dir is not None:
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
            self._add_project(scan, toplevel, found)

    def _git_failed(self, scan: _Scan, task: _Task, listing_dir: str, reason: str) -> None:
        key = "git" if not self.use_git else f"git:{task.path}"
        if key not in scan.noticed:
            scan.noticed.add(key)
            self._notice(
                "gitError", f"{reason}; searched {listing_dir} without git ignore rules instead.", scan.uri
            )
        scan.queue.append(_Task(listing_dir, task.depth))

    def _take_listing(self, scan: _Scan, task: _Task, listing_dir: str, listing: _Listing) -> None:
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
            self._add_project(scan, _below(listing_dir, directory), names)
        for directory in sorted(nested):
            depth = task.depth + _levels(directory)
            if self._allowed(scan, directory, depth):
                scan.queue.append(_Task(_below(listing_dir, directory), depth, repo=True))
        for relative in listing.submodules:
            path = _below(task.path, relative)
            if path == listing_dir or not is_within(path, listing_dir):
                continue
            inner = os.path.relpath(path, listing_dir).replace(os.sep, "/")
            if not self._allowed(scan, inner, task.depth + _levels(inner)):
                continue
            if os.path.isdir(path) and os.path.lexists(os.path.join(path, ".git")):
                scan.queue.append(_Task(path, task.depth + _levels(inner), repo=True, submodule=True))

    def _allowed(self, scan: _Scan, relative: str, depth: int) -> bool:
        """Whether a directory from a listing is searched: not ignored by name, within the depth bound."""
        if relative and not self.ignore.isdisjoint(relative.split("/")):
            return False
        if depth > self.settings.max_depth:
            self._bound(scan, "max_depth")
            return False
        return True

    def _add_worktrees(self, scan: _Scan, worktrees: list[_Worktree]) -> None:
        if not worktrees:
            return
        main = os.path.realpath(worktrees[0].path)
        for worktree in worktrees:
            if not worktree.usable:
                continue
            try:
                path = canonical_path(worktree.path)
            except OSError:
                continue  # removed without `git worktree prune`
            if not os.path.isdir(path):
                continue
            kinds: tuple[CandidateKind, ...] = ("git",) if worktree.main else ("git", "worktree")
            draft = self._add(scan, path, *kinds, found=(".git",))
            if draft is not None and not worktree.main:
                draft.worktree_of = main

    def _add_project(self, scan: _Scan, path: str, found: Iterable[str]) -> None:
        draft = self._add(scan, path, "project", found=found)
        if draft is not None:
            scan.projects[path] = None

    def _add(self, scan: _Scan, path: str, *kinds: CandidateKind, found: Iterable[str] = ()) -> _Draft | None:
        draft = self.drafts.get(path)
        if draft is None:
            if len(self.drafts) >= self.settings.max_candidates:
                self._bound(scan, "max_candidates")
                return None
            try:
                draft = _Draft(path, path_to_uri(path))
            except UriError:
                logger.debug("not offering %r: it cannot be spelled as a file URI", path)
                return None
            self.drafts[path] = draft
        draft.kinds.update(kinds)
        draft.markers.update(found)
        return draft

    def _assign_members(self, scan: _Scan) -> None:
        roots: list[tuple[str, markers.MemberPatterns]] = []
        for path in scan.projects:
            found = self.drafts[path].markers
            if found & markers.WORKSPACE_MANIFESTS:
                patterns = markers.workspace_members(path, found, self._read)
                if patterns is not None:
                    roots.append((path, patterns))
        # Shallow roots first, so the nearest enclosing workspace root is the one that sticks.
        for root, patterns in sorted(roots, key=lambda r: len(_sort_key(r[0]))):
            for path in scan.projects:
                if path != root and _inside(path, root):
                    relative = os.path.relpath(path, root).replace(os.sep, "/")
                    if patterns.matches(relative):
                        self.drafts[path].member_of = root

    def _spend(self, scan: _Scan, entries: list[_T]) -> list[_T]:
        """Count ``entries`` against the per-folder entry bound, cutting them off where it is hit."""
        budget = self.settings.max_entries - scan.entries
        if len(entries) > budget:
            entries = entries[: max(budget, 0)]
            self._bound(scan, "max_entries")
        scan.entries += len(entries)
        return entries

    def _bound(self, scan: _Scan, bound: _Bound) -> None:
        if bound != "max_depth":
            scan.stopped = True
        if bound in scan.noticed:
            return
        scan.noticed.add(bound)
        value = getattr(self.settings, bound)
        self._notice("boundHit", _BOUND_MESSAGES[bound].format(value=value, folder=scan.root), scan.uri)

    def _unreadable(self, scan: _Scan, path: str) -> None:
        if "unreadable" not in scan.noticed:
            scan.noticed.add("unreadable")
            self._notice(
                "unreadable",
                f"Could not read some folders under {scan.root} (permission denied), e.g. {path}; "
                "they were skipped.",
                scan.uri,
            )

    def _notice(self, kind: str, message: str, uri: str | None) -> None:
        self.notices.append(DetectionNotice.model_validate({"kind": kind, "message": message, "uri": uri}))

    def _read(self, path: str) -> str | None:
        if path not in self.texts:
            self.texts[path] = markers.read_text(path)
        return self.texts[path]

    def result(self) -> Detection:
        """The candidates, parents before children, and the notices in the order they happened."""
        candidates: list[Candidate] = []
        enclosing: list[_Draft] = []
        for draft in sorted(self.drafts.values(), key=lambda d: _sort_key(d.path)):
            while enclosing and not _inside(draft.path, enclosing[-1].path):
                enclosing.pop()
            parent = enclosing[-1].uri if enclosing else None
            if draft.worktree_of is not None:
                parent = self._uri_of(draft.worktree_of)
            elif draft.member_of is not None:
                parent = self.drafts[draft.member_of].uri
            candidates.append(
                Candidate(
                    uri=draft.uri,
                    name=markers.project_name(draft.path, draft.markers, self._read)
                    or draft.editor_name
                    or display_name(draft.path),
                    kinds=tuple(kind for kind in KIND_ORDER if kind in draft.kinds),
                    markers=tuple(sorted(draft.markers)),
                    parent=parent,
                    declared_uri=draft.declared_uri,
                )
            )
            enclosing.append(draft)
        return Detection(candidates=tuple(candidates), notices=tuple(self.notices))

    def _uri_of(self, path: str) -> str | None:
        draft = self.drafts.get(path)
        if draft is not None:
            return draft.uri
        try:
            return path_to_uri(path)
        except UriError:
            return None


def detect(folders: Sequence[WorkspaceFolder], settings: DetectionSettings = _DEFAULT_SETTINGS) -> Detection:
    """Candidate roots for the editor's workspace folders; never raises for bad folders or a failing git.

    Synchronous and file-system bound: run it in a worker thread. See the module docstring for the rules.
    """
    detector = _Detector(settings)
    scans = [scan for folder in folders if (scan := detector.add_folder(folder)) is not None]
    searched: set[str] = set()
    for scan in scans:
        if scan.root not in searched:
            searched.add(scan.root)
            detector.search(scan)
    return detector.result()


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
