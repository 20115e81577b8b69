"""How the sidecar ends when the editor sends ``exit`` without asking for ``shutdown`` first."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from conftest import BridgeClient, roots_recorder
from processes import alive, children_of


@pytest.mark.asyncio
async def test_exit_without_shutdown_stops_every_mcp_server_and_exits_with_code_one(
    client: BridgeClient, tmp_path: Path
) -> None:
    servers = {name: roots_recorder(tmp_path / f"{name}.jsonl") for name in ("one", "two")}
    options = {"storageDir": str(tmp_path / "storage"), "servers": servers, "readWorkspaceConfig": False}
    await client.start_session([], options)
    await client.until(lambda: {s["id"] for s in client.statuses if s["state"] == "running"} == {"one", "two"})
    sidecar = client._server  # pyright: ignore[reportPrivateUsage]
    assert sidecar is not None
    mcp_children = children_of(sidecar.pid)
    assert len(mcp_children) == 2, "each fixture server runs as a child of the sidecar"

    client.exit(None)
    returncode = await asyncio.wait_for(sidecar.wait(), 5)

    assert returncode == 1
    assert not [pid for pid in mcp_children if alive(pid)]
