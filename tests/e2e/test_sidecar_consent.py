"""Consent and trust as an editor sees them: prompts through ``window/showMessageRequest`` for an editor without
a consent UI, and ``hostBridge/askConsent`` prompts that time out, fail or answer about folders nobody asked about."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from support.folders import folder_uri
from support.records import recorded_roots, until_recorded
from support.servers import roots_recorder
from support.sidecar import WAIT, BridgeClient, EditorRefusal, allow_all, allow_only, another_sidecar, options

TRUST = "Trust and start"
DONT_TRUST = "Don't trust"


def define_in_workspace(folder: Path, servers: dict[str, Any]) -> None:
    (folder / ".vscode").mkdir()
    (folder / ".vscode" / "mcp.json").write_text(json.dumps({"servers": servers}))


def states(client: BridgeClient, server_id: str) -> list[str]:
    return [s["state"] for s in client.statuses if s["id"] == server_id]


def answer_by_action(answers: dict[str, str | None]) -> Any:
    """Answer each message request with the title given for the first of its actions that is in ``answers``."""

    def answer(params: types.ShowMessageRequestParams) -> str | None:
        titles = [action.title for action in params.actions or []]
        return next((answers[title] for title in titles if title in answers), None)

    return answer


# When the folders are asked about.


def held_until(gate: Path, server: dict[str, Any]) -> dict[str, Any]:
    """``server``'s config entry, started only once ``gate`` exists: a server slow to start (its handshake waits)."""
    wait = 'while [ ! -e "$0" ]; do sleep 0.05; done; exec "$@"'
    return {"type": "stdio", "command": "/bin/sh", "args": ["-c", wait, str(gate), server["command"], *server["args"]]}


