"""The editor's folders and the server configs in them: a burst of folder changes (docs/security.md E7) and config
problems the user is shown."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from support.folders import folder_uri, project
from support.records import until_recorded
from support.servers import roots_recorder
from support.sidecar import BridgeClient, allow_all, deny_all, options


def warnings_shown(client: BridgeClient) -> list[str]:
    return [m.message for m in client.messages if m.type == types.MessageType.Warning]


@pytest.mark.asyncio
@pytest.mark.requirement("E7")
async def test_e7_ten_folders_added_within_a_second_give_one_prompt_batch_and_one_list_changed(
    client: BridgeClient, tmp_path: Path
) -> None:
    first = project(tmp_path / "ws" / "first")
    burst = [project(tmp_path / "ws" / f"added{i}") for i in range(10)]
    record = tmp_path / "roots.jsonl"
    client.answer_consent = allow_all
    await client.start_session([first], options(tmp_path, {"rec": roots_recorder(record)}), consent_ui=True)
    before = await until_recorded(record, lambda answers: [folder_uri(first)] in answers)

    for folder in burst:
        client.add_folder(folder)
        # Paces the editor (not a wait for an event): 20 changes a second spread over 0.5 s, longer than the 0.2 s
        # debounce, so a fixed window would split the burst, with a 4x margin against a stall between two adds.
        await asyncio.sleep(0.05)

    everything = sorted([folder_uri(first), *(folder_uri(f) for f in burst)])
    after = await until_recorded(record, lambda answers: any(sorted(a) == everything for a in answers))
    assert len(client.asks) == 2, "the whole burst is asked about in one prompt"
    assert sorted(r["uri"] for r in client.asks[1]["roots"]) == sorted(folder_uri(f) for f in burst)
    assert len(after) == len(before) + 1, f"one list_changed for the burst, got roots answers {after[len(before) :]}"


@pytest.mark.asyncio
@pytest.mark.requirement("F1")
async def test_config_problems_are_shown_to_the_user_once_when_they_first_appear(
    client: BridgeClient, tmp_path: Path
) -> None:
    alpha, beta, gamma = (project(tmp_path / "ws" / name) for name in ("alpha", "beta", "gamma"))
    for broken in (alpha, gamma):
        (broken / ".vscode").mkdir()
        (broken / ".vscode" / "mcp.json").write_text('{"servers": {"half": {"command": ')
    record = tmp_path / "roots.jsonl"
    servers = {"rec": roots_recorder(record), "nocmd": {"type": "stdio"}}
    client.answer_consent = deny_all
    await client.start_session([alpha], options(tmp_path, servers, readWorkspaceConfig=True), consent_ui=True)

    await client.until(lambda: len(client.asks) == 1)
    (shown,) = warnings_shown(client)
    assert "initializationOptions.servers, server 'nocmd'" in shown and '"command"' in shown
    assert f"{alpha / '.vscode' / 'mcp.json'} is not valid JSON" in shown
    assert any("server 'nocmd'" in line for line in client.logs(""))

    client.add_folder(beta)
    await client.until(lambda: len(client.asks) == 2)
    assert len(warnings_shown(client)) == 1, "unchanged problems are not shown again when the folders change"

    client.add_folder(gamma)
    await client.until(lambda: len(client.asks) == 3)
    assert len(warnings_shown(client)) == 2
    assert str(gamma / ".vscode" / "mcp.json") in warnings_shown(client)[1]
    assert "nocmd" not in warnings_shown(client)[1] and str(alpha) not in warnings_shown(client)[1]
