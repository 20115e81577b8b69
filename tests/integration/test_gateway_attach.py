"""Agents through the gateway: real ``host-bridge attach`` processes, the SDK as the agent, a fixture server behind."""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
import pytest
from mcp import MCPError
from mcp.client.session import ClientRequestContext
from support.folders import folder_candidate
from support.gateway_harness import gateway_hub
from support.hub_harness import WAIT, Recorder, configs
from support.records import record_line, records
from support.servers import python_server

from host_bridge.core import CoreSettings, open_core
from host_bridge.gateway import registry
from host_bridge.gateway.attach import IDLE_VARIABLE
from host_bridge.gateway.audit import read_gateway_audit
from host_bridge.gateway.service import Gateway
from host_bridge.gateway.settings import GatewaySettings
from host_bridge.hub.limits import ANSWER_OVER_LIMIT, DEFAULT_MAX_PAGE_ITEMS
from host_bridge.uris import canonical_path, path_to_uri

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PIN = "2025-11-25"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def private_data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gateway also registers in the default data dir: keep that inside the test."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


def workspace(tmp_path: Path) -> tuple[Path, Path, Path]:
    storage = tmp_path / "s"
    folder = tmp_path / "ws"
    (folder / "src").mkdir(parents=True)
    return storage, folder, tmp_path / "record.jsonl"


def tools_server(record: Path, *extra: str) -> dict[str, Any]:
    return python_server("tools_server", "--pin", PIN, "--record", str(record), *extra)


def text(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


@pytest.mark.requirement("H3")
# The agent uses the handshake era's roots, subscriptions and logging, which the SDK marks deprecated for 2026-07-28.
@pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")
async def test_an_agent_lists_and_calls_tools_reads_resources_and_never_changes_the_server_roots(
    tmp_path: Path,
) -> None:
    storage, folder, record = workspace(tmp_path)
    servers = configs({"tools": tools_server(record)})
    async with gateway_hub(storage, folder, servers, [folder_candidate(folder)]) as harness:
        harness.allow("tools", folder)
        consented = [{"uri": path_to_uri(canonical_path(folder)), "name": folder.name}]
        await record_line(record, lambda e: e.get("roots") == consented)

        async def agent_roots(context: ClientRequestContext) -> types.ListRootsResult:
            return types.ListRootsResult(roots=[types.Root(uri="file:///", name="everything")])  # pyright: ignore[reportArgumentType]

        async with harness.agent("tools", list_roots_callback=agent_roots) as agent:
            assert agent.server_info is not None and agent.server_info.name == "tools-server"
            tools = await agent.list_tools()
            assert {tool.name for tool in tools.tools} >= {"echo", "slow", "sample"}
            assert text(await agent.call_tool("echo", {"text": "hello"})) == "hello"
            listing = await agent.list_resources()
            assert [r.uri for r in listing.resources] == ["tools://res/0", "tools://res/1", "tools://res/2"]
            read = await agent.read_resource("tools://res/1")
            assert isinstance(read.contents[0], types.TextResourceContents)
            assert read.contents[0].text == "contents of tools://res/1"
            templates = await agent.list_resource_templates()
            assert templates.resource_templates[0].uri_template == "tools://item/{name}"
            completion = await agent.complete(
                types.ResourceTemplateReference(type="ref/resource", uri="tools://item/{name}"),
                {"name": "name", "value": "al"},
            )
            assert completion.completion.values == ["alpha", "alpine"]
            prompt = await agent.get_prompt("greet", {"name": "Ada"})
            assert isinstance(prompt.messages[0].content, types.TextContent)
            assert prompt.messages[0].content.text == "Hello, Ada"
            before = records(record)
            await agent.session.send_roots_list_changed()  # pyright: ignore[reportDeprecated]
            # The tool answers with the roots the server has; it is answered after the notification was handled.
            assert json.loads(text(await agent.call_tool("roots", {}))) == consented
            assert records(record) == before
        assert all(root["uri"] != "file:///" for entry in before for root in entry.get("roots", []))
    entries = list(read_gateway_audit(str(storage)))
    assert [e.event for e in entries] == ["attached", "initialized", "detached"]
    assert entries[0].agent is not None and entries[0].agent.parent_pid == os.getpid()
    assert entries[1].client_name == "mcp" and entries[1].protocol_version == PIN
    assert entries[2].requests is not None and entries[2].requests["tools/call"] == 2


async def test_progress_reaches_the_agent_and_its_cancellation_reaches_the_server(tmp_path: Path) -> None:
    storage, folder, record = workspace(tmp_path)
    async with (
        gateway_hub(storage, folder, configs({"tools": tools_server(record)}), []) as harness,
        harness.agent("tools") as agent,
    ):
        seen: list[tuple[float, str | None]] = []
        three = anyio.Event()
        slow: dict[str, Any] = {}

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, message))
            if len(seen) == 3:
                three.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: agent.call_tool("slow", {"steps": 3}, progress_callback=on_progress))
            with anyio.fail_after(WAIT):
                await three.wait()
            slow = await record_line(record, lambda e: "slow" in e)
            tasks.cancel_scope.cancel()
        cancelled = await record_line(record, lambda e: "cancelled" in e)
        assert cancelled["cancelled"] == slow["slow"]
        assert seen == [(1, "step 1"), (2, "step 2"), (3, "step 3")]
        assert text(await agent.call_tool("echo", {"text": "still here"})) == "still here"


