"""Plain-text tables fitted to the terminal, and the candidate table ``host-bridge roots`` prints.

Kept apart from the terminal session (standard library and URIs only), so that ``roots`` loads nothing else: the
candidate table takes detection's wire models and its plain records alike.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
from typing import Protocol, TextIO

from host_bridge.uris import UriError, parse_file_uri


def is_tty(stream: TextIO | None) -> bool:
    """Whether ``stream`` is a terminal (a closed or missing stream is not)."""
    try:
        return stream is not None and stream.isatty()
    except ValueError:
        return False


def table_width(stream: TextIO | None) -> int | None:
    """The width a table printed on ``stream`` should fit: ``COLUMNS`` when set, else the terminal's width when
    ``stream`` is a terminal, else ``None`` (piped or redirected: never cut)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if not is_tty(stream):
        return None
    assert stream is not None
    try:
        return os.get_terminal_size(stream.fileno()).columns or shutil.get_terminal_size().columns
    except (OSError, ValueError):
        return shutil.get_terminal_size().columns


_MIN_COLUMN = 8
"""A shrunk column keeps at least this many characters (or its header's)."""


def format_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    width: int | None = None,
    keep_end: Iterable[int] = (),
) -> str:
    """A plain-text table: every column but the last padded to its widest cell, two spaces apart, no trailing
    spaces.

    With ``width``, lines longer than it are fit into it: the widest column shrinks first, one character at a time,
    never below its header or 8 characters; cut cells end with "…", or start with it for the columns in
    ``keep_end`` (paths and URIs, whose end says most).
    """
    table = [list(header), *(list(row) for row in rows)]
    count = len(header)
    widths = [max(len(row[column]) for row in table) for column in range(count)]
    if width is not None:
        budget = width - 2 * (count - 1)
        floors = [min(widths[c], max(len(header[c]), _MIN_COLUMN)) for c in range(count)]
        while sum(widths) > budget:
            shrinkable = [c for c in range(count) if widths[c] > floors[c]]
            if not shrinkable:
                break
            widths[max(shrinkable, key=lambda c: widths[c])] -= 1
    ends = frozenset(keep_end)
    lines: list[str] = []
    for row in table:
        cells = [_fit(cell, widths[c], c in ends) for c, cell in enumerate(row)]
        lines.append("  ".join([*(cell.ljust(widths[c]) for c, cell in enumerate(cells[:-1])), cells[-1]]).rstrip())
    return "\n".join(lines)


def _fit(cell: str, width: int, keep_end: bool) -> str:
    if len(cell) <= width:
        return cell
    if width <= 1:
        return "…"[:width]
    return "…" + cell[len(cell) - width + 1 :] if keep_end else cell[: width - 1] + "…"


class _Candidate(Protocol):
    @property
    def uri(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def kinds(self) -> Sequence[str]: ...
    @property
    def markers(self) -> Sequence[str]: ...
    @property
    def parent(self) -> str | None: ...


class _Detection(Protocol):
    @property
    def candidates(self) -> Sequence[_Candidate]: ...


def candidate_table(result: _Detection, *, width: int | None = None) -> str:
    """The candidates: name, kinds, markers and path, nested ones indented."""
    if not result.candidates:
        return "no candidate folders found"
    depth: dict[str, int] = {}
    rows: list[tuple[str, str, str, str]] = []
    for candidate in result.candidates:
        level = depth.get(candidate.parent, -1) + 1 if candidate.parent else 0
        depth[candidate.uri] = level
        try:
            where = parse_file_uri(candidate.uri)
        except UriError:
            where = candidate.uri
        rows.append(("  " * level + candidate.name, ",".join(candidate.kinds), " ".join(candidate.markers), where))
    return format_table(("NAME", "KINDS", "MARKERS", "PATH"), rows, width=width, keep_end=(3,))
