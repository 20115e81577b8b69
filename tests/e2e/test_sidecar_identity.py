"""Consent that means exactly what the user said (issue 11), through real sidecars, real server-filesystem and real
files: one identity per server, one truth across windows, decisions that cannot be saved, live config files,
retargeted symlinks and folders visible through a shared parent (docs/security.md G1–G4, A9, B7)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from support.consent_store import lock_held
from support.folders import folder_uri
from support.records import recorded_roots, until_recorded
from support.servers import peer_server, roots_recorder
from support.sidecar import WAIT, BridgeClient, allow_all, another_sidecar, options, state_of

from host_bridge.uris import path_to_uri

UPDATED = "Updated allowed directories from MCP roots: "
"""What server-filesystem logs (to stderr, forwarded to the editor's log) each time it takes in a roots list."""


def updates(client: BridgeClient, server_id: str) -> list[str]:
    """server-filesystem's own reports of how many directories it now allows."""
    prefix = f"[{server_id}] {UPDATED}"
    return [line.removeprefix(prefix).split()[0] for line in client.logs(prefix)]


def status_of(client: BridgeClient, server_id: str) -> dict[str, Any]:
    return next(s for s in reversed(client.statuses) if s["id"] == server_id)


@pytest.mark.asyncio
@pytest.mark.requirement("G4")
async def test_two_servers_with_the_same_command_are_asked_separately_and_one_answer_never_covers_the_other(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    """G4: ``a`` denies everything, ``b`` allows alpha; server-filesystem ``a`` must never report a folder."""
    alpha, _ = folders

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        if params["server"]["id"] == "a":
            return {"decisions": [{"uri": r["uri"], "decision": "deny"} for r in params["roots"]]}
        return {"decisions": [{"uri": folder_uri(alpha), "decision": "allow"}]}

    client.answer_consent = answer
    same = peer_server("server-filesystem")
    await client.start_session(list(folders), options(tmp_path, {"a": same, "b": same}), consent_ui=True)

    def a_running_after_asks() -> bool:
        return len(client.asks) == 2 and state_of(client.statuses, "a") == "running"

    await client.until(lambda: updates(client, "b") == ["1"] and a_running_after_asks())
    client.statuses.clear()
    await client.request("hostBridge/restartServer", {"server": "a"})
    await client.until(lambda: len(client.logs("[a] Secure MCP Filesystem Server running")) == 2)
    await client.until(lambda: state_of(client.statuses, "a") == "running")
    status = await client.request("hostBridge/status")
    a, b = status["servers"]
    assert a["identity"] != b["identity"] and a["command"] == b["command"]
    assert sorted(ask["server"]["id"] for ask in client.asks) == ["a", "b"]
    assert (a["sharedRoots"], [r["uri"] for r in b["sharedRoots"]]) == ([], [folder_uri(alpha)])
    assert updates(client, "a") == [], "server a never took in a folder"


@pytest.mark.asyncio
@pytest.mark.slow
@pytest.mark.requirement("E5", "G1")
async def test_a_revoke_in_one_window_reaches_the_other_windows_server_within_two_seconds(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    """G1: two sidecars on one store; window B denies beta; window A's server-filesystem reports one folder."""
    alpha, beta = folders
    client.answer_consent = allow_all
    settings = options(tmp_path, {"fs": peer_server("server-filesystem")})
    await client.start_session([alpha, beta], settings, consent_ui=True)
    await client.until(lambda: updates(client, "fs")[-1:] == ["2"])

    async with another_sidecar() as window_b:
        await window_b.start_session([alpha, beta], settings, consent_ui=True)
        await window_b.until(lambda: bool(window_b.statuses) and status_of(window_b, "fs")["state"] == "running")
        assert window_b.asks == [], "window B knows the decisions window A saved"

        result = await window_b.request(
            "hostBridge/setConsent", {"server": "fs", "uri": folder_uri(beta), "decision": "deny"}
        )
        assert (result["saved"], result["applied"]) == (True, "deny")
        await client.until(lambda: updates(client, "fs")[-1:] == ["1"], timeout=2.0)

    await client.request("hostBridge/restartServer", {"server": "fs"})
    await client.until(lambda: len(client.logs("[fs] Secure MCP Filesystem Server running")) == 2)
    await client.until(lambda: updates(client, "fs")[-1:] == ["1"])
    status = await client.request("hostBridge/status")
    assert [r["uri"] for r in status["servers"][0]["sharedRoots"]] == [folder_uri(alpha)]


@pytest.mark.asyncio
@pytest.mark.slow
@pytest.mark.requirement("G2", "G5")
async def test_a_deny_that_cannot_be_saved_still_withdraws_the_folder_and_the_user_is_told(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    """G2/G5: another process holds the store's lock; the deny is not saved but applies at once."""
    alpha, beta = folders
    client.answer_consent = allow_all
    await client.start_session(
        [alpha, beta], options(tmp_path, {"fs": peer_server("server-filesystem")}), consent_ui=True
    )
    await client.until(lambda: updates(client, "fs")[-1:] == ["2"])

    with lock_held(tmp_path / "storage"):
        pending = asyncio.ensure_future(
            client.request("hostBridge/setConsent", {"server": "fs", "uri": folder_uri(beta), "decision": "deny"})
        )
        started = asyncio.get_running_loop().time()
        status = await client.request("hostBridge/status")
        assert asyncio.get_running_loop().time() - started < 1.0, "the sidecar answers while the lock is held"
        assert status["servers"][0]["state"] == "running"
        result = await asyncio.wait_for(pending, WAIT)

    assert (result["saved"], result["applied"]) == (False, "deny")
    assert "could not be saved" in result["message"] and "consent.lock" in result["message"]
    await client.until(lambda: updates(client, "fs")[-1:] == ["1"])
    assert any("not shared" in m.message and "until host_bridge restarts" in m.message for m in client.messages)
    saved = json.loads((tmp_path / "storage" / "consent.json").read_text())
    assert {(r["path"], r["decision"]) for r in saved["roots"]} == {(str(alpha), "allow"), (str(beta), "allow")}


@pytest.mark.asyncio
@pytest.mark.requirement("B7")
async def test_editing_mcp_json_restarts_its_server_under_a_new_identity_that_is_asked_again(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    """B7 made live: no folder change or restart is needed for an edited config to take effect."""
    alpha, _ = folders
    record = tmp_path / "roots.jsonl"
    config = alpha / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {"rec": roots_recorder(record)}}))
    client.answer_consent = lambda params: {"trust": True, **allow_all(params)}
    await client.start_session([alpha], options(tmp_path, readWorkspaceConfig=True), consent_ui=True)
    await until_recorded(record, lambda answers: [folder_uri(alpha)] in answers)
    first = client.asks[0]["server"]

    edited = roots_recorder(record)
    edited["args"] = [*edited["args"], "--request-timeout", "29"]
    config.write_text(json.dumps({"mcpServers": {"rec": edited}}))

    await client.until(lambda: len(client.asks) == 2)
    second = client.asks[1]["server"]
    assert second["identity"] != first["identity"] and second["args"][-2:] == ["--request-timeout", "29"]
    assert client.asks[1]["trustRequired"] is True
    await until_recorded(record, lambda answers: answers.count([folder_uri(alpha)]) >= 2)

    config.unlink()
    async with asyncio.timeout(WAIT):
        while (await client.request("hostBridge/status"))["servers"]:
            await client.until(lambda: status_of(client, "rec")["state"] == "stopped")


@pytest.mark.asyncio
async def test_a_changed_servers_setting_applies_without_a_restart(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    record = tmp_path / "roots.jsonl"
    client.answer_consent = allow_all
    await client.start_session([folders[0]], options(tmp_path), consent_ui=True)
    assert (await client.request("hostBridge/status"))["servers"] == []

    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"hostBridge": {"servers": {"rec": roots_recorder(record)}}})
    )

    await until_recorded(record, lambda answers: [folder_uri(folders[0])] in answers)
    assert [ask["server"]["id"] for ask in client.asks] == ["rec"]