async def test_two_agents_at_once_a_slow_call_in_one_does_not_block_the_other(tmp_path: Path) -> None:
    storage, folder, record = workspace(tmp_path)
    async with (
        gateway_hub(storage, folder, configs({"tools": tools_server(record)}), []) as harness,
        harness.agent("tools") as first,
        harness.agent("tools") as second,
    ):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: first.call_tool("slow", {"steps": 1}))
            await record_line(record, lambda e: "slow" in e)
            with anyio.fail_after(WAIT):
                assert text(await second.call_tool("echo", {"text": "not blocked"})) == "not blocked"
                assert len((await second.list_resources()).resources) == 3
            tasks.cancel_scope.cancel()
        assert len(harness.gateway.sessions) == 2


async def test_sampling_goes_to_the_agent_whose_call_caused_it_and_is_refused_otherwise(tmp_path: Path) -> None:
    storage, folder, record = workspace(tmp_path)

    async def sample(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        prompt = params.messages[0].content
        assert isinstance(prompt, types.TextContent)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=f"A sampled {prompt.text}"), model="test"
        )

    async with (
        gateway_hub(storage, folder, configs({"tools": tools_server(record)}), []) as harness,
        harness.agent("tools", sampling_callback=sample) as able,
        harness.agent("tools") as unable,
    ):
        assert text(await able.call_tool("sample", {"prompt": "this"})) == "A sampled this"
        refused = await unable.call_tool("sample", {"prompt": "that"})
        assert refused.is_error
        assert "did not declare sampling" in text(refused)


# The agent uses the handshake era's roots, subscriptions and logging, which the SDK marks deprecated for 2026-07-28.
@pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")
async def test_subscriptions_and_log_messages_reach_the_agents_that_asked(tmp_path: Path) -> None:
    storage, folder, record = workspace(tmp_path)
    received: list[types.ServerNotification] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        nonlocal arrived
        if isinstance(message, types.ServerNotification):
            received.append(message)
            arrived.set()
            arrived = anyio.Event()

    async def wait_for(method: str) -> types.ServerNotification:
        with anyio.fail_after(WAIT):
            while not any(m.method == method for m in received):
                await arrived.wait()
        return next(m for m in received if m.method == method)

    async with (
        gateway_hub(storage, folder, configs({"tools": tools_server(record)}), []) as harness,
        harness.agent("tools", message_handler=on_message) as agent,
    ):
        await agent.session.subscribe_resource("tools://res/1")  # pyright: ignore[reportDeprecated]
        assert {"subscribe": "tools://res/1"} in records(record)
        await agent.call_tool("touch", {"uri": "tools://res/1"})
        updated = await wait_for("notifications/resources/updated")
        assert isinstance(updated, types.ResourceUpdatedNotification)
        assert updated.params.uri == "tools://res/1"
        await wait_for("notifications/resources/list_changed")
        await agent.session.set_logging_level("warning")  # pyright: ignore[reportDeprecated]
        assert {"setLevel": "warning"} in records(record)
        await agent.call_tool("log", {"level": "info", "text": "quiet"})
        await agent.call_tool("log", {"level": "error", "text": "loud"})
        logged = await wait_for("notifications/message")
        assert isinstance(logged, types.LoggingMessageNotification) and logged.params.data == "loud"
        await agent.session.unsubscribe_resource("tools://res/1")  # pyright: ignore[reportDeprecated]
        assert {"unsubscribe": "tools://res/1"} in records(record)


