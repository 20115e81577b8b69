"""Candidate detection on real folders and real git repositories (docs/security.md A10, A11, F1–F4, F7)."""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from support.folders import Git, Repo, Tree
from support.processes import left_behind

from host_bridge.uris import parse_file_uri, path_to_uri
from host_bridge.workspace.detect import detect, root_for_file
from host_bridge.workspace.models import Candidate, Detection, DetectionSettings, WorkspaceFolder
from host_bridge.workspace.repository import GitTimedOut, run_git

_T = TypeVar("_T")

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="symlinks and permissions differ on Windows")


def folder(path: Path, name: str | None = None) -> WorkspaceFolder:
    return WorkspaceFolder(uri=path_to_uri(str(path)), name=name)


def uri(path: Path) -> str:
    return path_to_uri(str(path))


def by_path(detection: Detection) -> dict[Path, Candidate]:
    return {Path(parse_file_uri(c.uri)): c for c in detection.candidates}


def notices_of(detection: Detection, kind: str) -> list[str]:
    return [n.message for n in detection.notices if n.kind == kind]


def test_a_folder_holding_two_repositories_offers_both_under_their_metadata_names(scratch: Path, repo: Repo) -> None:
    root = scratch / "acme"
    repo(root / "frontend", {"package.json": '{"name": "@acme/web"}', "src/index.js": ""})
    repo(root / "backend", {"pyproject.toml": '[project]\nname = "acme-api"\n', "api/__init__.py": ""})

    detection = detect([folder(root, "Acme")])

    assert [c.name for c in detection.candidates] == ["Acme", "acme-api", "@acme/web"]
    found = by_path(detection)
    assert found[root].kinds == ("workspaceFolder",)
    for path in (root / "frontend", root / "backend"):
        assert found[path].kinds == ("git", "project")
        assert found[path].parent == uri(root)
        assert found[path].declared_uri is None
    assert found[root / "frontend"].markers == (".git", "package.json")
    assert found[root / "backend"].markers == (".git", "pyproject.toml")
    assert detection.notices == ()


def test_the_repository_around_a_folder_is_offered_even_above_it(scratch: Path, repo: Repo) -> None:
    top = repo(scratch / "mono", {"go.work": "use ./svc\n", "svc/go.mod": "module example.com/svc\n"})

    found = by_path(detect([folder(top / "svc")]))

    assert found[top].kinds == ("git", "project")
    assert found[top].markers == (".git", "go.work")
    assert found[top / "svc"].kinds == ("workspaceFolder", "project")
    assert found[top / "svc"].parent == uri(top)
    assert found[top / "svc"].name == "example.com/svc"


def test_candidates_come_parents_first_sorted_by_path(scratch: Path, tree: Tree) -> None:
    tree(scratch, {f"{d}/package.json": "{}" for d in ("b", "a", "a/x", "a-b")})

    detection = detect([folder(scratch)])

    paths = [Path(parse_file_uri(c.uri)) for c in detection.candidates]
    assert paths == [scratch, scratch / "a", scratch / "a" / "x", scratch / "a-b", scratch / "b"]
    assert by_path(detection)[scratch / "a" / "x"].parent == uri(scratch / "a")


def test_a_linked_worktree_is_offered_with_the_main_repository_as_its_parent(
    scratch: Path, repo: Repo, git: Git
) -> None:
    main = repo(scratch / "main", {"Cargo.toml": '[package]\nname = "crab"\n'})
    git(main, "worktree", "add", "-q", str(scratch / "elsewhere" / "feature"), "-b", "feature")
    git(main, "worktree", "add", "-q", str(scratch / "gone"), "-b", "gone")
    shutil.rmtree(scratch / "gone")

    found = by_path(detect([folder(main)]))

    feature = found[scratch / "elsewhere" / "feature"]
    assert feature.kinds == ("git", "worktree")
    assert feature.parent == uri(main)
    assert feature.markers == (".git",)
    assert scratch / "gone" not in found
    assert found[main].kinds == ("workspaceFolder", "git", "project")


def test_opening_a_linked_worktree_offers_it_as_a_worktree_of_the_main_repository(
    scratch: Path, repo: Repo, git: Git
) -> None:
    main = repo(scratch / "main", {"package.json": '{"name": "app"}'})
    git(main, "worktree", "add", "-q", str(scratch / "wt"), "-b", "wt")

    found = by_path(detect([folder(scratch / "wt")]))

    assert found[scratch / "wt"].kinds == ("workspaceFolder", "git", "worktree", "project")
    assert found[scratch / "wt"].parent == uri(main)
    assert found[scratch / "wt"].name == "app"


