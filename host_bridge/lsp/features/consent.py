"""Consent prompts and ``hostBridge/setConsent``.

For each server, folders without a decision are asked about once per batch: with ``hostBridge/askConsent``
when the editor declared ``experimental.hostBridge.consentUi``, else with ``window/showMessageRequest``.
No answer, an error, a time-out or a folder missing from the answer means *not allowed*; nothing is
recorded then, and the folder is not asked about again in this session. Workspace-defined servers are asked
for trust first.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from host_bridge.hub.errors import INTERNAL_ERROR
from host_bridge.lsp import methods
from host_bridge.lsp.server import HostBridgeServer, params_dict, rpc_errors

if TYPE_CHECKING:
    from host_bridge.hub.connection import ServerConnection, ServerStatus
    from host_bridge.lsp.protocol import AskConsentResult, RootDecision
    from host_bridge.lsp.server import Core
    from host_bridge.workspace.models import Candidate

# The consent core, pydantic and the models are imported when first used, after ``initialize`` is answered.

logger = logging.getLogger(__name__)

ALLOW = "Allow"
ALLOW_SESSION = "Allow for this session"
DENY = "Deny"
TRUST = "Trust and start"
DONT_TRUST = "Don't trust"
_ACTION_DECISIONS = {ALLOW: "allow", ALLOW_SESSION: "allowSession", DENY: "deny"}


class ConsentPrompts:
    """Decides when to ask, asks, and applies the answers to the policy and the hub."""

    def __init__(self, server: HostBridgeServer) -> None:
        self._server = server
        self._pending: set[str] = set()
        """Server ids with a prompt in flight (never two at once for one server)."""
        self._asked: set[tuple[str, str]] = set()
        """(fingerprint, path) pairs asked about in this session, answered or not."""
        self._trust_asked: set[str] = set()
        """Fingerprints asked for trust in this session."""
        self.prompts = 0
        """How many prompts were sent (tests and diagnostics)."""

    def server_changed(self, status: ServerStatus) -> None:
        """A server became running or awaits trust: it may have something to ask."""
        if status.state.value in ("running", "awaitingTrust"):
            self.review(status.id)

    def ask_trust_again(self, server_id: str) -> None:
        """The user asked to start a server that still waits for trust: ask for it once more."""
        core = self._server.core
        if core is None:
            return
        self._trust_asked.discard(core.hub.connection(server_id).config.fingerprint)
        self.review(server_id)

    def review(self, server_id: str | None = None) -> None:
        """Start a prompt for every server (or just ``server_id``) with unasked folders or pending trust."""
        core = self._server.core
        if core is None:
            return
        for connection in core.hub.connections:
            if server_id is not None and connection.id != server_id:
                continue
            if connection.id in self._pending:
                continue
            fingerprint = connection.config.fingerprint
            state = connection.state.value
            if state == "awaitingTrust":
                if fingerprint in self._trust_asked:
                    continue
                self._trust_asked.add(fingerprint)
                # A message request asks for trust alone; its folders are asked about once the server runs.
                roots = self._unasked(core, fingerprint) if self._server.consent_ui else []
            elif state == "running":
                roots = self._unasked(core, fingerprint)
                if not roots:
                    continue
            else:
                continue
            self._pending.add(connection.id)
            self.prompts += 1
            core.tasks.start_soon(self._prompt, core, connection, roots, state == "awaitingTrust")

    def _unasked(self, core: Core, fingerprint: str) -> list[tuple[Candidate, str]]:
        from host_bridge.uris import UriError, parse_file_uri

        found: list[tuple[Candidate, str]] = []
        for candidate in core.registry.candidates:
            try:
                path = parse_file_uri(candidate.uri)
            except UriError:
                continue
            key = (fingerprint, path)
            if key in self._asked or core.policy.decision(fingerprint, path) is not None:
                continue
            self._asked.add(key)
            found.append((candidate, path))
        return found

    async def _prompt(
        self, core: Core, connection: ServerConnection, roots: list[tuple[Candidate, str]], trust_required: bool
    ) -> None:
        try:
            if self._server.consent_ui:
                answer = await self._ask_editor(connection, roots, trust_required)
            else:
                answer = await self._ask_messages(connection, roots, trust_required)
            self._apply(core, connection, roots, trust_required, answer)
        except Exception:
            logger.exception("[%s] asking for consent failed; nothing is shared", connection.id)
        finally:
            self._pending.discard(connection.id)
        self.review(connection.id)

    async def _ask_editor(
        self, connection: ServerConnection, roots: list[tuple[Candidate, str]], trust_required: bool
    ) -> AskConsentResult | None:
        from pydantic import ValidationError

        from host_bridge.lsp.protocol import AskConsentParams, AskConsentResult

        params = AskConsentParams(
            server=connection.config.ref(), roots=tuple(c for c, _ in roots), trust_required=trust_required
        )
        try:
            raw: Any = await asyncio.wait_for(
                self._server.protocol.send_request_async(methods.ASK_CONSENT, params.to_wire()),
                self._server.options.consent_timeout,
            )
        except TimeoutError:
            logger.warning("[%s] the consent prompt timed out; nothing is shared", connection.id)
            return None
        except Exception as error:
            logger.warning(
                "[%s] the editor did not answer the consent prompt (%s); nothing is shared", connection.id, error
            )
            return None
        try:
            return AskConsentResult.model_validate(raw)
        except ValidationError as error:
            logger.warning("[%s] ignoring a malformed consent answer: %s", connection.id, error)
            return None

    async def _ask_messages(
        self, connection: ServerConnection, roots: list[tuple[Candidate, str]], trust_required: bool
    ) -> AskConsentResult | None:
        from host_bridge.lsp.protocol import AskConsentResult

        label = connection.config.label
        trust: bool | None = None
        if trust_required:
            where = connection.config.source
            title = await self._show(
                connection.id,
                "trust prompt",
                f"The workspace file {where} defines the MCP server {label!r} "
                f"({connection.config.command or connection.config.url}). Trust it and start it?",
                [TRUST, DONT_TRUST],
                "hostBridge/restartServer asks again",
            )
            if title is None:
                return None
            trust = title == TRUST
            return AskConsentResult(trust=trust)
        if not roots:
            return None
        listing = ", ".join(path for _, path in roots)
        title = await self._show(
            connection.id,
            "consent prompt",
            f"Share these folders with the MCP server {label!r}? {listing}",
            [ALLOW, ALLOW_SESSION, DENY],
            "hostBridge/setConsent shares a folder",
        )
        decision = _ACTION_DECISIONS.get(title or "")
        if decision is None:
            return None
        return AskConsentResult.model_validate(
            {"decisions": [{"uri": candidate.uri, "decision": decision} for candidate, _ in roots]}
        )

    async def _show(self, server_id: str, prompt: str, message: str, actions: list[str], afterwards: str) -> str | None:
        """The action the user chose, or ``None`` (dismissed, failed or timed out; each is logged). ``afterwards``
        says how the question can still be answered once it was dismissed."""
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Info, message=message, actions=[types.MessageActionItem(title=a) for a in actions]
        )
        try:
            item = await asyncio.wait_for(
                self._server.window_show_message_request_async(params), self._server.options.consent_timeout
            )
        except TimeoutError:
            logger.warning("[%s] the %s timed out; nothing is shared", server_id, prompt)
            return None
        except Exception as error:
            logger.warning("[%s] the editor did not answer the %s (%s); nothing is shared", server_id, prompt, error)
            return None
        if item is None or item.title not in actions:
            # Not a warning, but the only trace of why a server waits or shares nothing.
            self._server.log_to_editor(
                types.MessageType.Info,
                f"[{server_id}] the {prompt} was dismissed; nothing is shared and it is not asked again this "
                f"session ({afterwards})",
            )
            return None
        return item.title

    def _apply(
        self,
        core: Core,
        connection: ServerConnection,
        roots: list[tuple[Candidate, str]],
        trust_required: bool,
        answer: AskConsentResult | None,
    ) -> None:
        if answer is None:
            return
        if core.hub.connections.count(connection) == 0:
            logger.info("[%s] its configuration changed while asking; the answer is discarded", connection.id)
            return
        fingerprint = connection.config.fingerprint
        if trust_required:
            if answer.trust is None:
                return
            core.hub.trust(connection.id, answer.trust)
            if not answer.trust:
                return
        asked = {candidate.uri: path for candidate, path in roots}
        for item in answer.decisions:
            path = asked.get(item.uri)
            if path is None:
                logger.warning("[%s] ignoring an answer about %s, which was not asked about", connection.id, item.uri)
                continue
            self._record(core, connection, fingerprint, path, item)

    def _record(
        self, core: Core, connection: ServerConnection, fingerprint: str, path: str, item: RootDecision
    ) -> None:
        from host_bridge.consent.policy import Decision
        from host_bridge.consent.store import ConsentStoreError

        try:
            core.policy.set(fingerprint, path, Decision(item.decision), server_id=connection.id)
        except ConsentStoreError as error:
            logger.warning("[%s] could not save the decision about %s: %s", connection.id, path, error)


def setup(server: HostBridgeServer) -> None:
    """Register ``hostBridge/setConsent`` and the prompt state."""
    server.consent = ConsentPrompts(server)
    server.server_listeners.append(server.consent.server_changed)

    @server.feature(methods.SET_CONSENT)
    @rpc_errors
    async def set_consent(ls: HostBridgeServer, params: Any) -> None:
        from host_bridge.consent.policy import Decision
        from host_bridge.consent.store import ConsentStoreError
        from host_bridge.lsp.protocol import SetConsentParams
        from host_bridge.uris import UriError, canonical_uri

        request = SetConsentParams.model_validate(params_dict(params))
        core = await ls.ready_core()
        fingerprint = core.hub.connection(request.server).config.fingerprint
        try:
            _, path = canonical_uri(request.uri)
        except UriError as error:
            raise JsonRpcInvalidParams(str(error)) from error
        except OSError as error:
            raise JsonRpcInvalidParams(f"{request.uri} cannot be shared: {error.strerror or error}") from error
        try:
            if request.decision == "forget":
                core.policy.forget(fingerprint, path)
            else:
                core.policy.set(fingerprint, path, Decision(request.decision), server_id=request.server)
        except ConsentStoreError as error:
            raise JsonRpcException(f"the decision could not be saved: {error}", INTERNAL_ERROR) from error
