"""The gateway is not an exit: only ``attach`` processes the user started get in, never an MCP server's process.

A sandboxed fixture server (``tests/servers/sandbox_probe.py``, its ``gateway`` tool) tries its own sidecar's gateway
and another window's, with and without the secret; a server's process without the sandbox tries with the secret; and
a process of the user's that is no server tries without it. Real hub, real Landlock, real sockets.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from support.folders import folder_candidate
from support.gateway_harness import GatewayHarness, gateway_hub
from support.hub_harness import WAIT, configs
from support.sandbox import landlock_reason
from support.servers import python_server

from host_bridge.gateway import registry
from host_bridge.gateway.audit import read_gateway_audit

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

needs_landlock = pytest.mark.skipif(bool(landlock_reason()), reason=landlock_reason() or "Landlock")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def private_data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gateway also registers in the default data dir: keep that inside the test."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


def servers(probe_sandbox: str) -> dict[str, dict[str, Any]]:
    """The probe (sandboxed or not) and a second server it would like to reach (never sandboxed)."""
    return {
        "probe": {**python_server("sandbox_probe"), "sandbox": probe_sandbox},
        "tools": {**python_server("tools_server", "--pin", "2025-11-25"), "sandbox": "off"},
    }


async def probe(harness: GatewayHarness, tool: str, **arguments: Any) -> Any:
    await harness.gateway.running("probe")
    result = await harness.hub.client("probe").call_tool(tool, arguments)
    content = result.content[0]
    assert isinstance(content, types.TextContent) and not result.is_error, content
    return json.loads(content.text)


def refused(outcome: Mapping[str, Any]) -> bool:
    """The kernel refused the connection, or the gateway refused the hello; either way no MCP session began."""
    answer = outcome["answer"]
    kernel = outcome["connect"] is not None
    gateway = answer is not None and answer.get("ok") is False
    return (kernel or gateway) and outcome["initialized"] is None


def entry_file(storage: Path) -> Path:
    return registry.gateway_dir(storage) / f"{os.getpid()}.json"


@pytest.mark.requirement("I1", "H3")
@needs_landlock
async def test_a_sandboxed_server_cannot_use_its_own_sidecars_gateway_with_or_without_the_secret(
    tmp_path: Path,
) -> None:
    storage, folder = tmp_path / "s", tmp_path / "ws"
    folder.mkdir()
    entries = configs(servers("enforce"))
    async with gateway_hub(storage, folder, entries, [folder_candidate(folder)], sandbox="enforce") as harness:
        harness.allow("probe", folder)
        entry = harness.entry()
        assert entry.secret
        # The secret lives where no sandbox policy reaches: the kernel refuses the server its file.
        [read] = await probe(harness, "probe", read=[str(entry_file(storage))])
        assert read["errno"] == errno.EACCES
        launch = harness.hub.connection("probe").launch
        assert launch is not None and launch.policy is not None and launch.policy.enforced
        assert not launch.policy.allows(entry_file(storage))
        without = await probe(harness, "gateway", address=entry.socket, server="tools")
        assert refused(without), without
        # Even a secret that leaked (a folder holding the storage directory shared with it) does not let it in.
        leaked = await probe(harness, "gateway", address=entry.socket, server="tools", secret=entry.secret)
        assert refused(leaked), leaked
        async with harness.agent("tools") as agent:
            assert agent.server_info is not None and agent.server_info.name == "tools-server"


@pytest.mark.requirement("I1")
@needs_landlock
async def test_a_sandboxed_server_cannot_use_another_windows_gateway(tmp_path: Path) -> None:
    storage, folder = tmp_path / "s", tmp_path / "ws"
    other_storage, other_folder = tmp_path / "other-s", tmp_path / "other-ws"
    folder.mkdir()
    other_folder.mkdir()
    entries = configs(servers("enforce"))
    other_entries = configs({"tools": servers("off")["tools"]})
    async with (
        gateway_hub(other_storage, other_folder, other_entries, []) as other,
        gateway_hub(storage, folder, entries, [folder_candidate(folder)], sandbox="enforce") as harness,
    ):
        harness.allow("probe", folder)
        await other.gateway.running("tools")
        other_entry = other.entry()
        [read] = await probe(harness, "probe", read=[str(entry_file(other_storage))])
        assert read["errno"] == errno.EACCES
        outcome = await probe(harness, "gateway", address=other_entry.socket, server="tools")
        assert refused(outcome), outcome
        async with other.agent("tools") as agent:
            assert agent.server_info is not None and agent.server_info.name == "tools-server"


@pytest.mark.requirement("I1", "H3")
async def test_a_servers_own_process_is_refused_even_with_the_secret_and_audited(tmp_path: Path) -> None:
    storage, folder = tmp_path / "s", tmp_path / "ws"
    folder.mkdir()
    async with gateway_hub(storage, folder, configs(servers("off")), []) as harness:
        entry = harness.entry()
        outcome = await probe(harness, "gateway", address=entry.socket, server="tools", secret=entry.secret)
        assert outcome["connect"] is None, outcome
        assert outcome["answer"]["ok"] is False and outcome["answer"]["reason"] == "refused"
        assert "was started by an MCP server" in outcome["answer"]["error"]
        assert outcome["initialized"] is None
        started = await probe(harness, "started_with")
    [audited] = [e for e in read_gateway_audit(str(storage)) if e.event == "refused"]
    assert audited.server == "tools" and audited.agent is not None and audited.agent.pid == started["pid"]
    assert audited.reason is not None and f"process {started['pid']} was started by an MCP server" in audited.reason


async def hello_answer(harness: GatewayHarness, hello: Mapping[str, Any]) -> dict[str, Any]:
    """Connect as a process of the user that is no server, send ``hello``, return the gateway's answer."""
    stream = await anyio.connect_unix(harness.address)
    async with stream:
        await stream.send(json.dumps(hello).encode() + b"\n")
        answer = b""
        with anyio.fail_after(WAIT):
            while b"\n" not in answer:
                answer += await stream.receive()
    return json.loads(answer)


@pytest.mark.requirement("H3")
async def test_a_hello_without_the_sidecars_secret_or_with_another_is_refused_with_a_sentence(tmp_path: Path) -> None:
    storage, folder = tmp_path / "s", tmp_path / "ws"
    folder.mkdir()
    async with gateway_hub(storage, folder, configs({"tools": servers("off")["tools"]}), []) as harness:
        await harness.gateway.running("tools")
        good = harness.hello("tools")
        for hello in ({**good, "secret": None}, {**good, "secret": "x" + good["secret"][1:]}):
            answer = await hello_answer(harness, hello)
            assert answer["ok"] is False and answer["reason"] == "refused"
            assert "did not present this sidecar's secret" in answer["error"]
            assert "`host-bridge attach`" in answer["error"]
        assert (await hello_answer(harness, good))["ok"] is True
    events = [(e.event, e.server) for e in read_gateway_audit(str(storage))]
    assert events[:2] == [("refused", "tools"), ("refused", "tools")]
    assert ("attached", "tools") in events
