"""What one detection run found: candidate folders being assembled from every source, and the notices.

The search (:mod:`.detect`) says where it saw a repository, a worktree or a project; :class:`Findings` keeps one
:class:`Draft` per folder (several sources add kinds and markers to it), refuses the home folder and anything above it
unless the editor opened exactly that folder, enforces the candidate bound, gives each notice once per workspace folder,
reads manifests once (names and workspace members read the same files), assigns workspace members to their root, and
turns the drafts into the :class:`~.records.Found` the caller gets: parents before children.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from host_bridge.safe_read import RepoFileError
from host_bridge.uris import UriError, canonical_path, display_name, path_to_uri
from host_bridge.workspace import markers
from host_bridge.workspace.records import (
    KIND_ORDER,
    CandidateKind,
    Found,
    FoundCandidate,
    FoundNotice,
    NoticeKind,
    SettingsLike,
)
from host_bridge.workspace.repository import Worktree

logger = logging.getLogger(__name__)

Bound = Literal["max_depth", "max_candidates", "max_entries", "deadline"]
"""A bound of :class:`~.records.SettingsLike` that a search can hit (each named after its setting)."""

_BOUND_MESSAGES: dict[Bound, str] = {
    "max_depth": "Did not look for projects more than {value} folder levels below {folder}; "
    "raise the maxDepth setting to look deeper.",
    "max_candidates": "Found more than {value} candidate folders while searching {folder}; only {value} are "
    "offered; raise the maxCandidates setting to see more.",
    "max_entries": "Stopped searching {folder} after looking at {value} files and folders; "
    "raise the maxEntries setting to search further.",
    "deadline": "Stopped searching {folder} when detection had taken {value} seconds; what was found by then is "
    "offered; raise the deadline setting to search longer.",
}
_RUN_BOUNDS: frozenset[Bound] = frozenset({"max_candidates"})
"""Bounds of the whole run, not of one folder: said once, or each of 10 000 workspace folders past it gives a notice."""
_MAX_FILE_NOTICES = 10
"""Notices about unusable manifests per detection; the rest go to the log."""


@dataclass
class Draft:
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


@dataclass
class Scan:
    """The search below one workspace folder, as far as findings are concerned."""

    root: str
    """The workspace folder (canonical)."""
    uri: str
    """Its URI, which its notices name."""
    stopped: bool = False
    """A bound other than the depth stopped it."""
    noticed: set[str] = field(default_factory=set[str])
    """Notice keys already given for this folder, so each is given once."""
    projects: dict[str, None] = field(default_factory=dict[str, None])
    """Directories added as projects during this search (an ordered set), for member matching."""


def inside(path: str, root: str) -> bool:
    """:func:`is_within` for canonical native paths, without building path objects (it runs per pair)."""
    path, root = os.path.normcase(path), os.path.normcase(root)
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


def sort_key(path: str) -> list[str]:
    """Orders paths parents first, component by component."""
    return os.path.normcase(path).split(os.sep)


class Findings:
    """The drafts and notices of one detection run, across all workspace folders."""

    def __init__(self, settings: SettingsLike) -> None:
        self.settings = settings
        self.ends_at = time.monotonic() + settings.deadline
        """When the run's deadline passes (``time.monotonic``)."""
        self.home = _home(settings.home)
        self.drafts: dict[str, Draft] = {}
        self.notices: list[FoundNotice] = []
        self.texts: dict[str, str | None] = {}
        """Manifest contents read so far (names and member lists read the same files)."""
        self.file_notices = 0
        self.opened: set[str] = set()
        """Canonical paths of the editor's workspace folders: only these may be the home folder or above it."""
        self.deadline_noticed = False
        self.run_noticed: set[Bound] = set()
        """The bounds of the whole run said already (:data:`_RUN_BOUNDS`)."""

    def expired(self) -> bool:
        """Whether the run's deadline has passed."""
        return time.monotonic() >= self.ends_at

    def forbidden(self, path: str) -> bool:
        """Whether ``path`` is the home folder or above it, and the editor did not open exactly it."""
        above_home = os.path.dirname(path) == path if self.home is None else inside(self.home, path)
        return above_home and os.path.normcase(path) not in self.opened

    def skip(self, kind: NoticeKind, folder: str, reason: str, uri: str) -> None:
        """Say that the workspace folder ``folder`` (its ``uri``) is not searched, and why."""
        self.notice(kind, f"Skipped the workspace folder {folder}: {reason}.", uri)

    def add(self, scan: Scan, path: str, *kinds: CandidateKind, found: Iterable[str] = ()) -> Draft | None:
        """The draft of ``path`` with ``kinds`` and the marker files ``found`` added; ``None`` when it is not offered
        (the home folder or above it, over the candidate bound, no file URI for it)."""
        draft = self.drafts.get(path)
        if draft is None:
            if self.forbidden(path):
                logger.debug("not offering %r: it is the home folder or above it", path)
                return None
            if len(self.drafts) >= self.settings.max_candidates:
                self.bound(scan, "max_candidates")
                return None
            try:
                draft = Draft(path, path_to_uri(path))
            except UriError:
                logger.debug("not offering %r: it cannot be spelled as a file URI", path)
                return None
            self.drafts[path] = draft
        draft.kinds.update(kinds)
        draft.markers.update(found)
        return draft

    def add_project(self, scan: Scan, path: str, found: Iterable[str]) -> None:
        """A project folder (its manifests ``found``), remembered for workspace members."""
        draft = self.add(scan, path, "project", found=found)
        if draft is not None:
            scan.projects[path] = None

    def add_worktrees(self, scan: Scan, worktrees: list[Worktree]) -> None:
        """A repository's working trees (the main one first); linked ones name the main one as their parent."""
        if not worktrees:
            return
        main = worktrees[0].path if worktrees[0].main and not self.forbidden(worktrees[0].path) else None
        for worktree in worktrees:
            try:
                path = canonical_path(worktree.path)
            except OSError:
                continue  # removed without `git worktree prune`
            if not os.path.isdir(path):
                continue
            kinds: tuple[CandidateKind, ...] = ("git",) if worktree.main else ("git", "worktree")
            draft = self.add(scan, path, *kinds, found=(".git",))
            if draft is not None and not worktree.main and main is not None:
                draft.worktree_of = main

    def assign_members(self, scan: Scan) -> None:
        """Give each project of ``scan`` that a workspace manifest lists as a member that root as its parent."""
        roots: list[tuple[str, markers.MemberPatterns]] = []
        for path in scan.projects:
            found = self.drafts[path].markers
            if found & markers.WORKSPACE_MANIFESTS:
                if self.expired():
                    self.bound(scan, "deadline")
                    return
                patterns = markers.workspace_members(path, found, self._read)
                if patterns is not None:
                    roots.append((path, patterns))
        # Shallow roots first, so the nearest enclosing workspace root is the one that sticks.
        for root, patterns in sorted(roots, key=lambda r: len(sort_key(r[0]))):
            if patterns.rejected:
                self._rejected_patterns(scan, root, patterns.rejected)
            for path in scan.projects:
                if path != root and inside(path, root):
                    relative = os.path.relpath(path, root).replace(os.sep, "/")
                    if patterns.matches(relative):
                        self.drafts[path].member_of = root

    def _rejected_patterns(self, scan: Scan, root: str, rejected: tuple[str, ...]) -> None:
        shown = ", ".join(repr(pattern) for pattern in rejected[:3]) + (" …" if len(rejected) > 3 else "")
        self.notice(
            "unreadable",
            f"Ignored {len(rejected)} workspace member pattern(s) of {root} ({shown}): not usable as globs "
            f"(or more than {markers.MAX_PATTERNS}); fix them in its workspace manifest.",
            scan.uri,
        )

    def bound(self, scan: Scan, bound: Bound) -> None:
        """``scan`` hit ``bound``: stop it (the depth bound only prunes) and say so once."""
        if bound != "max_depth":
            scan.stopped = True
        if bound == "deadline":
            self.deadline_noticed = True
        if bound in scan.noticed or bound in self.run_noticed:
            return
        if bound in _RUN_BOUNDS:
            self.run_noticed.add(bound)
        scan.noticed.add(bound)
        value: object = getattr(self.settings, bound)
        shown = f"{value:g}" if isinstance(value, float) else value
        self.notice("boundHit", _BOUND_MESSAGES[bound].format(value=shown, folder=scan.root), scan.uri)

    def unreadable(self, scan: Scan, path: str) -> None:
        """A folder under ``scan`` could not be read; said once per workspace folder."""
        if "unreadable" not in scan.noticed:
            scan.noticed.add("unreadable")
            self.notice(
                "unreadable",
                f"Could not read some folders under {scan.root} (permission denied), e.g. {path}; they were skipped.",
                scan.uri,
            )

    def notice(self, kind: NoticeKind, message: str, uri: str | None) -> None:
        """Add a notice, in the order things happened."""
        self.notices.append(FoundNotice(kind, message, uri))

    def _read(self, path: str) -> str | None:
        if path not in self.texts:
            try:
                self.texts[path] = markers.read_manifest(path)
            except RepoFileError as error:
                self.texts[path] = None
                self._unusable_file(error)
        return self.texts[path]

    def _unusable_file(self, error: RepoFileError) -> None:
        """One notice per unusable manifest (not for a missing one or a symlink, which are ordinary)."""
        logger.debug("%s", error)
        if error.problem in ("missing", "symlink"):
            return
        self.file_notices += 1
        if self.file_notices <= _MAX_FILE_NOTICES:
            message = f"Ignored the manifest {error.path}: {error.reason}."
            if self.file_notices == _MAX_FILE_NOTICES:
                message += " Further unusable manifests are only logged."
            self.notice("unreadable", message, _uri_or_none(os.path.dirname(error.path)))

    def result(self) -> Found:
        """The candidates, parents before children, and the notices in the order they happened."""
        candidates: list[FoundCandidate] = []
        enclosing: list[Draft] = []
        read_names = not self.expired()
        if not read_names and not self.deadline_noticed:
            self.notice(
                "boundHit",
                _BOUND_MESSAGES["deadline"].format(value=f"{self.settings.deadline:g}", folder="the workspace folders")
                + " Project names were not read.",
                None,
            )
        for draft in sorted(self.drafts.values(), key=lambda d: sort_key(d.path)):
            while enclosing and not inside(draft.path, enclosing[-1].path):
                enclosing.pop()
            parent = enclosing[-1].uri if enclosing else None
            if draft.worktree_of is not None:
                parent = self._uri_of(draft.worktree_of)
            elif draft.member_of is not None:
                parent = self.drafts[draft.member_of].uri
            candidates.append(
                FoundCandidate(
                    uri=draft.uri,
                    name=(markers.project_name(draft.path, draft.markers, self._read) if read_names else None)
                    or draft.editor_name
                    or display_name(draft.path),
                    kinds=tuple(kind for kind in KIND_ORDER if kind in draft.kinds),
                    markers=tuple(sorted(draft.markers)),
                    parent=parent,
                    declared_uri=draft.declared_uri,
                )
            )
            enclosing.append(draft)
        return Found(candidates=tuple(candidates), notices=tuple(self.notices))

    def _uri_of(self, path: str) -> str | None:
        draft = self.drafts.get(path)
        return draft.uri if draft is not None else _uri_or_none(path)


def _uri_or_none(path: str) -> str | None:
    try:
        return path_to_uri(path)
    except UriError:
        return None


def _home(configured: str | None) -> str | None:
    """The canonical home folder: the setting, else ``~``; ``None`` when neither names one."""
    home = configured if configured is not None else os.path.expanduser("~")
    if not os.path.isabs(home):
        return None
    return os.path.realpath(home)
