"""Text from outside (file names, manifests, servers) made safe to show to a person."""

from __future__ import annotations

_ALSO_INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u2800\u3164\uffa0")
"""Printable by Unicode's categories yet drawn as nothing: a grapheme joiner, Hangul fillers, a blank pattern."""


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with every character that would be invisible or would change how the rest is drawn escaped.

    Control characters (``\\x1b``, newlines, tabs), format characters (bidi overrides such as U+202E,
    zero-width spaces and joiners, the BOM, tag characters), surrogates, private-use and unassigned code
    points, line and paragraph separators, spaces other than U+0020, and a few printable-but-blank characters
    (Hangul fillers …) become a literal ``\\u202e`` (``\\U000e0041`` above U+FFFF), so a person sees that
    something odd is there and where. Everything else, including non-Latin scripts, accents and emoji, is
    kept as it is. Backslashes are kept too, so the result is unchanged by a second call.

    Use it for every name, label or message built from text the user did not type: file and folder names,
    manifest metadata, anything an MCP server or a repository sends. Split multi-line text into lines first
    if its line breaks should stay line breaks.
    """
    if text.isprintable() and _ALSO_INVISIBLE.isdisjoint(text):
        return text
    return "".join(_escape(c) if not c.isprintable() or c in _ALSO_INVISIBLE else c for c in text)
