"""Sign-ins to http servers through the editor, and ``hostBridge/signOut``.

How the user is asked (:class:`EditorSignIn`, the core's ``SignInPrompt``):

* an editor that declares ``capabilities.experimental.hostBridge.signIn`` (the VS Code extension) gets
  ``hostBridge/signIn``: it shows "Sign in to <server>" and opens the address in the browser when the user agrees;
* any other editor gets ``window/showMessageRequest`` ("Sign in" / "Not now"), then ``window/showDocument`` with the
  address and ``external: true`` (the browser).

Either way the browser comes back to the sidecar's loopback listener, which completes the sign-in.

Where tokens are kept (:class:`EditorVault`): an editor that declares ``experimental.hostBridge.secretStorage`` keeps
them (VS Code's SecretStorage, through ``hostBridge/getSecret`` and ``hostBridge/storeSecret``); otherwise the
sidecar's own vault (the OS keyring, else ``tokens.json`` in the storage folder).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, cast

from lsprotocol import types

from host_bridge.auth.flow import SignInRequest
from host_bridge.auth.loopback import SignInError
from host_bridge.auth.urls import check_browser_url
from host_bridge.auth.vault import VaultError
from host_bridge.core import Core
from host_bridge.hosts.lsp import messages
from host_bridge.hosts.lsp.feature import Feature, request
from host_bridge.hosts.lsp.protocol import (
    SecretParams,
    SecretResult,
    ServerParams,
    SignInParams,
    SignInResult,
    SignOutResult,
    StoreSecretParams,
)
from host_bridge.text import visible

if TYPE_CHECKING:
    from host_bridge.hosts.lsp.server import HostBridgeServer

logger = logging.getLogger(__name__)

SIGN_IN = "Sign in"
NOT_NOW = "Not now"
SECRET_TIMEOUT = 30.0
"""Seconds the editor has to answer a secret read or write."""
PROMPT_TIMEOUT = 600.0
"""Seconds a sign-in question may stay unanswered (the sign-in itself is bounded by the core too)."""


def declares(server: HostBridgeServer, capability: str) -> bool:
    """Whether the editor declared ``capabilities.experimental.hostBridge.<capability> = true``."""
    try:
        experimental: object = server.client_capabilities.experimental
    except Exception:
        return False
    if not isinstance(experimental, dict):
        return False
    bridge: object = cast(dict[str, Any], experimental).get("hostBridge")
    return isinstance(bridge, dict) and cast(dict[str, Any], bridge).get(capability) is True


class EditorSignIn:
    """Puts a sign-in to the user through the editor (see the module docstring)."""

    def __init__(self, server: HostBridgeServer) -> None:
        self._server = server

    async def sign_in(self, request: SignInRequest) -> bool:
        """Ask; ``True`` once the address was opened."""
        url = check_browser_url(request.url)
        if declares(self._server, "signIn"):
            params = SignInParams(server=request.server_id, label=request.label, url=url)
            try:
                raw = await self._server.request_editor(messages.SIGN_IN, params, PROMPT_TIMEOUT)
            except TimeoutError:
                raise SignInError("the sign-in question was not answered") from None
            except Exception as error:
                raise SignInError(f"the editor did not show the sign-in ({error})") from None
            return SignInResult.model_validate(raw).opened
        question = types.ShowMessageRequestParams(
            type=types.MessageType.Info,
            message=f"MCP Host Bridge: {visible(request.label)} needs you to sign in ({visible(request.where)}). "
            "Sign in opens its sign-in page in your browser.",
            actions=[types.MessageActionItem(title=SIGN_IN), types.MessageActionItem(title=NOT_NOW)],
        )
        try:
            item = await asyncio.wait_for(self._server.window_show_message_request_async(question), PROMPT_TIMEOUT)
        except TimeoutError:
            raise SignInError("the sign-in question was not answered") from None
        except Exception as error:
            raise SignInError(f"the editor did not show the sign-in question ({error})") from None
        if item is None or item.title != SIGN_IN:
            return False
        shown = await self._server.window_show_document_async(types.ShowDocumentParams(uri=url, external=True))
        if not shown.success:
            raise SignInError(f"the editor could not open the sign-in page; open it yourself: {url}")
        return True


class EditorVault:
    """Secrets kept by the editor (``hostBridge/getSecret``, ``hostBridge/storeSecret``)."""

    description = "the editor's secret storage"

    def __init__(self, server: HostBridgeServer) -> None:
        self._server = server

    async def get(self, key: str) -> str | None:
        """The value kept under ``key``."""
        raw = await self._ask(messages.GET_SECRET, SecretParams(key=key))
        return SecretResult.model_validate(raw or {}).value

    async def put(self, key: str, value: str) -> None:
        """Keep ``value`` under ``key``."""
        await self._ask(messages.STORE_SECRET, StoreSecretParams(key=key, value=value))

    async def delete(self, key: str) -> bool:
        """Forget ``key``; whether it was there."""
        existed = await self.get(key) is not None
        await self._ask(messages.STORE_SECRET, StoreSecretParams(key=key))
        return existed

    async def _ask(self, message: messages.Request[Any, Any], params: Any) -> object:
        try:
            return await self._server.request_editor(message, params, SECRET_TIMEOUT)
        except Exception as error:
            raise VaultError(f"the editor's secret storage did not answer ({type(error).__name__})") from None


class SignInFeature(Feature):
    """``hostBridge/signOut``: forget a server's kept sign-in; it asks again when it next needs one."""

    def __init__(self, server: HostBridgeServer, core: Core) -> None:
        self._server = server
        self._core = core

    @request(messages.SIGN_OUT)
    async def sign_out(self, params: ServerParams) -> SignOutResult:
        """Forget the tokens and client registration kept for the server; a running one starts again."""
        try:
            forgotten = await self._core.hub.sign_out(params.server)
        except VaultError as error:
            logger.warning("[%s] %s", params.server, error)
            raise
        return SignOutResult(signed_out=forgotten)
