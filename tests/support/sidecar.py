"""The sidecar as an editor drives it: ``python -m host_bridge serve`` and a pytest-lsp client (:class:`BridgeClient`)
that records every ``hostBridge/*`` notification and log line and answers consent prompts as a test says; the
``initializationOptions`` a test starts it with, and ready-made consent answers."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from host_bridge.hosts.lsp.rpc import raw_json_converter
from support.folders import folder_uri

WAIT = 30.0
"""Seconds any awaited event may take (servers start in well under that)."""
SIDECAR_COMMAND = [sys.executable, "-m", "host_bridge", "serve"]

ConsentAnswer = Callable[[dict[str, Any]], dict[str, Any] | Awaitable[dict[str, Any] | None] | None]
"""Answers ``hostBridge/askConsent``: a result, ``None``, or an awaitable of either (to answer late or never)."""
MessageAnswer = Callable[[types.ShowMessageRequestParams], str | None]
"""Answers ``window/showMessageRequest`` with an action title, or ``None`` (dismissed)."""


def options(tmp_path: Path, servers: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """``initializationOptions`` with storage under ``tmp_path``, the given servers and no workspace configs.

    The OS sandbox is off unless a test asks for it (``sandbox="enforce"``): the fixture servers write their records
    into the test's temporary folder, which is not shared with them. The sandbox has tests of its own.
    """
    return {
        "storageDir": str(tmp_path / "storage"),
        "servers": servers or {},
        "readWorkspaceConfig": False,
        "sandbox": "off",
        **extra,
    }


def state_of(statuses: list[dict[str, Any]], server_id: str) -> str | None:
    """The state in the last ``hostBridge/serverChanged`` about ``server_id`` (``None`` before the first)."""
    matching = [s["state"] for s in statuses if s["id"] == server_id]
    return matching[-1] if matching else None


def allow_all(params: dict[str, Any]) -> dict[str, Any]:
    """A ``hostBridge/askConsent`` answer allowing every folder asked about."""
    return {"decisions": [{"uri": r["uri"], "decision": "allow"} for r in params["roots"]]}


def deny_all(params: dict[str, Any]) -> dict[str, Any]:
    """A ``hostBridge/askConsent`` answer denying every folder asked about."""
    return {"decisions": [{"uri": r["uri"], "decision": "deny"} for r in params["roots"]]}


def allow_only(uri: str) -> ConsentAnswer:
    """A ``hostBridge/askConsent`` answer allowing ``uri`` and denying every other folder asked about."""

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        return {
            "decisions": [
                {"uri": r["uri"], "decision": "allow" if r["uri"] == uri else "deny"} for r in params["roots"]
            ]
        }

    return answer


class EditorRefusal(JsonRpcException):
    """An error a test's editor answers a request with on purpose (not a failure of the test); ``-32601`` is what an
    editor that does not handle the request answers (Helix)."""

    def __init__(self, message: str, code: int = -32603) -> None:
        super().__init__(message, code)


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
        self.answer_message: MessageAnswer = lambda _params: self.message_answer
        """How ``window/showMessageRequest`` is answered (default: with :attr:`message_answer`)."""
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
        async def ask_consent(ls: BridgeClient, params: dict[str, Any]) -> dict[str, Any] | None:
            ls.asks.append(params)
            ls.poke()
            answer = ls.answer_consent(params)
            return await answer if inspect.isawaitable(answer) else answer

        @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def show_message_request(
            ls: BridgeClient, params: types.ShowMessageRequestParams
        ) -> types.MessageActionItem | None:
            ls.message_requests.append(params)
            ls.poke()
            title = ls.answer_message(params)
            return types.MessageActionItem(title=title) if title is not None else None

        return client

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pytest-lsp fails the test on a handler error, except on an :class:`EditorRefusal` a test asked for."""
        if not isinstance(error, EditorRefusal):
            super().report_server_error(error, source)

    def poke(self) -> None:
        """Wake :meth:`until`."""
        self._arrived.set()

    async def until(self, condition: Callable[[], bool], timeout: float = WAIT) -> None:
        """Wait until ``condition()`` holds, re-checking whenever a message arrives."""
        async with asyncio.timeout(timeout):
            while not condition():
                self._arrived.clear()
                await self._arrived.wait()

    def add_folder(self, folder: Path) -> None:
        """Tell the sidecar the editor opened one more workspace folder (``workspace/didChangeWorkspaceFolders``)."""
        self.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[types.WorkspaceFolder(uri=folder_uri(folder), name=folder.name)], removed=[]
                )
            )
        )

    def logs(self, prefix: str) -> list[str]:
        """Log lines starting with ``prefix``."""
        return [m.message for m in self.log_messages if m.message.startswith(prefix)]

    async def status(self) -> dict[str, Any]:
        """``hostBridge/status`` once the sidecar has read the workspace (it answers earlier with ``ready: false``)."""
        async with asyncio.timeout(WAIT):
            while not (status := await self.request("hostBridge/status"))["ready"]:
                await asyncio.sleep(0.05)
        return cast(dict[str, Any], status)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """A ``hostBridge/*`` request; the raw JSON result."""
        return await self.protocol.send_request_async(method, params if params is not None else {})

    async def start_session(
        self, folders: list[Path] | list[str], options: dict[str, Any], *, consent_ui: bool = False
    ) -> types.InitializeResult:
        """``initialize`` + ``initialized`` as an editor would send them; a folder given as a string is a URI sent
        as it is (a path is sent as its canonical URI)."""
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
                workspace_folders=[
                    types.WorkspaceFolder(uri=f, name=f.rsplit("/", 1)[-1])
                    if isinstance(f, str)
                    else types.WorkspaceFolder(uri=folder_uri(f), name=f.name)
                    for f in folders
                ],
                initialization_options=options,
            )
        )


SIDECAR = ClientServerConfig(server_command=SIDECAR_COMMAND, client_factory=BridgeClient.create)
"""How pytest-lsp starts the sidecar and its test editor."""


@contextlib.asynccontextmanager
async def another_sidecar() -> AsyncIterator[BridgeClient]:
    """One more sidecar within a test, e.g. the editor's next session on the same storage."""
    second = cast(BridgeClient, await SIDECAR.start())
    try:
        yield second
    finally:
        if second.capabilities is not None:
            await asyncio.wait_for(second.shutdown_session(), WAIT)
        await second.stop()
