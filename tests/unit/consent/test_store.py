"""The durable consent store: round trips, file safety and bad files (docs/security.md B1, B2, B5)."""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
from pathlib import Path

import pytest

from host_bridge.consent.identity import ServerIdentity
from host_bridge.consent.schema import InvalidFile, parse
from host_bridge.consent.store import (
    FORMAT_VERSION,
    ConsentStore,
    ConsentStoreError,
    PersistedDecision,
    StoreProblem,
)

SERVER = ServerIdentity(source="settings", server_id="files", fingerprint="sha256:" + "a" * 64)
OTHER = ServerIdentity(source="/w/.vscode/mcp.json", server_id="web", fingerprint="sha256:" + "b" * 64)
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


def valid_file(*roots: tuple[ServerIdentity, str, str]) -> bytes:
    records = [
        {
            "source": s.source,
            "serverId": s.server_id,
            "fingerprint": s.fingerprint,
            "path": p,
            "decision": d,
            "updated": "2025-01-01T00:00:00Z",
        }
        for s, p, d in roots
    ]
    return json.dumps({"version": FORMAT_VERSION, "roots": records, "trust": []}).encode()


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
    assert opened(storage).set_root(SERVER, PROJECT, decision)

    record = opened(storage).root(SERVER, PROJECT)

    assert record is not None
    assert (record.decision, record.server_id, record.source) == (decision, "files", "settings")


def test_the_file_has_the_documented_versioned_format(storage: Path) -> None:
    store = opened(storage)
    store.set_root(SERVER, PROJECT, "allow")
    store.set_trust(SERVER, True)

    data = json.loads((storage / "consent.json").read_text())

    assert data["version"] == FORMAT_VERSION == 3
    [root] = data["roots"]
    assert root.keys() == {"source", "serverId", "fingerprint", "path", "decision", "updated"}
    assert (root["source"], root["serverId"], root["fingerprint"], root["path"], root["decision"]) == (
        "settings",
        "files",
        SERVER.fingerprint,
        PROJECT,
        "allow",
    )
    [trust] = data["trust"]
    assert trust.keys() == {"source", "serverId", "fingerprint", "trusted", "updated"}
    assert trust["trusted"] is True


def test_removing_a_decision_deletes_its_record_from_the_file(storage: Path) -> None:
    store = opened(storage)
    store.set_root(SERVER, PROJECT, "allow")
    store.set_root(SERVER, "/home/u/other", "deny")

    assert store.set_root(SERVER, PROJECT, None)

    assert [r.path for r in opened(storage).roots()] == ["/home/u/other"]


def test_repeating_the_same_decision_does_not_rewrite_the_file(storage: Path) -> None:
    store = opened(storage)
    store.set_root(SERVER, PROJECT, "allow")
    before = (storage / "consent.json").stat()

    assert not store.set_root(SERVER, PROJECT, "allow")
    assert (storage / "consent.json").stat().st_ino == before.st_ino


def test_trust_answers_round_trip_and_can_be_forgotten(storage: Path) -> None:
    store = opened(storage)
    store.set_trust(SERVER, True)
    store.set_trust(OTHER, False)

    reopened = opened(storage)
    assert [(t.server_id, t.trusted) for t in reopened.trust_records()] == [("web", False), ("files", True)]

    reopened.set_trust(SERVER, None)
    assert opened(storage).trust_record(SERVER) is None


def test_removing_a_decision_from_an_empty_store_creates_nothing(storage: Path) -> None:
    assert not opened(storage).set_root(SERVER, PROJECT, None)
    assert not storage.exists()


def test_a_relative_path_is_refused(storage: Path) -> None:
    with pytest.raises(ValueError, match="absolute"):
        opened(storage).set_root(SERVER, "proj", "allow")


