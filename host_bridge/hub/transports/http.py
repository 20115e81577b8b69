"""Servers reached by URL over streamable HTTP (:func:`~host_bridge.hub.http_transport.http_transport`).

Nothing of such a server runs here: it has no process, no stderr and no sandbox, and the folders shared with it reach
it only as the roots it asks for. One that asks for a sign-in gets it through :attr:`HttpTransport.sign_in`
(:mod:`host_bridge.auth`: the SDK's OAuth client as the ``httpx`` auth flow, and a check of every OAuth request).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager

from mcp.client.auth import OAuthFlowError

from host_bridge.auth.flow import ServerAuth
from host_bridge.auth.loopback import SignInError
from host_bridge.auth.urls import OAuthAddressError
from host_bridge.hub.config import ServerConfig
from host_bridge.hub.http_transport import http_transport
from host_bridge.hub.launch import Launch, SandboxSetting
from host_bridge.hub.models import Reach, SandboxState
from host_bridge.hub.settings import ConnectionSettings
from host_bridge.hub.transports.base import Streams, TransportEvents


class HttpTransport:
    """A :class:`~host_bridge.hub.transports.base.Transport` for an ``http`` server config."""

    closed_request_ends_session = False
    """One dropped response stream leaves the HTTP session usable."""
    launch: Launch | None = None
    """Never: host_bridge does not start the server."""

    def __init__(
        self, config: ServerConfig, settings: ConnectionSettings, *, sign_in: ServerAuth | None = None
    ) -> None:
        assert config.url is not None
        self._config = config
        self._settings = settings
        self.sign_in = sign_in
        """Its sign-in, when it may ask for one."""

    def open(self, folders: Sequence[str], events: TransportEvents) -> AbstractAsyncContextManager[Streams]:
        """A streamable HTTP session with the config's headers, bodies capped and answers' items counted."""
        config, settings = self._config, self._settings
        assert config.url is not None
        return http_transport(
            config.url,
            config.headers,
            settings.request_timeout,
            server=config.id,
            max_body_bytes=settings.max_body_bytes,
            limits=settings.answer_limits(config.id),
            auth=self.sign_in.provider if self.sign_in is not None else None,
            request_hooks=(self.sign_in.request_hook(),) if self.sign_in is not None else (),
        )

    def needs_restart(self, folders: Sequence[str]) -> bool:
        """Never: the folders reach it only as roots, which it is told of."""
        return False

    def reach(self) -> tuple[Reach, ...]:
        """Nothing besides roots."""
        return ()

    def sandbox(self) -> SandboxState | None:
        """None: it does not run here."""
        return None

    def start_failed(self, reason: str, exit_status: int | None) -> None:
        """Nothing to explain: no sandbox confines a remote server."""

    def start_ran(self) -> None:
        """Nothing to forget."""

    def choose_sandbox(self, setting: SandboxSetting) -> None:
        """Nothing to choose: a remote server runs elsewhere."""

    def permanent_failure(self, error: BaseException) -> str | None:
        """A sign-in that did not complete (declined, timed out, refused, an address refused): never retried by itself,
        since each try would send the user to the browser again. Otherwise none: a server that cannot be reached now
        may be reachable later."""
        if self.sign_in is None or not isinstance(error, SignInError | OAuthFlowError | OAuthAddressError):
            return None
        self.sign_in.give_up(f"{error}; start the server again to sign in")
        return f"it needs you to sign in, and the sign-in did not complete ({error}); start it again to sign in"
