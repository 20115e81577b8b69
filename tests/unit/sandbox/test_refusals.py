"""Refused paths read from servers' stderr in the words of node, npm, Python, Go, Rust and C tools."""

from __future__ import annotations

import pytest

from host_bridge.sandbox.policy import PathGrant, SandboxPolicy
from host_bridge.sandbox.refusals import find_refusals, refused_paths

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
        ("OSError: [Errno 18] Invalid cross-device link: '/work/webapp/a' -> '/tmp/b'", ["/tmp/b"]),
        ('PermissionError: [Errno 13] Permission denied: "/home/me/it\'s"', ["/home/me/it's"]),
        ("2026/01/02 open /home/me/notes/todo.txt: permission denied", ["/home/me/notes/todo.txt"]),
        ("Error: mkdir /var/lib/thing: operation not permitted", ["/var/lib/thing"]),
        ("rename /work/webapp/a /srv/b: permission denied", ["/srv/b"]),
        (
            "error: failed to open file `/home/me/.config/uv/uv.toml`: Permission denied (os error 13)",
            ["/home/me/.config/uv/uv.toml"],
        ),
        ("cat: /home/me/.netrc: Permission denied", ["/home/me/.netrc"]),
        ("sh: 1: cannot create /srv/out.txt: Permission denied", ["/srv/out.txt"]),
        ("ls: cannot open directory '/home/me/repos': Permission denied", ["/home/me/repos"]),
        ("open /home/me/My Documents/a.txt: permission denied", ["/home/me/My Documents/a.txt"]),
    ],
)
def test_a_refusal_in_a_runtimes_words_names_its_path(line: str, paths: list[str]) -> None:
    assert refused_paths([line], POLICY) == paths


def test_npms_error_block_gives_the_path_after_its_code() -> None:
    lines = [
        "npm error code EACCES",
        "npm error syscall mkdir",
        "npm error path /home/me/.npm/_cacache",
        "npm error errno EACCES",
    ]
    assert refused_paths(lines, POLICY) == ["/home/me/.npm/_cacache"]


def test_paths_the_policy_grants_pseudo_files_and_lines_without_a_refusal_are_ignored() -> None:
    lines = [
        "Error: EACCES: permission denied, open '/work/webapp/locked.txt'",
        "PermissionError: [Errno 13] Permission denied: '/usr/lib/x'",
        "reading /home/me/file.txt",
        "Error: ENOENT: no such file or directory, open '/home/me/missing'",
        "open /proc/1/environ: permission denied",
    ]
    assert refused_paths(lines, POLICY) == []


def test_each_path_is_reported_once_in_the_order_first_seen() -> None:
    lines = ["cat: /b: Permission denied", "cat: /a: Permission denied", "cat: /b: Permission denied"]
    assert refused_paths(lines, POLICY) == ["/b", "/a"]


def test_a_refusal_before_a_failed_exit_is_fatal_and_offers_the_folder_that_holds_a_file() -> None:
    (refusal,) = find_refusals(["cat: /etc-not/x.txt: Permission denied"], POLICY, exit_status=1)
    assert refusal.fatal and refusal.folder == "/etc-not" and refusal.line.startswith("cat:")
    (clean,) = find_refusals(["cat: /etc-not/x.txt: Permission denied"], POLICY, exit_status=0)
    assert not clean.fatal


def test_without_an_enforced_sandbox_nothing_was_refused_by_it() -> None:
    off = POLICY.model_copy(update={"enforced": False})
    assert refused_paths(["cat: /home/me/x: Permission denied"], off) == []