@pytest.mark.asyncio
@pytest.mark.requirement("A9")
async def test_a_retargeted_symlink_folder_is_withdrawn_and_its_new_target_is_asked_about(
    client: BridgeClient, tmp_path: Path
) -> None:
    """A9: the link's old target is no longer shared, and the new one is offered like a new folder."""
    old, new = tmp_path / "old-target", tmp_path / "new-target"
    old.mkdir()
    new.mkdir()
    link = tmp_path / "ws" / "project"
    link.parent.mkdir()
    link.symlink_to(old)
    record = tmp_path / "roots.jsonl"
    client.answer_consent = lambda params: {
        "decisions": [{"uri": r["uri"], "decision": "allow"} for r in params["roots"] if r["uri"] == folder_uri(old)]
    }
    await client.start_session(
        [path_to_uri(str(link))], options(tmp_path, {"rec": roots_recorder(record)}), consent_ui=True
    )
    await until_recorded(record, lambda answers: [folder_uri(old)] in answers)

    retarget = tmp_path / "ws" / "project.new"
    retarget.symlink_to(new)
    retarget.replace(link)

    await until_recorded(record, lambda answers: answers[-1] == [])
    await client.until(lambda: len(client.asks) == 2)
    assert [r["uri"] for r in client.asks[1]["roots"]] == [folder_uri(new)]
    assert any(folder_uri(old) in m.message and "different real folder" in m.message for m in client.messages)
    assert all(folder_uri(new) not in answer for answer in recorded_roots(record)), "not shared before consent"


