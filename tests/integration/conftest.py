"""Fixtures for integration tests: real git repositories in an isolated git environment."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest
from support.folders import Git, Repo, Tree, write_tree


@pytest.fixture
def isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commits work without a configured identity and the user's git config never leaks in."""
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Test Author")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "test@example.invalid")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for variable in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CEILING_DIRECTORIES"):
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture
def git(isolated_git: None) -> Git:
    """Run ``git`` in a directory (first argument) and return its output; failures raise."""

    def run(cwd: Path, *args: str) -> str:
        command = ["git", "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always", *args]
        return subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True).stdout

    return run


@pytest.fixture
def tree() -> Tree:
    """Write ``{relative path: text}`` below a directory; returns the directory."""
    return write_tree


@pytest.fixture
def repo(git: Git, tree: Tree) -> Repo:
    """A git repository at a path with the given files, committed unless ``commit=False``."""

    def make(root: Path, files: Mapping[str, str] | None = None, *, commit: bool = True) -> Path:
        tree(root, files or {})
        git(root, "init", "-q")
        if commit:
            git(root, "add", "-A")
            git(root, "commit", "-q", "--allow-empty", "-m", "initial")
        return root

    return make


@pytest.fixture
def scratch(tmp_path: Path, isolated_git: None) -> Path:
    """A canonical scratch directory (``tmp_path`` with symlinks resolved), git isolated."""
    return tmp_path.resolve()
