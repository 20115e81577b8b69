"""Repository files read as hostile input: bounded regular files or a clear refusal (docs/security.md F1)."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from host_bridge.safe_read import RepoFileError, read_repo_file, read_repo_text

pytestmark = pytest.mark.requirement("F1")

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, /proc and /dev are POSIX")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self is Linux")


def refusal(path: Path, **options: bool) -> RepoFileError:
    with pytest.raises(RepoFileError) as caught:
        read_repo_file(str(path), 4096, **options)
    assert caught.value.path == str(path)
    assert str(path) in str(caught.value)
    return caught.value


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    (tmp_path / "mcp.json").write_bytes(b'{"servers": {}}')
    assert read_repo_file(str(tmp_path / "mcp.json"), 4096) == b'{"servers": {}}'


def test_a_symlink_to_a_regular_file_is_followed_unless_asked_not_to(tmp_path: Path) -> None:
    (tmp_path / "real.env").write_text("A=1\n")
    (tmp_path / ".env").symlink_to(tmp_path / "real.env")
    assert read_repo_file(str(tmp_path / ".env"), 100) == b"A=1\n"
    error = refusal(tmp_path / ".env", follow_symlinks=False)
    assert (error.problem, "symbolic link" in error.reason) == ("symlink", True)


@posix_only
@pytest.mark.parametrize("through_symlink", [False, True], ids=["fifo", "symlink-to-fifo"])
def test_a_fifo_is_refused_without_blocking(tmp_path: Path, through_symlink: bool) -> None:
    os.mkfifo(tmp_path / "pipe")
    path = tmp_path / "pipe"
    if through_symlink:
        (tmp_path / "package.json").symlink_to(path)
        path = tmp_path / "package.json"
    errors: list[RepoFileError] = []

    def read() -> None:
        try:
            read_repo_file(str(path), 4096)
        except RepoFileError as error:
            errors.append(error)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # release the blocked reader before failing
        os.close(os.open(tmp_path / "pipe", os.O_WRONLY | os.O_NONBLOCK))
    assert not reader.is_alive(), "reading a FIFO blocked"
    [error] = errors
    assert "named pipe (FIFO)" in error.reason
    assert error.problem == "special"
    assert "not a regular file" in str(error)


@linux_only
@pytest.mark.parametrize("target", ["/proc/self/fd/0", "/proc/self/environ", "/dev/zero", "/dev/null"])
def test_a_link_to_a_system_file_is_refused_by_its_real_path(tmp_path: Path, target: str) -> None:
    (tmp_path / ".mcp.json").symlink_to(target)
    error = refusal(tmp_path / ".mcp.json")
    assert "system file" in error.reason
    assert error.problem == "system"


@linux_only
def test_a_system_file_named_directly_is_refused() -> None:
    with pytest.raises(RepoFileError, match=r"/proc/self/environ.*system file under /proc"):
        read_repo_file("/proc/self/environ", 4096)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    assert "a directory, not a regular file" in refusal(tmp_path).reason


def test_a_missing_file_is_refused_as_missing(tmp_path: Path) -> None:
    error = refusal(tmp_path / "nope.env")
    assert (error.problem, "does not exist" in error.reason) == ("missing", True)


def test_a_file_over_the_limit_is_refused_or_cut_at_the_limit(tmp_path: Path) -> None:
    (tmp_path / "big.json").write_bytes(b"x" * 5000)
    error = refusal(tmp_path / "big.json")
    assert (error.problem, "larger than 4096 bytes" in error.reason) == ("too_large", True)
    assert read_repo_file(str(tmp_path / "big.json"), 4096, truncate=True) == b"x" * 4096


def test_text_that_is_not_utf8_is_refused_naming_the_byte(tmp_path: Path) -> None:
    (tmp_path / ".env").write_bytes(b"NAME=caf\xe9\n")
    with pytest.raises(RepoFileError, match=r"not valid UTF-8 \(byte 0xe9 at offset 8\); save it as UTF-8") as caught:
        read_repo_text(str(tmp_path / ".env"), 4096)
    assert caught.value.problem == "not_utf8"


def test_a_character_cut_by_the_limit_is_dropped_and_a_bom_is_removed(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_bytes("\ufeffab€".encode())
    assert read_repo_text(str(tmp_path / "package.json"), 6, truncate=True) == "ab"
    assert read_repo_text(str(tmp_path / "package.json"), 100) == "ab€"
