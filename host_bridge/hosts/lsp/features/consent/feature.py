"""ConsentFeature: when to ask, applying the answers, and ``hostBridge/setConsent``.

For each server that starts or runs, the folders the core says must be asked about
(:func:`host_bridge.asking.folders_to_ask`) are asked about once per batch, from the moment its process exists (the
question is about its configuration, not about anything it says). Workspace-defined servers are asked for trust
first; servers of one workspace file that wait for trust are asked about in one prompt (docs/security.md F6). Folders
asked about are not asked again in this session, answered or not.

Decisions are saved off the event loop (another window may hold the store's lock); one that cannot be saved
still applies in the direction of less exposure, and the user is told.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import anyio.to_thread
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from host_bridge.asking import Question, folders_to_ask
from host_bridge.consent.identity import ServerIdentity
from host_bridge.consent.policy import SHARING, Decision, DecisionNotSaved
from host_bridge.core import Core
from host_bridge.hosts.lsp import messages
from host_bridge.hosts.lsp.feature import Feature, request
from host_bridge.hosts.lsp.features.consent.editor_prompt import ask_editor
from host_bridge.hosts.lsp.features.consent.message_prompts import CannotAsk, MessagePrompts
from host_bridge.hosts.lsp.features.consent.refusals import (
    RefusalNotes,
    ask_about_failed_start,
    ask_read_only,
    candidate_holding,
    refused_text,
)
from host_bridge.hosts.lsp.features.consent.texts import still_visible_text
from host_bridge.hosts.lsp.protocol import AskConsentResult, SetConsentParams, SetConsentResult
from host_bridge.hub.connection import ServerConnection
from host_bridge.hub.models import ServerState, ServerStatus
from host_bridge.roots import containing
from host_bridge.sandbox.diagnosis import StartDiagnosis
from host_bridge.sandbox.refusals import Refusal
from host_bridge.storage import default_storage_dir
from host_bridge.uris import canonical_uri

if TYPE_CHECKING:
    from host_bridge.hosts.lsp.server import HostBridgeServer

logger = logging.getLogger(__name__)

_ASKED_STATES = (
    ServerState.STARTING,
    ServerState.RUNNING,
    ServerState.AWAITING_TRUST,
    ServerState.AWAITING_FOLDERS,
)
"""States in which a server may have something to ask."""


def _folders_askable(connection: ServerConnection) -> bool:
    """Whether the server's folders may be asked about now: once it runs, or once its process started (stdio).

    The question names only its configuration (what runs, which folders), so it is asked while the server starts
    instead of after its handshake (a second or more for a Node server); an answer that comes before the handshake
    ends is in its first ``roots/list``. Not before its process exists: a command that cannot run is not asked about.
    A server whose launch needs a shared folder waits for one before it starts, so it is asked while it waits.
    """
    state = connection.state
    if state in (ServerState.RUNNING, ServerState.AWAITING_FOLDERS):
        return True
    return state is ServerState.STARTING and connection.process_started


class ConsentFeature(Feature):
    """Decides when to ask, asks, applies the answers to the policy and the hub, and answers
    ``hostBridge/setConsent``."""

    def __init__(self, server: HostBridgeServer, core: Core) -> None:
        self._server = server
        self._core = core
        storage = server.options.storage_dir
        self._messages = MessagePrompts(server, storage if storage and storage != default_storage_dir() else None)
        self._failures_shown: set[tuple[str, tuple[str, ...]]] = set()
        """(server id, refused paths) of the failed starts explained in this session (each once)."""
        self._pending: set[str] = set()
        """Server ids with a prompt in flight (never two at once for one server)."""
        self._asked: set[tuple[str, str]] = set()
        """(identity key, path) pairs asked about in this session, answered or not."""
        self._trust_asked: set[str] = set()
        """Identity keys asked for trust in this session."""
        self._review_scheduled = False
        self._refusals = RefusalNotes()
        """The sandbox refusal each server's next folder prompt is about (named in that prompt)."""
        self.prompts = 0
        """How many prompts were sent (tests and diagnostics)."""
        self._unsubscribe: Callable[[], None] = lambda: None
        self._trust_seen: dict[str, bool | None] = {}
        """Identity key → its trust answer when last looked at (to see which was forgotten)."""
        self._decided: dict[str, set[str]] = {}
        """Identity key → the folders it had a decision about when last looked at (to see which were forgotten)."""

    async def initialized(self) -> None:
        """Hear every consent change, wherever it is made (this window, another one, a terminal)."""
        loop = asyncio.get_running_loop()

        def changed(identities: frozenset[str]) -> None:  # in the thread that changed consent
            loop.call_soon_threadsafe(self._consent_changed, identities)

        self._unsubscribe = self._core.policy.on_change(changed)

    async def shutdown(self) -> None:
        """Stop hearing consent changes."""
        self._unsubscribe()

    def _consent_changed(self, identities: frozenset[str]) -> None:
        """Decisions changed (here, in another window, in a terminal): a folder whose decision was forgotten
        (``host-bridge consent forget``) is asked about again in this session, and so is forgotten trust."""
        core = self._core
        for connection in core.hub.connections:
            identity = connection.config.identity
            if identity.key not in identities:
                continue
            now = set(core.policy.decisions_for(identity))
            for path in self._decided.get(identity.key, set()) - now:
                self._asked.discard((identity.key, path))
            self._decided[identity.key] = now
            trusted = core.policy.trusted(identity)
            if trusted is None and self._trust_seen.get(identity.key) is not None:
                self._trust_asked.discard(identity.key)  # forgotten: ask again (a dismissed question stays dismissed)
            self._trust_seen[identity.key] = trusted
        if not self._review_scheduled:
            self._review_scheduled = True
            asyncio.get_running_loop().call_soon(self._scheduled_review)

    def server_changed(self, status: ServerStatus) -> None:
        """A server is starting, runs or awaits trust: it may have something to ask.

        The review is deferred to the next turn of the loop, so servers added together (a workspace file with
        several) are asked for trust in one batch.
        """
        if status.state in _ASKED_STATES and not self._review_scheduled:
            self._review_scheduled = True
            asyncio.get_running_loop().call_soon(self._scheduled_review)
        failure = status.sandbox.start_failure if status.sandbox is not None else None
        if failure is not None and (status.id, failure.refused) not in self._failures_shown:
            self._failures_shown.add((status.id, failure.refused))
            connection = next((c for c in self._core.hub.connections if c.id == status.id), None)
            if connection is not None:
                self._core.tasks.start_soon(self._explain_failed_start, connection, failure)

    async def _explain_failed_start(self, connection: ServerConnection, failure: StartDiagnosis) -> None:
        warning = await ask_about_failed_start(self._core, self._messages, connection, failure)
        if warning:
            self._server.show_to_user(types.MessageType.Warning, warning)

    def sandbox_refused(self, server_id: str, refusal: Refusal) -> None:
        """The sandbox refused a server a path: ask about sharing the candidate folder that holds it, naming the
        refusal; outside every candidate, ask whether it may read that folder. Nothing is widened without an answer,
        and a folder the user chose not to share is not asked about again (they are told where to change it)."""
        core = self._core
        connection = next((c for c in core.hub.connections if c.id == server_id), None)
        if connection is None:
            return
        identity = connection.config.identity
        holding = candidate_holding(core.registry.candidates, refusal.path)
        if holding is None:
            core.tasks.start_soon(self._ask_read_only, connection, refusal)
            return
        _, path = holding
        if core.policy.decision(identity, path) is None:
            self._asked.discard((identity.key, path))
            self._refusals.remember(server_id, refusal)
            self.review(server_id)
            return
        self._server.show_to_user(types.MessageType.Info, refused_text(connection, refusal, path))

    async def _ask_read_only(self, connection: ServerConnection, refusal: Refusal) -> None:
        warning = await ask_read_only(self._core, self._messages, connection, refusal)
        if warning:
            self._server.show_to_user(types.MessageType.Warning, warning)

    def _scheduled_review(self) -> None:
        self._review_scheduled = False
        self.review()

    def ask_trust_again(self, server_id: str) -> None:
        """The user asked to start a server that still waits for trust: ask for it once more."""
        self._trust_asked.discard(self._core.hub.connection(server_id).config.identity.key)
        self.review(server_id)

    def review(self, server_id: str | None = None) -> None:
        """Start a prompt for every server (or just ``server_id``) with unasked folders or pending trust."""
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
            elif _folders_askable(connection) and (questions := self._unasked(connection)):
                self._start_prompt(connection, questions, ())
        for first, *rest in untrusted.values():
            for connection in (first, *rest):
                self._trust_asked.add(connection.config.identity.key)
            # A message request asks for trust alone; its folders are asked about once the server starts.
            questions = self._unasked(first) if self._server.consent_ui else []
            self._start_prompt(first, questions, tuple(rest), trust_required=True)

    def _start_prompt(
        self,
        connection: ServerConnection,
        questions: Sequence[Question],
        batch: tuple[ServerConnection, ...],
        *,
        trust_required: bool = False,
    ) -> None:
        self._pending.add(connection.id)
        self.prompts += 1
        self._core.tasks.start_soon(self._prompt, connection, questions, trust_required, batch)

    def _unasked(self, connection: ServerConnection) -> list[Question]:
        """The folders to ask ``connection`` about now (the core's rule), marked as asked."""
        core = self._core
        identity = connection.config.identity
        self._decided.setdefault(identity.key, set(core.policy.decisions_for(identity)))
        asked = {path for key, path in self._asked if key == identity.key}
        shared = [root.uri for root in core.registry.roots_for(connection.id)]
        found = folders_to_ask(core.policy, identity, core.registry.candidates, shared=shared, asked=asked).questions
        self._asked.update((identity.key, question.path) for question in found)
        return list(found)

    async def _prompt(
        self,
        connection: ServerConnection,
        questions: Sequence[Question],
        trust_required: bool,
        batch: tuple[ServerConnection, ...] = (),
    ) -> None:
        core = self._core
        try:
            visible = core.registry.visible_through(connection.id)
            reason = self._refusals.reason(connection.id)
            if self._server.consent_ui:
                try:
                    answer = await ask_editor(
                        self._server, connection, questions, trust_required, batch, visible, reason
                    )
                except CannotAsk:
                    self._messages.tell_command(connection, questions, trust_required, batch)
                    answer = None
            else:
                answer = await self._messages.ask(connection, questions, trust_required, batch, visible, reason)
            await self._apply(connection, questions, trust_required, answer, batch)
        except Exception:
            logger.exception("[%s] asking for consent failed; nothing is shared", connection.id)
        finally:
            self._pending.discard(connection.id)
        self.review(connection.id)

    async def _apply(
        self,
        connection: ServerConnection,
        questions: Sequence[Question],
        trust_required: bool,
        answer: AskConsentResult | None,
        batch: tuple[ServerConnection, ...] = (),
    ) -> None:
        core = self._core
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
        asked = {question.candidate.uri: question.path for question in questions}
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
        if applied not in SHARING:
            through = containing(uri, [r.uri for r in core.registry.roots_for(identity.server_id) if r.uri != uri])
            if through is not None:
                note = still_visible_text(uri, through)
                message = f"{message} {note}" if message else note
                if not self._server.consent_ui:
                    self._server.show_to_user(types.MessageType.Info, f"[{identity.server_id}] {note}")
        return SetConsentResult(
            saved=saved,
            applied="none" if applied is None else applied.value,
            visible_through=through,
            message=message,
        )