def test_an_initialised_submodule_is_offered_and_a_deinitialised_one_is_not(
    scratch: Path, repo: Repo, git: Git
) -> None:
    repo(scratch / "lib", {"Cargo.toml": '[package]\nname = "libcrab"\n'})
    repo(scratch / "other", {"package.json": '{"name": "other"}'})
    main = repo(scratch / "main", {"README.md": "main"})
    git(main, "submodule", "add", "-q", "../lib", "vendor/lib")
    git(main, "submodule", "add", "-q", "../other", "vendor/other")
    git(main, "commit", "-q", "-m", "submodules")
    git(main, "submodule", "deinit", "-q", "-f", "vendor/other")

    found = by_path(detect([folder(main)]))

    lib = found[main / "vendor" / "lib"]
    assert lib.kinds == ("git", "submodule", "project")
    assert lib.name == "libcrab"
    assert lib.parent == uri(main)
    assert lib.markers == (".git", "Cargo.toml")
    assert main / "vendor" / "other" not in found


def test_a_nested_independent_repository_is_searched_with_its_own_ignore_rules(scratch: Path, repo: Repo) -> None:
    outer = repo(scratch / "outer", {"pyproject.toml": '[project]\nname = "outer"\n'})
    repo(
        outer / "tools" / "inner",
        {".gitignore": "build/\n", "pkg/package.json": '{"name": "inner-pkg"}', "build/package.json": "{}"},
        commit=False,
    )

    found = by_path(detect([folder(outer)]))

    inner = outer / "tools" / "inner"
    assert found[inner].kinds == ("git",)
    assert found[inner].parent == uri(outer)
    assert found[inner / "pkg"].name == "inner-pkg"
    assert found[inner / "pkg"].parent == uri(inner)
    assert inner / "build" not in found


def test_gitignored_directories_and_untracked_node_modules_are_skipped(scratch: Path, repo: Repo) -> None:
    top = repo(
        scratch / "app",
        {
            ".gitignore": "generated/\n",
            "apps/web/package.json": '{"name": "web"}',
            "generated/package.json": "{}",
        },
    )
    (top / "node_modules" / "left-pad").mkdir(parents=True)
    (top / "node_modules" / "left-pad" / "package.json").write_text('{"name": "left-pad"}')

    found = by_path(detect([folder(top)]))

    assert set(found) == {top, top / "apps" / "web"}


@posix_only
@pytest.mark.parametrize("in_git", [False, True], ids=["plain", "git"])
@pytest.mark.requirement("A10")
def test_a_symlink_loop_and_a_symlink_to_outside_the_folder_are_not_followed(
    scratch: Path, tree: Tree, repo: Repo, in_git: bool
) -> None:
    tree(scratch / "outside", {"package.json": '{"name": "outside"}'})
    root = tree(scratch / "proj", {"app/package.json": '{"name": "app"}'})
    (root / "loop").symlink_to(root)
    (root / "app" / "up").symlink_to(root / "app", target_is_directory=True)
    (root / "escape").symlink_to(scratch / "outside", target_is_directory=True)
    if in_git:
        repo(root)

    found = by_path(detect([folder(root)]))

    assert set(found) == {root, root / "app"}


@pytest.mark.parametrize("in_git", [False, True], ids=["plain", "git"])
@pytest.mark.requirement("A10")
def test_projects_deeper_than_the_depth_bound_are_left_out_with_a_notice(
    scratch: Path, tree: Tree, repo: Repo, in_git: bool
) -> None:
    root = tree(scratch / "deep", {"a/package.json": "{}", "a/b/c/package.json": "{}"})
    if in_git:
        repo(root)

    detection = detect([folder(root)], DetectionSettings(max_depth=2))

    assert set(by_path(detection)) == {root, root / "a"}
    [message] = notices_of(detection, "boundHit")
    assert "maxDepth" in message
    assert "2" in message
    assert str(root) in message


@pytest.mark.requirement("A10")
def test_a_tree_of_thousands_of_projects_yields_at_most_max_candidates_with_a_notice(scratch: Path, tree: Tree) -> None:
    files = {f"group{g}/p{p}/package.json": "{}" for g in range(30) for p in range(100)}
    root = tree(scratch / "many", files)

    detection = detect([folder(root)])

    assert len(detection.candidates) == DetectionSettings().max_candidates
    [message] = notices_of(detection, "boundHit")
    assert "maxCandidates" in message
    assert "500" in message


@pytest.mark.requirement("A10")
def test_workspace_folders_past_the_candidate_bound_give_one_notice_not_one_each(scratch: Path) -> None:
    opened = [scratch / f"f{n:02}" for n in range(20)]
    for path in opened:
        path.mkdir()

    detection = detect([folder(path) for path in opened], DetectionSettings(max_candidates=5))

    assert [c.uri for c in detection.candidates] == [uri(path) for path in opened[:5]]
    [message] = notices_of(detection, "boundHit")
    assert "maxCandidates" in message and str(opened[5]) in message


