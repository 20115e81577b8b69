"""The durable consent store: round trips, file safety and bad files (security matrix B1, B2, B5)."""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
from pathlib import Path

import pytest

from host_bridge.consent.store import (
    FORMAT_VERSION,
    ConsentStore,
    ConsentStoreError,
    PersistedDecision,
    StoreProblem,
)

SERVER = "sha256:" + "a" * 64
OTHER = "sha256:" + "b" * 64
PROJECT = "/home/u/proj"
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX ownership and modes")


@pytest.fixture
def storage(tmp_path: Path) -> Path:
    return tmp_path / "state" / "host_bridge"


def opened(storage: Path) -> ConsentStore:
    store = ConsentStore(storage)
    store.load()
    return store


def write_file(storage: Path, content: bytes) -> Path:
    storage.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = storage / "consent.json"
    path.write_bytes(content)
    path.chmod(0o600)
    return path


def valid_file(*roots: tuple[str, str, str]) -> bytes:
    records = [
        {"server": s, "path": p, "decision": d, "serverId": "srv", "updated": "2025-01-01T00:00:00Z"}
        for s, p, d in roots
    ]
    return json.dumps({"version": 1, "roots": records, "trust": []}).encode()


def corrupt_copies(storage: Path) -> list[Path]:
    return sorted(storage.glob("consent.json.corrupt-*"))


def test_a_store_without_a_file_allows_nothing_and_creates_nothing(storage: Path) -> None:
    store = opened(storage)

    assert store.roots() == ()
    assert store.root(SERVER, PROJECT) is None
    assert store.problem is None
    assert not storage.exists()


@pytest.mark.parametrize("decision", ["allow", "deny"])
def test_a_saved_decision_survives_reopening_the_store(storage: Path, decision: PersistedDecision) -> None:
    assert opened(storage).set_root(SERVER, PROJECT, decision, server_id="files")

    record = opened(storage).root(SERVER, PROJECT)

    assert record is not None
    assert (record.decision, record.server_id) == (decision, "files")


def test_the_file_has_the_documented_versioned_format(storage: Path) -> None:
    store = opened(storage)
    store.set_root(SERVER, PROJECT, "allow", server_id="files")
    store.set_trust(SERVER, True, server_id="files")

    data = json.loads((storage / "consent.json").read_text())

    assert data["version"] == FORMAT_VERSION
    [root] = data["roots"]
    assert root.keys() == {"server", "path", "decision", "serverId", "updated"}
    assert (root["server"], root["path"], root["decision"], root["serverId"]) == (
        SERVER,
        PROJECT,
        "allow",
        "files",
    )
    [trust] = data["trust"]
    assert trust.keys() == {"server", "trusted", "serverId", "updated"}
    assert trust["trusted"] is True


def test_removing_a_decision_deletes_its_record_from_the_file(storage: Path) -> None:
    store = opened(storage)
    store.set_root(SERVER, PROJECT, "allow")
    store.set_root(SERVER, "/home/u/other", "deny")

    assert store.set_root(SERVER, PROJECT, None)

    assert [r.path for r in opened(storage).roots()] == ["/home/u/other"]


def test_repeating_the_same_decision_does_not_rewrite_the_file(storage: Path) -> None:
    store = opened(storage)
    store.set_root(SERVER, PROJECT, "allow", server_id="files")
    before = (storage / "consent.json").stat()

    assert not store.set_root(SERVER, PROJECT, "allow", server_id="files")
    assert (storage / "consent.json").stat().st_ino == before.st_ino


def test_trust_answers_round_trip_and_can_be_forgotten(storage: Path) -> None:
    store = opened(storage)
    store.set_trust(SERVER, True, server_id="a")
    store.set_trust(OTHER, False, server_id="b")

    reopened = opened(storage)
    assert [(t.server, t.trusted) for t in reopened.trust_records()] == [(SERVER, True), (OTHER, False)]

    reopened.set_trust(SERVER, None)
    assert opened(storage).trust_record(SERVER) is None


def test_removing_a_decision_from_an_empty_store_creates_nothing(storage: Path) -> None:
    assert not opened(storage).set_root(SERVER, PROJECT, None)
    assert not storage.exists()


def test_a_relative_path_is_refused(storage: Path) -> None:
    with pytest.raises(ValueError, match="absolute"):
        opened(storage).set_root(SERVER, "proj", "allow")


