"""Refused paths read from servers' stderr in the words of node, npm, Python, Go, Rust and C tools; what a server
writes is only a claim, so a question is only ever about an existing path outside its policy (docs/security.md I7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from host_bridge.sandbox.policy import PathGrant, SandboxPolicy
from host_bridge.sandbox.refusals import claimed_paths, find_refusals, refused_paths

POLICY = SandboxPolicy(
    enforced=True,
    requested=True,
    mechanism="landlock",
    read_execute=(PathGrant(path="/usr", kind="system", why=""),),
    read_write=(PathGrant(path="/work/webapp", kind="shared", why=""),),
    summary="",
)


@pytest.mark.parametrize(
    ("line", "paths"),
    [
        ("Error: EACCES: permission denied, open '/work/billing/.env'", ["/work/billing/.env"]),
        ("[Error: EACCES: permission denied, scandir '/home/me/.ssh'] {", ["/home/me/.ssh"]),
        ("Error: EPERM: operation not permitted, copyfile '/a/x' -> '/b/y'", ["/a/x", "/b/y"]),
        ("PermissionError: [Errno 13] Permission denied: '/home/me/.aws/credentials'", ["/home/me/.aws/credentials"]),
        ("OSError: [Errno 18] Invalid cross-device link: '/work/webapp/a' -> '/tmp/b'", ["/work/webapp/a", "/tmp/b"]),
        ('PermissionError: [Errno 13] Permission denied: "/home/me/it\'s"', ["/home/me/it's"]),
        ("2026/01/02 open /home/me/notes/todo.txt: permission denied", ["/home/me/notes/todo.txt"]),
        ("Error: mkdir /var/lib/thing: operation not permitted", ["/var/lib/thing"]),
        ("rename /work/webapp/a /srv/b: permission denied", ["/work/webapp/a", "/srv/b"]),
        (
            "error: failed to open file `/home/me/.config/uv/uv.toml`: Permission denied (os error 13)",
            ["/home/me/.config/uv/uv.toml"],
        ),
        ("cat: /home/me/.netrc: Permission denied", ["/home/me/.netrc"]),
        ("sh: 1: cannot create /srv/out.txt: Permission denied", ["/srv/out.txt"]),
        ("ls: cannot open directory '/home/me/repos': Permission denied", ["/home/me/repos"]),
        ("open /home/me/My Documents/a.txt: permission denied", ["/home/me/My Documents/a.txt"]),
        (
            "Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/t/node_modules/sdk/server/mcp.js' imported from /t/a",
            ["/t/node_modules/sdk/server/mcp.js"],
        ),
        ("  url: 'file:///t/node_modules/%40scope/sdk/server/mcp.js'", ["/t/node_modules/@scope/sdk/server/mcp.js"]),
        ("Error: Cannot find package '/t/node_modules/zod/' imported from /t/x.js", ["/t/node_modules/zod"]),
    ],
)
def test_a_refusal_in_a_runtimes_words_names_its_path(line: str, paths: list[str]) -> None:
    assert [path for path, _ in claimed_paths([line])] == paths


def test_npms_error_block_gives_the_path_after_its_code() -> None:
    lines = [
        "npm error code EACCES",
        "npm error syscall mkdir",
        "npm error path /home/me/.npm/_cacache",
        "npm error errno EACCES",
    ]
    assert [path for path, _ in claimed_paths(lines)] == ["/home/me/.npm/_cacache"]


def test_paths_the_policy_grants_pseudo_files_and_lines_without_a_refusal_are_ignored(tmp_path: Path) -> None:
    policy = POLICY.model_copy(update={"read_write": (PathGrant(path=str(tmp_path), kind="shared", why=""),)})
    (tmp_path / "locked.txt").write_text("")
    lines = [
        f"Error: EACCES: permission denied, open '{tmp_path / 'locked.txt'}'",
        "PermissionError: [Errno 13] Permission denied: '/usr/lib/x'",
        "reading /home/me/file.txt",
        "Error: ENOENT: no such file or directory, open '/home/me/missing'",
        "open /proc/1/environ: permission denied",
    ]
    assert refused_paths(lines, policy) == []


def test_each_path_is_reported_once_in_the_order_first_seen() -> None:
    lines = ["cat: /b: Permission denied", "cat: /a: Permission denied", "cat: /b: Permission denied"]
    assert [path for path, _ in claimed_paths(lines)] == ["/b", "/a"]


def test_a_refusal_before_a_failed_exit_is_fatal_and_offers_the_folder_that_holds_a_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "x.txt").write_text("")
    line = f"cat: {data / 'x.txt'}: Permission denied"
    (refusal,) = find_refusals([line], POLICY, exit_status=1, home=str(tmp_path / "home"))
    assert refusal.fatal and refusal.folder == str(data) and refusal.line.startswith("cat:")
    (clean,) = find_refusals([line], POLICY, exit_status=0, home=str(tmp_path / "home"))
    assert not clean.fatal


@pytest.mark.requirement("I7")
def test_a_server_cannot_make_a_question_about_root_home_an_ancestor_of_home_or_a_path_that_does_not_exist(
    tmp_path: Path,
) -> None:
    home = tmp_path / "users" / "me"
    (home / "projects").mkdir(parents=True)
    lines = [
        "PermissionError: [Errno 13] Permission denied: '/'",
        f"PermissionError: [Errno 13] Permission denied: '{home}'",
        f"Error: EACCES: permission denied, scandir '{home}/'",
        f"cat: {tmp_path / 'users'}: Permission denied",
        f"cat: {tmp_path / 'invented' / 'folder'}: Permission denied",
        f"cat: {home / 'projects'}: Permission denied",
    ]
    assert refused_paths(lines, POLICY, home=str(home)) == [str(home / "projects")]


def test_without_an_enforced_sandbox_nothing_was_refused_by_it() -> None:
    off = POLICY.model_copy(update={"enforced": False})
    assert refused_paths(["cat: /home/me/x: Permission denied"], off) == []
