"""Both protocol eras toward agents: an SDK client pinned to 2026-07-28 and one on the 2025-11-25 handshake, each over
a real ``host-bridge attach``, against a server of each era behind the hub."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from support.gateway_harness import gateway_hub
from support.hub_harness import WAIT, configs
from support.records import records
from support.servers import python_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MODERN, HANDSHAKE = "2026-07-28", "2025-11-25"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def private_data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gateway also registers in the default data dir: keep that inside the test."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


def tools_server(record: Path, era: str) -> dict[str, Any]:
    pin = ["--pin", HANDSHAKE] if era == HANDSHAKE else []
    return python_server("tools_server", *pin, "--record", str(record))


def text(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


@pytest.mark.parametrize("server_era", [MODERN, HANDSHAKE], ids=["server 2026", "server 2025"])
@pytest.mark.parametrize("agent_era", [MODERN, HANDSHAKE], ids=["agent 2026", "agent 2025"])
# The handshake-era agent subscribes with resources/subscribe, which the SDK marks deprecated for 2026-07-28.
@pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")
async def test_an_agent_of_either_era_discovers_calls_reads_and_follows_a_server_of_either_era(
    tmp_path: Path, agent_era: str, server_era: str
) -> None:
    storage, folder, record = tmp_path / "s", tmp_path / "ws", tmp_path / "record.jsonl"
    folder.mkdir()
    received: list[Any] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        nonlocal arrived
        received.append(message)
        arrived.set()
        arrived = anyio.Event()

    async def until(condition: Any) -> None:
        with anyio.fail_after(WAIT):
            while not condition():
                await arrived.wait()

    mode = agent_era if agent_era == MODERN else "legacy"
    async with gateway_hub(storage, folder, configs({"tools": tools_server(record, server_era)}), []) as harness:
        await harness.gateway.running("tools")
        assert harness.hub.connection("tools").protocol_version == server_era
        async with harness.agent("tools", mode=mode, message_handler=on_message) as agent:
            assert agent.protocol_version == agent_era
            if agent_era == MODERN:
                # server/discover answered with the server's own capabilities; its identity on every result.
                discovered = await agent.session.send_discover(MODERN)
                assert MODERN in discovered["supportedVersions"]
                assert discovered["capabilities"]["tools"]["listChanged"] is True
                assert discovered["_meta"][types.SERVER_INFO_META_KEY]["name"] == "tools-server"
            else:
                assert agent.server_info is not None and agent.server_info.name == "tools-server"
            tools = await agent.list_tools()
            assert {tool.name for tool in tools.tools} >= {"echo", "touch"}
            assert text(await agent.call_tool("echo", {"text": "across eras"})) == "across eras"
            listing = await agent.list_resources()
            assert [r.uri for r in listing.resources] == ["tools://res/0", "tools://res/1", "tools://res/2"]
            read = await agent.read_resource("tools://res/1")
            assert isinstance(read.contents[0], types.TextResourceContents)
            if agent_era == MODERN:
                async with agent.listen(resource_subscriptions=["tools://res/1"], resources_list_changed=True) as sub:
                    assert sub.honored.resource_subscriptions == ["tools://res/1"]
                    await agent.call_tool("touch", {"uri": "tools://res/1"})
                    events: list[Any] = []
                    with anyio.fail_after(WAIT):
                        async for event in sub:
                            events.append(event)
                            if ResourceUpdated(uri="tools://res/1") in events and ResourcesListChanged() in events:
                                break
            else:
                await agent.session.subscribe_resource("tools://res/1")  # pyright: ignore[reportDeprecated]
                await agent.call_tool("touch", {"uri": "tools://res/1"})
                await until(
                    lambda: (
                        any(isinstance(m, types.ResourceUpdatedNotification) for m in received)
                        and any(isinstance(m, types.ResourceListChangedNotification) for m in received)
                    )
                )
                updated = next(m for m in received if isinstance(m, types.ResourceUpdatedNotification))
                assert updated.params.uri == "tools://res/1"
        if server_era == HANDSHAKE:
            # The server was subscribed once, for the agent, and let go when it left.
            assert {"subscribe": "tools://res/1"} in records(record)
            assert {"unsubscribe": "tools://res/1"} in records(record)
