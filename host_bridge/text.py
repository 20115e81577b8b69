"""Text shown to people: invisible characters made visible, so a name cannot hide what it is."""

from __future__ import annotations

import unicodedata

_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Control, format (bidi controls, zero-width characters), surrogate, private-use, unassigned, line and paragraph
separators."""


def visible(text: str) -> str:
    """``text`` with every invisible or control character written as an escape (``\\u202e``).

    Bidi overrides, zero-width characters, terminal escapes and line breaks cannot reorder, hide or split what a
    prompt says; ordinary letters of every script are kept as they are.
    """
    if text.isprintable() and not any(unicodedata.category(c) in _INVISIBLE_CATEGORIES for c in text):
        return text
    out: list[str] = []
    for char in text:
        if unicodedata.category(char) in _INVISIBLE_CATEGORIES:
            code = ord(char)
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(char)
    return "".join(out)
