"""Sanitizing of labels that servers send for the pickers (C19)."""

from __future__ import annotations

import pytest

from host_bridge.hub.resources.labels import sanitize_label

pytestmark = pytest.mark.requirement("C19")


def test_labels_lose_ansi_sequences_and_control_characters() -> None:
    assert sanitize_label("\x1b[31mred\x1b[0m alert") == "red alert"
    assert sanitize_label("\x1b]8;;https://evil\x07link\x1b]8;;\x07") == "link"
    assert sanitize_label("bell\x07 nul\x00 del\x7f c1\x85\x9b31m") == "bell nul del c1 "
    assert sanitize_label("two\nlines\tand\r\ntab") == "two lines and tab"


def test_labels_lose_bidi_controls() -> None:
    assert sanitize_label("invoice\u202egpj.exe") == "invoicegpj.exe"
    assert sanitize_label("\u2066a\u2069\u200eb\u200f\u061cc\u202a\u202d") == "abc"


def test_an_unbroken_unicode_label_is_kept() -> None:
    assert sanitize_label("Café — 日本語 🙂") == "Café — 日本語 🙂"
