"""ConsentFeature in process: how questions are batched and answered, with the real shell and core over pipes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from support.inprocess import in_process
from support.sidecar import options, state_of

from host_bridge.hosts.lsp.features.consent import ConsentFeature

pytestmark = pytest.mark.anyio


def workspace_with_servers(tmp_path: Path, count: int) -> Path:
    """A folder whose .mcp.json defines ``count`` servers (never started: they wait for trust)."""
    folder = tmp_path / "ws"
    folder.mkdir()
    servers = {f"s{n}": {"command": sys.executable, "args": ["-c", "pass"]} for n in range(count)}
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return folder


async def test_servers_of_one_workspace_file_are_asked_for_trust_in_one_message_and_a_no_holds_them_all(
    tmp_path: Path,
) -> None:
    folder = workspace_with_servers(tmp_path, 3)
    async with in_process() as sidecar:
        client = sidecar.client
        client.message_answer = "Don't trust"
        await client.start_session([folder], options(tmp_path, readWorkspaceConfig=True))
        await client.until(lambda: all(state_of(client.statuses, f"s{n}") == "stopped" for n in range(3)))
        feature = sidecar.server.get_feature(ConsentFeature)
        status = await client.status()
    [question] = client.message_requests
    assert "defines 3 MCP servers" in question.message
    assert [a.title for a in question.actions or []] == ["Don't trust", "Trust all 3 and start"]
    assert feature is not None and feature.prompts == 1
    assert all("did not trust" in (s.get("lastError") or "") for s in status["servers"])


async def test_an_editor_with_a_consent_ui_gets_the_whole_batch_in_one_ask_consent(tmp_path: Path) -> None:
    folder = workspace_with_servers(tmp_path, 2)
    answers: list[dict[str, Any]] = []

    def refuse(params: dict[str, Any]) -> dict[str, Any]:
        answers.append(params)
        return {"trust": False, "decisions": []}

    async with in_process() as sidecar:
        client = sidecar.client
        client.answer_consent = refuse
        await client.start_session([folder], options(tmp_path, readWorkspaceConfig=True), consent_ui=True)
        await client.until(lambda: all(state_of(client.statuses, f"s{n}") == "stopped" for n in range(2)))
    [ask] = answers
    assert ask["trustRequired"] is True
    assert [ask["server"]["id"], *(ref["id"] for ref in ask["batch"])] == ["s0", "s1"]
    assert [r["uri"] for r in ask["roots"]] == [folder.resolve().as_uri()]
    assert client.message_requests == []
