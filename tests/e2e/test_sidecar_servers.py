"""What MCP servers need and send, through the real sidecar (``python -m host_bridge serve`` over raw stdio): the
environment they start with, answers no JSON encoder of the SDK would write, and answers with millions of items
(security matrix H2)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from test_sidecar_faults import REPO, raw_sidecar, resources_server, state_of

RAW_FAULTS = REPO / "tests" / "servers" / "raw_faults.py"
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
