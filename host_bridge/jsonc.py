"""JSON with comments and trailing commas, as VS Code accepts in its settings and ``mcp.json`` files.

The one JSON(C) reader for files a repository controls (``.vscode/mcp.json``, ``.mcp.json``, ``package.json``,
``deno.jsonc`` …): nesting is checked in linear time before parsing, so a file nested 100 000 deep is a clear error
instead of a ``RecursionError`` that takes the caller down.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_NESTING = 64
"""How deeply objects and arrays may nest; no hand-written config or manifest comes close."""
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.S)


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


def loads_json(text: str, *, max_depth: int = MAX_NESTING) -> Any:
    """Parse JSON text nested at most ``max_depth`` deep; raises :class:`JsoncError` naming line and column."""
    if not nesting_within(text, _JSON_TOKEN, max_depth):
        raise JsoncError(f"objects and arrays are nested more than {max_depth} levels deep")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise JsoncError(f"{error.msg} at line {error.lineno} column {error.colno}") from None
    except RecursionError:
        raise JsoncError(f"objects and arrays are nested more than {max_depth} levels deep") from None


def loads_jsonc(text: str, *, max_depth: int = MAX_NESTING) -> Any:
    """Parse JSONC text (comments, trailing commas) like :func:`loads_json`."""
    return loads_json(strip_jsonc(text), max_depth=max_depth)


def nesting_within(text: str, token: re.Pattern[str], limit: int = MAX_NESTING) -> bool:
    """Whether the brackets of ``text`` outside strings (and comments) nest at most ``limit`` deep.

    ``token`` matches a string, a comment or one bracket; strings and comments are skipped. It runs in linear
    time, so a parser can be spared input that would exhaust its recursion (``[`` × 100 000).
    """
    if text.count("[") + text.count("{") <= limit:
        return True
    depth = 0
    for match in token.finditer(text):
        bracket = match.group()
        if bracket in ("[", "{"):
            depth += 1
            if depth > limit:
                return False
        elif bracket in ("]", "}"):
            depth = max(depth - 1, 0)
    return True


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