@pytest.mark.requirement("H3")
@pytest.mark.parametrize("abstract", [False, True], ids=["file socket", "abstract socket"])
async def test_the_socket_is_private_and_an_unknown_server_is_refused_with_a_sentence(
    tmp_path: Path, abstract: bool
) -> None:
    if abstract and not sys.platform.startswith("linux"):
        pytest.skip("abstract sockets are Linux's")
    storage, folder, record = workspace(tmp_path)
    settings = GatewaySettings(abstract_socket=abstract)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), [], settings=settings) as harness:
        entry_file = registry.gateway_dir(storage) / f"{os.getpid()}.json"
        assert stat.S_IMODE(entry_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(entry_file.parent.stat().st_mode) == 0o700
        if abstract:
            assert harness.gateway.socket_path is None
            assert harness.entry().socket.startswith("@host-bridge/")
            assert not list(registry.gateway_dir(storage).glob("*.sock"))
        else:
            socket_path = Path(harness.gateway.socket_path or "")
            assert harness.entry().socket == str(socket_path)
            assert stat.S_IMODE(socket_path.stat().st_mode) == 0o600
            assert stat.S_IMODE(socket_path.parent.stat().st_mode) == 0o700
        command = harness.attach_command("nope")
        finished = await anyio.run_process([command.command, *command.args], input=b"", check=False, env=command.env)
        assert finished.returncode == 3
        assert finished.stdout == b""
        message = finished.stderr.decode().strip()
        assert message.startswith("host-bridge attach: MCP Host Bridge: unknown MCP server 'nope'")
        assert "\n" not in message
    refused = [e for e in read_gateway_audit(str(storage)) if e.event == "refused"]
    assert refused and refused[0].server == "nope"


def test_with_no_sidecar_attach_starts_a_headless_one_which_refuses_a_server_the_folder_does_not_define(
    tmp_path: Path,
) -> None:
    finished = subprocess.run(
        [
            sys.executable,
            "-m",
            "host_bridge",
            "attach",
            "fs",
            "--storage-dir",
            str(tmp_path / "s"),
            "--workspace",
            str(tmp_path),
        ],
        input=b"",
        capture_output=True,
        check=False,
        timeout=2 * WAIT,
        env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), IDLE_VARIABLE: "0.5"},
    )
    assert finished.returncode == 3
    assert finished.stdout == b""
    lines = finished.stderr.decode().strip().splitlines()
    assert len(lines) == 2
    assert f"no editor has {canonical_path(tmp_path)} open: started MCP Host Bridge without an editor" in lines[0]
    assert "MCP server 'fs'" in lines[1]


async def test_an_agent_waits_for_its_server_to_start_and_errors_name_host_bridge(tmp_path: Path) -> None:
    storage, folder, record = workspace(tmp_path)
    async with (
        gateway_hub(storage, folder, configs({"tools": tools_server(record)}), []) as harness,
        harness.agent("tools") as agent,
    ):
        harness.hub.connection("tools").stop()
        with pytest.raises(MCPError) as raised:
            await agent.call_tool("echo", {"text": "x"})
        assert raised.value.error.message.startswith("MCP Host Bridge: MCP server 'tools' is")


async def test_a_server_entry_that_attaches_back_to_host_bridge_is_skipped_with_a_problem(tmp_path: Path) -> None:
    from host_bridge.hub.config import load_servers

    loaded = load_servers(
        {
            "loop": {"command": "host-bridge", "args": ["attach", "fs"]},
            "module-loop": {"command": sys.executable, "args": ["-m", "host_bridge", "attach", "fs"]},
            "fine": {"command": "host-bridge-helper", "args": ["attach"]},
        },
        [],
    )
    assert [s.id for s in loaded.servers] == ["fine"]
    assert {p.server_id for p in loaded.problems} == {"loop", "module-loop"}
    assert all("host_bridge's own `attach`" in p.message for p in loaded.problems)


SLOW_CALL = {"name": "slow", "arguments": {"steps": 0}}
"""A call of the fixture server's ``slow`` tool that runs until it is cancelled."""


class RawAgent:
    """An agent speaking JSON lines to a real ``attach`` process over pipes (as an agent starts it)."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self._buffer = b""

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps(message).encode() + b"\n")

    async def line(self) -> bytes:
        """The next line on attach's stdout; ``b""`` at end-of-file."""
        assert self.process.stdout is not None
        while b"\n" not in self._buffer:
            try:
                self._buffer += await self.process.stdout.receive()
            except anyio.EndOfStream:
                return b""
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    async def ask(self, request_id: int, method: str, params: dict[str, Any]) -> None:
        """Send a request, without waiting for its answer."""
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})

    async def request(self, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await self.ask(request_id, method, params)
        answer = json.loads(await self.line())
        assert answer["id"] == request_id, answer
        return answer["result"]

    async def leave(self) -> int:
        """Close attach's stdin, as an agent does when it is done, and return attach's exit code."""
        assert self.process.stdin is not None
        await self.process.stdin.aclose()
        return await self.process.wait()

    async def initialize(self) -> None:
        params = {"protocolVersion": PIN, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        assert (await self.request(1, "initialize", params))["protocolVersion"] == PIN
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


async def raw_agent(command: Any, stdin: int | None = subprocess.PIPE) -> RawAgent:
    process = await anyio.open_process(
        [command.command, *command.args], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=command.env
    )
    return RawAgent(process)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the descriptors in /proc")
async def test_attach_hands_its_pipes_to_the_gateway_and_keeps_none_of_them(tmp_path: Path) -> None:
    storage, folder, record = workspace(tmp_path)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), []) as harness:
        agent = await raw_agent(harness.attach_command("tools"))
        async with agent.process:
            with anyio.fail_after(WAIT):
                await agent.initialize()
                for fd in (0, 1):
                    assert os.readlink(f"/proc/{agent.process.pid}/fd/{fd}") == os.devnull
                result = await agent.request(2, "tools/call", {"name": "echo", "arguments": {"text": "direct"}})
                assert result["content"][0]["text"] == "direct"
                assert await agent.leave() == 0
    entries = list(read_gateway_audit(str(storage)))
    assert [e.event for e in entries] == ["attached", "initialized", "detached"]
    assert entries[2].reason == "the agent closed the connection"


