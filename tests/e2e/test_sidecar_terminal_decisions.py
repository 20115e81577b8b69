"""Decisions made in a terminal reach a running sidecar (docs/editors.md "Any other editor"): an editor that cannot
ask is told the exact ``host-bridge consent`` command, and that command, trust given from a terminal, and ``forget``
all take effect in the running sidecar without a restart."""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from support.folders import folder_uri
from support.servers import resources_server
from support.sidecar import WAIT, BridgeClient, EditorRefusal, allow_all, options, state_of
from support.terminal import environment, host_bridge


def terminal(*args: str) -> subprocess.CompletedProcess[str]:
    """``host-bridge ARGS`` as a user runs it in a terminal (no input)."""
    return subprocess.run(
        host_bridge(*args),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
        env=environment(),
        check=False,
    )


async def in_terminal(*args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(terminal, *args)


def not_handled(params: types.ShowMessageRequestParams) -> str | None:
    """What an editor without ``window/showMessageRequest`` answers (Helix): -32601."""
    raise EditorRefusal("Method not found: window/showMessageRequest", -32601)


def shared_uris(client: BridgeClient, server_id: str) -> list[str]:
    statuses = [s for s in client.statuses if s["id"] == server_id]
    return [root["uri"] for root in statuses[-1].get("sharedRoots", [])] if statuses else []


def listed(storage: Path) -> list[dict[str, Any]]:
    done = terminal("consent", "list", "--all", "--json", "--storage-dir", str(storage))
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


async def told_allow_command(client: BridgeClient, folder: Path) -> tuple[str, list[str]]:
    """The one notice naming a ``host-bridge consent allow`` command, and that command (which must name ``folder``)."""
    await client.until(lambda: any("host-bridge consent allow" in m.message for m in client.messages))
    [told] = [m for m in client.messages if "host-bridge consent allow" in m.message]
    command = shlex.split(told.message.split("run in a terminal: ", 1)[1])
    assert command[:3] == ["host-bridge", "consent", "allow"] and str(folder.resolve()) in command
    return told.message, command


async def run_and_see_it_shared(client: BridgeClient, command: list[str], folder: Path) -> None:
    """Run the notice's ``command`` in a terminal; the running sidecar then shares ``folder`` with ``res``."""
    done = await in_terminal(*command[1:])
    assert done.returncode == 0, done.stderr
    await client.until(lambda: shared_uris(client, "res") == [folder_uri(folder)])


@pytest.mark.requirement("G6", "G1")
@pytest.mark.asyncio
async def test_an_editor_that_cannot_ask_is_told_the_command_and_that_command_shares_the_folder_at_once(
    client: BridgeClient, tmp_path: Path
) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    client.answer_message = not_handled
    await client.start_session([folder], options(tmp_path, {"res": resources_server()}))

    told, command = await told_allow_command(client, folder)
    assert "'res'" in told and "nothing is shared" in told
    assert command[-2:] == ["--storage-dir", str(tmp_path / "storage")]
    assert shared_uris(client, "res") == []

    await run_and_see_it_shared(client, command, folder)
    assert len(client.message_requests) == 1, "the folder is not asked about again"


def consent_prompt_failed(_params: dict[str, Any]) -> dict[str, Any]:
    """What VS Code answers ``hostBridge/askConsent`` with when its question could not be shown: an error."""
    raise EditorRefusal("the consent dialog could not be shown")


@pytest.mark.requirement("G6", "G1")
@pytest.mark.asyncio
async def test_an_editor_whose_consent_question_fails_is_told_the_command_and_that_command_shares_the_folder(
    client: BridgeClient, tmp_path: Path
) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    client.answer_consent = consent_prompt_failed
    await client.start_session([folder], options(tmp_path, {"res": resources_server()}), consent_ui=True)

    told, command = await told_allow_command(client, folder)
    assert "could not ask" in told and "'res'" in told and "nothing is shared" in told
    assert shared_uris(client, "res") == []

    await run_and_see_it_shared(client, command, folder)
    assert len(client.asks) == 1, "the folder is not asked about again"


@pytest.mark.requirement("G6")
@pytest.mark.asyncio
async def test_a_consent_question_nobody_answers_in_time_names_the_command_once(
    client: BridgeClient, tmp_path: Path
) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    never = asyncio.Event()

    async def unanswered(_params: dict[str, Any]) -> dict[str, Any] | None:
        await never.wait()
        return None

    client.answer_consent = unanswered
    session = options(tmp_path, {"res": resources_server()}, consentTimeout=0.5)
    await client.start_session([folder], session, consent_ui=True)
    await client.until(lambda: any("host-bridge consent allow" in m.message for m in client.messages))

    told = [m for m in client.messages if "host-bridge consent allow" in m.message]
    assert len(told) == 1 and str(folder.resolve()) in told[0].message
    assert shared_uris(client, "res") == []


@pytest.mark.requirement("G1")
@pytest.mark.asyncio
async def test_forget_in_a_terminal_makes_the_running_sidecar_ask_again(client: BridgeClient, tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    storage = tmp_path / "storage"
    client.answer_consent = allow_all
    await client.start_session([folder], options(tmp_path, {"res": resources_server()}), consent_ui=True)
    await client.until(lambda: shared_uris(client, "res") == [folder_uri(folder)])
    [record] = [r for r in listed(storage) if r["kind"] == "decision"]

    client.answer_consent = lambda _params: None
    done = await in_terminal("consent", "forget", record["handle"], "--storage-dir", str(storage))

    assert done.returncode == 0, done.stderr
    assert "forgot allow for 'res'" in done.stderr
    await client.until(lambda: len(client.asks) == 2)
    assert [r["uri"] for r in client.asks[1]["roots"]] == [folder_uri(folder)]
    await client.until(lambda: shared_uris(client, "res") == [])


@pytest.mark.asyncio
async def test_trust_given_in_a_terminal_starts_the_workspace_server_waiting_for_it(
    client: BridgeClient, tmp_path: Path
) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    storage = tmp_path / "storage"
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"repo": resources_server()}}))
    client.message_answer = None  # dismissed: it keeps waiting for trust
    await client.start_session([folder], options(tmp_path, readWorkspaceConfig=True))
    await client.until(
        lambda: len(client.message_requests) == 1 and state_of(client.statuses, "repo") == "awaitingTrust"
    )
    [running] = [r for r in listed(storage) if r["kind"] == "server"]
    assert running["serverId"] == "repo" and running["workspaceDefined"] is True

    done = await in_terminal("consent", "trust", "repo", "--storage-dir", str(storage))

    assert done.returncode == 0, done.stderr
    await client.until(lambda: state_of(client.statuses, "repo") == "running")
    assert (client.message_requests[0].actions or [])[0].title == "Don't trust"


@pytest.mark.requirement("G7")
@pytest.mark.asyncio
async def test_a_server_described_with_another_command_line_is_refused_and_its_running_handle_named(
    client: BridgeClient, tmp_path: Path
) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    storage = tmp_path / "storage"
    client.answer_consent = lambda _params: None
    await client.start_session([folder], options(tmp_path, {"raw": resources_server()}), consent_ui=True)
    await client.until(lambda: len(client.asks) == 1)
    [running] = [r for r in listed(storage) if r["kind"] == "server"]

    done = await in_terminal(
        "consent", "deny", "--server", "raw=python3 -m something", str(folder), "--storage-dir", str(storage)
    )

    assert done.returncode == 2
    assert running["handle"] in done.stderr
    assert [r for r in listed(storage) if r["kind"] == "decision"] == []
