"""Wire and settings models of workspace detection.

Detection itself works with the plain records of :mod:`.records` (so ``host-bridge roots`` loads no pydantic);
:func:`~host_bridge.workspace.detect.detect` gives these models, and the defaults here are taken from there.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from host_bridge.text import visible
from host_bridge.wire import WireModel
from host_bridge.workspace.records import DEFAULTS, KIND_ORDER, CandidateKind, NoticeKind

__all__ = [
    "KIND_ORDER",
    "Candidate",
    "CandidateKind",
    "Detection",
    "DetectionLimits",
    "DetectionNotice",
    "DetectionSettings",
    "NoticeKind",
    "WorkspaceFolder",
]


class Candidate(WireModel):
    """A folder that could be shared with MCP servers, once the user consents (docs/protocol.md ``Candidate``)."""

    uri: str
    """Canonical ``file://`` URI of the real directory (symlinks resolved); what is advertised as a root."""
    name: str
    """Display name: project metadata name, else the editor's folder name, else the directory name."""
    kinds: tuple[CandidateKind, ...]
    """Every reason the folder was proposed, in :data:`KIND_ORDER`."""
    markers: tuple[str, ...] = ()
    """Marker files found in the folder (``pyproject.toml``, ``.git``, ``go.work`` …), sorted."""
    parent: str | None = None
    """URI of the enclosing candidate (or of the main repository, for a linked worktree)."""
    declared_uri: str | None = None
    """The URI the folder was found under when it differs from ``uri`` (it went through a symlink)."""

    @field_validator("name")
    @classmethod
    def _visible_name(cls, name: str) -> str:
        return visible(name)

    @field_validator("markers")
    @classmethod
    def _visible_markers(cls, markers: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(visible(marker) for marker in markers)


class WorkspaceFolder(WireModel):
    """A folder the editor has open (LSP ``WorkspaceFolder``)."""

    uri: str
    """The editor's URI for it; non-file schemes are reported and skipped."""
    name: str | None = None
    """The editor's display name."""


class DetectionLimits(WireModel):
    """The bounds of detection a user may change (the editor's ``initializationOptions.detection``)."""

    max_depth: int = Field(default=DEFAULTS.max_depth, ge=0, le=64)
    """How many directory levels below a workspace folder are searched for projects."""
    max_candidates: int = Field(default=DEFAULTS.max_candidates, ge=1, le=100_000)
    """How many candidates one detection returns at most."""
    max_entries: int = Field(default=DEFAULTS.max_entries, ge=1)
    """How many file-system entries one walk looks at, per workspace folder, at most."""
    git_timeout: float = Field(default=DEFAULTS.git_timeout, gt=0, le=600)
    """Seconds one git call may take; then its process group is killed and the repository searched without git."""
    deadline: float = Field(default=DEFAULTS.deadline, gt=0, le=3600)
    """Seconds one detection may take; then it stops and returns what it found, with a ``boundHit`` notice."""

    def settings(self) -> DetectionSettings:
        """Detection settings with these bounds and every other switch at its default."""
        return DetectionSettings.model_validate(self.model_dump())


class DetectionSettings(DetectionLimits):
    """Bounds and switches of detection; every field has a default."""

    ignore: tuple[str, ...] = DEFAULTS.ignore
    """Directory names never descended into (also inside git repositories, where they are rarely tracked)."""
    git: bool = DEFAULTS.git
    """Use git for toplevels, worktrees, submodules and ignore rules."""
    home: str | None = None
    """The user's home directory (default: ``~``): neither it nor any folder above it is offered as a candidate
    unless it is itself a workspace folder."""


class DetectionNotice(WireModel):
    """Something the user should know about a detection: a skipped folder or a bound that was hit."""

    kind: NoticeKind
    """What happened."""
    message: str
    """One sentence for a person, naming the folder and what to do (invisible characters escaped)."""
    uri: str | None = None
    """The folder concerned, if any."""

    @field_validator("message")
    @classmethod
    def _visible_message(cls, message: str) -> str:
        return visible(message)


class Detection(WireModel):
    """The result of one detection run."""

    candidates: tuple[Candidate, ...]
    """Deduplicated by canonical path, parents before children."""
    notices: tuple[DetectionNotice, ...] = ()
    """Skipped inputs and bounds hit, in the order they happened."""
