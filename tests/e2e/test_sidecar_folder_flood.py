"""A flood of folder changes over a huge workspace (docs/security.md E7, issue 26): the real sidecar, driven over stdio,
works through 2 000 ``workspace/didChangeWorkspaceFolders`` about as fast as through as many notifications it has
nothing to do for, then keeps answering ``hostBridge/status`` as fast as before while it applies them; it ends with the
folders of the last change (in the gateway's registry entry ``attach`` finds it by, and in its candidates) and its
memory stays within a bound."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from support.folders import folder_uri
from support.sidecar import WAIT, BridgeClient, options

from host_bridge.gateway import registry
from host_bridge.workspace.records import DEFAULTS

FOLDERS = 10_000
"""Workspace folders the editor opens with."""
CHANGES = 2_000
"""Notifications in a flood, sent back to back."""
FLOOD_SLOWER = 10
"""How many times as long as a flood of notifications without work the flood of folder changes may take to be worked
through (re-registering the gateway on each change, ≈ 0.2 s with this many folders, takes minutes)."""
STATUS_SLOWER = 20
"""How many times the baseline status a status may take while the sidecar applies the changes."""
AT_LEAST = 1.0
"""Seconds either may always take, however fast its baseline was (a scheduling hiccup on a loaded machine must not
fail the test)."""
MEMORY_GROWTH = 2
"""How many times its resident memory before the flood the sidecar's peak may reach."""


def make_folders(root: Path, count: int, prefix: str) -> list[Path]:
    """``count`` empty folders below ``root`` (``mkdir`` only: thousands take a fraction of a second)."""
    root.mkdir(parents=True, exist_ok=True)
    folders = [root / f"{prefix}{n:05}" for n in range(count)]
    for folder in folders:
        os.mkdir(folder)
    return folders


def workspace_folder(folder: Path) -> types.WorkspaceFolder:
    return types.WorkspaceFolder(uri=folder_uri(folder), name=folder.name)


def memory_kib(pid: int, field: str) -> int:
    """A ``VmRSS``/``VmHWM`` line of ``/proc/<pid>/status``, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


async def timed_status(client: BridgeClient, within: float) -> tuple[float, dict[str, Any]]:
    """``hostBridge/status``, failing the test past ``within`` seconds; how long it took, and the answer."""
    started = time.perf_counter()
    async with asyncio.timeout(within):
        status = await client.request("hostBridge/status")
    return time.perf_counter() - started, status


def registered_folders(storage: Path, pid: int) -> tuple[str, ...] | None:
    """The folders of the sidecar's gateway entry (``None`` while there is none)."""
    entry = registry.gateway_dir(storage) / f"{pid}.json"
    try:
        return registry.SidecarEntry.model_validate_json(entry.read_bytes()).folders
    except (OSError, ValueError):
        return None


@pytest.mark.asyncio
@pytest.mark.requirement("E7")
async def test_two_thousand_folder_changes_over_ten_thousand_folders_leave_status_answering_as_before(
    client: BridgeClient, tmp_path: Path
) -> None:
    opened = make_folders(tmp_path / "ws", FOLDERS, "f")
    added = make_folders(tmp_path / "ws", CHANGES, "g")
    toggled = make_folders(tmp_path / "ws", 1, "t")[0]
    settings = options(tmp_path)
    storage = Path(settings["storageDir"])
    await client.start_session(opened, settings)
    server = client._server  # pyright: ignore[reportPrivateUsage]
    assert server is not None
    await client.status()
    await client.until(lambda: registered_folders(storage, server.pid) is not None)
    baseline = min([(await timed_status(client, WAIT))[0] for _ in range(5)])
    for _ in range(CHANGES):  # nothing to do for these: what the flood below costs the transport alone
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={}))
    quiet_flood, _ = await timed_status(client, WAIT)
    resident_before = memory_kib(server.pid, "VmRSS")

    # Change n closes opened[n] and opens added[n]; `toggled` is opened by every even change and closed by every odd
    # one, the last one included.
    for n in range(CHANGES):
        odd = n % 2 == 1
        client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[workspace_folder(added[n]), *([] if odd else [workspace_folder(toggled)])],
                    removed=[workspace_folder(opened[n]), *([workspace_folder(toggled)] if odd else [])],
                )
            )
        )
    flood, _ = await timed_status(client, max(AT_LEAST, FLOOD_SLOWER * quiet_flood))

    final = [*opened[CHANGES:], *added]
    final_uris = {folder_uri(f) for f in final}
    bound = max(AT_LEAST, STATUS_SLOWER * baseline)
    slowest = 0.0
    async with asyncio.timeout(WAIT):
        while True:
            took, status = await timed_status(client, bound)
            slowest = max(slowest, took)
            candidates = {c["uri"] for c in status["candidates"]}
            if candidates <= final_uris and registered_folders(storage, server.pid) == tuple(
                os.path.realpath(f) for f in final
            ):
                break
            await asyncio.sleep(0.05)

    assert len(candidates) == DEFAULTS.max_candidates
    assert folder_uri(toggled) not in candidates, "the last change closed it"
    assert flood < max(AT_LEAST, FLOOD_SLOWER * quiet_flood)
    assert slowest < bound, f"a status took {slowest:.3f} s while the changes were applied; baseline {baseline:.4f} s"
    peak = memory_kib(server.pid, "VmHWM")
    assert peak < MEMORY_GROWTH * resident_before, f"peak {peak} KiB; {resident_before} KiB before the flood"
    print(
        f"status {baseline * 1000:.1f} ms before, {slowest * 1000:.1f} ms at most after; flood {flood:.2f} s vs "
        f"{quiet_flood:.2f} s without work; peak {peak // 1024} MiB, {resident_before // 1024} MiB before"
    )
