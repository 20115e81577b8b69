"""Text from MCP servers made fit to show: terminal escapes, control and bidi characters removed.

A server names its resources and writes its error messages; both reach pickers, prompts and terminals, so both pass
through here first. URIs are never changed here: they are names in the server's namespace and are sent back as
they came.
"""

from __future__ import annotations

import re

UPSTREAM_MESSAGE_CHARS = 300
"""Longest server error message shown; a longer one is cut with an ellipsis."""

_TERMINAL_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI, e.g. colours
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC, e.g. hyperlinks and window titles
    r"|\x1b[@-Z\\-_]"  # other two-character escapes
)
_LINE_BREAK = re.compile(r"[\t\n\x0b\x0c\r\x85\u2028\u2029]+")
_INVISIBLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
"""Any character one of the patterns above would touch: most labels have none and are returned as they are."""


def sanitize_label(text: str) -> str:
    """``text`` fit for a picker label: terminal escape sequences, C0/C1 controls and bidi controls removed.

    Line breaks and tabs become single spaces so words stay apart.
    """
    if not _ANY_CONTROL.search(text):
        return text
    text = _TERMINAL_SEQUENCE.sub("", text)
    text = _LINE_BREAK.sub(" ", text)
    return _INVISIBLE.sub("", text)


def sanitize_optional(text: str | None) -> str | None:
    """:func:`sanitize_label` of ``text``, or ``None``."""
    return None if text is None else sanitize_label(text)


def upstream_text(text: str) -> str:
    """A server's error message, safe and short enough to show."""
    text = sanitize_label(text)
    return text if len(text) <= UPSTREAM_MESSAGE_CHARS else text[: UPSTREAM_MESSAGE_CHARS - 1] + "…"