async def test_a_killed_attach_ends_its_session_cancels_its_call_and_the_agent_sees_its_stdout_close(
    tmp_path: Path,
) -> None:
    storage, folder, record = workspace(tmp_path)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), []) as harness:
        agent = await raw_agent(harness.attach_command("tools"))
        async with agent.process:
            with anyio.fail_after(WAIT):
                await agent.initialize()
                await agent.ask(2, "tools/call", {"name": "slow"})
                slow = await record_line(record, lambda e: "slow" in e)
                agent.process.kill()
                # Its call is answered with an error (the session ended), then its stdout closes.
                answer = json.loads(await agent.line())
                assert answer["id"] == 2 and "error" in answer
                assert await agent.line() == b""
                await agent.process.wait()
                cancelled = await record_line(record, lambda e: "cancelled" in e)
                assert cancelled["cancelled"] == slow["slow"]
                while harness.gateway.sessions:
                    await anyio.sleep(0.01)
    detached = [e for e in read_gateway_audit(str(storage)) if e.event == "detached"]
    assert [e.reason for e in detached] == ["the attach process exited"]


async def test_attach_exits_with_1_and_a_sentence_when_the_sidecar_stops_during_a_handed_over_session(
    tmp_path: Path,
) -> None:
    storage, folder, record = workspace(tmp_path)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), []) as harness:
        agent = await raw_agent(harness.attach_command("tools"))
        with anyio.fail_after(WAIT):
            await agent.initialize()
    async with agent.process:
        with anyio.fail_after(WAIT):
            assert await agent.line() == b""
            assert await agent.process.wait() == 1
            assert agent.process.stderr is not None
            message = (await agent.process.stderr.receive()).decode().strip()
    assert message.startswith("host-bridge attach: the MCP Host Bridge sidecar closed the connection")


async def test_attach_relays_when_its_stdin_is_a_file(tmp_path: Path) -> None:
    storage, folder, record = workspace(tmp_path)
    requests = tmp_path / "requests.jsonl"
    params = {"protocolVersion": PIN, "capabilities": {}, "clientInfo": {"name": "file", "version": "1"}}
    requests.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}) + "\n")
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), []) as harness:
        with requests.open("rb") as stdin:
            agent = await raw_agent(harness.attach_command("tools"), stdin=stdin.fileno())
        async with agent.process:
            with anyio.fail_after(WAIT):
                answer = json.loads(await agent.line())
                assert await agent.line() == b""
                assert await agent.process.wait() == 0
    assert answer["result"]["serverInfo"]["name"] == "tools-server"
    assert [e.client_name for e in read_gateway_audit(str(storage)) if e.event == "initialized"] == ["file"]


@pytest.mark.requirement("H3")
async def test_an_agent_whose_client_name_is_not_unicode_is_served_and_audited_and_the_gateway_keeps_serving(
    tmp_path: Path,
) -> None:
    storage, folder, record = workspace(tmp_path)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), []) as harness:
        hostile = await raw_agent(harness.attach_command("tools"))
        async with hostile.process:
            with anyio.fail_after(WAIT):
                # A lone surrogate is valid JSON text but no Unicode character: it cannot be written as UTF-8.
                params = {"protocolVersion": PIN, "capabilities": {}, "clientInfo": {"name": "\ud800", "version": "1"}}
                assert (await hostile.request(1, "initialize", params))["protocolVersion"] == PIN
                assert await hostile.leave() == 0
        async with harness.agent("tools") as agent:
            assert text(await agent.call_tool("echo", {"text": "still serving"})) == "still serving"
    entries = list(read_gateway_audit(str(storage)))
    assert [e.event for e in entries] == ["attached", "initialized", "detached"] * 2
    assert entries[1].client_name == "?"


FLOOD = """
import socket, sys
held = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1].replace("@", "\\0", 1) if sys.argv[1].startswith("@") else sys.argv[1])
    held.append(s)
print("connected", flush=True)
sys.stdin.read()
"""
"""Opens N connections to the gateway at argv[1] (a path, or ``@name``), says so, and holds them, silent, until stdin
closes."""


@pytest.mark.requirement("H3")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts the descriptors in /proc")
async def test_connections_past_the_descriptor_limit_pause_the_gateway_and_it_serves_agents_again_once_they_close(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    storage, folder, record = workspace(tmp_path)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), []) as harness:
        await harness.gateway.running("tools")
        flood = await anyio.open_process(
            [sys.executable, "-c", FLOOD, harness.gateway.address or "", "64"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        async with flood:
            assert flood.stdin is not None and flood.stdout is not None
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 8, hard))
            try:
                with anyio.fail_after(WAIT):
                    said = b""
                    while not said.endswith(b"\n"):
                        said += await flood.stdout.receive()
                    assert said == b"connected\n"
                    while not any("cannot accept connections" in r.getMessage() for r in caplog.records):
                        await anyio.sleep(0.01)
            finally:
                resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
            await flood.stdin.aclose()
            await flood.wait()
        async with harness.agent("tools") as agent:
            assert text(await agent.call_tool("echo", {"text": "served again"})) == "served again"


