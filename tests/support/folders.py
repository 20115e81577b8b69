"""Folders and repositories made for a test, and how host_bridge names them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from host_bridge.uris import canonical_path, path_to_uri
from host_bridge.workspace.models import Candidate

Git = Callable[..., str]
"""The ``git`` fixture: run git in a directory (first argument), return its output."""
Tree = Callable[[Path, Mapping[str, str]], Path]
"""The ``tree`` fixture: :func:`write_tree`."""
Repo = Callable[..., Path]
"""The ``repo`` fixture: a git repository at a path with the given files, committed unless ``commit=False``."""


def write_tree(root: Path, files: Mapping[str, str]) -> Path:
    """Write ``{relative path: text}`` below ``root``; returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def project(folder: Path) -> Path:
    """A new folder holding a ``pyproject.toml`` that names it after itself."""
    folder.mkdir(parents=True)
    (folder / "pyproject.toml").write_text(f'[project]\nname = "{folder.name}"\n')
    return folder


def folder_uri(folder: Path) -> str:
    """The canonical URI host_bridge uses for an existing folder."""
    return path_to_uri(canonical_path(folder))


def folder_candidate(folder: Path, name: str | None = None) -> Candidate:
    """A workspace-folder candidate for an existing directory."""
    return Candidate(uri=folder_uri(folder), name=name or folder.name, kinds=("workspaceFolder",))
