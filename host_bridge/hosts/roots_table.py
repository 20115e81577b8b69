"""The table ``host-bridge roots`` prints, kept apart from the terminal session so that printing it loads only
detection's models (the same layout as ``host_bridge.hosts.terminal.output.candidate_table``)."""

from __future__ import annotations

from collections.abc import Sequence

from host_bridge.uris import UriError, parse_file_uri
from host_bridge.workspace.models import Detection


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table: every column but the last padded to its widest cell, two spaces apart, no trailing
    spaces."""
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header) - 1)]
    return "\n".join(
        "  ".join([*(cell.ljust(widths[c]) for c, cell in enumerate(row[:-1])), row[-1]]).rstrip()
        for row in [header, *rows]
    )


def candidate_table(result: Detection) -> str:
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
    return format_table(("NAME", "KINDS", "MARKERS", "PATH"), rows)
