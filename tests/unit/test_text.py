"""Text from outside shown so that nothing in it is invisible (docs/security.md F7)."""

from __future__ import annotations

import pytest

from host_bridge.text import visible

pytestmark = pytest.mark.requirement("F7")


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("safe\u202eexe.txt", "safe\\u202eexe.txt"),
        ("a\u200bb", "a\\u200bb"),
        ("x\x1b[31m", "x\\u001b[31m"),
        ("\ufeffname", "\\ufeffname"),
        ("left\u2066isolate\u2069", "left\\u2066isolate\\u2069"),
        ("two\nlines\ttab", "two\\u000alines\\u0009tab"),
        ("no\u00a0break", "no\\u00a0break"),
        ("filler\u3164", "filler\\u3164"),
        ("lone\ud800surrogate", "lone\\ud800surrogate"),
    ],
)
def test_bidi_zero_width_control_and_blank_characters_are_shown_as_escapes(raw: str, shown: str) -> None:
    assert visible(raw) == shown


def test_characters_above_the_basic_plane_are_escaped_with_eight_hex_digits() -> None:
    assert visible("tag\U000e0041") == "tag\\U000e0041"


@pytest.mark.parametrize("name", ["acme-api", "@acme/web", "café", "日本語のプロジェクト", "emoji 🎉", "C:\\Users\\x"])
def test_ordinary_names_in_any_script_are_kept_as_they_are(name: str) -> None:
    assert visible(name) == name


def test_escaping_what_was_already_escaped_changes_nothing() -> None:
    once = visible("safe\u202eexe\u200b\x1b")
    assert visible(once) == once
    assert once.isprintable()
