"""What detection works with and returns, as plain frozen dataclasses: no pydantic, so ``host-bridge roots`` loads none.

:func:`~host_bridge.workspace.detect.find_candidates` takes any folders and settings shaped like :class:`FolderLike`
and :class:`SettingsLike` (the wire models of :mod:`.models` are, and so are :class:`Folder` and :class:`Settings`)
and returns a :class:`Found` of :class:`FoundCandidate` and :class:`FoundNotice`, whose :meth:`to_wire` is exactly
what the wire models :class:`~host_bridge.workspace.models.Candidate` and
:class:`~host_bridge.workspace.models.DetectionNotice` give (a unit test compares them). Names, markers and messages
are made :func:`~host_bridge.text.visible` here, as those models' validators do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from host_bridge.text import visible

CandidateKind = Literal["workspaceFolder", "git", "worktree", "submodule", "project"]
"""Why a folder was proposed: an editor folder, a git toplevel, a linked worktree, a submodule, a project."""

KIND_ORDER: tuple[CandidateKind, ...] = ("workspaceFolder", "git", "worktree", "submodule", "project")

NoticeKind = Literal["unsupportedFolder", "missingFolder", "boundHit", "gitError", "unreadable"]
"""What a :class:`FoundNotice` (a ``DetectionNotice``) is about."""

DEFAULT_IGNORE: tuple[str, ...] = (
    "node_modules",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "target",
    "dist",
    ".git",
    ".hg",
    ".svn",
    ".idea",
    ".gradle",
    ".next",
    ".nuxt",
    "bower_components",
    "Pods",
    ".dart_tool",
    "_build",
    "deps",
    ".stack-work",
    "dist-newstyle",
    ".zig-cache",
    "zig-cache",
    "zig-out",
    ".build",
    ".terraform",
    ".cache",
)
"""Directory names never descended into, by default (``DetectionSettings.ignore``)."""


class FolderLike(Protocol):
    """A workspace folder as detection reads it (a ``WorkspaceFolder`` or a :class:`Folder`)."""

    @property
    def uri(self) -> str: ...

    @property
    def name(self) -> str | None: ...


class SettingsLike(Protocol):
    """Detection's settings as it reads them (a ``DetectionSettings`` or a :class:`Settings`)."""

    @property
    def max_depth(self) -> int: ...

    @property
    def max_candidates(self) -> int: ...

    @property
    def max_entries(self) -> int: ...

    @property
    def git_timeout(self) -> float: ...

    @property
    def deadline(self) -> float: ...

    @property
    def ignore(self) -> tuple[str, ...]: ...

    @property
    def git(self) -> bool: ...

    @property
    def home(self) -> str | None: ...


@dataclass(frozen=True)
class Folder:
    """A folder to search, as :class:`~host_bridge.workspace.models.WorkspaceFolder` without its validation."""

    uri: str
    name: str | None = None


@dataclass(frozen=True)
class Settings:
    """Detection's settings, without validation: the defaults of ``DetectionSettings`` (which takes them from here).

    Whoever builds one checks the ranges ``DetectionLimits`` declares (``host-bridge roots`` does, with argparse).
    """

    max_depth: int = 8
    max_candidates: int = 500
    max_entries: int = 400_000
    git_timeout: float = 10.0
    deadline: float = 20.0
    ignore: tuple[str, ...] = DEFAULT_IGNORE
    git: bool = True
    home: str | None = None


DEFAULTS = Settings()


@dataclass(frozen=True)
class FoundCandidate:
    """A candidate folder (the fields and meaning of :class:`~host_bridge.workspace.models.Candidate`)."""

    uri: str
    name: str
    kinds: tuple[CandidateKind, ...]
    markers: tuple[str, ...] = ()
    parent: str | None = None
    declared_uri: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", visible(self.name))
        object.__setattr__(self, "markers", tuple(visible(marker) for marker in self.markers))

    def to_wire(self) -> dict[str, Any]:
        """What ``Candidate.to_wire()`` gives: camelCase keys, unset optional fields left out."""
        wire: dict[str, Any] = {"uri": self.uri, "name": self.name, "kinds": list(self.kinds)}
        wire["markers"] = list(self.markers)
        if self.parent is not None:
            wire["parent"] = self.parent
        if self.declared_uri is not None:
            wire["declaredUri"] = self.declared_uri
        return wire


@dataclass(frozen=True)
class FoundNotice:
    """Something the user should know about a detection (the fields of ``DetectionNotice``)."""

    kind: NoticeKind
    message: str
    uri: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", visible(self.message))

    def to_wire(self) -> dict[str, Any]:
        """What ``DetectionNotice.to_wire()`` gives."""
        wire: dict[str, Any] = {"kind": self.kind, "message": self.message}
        if self.uri is not None:
            wire["uri"] = self.uri
        return wire


@dataclass(frozen=True)
class Found:
    """The result of one detection run (the fields of ``Detection``)."""

    candidates: tuple[FoundCandidate, ...]
    """Deduplicated by canonical path, parents before children."""
    notices: tuple[FoundNotice, ...] = ()
    """Skipped inputs and bounds hit, in the order they happened."""
