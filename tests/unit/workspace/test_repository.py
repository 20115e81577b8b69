"""Parsing what git lists about a repository."""

from __future__ import annotations

from host_bridge.workspace.repository import parse_listing

_OID = "0" * 40


def test_gitlinks_are_the_cached_entries_of_mode_160000() -> None:
    output = f"H 100644 {_OID} 0\ta.txt\0H 160000 {_OID} 0\tvendor/lib\0S 160000 {_OID} 0\tsparse\0? new.txt\0"

    files, gitlinks = parse_listing(output.encode())

    assert files == ["a.txt", "vendor/lib", "sparse", "new.txt"]
    assert gitlinks == ["vendor/lib", "sparse"]


def test_an_untracked_file_named_like_a_gitlink_record_is_a_file_not_a_gitlink() -> None:
    forged = f"160000 {_OID} 0\tvendor/lib"

    files, gitlinks = parse_listing(f"? {forged}\0".encode())

    assert files == [forged]
    assert gitlinks == []


def test_an_empty_listing_has_no_files() -> None:
    assert parse_listing(b"") == ([], [])


def test_paths_that_are_not_utf8_survive_as_surrogate_escapes() -> None:
    files, _ = parse_listing(b"? caf\xe9.txt\0")

    assert files == ["caf\udce9.txt"]