@pytest.mark.asyncio
@pytest.mark.skipif(sys.platform == "win32", reason="the slow server is a POSIX shell loop")
async def test_folders_are_asked_about_while_the_server_starts_and_an_answer_given_then_is_its_first_roots(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, second = folders
    gate, record = tmp_path / "gate", tmp_path / "roots.jsonl"
    client.answer_consent = allow_only(folder_uri(first))
    servers = {"rec": held_until(gate, roots_recorder(record))}
    await client.start_session([first, second], options(tmp_path, servers), consent_ui=True)

    await client.until(lambda: len(client.asks) == 1)
    assert "running" not in states(client, "rec")
    assert {r["uri"] for r in client.asks[0]["roots"]} == {folder_uri(first), folder_uri(second)}
    gate.touch()

    answers = await until_recorded(record, lambda answers: len(answers) >= 1)
    assert answers[0] == [folder_uri(first)]


@pytest.mark.asyncio
async def test_a_server_whose_command_cannot_run_is_never_asked_about_while_one_that_starts_is(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, _ = folders
    gate, record = tmp_path / "gate", tmp_path / "roots.jsonl"
    client.answer_consent = allow_all
    servers = {
        "missing": {"type": "stdio", "command": str(tmp_path / "no-such-server"), "args": []},
        "rec": held_until(gate, roots_recorder(record)),
    }
    await client.start_session([first], options(tmp_path, servers), consent_ui=True)

    await client.until(lambda: "failed" in states(client, "missing") and len(client.asks) >= 1)
    assert [ask["server"]["id"] for ask in client.asks] == ["rec"]
    gate.touch()
    await client.until(lambda: "running" in states(client, "rec"))
    assert [ask["server"]["id"] for ask in client.asks] == ["rec"]


# Trust through window/showMessageRequest.


async def start_with_workspace_server(client: BridgeClient, tmp_path: Path, folder: Path, *more: Path) -> Path:
    """Start a session on ``folder`` (and ``more``) whose only server, ``rec``, is defined by ``folder``'s
    ``.vscode/mcp.json``; returns the file where ``rec`` records the roots it receives."""
    record = tmp_path / "roots.jsonl"
    define_in_workspace(folder, {"rec": roots_recorder(record)})
    await client.start_session([folder, *more], options(tmp_path, readWorkspaceConfig=True))
    return record


@pytest.mark.asyncio
@pytest.mark.requirement("F5")
async def test_trusting_through_a_message_request_starts_the_server_and_then_asks_which_folders_to_share(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, second = folders
    client.answer_message = answer_by_action({TRUST: TRUST, "Allow all 2 folders": "Allow all 2 folders"})
    record = await start_with_workspace_server(client, tmp_path, first, second)

    both = sorted([folder_uri(first), folder_uri(second)])
    answers = await until_recorded(record, lambda answers: any(sorted(a) == both for a in answers))
    assert all(sorted(a) in ([], both) for a in answers), answers
    trust, folders_prompt = client.message_requests
    assert [a.title for a in trust.actions or []] == [DONT_TRUST, TRUST]
    assert trust.message.startswith("MCP Host Bridge: a workspace file defines the MCP server 'rec'")
    assert ".vscode/mcp.json" in trust.message and f"Runs: {sys.executable} " in trust.message
    assert f"Working directory: {first}" in trust.message
    assert [a.title for a in folders_prompt.actions or []][:5] == [
        "Not now (none of the 2)",
        "Deny all 2",
        "Allow all 2 read only",
        "Allow all 2 for this session",
        "Allow all 2 folders",
    ]
    assert str(first) in folders_prompt.message and str(second) in folders_prompt.message
    assert states(client, "rec")[0] == "awaitingTrust"


@pytest.mark.asyncio
async def test_asking_about_each_folder_through_message_requests_shares_only_the_one_allowed(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, second = folders

    def answer(params: types.ShowMessageRequestParams) -> str | None:
        titles = [action.title for action in params.actions or []]
        if TRUST in titles:
            return TRUST
        if "Ask about each folder" in titles:
            return "Ask about each folder"
        return "Allow" if f"the folder {first}" in params.message else "Deny"

    client.answer_message = answer
    record = await start_with_workspace_server(client, tmp_path, first, second)

    await until_recorded(record, lambda answers: [folder_uri(first)] in answers)
    await client.until(lambda: len(client.message_requests) == 4)
    each = client.message_requests[2:]
    assert ["folder 1 of 2" in each[0].message, "folder 2 of 2" in each[1].message] == [True, True]
    assert [a.title for a in each[0].actions or []] == [
        "Not now",
        "Deny",
        "Allow read only for this session",
        "Allow read only",
        "Allow for this session",
        "Allow",
    ]
    status = (await client.request("hostBridge/status"))["servers"][0]
    assert [r["uri"] for r in status["sharedRoots"]] == [folder_uri(first)]


@pytest.mark.asyncio
@pytest.mark.requirement("F5")
async def test_refusing_trust_through_a_message_request_never_starts_the_server_nor_shares_anything(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    client.message_answer = DONT_TRUST
    record = await start_with_workspace_server(client, tmp_path, folders[0])

    await client.until(lambda: states(client, "rec")[-1:] == ["stopped"])
    status = (await client.request("hostBridge/status"))["servers"][0]
    assert status["state"] == "stopped" and "did not trust" in status["lastError"]
    assert status["sharedRoots"] == []
    assert set(states(client, "rec")) == {"awaitingTrust", "stopped"}
    assert len(client.message_requests) == 1, "no folder is asked about for a server that is not trusted"
    assert not record.exists(), "the server never ran"


@pytest.mark.asyncio
async def test_restarting_a_server_the_user_did_not_trust_asks_for_trust_again(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    """A refused trust is not a dead end: asking to start the server asks the question again."""
    client.message_answer = DONT_TRUST
    record = await start_with_workspace_server(client, tmp_path, folders[0])
    await client.until(lambda: states(client, "rec")[-1:] == ["stopped"])

    client.answer_message = answer_by_action({TRUST: TRUST, "Allow": "Allow"})
    await client.request("hostBridge/restartServer", {"server": "rec"})

    await until_recorded(record, lambda answers: [folder_uri(folders[0])] in answers)
    assert [r.actions[-1].title for r in client.message_requests if r.actions][:2] == [TRUST, TRUST]
    assert "awaitingTrust" in states(client, "rec")[2:] and states(client, "rec")[-1] == "running"


@pytest.mark.asyncio
@pytest.mark.requirement("F5")
async def test_dismissing_the_trust_message_request_leaves_the_server_awaiting_trust_and_unstarted(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    client.message_answer = None
    record = await start_with_workspace_server(client, tmp_path, folders[0])

    await client.until(lambda: bool(client.logs("[rec] the trust prompt was dismissed")))
    status = (await client.request("hostBridge/status"))["servers"][0]
    assert status["state"] == "awaitingTrust" and status["sharedRoots"] == []
    assert set(states(client, "rec")) == {"awaitingTrust"}
    assert len(client.message_requests) == 1
    assert not record.exists(), "the server never ran"


@pytest.mark.asyncio
async def test_restarting_a_server_that_waits_for_trust_asks_for_trust_again(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, _ = folders
    client.message_answer = None
    record = await start_with_workspace_server(client, tmp_path, first)
    await client.until(lambda: bool(client.logs("[rec] the trust prompt was dismissed")))

    client.answer_message = answer_by_action({TRUST: TRUST, "Allow": "Allow"})
    await client.request("hostBridge/restartServer", {"server": "rec"})

    await until_recorded(record, lambda answers: [folder_uri(first)] in answers)
    assert [r.actions[-1].title for r in client.message_requests if r.actions] == [TRUST, TRUST, "Allow"]


# hostBridge/askConsent that is not answered properly.


@pytest.mark.asyncio
async def test_a_consent_prompt_that_is_never_answered_times_out_shares_nothing_and_is_asked_again_next_session(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, _ = folders
    record = tmp_path / "roots.jsonl"
    never = asyncio.Event()

    async def never_answer(_params: dict[str, Any]) -> None:
        await never.wait()

    client.answer_consent = never_answer
    session = options(tmp_path, {"rec": roots_recorder(record)}, consentTimeout=0.5)
    await client.start_session([first], session, consent_ui=True)

    await client.until(lambda: bool(client.logs("[rec] the consent prompt timed out; nothing is shared")))
    status = (await client.request("hostBridge/status"))["servers"][0]
    assert status["sharedRoots"] == []
    assert all(answer == [] for answer in recorded_roots(record))
    assert len(client.asks) == 1

    async with another_sidecar() as later:
        later.answer_consent = lambda _params: {"decisions": []}
        await later.start_session([first], session, consent_ui=True)
        await later.until(lambda: len(later.asks) == 1)
        assert [r["uri"] for r in later.asks[0]["roots"]] == [folder_uri(first)]
    never.set()


@pytest.mark.asyncio
async def test_a_consent_prompt_that_times_out_is_withdrawn_from_the_editor_and_an_answer_after_that_shares_nothing(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    """The sidecar sends ``$/cancelRequest`` for a question it stopped waiting for; an Allow the user clicks later
    is dropped without an error."""
    first, _ = folders
    record = tmp_path / "roots.jsonl"
    withdrawn = asyncio.Event()

    async def allow_too_late(params: dict[str, Any]) -> dict[str, Any]:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            withdrawn.set()
        return allow_all(params)

    client.answer_consent = allow_too_late
    session = options(tmp_path, {"rec": roots_recorder(record)}, consentTimeout=0.5)
    await client.start_session([first], session, consent_ui=True)

    await asyncio.wait_for(withdrawn.wait(), WAIT)
    status = (await client.request("hostBridge/status"))["servers"][0]
    assert status["sharedRoots"] == []
    assert all(answer == [] for answer in recorded_roots(record))
    assert not [line for line in client.logs("") if "failed" in line.lower()], "the late answer was not an error"


@pytest.mark.asyncio
async def test_a_consent_prompt_answered_with_an_error_shares_nothing_and_records_nothing(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, _ = folders
    record = tmp_path / "roots.jsonl"

    def fail(_params: dict[str, Any]) -> None:
        raise EditorRefusal("the consent dialog crashed")

    client.answer_consent = fail
    session = options(tmp_path, {"rec": roots_recorder(record)})
    await client.start_session([first], session, consent_ui=True)

    await client.until(lambda: bool(client.logs("[rec] the editor did not answer the consent prompt")))
    status = (await client.request("hostBridge/status"))["servers"][0]
    assert status["sharedRoots"] == []
    assert all(answer == [] for answer in recorded_roots(record))

    async with another_sidecar() as later:
        later.answer_consent = lambda _params: {"decisions": []}
        await later.start_session([first], session, consent_ui=True)
        await later.until(lambda: len(later.asks) == 1)
        assert [r["uri"] for r in later.asks[0]["roots"]] == [folder_uri(first)]


@pytest.mark.asyncio
async def test_decisions_about_folders_that_were_not_asked_about_are_ignored_when_a_consent_answer_has_them(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, second = folders
    record = tmp_path / "roots.jsonl"
    client.answer_consent = lambda _params: {"decisions": [{"uri": folder_uri(second), "decision": "allow"}]}
    await client.start_session([first], options(tmp_path, {"rec": roots_recorder(record)}), consent_ui=True)

    await client.until(lambda: bool(client.logs(f"[rec] ignoring an answer about {folder_uri(second)}")))
    assert (await client.request("hostBridge/status"))["servers"][0]["sharedRoots"] == []

    client.answer_consent = lambda params: {
        "decisions": [{"uri": r["uri"], "decision": "deny"} for r in params["roots"]]
    }
    client.add_folder(second)
    await client.until(lambda: len(client.asks) == 2)
    assert [r["uri"] for r in client.asks[1]["roots"]] == [folder_uri(second)], "the stray allow was not recorded"
    assert all(answer == [] for answer in recorded_roots(record))