@pytest.mark.requirement("H3")
async def test_an_agent_with_megabytes_of_client_name_cannot_push_earlier_sessions_out_of_the_audit_log(
    tmp_path: Path,
) -> None:
    storage, folder, record = workspace(tmp_path)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), []) as harness:
        async with harness.agent("tools") as agent:
            assert text(await agent.call_tool("echo", {"text": "remember me"})) == "remember me"
        for _ in range(2):
            hostile = await raw_agent(harness.attach_command("tools"))
            async with hostile.process:
                with anyio.fail_after(WAIT):
                    info = {"name": "x" * (5 << 20), "version": "y" * (5 << 20)}
                    params = {"protocolVersion": PIN, "capabilities": {}, "clientInfo": info}
                    assert (await hostile.request(1, "initialize", params))["protocolVersion"] == PIN
                    assert await hostile.leave() == 0
    entries = list(read_gateway_audit(str(storage)))
    assert [e.event for e in entries] == ["attached", "initialized", "detached"] * 3
    assert entries[1].client_name == "mcp"
    clipped = entries[4].client_name
    assert clipped is not None and clipped.startswith("xxx") and len(clipped) < 5 << 20


@pytest.mark.requirement("H3")
async def test_what_a_server_sends_while_no_agent_call_is_under_way_is_refused_or_reaches_no_agent(
    tmp_path: Path,
) -> None:
    storage, folder, record = workspace(tmp_path)
    servers = configs({"tools": tools_server(record, "--unprompted")})
    sampled: list[types.CreateMessageRequestParams] = []
    received: list[Any] = []

    async def sample(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        sampled.append(params)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="no"), model="m")

    async def on_message(message: Any) -> None:
        received.append(message)

    async with (
        gateway_hub(storage, folder, servers, [folder_candidate(folder)]) as harness,
        harness.agent("tools", sampling_callback=sample, message_handler=on_message) as agent,
    ):
        assert text(await agent.call_tool("echo", {"text": "idle now"})) == "idle now"
        # Sharing a folder makes the hub send roots/list_changed: the server acts then, on no agent's behalf.
        harness.allow("tools", folder)
        outcome = await record_line(record, lambda e: "unpromptedSampling" in e)
        assert outcome["unpromptedSampling"] == "refused"
        assert "no agent has a call in progress" in outcome["message"]
        # The server sent its progress and update before the sampling request; the gateway handles them in order.
        assert text(await agent.call_tool("echo", {"text": "after"})) == "after"
        assert sampled == []
        unasked = ("notifications/progress", "notifications/resources/updated")
        assert not [m for m in received if getattr(m, "method", None) in unasked]


OTHER_USER = """
import os, socket, sys
if sys.argv[1].startswith("@"):
    address = "\\0" + sys.argv[1][1:]
else:
    folder = os.open(os.path.dirname(sys.argv[1]), os.O_PATH)
    address = f"/proc/self/fd/{folder}/{os.path.basename(sys.argv[1])}"
os.setgid(65534)
os.setuid(65534)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(address)
try:
    s.sendall(sys.argv[2].encode() + b"\\n")
    print(repr(s.recv(4096)), flush=True)
except (BrokenPipeError, ConnectionResetError):  # closed before or after the hello arrived, unread
    print(repr(b""), flush=True)
"""
"""Connects to the gateway at argv[1] (a path, or ``@name``) as user 65534, sends the hello argv[2], prints what came
back."""


@pytest.mark.requirement("H3")
@pytest.mark.skipif(not sys.platform.startswith("linux") or os.geteuid() != 0, reason="needs root to be another user")
@pytest.mark.parametrize("abstract", [False, True], ids=["file socket", "abstract socket"])
async def test_a_connection_from_another_user_is_closed_unanswered_even_when_file_modes_let_it_in(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, abstract: bool
) -> None:
    storage, folder, record = workspace(tmp_path)
    settings = GatewaySettings(abstract_socket=abstract)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), [], settings=settings) as harness:
        await harness.gateway.running("tools")
        if not abstract:
            socket_path = Path(harness.gateway.socket_path or "")
            # A mistaken chmod (or an ACL) must not be all that stands between another user and the servers.
            socket_path.parent.chmod(0o711)
            socket_path.chmod(0o666)
        # Even with the secret: an abstract socket has no file mode at all.
        hello = json.dumps(harness.hello("tools"))
        address = harness.gateway.address or ""
        other = await anyio.run_process([sys.executable, "-c", OTHER_USER, address, hello], check=False)
        assert other.returncode == 0, other.stderr
        assert other.stdout.strip() == b"b''"
        assert any("refused a gateway connection from user id 65534" in r.getMessage() for r in caplog.records)
    assert [e.event for e in read_gateway_audit(str(storage))] == []


