"""Looking at processes from the e2e tests (Linux ``/proc``)."""

from __future__ import annotations

import os


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid``."""
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as handle:
            found.extend(int(p) for p in handle.read().split())
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except FileNotFoundError:
        return False
