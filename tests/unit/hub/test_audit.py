"""The roots audit log: every answer recorded, and never written into a file someone else controls."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest

from host_bridge.consent.identity import ServerIdentity
from host_bridge.hub.audit import AuditLog, read_audit
from host_bridge.roots import Root

SERVER = ServerIdentity(source="settings", server_id="fs", fingerprint="sha256:" + "a" * 64)
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX ownership and modes")


def test_an_answer_is_recorded_with_its_server_identity(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    AuditLog(str(storage)).append(SERVER, "2025-11-25", [Root(uri="file:///p", name="p")])

    (entry,) = read_audit(str(storage))

    assert (entry.server, entry.source, entry.fingerprint, entry.roots) == (
        "fs",
        "settings",
        SERVER.fingerprint,
        ("file:///p",),
    )
    assert (storage / "audit.jsonl").stat().st_mode & 0o777 == 0o600
    assert storage.stat().st_mode & 0o777 == 0o700


@posix_only
@pytest.mark.requirement("B5")
def test_in_a_world_writable_storage_folder_nothing_is_appended_to_a_file_placed_there(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    storage = tmp_path / "shared"
    storage.mkdir()
    storage.chmod(0o777)
    victim = tmp_path / "someone-elses-file"
    victim.write_text("theirs\n")
    (storage / "audit.jsonl").symlink_to(victim)

    with caplog.at_level(logging.ERROR):
        AuditLog(str(storage)).append(SERVER, None, [Root(uri="file:///p")])
        AuditLog(str(storage)).append(SERVER, None, [Root(uri="file:///p")])

    assert victim.read_text() == "theirs\n"
    assert "is not written" in caplog.text and "chmod 700" in caplog.text


@posix_only
@pytest.mark.requirement("B5")
def test_a_log_file_that_is_a_symlink_is_refused_even_in_a_private_folder(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    storage.mkdir(mode=0o700)
    victim = tmp_path / "elsewhere"
    victim.write_text("")
    os.symlink(victim, storage / "audit.jsonl")

    AuditLog(str(storage)).append(SERVER, None, [Root(uri="file:///p")])

    assert victim.read_text() == ""
