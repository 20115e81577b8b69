"""Writing one LSP message as a frame in pieces, so that a big result is never copied whole.

``json.dumps`` of a 16 MiB read result holds the result, an escaped copy of its blob and the joined body at once,
and encoding the body to bytes adds a fourth copy. :func:`frame_pieces` instead encodes the message with every long
string left out, then writes each long string from the original in escaped slices; the editor receives exactly the
bytes ``json.dumps(...).encode()`` would have produced (non-ASCII escaped, so characters and bytes agree).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from json.encoder import encode_basestring_ascii as _escape
from typing import Any, cast

LONG_STRING = 2**16
"""Strings longer than this many characters are written in slices from the original."""
PIECE_CHARS = 2**20
"""Characters of a long string escaped and written at a time."""


class _Long:
    """Stands in for a long string while the rest of the message is encoded."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def frame_pieces(message: Any, default: Callable[[Any], Any], content_type: str) -> Iterator[bytes]:
    """The LSP frame of ``message`` (header, then the JSON body) as bytes pieces.

    ``default`` turns objects JSON cannot encode into ones it can, as for ``json.dumps``; it is applied to a
    ``message`` that is not a dict or list before anything else, so long strings inside it are found too.
    """
    if not isinstance(message, dict | list):
        message = default(message)
    longs: list[str] = []
    # Only read results (``result.contents``) hold strings that long; every other message skips the walk.
    plain = _swap_long(message, longs) if _has_contents(message) else cast(Any, message)
    if not longs:
        body = json.dumps(plain, default=default).encode("ascii")
        yield _header(len(body), content_type)
        yield body
        return
    token = os.urandom(8).hex()

    def stand_in(value: Any) -> Any:
        return f"\0{token}:{value.index}\0" if isinstance(value, _Long) else default(value)

    # Each stand-in string is encoded as "\u0000<token>:<index>\u0000", with quotes; split the body around them.
    parts = json.dumps(plain, default=stand_in).split(f'"\\u0000{token}:')
    texts = [parts[0]]
    indices: list[int] = []
    for part in parts[1:]:
        index, _, rest = part.partition('\\u0000"')
        indices.append(int(index))
        texts.append(rest)
    simple = [_is_plain(text) for text in longs]
    length = sum(map(len, texts)) + sum(_escaped_length(longs[i], simple[i]) for i in indices)
    yield _header(length, content_type)
    for text, index in zip(texts, indices, strict=False):
        yield text.encode("ascii")
        yield from _escaped_pieces(longs[index], simple[index])
    yield texts[-1].encode("ascii")


def _has_contents(message: Any) -> bool:
    result = cast(dict[str, Any], message).get("result") if type(cast(object, message)) is dict else None
    return type(cast(object, result)) is dict and "contents" in cast(dict[str, Any], result)


def _header(length: int, content_type: str) -> bytes:
    return f"Content-Length: {length}\r\nContent-Type: {content_type}\r\n\r\n".encode("ascii")


def _swap_long(value: Any, longs: list[str]) -> Any:
    """``value`` with every long string replaced by a :class:`_Long`; containers are copied only where needed."""
    kind = type(cast(object, value))
    if kind is str:
        if len(value) <= LONG_STRING:
            return value
        longs.append(value)
        return _Long(len(longs) - 1)
    if kind is dict:
        mapping = cast(dict[Any, Any], value)
        copy: dict[Any, Any] | None = None
        for key, item in mapping.items():
            if _may_hold_long(item) and (swapped := _swap_long(item, longs)) is not item:
                copy = copy if copy is not None else dict(mapping)
                copy[key] = swapped
        return mapping if copy is None else copy
    if kind is list or kind is tuple:
        items = cast(list[Any] | tuple[Any, ...], value)
        copied: list[Any] | None = None
        for index, item in enumerate(items):
            if _may_hold_long(item) and (swapped := _swap_long(item, longs)) is not item:
                copied = copied if copied is not None else list(items)
                copied[index] = swapped
        return items if copied is None else copied
    return value


def _may_hold_long(value: Any) -> bool:
    kind = type(cast(object, value))
    return len(value) > LONG_STRING if kind is str else kind is dict or kind is list or kind is tuple


def _is_plain(text: str) -> bool:
    """``text`` is its own JSON escape: printable ASCII without quotes or backslashes (base64, for one)."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def _escaped_length(text: str, plain: bool) -> int:
    """Length of ``text``'s JSON escape, quotes included; a non-plain text is escaped once here to be measured."""
    if plain:
        return len(text) + 2
    return 2 + sum(len(_escape(text[start : start + PIECE_CHARS])) - 2 for start in range(0, len(text), PIECE_CHARS))


def _escaped_pieces(text: str, plain: bool) -> Iterator[bytes]:
    yield b'"'
    for start in range(0, len(text), PIECE_CHARS):
        piece = text[start : start + PIECE_CHARS]
        yield piece.encode("ascii") if plain else _escape(piece)[1:-1].encode("ascii")
    yield b'"'