@pytest.mark.requirement("A10")
def test_the_candidate_bound_also_holds_inside_git(scratch: Path, repo: Repo) -> None:
    root = repo(scratch / "many", {f"p{p:02}/package.json": "{}" for p in range(40)})

    detection = detect([folder(root)], DetectionSettings(max_candidates=5))

    assert len(detection.candidates) == 5
    assert [c.name for c in detection.candidates][:2] == ["many", "p00"]
    assert any("maxCandidates" in m for m in notices_of(detection, "boundHit"))


@pytest.mark.parametrize("in_git", [False, True], ids=["plain", "git"])
@pytest.mark.requirement("A10")
def test_the_entry_bound_stops_the_search_with_a_notice(scratch: Path, tree: Tree, repo: Repo, in_git: bool) -> None:
    root = tree(scratch / "wide", {f"f{i:03}.txt": "" for i in range(200)} | {"zz/package.json": "{}"})
    if in_git:
        repo(root)

    detection = detect([folder(root)], DetectionSettings(max_entries=50))

    assert root / "zz" not in by_path(detection)
    [message] = notices_of(detection, "boundHit")
    assert "maxEntries" in message
    assert "50" in message


@pytest.mark.parametrize("editor_uri", ["vscode-remote://ssh-remote+box/home/u/proj", "untitled:Untitled-1"])
@pytest.mark.requirement("A3")
def test_a_non_file_folder_is_skipped_with_a_notice_naming_it(scratch: Path, editor_uri: str) -> None:
    detection = detect([WorkspaceFolder(uri=editor_uri, name="Remote"), folder(scratch)])

    assert set(by_path(detection)) == {scratch}
    [notice] = detection.notices
    assert notice.kind == "unsupportedFolder"
    assert notice.uri == editor_uri
    assert "Remote" in notice.message
    assert "only local folders" in notice.message


def test_a_missing_folder_is_skipped_with_a_notice(scratch: Path) -> None:
    detection = detect([folder(scratch / "gone")])

    assert detection.candidates == ()
    [notice] = detection.notices
    assert notice.kind == "missingFolder"
    assert str(scratch / "gone") in notice.message


def test_a_file_given_as_a_folder_is_skipped_with_a_notice(scratch: Path) -> None:
    (scratch / "notes.txt").write_text("")

    detection = detect([folder(scratch / "notes.txt")])

    assert detection.candidates == ()
    assert [n.kind for n in detection.notices] == ["unsupportedFolder"]


@pytest.mark.parametrize(
    ("files", "member_marker"),
    [
        ({"package.json": '{"name": "root", "workspaces": {"packages": ["libs/m*"]}}'}, "package.json"),
        (
            {"package.json": "{}", "pnpm-workspace.yaml": "packages:\n  - 'libs/*'\n  - '!libs/x'\n"},
            "package.json",
        ),
        ({"Cargo.toml": '[workspace]\nmembers = ["libs/*"]\nexclude = ["libs/x"]\n'}, "Cargo.toml"),
        (
            {
                "pyproject.toml": '[project]\nname = "root"\n[tool.uv.workspace]\nmembers = ["libs/*"]\n'
                'exclude = ["libs/x"]\n'
            },
            "pyproject.toml",
        ),
        ({"go.work": "go 1.22\n\nuse (\n\t./libs/m1\n)\n"}, "go.mod"),
    ],
    ids=["npm", "pnpm", "cargo", "uv", "go-work"],
)
def test_monorepo_members_get_the_workspace_root_as_parent(
    scratch: Path, repo: Repo, files: dict[str, str], member_marker: str
) -> None:
    layout = {"libs/CMakeLists.txt": "project(libs)\n", f"libs/m1/{member_marker}": ""}
    layout[f"libs/x/{member_marker}"] = ""
    root = repo(scratch / "mono", files | layout)

    found = by_path(detect([folder(root)]))

    assert found[root / "libs" / "m1"].parent == uri(root)
    assert found[root / "libs" / "m1"].kinds == ("project",)
    assert found[root / "libs" / "x"].parent == uri(root / "libs")
    assert set(found[root].markers) == {".git", *files}


def test_an_invalid_manifest_falls_back_to_the_editor_name_then_the_directory_name(scratch: Path, tree: Tree) -> None:
    root = tree(scratch / "ws", {"package.json": '{"name": ', "sub/pyproject.toml": "[project\nname='x'"})

    found = by_path(detect([folder(root, "My Workspace")]))

    assert found[root].name == "My Workspace"
    assert found[root / "sub"].name == "sub"
    assert found[root / "sub"].markers == ("pyproject.toml",)


@posix_only
@pytest.mark.requirement("A11")
def test_two_folders_naming_one_directory_through_a_symlink_give_one_candidate(scratch: Path, tree: Tree) -> None:
    real = tree(scratch / "real", {"package.json": '{"name": "shared"}'})
    link = scratch / "link"
    link.symlink_to(real, target_is_directory=True)

    detection = detect([folder(real, "Real"), folder(link, "Link")])

    assert len(detection.candidates) == 1
    [candidate] = detection.candidates
    assert candidate.uri == uri(real)
    assert candidate.declared_uri is None
    assert candidate.name == "shared"


