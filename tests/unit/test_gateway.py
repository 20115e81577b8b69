"""The gateway's pure parts: loop detection, the sidecar registry, params going upstream, the SDK seams it uses."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.server import Server, ServerRequestContext

from host_bridge.gateway import admission, registry
from host_bridge.gateway.upstream import outgoing_params, raw_request
from host_bridge.hub.loops import attach_loop


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("host-bridge", ["attach", "fs"]),
        ("/home/me/.venv/bin/host-bridge", ["-v", "attach", "fs", "--workspace", "."]),
        ("python3", ["-m", "host_bridge", "attach", "fs"]),
        ("/usr/bin/python3.11", ["-m", "host_bridge.cli", "attach", "fs"]),
        ("uvx", ["host-bridge", "attach", "fs"]),
        ("C:\\tools\\host-bridge.exe", ["attach", "fs"]),
    ],
)
def test_an_entry_that_runs_host_bridge_attach_is_a_loop(command: str, args: list[str]) -> None:
    reason = attach_loop(command, args)
    assert reason is not None and "host_bridge's own `attach`" in reason


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("host-bridge", ["serve"]),
        ("npx", ["-y", "@modelcontextprotocol/server-filesystem", "attach"]),
        ("python3", ["-m", "host_bridge_helper", "attach"]),
        ("host-bridge-attach", []),
    ],
)
def test_other_entries_are_not_loops(command: str, args: list[str]) -> None:
    assert attach_loop(command, args) is None


def write(directory: Path, entry: registry.SidecarEntry) -> None:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    (directory / f"{entry.pid}.json").write_text(entry.model_dump_json(by_alias=True))
    os.chmod(directory / f"{entry.pid}.json", 0o600)


def entry(tmp_path: Path, pid: int, folders: list[Path], started: float = 1.0) -> registry.SidecarEntry:
    socket = tmp_path / f"{pid}.sock"
    socket.touch()
    return registry.SidecarEntry(
        pid=pid, socket=str(socket), storage_dir=str(tmp_path), folders=tuple(str(f) for f in folders), started=started
    )


def test_attach_finds_the_sidecar_whose_folder_is_the_workspace_before_one_whose_folder_contains_it(
    tmp_path: Path,
) -> None:
    repo, app = tmp_path / "repo", tmp_path / "repo" / "app"
    app.mkdir(parents=True)
    storage = tmp_path / "s"
    me = os.getpid()
    parent = os.getppid()
    write(registry.gateway_dir(storage), entry(tmp_path, me, [repo], started=5.0))
    write(registry.gateway_dir(storage), entry(tmp_path, parent, [app], started=1.0))
    assert registry.find_sidecar(str(app), str(storage)).pid == parent
    assert registry.find_sidecar(str(app / "deeper"), str(storage)).pid == parent
    assert registry.find_sidecar(str(repo), str(storage)).pid == me


def test_an_entry_of_a_dead_sidecar_is_removed_and_no_sidecar_is_a_sentence_naming_what_to_start(
    tmp_path: Path,
) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    storage = tmp_path / "s"
    write(registry.gateway_dir(storage), entry(tmp_path, pid, [tmp_path]))
    with pytest.raises(registry.NoSidecarError) as raised:
        registry.find_sidecar(str(tmp_path), str(storage))
    assert not (registry.gateway_dir(storage) / f"{pid}.json").exists()
    message = str(raised.value)
    assert message.startswith(f"no MCP Host Bridge sidecar is running for {os.path.realpath(tmp_path)}")
    assert "open this folder in VS Code with the MCP Host Bridge extension" in message


def test_a_socket_path_too_long_for_sockaddr_un_moves_to_a_private_runtime_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    storage = tmp_path / ("very-long-storage-folder-name-" * 4)
    path = registry.socket_path(storage, 4242)
    assert len(os.fsencode(path)) <= registry.MAX_SOCKET_PATH
    assert path.parent.name == f"host-bridge-{os.getuid()}"
    registry.private_dir(path.parent)
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert registry.socket_path(tmp_path / "s", 4242) == tmp_path / "s" / "gateway" / "4242.sock"


def test_a_gateway_folder_others_can_read_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "gateway"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    with pytest.raises(Exception, match="chmod 700"):
        registry.private_dir(folder)


def test_an_entry_holds_the_secret_attach_presents_and_an_abstract_socket_is_written_with_an_at_sign(
    tmp_path: Path,
) -> None:
    address = registry.abstract_name(os.getpid())
    assert address.startswith(f"@host-bridge/{os.getuid()}/{os.getpid()}-")
    assert registry.abstract_name(os.getpid()) != address
    written = registry.new_entry(os.getpid(), address, str(tmp_path), [str(tmp_path)], "s3cret")
    [path] = registry.write_entry(written, [tmp_path / "gateway"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    [read] = registry.read_entries(tmp_path / "gateway")
    assert read.secret == "s3cret" and read.socket == address
    assert registry.connect_address(address) == "\0" + address[1:]
    assert registry.connect_address("/run/x.sock") == "/run/x.sock"
    assert registry.find_sidecar(str(tmp_path), str(tmp_path)) == read


def test_an_entry_of_a_workspace_with_twenty_thousand_long_folders_is_written_and_read_whole(tmp_path: Path) -> None:
    # Over 2 MiB: a first version read only the first MiB and skipped the entry as damaged, so attach found no sidecar.
    folders = [str(tmp_path / f"{'deep/' * 15}folder-{n:05}") for n in range(20_000)]
    written = registry.new_entry(os.getpid(), "@x", str(tmp_path), folders, "s3cret")
    [path] = registry.write_entry(written, [tmp_path / "gateway"])
    assert path.stat().st_size > 2 << 20
    [read] = registry.read_entries(tmp_path / "gateway")
    assert read.folders == tuple(folders)


def test_an_entry_over_the_bound_is_skipped_not_read_into_memory(tmp_path: Path) -> None:
    folder = tmp_path / "gateway"
    registry.private_dir(folder)
    entry = folder / f"{os.getpid()}.json"
    with entry.open("wb") as file:
        file.truncate(registry.MAX_ENTRY_BYTES + 1)
    entry.chmod(0o600)
    assert registry.read_entries(folder) == []


def test_a_secret_matches_only_itself_and_a_missing_one_never_does() -> None:
    secret = admission.new_secret()
    assert len(secret) >= 43 and admission.new_secret() != secret
    assert admission.secret_matches(secret, secret)
    assert not admission.secret_matches(None, secret)
    assert not admission.secret_matches("", secret)
    assert not admission.secret_matches(secret[:-1], secret)
    assert not admission.secret_matches("\ud800", secret)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_process_is_found_inside_a_server_group_through_its_own_group_or_an_ancestor_that_leads_one() -> None:
    # The "server" leads its group; its child starts a session of its own, as a daemonizing program would.
    script = (
        "import subprocess; p = subprocess.Popen(['sleep', '60'], start_new_session=True); print(p.pid, flush=True)"
    )
    server = subprocess.Popen(
        [sys.executable, "-c", f"{script}; p.wait()"], start_new_session=True, stdout=subprocess.PIPE
    )
    try:
        assert server.stdout is not None
        child = int(server.stdout.readline())
        assert os.getpgid(child) != server.pid
        assert admission.server_group_of(server.pid, {server.pid}) == server.pid
        assert admission.server_group_of(child, {server.pid}) == server.pid
        assert admission.server_group_of(os.getpid(), {server.pid}) is None
        assert admission.server_group_of(child, set()) is None
        os.kill(child, 9)
    finally:
        server.kill()
        server.wait()


def test_params_go_upstream_without_the_agents_progress_token_or_envelope() -> None:
    params = {
        "name": "echo",
        "_meta": {
            "progressToken": 7,
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "traceparent": "00-abc",
        },
    }
    out, token = outgoing_params(params)
    assert token == 7
    assert out == {"name": "echo", "_meta": {"traceparent": "00-abc"}}
    assert params["_meta"]["progressToken"] == 7
    assert outgoing_params({"_meta": {"progressToken": "t"}}) == ({}, "t")
    assert outgoing_params(None) == ({}, None)


@pytest.mark.anyio
async def test_raw_requests_reach_the_server_through_the_sdk_session_and_come_back_as_sent() -> None:
    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> Any:
        return {"tools": [{"name": "t", "inputSchema": {"type": "object"}, "extra": 1}]}

    server: Server[Any] = Server("pinned", on_list_tools=list_tools)
    async with Client(server, mode="legacy") as client:
        result = await raw_request(client, "tools/list", {}, {"timeout": 5})
    assert result["tools"][0]["name"] == "t"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
