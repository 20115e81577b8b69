"""How the sidecar ends, and that no MCP server process outlives it however it ends (docs/security.md H1)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.processes import alive, reapers_of, servers_of, until_gone
from support.raw_sidecar import RawSidecar
from support.records import record_line
from support.servers import resources_server, roots_recorder
from support.sidecar import BridgeClient, state_of

from host_bridge.hosts.lsp.server import STOP_TIMEOUT


@pytest.mark.asyncio
@pytest.mark.requirement("E1", "H1")
async def test_exit_without_shutdown_stops_every_mcp_server_and_exits_with_code_one(
    client: BridgeClient, tmp_path: Path
) -> None:
    servers = {name: roots_recorder(tmp_path / f"{name}.jsonl") for name in ("one", "two")}
    options = {"storageDir": str(tmp_path / "storage"), "servers": servers, "readWorkspaceConfig": False}
    await client.start_session([], options)
    await client.until(lambda: {s["id"] for s in client.statuses if s["state"] == "running"} == {"one", "two"})
    sidecar = client._server  # pyright: ignore[reportPrivateUsage]
    assert sidecar is not None
    mcp_children = servers_of(sidecar.pid)
    assert len(mcp_children) == 2, "each fixture server runs as a child of the sidecar"

    client.exit(None)
    returncode = await asyncio.wait_for(sidecar.wait(), 5)

    assert returncode == 1
    assert not [pid for pid in mcp_children if alive(pid)]


@dataclass
class StubbornTree:
    """A sidecar running one server that ignores SIGTERM and stdin's end, with a grandchild that ignores SIGTERM."""

    sidecar: RawSidecar
    server: int
    grandchild: int
    reapers: list[int]

    @property
    def pids(self) -> list[int]:
        return [self.server, self.grandchild, *self.reapers]


@contextlib.asynccontextmanager
async def stubborn_tree(tmp_path: Path, editor_pid: int | None = None) -> AsyncIterator[StubbornTree]:
    """Start it; whatever outlives the test is killed afterwards."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    record = tmp_path / "stubborn.jsonl"
    sidecar = await RawSidecar.start()
    pids: list[int] = []
    try:
        servers = {"stubborn": resources_server("--fault", "stubborn", "--record", str(record))}
        await sidecar.handshake(tmp_path, servers, process_id=editor_pid)
        await sidecar.until(lambda: state_of(sidecar.statuses(), "stubborn") == "running")
        spawned = await record_line(record, lambda entry: "grandchild" in entry)
        assert servers_of(sidecar.pid) == [spawned["server"]]
        tree = StubbornTree(sidecar, spawned["server"], spawned["grandchild"], reapers_of(sidecar.pid))
        pids = tree.pids
        yield tree
    finally:
        try:
            await sidecar.close()
        finally:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


async def end_sidecar(tmp_path: Path, how: str) -> tuple[str, int, float, list[int]]:
    """Start a sidecar with a stubborn server, end it ``how``; the exit code, seconds to exit, and survivors."""
    editor = await asyncio.create_subprocess_exec("sleep", "60") if how == "editor-died" else None
    try:
        async with stubborn_tree(tmp_path / how, editor.pid if editor else None) as tree:
            sidecar = tree.sidecar
            started = time.monotonic()
            if how == "end-of-input":
                assert sidecar.process.stdin is not None
                sidecar.process.stdin.close()
            elif how == "exit":
                sidecar.notify("exit", None)
            elif how == "sigterm":
                sidecar.process.send_signal(signal.SIGTERM)
            else:
                assert editor is not None
                editor.kill()
                await editor.wait()
            returncode = await sidecar.wait_exit(STOP_TIMEOUT + 3)
            seconds = time.monotonic() - started
            # SIGKILL was sent before the sidecar exited; the kernel needs a moment to end the processes.
            return how, returncode, seconds, await until_gone(tree.pids, 1.0)
    finally:
        if editor is not None and editor.returncode is None:
            editor.kill()
            await editor.wait()


@pytest.mark.asyncio
@pytest.mark.requirement("E1", "E2", "H1")
async def test_on_every_exit_path_a_server_that_ignores_sigterm_and_its_grandchild_end_before_the_sidecar_exits(
    tmp_path: Path,
) -> None:
    ways = ("end-of-input", "exit", "sigterm", "editor-died")
    # Concurrently: each stop waits out the grace periods, and they do not depend on each other.
    outcomes = await asyncio.gather(*(end_sidecar(tmp_path, how) for how in ways))

    survivors = {how: left for how, _, _, left in outcomes if left}
    assert not survivors, f"processes that outlived the sidecar: {survivors}"
    assert {how: code for how, code, _, _ in outcomes} == {
        "end-of-input": 0,
        "exit": 1,
        "sigterm": 128 + signal.SIGTERM,
        "editor-died": 0,
    }
    slow = {how: round(seconds, 1) for how, _, seconds, _ in outcomes if seconds > STOP_TIMEOUT + 1}
    assert not slow, f"the stop took longer than its budget of {STOP_TIMEOUT} s: {slow}"


@pytest.mark.asyncio
@pytest.mark.requirement("E5", "H1")
async def test_when_the_sidecar_is_killed_its_reaper_ends_the_servers_whole_process_group(tmp_path: Path) -> None:
    async with stubborn_tree(tmp_path) as tree:
        tree.sidecar.process.kill()
        await tree.sidecar.wait_exit(5)

        survivors = await until_gone(tree.pids, 5.0)

        assert not survivors, f"still running after the sidecar was killed: {survivors} of {tree}"


@pytest.mark.asyncio
@pytest.mark.requirement("H1")
async def test_shutdown_is_answered_before_the_servers_stop_and_they_are_stopped_before_the_process_exits(
    tmp_path: Path,
) -> None:
    """eglot waits 1.5 s for the answer to ``shutdown``, then kills the sidecar: the answer must not wait for a server
    that takes seconds to stop (this one ignores SIGTERM and needs the SIGKILL after the stop budget)."""
    async with stubborn_tree(tmp_path) as tree:
        sidecar = tree.sidecar
        answer = await sidecar.request("shutdown")
        still_running = alive(tree.server)
        sidecar.notify("exit", None)
        returncode = await sidecar.wait_exit(STOP_TIMEOUT + 3)
        survivors = await until_gone(tree.pids, 5.0)

    assert "error" not in answer and answer.get("result") is None
    assert still_running, "shutdown was answered only after the server had been stopped"
    assert returncode == 0
    assert not survivors
