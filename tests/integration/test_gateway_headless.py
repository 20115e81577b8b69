"""Agents in a folder no editor has open: ``attach`` starts a headless sidecar that uses only saved decisions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from support.folders import folder_candidate
from support.gateway_harness import gateway_hub
from support.hub_harness import WAIT, configs
from support.servers import python_server

from host_bridge.gateway import registry
from host_bridge.gateway.attach import IDLE_VARIABLE
from host_bridge.hub.running import running_sidecars
from host_bridge.procs import alive
from host_bridge.uris import canonical_path, path_to_uri

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PIN = "2025-11-25"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """A storage folder and a workspace whose ``.mcp.json`` defines the tools server; headless sidecars started
    meanwhile are stopped at the end."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    storage, folder = tmp_path / "s", tmp_path / "ws"
    folder.mkdir()
    entry = python_server("tools_server", "--pin", PIN)
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"tools": entry}}), encoding="utf-8")
    try:
        yield storage, folder
    finally:
        for sidecar in running_sidecars(storage):
            if sidecar.pid != os.getpid():
                os.kill(sidecar.pid, signal.SIGTERM)


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, IDLE_VARIABLE: "10", **extra}


def attach_args(server_id: str, storage: Path, folder: Path) -> list[str]:
    return ["-m", "host_bridge", "attach", server_id, "--workspace", str(folder), "--storage-dir", str(storage)]


def consent(*args: str, storage: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "host_bridge", "consent", *args, "--storage-dir", str(storage)],
        capture_output=True,
        text=True,
        check=False,
        timeout=WAIT,
        env=env(),
    )


def attach_once(storage: Path, folder: Path) -> subprocess.CompletedProcess[str]:
    """An ``attach`` whose agent sends nothing and leaves at once."""
    return subprocess.run(
        [sys.executable, *attach_args("tools", storage, folder)],
        input="",
        capture_output=True,
        text=True,
        check=False,
        timeout=2 * WAIT,
        env=env(),
    )


def agent(storage: Path, folder: Path, errlog: Any) -> Client:
    parameters = StdioServerParameters(command=sys.executable, args=attach_args("tools", storage, folder), env=env())
    return Client(stdio_client(parameters, errlog=errlog), mode="legacy")


def headless_pid(storage: Path, folder: Path) -> int:
    entry = registry.find_sidecar(str(folder), str(storage))
    assert entry.headless
    return entry.pid


async def roots_of(client: Client) -> list[dict[str, Any]]:
    result = await client.call_tool("roots", {})
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return json.loads(content.text)


async def gone(pid: int) -> None:
    """Wait until process ``pid`` has exited."""
    with anyio.fail_after(WAIT):
        while alive(pid):
            await anyio.sleep(0.05)


def handle_of(storage: Path) -> str:
    sidecar = running_sidecars(storage)[0]
    return sidecar.servers[0].handle


async def test_an_agent_with_no_editor_gets_a_headless_sidecar_that_asks_nothing_and_follows_consent_commands(
    folders: tuple[Path, Path], tmp_path: Path
) -> None:
    storage, folder = folders
    # Untrusted server from the folder's own file: refused at once, with the command that trusts it.
    refused = attach_once(storage, folder)
    assert refused.returncode == 3
    assert "started MCP Host Bridge without an editor" in refused.stderr
    assert "it never asks" in refused.stderr
    pid = headless_pid(storage, folder)
    handle = handle_of(storage)
    assert f"`host-bridge consent trust {handle}`" in refused.stderr
    assert refused.stdout == ""

    trusted = consent("trust", handle, storage=storage)
    assert trusted.returncode == 0, trusted.stderr
    real = canonical_path(folder)
    with (tmp_path / "errlog").open("w+", encoding="utf-8") as errlog:
        async with agent(storage, folder, errlog) as first, agent(storage, folder, errlog) as second:
            # Undecided: nothing shared, and the command that shares it said on stderr.
            assert await roots_of(first) == []
            errlog.seek(0)
            said = errlog.read()
            assert f"`host-bridge consent allow {handle} {real}`" in said
            assert "started MCP Host Bridge without an editor" not in said  # it was running already
            assert headless_pid(storage, folder) == pid  # one per workspace, shared

            allowed = consent("allow", handle, real, storage=storage)
            assert allowed.returncode == 0, allowed.stderr
            shared = [{"uri": path_to_uri(real), "name": folder.name}]
            with anyio.fail_after(WAIT):
                while await roots_of(second) != shared:
                    await anyio.sleep(0.05)
            assert await roots_of(first) == shared  # without restarting either agent

    # Gone shortly after the last agent left.
    await gone(pid)
    assert all(sidecar.pid != pid for sidecar in running_sidecars(storage))


async def test_an_editor_sidecar_started_later_for_the_folder_takes_over_from_the_headless_one(
    folders: tuple[Path, Path], tmp_path: Path
) -> None:
    storage, folder = folders
    assert attach_once(storage, folder).returncode == 3  # untrusted: refused, but the headless one runs now
    pid = headless_pid(storage, folder)
    servers = configs({"tools": python_server("tools_server", "--pin", PIN)})
    async with gateway_hub(storage, folder, servers, [folder_candidate(folder)]) as editor:
        assert registry.find_sidecar(str(folder), str(storage)).pid == os.getpid()
        with (tmp_path / "errlog").open("w+", encoding="utf-8") as errlog:
            async with agent(storage, folder, errlog) as client:
                assert (await client.call_tool("echo", {"text": "hi"})).content[0] == types.TextContent(
                    type="text", text="hi"
                )
            errlog.seek(0)
            assert errlog.read() == ""  # the editor's sidecar gives no headless advice
        assert [s.id for s in editor.gateway.sessions] == []
        await gone(pid)
