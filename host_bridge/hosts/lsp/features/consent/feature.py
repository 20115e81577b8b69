"""Consent prompts and ``hostBridge/setConsent``.

For each server that starts or runs, folders without a decision for its identity are asked about once per batch
(from the moment its process exists: the question is about its configuration, not about anything it says): with
``hostBridge/askConsent`` when the editor declared ``experimental.hostBridge.consentUi``, else with
``window/showMessageRequest``. No answer, an error, a time-out or a folder missing from the answer means *not
allowed*; nothing is recorded then, and the folder is not asked about again in this session. Folders the server
already sees through a shared folder are not asked about; they are listed as such. Workspace-defined servers are
asked for trust first. Every prompt names the product and says exactly what runs (:mod:`host_bridge.hub.describe`).

Decisions are saved off the event loop (another window may hold the store's lock); one that cannot be saved
still applies in the direction of less exposure, and the user is told.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from lsprotocol import types
from pydantic import ValidationError
from pygls.exceptions import JsonRpcInvalidParams

from host_bridge.consent.identity import ServerIdentity
from host_bridge.consent.policy import Decision, DecisionNotSaved
from host_bridge.core import Core
from host_bridge.hosts.lsp import messages
from host_bridge.hosts.lsp.feature import Feature, request
from host_bridge.hosts.lsp.protocol import (
    AskConsentParams,
    AskConsentResult,
    RootDecision,
    SetConsentParams,
    SetConsentResult,
)
from host_bridge.hub.connection import ServerConnection
from host_bridge.hub.describe import PRODUCT, launch_summary, server_name
from host_bridge.hub.models import ServerState, ServerStatus
from host_bridge.roots import VisibleThrough, containing
from host_bridge.sandbox.refusals import Refusal
from host_bridge.text import visible
from host_bridge.uris import UriError, canonical_uri, is_within, parse_file_uri
from host_bridge.workspace.models import Candidate

if TYPE_CHECKING:
    from host_bridge.hosts.lsp.server import HostBridgeServer

logger = logging.getLogger(__name__)

ALLOW = "Allow"
ALLOW_SESSION = "Allow for this session"
DENY = "Deny"
TRUST = "Trust and start"
DONT_TRUST = "Don't trust"
ONE_BY_ONE = "Ask about each folder"
_ACTION_DECISIONS = {ALLOW: "allow", ALLOW_SESSION: "allowSession", DENY: "deny"}

_Asked = list[tuple[Candidate, str]]
"""Candidates asked about, with their canonical paths."""

_ASKED_STATES = (ServerState.STARTING, ServerState.RUNNING, ServerState.AWAITING_TRUST)
"""States in which a server may have something to ask."""


def _folders_askable(connection: ServerConnection) -> bool:
    """Whether the server's folders may be asked about now: once it runs, or once its process started (stdio).

    The question names only its configuration (what runs, which folders), so it is asked while the server starts
    instead of after its handshake (a second or more for a Node server); an answer that comes before the handshake
    ends is in its first ``roots/list``. Not before its process exists: a command that cannot run is not asked about.
    """
    state = connection.state
    return state is ServerState.RUNNING or (state is ServerState.STARTING and connection.process_started)


def _all_actions(count: int) -> dict[str, str]:
    """Action titles for a question about ``count`` folders at once, each saying it covers all of them."""
    return {
        f"Allow all {count} folders": "allow",
        f"Allow all {count} for this session": "allowSession",
        f"Deny all {count}": "deny",
    }


class ConsentFeature(Feature):
    """Decides when to ask, asks, applies the answers to the policy and the hub, and answers
    ``hostBridge/setConsent``."""

    def __init__(self, server: HostBridgeServer, core: Core) -> None:
        self._server = server
        self._core = core
        self._pending: set[str] = set()
        """Server ids with a prompt in flight (never two at once for one server)."""
        self._asked: set[tuple[str, str]] = set()
        """(identity key, path) pairs asked about in this session, answered or not."""
        self._trust_asked: set[str] = set()
        """Identity keys asked for trust in this session."""
        self._review_scheduled = False
        self._refusals: dict[str, Refusal] = {}
        """Server id → the sandbox refusal its next folder prompt is about (named in that prompt)."""
        self.prompts = 0
        """How many prompts were sent (tests and diagnostics)."""

    def server_changed(self, status: ServerStatus) -> None:
        """A server is starting, runs or awaits trust: it may have something to ask.

        The review is deferred to the next turn of the loop, so servers added together (a workspace file with
        several) are asked for trust in one batch.
        """
        if status.state in _ASKED_STATES and not self._review_scheduled:
            self._review_scheduled = True
            asyncio.get_running_loop().call_soon(self._scheduled_review)

    def sandbox_refused(self, server_id: str, refusal: Refusal) -> None:
        """The sandbox refused a server a path: ask about sharing the candidate folder that holds it, naming the
        refusal; outside every candidate, ask whether it may read that folder. Nothing is widened without an answer,
        and a folder the user chose not to share is not asked about again (they are told where to change it)."""
        core = self._core
        connection = next((c for c in core.hub.connections if c.id == server_id), None)
        if connection is None:
            return
        identity = connection.config.identity
        holding = self._candidate_holding(refusal.path)
        if holding is None:
            core.tasks.start_soon(self._ask_read_only, connection, refusal)
            return
        _, path = holding
        if core.policy.decision(identity, path) is None:
            self._asked.discard((identity.key, path))
            self._refusals[server_id] = refusal
            self.review(server_id)
            return
        self._server.show_to_user(
            types.MessageType.Info,
            f"{PRODUCT}: the sandbox refused the MCP server {server_name(connection.config.ref())} "
            f"{visible(refusal.path)}: {visible(path)} is not shared with it. “MCP: Manage Shared Folders” shares it.",
        )

    def _refusal_reason(self, server_id: str) -> str | None:
        """The sentence naming the refusal this prompt is about, once (then forgotten)."""
        refusal = self._refusals.pop(server_id, None)
        if refusal is None:
            return None
        return f"The sandbox refused the server {visible(refusal.path)}, which is in a folder not shared with it."

    def _candidate_holding(self, path: str) -> tuple[Candidate, str] | None:
        """The innermost candidate folder containing ``path``, with its canonical path."""
        best: tuple[Candidate, str] | None = None
        for candidate in self._core.registry.candidates:
            try:
                folder = parse_file_uri(candidate.uri)
            except UriError:
                continue
            if is_within(path, folder) and (best is None or len(folder) > len(best[1])):
                best = (candidate, folder)
        return best

    async def _ask_read_only(self, connection: ServerConnection, refusal: Refusal) -> None:
        """Ask whether the server may read a folder outside every candidate (a runtime path its sandbox refused)."""
        allow = f"Let it read {refusal.folder}"
        title = await self._show(
            connection.id,
            "sandbox question",
            f"{PRODUCT}: the sandbox refused the MCP server {server_name(connection.config.ref())} "
            f"{visible(refusal.path)}, outside the folders shared with it. Let it read {visible(refusal.folder)} "
            "(read-only, not shared as a folder)? It is restarted to take this in.",
            [allow, "Not now"],
            "hostBridge/setConsent with decision readOnly allows it later",
        )
        if title != allow:
            return
        try:
            await anyio.to_thread.run_sync(
                self._core.policy.set, connection.config.identity, refusal.folder, Decision.READ_ONLY
            )
        except DecisionNotSaved as error:
            self._server.show_to_user(types.MessageType.Warning, f"[{connection.id}] {error}")

    def _scheduled_review(self) -> None:
        self._review_scheduled = False
        self.review()

    def ask_trust_again(self, server_id: str) -> None:
        """The user asked to start a server that still waits for trust: ask for it once more."""
        self._trust_asked.discard(self._core.hub.connection(server_id).config.identity.key)
        self.review(server_id)

    def review(self, server_id: str | None = None) -> None:
        """Start a prompt for every server (or just ``server_id``) with unasked folders or pending trust.

        Servers of one workspace file that wait for trust are asked about in one prompt (docs/security.md F6).
        """
        core = self._core
        untrusted: dict[str, list[ServerConnection]] = {}
        for connection in core.hub.connections:
            if server_id is not None and connection.id != server_id:
                continue
            if connection.id in self._pending:
                continue
            state = connection.state
            if state is ServerState.AWAITING_TRUST:
                if connection.config.identity.key not in self._trust_asked:
                    untrusted.setdefault(connection.config.source, []).append(connection)
            elif _folders_askable(connection) and (roots := self._unasked(core, connection)):
                self._start_prompt(core, connection, roots, ())
        for first, *rest in untrusted.values():
            for connection in (first, *rest):
                self._trust_asked.add(connection.config.identity.key)
            # A message request asks for trust alone; its folders are asked about once the server starts.
            roots = self._unasked(core, first) if self._server.consent_ui else []
            self._start_prompt(core, first, roots, tuple(rest), trust_required=True)

    def _start_prompt(
        self,
        core: Core,
        connection: ServerConnection,
        roots: _Asked,
        batch: tuple[ServerConnection, ...],
        *,
        trust_required: bool = False,
    ) -> None:
        self._pending.add(connection.id)
        self.prompts += 1
        core.tasks.start_soon(self._prompt, core, connection, roots, trust_required, batch)

    def _unasked(self, core: Core, connection: ServerConnection) -> _Asked:
        identity = connection.config.identity
        seen = {v.uri for v in core.registry.visible_through(connection.id)}
        found: _Asked = []
        for candidate in core.registry.candidates:
            if candidate.uri in seen:
                continue
            try:
                path = parse_file_uri(candidate.uri)
            except UriError:
                continue
            key = (identity.key, path)
            if key in self._asked or core.policy.decision(identity, path) is not None:
                continue
            self._asked.add(key)
            found.append((candidate, path))
        return found

    async def _prompt(
        self,
        core: Core,
        connection: ServerConnection,
        roots: _Asked,
        trust_required: bool,
        batch: tuple[ServerConnection, ...] = (),
    ) -> None:
        try:
            if self._server.consent_ui:
                answer = await self._ask_editor(core, connection, roots, trust_required, batch)
            else:
                answer = await self._ask_messages(core, connection, roots, trust_required, batch)
            await self._apply(core, connection, roots, trust_required, answer, batch)
        except Exception:
            logger.exception("[%s] asking for consent failed; nothing is shared", connection.id)
        finally:
            self._pending.discard(connection.id)
        self.review(connection.id)

    async def _ask_editor(
        self,
        core: Core,
        connection: ServerConnection,
        roots: _Asked,
        trust_required: bool,
        batch: tuple[ServerConnection, ...],
    ) -> AskConsentResult | None:
        params = AskConsentParams(
            server=connection.config.ref(),
            roots=tuple(c for c, _ in roots),
            trust_required=trust_required,
            visible_through=core.registry.visible_through(connection.id),
            batch=tuple(c.config.ref() for c in batch),
            reason=self._refusal_reason(connection.id),
        )
        try:
            raw: Any = await self._server.request_editor(
                messages.ASK_CONSENT, params, self._server.options.consent_timeout
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
        self,
        core: Core,
        connection: ServerConnection,
        roots: _Asked,
        trust_required: bool,
        batch: tuple[ServerConnection, ...],
    ) -> AskConsentResult | None:
        ref = connection.config.ref()
        name = server_name(ref)
        if trust_required and batch:
            refs = [ref, *(c.config.ref() for c in batch)]
            shown = "; ".join(f"({n}) {server_name(r)}: {launch_summary(r)}" for n, r in enumerate(refs[:5], 1))
            rest = ", ".join(server_name(r) for r in refs[5:])
            more = f"; and {len(refs) - 5} more: {rest}" if rest else ""
            trust_all = f"Trust all {len(refs)} and start"
            title = await self._show(
                connection.id,
                "trust prompt",
                f"{PRODUCT}: a workspace file defines {len(refs)} MCP servers. Trust all of them and start them? "
                f"{shown}{more}.",
                [trust_all, DONT_TRUST],
                "hostBridge/restartServer asks again",
            )
            return None if title is None else AskConsentResult(trust=title == trust_all)
        if trust_required:
            title = await self._show(
                connection.id,
                "trust prompt",
                f"{PRODUCT}: a workspace file defines the MCP server {name}. Trust it and start it? "
                f"{launch_summary(ref)}.",
                [TRUST, DONT_TRUST],
                "hostBridge/restartServer asks again",
            )
            return None if title is None else AskConsentResult(trust=title == TRUST)
        if not roots:
            return None
        also = self._visible_text(core.registry.visible_through(connection.id))
        reason = self._refusal_reason(connection.id)
        intro = f"{PRODUCT}: {reason + ' ' if reason else ''}share with the MCP server {name}"
        details = f"{launch_summary(ref)}.{also}"
        if len(roots) == 1:
            candidate, path = roots[0]
            text = f"{intro} the folder {_folder(candidate, path)}? {details}"
            answer = await self._ask_folder(connection, candidate, text)
            return None if answer is None else AskConsentResult(decisions=(answer,))
        listing = " ".join(f"({n}) {_folder(c, p)}" for n, (c, p) in enumerate(roots, 1))
        actions = _all_actions(len(roots))
        title = await self._show(
            connection.id,
            "consent prompt",
            f"{intro} these {len(roots)} folders? {listing}. One answer applies to all {len(roots)}; choose "
            f"“{ONE_BY_ONE}” to decide each one. {details}",
            [*actions, ONE_BY_ONE],
            "hostBridge/setConsent shares a folder",
        )
        if title == ONE_BY_ONE:
            return await self._one_by_one(connection, roots, intro)
        decision = actions.get(title or "")
        if decision is None:
            return None
        return AskConsentResult(
            decisions=tuple(RootDecision(uri=c.uri, decision=decision) for c, _ in roots)  # pyright: ignore[reportArgumentType]
        )

    async def _one_by_one(self, connection: ServerConnection, roots: _Asked, intro: str) -> AskConsentResult | None:
        decisions: list[RootDecision] = []
        for number, (candidate, path) in enumerate(roots, 1):
            text = f"{intro} the folder {_folder(candidate, path)}? (folder {number} of {len(roots)})"
            if (answer := await self._ask_folder(connection, candidate, text)) is not None:
                decisions.append(answer)
        return AskConsentResult(decisions=tuple(decisions)) if decisions else None

    async def _ask_folder(self, connection: ServerConnection, candidate: Candidate, text: str) -> RootDecision | None:
        """One folder's message prompt; the decision, or ``None`` when the user dismissed it."""
        title = await self._show(
            connection.id, "consent prompt", text, [ALLOW, ALLOW_SESSION, DENY], "hostBridge/setConsent shares a folder"
        )
        decision = _ACTION_DECISIONS.get(title or "")
        if decision is None:
            return None
        return RootDecision(uri=candidate.uri, decision=decision)  # pyright: ignore[reportArgumentType]

    @staticmethod
    def _visible_text(seen: tuple[VisibleThrough, ...]) -> str:
        if not seen:
            return ""
        parts: list[str] = []
        for item in seen:
            try:
                folder, parent = visible(parse_file_uri(item.uri)), visible(parse_file_uri(item.through))
            except UriError:
                continue
            parts.append(f"{folder} (visible through {parent})")
        return " It already sees " + ", ".join(parts) + "." if parts else ""

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

    async def _apply(
        self,
        core: Core,
        connection: ServerConnection,
        roots: _Asked,
        trust_required: bool,
        answer: AskConsentResult | None,
        batch: tuple[ServerConnection, ...] = (),
    ) -> None:
        if answer is None:
            return
        if core.hub.connections.count(connection) == 0:
            logger.info("[%s] its configuration changed while asking; the answer is discarded", connection.id)
            return
        if trust_required:
            if answer.trust is None:
                return
            for trusted in (connection, *batch):
                if core.hub.connections.count(trusted) == 0:
                    continue
                try:
                    await anyio.to_thread.run_sync(core.hub.save_trust, trusted.id, answer.trust)
                except DecisionNotSaved as error:
                    self._server.show_to_user(types.MessageType.Warning, f"[{trusted.id}] {error}")
                core.hub.apply_trust(trusted.id, answer.trust)
            if not answer.trust:
                return
        asked = {candidate.uri: path for candidate, path in roots}
        decisions: dict[str, Decision] = {}
        for item in answer.decisions:
            path = asked.get(item.uri)
            if path is None:
                logger.warning("[%s] ignoring an answer about %s, which was not asked about", connection.id, item.uri)
                continue
            decisions[path] = Decision(item.decision)
        if not decisions:
            return
        try:
            await anyio.to_thread.run_sync(core.policy.set_many, connection.config.identity, decisions)
        except DecisionNotSaved as error:
            self._server.show_to_user(types.MessageType.Warning, f"[{connection.id}] {error}")

    @request(messages.SET_CONSENT)
    async def set_consent(self, params: SetConsentParams) -> SetConsentResult:
        """``hostBridge/setConsent``: apply the decision off the event loop and say what holds now."""
        identity = self._core.hub.connection(params.server).config.identity
        try:
            uri, path = canonical_uri(params.uri)
        except OSError as error:
            raise JsonRpcInvalidParams(f"{params.uri} cannot be shared: {error.strerror or error}") from error
        return await self._decide(identity, path, uri, params.decision)

    async def _decide(self, identity: ServerIdentity, path: str, uri: str, decision: str) -> SetConsentResult:
        core = self._core
        applied: Decision | None
        message: str | None = None
        saved = True
        try:
            if decision == "forget":
                await anyio.to_thread.run_sync(core.policy.forget, identity, path)
            else:
                await anyio.to_thread.run_sync(core.policy.set, identity, path, Decision(decision))
            applied = core.policy.decision(identity, path)
        except DecisionNotSaved as error:
            saved, applied, message = False, error.applied, str(error)
            self._server.show_to_user(types.MessageType.Warning, f"[{identity.server_id}] {message}")
        through: str | None = None
        if applied not in (Decision.ALLOW, Decision.ALLOW_SESSION):
            through = containing(uri, [r.uri for r in core.registry.roots_for(identity.server_id) if r.uri != uri])
            if through is not None:
                note = _still_visible_text(uri, through)
                message = f"{message} {note}" if message else note
                if not self._server.consent_ui:
                    self._server.show_to_user(types.MessageType.Info, f"[{identity.server_id}] {note}")
        return SetConsentResult(
            saved=saved,
            applied="none" if applied is None else applied.value,
            visible_through=through,
            message=message,
        )


def _folder(candidate: Candidate, path: str) -> str:
    name = visible(candidate.name)
    shown = visible(path)
    return shown if name == shown.rsplit("/", 1)[-1] else f"{shown} ({name})"


def _still_visible_text(uri: str, through: str) -> str:
    folder, parent = visible(parse_file_uri(uri)), visible(parse_file_uri(through))
    return (
        f"{folder} is still visible to the server through {parent}, which is shared with it; "
        f"to hide {folder}, stop sharing {parent}."
    )
