"""HTTP servers that need a sign-in, through the real hub: OAuth on the SDK's client against a real authorization
server (``tests/servers/oauth_server.py``: the SDK's server side, approving at once).

The test plays the person and the browser: its sign-in prompt fetches the address it is shown and follows the
redirect back to host_bridge's loopback listener, as a browser does after the user clicks "Allow".
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import anyio
import httpx2
import pytest
from support.http_fixtures import fixture_process, http_entry
from support.hub_harness import configs, running_hub
from support.records import POLL, WAIT, recorded, records

from host_bridge.auth.flow import SignInRequest
from host_bridge.auth.vault import TOKENS_FILE
from host_bridge.hub.models import ServerState
from host_bridge.hub.settings import ConnectionSettings

pytestmark = pytest.mark.anyio

SERVER_ID = "signed"
SETTINGS = ConnectionSettings(initialize_timeout=20, request_timeout=20, backoff_initial=0.05, backoff_max=0.2)


class Browser:
    """A person who opens each sign-in address and approves (or declines: ``decline`` sign-ins first)."""

    def __init__(self, decline: int = 0) -> None:
        self.asked: list[SignInRequest] = []
        self.decline = decline

    async def sign_in(self, request: SignInRequest) -> bool:
        self.asked.append(request)
        if self.decline:
            self.decline -= 1
            return False
        async with httpx2.AsyncClient(follow_redirects=True) as browser:
            page = await browser.get(request.url)
        assert page.status_code == 200, page.text
        return True


async def until(condition: object, timeout: float = WAIT) -> None:
    with anyio.fail_after(timeout):
        while not condition():  # type: ignore[operator]
            await anyio.sleep(POLL)


def tokens_issued(record: Path) -> list[str]:
    issued = [entry for entry in records(record) if "token" in entry]
    return [value for entry in issued for value in (entry["access_token"], entry["refresh_token"])]


async def call_whoami(harness: object) -> str:
    result = await harness.hub.client(SERVER_ID).call_tool("whoami", {})  # type: ignore[attr-defined]
    return result.content[0].text  # type: ignore[union-attr]


async def test_a_server_that_needs_a_sign_in_signs_in_once_and_the_kept_token_is_reused_after_a_restart(
    tmp_path: Path,
) -> None:
    record = tmp_path / "server.jsonl"
    browser = Browser()
    async with fixture_process("oauth_server", record) as fixture:
        servers = configs({SERVER_ID: http_entry(fixture.port)})
        async with running_hub(tmp_path / "storage", servers, connection_settings=SETTINGS, sign_in=browser) as first:
            await first.wait_running(SERVER_ID)
            assert await call_whoami(first) == "signed in"
            status = first.hub.statuses()[0]
            assert status.sign_in is not None and status.sign_in.state == "signedIn"
        assert len(browser.asked) == 1
        assert browser.asked[0].url.startswith(f"http://127.0.0.1:{fixture.port}/authorize?")
        assert (tmp_path / "storage" / TOKENS_FILE).stat().st_mode & 0o777 == 0o600

        async with running_hub(tmp_path / "storage", servers, connection_settings=SETTINGS, sign_in=browser) as again:
            await again.wait_running(SERVER_ID)
            assert await call_whoami(again) == "signed in"
        assert len(browser.asked) == 1, "the kept token was not reused"
        assert len(recorded(record, "authorize")) == 1
        assert recorded(record, "token") == ["authorization_code"]


async def test_a_token_the_server_revoked_asks_for_a_sign_in_again_and_then_works(tmp_path: Path) -> None:
    record = tmp_path / "server.jsonl"
    browser = Browser()
    async with fixture_process("oauth_server", record) as fixture:
        servers = configs({SERVER_ID: http_entry(fixture.port)})
        async with running_hub(tmp_path / "storage", servers, connection_settings=SETTINGS, sign_in=browser) as harness:
            await harness.wait_running(SERVER_ID)
            async with httpx2.AsyncClient() as client:
                revoked = await client.post(f"http://127.0.0.1:{fixture.port}/test/revoke")
            assert revoked.json()["revoked"] >= 2
            assert await call_whoami(harness) == "signed in"
    assert len(browser.asked) == 2
    assert len(recorded(record, "authorize")) == 2


async def test_an_expired_kept_token_is_refreshed_after_a_restart_without_asking(tmp_path: Path) -> None:
    record = tmp_path / "server.jsonl"
    browser = Browser()
    storage = tmp_path / "storage"
    async with fixture_process("oauth_server", record, "--token-seconds", "3600") as fixture:
        servers = configs({SERVER_ID: http_entry(fixture.port)})
        async with running_hub(storage, servers, connection_settings=SETTINGS, sign_in=browser) as first:
            await first.wait_running(SERVER_ID)
        kept = json.loads((storage / TOKENS_FILE).read_text())
        (key,) = kept["secrets"]
        entry = json.loads(kept["secrets"][key])
        assert entry["expires_at"] > 0
        entry["expires_at"] = 1.0  # as if the hour had passed
        kept["secrets"][key] = json.dumps(entry)
        (storage / TOKENS_FILE).write_text(json.dumps(kept))
        async with running_hub(storage, servers, connection_settings=SETTINGS, sign_in=browser) as again:
            await again.wait_running(SERVER_ID)
            assert await call_whoami(again) == "signed in"
    assert len(browser.asked) == 1
    assert recorded(record, "token") == ["authorization_code", "refresh_token"]


async def test_a_declined_sign_in_fails_the_server_once_saying_so_and_a_restart_asks_again(tmp_path: Path) -> None:
    record = tmp_path / "server.jsonl"
    browser = Browser(decline=1)
    async with fixture_process("oauth_server", record) as fixture:
        servers = configs({SERVER_ID: http_entry(fixture.port)})
        async with running_hub(tmp_path / "storage", servers, connection_settings=SETTINGS, sign_in=browser) as harness:
            await harness.recorder.wait_for(lambda: harness.state(SERVER_ID) == "failed")
            status = harness.hub.statuses()[0]
            assert status.last_error is not None and "sign in" in status.last_error
            assert "you did not sign in" in status.last_error
            assert status.sign_in is not None and status.sign_in.state == "required"
            assert len(browser.asked) == 1, "a declined sign-in is not asked again by itself"
            harness.hub.restart(SERVER_ID)
            await harness.wait_running(SERVER_ID)
            assert harness.hub.statuses()[0].sign_in.state == "signedIn"  # type: ignore[union-attr]
    assert len(browser.asked) == 2


async def test_a_host_that_cannot_ask_leaves_the_server_needing_a_sign_in(tmp_path: Path) -> None:
    record = tmp_path / "server.jsonl"
    async with fixture_process("oauth_server", record) as fixture:
        servers = configs({SERVER_ID: http_entry(fixture.port)})
        async with running_hub(tmp_path / "storage", servers, connection_settings=SETTINGS) as harness:
            await harness.recorder.wait_for(lambda: harness.state(SERVER_ID) == "failed")
            status = harness.hub.statuses()[0]
    assert status.state is ServerState.FAILED
    assert status.last_error is not None and "needs you to sign in" in status.last_error
    assert "MCPError" not in status.last_error
    assert recorded(record, "authorize") == []


async def test_signing_out_forgets_the_token_and_the_server_asks_again(tmp_path: Path) -> None:
    record = tmp_path / "server.jsonl"
    browser = Browser()
    async with fixture_process("oauth_server", record) as fixture:
        servers = configs({SERVER_ID: http_entry(fixture.port)})
        async with running_hub(tmp_path / "storage", servers, connection_settings=SETTINGS, sign_in=browser) as harness:
            await harness.wait_running(SERVER_ID)
            assert await harness.hub.sign_out(SERVER_ID)
            await until(lambda: len(browser.asked) == 2 and harness.state(SERVER_ID) == "running")
        kept = json.loads((tmp_path / "storage" / TOKENS_FILE).read_text())
    assert len(kept["secrets"]) == 1  # the new sign-in, not the forgotten one
    assert len(recorded(record, "authorize")) == 2


@pytest.mark.requirement("D6")
async def test_tokens_appear_in_no_log_line_no_audit_entry_and_no_status(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    record = tmp_path / "server.jsonl"
    browser = Browser()
    caplog.set_level(logging.DEBUG)
    statuses: list[str] = []
    async with fixture_process("oauth_server", record, "--token-seconds", "3600") as fixture:
        servers = configs({SERVER_ID: http_entry(fixture.port)})
        async with running_hub(tmp_path / "storage", servers, connection_settings=SETTINGS, sign_in=browser) as harness:
            await harness.wait_running(SERVER_ID)
            assert await call_whoami(harness) == "signed in"
            async with httpx2.AsyncClient() as client:
                await client.post(f"http://127.0.0.1:{fixture.port}/test/revoke")
            assert await call_whoami(harness) == "signed in"
            statuses = [status.model_dump_json(by_alias=True) for status in harness.hub.statuses()]
            statuses += [json.dumps(status.to_wire()) for status in harness.recorder.statuses]
    issued = tokens_issued(record)
    assert len(issued) == 4
    logged = [record.getMessage() for record in caplog.records] + [caplog.text]
    audit = [path.read_text(errors="replace") for path in (tmp_path / "storage").glob("*.jsonl")]
    written = "\n".join(logged + statuses + audit)
    assert "HTTP Request: POST" in written, "the log was captured"
    for token in issued:
        assert token not in written
    # The vault holds them, and only the vault.
    assert any(token in (tmp_path / "storage" / TOKENS_FILE).read_text() for token in issued)