@posix_only
@pytest.mark.requirement("B5")
def test_the_store_folder_is_created_0700_and_the_file_0600(storage: Path) -> None:
    opened(storage).set_root(SERVER, PROJECT, "allow")

    assert stat.S_IMODE(storage.stat().st_mode) == 0o700
    assert stat.S_IMODE((storage / "consent.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((storage / "consent.lock").stat().st_mode) & 0o077 == 0


@pytest.mark.requirement("B4")
def test_each_save_keeps_the_previous_file_as_the_backup(storage: Path) -> None:
    store = opened(storage)
    store.set_root(SERVER, PROJECT, "allow")
    first = (storage / "consent.json").read_bytes()

    store.set_root(SERVER, "/home/u/second", "allow")

    assert store.backup_path.read_bytes() == first
    assert not list(storage.glob("*.tmp-*"))


@posix_only
@pytest.mark.requirement("B5")
def test_a_file_readable_by_others_is_tightened_to_0600_on_the_next_write(storage: Path) -> None:
    path = write_file(storage, valid_file((SERVER, PROJECT, "allow")))
    path.chmod(0o644)
    store = opened(storage)
    assert store.root(SERVER, PROJECT) is not None

    store.set_root(SERVER, "/home/u/second", "allow")

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.backup_path.stat().st_mode) == 0o600


@pytest.mark.requirement("G1")
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


@pytest.mark.requirement("B3")
def test_a_write_keeps_decisions_another_process_saved_since_this_one_read(storage: Path) -> None:
    mine, theirs = opened(storage), opened(storage)
    theirs.set_root(OTHER, PROJECT, "allow")

    mine.set_root(SERVER, PROJECT, "deny")

    assert {(r.server_id, r.decision) for r in opened(storage).roots()} == {("web", "allow"), ("files", "deny")}


CORRUPT_FILES = {
    "truncated": valid_file((SERVER, PROJECT, "allow"))[:-20],
    "garbage": b"\x00\x17not json at all\xff",
    "empty": b"",
    "wrong-types": json.dumps(
        {
            "version": 2,
            "roots": [
                {
                    "source": "settings",
                    "fingerprint": SERVER.fingerprint,
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
@pytest.mark.requirement("B1", "B2")
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


@pytest.mark.requirement("B1")
def test_a_corrupt_file_is_reported_once_and_logged(storage: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_file(storage, b"{")
    store = ConsentStore(storage)

    with caplog.at_level(logging.ERROR), pytest.raises(ConsentStoreError):
        store.load()
    store.load()
    store.reload()

    assert len([r for r in caplog.records if "consent.json" in r.getMessage()]) == 1
    assert store.problem is not None and not store.blocked


@pytest.mark.requirement("B1")
def test_the_next_decision_after_a_corrupt_file_starts_a_fresh_file(storage: Path) -> None:
    write_file(storage, b"{broken")
    store = ConsentStore(storage)
    with pytest.raises(ConsentStoreError):
        store.load()

    store.set_root(SERVER, "/home/u/new", "allow")

    assert [r.path for r in opened(storage).roots()] == ["/home/u/new"]
    assert corrupt_copies(storage)[0].read_bytes() == b"{broken"
    assert store.problem is None


@pytest.mark.requirement("B1")
def test_the_corrupt_file_message_points_to_a_valid_backup(storage: Path) -> None:
    store = opened(storage)
    store.set_root(SERVER, PROJECT, "allow")
    store.set_root(SERVER, "/home/u/second", "allow")
    store.file_path.write_bytes(b'{"version": 1, "roo')

    with pytest.raises(ConsentStoreError, match=r"consent\.json\.bak") as caught:
        ConsentStore(storage).load()
    assert "restore" in str(caught.value)


@pytest.mark.requirement("B1")
def test_a_second_corrupt_file_in_the_same_second_does_not_overwrite_the_first(storage: Path) -> None:
    for content in (b"first", b"second"):
        write_file(storage, content)
        with pytest.raises(ConsentStoreError):
            ConsentStore(storage).load()

    assert sorted(p.read_bytes() for p in corrupt_copies(storage)) == [b"first", b"second"]


@pytest.mark.requirement("B2")
def test_a_file_from_a_newer_version_is_refused_and_left_untouched(storage: Path) -> None:
    content = json.dumps({"version": 99, "roots": [{"anything": "new"}], "grants": {}}).encode()
    path = write_file(storage, content)
    store = ConsentStore(storage)

    with pytest.raises(ConsentStoreError) as caught:
        store.load()
    assert caught.value.kind is StoreProblem.NEWER_VERSION
    assert "version 99" in str(caught.value) and "understands version 3" in str(caught.value)
    assert str(path) in str(caught.value)
    assert store.blocked and store.roots() == ()

    with pytest.raises(ConsentStoreError, match="newer host_bridge"):
        store.set_root(SERVER, PROJECT, "allow")
    with pytest.raises(ConsentStoreError, match="newer host_bridge"):
        store.set_trust(SERVER, True)

    assert path.read_bytes() == content
    assert corrupt_copies(storage) == []
    assert not store.backup_path.exists()


@pytest.mark.requirement("B2")
def test_a_newer_file_replaced_by_a_valid_one_is_used_after_reload(storage: Path) -> None:
    path = write_file(storage, b'{"version": 4}')
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
@pytest.mark.requirement("B5")
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
@pytest.mark.requirement("B5")
def test_a_consent_file_writable_by_others_is_refused(storage: Path, mode: int) -> None:
    path = write_file(storage, valid_file((SERVER, PROJECT, "allow")))
    path.chmod(mode)

    assert_refused(ConsentStore(storage), match=f"writable by other users.*chmod 600 {path}")
    assert stat.S_IMODE(path.stat().st_mode) == mode


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
@pytest.mark.requirement("B5")
def test_a_consent_file_owned_by_another_user_is_refused(storage: Path) -> None:
    path = write_file(storage, valid_file((SERVER, PROJECT, "allow")))
    os.chown(path, 65534, 65534)

    assert_refused(ConsentStore(storage), match="owned by uid 65534")


@posix_only
@pytest.mark.requirement("B5")
def test_a_consent_file_that_is_a_named_pipe_is_refused_without_hanging(storage: Path) -> None:
    storage.mkdir(parents=True, mode=0o700)
    os.mkfifo(storage / "consent.json", 0o600)

    assert_refused(ConsentStore(storage), match="named pipe")


@posix_only
@pytest.mark.requirement("B5")
def test_a_lock_file_that_is_a_symlink_is_refused(storage: Path, tmp_path: Path) -> None:
    write_file(storage, valid_file((SERVER, PROJECT, "allow")))
    (storage / "consent.lock").symlink_to(tmp_path / "victim")

    assert_refused(ConsentStore(storage), match="consent.lock is a symbolic link")
    assert not (tmp_path / "victim").exists()


@posix_only
@pytest.mark.requirement("B5")
def test_a_store_folder_writable_by_others_is_refused(storage: Path) -> None:
    write_file(storage, valid_file((SERVER, PROJECT, "allow")))
    storage.chmod(0o777)

    assert_refused(ConsentStore(storage), match="chmod 700")


@posix_only
@pytest.mark.requirement("B5")
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


def v1_file(roots: list[tuple[str, str, str, str]], trust: list[tuple[str, bool, str]] = ()) -> bytes:  # type: ignore[assignment]
    """A consent file as host_bridge 0.1 wrote it: records keyed by fingerprint, the server id only a label."""
    return json.dumps(
        {
            "version": 1,
            "roots": [
                {"server": fp, "path": p, "decision": d, "serverId": sid, "updated": "2025-01-01T00:00:00Z"}
                for fp, p, d, sid in roots
            ],
            "trust": [
                {"server": fp, "trusted": t, "serverId": sid, "updated": "2025-01-01T00:00:00Z"} for fp, t, sid in trust
            ],
        }
    ).encode()


@pytest.mark.requirement("G4")
def test_a_version_1_decision_binds_to_the_first_server_with_its_id_and_launch_config_and_no_other(
    storage: Path,
) -> None:
    write_file(
        storage, v1_file([(SERVER.fingerprint, PROJECT, "allow", "files")], [(SERVER.fingerprint, True, "files")])
    )
    store = opened(storage)
    from_repo = ServerIdentity(source="/repo/.mcp.json", server_id="files", fingerprint=SERVER.fingerprint)

    assert store.root(SERVER, PROJECT) is None, "an unbound record answers for nobody"
    assert store.claimable(SERVER) and store.claimable(from_repo)
    assert store.claim(SERVER)

    assert store.root(SERVER, PROJECT) is not None
    assert store.trust_record(SERVER) is not None
    reopened = opened(storage)
    assert not reopened.claimable(from_repo)
    assert reopened.root(from_repo, PROJECT) is None and reopened.trust_record(from_repo) is None
    assert json.loads((storage / "consent.json").read_text())["version"] == 3


@pytest.mark.requirement("G4")
def test_a_version_1_decision_shared_by_several_server_ids_is_dropped_and_asked_again(
    storage: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Version 1 keyed by fingerprint alone: whichever server answered last decided for both; keep neither."""
    shared = SERVER.fingerprint
    write_file(
        storage,
        v1_file(
            [
                (shared, PROJECT, "allow", "b"),
                (shared, "/home/u/x", "deny", "a"),
                (OTHER.fingerprint, PROJECT, "deny", "web"),
            ]
        ),
    )
    a = ServerIdentity(source="settings", server_id="a", fingerprint=shared)
    b = ServerIdentity(source="settings", server_id="b", fingerprint=shared)

    with caplog.at_level(logging.WARNING):
        store = opened(storage)

    assert not store.claimable(a) and not store.claimable(b)
    assert store.claimable(OTHER)
    assert "2 decision(s)" in caplog.text and "asked again" in caplog.text


@pytest.mark.requirement("G4")
def test_a_version_1_record_without_a_server_id_is_dropped(storage: Path) -> None:
    write_file(storage, v1_file([(SERVER.fingerprint, PROJECT, "allow", "")]))

    store = opened(storage)

    assert store.roots() == ()
    assert not store.claimable(SERVER.model_copy(update={"server_id": ""}))


def test_claiming_keeps_a_decision_the_identity_already_has(storage: Path) -> None:
    write_file(storage, v1_file([(SERVER.fingerprint, PROJECT, "allow", "files")]))
    store = opened(storage)
    store.set_root(SERVER, PROJECT, "deny")

    store.claim(SERVER)

    record = opened(storage).root(SERVER, PROJECT)
    assert record is not None and record.decision == "deny"
    assert len(opened(storage).roots()) == 1


def test_a_version_2_file_is_read_as_it_was_and_rewritten_as_version_3_with_read_only_sharing(storage: Path) -> None:
    old = json.loads(valid_file((SERVER, PROJECT, "allow")))
    old["version"] = 2
    write_file(storage, json.dumps(old).encode())
    store = opened(storage)
    assert [r.decision for r in store.roots()] == ["allow"]

    store.set_root(SERVER, PROJECT, "allowReadOnly")

    data = json.loads((storage / "consent.json").read_text())
    assert data["version"] == 3
    assert [r["decision"] for r in data["roots"]] == ["allowReadOnly"]
    assert [r.decision for r in opened(storage).roots()] == ["allowReadOnly"]


def test_a_version_2_file_cannot_claim_a_read_only_share_it_did_not_know() -> None:
    raw = json.loads(valid_file((SERVER, PROJECT, "allowReadOnly")))
    raw["version"] = 2
    with pytest.raises(InvalidFile):
        parse(json.dumps(raw).encode())
