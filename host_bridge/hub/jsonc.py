"""JSON with comments and trailing commas, as VS Code accepts in its settings and ``mcp.json`` files."""

from __future__ import annotations

import json
from typing import Any


class JsoncError(ValueError):
    """The text is not valid JSONC; the message gives line and column."""


def strip_jsonc(text: str) -> str:
    """Remove ``//`` and ``/* */`` comments and trailing commas outside strings.

    Removed characters become spaces (newlines are kept), so positions in error messages still match the
    original text.
    """
    out: list[str] = []
    i, n = 0, len(text)
    pending_comma: int | None = None
    while i < n:
        c = text[i]
        if c == '"':
            end = _string_end(text, i)
            out.append(text[i:end])
            i = end
            pending_comma = None
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise JsoncError(f"unterminated /* comment at {_position(text, i)}")
            out.append("".join(ch if ch == "\n" else " " for ch in text[i : end + 2]))
            i = end + 2
        else:
            if c == ",":
                pending_comma = len(out)
            elif c in "}]" and pending_comma is not None:
                out[pending_comma] = " "
                pending_comma = None
            elif not c.isspace():
                pending_comma = None
            out.append(c)
            i += 1
    return "".join(out)


def loads_jsonc(text: str) -> Any:
    """Parse JSONC text; raises :class:`JsoncError` naming line and column."""
    try:
        return json.loads(strip_jsonc(text))
    except json.JSONDecodeError as error:
        raise JsoncError(f"{error.msg} at line {error.lineno} column {error.colno}") from None


def _string_end(text: str, start: int) -> int:
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i + 1
        else:
            i += 1
    return len(text)


def _position(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return f"line {line} column {column}"
