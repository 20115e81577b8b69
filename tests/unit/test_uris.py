"""Strict file URIs (docs/security.md A1–A7, A11, A12 as path logic, A14)."""

from __future__ import annotations

import os
import string
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from host_bridge.uris import (
    UriError,
    UriRejection,
    canonical_uri,
    is_within,
    parse_file_uri,
    path_to_uri,
)


def rejection(uri: str, *, windows: bool = False) -> UriRejection:
    with pytest.raises(UriError) as caught:
        parse_file_uri(uri, windows=windows)
    assert caught.value.uri == uri
    assert uri in str(caught.value) or repr(uri) in str(caught.value)
    return caught.value.reason


@pytest.mark.parametrize(
    "uri",
    [
        "file:///home/u/proj/../secret",
        "file:///home/u/proj/..",
        "file:///home/u/./proj",
        "file:///%2e%2e/etc",
        "file:///home/%2E%2E/etc",
        "file:///home/u/.%2e/x",
    ],
)
@pytest.mark.requirement("A1", "A2")
def test_a_dot_or_dot_dot_segment_is_refused_as_traversal(uri: str) -> None:
    assert rejection(uri) is UriRejection.TRAVERSAL


@pytest.mark.parametrize("uri", ["file:///a/..%2F..%2Fetc", "file:///a%2fb", "file:///a/%5C..%5Cb", "file:///a%5cb"])
@pytest.mark.requirement("A2")
def test_an_encoded_separator_is_refused_before_decoding(uri: str) -> None:
    assert rejection(uri) is UriRejection.ENCODED_SEPARATOR


@pytest.mark.parametrize(
    "uri", ["vscode-remote://ssh-remote+h/home/u", "untitled:Untitled-1", "http://example.com/x", "/home/u", "C:/x"]
)
@pytest.mark.requirement("A3")
def test_a_non_file_scheme_is_refused_and_named(uri: str) -> None:
    with pytest.raises(UriError, match="only local folders") as caught:
        parse_file_uri(uri, windows=False)
    assert caught.value.reason is UriRejection.NOT_FILE_SCHEME


@pytest.mark.parametrize("uri", ["FILE:///srv/x", "File:///srv/x", "file://localhost/srv/x", "file://LOCALHOST/srv/x"])
@pytest.mark.requirement("A3", "A4")
def test_the_file_scheme_and_localhost_are_accepted_in_any_case(uri: str) -> None:
    assert parse_file_uri(uri, windows=False) == "/srv/x"


@pytest.mark.parametrize("uri", ["file://evil.host/share", "file://10.0.0.1/x", "file://user@host/x"])
@pytest.mark.requirement("A4")
def test_a_remote_host_is_refused(uri: str) -> None:
    assert rejection(uri) is UriRejection.REMOTE_HOST


@pytest.mark.requirement("A4", "A12")
def test_a_remote_host_is_refused_on_windows_too() -> None:
    assert rejection("file://server/share/x", windows=True) is UriRejection.REMOTE_HOST


@pytest.mark.parametrize("uri", ["file:///a%00b", "file:///a%0Ab", "file:///a%0d", "file:///a%7F", "file:///a\nb"])
@pytest.mark.requirement("A5")
def test_a_control_character_is_refused(uri: str) -> None:
    assert rejection(uri) is UriRejection.CONTROL_CHARACTER


@pytest.mark.parametrize("uri", ["file:///a%FF", "file:///caf%C3", "file:///%C0%AF", "file:///%ED%A0%80"])
@pytest.mark.requirement("A5")
def test_invalid_utf8_escapes_are_refused_not_replaced(uri: str) -> None:
    assert rejection(uri) is UriRejection.INVALID_UTF8


@pytest.mark.parametrize("uri", ["file:///a%", "file:///a%4", "file:///a%zz"])
@pytest.mark.requirement("A5")
def test_a_broken_percent_escape_is_refused(uri: str) -> None:
    assert rejection(uri) is UriRejection.MALFORMED_ESCAPE


@pytest.mark.requirement("A6")
def test_a_query_is_refused_not_dropped() -> None:
    assert rejection("file:///p?x") is UriRejection.QUERY


@pytest.mark.requirement("A6")
def test_a_fragment_is_refused_not_dropped() -> None:
    assert rejection("file:///p?x#y") is UriRejection.FRAGMENT
    assert rejection("file:///p#y") is UriRejection.FRAGMENT


@pytest.mark.requirement("A2")
def test_a_raw_backslash_is_refused() -> None:
    assert rejection("file:///a\\..\\b") is UriRejection.BACKSLASH


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        ("/home/u/my project", "file:///home/u/my%20project"),
        ("/home/u/#1 %done", "file:///home/u/%231%20%25done"),
        ("/home/u/café/日本", "file:///home/u/caf%C3%A9/%E6%97%A5%E6%9C%AC"),
        ("/home/u/a?b", "file:///home/u/a%3Fb"),
        ("/", "file:///"),
    ],
)
@pytest.mark.requirement("A14")
def test_spaces_hash_percent_and_non_ascii_round_trip_exactly(path: str, uri: str) -> None:
    assert path_to_uri(path, windows=False) == uri
    assert parse_file_uri(uri, windows=False) == path


@pytest.mark.requirement("A13", "A14")
def test_nfc_and_nfd_spellings_stay_distinct_and_exact() -> None:
    nfc, nfd = "/p/caf\u00e9", "/p/cafe\u0301"
    assert parse_file_uri(path_to_uri(nfc, windows=False), windows=False) == nfc
    assert parse_file_uri(path_to_uri(nfd, windows=False), windows=False) == nfd


