"""The sidecar over stdio, as an editor drives it: start-up, consent, folder changes, resources, going away."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from support.folders import folder_uri
from support.processes import alive, servers_of
from support.servers import peer_server
from support.sidecar import BridgeClient, allow_only, options

UPDATED = "[fs] Updated allowed directories from MCP roots: "


def status_of(client: BridgeClient, server_id: str) -> dict[str, Any] | None:
    matching = [s for s in client.statuses if s["id"] == server_id]
    return matching[-1] if matching else None


def state_of(client: BridgeClient, server_id: str) -> str | None:
    status = status_of(client, server_id)
    return status["state"] if status else None


def shared(client: BridgeClient, server_id: str) -> list[str]:
    status = status_of(client, server_id)
    return [r["uri"] for r in status["sharedRoots"]] if status else []


async def start_sharing_only_the_first(client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]) -> None:
    """Start a session on both folders with server-filesystem as ``fs``; the consent UI shares only the first."""
    client.answer_consent = allow_only(folder_uri(folders[0]))
    servers = {"fs": peer_server("server-filesystem")}
    await client.start_session(list(folders), options(tmp_path, servers), consent_ui=True)


@pytest.mark.asyncio
async def test_initialize_answers_and_status_lists_the_workspace_candidates(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, second = folders
    result = await client.start_session([first, second], options(tmp_path, bogusOption=1, consentTimeout=-5))
    assert result.server_info is not None and result.server_info.name == "host-bridge"

    status = await client.status()

    assert status["servers"] == []
    uris = {c["uri"]: c for c in status["candidates"]}
    assert set(uris) == {folder_uri(first), folder_uri(second)}
    assert "workspaceFolder" in uris[folder_uri(first)]["kinds"]
    assert "pyproject.toml" in uris[folder_uri(first)]["markers"]
    await client.until(lambda: any("consentTimeout is invalid" in m for m in client.logs("")))


@pytest.mark.asyncio
async def test_consent_ui_allowing_one_folder_shares_exactly_that_folder_with_server_filesystem(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, second = folders
    await start_sharing_only_the_first(client, tmp_path, folders)

    await client.until(lambda: client.logs(UPDATED)[-1:] == [UPDATED + "1 valid directories"])
    await client.until(lambda: shared(client, "fs") == [folder_uri(first)])

    (ask,) = client.asks
    assert ask["server"]["id"] == "fs" and ask["trustRequired"] is False
    assert {r["uri"] for r in ask["roots"]} == {folder_uri(first), folder_uri(second)}
    status = await client.request("hostBridge/status")
    (fs,) = status["servers"]
    assert fs["state"] == "running"
    assert [r["uri"] for r in fs["sharedRoots"]] == [folder_uri(first)]


@pytest.mark.asyncio
@pytest.mark.requirement("A15")
async def test_a_shared_folder_that_is_deleted_is_withdrawn_and_the_user_is_shown_why(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, _ = folders
    await start_sharing_only_the_first(client, tmp_path, folders)
    first_uri = folder_uri(first)
    await client.until(lambda: shared(client, "fs") == [first_uri])

    shutil.rmtree(first)

    await client.until(lambda: shared(client, "fs") == [])
    await client.until(lambda: any("no longer exists" in m.message for m in client.messages))
    (shown,) = [m for m in client.messages if "no longer exists" in m.message]
    assert shown.type == types.MessageType.Warning
    assert first_uri in shown.message


@pytest.mark.asyncio
async def test_without_consent_ui_a_message_request_answered_deny_shares_nothing(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, second = folders
    client.message_answer = "Deny all 2"
    await client.start_session([first, second], options(tmp_path, {"fs": peer_server("server-filesystem")}))

    await client.until(lambda: len(client.message_requests) == 1 and state_of(client, "fs") == "running")
    (request,) = client.message_requests
    assert [a.title for a in request.actions or []] == [
        "Not now (none of the 2)",
        "Deny all 2",
        "Allow all 2 read only",
        "Allow all 2 for this session",
        "Allow all 2 folders",
        "Ask about each folder",
    ], "one click never shares several folders unless its title says so, and the first (Enter) shares nothing"
    assert request.message.startswith("MCP Host Bridge: share with the MCP server 'fs' these 2 folders?")
    assert f"(1) {first}" in request.message and f"(2) {second}" in request.message
    assert "server-filesystem" in request.message and "Defined in: your settings" in request.message
    assert request.type == types.MessageType.Info

    await client.request("hostBridge/restartServer", {"server": "fs"})
    started = "[fs] Secure MCP Filesystem Server running on stdio"
    await client.until(lambda: len(client.logs(started)) == 2 and state_of(client, "fs") == "running")
    status = await client.request("hostBridge/status")
    assert status["servers"][0]["sharedRoots"] == []
    assert client.logs(UPDATED) == []
    assert len(client.message_requests) == 1, "denied folders are never asked about again"


@pytest.mark.asyncio
@pytest.mark.requirement("E7")
async def test_a_folder_added_by_the_editor_is_asked_about_and_reaches_the_server(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, second = folders
    client.answer_consent = lambda params: {
        "decisions": [{"uri": r["uri"], "decision": "allowSession"} for r in params["roots"]]
    }
    await client.start_session([first], options(tmp_path, {"fs": peer_server("server-filesystem")}), consent_ui=True)
    await client.until(lambda: client.logs(UPDATED)[-1:] == [UPDATED + "1 valid directories"])

    for _ in range(5):
        client.add_folder(second)

    await client.until(lambda: client.logs(UPDATED)[-1:] == [UPDATED + "2 valid directories"])
    assert len(client.asks) == 2
    assert [r["uri"] for r in client.asks[1]["roots"]] == [folder_uri(second)]
    await client.until(lambda: sorted(shared(client, "fs")) == sorted([folder_uri(first), folder_uri(second)]))


@pytest.mark.asyncio
async def test_server_everything_resources_templates_completion_and_blob_come_through(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    await client.start_session([folders[0]], options(tmp_path, {"everything": peer_server("server-everything")}))
    await client.until(lambda: state_of(client, "everything") == "running")

    page = await client.request("hostBridge/listResources", {"server": "everything"})
    assert page["items"] and all(item["server"] == "everything" for item in page["items"])
    aggregated = await client.request("hostBridge/listResources", {})
    assert [i["uri"] for i in aggregated["items"]] == [i["uri"] for i in page["items"]]

    templates = (await client.request("hostBridge/listResourceTemplates", {"server": "everything"}))["items"]
    blob_template = next(t for t in templates if "blob" in t["uriTemplate"])
    assert blob_template["variables"] == ["resourceId"]

    completion = await client.request(
        "hostBridge/completeArgument",
        {"server": "everything", "uriTemplate": blob_template["uriTemplate"], "name": "resourceId", "value": "1"},
    )
    assert isinstance(completion["values"], list)

    document = await client.request("hostBridge/readResource", {"server": "everything", "uri": page["items"][0]["uri"]})
    assert document["contents"] and document["uri"] == page["items"][0]["uri"]

    blob = await client.request(
        "hostBridge/readResource",
        {"server": "everything", "uriTemplate": blob_template["uriTemplate"], "arguments": {"resourceId": "1"}},
    )
    (content,) = blob["contents"]
    assert blob["uri"].endswith("/1") and content["blob"]

    as_list = await client.request(
        "hostBridge/readResource",
        {"server": "everything", "uriTemplate": blob_template["uriTemplate"], "arguments": {"resourceId": ["1"]}},
    )
    assert as_list["uri"] == blob["uri"]  # a one-item list expands like its item
    with pytest.raises(JsonRpcException) as not_strings:
        await client.request(
            "hostBridge/readResource",
            {"server": "everything", "uriTemplate": blob_template["uriTemplate"], "arguments": {"resourceId": [1]}},
        )
    assert not_strings.value.code == -32602

    with pytest.raises(JsonRpcException) as unknown:
        await client.request("hostBridge/readResource", {"server": "nope", "uri": "demo://x"})
    assert unknown.value.code == -32602 and "'nope'" in unknown.value.message

    with pytest.raises(JsonRpcException) as missing:
        await client.request("hostBridge/readResource", {"uri": "demo://x"})
    assert missing.value.code == -32602 and "server" in missing.value.message


@pytest.mark.asyncio
@pytest.mark.requirement("A3")
async def test_set_consent_shares_a_folder_and_rejects_a_bad_uri(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, _ = folders
    await client.start_session([first], options(tmp_path, {"fs": peer_server("server-filesystem")}), consent_ui=True)
    await client.until(lambda: len(client.asks) == 1 and state_of(client, "fs") == "running")

    await client.request("hostBridge/setConsent", {"server": "fs", "uri": folder_uri(first), "decision": "allow"})
    await client.until(lambda: client.logs(UPDATED)[-1:] == [UPDATED + "1 valid directories"])

    with pytest.raises(JsonRpcException) as bad:
        await client.request("hostBridge/setConsent", {"server": "fs", "uri": "http://x/y", "decision": "allow"})
    assert bad.value.code == -32602


@pytest.mark.asyncio
@pytest.mark.requirement("E1")
async def test_end_of_input_stops_every_mcp_server_and_exits_zero(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    await client.start_session([folders[0]], options(tmp_path, {"fs": peer_server("server-filesystem")}))
    await client.until(lambda: state_of(client, "fs") == "running")
    sidecar = client._server  # pyright: ignore[reportPrivateUsage]
    assert sidecar is not None and sidecar.stdin is not None
    mcp_children = servers_of(sidecar.pid)
    assert mcp_children, "server-filesystem runs as a child of the sidecar"

    sidecar.stdin.close()
    async with asyncio.timeout(5):
        returncode = await sidecar.wait()

    assert returncode == 0
    assert not [pid for pid in mcp_children if alive(pid)]


@pytest.mark.asyncio
@pytest.mark.requirement("A18", "F5")
async def test_a_workspace_defined_server_starts_only_once_trusted_and_gets_the_allowed_folder(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, _ = folders
    (first / ".vscode").mkdir()
    (first / ".vscode" / "mcp.json").write_text(json.dumps({"servers": {"fs": peer_server("server-filesystem")}}))
    client.answer_consent = lambda params: {
        "trust": True,
        "decisions": [{"uri": r["uri"], "decision": "allow"} for r in params["roots"]],
    }
    await client.start_session([first], {**options(tmp_path), "readWorkspaceConfig": True}, consent_ui=True)

    await client.until(lambda: client.logs(UPDATED)[-1:] == [UPDATED + "1 valid directories"])
    assert client.asks[0]["trustRequired"] is True
    assert client.asks[0]["server"]["source"].endswith("/.vscode/mcp.json")
    assert next(s["state"] for s in client.statuses if s["id"] == "fs") == "awaitingTrust"
    await client.until(lambda: shared(client, "fs") == [folder_uri(first)])


@pytest.mark.asyncio
async def test_an_error_answer_is_not_reported_as_a_failure_in_the_editors_log(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    await client.start_session([folders[0]], options(tmp_path, {}))
    with pytest.raises(JsonRpcException) as unknown:
        await client.request("hostBridge/readResource", {"server": "nope", "uri": "demo://x"})
    assert unknown.value.code == -32602
    # Messages arrive in order: anything logged about the failed request precedes this answer.
    await client.request("hostBridge/status", {})
    errors = [m.message for m in client.log_messages if m.type == types.MessageType.Error]
    assert errors == []


@pytest.mark.asyncio
@pytest.mark.requirement("B5", "G2")
async def test_an_allow_that_cannot_be_saved_holds_for_the_session_and_the_user_is_told(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    storage = tmp_path / "storage"
    storage.mkdir()
    (tmp_path / "elsewhere.json").write_text("{}")
    (storage / "consent.json").symlink_to(tmp_path / "elsewhere.json")
    await client.start_session([folders[0]], options(tmp_path, {"fs": peer_server("server-filesystem")}))
    await client.until(lambda: state_of(client, "fs") == "running")

    result = await client.request(
        "hostBridge/setConsent", {"server": "fs", "uri": folder_uri(folders[0]), "decision": "allow"}
    )

    assert (result["saved"], result["applied"]) == (False, "allowSession")
    assert "could not be saved" in result["message"] and "for this session only" in result["message"]
    await client.until(lambda: len(client.logs(UPDATED)) >= 1)
    shown = [m.message for m in client.messages if m.type == types.MessageType.Warning]
    assert any("for this session only" in message and "symbolic link" in message for message in shown), shown
    assert (tmp_path / "elsewhere.json").read_text() == "{}"
