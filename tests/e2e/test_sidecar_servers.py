"""What MCP servers need and send, through the real sidecar (``python -m host_bridge serve`` over raw stdio): the
environment they start with, answers no JSON encoder of the SDK would write, and answers with millions of items
(docs/security.md H2)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import anyio
import pytest
from support.paths import SERVERS
from support.processes import reset_peak, status_kib
from support.raw_sidecar import raw_sidecar
from support.servers import resources_server
from support.sidecar import state_of

RAW_FAULTS = SERVERS / "raw_faults.py"
ENVIRONMENT = {"HTTPS_PROXY": "http://proxy.invalid:3128", "NODE_EXTRA_CA_CERTS": "/etc/ssl/certs/corporate.pem"}


@pytest.mark.asyncio
async def test_a_stdio_server_inherits_the_editors_environment_with_its_config_env_over_it(tmp_path: Path) -> None:
    server = resources_server() | {"env": {"NODE_EXTRA_CA_CERTS": "/from/the/config.pem", "IGNORED": None}}
    async with raw_sidecar(env=ENVIRONMENT) as sidecar:
        await sidecar.handshake(tmp_path, {"res": server})
        await sidecar.until(lambda: state_of(sidecar.statuses(), "res") == "running")

        async def variable(name: str) -> str:
            answer = await sidecar.request(
                "hostBridge/readResource", {"server": "res", "uri": f"test://control/env/{name}"}
            )
            return answer["result"]["contents"][0]["text"]

        assert await variable("HTTPS_PROXY") == "http://proxy.invalid:3128"
        assert await variable("NODE_EXTRA_CA_CERTS") == "/from/the/config.pem"
        assert await variable("IGNORED") == "(unset)"


@pytest.mark.asyncio
async def test_answers_holding_lone_surrogates_reach_the_editor_escaped_as_valid_json(tmp_path: Path) -> None:
    servers = {"raw": {"type": "stdio", "command": sys.executable, "args": [str(RAW_FAULTS), "lone-surrogate"]}}
    async with raw_sidecar() as sidecar:
        await sidecar.handshake(tmp_path, servers)
        await sidecar.until(lambda: state_of(sidecar.statuses(), "raw") == "running")

        with anyio.fail_after(5):
            page = await sidecar.request("hostBridge/listResources", {"server": "raw"})
            read = await sidecar.request("hostBridge/readResource", {"server": "raw", "uri": "test://raw/1"})

        assert [item["name"] for item in page["result"]["items"]] == ["lone \ud800 surrogate"]
        texts = [content["text"] for content in read["result"]["contents"]]
        assert texts == ["short \udc00 text", "\udc00" + "y" * 70_000]
    # close() parsed every frame the sidecar wrote as JSON: the surrogates travelled as escapes.


@pytest.mark.asyncio
@pytest.mark.requirement("H2")
async def test_a_page_and_a_read_of_200_000_items_are_refused_clearly_while_the_sidecar_keeps_answering(
    tmp_path: Path,
) -> None:
    async with raw_sidecar() as sidecar:
        await sidecar.handshake(tmp_path, {"many": resources_server("--fault", "many-items", "--many", "200000")})
        await sidecar.until(lambda: state_of(sidecar.statuses(), "many") == "running")
        before = reset_peak(sidecar.pid)

        listing = asyncio.ensure_future(sidecar.request("hostBridge/listResources", {"server": "many"}))
        reading = asyncio.ensure_future(
            sidecar.request("hostBridge/readResource", {"server": "many", "uri": "test://many/1"})
        )
        answered_during_attack = 0
        with anyio.fail_after(30):
            while not (listing.done() and reading.done()):
                assert "result" in await sidecar.request("hostBridge/status", {})
                answered_during_attack += not (listing.done() and reading.done())
        growth = (status_kib(sidecar.pid, "VmHWM") - before) / 1024

        page, read = listing.result()["error"], reading.result()["error"]
        assert page["message"] == (
            "MCP server 'many': its resources/list answer held 200000 resources in one page, over host_bridge's "
            "limit of 10000 per page; the page was refused (the server must split its list into pages with nextCursor)"
        )
        assert read["message"].startswith(
            "MCP server 'many': its resources/read answer held 200000 content items, over host_bridge's limit of "
            "1000 per read"
        )
        # No absolute time (the machine is shared): status is answered while the oversized answers are handled.
        assert answered_during_attack >= 1, "hostBridge/status waited for the attack to end"
        assert growth < 200, f"the sidecar's memory grew by {growth:.0f} MiB"
        assert state_of(sidecar.statuses(), "many") == "running"