@pytest.mark.requirement("H3")
async def test_an_agent_past_its_limit_of_requests_in_progress_is_refused_at_once_and_others_are_served(
    tmp_path: Path,
) -> None:
    storage, folder, record = workspace(tmp_path)
    settings = GatewaySettings(max_requests_in_progress=4)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), [], settings=settings) as harness:
        flooding = await raw_agent(harness.attach_command("tools"))
        async with flooding.process, harness.agent("tools") as other:
            with anyio.fail_after(WAIT):
                await flooding.initialize()
                for request_id in range(10, 14):
                    params = {"name": "slow", "arguments": {"steps": 0}}
                    await flooding.ask(request_id, "tools/call", params)
                await record_line(record, lambda e: len([r for r in records(record) if "slow" in r]) == 4)
                await flooding.ask(14, "tools/call", {"name": "echo"})
                refused = json.loads(await flooding.line())
                assert refused["id"] == 14
                assert "4 requests in progress" in refused["error"]["message"]
                assert text(await other.call_tool("echo", {"text": "served"})) == "served"
                assert await flooding.leave() == 0


@pytest.mark.requirement("H3")
async def test_a_handover_of_more_descriptors_than_stdin_and_stdout_is_refused_and_closes_them_all(
    tmp_path: Path,
) -> None:
    storage, folder, record = workspace(tmp_path)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), []) as harness:
        await harness.gateway.running("tools")
        stream = await anyio.connect_unix(harness.address)
        reads, writes = zip(*(os.pipe() for _ in range(3)), strict=True)
        try:
            async with stream:
                hello = harness.hello("tools", handover=True)
                await stream.send(json.dumps(hello).encode() + b"\n")
                answer = b""
                with anyio.fail_after(WAIT):
                    while b"\n" not in answer:
                        answer += await stream.receive()
                    assert json.loads(answer)["handover"] is True
                    await stream.send_fds(b"\0", list(reads))
                    for read in reads:
                        os.close(read)
                    with pytest.raises(anyio.EndOfStream):
                        await stream.receive()
            # The gateway closed every read end it received: the write ends have no reader left.
            for write in writes:
                with pytest.raises(BrokenPipeError):
                    os.write(write, b"x")
        finally:
            for write in writes:
                os.close(write)
        assert not harness.gateway.sessions


@pytest.mark.requirement("H3")
async def test_a_request_holding_a_string_that_is_not_unicode_is_refused_as_invalid_params_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    storage, folder, record = workspace(tmp_path)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), []) as harness:
        agent = await raw_agent(harness.attach_command("tools"))
        async with agent.process:
            with anyio.fail_after(WAIT):
                await agent.initialize()
                params = {"name": "echo", "arguments": {"text": "\ud800"}}
                await agent.ask(2, "tools/call", params)
                refused = json.loads(await agent.line())
                assert refused["id"] == 2 and refused["error"]["code"] == types.INVALID_PARAMS
                assert "not Unicode" in refused["error"]["message"]
                result = await agent.request(3, "tools/call", {"name": "echo", "arguments": {"text": "next"}})
                assert result["content"][0]["text"] == "next"


@pytest.mark.requirement("H3")
async def test_notifications_for_an_agent_that_never_reads_are_dropped_past_a_byte_limit_with_a_warning_naming_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    storage, folder, record = workspace(tmp_path)
    limit, message = 1 << 20, 256 << 10
    settings = GatewaySettings(outbox_bytes=limit)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), [], settings=settings) as harness:
        silent = await raw_agent(harness.attach_command("tools"))
        async with silent.process, harness.agent("tools") as loud:
            with anyio.fail_after(WAIT):
                await silent.initialize()
                session = next(s for s in harness.gateway.sessions if s.agent.pid == silent.process.pid)
                # Far fewer messages than the outbox's count limit: only their bytes can make it drop them.
                for _ in range(40):
                    await loud.call_tool("log", {"level": "info", "text": "x" * message})
                    if any("is not reading its notifications" in r.getMessage() for r in caplog.records):
                        break
                warnings = [
                    r.getMessage() for r in caplog.records if "is not reading its notifications" in r.getMessage()
                ]
                assert len(warnings) == 1
                assert session.id in warnings[0] and f"attach pid {silent.process.pid}" in warnings[0]
                assert "MCP server 'tools'" in warnings[0]
                assert session.outbox_bytes <= limit
                assert text(await loud.call_tool("echo", {"text": "still served"})) == "still served"
                assert await silent.leave() == 0