def test_a_relative_path_cannot_become_a_uri() -> None:
    with pytest.raises(UriError) as caught:
        path_to_uri("proj/sub", windows=False)
    assert caught.value.reason is UriRejection.NOT_ABSOLUTE


@pytest.mark.requirement("A5")
def test_a_path_with_undecodable_bytes_cannot_become_a_uri() -> None:
    with pytest.raises(UriError) as caught:
        path_to_uri(os.fsdecode(b"/p/\xff"), windows=False)
    assert caught.value.reason is UriRejection.INVALID_UTF8


@pytest.mark.parametrize(
    ("root", "path", "inside"),
    [
        ("/home/u/proj", "/home/u/proj", True),
        ("/home/u/proj", "/home/u/proj/src/x", True),
        ("/home/u/proj", "/home/u/proj2", False),
        ("/home/u/proj", "/home/u/proj_evil", False),
        ("/home/u/proj", "/home/u/proj.bak", False),
        ("/home/u/proj", "/home/u", False),
        ("/", "/anything", True),
    ],
)
@pytest.mark.requirement("A7")
def test_containment_compares_whole_path_components(root: str, path: str, inside: bool) -> None:
    assert is_within(path, root, windows=False) is inside


# Windows path logic (A12), checked on any platform.


@pytest.mark.parametrize("uri", ["file:///c%3A/x", "file:///C:/x", "file:///c:/x", "FILE:///C%3a/x"])
@pytest.mark.requirement("A12")
def test_windows_drive_spellings_map_to_one_path(uri: str) -> None:
    assert parse_file_uri(uri, windows=True) == "C:\\x"


@pytest.mark.parametrize(
    "uri",
    [
        "file:///C:/x/file.txt:stream",
        "file:///C:/x/CON",
        "file:///C:/x/nul.txt",
        "file:///C:/x/COM1",
        "file:///C:/x/trail.",
        "file:///C:/x/trail%20",
        "file:///C:/x/a%3Cb",
    ],
)
@pytest.mark.requirement("A12")
def test_windows_streams_device_names_and_trailing_dots_are_refused(uri: str) -> None:
    assert rejection(uri, windows=True) is UriRejection.WINDOWS_RESERVED


@pytest.mark.requirement("A12")
def test_a_windows_uri_without_a_drive_is_refused() -> None:
    assert rejection("file:///Users/x", windows=True) is UriRejection.NOT_ABSOLUTE


@pytest.mark.requirement("A7", "A12")
def test_windows_containment_ignores_case() -> None:
    assert is_within("c:\\Users\\X\\proj", "C:\\users\\x", windows=True)
    assert not is_within("C:\\Users\\x2", "C:\\Users\\x", windows=True)


@pytest.mark.requirement("A12", "A14")
def test_a_windows_path_round_trips_with_an_upper_case_drive() -> None:
    uri = path_to_uri("c:\\Users\\x y\\é", windows=True)
    assert uri == "file:///C:/Users/x%20y/%C3%A9"
    assert parse_file_uri(uri, windows=True) == "C:\\Users\\x y\\é"


# Canonical form on disk (A8, A11).


@pytest.mark.requirement("A8")
def test_a_symlinked_folder_is_canonicalised_to_its_target(tmp_path: Path) -> None:
    target = tmp_path / "real dir"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    uri, path = canonical_uri(path_to_uri(tmp_path / "link"))
    assert path == os.path.realpath(target)
    assert uri == path_to_uri(os.path.realpath(target))


@pytest.mark.requirement("A11")
def test_two_links_to_one_folder_give_one_canonical_uri(tmp_path: Path) -> None:
    target = tmp_path / "a"
    target.mkdir()
    (tmp_path / "l1").symlink_to(target)
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    assert canonical_uri(path_to_uri(tmp_path / "l1")) == canonical_uri(path_to_uri(tmp_path / "l2"))


def test_a_missing_folder_has_no_canonical_uri(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        canonical_uri(path_to_uri(tmp_path / "gone"))


# Properties.

_segment = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\\"), min_size=1, max_size=12
).filter(lambda s: s not in (".", ".."))


@given(st.lists(_segment, max_size=6))
@pytest.mark.requirement("A14")
def test_every_absolute_path_round_trips_through_its_uri(segments: list[str]) -> None:
    path = "/" + "/".join(segments)
    assert parse_file_uri(path_to_uri(path, windows=False), windows=False) == path


@given(st.text(alphabet=string.printable + "é%/", max_size=40))
@pytest.mark.requirement("A1", "A2", "A5")
def test_any_accepted_uri_decodes_to_an_absolute_path_without_traversal(tail: str) -> None:
    try:
        path = parse_file_uri("file:///" + tail, windows=False)
    except UriError:
        return
    parts = path.split("/")
    assert path.startswith("/")
    assert ".." not in parts and "." not in parts
    assert not any(c in path for c in "\x00\n\r\\")


@given(st.lists(_segment, min_size=1, max_size=4), st.lists(_segment, min_size=1, max_size=4))
@pytest.mark.requirement("A7")
def test_nothing_outside_a_root_is_judged_inside(root_parts: list[str], other_parts: list[str]) -> None:
    root = "/" + "/".join(root_parts)
    other = "/" + "/".join(other_parts)
    assume(other_parts[: len(root_parts)] != root_parts)
    assert not is_within(other, root, windows=False)
    assert is_within(root + "/" + "/".join(other_parts), root, windows=False)
