"""Servers reached by URL over streamable HTTP (:func:`~host_bridge.hub.http_transport.http_transport`).

Nothing of such a server runs here: it has no process, no stderr and no sandbox, and the folders shared with it reach
it only as the roots it asks for.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager

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

    def __init__(self, config: ServerConfig, settings: ConnectionSettings) -> None:
        assert config.url is not None
        self._config = config
        self._settings = settings

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
        """None: a server that cannot be reached now may be reachable later."""
        return None