@pytest.mark.requirement("H3")
# The agent uses the handshake era's subscriptions, which the SDK marks deprecated for 2026-07-28.
@pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")
async def test_an_agent_past_its_limit_of_subscriptions_is_refused_with_a_sentence_naming_the_limit(
    tmp_path: Path,
) -> None:
    storage, folder, record = workspace(tmp_path)
    settings = GatewaySettings(max_subscriptions=2)
    async with (
        gateway_hub(storage, folder, configs({"tools": tools_server(record)}), [], settings=settings) as harness,
        harness.agent("tools") as agent,
    ):
        await agent.session.subscribe_resource("tools://res/0")  # pyright: ignore[reportDeprecated]
        await agent.session.subscribe_resource("tools://res/1")  # pyright: ignore[reportDeprecated]
        await agent.session.subscribe_resource("tools://res/1")  # pyright: ignore[reportDeprecated]
        with pytest.raises(MCPError) as raised:
            await agent.session.subscribe_resource("tools://res/2")  # pyright: ignore[reportDeprecated]
        assert raised.value.error.code == types.INVALID_REQUEST
        assert "already subscribed to 2 resources" in raised.value.error.message
        assert "unsubscribe from those it no longer needs" in raised.value.error.message
        assert {"subscribe": "tools://res/2"} not in records(record)
        await agent.session.unsubscribe_resource("tools://res/0")  # pyright: ignore[reportDeprecated]
        await agent.session.subscribe_resource("tools://res/2")  # pyright: ignore[reportDeprecated]
        assert {"subscribe": "tools://res/2"} in records(record)


@pytest.mark.requirement("H3")
async def test_connections_past_the_limit_of_those_waiting_for_their_hello_are_closed_at_once_and_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    storage, folder, record = workspace(tmp_path)
    # Nothing waiting for its hello times out during the test: only the limit can close a connection early.
    settings = GatewaySettings(max_pending_hellos=4, hello_timeout=WAIT * 4)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), [], settings=settings) as harness:
        await harness.gateway.running("tools")
        flood = await anyio.open_process(
            [sys.executable, "-c", FLOOD, harness.gateway.address or "", "8"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        async with flood:
            assert flood.stdin is not None and flood.stdout is not None
            with anyio.fail_after(WAIT):
                said = b""
                while not said.endswith(b"\n"):
                    said += await flood.stdout.receive()
                assert said == b"connected\n"
                # Accepted after the flood's eight: four of those still wait for their hello.
                probe = await anyio.connect_unix(harness.address)
                async with probe:
                    with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                        await probe.receive()
            turned_away = [r for r in caplog.records if "closes new connections at once" in r.getMessage()]
            assert len(turned_away) == 1
            assert "4 connections have not sent their hello" in turned_away[0].getMessage()
            await flood.stdin.aclose()
            await flood.wait()
        with anyio.fail_after(WAIT):
            while harness.gateway.listener.waiting_for_hello:
                await anyio.sleep(0.01)
        async with harness.agent("tools") as agent:
            assert text(await agent.call_tool("echo", {"text": "served again"})) == "served again"


def resident_bytes() -> int:
    """This process's resident memory now (Linux)."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.requirement("I11")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the resident memory in /proc")
async def test_an_agent_that_sends_requests_and_never_reads_holds_a_bounded_amount_and_others_are_answered_in_time(
    tmp_path: Path,
) -> None:
    storage, folder, record = workspace(tmp_path)
    settings = GatewaySettings(max_unwritten_bytes=1 << 20, max_requests_in_progress=32)
    answer = 32 << 10
    # What the gateway may hold for one agent: what waits to be written, plus the answers of the requests it counts.
    bound = settings.max_unwritten_bytes + settings.max_requests_in_progress * (answer + 1024)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), [], settings=settings) as harness:
        flooding = await raw_agent(harness.attach_command("tools"))
        async with flooding.process, harness.agent("tools") as other, anyio.create_task_group() as tasks:
            with anyio.fail_after(WAIT):
                await flooding.initialize()
            session = next(s for s in harness.gateway.sessions if s.agent.pid == flooding.process.pid)
            before = resident_bytes()

            async def flood() -> None:
                params = {"name": "echo", "arguments": {"text": "x" * answer}}
                request_id = 100
                while True:
                    request_id += 1
                    await flooding.ask(request_id, "tools/call", params)

            tasks.start_soon(flood)
            with anyio.fail_after(WAIT):
                while session.unwritten <= settings.max_unwritten_bytes:
                    await anyio.sleep(0.05)  # the gateway stops reading this agent once this is past the limit
            latencies: list[float] = []
            for _ in range(5):
                started = anyio.current_time()
                assert text(await other.call_tool("echo", {"text": "served"})) == "served"
                await harness.hub.broker.list_resources("tools", None)  # what the editor asks
                latencies.append(anyio.current_time() - started)
            assert sorted(latencies)[2] < 1.0, latencies
            assert session.unwritten <= bound
            assert session.calls.answering <= settings.max_requests_in_progress
            grown = resident_bytes() - before
            assert grown < bound + (16 << 20), f"the sidecar grew by {grown >> 20} MiB"
            tasks.cancel_scope.cancel()


async def test_two_thousand_folder_changes_of_ten_thousand_folders_leave_the_sidecar_answering_and_register_the_last(
    tmp_path: Path,
) -> None:
    storage = tmp_path / "s"
    current: list[str] = [str(tmp_path)]
    async with open_core(storage, Recorder(), settings=CoreSettings(roots_poll_interval=None)) as core:
        gateway = Gateway(core.hub, str(storage), folders=lambda: current)
        await core.tasks.start(gateway.serve)
        stalls: list[float] = []
        stop = anyio.Event()

        async def status() -> None:
            """What answers the editor's status, asked every 10 ms; the longest wait between answers is kept."""
            last = anyio.current_time()
            while not stop.is_set():
                await anyio.sleep(0.01)
                core.hub.statuses()
                now = anyio.current_time()
                stalls.append(now - last)
                last = now

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(status)
            names = [f"folder-{n}" for n in range(10_000)]
            for change in range(2000):
                base = f"{tmp_path}/change-{change}/"
                current = [base + name for name in names]
                gateway.folders_changed()
                await anyio.sleep(0)
            final = current

            def registered() -> bool:  # in a thread: the test's own reading must not hold up the loop measured
                entry = next(iter(registry.read_entries(registry.gateway_dir(storage))))
                return entry.folders == tuple(os.path.realpath(f) for f in final)

            with anyio.fail_after(WAIT):
                while not await anyio.to_thread.run_sync(registered):
                    await anyio.sleep(0.05)
            stop.set()
        assert max(stalls) < 1.0, f"the sidecar did not answer for {max(stalls):.2f} s"


async def test_a_call_without_progress_is_passed_as_a_frame_and_the_agents_cancellation_reaches_the_server(
    tmp_path: Path,
) -> None:
    storage, folder, record = workspace(tmp_path)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), []) as harness:
        agent = await raw_agent(harness.attach_command("tools"))
        async with agent.process:
            with anyio.fail_after(WAIT):
                await agent.initialize()
                await agent.ask(7, "tools/call", SLOW_CALL)
                slow = await record_line(record, lambda e: "slow" in e)
                assert str(slow["slow"]).startswith("host-bridge-pass-")
                cancel = {"requestId": 7, "reason": "no longer needed"}
                await agent.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
                cancelled = await record_line(record, lambda e: "cancelled" in e)
                assert cancelled["cancelled"] == slow["slow"]
                # Nothing answers the cancelled call: the next line is the answer to the next request.
                result = await agent.request(8, "tools/call", {"name": "echo", "arguments": {"text": "next"}})
                assert result["content"][0]["text"] == "next"
                assert await agent.leave() == 0


