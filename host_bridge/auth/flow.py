"""One HTTP server's authorization: the SDK's OAuth client, with host_bridge's storage, redirect and checks.

:class:`ServerAuth` is made for each start of an HTTP server's connection. It builds the SDK's
:class:`~mcp.client.auth.OAuthClientProvider` (an ``httpx`` auth flow that answers a ``401``/``403`` challenge by
discovering the protected resource and its authorization server, registering a client — dynamically, with a client
ID metadata document, or the configured one —, sending the user to sign in with PKCE, exchanging the code, refreshing
and stepping up scopes), and gives it:

* the tokens and registration of this server identity, from a :class:`~host_bridge.auth.vault.SecretVault`;
* a redirect handler that checks the sign-in address (:func:`~host_bridge.auth.urls.check_browser_url`), opens the
  loopback listener, then asks the host to show the address to the user (:class:`SignInPrompt`: the terminal prints
  and opens it, an editor shows a "Sign in" notification);
* a callback handler that waits, up to :attr:`AuthSettings.sign_in_timeout`, for the browser to come back;
* a request hook that refuses OAuth requests to addresses :func:`~host_bridge.auth.urls.check_endpoint` refuses.

Its :attr:`ServerAuth.state` is what status shows: signed in, waiting for the user, or needing a sign-in.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata
from pydantic import AnyUrl

from host_bridge import __version__
from host_bridge.auth.loopback import LoopbackRedirect, SignInError, free_port, redirect_uri
from host_bridge.auth.storage import IdentityTokenStorage
from host_bridge.auth.urls import OAuthAddressError, check_browser_url, check_endpoint
from host_bridge.auth.vault import SecretVault
from host_bridge.consent.fingerprint import OAuthSettings

logger = logging.getLogger(__name__)

CLIENT_NAME = "MCP Host Bridge"
"""The client name an authorization server shows on its consent page."""

SignInStateName = Literal["signedIn", "waiting", "required"]
"""``signedIn``: tokens are kept; ``waiting``: the user was sent to sign in; ``required``: a sign-in is needed and
none is under way."""


@dataclass(frozen=True)
class AuthSettings:
    """How sign-ins behave; every field has a default."""

    sign_in_timeout: float = 600.0
    """Seconds a sign-in waits for the browser to come back before it is given up (the server then needs a sign-in
    and is not retried until the user asks)."""


@dataclass(frozen=True)
class SignInRequest:
    """What the user is asked to do: open ``url`` to sign in to a server."""

    server_id: str
    """The server's id."""
    label: str
    """Its display name."""
    where: str
    """Where it is defined, for the question (``'fs' (user settings)``)."""
    url: str
    """The authorization server's sign-in address, checked with :func:`check_browser_url`."""
    server_url: str
    """The MCP server's URL."""


class SignInPrompt(Protocol):
    """How a host puts a sign-in to the user."""

    async def sign_in(self, request: SignInRequest) -> bool:
        """Show ``request.url`` to the user (open it, print it, offer a button); ``False`` when the user declined.

        Returning ``True`` means the address was shown: the sign-in then waits for the browser's redirect back.
        """
        ...


class NoSignIn:
    """A host that cannot put a sign-in to anyone: every sign-in fails, and status says a sign-in is needed."""

    async def sign_in(self, request: SignInRequest) -> bool:
        """Refuse, saying why."""
        raise SignInError("nobody can be asked to sign in here")


class _Provider(OAuthClientProvider):
    """The SDK's provider, restoring a kept token's expiry on load (the SDK keeps it in memory only)."""

    async def _initialize(self) -> None:
        await super()._initialize()
        storage = self.context.storage
        assert isinstance(storage, IdentityTokenStorage)
        record = await storage.record()
        if self.context.current_tokens is not None and record.expires_at is not None:
            self.context.token_expiry_time = record.expires_at


