"""What a ruleset handles per Landlock ABI and setting, what the seccomp filter and the capability cut keep, which
planted files a folder has, and what status says for kernels this machine is not (docs/security.md I1, I2, I6, I8,
I9)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from host_bridge.sandbox import capabilities, landlock, mounts, seccomp
from host_bridge.sandbox.confinement import channels, not_confined_sentence
from host_bridge.sandbox.landlock import (
    ACCESS_FS_MAKE_BLOCK,
    ACCESS_FS_MAKE_CHAR,
    ACCESS_FS_RESOLVE_UNIX,
    ACCESS_NET_BIND_TCP,
    ACCESS_NET_CONNECT_TCP,
    READ_WRITE,
    SCOPE_ABSTRACT_UNIX_SOCKET,
    SCOPE_SIGNAL,
    attributes_for,
)
from host_bridge.sandbox.policy import PathGrant, SandboxPolicy

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux")


@pytest.mark.requirement("I1", "I2", "I9")
def test_each_abi_handles_the_scopes_network_rights_and_socket_rights_it_offers() -> None:
    assert attributes_for(3, network=False) == landlock.Attributes(fs=landlock.handled_rights(3))
    four = attributes_for(4, network=False)
    assert four.net == ACCESS_NET_BIND_TCP | ACCESS_NET_CONNECT_TCP and four.scoped == 0 and four.size() == 16
    assert attributes_for(4, network=True).net == 0
    six = attributes_for(6)
    assert six.scoped == SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET and six.size() == 24
    assert not six.fs & ACCESS_FS_RESOLVE_UNIX, "ABI 6 knows nothing of pathname sockets"
    nine = attributes_for(9, network=False)
    assert nine.fs & ACCESS_FS_RESOLVE_UNIX and nine.net and nine.scoped == SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET
    assert attributes_for(12).fs == nine.fs, "a newer ABI handles what this module knows"


@pytest.mark.requirement("I1")
def test_sockets_the_user_allowed_are_neither_scoped_nor_resolved_but_signals_stay_scoped() -> None:
    allowed = attributes_for(9, unix_sockets=True)
    assert not allowed.fs & ACCESS_FS_RESOLVE_UNIX
    assert allowed.scoped == SCOPE_SIGNAL


@pytest.mark.requirement("I6")
def test_a_read_write_grant_never_lets_a_server_make_a_device_node() -> None:
    assert not READ_WRITE & (ACCESS_FS_MAKE_CHAR | ACCESS_FS_MAKE_BLOCK)


@pytest.mark.requirement("I6")
def test_a_root_server_keeps_no_capability_that_lets_it_inject_into_a_terminal_mount_or_make_devices() -> None:
    for network in (True, False):
        kept = capabilities.kept(network=network)
        assert capabilities.CAP_SYS_ADMIN not in kept
        assert 27 not in kept, "CAP_MKNOD"
        assert 16 not in kept, "CAP_SYS_MODULE"
    assert capabilities.CAP_NET_RAW not in capabilities.kept(network=False)


@linux_only
@pytest.mark.requirement("I1", "I9")
@pytest.mark.skipif(seccomp.unavailable_reason() is not None, reason=f"{seccomp.unavailable_reason()}")
def test_the_seccomp_program_is_whole_instructions_and_only_built_when_something_needs_refusing() -> None:
    assert seccomp.program(refuse_unix=False, network=True) is None
    unix = seccomp.program(refuse_unix=True, network=True)
    offline = seccomp.program(refuse_unix=True, network=False)
    assert unix and offline and len(unix) % 8 == 0 and len(offline) > len(unix)


def test_the_planted_files_of_a_folder_follow_a_git_file_and_name_a_missing_git(tmp_path: Path) -> None:
    repo, worktree, plain = tmp_path / "repo", tmp_path / "worktree", tmp_path / "plain"
    (repo / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (repo / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n")
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {repo / '.git' / 'worktrees' / 'wt'}\n")
    plain.mkdir()

    paths = mounts.planted_paths([str(repo), str(worktree), str(plain)])

    assert str(repo / ".git" / "hooks") in paths and str(repo / ".git" / "config") in paths
    assert str(repo / ".git" / "worktrees" / "wt" / "config") in paths
    assert str(worktree / ".git" / "hooks") not in paths, "a .git file holds no hooks"
    assert str(plain / ".git") in paths and str(plain / ".mcp.json") in paths and str(plain / ".envrc") in paths


def policy(abi: int, **fields: object) -> SandboxPolicy:
    shared = PathGrant(path="/w/app", kind="shared", why="a folder you shared")
    base = {
        "enforced": True,
        "requested": True,
        "mechanism": "landlock",
        "abi": abi,
        "read_write": (shared,),
        "summary": "confined",
    }
    return SandboxPolicy.model_validate({**base, **fields})


@pytest.mark.requirement("I1", "I2", "I8", "I9")
def test_status_says_what_an_older_kernel_without_helpers_leaves_open(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seccomp, "unavailable_reason", lambda: "no libseccomp binding is installed")
    monkeypatch.setattr(mounts, "unavailable_reason", lambda: "bubblewrap (bwrap) is not installed")

    found = {c.name: c for c in channels(policy(3, network=False), mount_layer=False)}

    for name in ("signals", "abstractSockets", "namedSockets", "tcp", "otherNetwork", "plantedFiles"):
        assert found[name].state == "notConfined", name
    assert "ABI 3" in found["signals"].sentence and "libseccomp" in found["namedSockets"].sentence
    assert found["sharedMemory"].state == "refused" and "/dev/shm is not granted" in found["sharedMemory"].sentence
    sentence = not_confined_sentence(tuple(found.values()))
    assert sentence is not None and sentence.startswith("Not confined on this machine: ")


@pytest.mark.requirement("I1", "I9")
def test_status_says_which_kernel_mechanism_refuses_each_channel_on_abi_9() -> None:
    found = {c.name: c for c in channels(policy(9, network=False), mount_layer=True)}
    assert found["namedSockets"].state == "refused" and "ABI 9" in found["namedSockets"].sentence
    assert found["signals"].state == "refused" and found["tcp"].state == "refused"
    assert channels(policy(9, enforced=False)) == ()