async def test_a_passed_call_past_the_request_timeout_is_answered_with_a_time_out_and_cancelled_at_the_server(
    tmp_path: Path,
) -> None:
    storage, folder, record = workspace(tmp_path)
    settings = GatewaySettings(request_timeout=1.0)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), [], settings=settings) as harness:
        agent = await raw_agent(harness.attach_command("tools"))
        async with agent.process:
            with anyio.fail_after(WAIT):
                await agent.initialize()
                await agent.ask(7, "tools/call", SLOW_CALL)
                answer = json.loads(await agent.line())
                assert answer["id"] == 7
                assert answer["error"]["code"] == types.REQUEST_TIMEOUT
                assert "timed out" in answer["error"]["message"]
                cancelled = await record_line(record, lambda e: "cancelled" in e)
                assert cancelled["reason"] == "timed out"
                result = await agent.request(8, "tools/call", {"name": "echo", "arguments": {"text": "next"}})
                assert result["content"][0]["text"] == "next"
                assert await agent.leave() == 0


async def test_a_passed_listing_over_the_item_limit_is_refused_with_the_limits_sentence(tmp_path: Path) -> None:
    storage, folder, record = workspace(tmp_path)
    server = tools_server(record, "--count", str(DEFAULT_MAX_PAGE_ITEMS + 1))
    async with gateway_hub(storage, folder, configs({"tools": server}), []) as harness, harness.agent("tools") as agent:
        with anyio.fail_after(WAIT), pytest.raises(MCPError) as refused:
            await agent.list_resources()
        assert refused.value.error.code == ANSWER_OVER_LIMIT
        assert f"over host_bridge's limit of {DEFAULT_MAX_PAGE_ITEMS} per page" in refused.value.error.message


async def test_a_passed_call_in_progress_when_its_server_restarts_is_answered_with_an_error_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    storage, folder, record = workspace(tmp_path)
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record)}), []) as harness:
        agent = await raw_agent(harness.attach_command("tools"))
        async with agent.process:
            with anyio.fail_after(WAIT):
                await agent.initialize()
                await agent.ask(7, "tools/call", SLOW_CALL)
                await record_line(record, lambda e: "slow" in e)
                harness.hub.connection("tools").restart()
                answer = json.loads(await agent.line())
                assert answer["id"] == 7
                assert answer["error"]["code"] == types.CONNECTION_CLOSED
                echo = {"name": "echo", "arguments": {"text": "after"}}
                await agent.ask(8, "tools/call", echo)
                # The restart's list_changed notifications may come first.
                while "id" not in (message := json.loads(await agent.line())):
                    assert message["method"].endswith("/list_changed")
                assert message["id"] == 8
                assert message["result"]["content"][0]["text"] == "after"
                assert await agent.leave() == 0