class ServerAuth:
    """The authorization of one HTTP server's connection (see the module docstring)."""

    def __init__(
        self,
        *,
        server_id: str,
        label: str,
        where: str,
        server_url: str,
        identity_key: str,
        settings: OAuthSettings | None,
        vault: SecretVault,
        prompt: SignInPrompt,
        auth_settings: AuthSettings,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self.server_id = server_id
        self.label = label
        self.where = where
        self.server_url = server_url
        self.settings = settings or OAuthSettings()
        """The entry's ``oauth`` settings."""
        self._vault = vault
        self._prompt = prompt
        self._auth_settings = auth_settings
        self.on_change = on_change
        """Told whenever :attr:`state` or :attr:`message` changes (the server's connection sets it)."""
        preregistered = None
        if self.settings.client_id:
            secret = self.settings.client_secret.get_secret_value() if self.settings.client_secret else None
            preregistered = OAuthClientInformationFull(
                client_id=self.settings.client_id,
                client_secret=secret,
                token_endpoint_auth_method="client_secret_basic" if secret else "none",
                redirect_uris=None,
            )
        self.storage = IdentityTokenStorage(vault, identity_key, preregistered=preregistered)
        """This identity's kept sign-in."""
        self.state: SignInStateName | None = None
        """What status shows (``None``: the server never asked for a sign-in)."""
        self.message: str | None = None
        """A sentence for status about the sign-in (what to do)."""
        self._result: AuthorizationCodeResult | None = None
        """The browser's answer, between the SDK's redirect and callback handlers."""

    async def provider(self) -> httpx2.Auth:
        """The SDK's OAuth provider for this start, with the kept sign-in loaded."""
        record = await self.storage.record()
        if record.tokens is not None:
            self._set("signedIn", None)
        port = self.settings.callback_port or _kept_port(record.client_info) or free_port()
        metadata = OAuthClientMetadata(
            client_name=CLIENT_NAME,
            client_uri=None,
            software_id="host-bridge",
            software_version=__version__,
            redirect_uris=[AnyUrl(redirect_uri(port))],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        )
        if self.storage.preregistered is not None:
            self.storage.preregistered.redirect_uris = metadata.redirect_uris
        provider = _Provider(
            server_url=self.server_url,
            client_metadata=metadata,
            storage=self.storage,
            redirect_handler=self._redirect,
            callback_handler=self._callback,
            client_metadata_url=self.settings.client_metadata_url,
        )
        return provider

    def request_hook(self) -> Callable[[httpx2.Request], Awaitable[None]]:
        """An ``httpx`` request hook refusing OAuth requests to addresses :func:`check_endpoint` refuses."""
        server = urlsplit(self.server_url)
        origin = (server.scheme, server.hostname, server.port)

        async def guard(request: httpx2.Request) -> None:
            url = request.url
            if (url.scheme, url.host, url.port) == origin:
                return
            check_endpoint(str(url), self.server_url)

        return guard

    async def sign_out(self) -> bool:
        """Forget the kept tokens and registration; whether there were any."""
        forgotten = await self.storage.forget()
        self._set(None, None)
        return forgotten

    def give_up(self, reason: str) -> None:
        """A sign-in failed or was declined: status says a sign-in is needed, with ``reason``."""
        self._set("required", reason)

    def signed_in(self) -> None:
        """The connection runs with tokens (after a sign-in, or with kept ones)."""
        if self.state != "signedIn" and self.storage._record is not None and self.storage._record.tokens is not None:  # pyright: ignore[reportPrivateUsage]
            self._set("signedIn", None)

    async def _redirect(self, url: str) -> None:
        """The whole sign-in: the address checked, the loopback opened, then the user asked while the loopback waits
        for the browser (a prompt may return only once the browser has come back, or never: the first to finish
        decides). The SDK's callback handler then returns the result kept here."""
        try:
            check_browser_url(url)
        except OAuthAddressError as error:
            raise SignInError(str(error)) from None
        state = parse_qs(urlsplit(url).query).get("state", [""])[0]
        loopback = LoopbackRedirect(_port_of(url), self.label)
        await loopback.open()
        self._result = None
        self._set("waiting", f"sign in to {self.label} in your browser (the address was shown to you)")
        request = SignInRequest(
            server_id=self.server_id, label=self.label, where=self.where, url=url, server_url=self.server_url
        )
        declined = False
        failure: SignInError | None = None

        async def ask(scope: anyio.CancelScope) -> None:
            nonlocal declined, failure
            try:
                declined = not await self._prompt.sign_in(request)
            except SignInError as error:
                failure = error
            if declined or failure is not None:
                scope.cancel()

        async def wait(scope: anyio.CancelScope) -> None:
            nonlocal failure
            try:
                self._result = await loopback.wait(state)
            except SignInError as error:
                failure = error
            scope.cancel()

        try:
            with anyio.move_on_after(self._auth_settings.sign_in_timeout) as deadline:
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(ask, tasks.cancel_scope)
                    tasks.start_soon(wait, tasks.cancel_scope)
        finally:
            await loopback.close()
        if self._result is not None:
            self._set("signedIn", None)
            return
        if failure is not None:
            raise failure
        if declined:
            raise SignInError("you did not sign in")
        if deadline.cancelled_caught:
            raise SignInError(
                f"the sign-in was not completed within {self._auth_settings.sign_in_timeout / 60:g} minutes"
            )
        raise SignInError("the sign-in ended without an answer")

    async def _callback(self) -> AuthorizationCodeResult:
        result, self._result = self._result, None
        if result is None:
            raise SignInError("the sign-in ended without an answer")
        return result

    def _set(self, state: SignInStateName | None, message: str | None) -> None:
        if (state, message) != (self.state, self.message):
            self.state, self.message = state, message
            self.on_change()


def _kept_port(client_info: OAuthClientInformationFull | None) -> int | None:
    """The loopback port a kept registration was made for (its redirect URI must stay the same)."""
    if client_info is None or not client_info.redirect_uris:
        return None
    parts = urlsplit(str(client_info.redirect_uris[0]))
    return parts.port if parts.hostname == "127.0.0.1" else None


def _port_of(authorization_url: str) -> int:
    """The loopback port of the ``redirect_uri`` in an authorization URL."""
    query = parse_qs(urlsplit(authorization_url).query)
    target = urlsplit(query.get("redirect_uri", [""])[0])
    if target.hostname != "127.0.0.1" or target.port is None:
        raise SignInError("the sign-in address does not send the browser back to this machine; refused")
    return target.port


class SignIns:
    """The sign-ins of every http server of one core: where their tokens are kept and how the user is asked."""

    def __init__(self, vault: SecretVault, prompt: SignInPrompt, settings: AuthSettings | None = None) -> None:
        self.vault = vault
        """Where tokens are kept."""
        self.prompt = prompt
        """How the host asks the user."""
        self.settings = settings or AuthSettings()

    def for_server(
        self,
        *,
        server_id: str,
        label: str,
        where: str,
        server_url: str,
        identity_key: str,
        settings: OAuthSettings | None,
    ) -> ServerAuth:
        """The authorization of one server's connection (its ``on_change`` is set by the connection)."""
        return ServerAuth(
            server_id=server_id,
            label=label,
            where=where,
            server_url=server_url,
            identity_key=identity_key,
            settings=settings,
            vault=self.vault,
            prompt=self.prompt,
            auth_settings=self.settings,
        )

    async def sign_out(self, identity_key: str) -> bool:
        """Forget what is kept of an identity's sign-in; whether there was anything."""
        return await self.vault.delete(identity_key)
