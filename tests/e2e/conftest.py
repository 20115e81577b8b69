"""e2e fixtures: the sidecar started as ``python -m host_bridge serve`` and driven by a pytest-lsp client that
records every ``hostBridge/*`` notification and log line, and answers consent prompts as a test says."""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from host_bridge.lsp.server import raw_json_converter
from host_bridge.uris import canonical_path, path_to_uri

REPO = Path(__file__).resolve().parents[2]
PEERS = REPO / "tests" / "peers" / "node_modules" / "@modelcontextprotocol"
WAIT = 30.0
"""Seconds any awaited event may take (servers start in well under that)."""

ConsentAnswer = Callable[[dict[str, Any]], dict[str, Any] | None]


def peer_server(package: str, *args: str) -> dict[str, Any]:
    """Config entry running a pinned reference server from tests/peers with node."""
    node = shutil.which("node") or "node"
    return {"type": "stdio", "command": node, "args": [str(PEERS / package / "dist" / "index.js"), *args]}


def folder_uri(folder: Path) -> str:
    """The canonical URI the sidecar uses for an existing folder."""
    return path_to_uri(canonical_path(folder))


class BridgeClient(LanguageClient):
    """A test editor: records what the sidecar sends and wakes waiters on every message."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.statuses: list[dict[str, Any]] = []
        """Every ``hostBridge/serverChanged``."""
        self.asks: list[dict[str, Any]] = []
        """Every ``hostBridge/askConsent`` request."""
        self.list_changes: list[dict[str, Any]] = []
        """Every ``hostBridge/resourcesChanged``."""
        self.updates: list[dict[str, Any]] = []
        """Every ``hostBridge/resourceUpdated``."""
        self.message_requests: list[types.ShowMessageRequestParams] = []
        """Every ``window/showMessageRequest``."""
        self.answer_consent: ConsentAnswer = lambda _params: None
        """How ``hostBridge/askConsent`` is answered."""
        self.message_answer: str | None = None
        """The action title ``window/showMessageRequest`` is answered with."""
        self._arrived = asyncio.Event()

    @classmethod
    def create(cls) -> BridgeClient:
        """pytest-lsp's default handlers (but our own log recorder) plus the hostBridge ones."""
        client = cls(converter_factory=raw_json_converter)
        own = (types.WINDOW_LOG_MESSAGE, types.WINDOW_SHOW_MESSAGE)
        defaults = {m: f for m, f in DEFAULT_CLIENT_FEATURES.items() if m not in own}
        register_lsp_features(client, defaults)

        @client.feature(types.WINDOW_LOG_MESSAGE)
        def log_message(ls: BridgeClient, params: types.LogMessageParams) -> None:
            ls.log_messages.append(params)
            ls.poke()

        @client.feature(types.WINDOW_SHOW_MESSAGE)
        def show_message(ls: BridgeClient, params: types.ShowMessageParams) -> None:
            ls.messages.append(params)
            ls.poke()

        @client.feature("hostBridge/serverChanged")
        def server_changed(ls: BridgeClient, params: dict[str, Any]) -> None:
            ls.statuses.append(params)
            ls.poke()

        @client.feature("hostBridge/resourcesChanged")
        def resources_changed(ls: BridgeClient, params: dict[str, Any]) -> None:
            ls.list_changes.append(params)
            ls.poke()

        @client.feature("hostBridge/resourceUpdated")
        def resource_updated(ls: BridgeClient, params: dict[str, Any]) -> None:
            ls.updates.append(params)
            ls.poke()

        @client.feature("hostBridge/askConsent")
        def ask_consent(ls: BridgeClient, params: dict[str, Any]) -> dict[str, Any] | None:
            ls.asks.append(params)
            ls.poke()
            return ls.answer_consent(params)

        @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def show_message_request(
            ls: BridgeClient, params: types.ShowMessageRequestParams
        ) -> types.MessageActionItem | None:
            ls.message_requests.append(params)
            ls.poke()
            return types.MessageActionItem(title=ls.message_answer) if ls.message_answer else None

        return client

    def poke(self) -> None:
        """Wake :meth:`until`."""
        self._arrived.set()

    async def until(self, condition: Callable[[], bool], timeout: float = WAIT) -> None:
        """Wait until ``condition()`` holds, re-checking whenever a message arrives."""
        async with asyncio.timeout(timeout):
            while not condition():
                self._arrived.clear()
                await self._arrived.wait()

    def logs(self, prefix: str) -> list[str]:
        """Log lines starting with ``prefix``."""
        return [m.message for m in self.log_messages if m.message.startswith(prefix)]

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """A ``hostBridge/*`` request; the raw JSON result."""
        return await self.protocol.send_request_async(method, params if params is not None else {})

    async def start_session(
        self, folders: list[Path], options: dict[str, Any], *, consent_ui: bool = False
    ) -> types.InitializeResult:
        """``initialize`` + ``initialized`` as an editor would send them."""
        experimental = {"hostBridge": {"consentUi": True}} if consent_ui else None
        capabilities = types.ClientCapabilities(
            experimental=experimental,
            window=types.WindowClientCapabilities(
                show_message=types.ShowMessageRequestClientCapabilities(
                    message_action_item=types.ClientShowMessageActionItemOptions(additional_properties_support=False)
                )
            ),
            workspace=types.WorkspaceClientCapabilities(workspace_folders=True),
        )
        return await self.initialize_session(
            types.InitializeParams(
                capabilities=capabilities,
                workspace_folders=[types.WorkspaceFolder(uri=folder_uri(f), name=f.name) for f in folders],
                initialization_options=options,
            )
        )


SIDECAR = ClientServerConfig(
    server_command=[sys.executable, "-m", "host_bridge", "serve"], client_factory=BridgeClient.create
)


@pytest_lsp.fixture(config=SIDECAR)
async def client(lsp_client: BridgeClient) -> AsyncIterator[None]:
    """A running sidecar; shut down politely afterwards unless the test ended it."""
    yield
    server = lsp_client._server  # pyright: ignore[reportPrivateUsage]
    if server is not None and server.returncode is None and lsp_client.capabilities is not None:
        await asyncio.wait_for(lsp_client.shutdown_session(), WAIT)
