"""The loopback listener a sign-in comes back to, and the checks on what a sign-in reaches (docs/security.md D2)."""

from __future__ import annotations

import anyio
import httpx2
import pytest

from host_bridge.auth.flow import AuthSettings, NoSignIn, ServerAuth
from host_bridge.auth.loopback import LoopbackRedirect, SignInError, free_port
from host_bridge.auth.urls import OAuthAddressError
from host_bridge.auth.vault import FileVault

pytestmark = pytest.mark.anyio


async def test_only_the_awaited_sign_in_completes_it_and_other_requests_get_an_error_page() -> None:
    port = free_port()
    loopback = LoopbackRedirect(port, "docs <b>server</b>")
    await loopback.open()
    pages: list[httpx2.Response] = []

    async def browse() -> None:
        async with httpx2.AsyncClient() as browser:
            for query in ("code=x&state=forged", "code=c", "code=good&state=s1&iss=https%3A%2F%2Fas"):
                pages.append(await browser.get(f"http://127.0.0.1:{port}/callback?{query}"))
            pages.append(await browser.get(f"http://127.0.0.1:{port}/elsewhere?state=s1"))

    result = None
    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(browse)
                result = await loopback.wait("s1")
                await anyio.sleep(0)
                tasks.cancel_scope.cancel()
    finally:
        await loopback.close()
    assert result is not None
    assert (result.code, result.state, result.iss) == ("good", "s1", "https://as")
    assert [page.status_code for page in pages[:3]] == [400, 400, 200]
    assert "&lt;b&gt;server&lt;/b&gt;" in pages[2].text
    assert pages[2].headers["referrer-policy"] == "no-referrer"


async def test_a_refusal_from_the_authorization_server_ends_the_sign_in_with_its_reason() -> None:
    port = free_port()
    loopback = LoopbackRedirect(port, "docs")
    await loopback.open()

    async def browse() -> None:
        async with httpx2.AsyncClient() as browser:
            await browser.get(f"http://127.0.0.1:{port}/callback?state=s&error=access_denied&error_description=no")

    failures: list[SignInError] = []
    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(browse)
                try:
                    await loopback.wait("s")
                except SignInError as error:
                    failures.append(error)
    finally:
        await loopback.close()
    assert [str(f) for f in failures] == ["the authorization server refused the sign-in (access_denied: no)"]


async def test_a_port_already_taken_is_a_sentence_naming_the_setting_to_change() -> None:
    port = free_port()
    first = LoopbackRedirect(port, "docs")
    await first.open()
    try:
        with pytest.raises(SignInError, match="callbackPort"):
            await LoopbackRedirect(port, "docs").open()
    finally:
        await first.close()


@pytest.mark.requirement("D2")
async def test_an_oauth_request_to_a_cloud_metadata_address_is_refused_before_it_is_sent(tmp_path: object) -> None:
    sent: list[str] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(str(request.url))
        return httpx2.Response(200, json={})

    auth = ServerAuth(
        server_id="docs",
        label="docs",
        where="'docs' (user settings)",
        server_url="https://mcp.example.com/mcp",
        identity_key="identity:x",
        settings=None,
        vault=FileVault(str(tmp_path)),
        prompt=NoSignIn(),
        auth_settings=AuthSettings(),
        on_change=lambda: None,
    )
    async with httpx2.AsyncClient(
        transport=httpx2.MockTransport(answer), event_hooks={"request": [auth.request_hook()]}
    ) as client:
        await client.get("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
        with pytest.raises(OAuthAddressError, match="link-local"):
            await client.get("http://169.254.169.254/.well-known/oauth-authorization-server")
        with pytest.raises(OAuthAddressError):
            await client.post("http://auth.example.com/token")
    assert sent == ["https://mcp.example.com/.well-known/oauth-protected-resource/mcp"]
