"""Record files of the fixture servers (``--record PATH``): one JSON object a line, flushed and fsynced, so a test
can poll them (tests/servers/README.md, "Waiting for a fixture")."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

WAIT = 30.0
"""Seconds a fixture may take to write what a test waits for."""
POLL = 0.02
"""Seconds between two reads of a record file."""

Entry = dict[str, Any]


def records(path: Path) -> list[Entry]:
    """The lines recorded so far (none while the file does not exist)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def recorded(path: Path, key: str) -> list[Any]:
    """The values of ``key`` in the recorded lines, in order."""
    return [entry[key] for entry in records(path) if key in entry]


def recorded_roots(path: Path) -> list[list[str]]:
    """Every roots answer a ``roots_recorder.py`` got, as lists of URIs, oldest first."""
    return [[root["uri"] for root in roots] for roots in recorded(path, "roots")]


async def until_recorded(
    path: Path, condition: Callable[[list[list[str]]], bool], timeout: float = WAIT
) -> list[list[str]]:
    """Poll ``path`` until ``condition`` holds for its roots answers; return them."""
    with anyio.fail_after(timeout):
        while not condition(answers := recorded_roots(path)):
            await anyio.sleep(POLL)
    return answers


async def record_line(path: Path, matches: Callable[[Entry], bool], timeout: float = WAIT) -> Entry:
    """The first recorded line that ``matches``, polling until there is one."""
    with anyio.fail_after(timeout):
        while not (found := [entry for entry in records(path) if matches(entry)]):
            await anyio.sleep(POLL)
    return found[0]