@pytest.mark.asyncio
@pytest.mark.requirement("G3")
async def test_a_folder_inside_a_shared_one_is_not_asked_about_and_denying_it_names_its_parent(
    client: BridgeClient, tmp_path: Path
) -> None:
    """G3: packages/ui inside a shared acme is visible through acme: not asked about, shown as such, and a deny of
    ui says that acme still shows it instead of silently doing nothing."""
    acme, other = tmp_path / "acme", tmp_path / "other"
    ui = acme / "packages" / "ui"
    ui.mkdir(parents=True)
    other.mkdir()
    (acme / "package.json").write_text('{"name": "acme", "workspaces": ["packages/*"]}')
    (ui / "package.json").write_text('{"name": "@acme/ui"}')
    client.answer_consent = lambda params: {
        "decisions": [{"uri": r["uri"], "decision": "allow"} for r in params["roots"] if r["uri"] == folder_uri(acme)]
    }
    settings = options(tmp_path, {"fs": peer_server("server-filesystem")})
    await client.start_session([acme, other], settings, consent_ui=True)
    await client.until(lambda: updates(client, "fs")[-1:] == ["1"])
    status = (await client.request("hostBridge/status"))["servers"][0]
    assert status["visibleThrough"] == [{"uri": folder_uri(ui), "through": folder_uri(acme)}]

    async with another_sidecar() as next_session:
        await next_session.start_session([acme, other], settings, consent_ui=True)
        await next_session.until(lambda: len(next_session.asks) == 1)
        (ask,) = next_session.asks
        assert [r["uri"] for r in ask["roots"]] == [folder_uri(other)], "ui is not asked about: acme shows it"
        assert ask["visibleThrough"] == [{"uri": folder_uri(ui), "through": folder_uri(acme)}]

    result = await client.request("hostBridge/setConsent", {"server": "fs", "uri": folder_uri(ui), "decision": "deny"})
    assert (result["applied"], result["visibleThrough"]) == ("deny", folder_uri(acme))
    assert f"to hide {ui}, stop sharing {acme}" in result["message"]
