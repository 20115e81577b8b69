"""Sign-ins to an http server through the real sidecar, as each kind of editor sees them (``oauth_server.py``: the
SDK's authorization server, approving at once; the test's editor plays the browser)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from support.http_fixtures import fixture_process, http_entry
from support.records import recorded
from support.sidecar import BridgeClient, options, state_of

from host_bridge.auth.vault import TOKENS_FILE
from host_bridge.hosts.lsp.features.signin import SIGN_IN

pytestmark = pytest.mark.asyncio

SERVER = "docs"


async def browser(url: str) -> None:
    """A person who opens the sign-in page and approves: the page redirects back to the sidecar's listener."""
    async with httpx2.AsyncClient(follow_redirects=True) as client:
        page = await client.get(url)
    assert page.status_code == 200 and "You can close this tab" in page.text


async def test_an_editor_without_sign_in_support_is_asked_with_a_message_then_the_browser_is_opened(
    client: BridgeClient, tmp_path: Path
) -> None:
    record = tmp_path / "server.jsonl"
    async with fixture_process("oauth_server", record) as fixture:
        client.answer_message = lambda params: SIGN_IN if "needs you to sign in" in params.message else None
        client.browse = browser
        await client.start_session([], options(tmp_path, {SERVER: http_entry(fixture.port)}))
        await client.until(lambda: state_of(client.statuses, SERVER) == "running")
        asked = [m for m in client.message_requests if "needs you to sign in" in m.message]
        assert len(asked) == 1 and asked[0].message.startswith(f"MCP Host Bridge: {SERVER} needs you to sign in")
        assert [a.title for a in asked[0].actions or []] == ["Sign in", "Not now"]
        (shown,) = client.shown_documents
        assert shown.external and shown.uri.startswith(f"http://127.0.0.1:{fixture.port}/authorize?")
        status = await client.status()
        (server,) = status["servers"]
        assert server["signIn"] == {"state": "signedIn"}
        assert (tmp_path / "storage" / TOKENS_FILE).stat().st_mode & 0o777 == 0o600
    assert len(recorded(record, "authorize")) == 1


async def test_not_now_leaves_the_server_failed_saying_it_needs_a_sign_in_and_no_browser_is_opened(
    client: BridgeClient, tmp_path: Path
) -> None:
    record = tmp_path / "server.jsonl"
    async with fixture_process("oauth_server", record) as fixture:
        client.answer_message = lambda params: "Not now" if "needs you to sign in" in params.message else None
        await client.start_session([], options(tmp_path, {SERVER: http_entry(fixture.port)}))
        await client.until(lambda: state_of(client.statuses, SERVER) == "failed")
        (server,) = (await client.status())["servers"]
    assert server["signIn"]["state"] == "required"
    assert "needs you to sign in" in server["lastError"] and "MCPError" not in server["lastError"]
    assert client.shown_documents == []
    assert recorded(record, "authorize") == []


async def test_vs_code_signs_in_through_its_own_question_keeps_the_tokens_in_its_secret_storage_and_signs_out(
    client: BridgeClient, tmp_path: Path
) -> None:
    record = tmp_path / "server.jsonl"

    async def open_page(params: dict[str, Any]) -> bool:
        await browser(params["url"])
        return True

    async with fixture_process("oauth_server", record) as fixture:
        client.answer_sign_in = open_page
        await client.start_session(
            [], options(tmp_path, {SERVER: http_entry(fixture.port)}), sign_in=True, secret_storage=True
        )
        await client.until(lambda: state_of(client.statuses, SERVER) == "running")
        (asked,) = client.sign_ins
        assert (asked["server"], asked["label"]) == (SERVER, SERVER)
        assert client.message_requests == [] and client.shown_documents == []
        (key,) = client.secrets
        kept = json.loads(client.secrets[key])
        assert kept["tokens"]["access_token"] == recorded(record, "access_token")[0]
        assert not (tmp_path / "storage" / TOKENS_FILE).exists()

        assert await client.request("hostBridge/signOut", {"server": SERVER}) == {"signedOut": True}
        await client.until(lambda: len(client.sign_ins) == 2)
        await client.until(lambda: state_of(client.statuses, SERVER) == "running")
        assert len(client.secrets) == 1
        log = "\n".join(m.message for m in client.log_messages)
    for token in recorded(record, "access_token") + recorded(record, "refresh_token"):
        assert token not in log
    assert len(recorded(record, "authorize")) == 2