@posix_only
def test_the_store_folder_is_created_0700_and_the_file_0600(storage: Path) -> None:
    opened(storage).set_root(SERVER, PROJECT, "allow")

    assert stat.S_IMODE(storage.stat().st_mode) == 0o700
    assert stat.S_IMODE((storage / "consent.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((storage / "consent.lock").stat().st_mode) & 0o077 == 0


def test_each_save_keeps_the_previous_file_as_the_backup(storage: Path) -> None:
    store = opened(storage)
    store.set_root(SERVER, PROJECT, "allow")
    first = (storage / "consent.json").read_bytes()

    store.set_root(SERVER, "/home/u/second", "allow")

    assert store.backup_path.read_bytes() == first
    assert not list(storage.glob("*.tmp-*"))


@posix_only
def test_a_file_readable_by_others_is_tightened_to_0600_on_the_next_write(storage: Path) -> None:
    path = write_file(storage, valid_file((SERVER, PROJECT, "allow")))
    path.chmod(0o644)
    store = opened(storage)
    assert store.root(SERVER, PROJECT) is not None

    store.set_root(SERVER, "/home/u/second", "allow")

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.backup_path.stat().st_mode) == 0o600


def test_a_change_by_another_process_is_seen_on_reload(storage: Path) -> None:
    store = opened(storage)
    assert not store.reload()

    opened(storage).set_root(SERVER, PROJECT, "allow")

    assert store.reload()
    assert store.root(SERVER, PROJECT) is not None
    assert not store.reload()


def test_reload_after_this_store_saved_finds_nothing_new(storage: Path) -> None:
    store = opened(storage)
    store.set_root(SERVER, PROJECT, "allow")

    assert not store.reload()


def test_a_write_keeps_decisions_another_process_saved_since_this_one_read(storage: Path) -> None:
    mine, theirs = opened(storage), opened(storage)
    theirs.set_root(OTHER, PROJECT, "allow")

    mine.set_root(SERVER, PROJECT, "deny")

    assert {(r.server, r.decision) for r in opened(storage).roots()} == {(OTHER, "allow"), (SERVER, "deny")}


CORRUPT_FILES = {
    "truncated": valid_file((SERVER, PROJECT, "allow"))[:-20],
    "garbage": b"\x00\x17not json at all\xff",
    "empty": b"",
    "wrong-types": json.dumps(
        {
            "version": 1,
            "roots": [
                {
                    "server": SERVER,
                    "path": PROJECT,
                    "decision": True,
                    "serverId": 1,
                    "updated": "2025-01-01T00:00:00Z",
                }
            ],
        }
    ).encode(),
    "unknown-decision": valid_file((SERVER, PROJECT, "maybe")),
    "version-as-text": b'{"version": "1", "roots": []}',
    "not-an-object": b"[1, 2, 3]",
    "duplicate-keys": valid_file((SERVER, PROJECT, "allow"), (SERVER, PROJECT, "deny")),
}


@pytest.mark.parametrize("content", CORRUPT_FILES.values(), ids=CORRUPT_FILES.keys())
def test_a_corrupt_file_fails_closed_and_is_kept_byte_identical(storage: Path, content: bytes) -> None:
    write_file(storage, content)
    store = ConsentStore(storage)

    with pytest.raises(ConsentStoreError) as caught:
        store.load()

    assert caught.value.kind is StoreProblem.CORRUPT
    assert str(store.file_path) in str(caught.value)
    assert store.problem is caught.value
    assert store.roots() == ()
    [copy] = corrupt_copies(storage)
    assert copy.read_bytes() == content
    assert str(copy) in str(caught.value)
    assert not store.file_path.exists()


def test_a_corrupt_file_is_reported_once_and_logged(storage: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_file(storage, b"{")
    store = ConsentStore(storage)

    with caplog.at_level(logging.ERROR), pytest.raises(ConsentStoreError):
        store.load()
    store.load()
    store.reload()

    assert len([r for r in caplog.records if "consent.json" in r.getMessage()]) == 1
    assert store.problem is not None and not store.blocked


def test_the_next_decision_after_a_corrupt_file_starts_a_fresh_file(storage: Path) -> None:
    write_file(storage, b"{broken")
    store = ConsentStore(storage)
    with pytest.raises(ConsentStoreError):
        store.load()

    store.set_root(SERVER, "/home/u/new", "allow")

    assert [r.path for r in opened(storage).roots()] == ["/home/u/new"]
    assert corrupt_copies(storage)[0].read_bytes() == b"{broken"
    assert store.problem is None


def test_the_corrupt_file_message_points_to_a_valid_backup(storage: Path) -> None:
    store = opened(storage)
    store.set_root(SERVER, PROJECT, "allow")
    store.set_root(SERVER, "/home/u/second", "allow")
    store.file_path.write_bytes(b'{"version": 1, "roo')

    with pytest.raises(ConsentStoreError, match=r"consent\.json\.bak") as caught:
        ConsentStore(storage).load()
    assert "restore" in str(caught.value)


def test_a_second_corrupt_file_in_the_same_second_does_not_overwrite_the_first(storage: Path) -> None:
    for content in (b"first", b"second"):
        write_file(storage, content)
        with pytest.raises(ConsentStoreError):
            ConsentStore(storage).load()

    assert sorted(p.read_bytes() for p in corrupt_copies(storage)) == [b"first", b"second"]


def test_a_file_from_a_newer_version_is_refused_and_left_untouched(storage: Path) -> None:
    content = json.dumps({"version": 99, "roots": [{"anything": "new"}], "grants": {}}).encode()
    path = write_file(storage, content)
    store = ConsentStore(storage)

    with pytest.raises(ConsentStoreError) as caught:
        store.load()
    assert caught.value.kind is StoreProblem.NEWER_VERSION
    assert "version 99" in str(caught.value) and "understands version 1" in str(caught.value)
    assert str(path) in str(caught.value)
    assert store.blocked and store.roots() == ()

    with pytest.raises(ConsentStoreError, match="newer host_bridge"):
        store.set_root(SERVER, PROJECT, "allow")
    with pytest.raises(ConsentStoreError, match="newer host_bridge"):
        store.set_trust(SERVER, True)

    assert path.read_bytes() == content
    assert corrupt_copies(storage) == []
    assert not store.backup_path.exists()


def test_a_newer_file_replaced_by_a_valid_one_is_used_after_reload(storage: Path) -> None:
    path = write_file(storage, b'{"version": 2}')
    store = ConsentStore(storage)
    with pytest.raises(ConsentStoreError):
        store.load()

    path.write_bytes(valid_file((SERVER, PROJECT, "allow")))

    assert store.reload()
    assert store.problem is None
    assert store.root(SERVER, PROJECT) is not None


def assert_refused(store: ConsentStore, *, match: str) -> None:
    with pytest.raises(ConsentStoreError, match=match) as caught:
        store.load()
    assert caught.value.kind is StoreProblem.UNSAFE
    assert store.blocked and store.roots() == ()
    with pytest.raises(ConsentStoreError, match=match):
        store.set_root(SERVER, "/home/u/new", "allow")


@posix_only
def test_a_consent_file_that_is_a_symlink_is_refused(storage: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_bytes(valid_file((SERVER, PROJECT, "allow")))
    target.chmod(0o600)
    storage.mkdir(parents=True, mode=0o700)
    (storage / "consent.json").symlink_to(target)
    store = ConsentStore(storage)

    assert_refused(store, match="symbolic link.*Remove the link")
    assert str(storage / "consent.json") in str(store.problem)
    assert (storage / "consent.json").is_symlink()
    assert target.read_bytes() == valid_file((SERVER, PROJECT, "allow"))


@posix_only
@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_a_consent_file_writable_by_others_is_refused(storage: Path, mode: int) -> None:
    path = write_file(storage, valid_file((SERVER, PROJECT, "allow")))
    path.chmod(mode)

    assert_refused(ConsentStore(storage), match=f"writable by other users.*chmod 600 {path}")
    assert stat.S_IMODE(path.stat().st_mode) == mode


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_consent_file_owned_by_another_user_is_refused(storage: Path) -> None:
    path = write_file(storage, valid_file((SERVER, PROJECT, "allow")))
    os.chown(path, 65534, 65534)

    assert_refused(ConsentStore(storage), match="owned by uid 65534")


@posix_only
def test_a_consent_file_that_is_a_named_pipe_is_refused_without_hanging(storage: Path) -> None:
    storage.mkdir(parents=True, mode=0o700)
    os.mkfifo(storage / "consent.json", 0o600)

    assert_refused(ConsentStore(storage), match="named pipe")


@posix_only
def test_a_lock_file_that_is_a_symlink_is_refused(storage: Path, tmp_path: Path) -> None:
    write_file(storage, valid_file((SERVER, PROJECT, "allow")))
    (storage / "consent.lock").symlink_to(tmp_path / "victim")

    assert_refused(ConsentStore(storage), match="consent.lock is a symbolic link")
    assert not (tmp_path / "victim").exists()


@posix_only
def test_a_store_folder_writable_by_others_is_refused(storage: Path) -> None:
    write_file(storage, valid_file((SERVER, PROJECT, "allow")))
    storage.chmod(0o777)

    assert_refused(ConsentStore(storage), match="chmod 700")


@posix_only
def test_fixing_an_unsafe_file_and_reloading_restores_its_decisions(storage: Path) -> None:
    path = write_file(storage, valid_file((SERVER, PROJECT, "allow")))
    path.chmod(0o666)
    store = ConsentStore(storage)
    with pytest.raises(ConsentStoreError):
        store.load()

    path.chmod(0o600)

    assert store.reload()
    assert store.problem is None
    assert store.root(SERVER, PROJECT) is not None