@posix_only
@pytest.mark.requirement("A8")
def test_a_folder_opened_through_a_symlink_keeps_the_declared_uri(scratch: Path, tree: Tree) -> None:
    real = tree(scratch / "real", {"sub/Cargo.toml": '[package]\nname = "c"\n'})
    link = scratch / "link"
    link.symlink_to(real, target_is_directory=True)

    detection = detect([folder(link)])

    found = by_path(detection)
    assert found[real].uri == uri(real)
    assert found[real].declared_uri == uri(link)
    assert found[real / "sub"].parent == uri(real)


@pytest.mark.requirement("F3")
def test_a_broken_repository_gives_a_git_notice_and_is_walked_instead(scratch: Path, tree: Tree) -> None:
    root = tree(scratch / "broken", {".git": "gitdir: /nonexistent/worktree\n", "app/package.json": "{}"})

    detection = detect([folder(root)])

    assert root / "app" in by_path(detection)
    [message] = notices_of(detection, "gitError")
    assert str(root) in message


def test_with_git_disabled_a_dot_git_directory_still_marks_a_repository(scratch: Path, repo: Repo) -> None:
    root = repo(scratch / "r", {"package.json": '{"name": "r"}'})

    found = by_path(detect([folder(root)], DetectionSettings(git=False)))

    assert found[root].kinds == ("workspaceFolder", "git", "project")
    assert found[root].markers == (".git", "package.json")


def test_a_folder_ignored_by_an_enclosing_repository_is_still_searched(scratch: Path, repo: Repo, tree: Tree) -> None:
    home = repo(scratch / "home", {".gitignore": "*\n"})
    tree(home / "code" / "proj", {"package.json": '{"name": "proj"}'})

    found = by_path(detect([folder(home / "code")]))

    assert found[home].kinds == ("git",)
    assert found[home / "code" / "proj"].name == "proj"


@posix_only
@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads every directory")
@pytest.mark.requirement("A10")
def test_an_unreadable_directory_is_skipped_with_one_notice(scratch: Path, tree: Tree) -> None:
    root = tree(scratch / "r", {f"{d}/package.json": "{}" for d in ("a/secret", "b/secret", "ok")})
    (root / "a").chmod(0)
    (root / "b").chmod(0)
    try:
        detection = detect([folder(root)])
    finally:
        (root / "a").chmod(0o755)
        (root / "b").chmod(0o755)

    assert root / "ok" in by_path(detection)
    assert len(notices_of(detection, "unreadable")) == 1


def test_the_result_is_wire_ready(scratch: Path, repo: Repo) -> None:
    root = repo(scratch / "w", {"package.json": '{"name": "w"}'})

    [wire] = [c.to_wire() for c in detect([folder(root)]).candidates]

    assert wire == {
        "uri": uri(root),
        "name": "w",
        "kinds": ["workspaceFolder", "git", "project"],
        "markers": [".git", "package.json"],
    }


def test_a_file_s_root_is_the_nearest_directory_with_a_marker(scratch: Path, tree: Tree) -> None:
    home = tree(scratch / "home", {"proj/pyproject.toml": "", "proj/src/pkg/mod.py": ""})

    assert root_for_file(str(home / "proj" / "src" / "pkg" / "mod.py"), home=str(home)) == str(home / "proj")


def test_a_file_s_root_is_never_above_home(scratch: Path, tree: Tree) -> None:
    tree(scratch, {"package.json": "{}", ".git/HEAD": ""})
    home = tree(scratch / "home", {"notes/todo.txt": ""})

    assert root_for_file(str(home / "notes" / "todo.txt"), home=str(home)) is None


def test_a_file_outside_home_only_considers_its_own_directory(scratch: Path, tree: Tree) -> None:
    tree(scratch / "srv", {"Cargo.toml": "", "src/main.rs": "", "bin/run.sh": "", "bin/go.mod": ""})
    home = scratch / "home"
    home.mkdir()

    srv = scratch / "srv"
    assert root_for_file(str(srv / "src" / "main.rs"), home=str(home)) is None
    assert root_for_file(str(srv / "bin" / "run.sh"), home=str(home)) == str(srv / "bin")


def test_a_missing_file_has_no_root(scratch: Path) -> None:
    assert root_for_file(str(scratch / "nope.py"), home=str(scratch)) is None


