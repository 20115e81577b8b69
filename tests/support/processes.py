"""Looking at processes from the tests (Linux ``/proc``): children, liveness, memory, leftovers."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterable
from pathlib import Path

REAPER_SCRIPT = "_reaper.py"
"""How the sidecar's reaper (host_bridge/hub/_reaper.py) shows in its command line."""


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid``."""
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as handle:
            found.extend(int(p) for p in handle.read().split())
    return found


def command_line(pid: int) -> list[str]:
    """The arguments ``pid`` runs with (empty once it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return [part.decode(errors="replace") for part in handle.read().split(b"\0") if part]
    except (FileNotFoundError, ProcessLookupError):
        return []


def is_reaper(pid: int) -> bool:
    """Whether ``pid`` is a sidecar's reaper process."""
    return any(part.endswith(REAPER_SCRIPT) for part in command_line(pid))


def servers_of(pid: int) -> list[int]:
    """Children of the sidecar ``pid`` that are MCP servers (its reaper left out)."""
    return [child for child in children_of(pid) if not is_reaper(child)]


def reapers_of(pid: int) -> list[int]:
    """The sidecar ``pid``'s reaper, if it started one."""
    return [child for child in children_of(pid) if is_reaper(child)]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except FileNotFoundError:
        return False


async def until_gone(pids: Iterable[int], timeout: float) -> list[int]:
    """Poll ``/proc`` until none of ``pids`` runs or ``timeout`` seconds passed; those still running."""
    pending = list(pids)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (pending := [pid for pid in pending if alive(pid)]) and loop.time() < deadline:
        await asyncio.sleep(0.02)
    return pending


def status_kib(pid: int | str, field: str) -> int:
    """A memory line (``VmRSS``, ``VmHWM`` …) of ``/proc/PID/status`` (``pid`` may be ``"self"``), in KiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def reset_peak(pid: int | str) -> int:
    """Reset ``pid``'s resident high-water mark (``VmHWM``) to its current size; that size in KiB."""
    with open(f"/proc/{pid}/clear_refs", "w") as clear:
        clear.write("5")
    return status_kib(pid, "VmRSS")


def processes_inside(root: Path) -> list[str]:
    """Processes other than this one whose working directory is at or below ``root``, as ``"pid: command"``."""
    found: list[str] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cwd == root or root in cwd.parents:
            found.append(f"{entry.name}: {command}")
    return found


def left_behind(root: Path, within: float = 1.0) -> list[str]:
    """:func:`processes_inside` ``root`` once processes that were just sent SIGKILL had ``within`` seconds to end.

    The kernel tears a killed process down after the signal is sent; on a busy machine its ``/proc`` entry can outlive
    the call that killed it by a few milliseconds. Whatever still runs after ``within`` seconds was left behind.
    """
    deadline = time.monotonic() + within
    while (found := processes_inside(root)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return found
