"""What :func:`list_repository` says about real repositories, against what two ignore-aware ``git ls-files`` say.

Detection walks the working tree once, without ignore rules, and lets ``git check-ignore`` sort what is untracked
(issue 17); it must find the same files, nested repositories and ignored folders as the two whole-tree listings it
replaced: ``ls-files --cached --others --exclude-standard`` and ``ls-files --others --ignored --exclude-standard
--directory``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.folders import Git, Repo, Tree

from host_bridge.uris import path_to_uri
from host_bridge.workspace import repository
from host_bridge.workspace.detect import detect
from host_bridge.workspace.models import Detection, DetectionSettings, WorkspaceFolder
from host_bridge.workspace.repository import list_repository, parse_listing

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, shell scripts and such file names")


def reference(listing_dir: Path) -> tuple[set[str], set[str]]:
    """The files (ignore rules applied) and the ignored folders, as the two whole-tree listings give them."""

    def ls_files(*args: str) -> bytes:
        command = ["git", "ls-files", "-z", *args]
        done = subprocess.run(command, cwd=listing_dir, check=True, capture_output=True, stdin=subprocess.DEVNULL)
        return done.stdout

    files, _ = parse_listing(ls_files("-t", "-s", "--cached", "--others", "--exclude-standard"))
    ignored = os.fsdecode(ls_files("--others", "--ignored", "--exclude-standard", "--directory")).split("\0")
    return set(files), {entry.removesuffix("/") for entry in ignored if entry.endswith("/")}


def listed(toplevel: Path, listing_dir: Path) -> tuple[set[str], set[str]]:
    listing = list_repository(str(toplevel), str(listing_dir), lambda: 10.0)
    assert len(listing.files) == len(set(listing.files))
    return set(listing.files), set(listing.ignored)


@pytest.fixture
def tricky(scratch: Path, repo: Repo, git: Git, tree: Tree) -> Path:
    """A repository with untracked and ignored files and folders of every kind detection tells apart."""
    top = repo(
        scratch / "top",
        {
            ".gitignore": "build/\nnode_modules/\n*.log\ntrk/gen/\nonlyign/*.tmp\n",
            "src/a.c": "",
            "trk/t.txt": "",
            "pkg/package.json": '{"name": "pkg"}',
        },
    )
    (top / ".git" / "info" / "exclude").write_text(":x/\n")
    tree(top / "trk" / "gen", {"keep": ""})
    git(top, "add", "-f", "trk/gen/keep")
    git(top, "commit", "-q", "-m", "force-added into an ignored folder")
    embedded = repo(top / "vendor" / "embedded", {"Cargo.toml": "[package]\n"})
    git(top, "add", str(embedded))
    git(top, "commit", "-q", "-m", "a gitlink without .gitmodules")
    tree(
        top,
        {
            "src/b.o": "",
            "src/c.log": "",
            "build/x/f": "",
            "node_modules/a/package.json": "{}",
            "untracked/package.json": "{}",
            "untracked/sub/x.log": "",
            "untracked/node_modules/q/package.json": "{}",
            "onlyign/a.tmp": "",
            "trk/gen/new": "",
            "trk/gen/sub/f": "",
            "deep/er/untracked/f": "",
            "we*ird[1]/package.json": "{}",
            ":x/package.json": "{}",
            ":/package.json": "{}",
            "new\nline/package.json": "{}",
            "pkg/draft/go.mod": "",
        },
    )
    (top / "emptyd").mkdir()
    repo(top / "third_party" / "nested", {"package.json": "{}"})
    repo(top / "pkg" / "cloned", {"package.json": "{}"})
    repo(top / "build" / "deps" / "fmt", {"CMakeLists.txt": ""})
    repo(top / "logs.log" / "inside", {}, commit=False)
    (top / "caf\udce9").mkdir()
    (top / "caf\udce9" / "package.json").write_text("{}")
    return top


@posix_only
@pytest.mark.parametrize("below", ["", "pkg", "untracked", "build", "deep/er"])
@pytest.mark.parametrize("sorting", ["by name", "too many untracked folders", "check-ignore fails"])
def test_one_walk_finds_what_the_two_ignore_aware_listings_found(
    tricky: Path, below: str, sorting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if sorting == "too many untracked folders":
        monkeypatch.setattr(repository, "_MAX_PATHSPECS", 1)
    elif sorting == "check-ignore fails":
        monkeypatch.setattr(repository, "_CHECK_IGNORE", ["check-ignore", "--no-such-option"])
    listing_dir = tricky / below if below else tricky

    files, ignored = listed(tricky, listing_dir)

    assert (files, ignored) == reference(listing_dir)


@posix_only
@pytest.mark.requirement("F3")
def test_a_config_that_includes_standard_input_reads_only_the_paths_given_and_the_folder_is_listed_again(
    tricky: Path, git: Git
) -> None:
    git(tricky, "config", "include.path", "/dev/stdin")  # check-ignore's input is then a config it cannot parse

    assert listed(tricky, tricky) == reference(tricky)


@posix_only
def test_a_folder_ignored_as_a_whole_by_its_repository_lists_nothing_but_itself_as_ignored(
    scratch: Path, repo: Repo, tree: Tree
) -> None:
    home = repo(scratch / "home", {".gitignore": "*\n"})
    code = tree(home / "code", {"proj/package.json": "{}"})

    assert listed(home, code) == reference(code) == (set(), {"."})


@posix_only
def test_the_working_tree_is_walked_once(tricky: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "git-calls"
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    real = shutil.which("git")
    assert real is not None
    shim.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")

    list_repository(str(tricky), str(tricky), lambda: 10.0)

    calls = os.fsdecode(log.read_bytes()).split("\n")
    walks = [call for call in calls if " ls-files " in f" {call} " and "--others" in call and " -- " not in call]
    assert len(walks) == 1, calls


@posix_only
@pytest.mark.requirement("F3")
def test_a_repository_with_nothing_untracked_is_listed_without_reading_its_ignore_rules(
    scratch: Path, repo: Repo
) -> None:
    root = repo(scratch / "r", {".gitignore": "build/\n", "app/package.json": '{"name": "app"}'})
    exclude = root / ".git" / "info" / "exclude"
    exclude.unlink(missing_ok=True)
    os.mkfifo(exclude)  # blocks whoever reads the ignore rules until it is opened for writing
    found: list[Detection] = []
    worker = threading.Thread(
        target=lambda: found.append(
            detect([WorkspaceFolder(uri=path_to_uri(str(root)))], DetectionSettings(git_timeout=5))
        ),
        daemon=True,
    )
    try:
        worker.start()
        worker.join(30)
    finally:
        for _ in range(20):
            try:
                os.close(os.open(exclude, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                break

    [detection] = found
    assert {c.name for c in detection.candidates} == {"r", "app"}
    assert detection.notices == ()