def test_a_missing_git_executable_gives_a_notice_and_the_folder_is_walked(
    scratch: Path, repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = repo(scratch / "r", {"app/package.json": '{"name": "app"}'})
    monkeypatch.setenv("PATH", str(scratch / "no-binaries"))

    detection = detect([folder(root)])

    assert by_path(detection)[root / "app"].name == "app"
    [message] = notices_of(detection, "gitError")
    assert "git is not available" in message
    assert str(root) in message


# What a repository controls is hostile (docs/security.md F1–F4, F7).

Fifos = Callable[[Path], Path]


@pytest.fixture
def fifos() -> Iterator[Fifos]:
    """Make FIFOs; afterwards release whatever still waits on one (a failing test must not leave git blocked)."""
    made: list[Path] = []

    def make(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        os.mkfifo(path)
        made.append(path)
        return path

    yield make
    for path in made:
        for _ in range(20):
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                break  # ENXIO: nobody is reading


def in_a_thread(action: Callable[[], _T], ceiling: float = 30) -> _T:
    """``action()`` run in a worker thread that must finish within ``ceiling`` seconds (a generous bound)."""
    outcome: list[_T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(action())
        except BaseException as error:
            failure.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(ceiling)
    assert not worker.is_alive(), f"still running after {ceiling} s"
    if failure:
        raise failure[0]
    return outcome[0]


@pytest.mark.requirement("F4")
def test_the_home_folder_as_an_enclosing_repository_is_neither_offered_nor_listed(
    scratch: Path, repo: Repo, tree: Tree
) -> None:
    home = repo(
        scratch / "home",
        {".gitignore": "generated/\n", "package.json": '{"name": "dotfiles"}', "other/Cargo.toml": ""},
    )
    tree(
        home / "proj",
        {
            "pyproject.toml": '[project]\nname = "proj"\n',
            "generated/package.json": "{}",
            "web/package.json": '{"name": "web"}',
        },
    )

    detection = detect([folder(home / "proj")], DetectionSettings(home=str(home)))

    found = by_path(detection)
    assert set(found) == {home / "proj", home / "proj" / "web"}
    assert found[home / "proj"].kinds == ("workspaceFolder", "project")
    assert found[home / "proj"].parent is None
    assert found[home / "proj" / "web"].parent == uri(home / "proj")


@pytest.mark.requirement("F4")
def test_the_home_folder_is_taken_from_the_environment_by_default(
    scratch: Path, repo: Repo, tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = repo(scratch / "home", {"package.json": '{"name": "dotfiles"}'})
    tree(home / "proj", {"package.json": '{"name": "proj"}'})
    monkeypatch.setenv("HOME", str(home))

    assert set(by_path(detect([folder(home / "proj")]))) == {home / "proj"}


@pytest.mark.requirement("F4")
def test_a_repository_above_home_is_not_offered_either(scratch: Path, repo: Repo, tree: Tree) -> None:
    top = repo(scratch / "disk", {"package.json": '{"name": "whole-disk"}'})
    home = tree(top / "users" / "me", {"proj/go.mod": "module example.com/proj\n"})

    found = by_path(detect([folder(home / "proj")], DetectionSettings(home=str(home))))

    assert set(found) == {home / "proj"}


@pytest.mark.requirement("F4")
def test_opening_the_home_folder_itself_offers_it(scratch: Path, repo: Repo) -> None:
    home = repo(scratch / "home", {"package.json": '{"name": "dotfiles"}', "proj/Cargo.toml": ""})

    found = by_path(detect([folder(home)], DetectionSettings(home=str(home))))

    assert found[home].kinds == ("workspaceFolder", "git", "project")
    assert home / "proj" in found


@pytest.mark.requirement("F4")
def test_a_home_repository_met_below_an_opened_parent_is_walked_without_being_offered(
    scratch: Path, repo: Repo, tree: Tree
) -> None:
    users = tree(scratch / "users", {})
    home = repo(users / "me", {".gitignore": "*\n", "package.json": "{}"}, commit=False)
    tree(home / "proj", {"package.json": '{"name": "proj"}'})

    found = by_path(detect([folder(users)], DetectionSettings(home=str(home))))

    assert set(found) == {users, home / "proj"}
    assert found[users].kinds == ("workspaceFolder",)


def forge_worktree_record(main: Path, name: str, target: str) -> None:
    admin = main / ".git" / "worktrees" / name
    admin.mkdir(parents=True)
    (admin / "gitdir").write_text(target + "\n")


@pytest.mark.parametrize("target", ["other", "/", "home"])
@pytest.mark.requirement("F3")
def test_a_forged_worktree_record_offers_nothing(scratch: Path, repo: Repo, git: Git, tree: Tree, target: str) -> None:
    main = repo(scratch / "main", {"package.json": '{"name": "app"}'})
    git(main, "worktree", "add", "-q", str(scratch / "real-wt"), "-b", "real")
    home = tree(scratch / "home", {"package.json": '{"name": "dotfiles"}'})
    other = tree(scratch / "other", {"Cargo.toml": '[package]\nname = "victim"\n'})
    forged = {"other": str(other), "/": "/", "home": str(home)}[target]
    forge_worktree_record(main, "evil", forged)
    assert forged in git(main, "worktree", "list", "--porcelain")  # git itself believes the record

    found = by_path(detect([folder(main)], DetectionSettings(home=str(home))))

    assert set(found) == {main, scratch / "real-wt"}
    assert found[scratch / "real-wt"].kinds == ("git", "worktree")
    assert found[scratch / "real-wt"].parent == uri(main)


@pytest.mark.requirement("F3")
def test_a_worktree_whose_git_file_points_at_another_repository_is_not_offered(
    scratch: Path, repo: Repo, git: Git
) -> None:
    main = repo(scratch / "main")
    elsewhere = repo(scratch / "elsewhere")
    git(elsewhere, "worktree", "add", "-q", str(scratch / "theirs"), "-b", "theirs")
    forge_worktree_record(main, "theirs", str(scratch / "theirs" / ".git"))

    found = by_path(detect([folder(main)]))

    assert set(found) == {main}


@pytest.mark.requirement("F3")
def test_a_worktree_whose_git_file_is_a_symlink_is_not_offered(scratch: Path, repo: Repo, git: Git) -> None:
    main = repo(scratch / "main")
    git(main, "worktree", "add", "-q", str(scratch / "wt"), "-b", "wt")
    (scratch / "wt" / ".git").unlink()
    (scratch / "wt" / ".git").symlink_to(main / ".git" / "worktrees" / "wt")

    found = by_path(detect([folder(main)]))

    assert scratch / "wt" not in found


@pytest.mark.requirement("F7")
def test_invisible_characters_in_names_are_shown_escaped(scratch: Path, tree: Tree) -> None:
    root = tree(
        scratch / "ws",
        {
            "safe\u202eexe.txt/Cargo.toml": "",
            "a\u200bb/go.work": "go 1.22\n",
            "named/package.json": '{"name": "evil\\u202egnp.exe\\u200b"}',
        },
    )

    detection = detect([folder(root, "x\x1b[31mMy\u2066Workspace")])

    found = by_path(detection)
    assert found[root].name == "x\\u001b[31mMy\\u2066Workspace"
    assert found[root / "safe\u202eexe.txt"].name == "safe\\u202eexe.txt"
    assert found[root / "a\u200bb"].name == "a\\u200bb"
    assert found[root / "named"].name == "evil\\u202egnp.exe\\u200b"
    assert all(c.name.isprintable() for c in detection.candidates)


@posix_only
@pytest.mark.requirement("F1")
def test_manifests_that_are_fifos_links_to_system_files_or_not_utf8_give_no_name_and_one_notice_each(
    scratch: Path, tree: Tree, fifos: Fifos
) -> None:
    root = tree(scratch / "ws", {"latin1/Cargo.toml": "", "ok/package.json": '{"name": "fine"}'})
    (root / "latin1" / "Cargo.toml").write_bytes(b'[package]\nname = "caf\xe9"\n')
    fifos(root / "pipe" / "package.json")
    (root / "proc").mkdir()
    (root / "proc" / "pom.xml").symlink_to("/proc/self/fd/0")
    mono = tree(root / "mono", {"libs/a/package.json": "{}"})
    (mono / "package.json").write_bytes(b'{"name": "\xff", "workspaces": ["libs/*"]}')

    detection = in_a_thread(lambda: detect([folder(root)]))

    found = by_path(detection)
    assert found[root / "ok"].name == "fine"
    assert found[root / "latin1"].name == "latin1"
    assert found[root / "pipe"].name == "pipe"
    assert found[root / "proc"].name == "proc"
    assert found[root / "mono"].name == "mono"
    unreadable = notices_of(detection, "unreadable")
    assert len(unreadable) == 3
    assert any(str(root / "latin1" / "Cargo.toml") in m and "not valid UTF-8" in m for m in unreadable)
    assert any(str(root / "pipe" / "package.json") in m and "named pipe (FIFO)" in m for m in unreadable)
    assert sum(str(mono / "package.json") in m for m in unreadable) == 1  # read for its name and its members


@pytest.mark.requirement("F2")
def test_an_invalid_or_explosive_workspace_glob_costs_only_that_pattern(scratch: Path, repo: Repo) -> None:
    root = repo(
        scratch / "mono",
        {
            "package.json": '{"name": "root", "workspaces": ["[z-a]", "' + "**/" * 12 + 'b", "libs/*"]}',
            "libs/m1/package.json": "{}",
            "a/" * 30 + "c/package.json": "{}",
        },
    )

    detection = in_a_thread(lambda: detect([folder(root)], DetectionSettings(max_depth=64)))

    found = by_path(detection)
    assert found[root / "libs" / "m1"].parent == uri(root)
    assert found[root / Path(*["a"] * 30) / "c"].parent == uri(root)


@posix_only
@pytest.mark.requirement("F3")
def test_a_git_that_blocks_is_stopped_at_the_git_timeout_and_the_repository_walked(
    scratch: Path, repo: Repo, fifos: Fifos
) -> None:
    # Uncommitted: git reads the ignore rules (and blocks on the FIFO) to sort what is untracked.
    root = repo(scratch / "r", {"app/package.json": '{"name": "app"}'}, commit=False)
    fifos(root / ".git" / "info" / "exclude")

    detection = in_a_thread(lambda: detect([folder(root)], DetectionSettings(git_timeout=1)))

    assert by_path(detection)[root / "app"].name == "app"
    [message] = notices_of(detection, "gitError")
    assert str(root) in message
    assert "within 1 s in the repository" in message
    assert "gitTimeout" in message
    assert left_behind(scratch) == []


@posix_only
@pytest.mark.requirement("A10", "F2", "F3")
def test_detection_stops_at_its_deadline_with_a_notice_and_leaves_no_git_behind(
    scratch: Path, repo: Repo, tree: Tree, fifos: Fifos
) -> None:
    blocked = repo(scratch / "ws" / "blocked", {"package.json": '{"name": "blocked"}'}, commit=False)
    fifos(blocked / ".git" / "info" / "exclude")
    tree(scratch / "later", {"package.json": '{"name": "later"}'})

    detection = in_a_thread(
        lambda: detect([folder(scratch / "ws"), folder(scratch / "later")], DetectionSettings(deadline=2))
    )

    found = by_path(detection)
    assert scratch / "ws" in found and scratch / "later" in found
    messages = notices_of(detection, "boundHit")
    assert messages and all("deadline setting" in m and "2 seconds" in m for m in messages)
    assert notices_of(detection, "gitError") == []
    assert left_behind(scratch) == []


def test_timeouts_and_the_deadline_have_defaults() -> None:
    settings = DetectionSettings()
    assert (settings.git_timeout, settings.deadline, settings.home) == (10, 20, None)


@pytest.mark.requirement("F3")
def test_a_separate_git_dir_is_never_offered_as_the_main_worktree(scratch: Path, git: Git) -> None:
    main = scratch / "main"
    git(scratch, "init", "-q", "--separate-git-dir", str(scratch / "store.git"), str(main))
    git(main, "commit", "-q", "--allow-empty", "-m", "initial")
    git(main, "worktree", "add", "-q", str(scratch / "wt"), "-b", "wt")
    assert f"worktree {scratch / 'store.git'}" in git(main, "worktree", "list", "--porcelain")  # git's own view

    found = by_path(detect([folder(main)]))

    assert set(found) == {main, scratch / "wt"}
    assert found[scratch / "wt"].kinds == ("git", "worktree")


@posix_only
@pytest.mark.requirement("F3")
def test_a_git_call_that_times_out_takes_everything_it_started_with_it(scratch: Path, repo: Repo) -> None:
    root = repo(scratch / "r")
    hang = "alias.hang=!sleep 60 & sleep 60; echo never"

    with pytest.raises(GitTimedOut, match=r"within 0\.5 s"):
        in_a_thread(lambda: run_git(str(root), ["-c", hang, "hang"], 0.5))

    assert left_behind(scratch) == []


# Repositories git lists as gitlinks without .gitmodules, and repositories inside folders git ignores (issue 17).


def test_a_repository_added_inside_another_without_gitmodules_is_offered_as_git(
    scratch: Path, repo: Repo, git: Git
) -> None:
    outer = repo(scratch / "outer", {"README.md": "outer"})
    embedded = repo(outer / "vendor" / "lib", {"Cargo.toml": '[package]\nname = "embedded"\n'})
    git(outer, "add", "vendor/lib")  # what `git add` of a cloned folder does: a gitlink, no .gitmodules
    git(outer, "commit", "-q", "-m", "embed")
    assert "160000 " in git(outer, "ls-files", "-s", "vendor/lib")
    assert not (outer / ".gitmodules").exists()

    found = by_path(detect([folder(outer)]))

    assert found[embedded].kinds == ("git", "project")
    assert found[embedded].name == "embedded"
    assert found[embedded].parent == uri(outer)


def test_a_gitlink_whose_folder_holds_no_repository_offers_nothing(scratch: Path, repo: Repo, git: Git) -> None:
    outer = repo(scratch / "outer", {"README.md": "outer"})
    embedded = repo(outer / "lib", {"package.json": '{"name": "gone"}'})
    git(outer, "add", "lib")
    git(outer, "commit", "-q", "-m", "embed")
    shutil.rmtree(embedded / ".git")

    found = by_path(detect([folder(outer)]))

    assert set(found) == {outer}


def test_a_repository_inside_a_gitignored_folder_is_offered_but_ignored_projects_are_not(
    scratch: Path, repo: Repo, tree: Tree
) -> None:
    top = repo(scratch / "app", {".gitignore": "build/\nscratch.d/\n", "README.md": ""})
    checkout = repo(top / "build" / "_deps" / "fmt", {"package.json": '{"name": "fmt-checkout"}'})
    tree(top / "build" / "generated", {"package.json": '{"name": "generated"}'})
    direct = repo(top / "scratch.d", {"pyproject.toml": '[project]\nname = "direct"\n'})

    found = by_path(detect([folder(top)]))

    assert set(found) == {top, checkout, direct}
    assert found[checkout].kinds == ("git", "project")
    assert found[checkout].name == "fmt-checkout"
    assert found[checkout].parent == uri(top)
    assert found[direct].kinds == ("git", "project")


def test_a_heavy_ignored_folder_is_only_probed_one_level_down_for_repositories(
    scratch: Path, repo: Repo, tree: Tree
) -> None:
    top = repo(scratch / "web", {".gitignore": "node_modules/\n", "package.json": '{"name": "web"}'})
    from_git = repo(top / "node_modules" / "from-git", {"package.json": '{"name": "from-git"}'})
    repo(top / "node_modules" / "@scope" / "deeper")
    tree(top / "node_modules" / "plain", {"package.json": '{"name": "plain"}'})

    found = by_path(detect([folder(top)]))

    assert set(found) == {top, from_git}
    assert found[from_git].kinds == ("git", "project")


def test_a_hidden_ignored_folder_is_probed_like_a_heavy_one(scratch: Path, repo: Repo) -> None:
    top = repo(scratch / "tool", {".gitignore": ".direnv/\n", "README.md": ""})
    cached = repo(top / ".direnv" / "flake-input")
    repo(top / ".direnv" / "a" / "b")

    found = by_path(detect([folder(top)]))

    assert set(found) == {top, cached}


@pytest.mark.requirement("A10")
def test_the_entry_bound_holds_inside_a_gitignored_folder(scratch: Path, repo: Repo, tree: Tree) -> None:
    top = repo(scratch / "big", {".gitignore": "out/\n", "README.md": ""})
    tree(top / "out", {f"d{i:03}/f.txt": "" for i in range(300)})
    repo(top / "out" / "zzz" / "late")

    detection = detect([folder(top)], DetectionSettings(max_entries=100))

    assert set(by_path(detection)) == {top}
    [message] = notices_of(detection, "boundHit")
    assert "maxEntries" in message


@pytest.mark.requirement("A10")
def test_the_entry_bound_holds_while_probing_a_heavy_ignored_folder(scratch: Path, repo: Repo, tree: Tree) -> None:
    top = repo(scratch / "big", {".gitignore": "node_modules/\n", "README.md": ""})
    tree(top / "node_modules", {f"p{i:03}/package.json": "{}" for i in range(300)})
    repo(top / "node_modules" / "zzz")

    detection = detect([folder(top)], DetectionSettings(max_entries=100))

    assert set(by_path(detection)) == {top}
    assert any("maxEntries" in m for m in notices_of(detection, "boundHit"))


@pytest.mark.requirement("A10")
def test_a_repository_in_an_ignored_folder_deeper_than_the_depth_bound_is_left_out(scratch: Path, repo: Repo) -> None:
    top = repo(scratch / "d", {".gitignore": "cache/\n", "README.md": ""})
    near = repo(top / "cache" / "near")
    repo(top / "cache" / "x" / "y" / "far")

    detection = detect([folder(top)], DetectionSettings(max_depth=2))

    assert set(by_path(detection)) == {top, near}
    assert any("maxDepth" in m for m in notices_of(detection, "boundHit"))


@posix_only
@pytest.mark.requirement("A10")
def test_symlinks_in_an_ignored_folder_are_not_followed(scratch: Path, repo: Repo) -> None:
    elsewhere = repo(scratch / "elsewhere", {"package.json": '{"name": "elsewhere"}'})
    top = repo(scratch / "top", {".gitignore": "links/\nnode_modules/\n", "README.md": ""})
    (top / "links").mkdir()
    (top / "links" / "repo").symlink_to(elsewhere, target_is_directory=True)
    (top / "links" / "loop").symlink_to(top / "links", target_is_directory=True)
    (top / "node_modules").mkdir()
    (top / "node_modules" / "linked").symlink_to(elsewhere, target_is_directory=True)

    found = by_path(detect([folder(top)]))

    assert set(found) == {top}


@pytest.mark.requirement("F3")
def test_a_forged_git_file_in_an_ignored_folder_gives_a_git_notice_and_offers_nothing_outside(
    scratch: Path, repo: Repo, tree: Tree
) -> None:
    victim = repo(scratch / "victim", {"package.json": '{"name": "victim"}'})
    top = repo(scratch / "top", {".gitignore": "vendor/\n", "README.md": ""})
    tree(top / "vendor" / "forged", {".git": f"gitdir: {victim / '.git'}\n"})

    detection = detect([folder(top)])

    assert victim not in by_path(detection)
    assert all(path.is_relative_to(top) for path in by_path(detection))
