"""Consent and trust asked with standard ``window/showMessageRequest``, for editors without ``hostBridge/askConsent``.

A trust question comes alone (its folders are asked about once the server starts); one folder is one question;
several folders are one question whose answer covers them all, or (``Ask about each folder``) one question each. A
dismissed question, an error, or a time-out means *not allowed*; each is logged.

An editor that cannot ask (it answers "not handled" or another error, as Helix does, or never answers) is told once
per server and kind of question, with ``window/showMessage``, the exact ``host-bridge consent`` command that decides
from a terminal (the running sidecar picks the decision up within a second).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types

from host_bridge.asking import Question
from host_bridge.hosts.lsp.features.consent.texts import (
    DONT_TRUST,
    FOLDER_ACTIONS,
    FOLDER_DECISIONS,
    ONE_BY_ONE,
    TRUST,
    TRUST_ACTIONS,
    all_actions,
    decide_command,
    folder_text,
    visible_path,
    visible_text,
)
from host_bridge.hosts.lsp.protocol import AskConsentResult, RootDecision
from host_bridge.hub.connection import ServerConnection
from host_bridge.hub.describe import PRODUCT, launch_summary, server_name
from host_bridge.hub.running import server_handle
from host_bridge.roots import VisibleThrough

if TYPE_CHECKING:
    from host_bridge.hosts.lsp.server import HostBridgeServer

logger = logging.getLogger(__name__)


class CannotAsk(Exception):
    """The editor could not show a question: it answered with an error (``-32601`` "not handled" …) or not in time."""


class MessagePrompts:
    """Asks the user through ``window/showMessageRequest``."""

    def __init__(self, server: HostBridgeServer, storage_dir: str | None) -> None:
        self._server = server
        self._storage_dir = storage_dir
        """The storage folder when it is not the default one (the terminal command must name it)."""
        self._told: set[tuple[str, bool]] = set()
        """(server id, about trust) pairs whose terminal command the user was told already."""

    async def ask(
        self,
        connection: ServerConnection,
        questions: Sequence[Question],
        trust_required: bool,
        batch: Sequence[ServerConnection],
        visible: tuple[VisibleThrough, ...],
        reason: str | None,
    ) -> AskConsentResult | None:
        """The user's answer about trusting ``connection`` (and ``batch``), or about sharing ``questions``; when the
        editor cannot ask, the user is told the terminal command instead (and nothing is shared)."""
        try:
            return await self._ask(connection, questions, trust_required, batch, visible, reason)
        except CannotAsk:
            self.tell_command(connection, questions, trust_required, batch)
            return None

    async def _ask(
        self,
        connection: ServerConnection,
        questions: Sequence[Question],
        trust_required: bool,
        batch: Sequence[ServerConnection],
        visible: tuple[VisibleThrough, ...],
        reason: str | None,
    ) -> AskConsentResult | None:
        ref = connection.config.ref()
        name = server_name(ref)
        if trust_required and batch:
            refs = [ref, *(c.config.ref() for c in batch)]
            shown = "; ".join(f"({n}) {server_name(r)}: {launch_summary(r)}" for n, r in enumerate(refs[:5], 1))
            rest = ", ".join(server_name(r) for r in refs[5:])
            more = f"; and {len(refs) - 5} more: {rest}" if rest else ""
            trust_all = f"Trust all {len(refs)} and start"
            title = await self.show(
                connection.id,
                "trust prompt",
                f"{PRODUCT}: a workspace file defines {len(refs)} MCP servers. Trust all of them and start them? "
                f"{shown}{more}.",
                [DONT_TRUST, trust_all],
                "hostBridge/restartServer asks again",
            )
            return None if title is None else AskConsentResult(trust=title == trust_all)
        if trust_required:
            title = await self.show(
                connection.id,
                "trust prompt",
                f"{PRODUCT}: a workspace file defines the MCP server {name}. Trust it and start it? "
                f"{launch_summary(ref)}.",
                TRUST_ACTIONS,
                "hostBridge/restartServer asks again",
            )
            return None if title is None else AskConsentResult(trust=title == TRUST)
        if not questions:
            return None
        intro = f"{PRODUCT}: {reason + ' ' if reason else ''}share with the MCP server {name}"
        details = f"{launch_summary(ref)}.{visible_text(visible)}"
        if len(questions) == 1:
            question = questions[0]
            text = f"{intro} the folder {folder_text(question.candidate, question.path)}? {details}"
            answer = await self._ask_folder(connection, question, text)
            return None if answer is None else AskConsentResult(decisions=(answer,))
        listing = " ".join(f"({n}) {folder_text(q.candidate, q.path)}" for n, q in enumerate(questions, 1))
        actions = all_actions(len(questions))
        title = await self.show(
            connection.id,
            "consent prompt",
            f"{intro} these {len(questions)} folders? {listing}. One answer applies to all {len(questions)}; choose "
            f"“{ONE_BY_ONE}” to decide each one. {details}",
            [*actions, ONE_BY_ONE],
            "hostBridge/setConsent shares a folder",
        )
        if title == ONE_BY_ONE:
            return await self._one_by_one(connection, questions, intro)
        decision = actions.get(title or "")
        if decision is None:
            return None
        return AskConsentResult(
            decisions=tuple(RootDecision(uri=q.candidate.uri, decision=decision) for q in questions)  # pyright: ignore[reportArgumentType]
        )

    async def _one_by_one(
        self, connection: ServerConnection, questions: Sequence[Question], intro: str
    ) -> AskConsentResult | None:
        decisions: list[RootDecision] = []
        for number, question in enumerate(questions, 1):
            text = (
                f"{intro} the folder {folder_text(question.candidate, question.path)}? "
                f"(folder {number} of {len(questions)})"
            )
            if (answer := await self._ask_folder(connection, question, text)) is not None:
                decisions.append(answer)
        return AskConsentResult(decisions=tuple(decisions)) if decisions else None

    async def _ask_folder(self, connection: ServerConnection, question: Question, text: str) -> RootDecision | None:
        """One folder's message prompt; the decision, or ``None`` when the user dismissed it."""
        title = await self.show(
            connection.id, "consent prompt", text, FOLDER_ACTIONS, "hostBridge/setConsent shares a folder"
        )
        decision = FOLDER_DECISIONS.get(title or "")
        if decision is None:
            return None
        return RootDecision(uri=question.candidate.uri, decision=decision)  # pyright: ignore[reportArgumentType]

    async def show(
        self, server_id: str, prompt: str, message: str, actions: Sequence[str], afterwards: str
    ) -> str | None:
        """The action the user chose, or ``None`` when the user dismissed it (logged, with ``afterwards``: how the
        question can still be answered); raises :class:`CannotAsk` when the editor failed to ask or timed out."""
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Info, message=message, actions=[types.MessageActionItem(title=a) for a in actions]
        )
        try:
            item = await asyncio.wait_for(
                self._server.window_show_message_request_async(params), self._server.options.consent_timeout
            )
        except TimeoutError:
            logger.warning("[%s] the %s timed out; nothing is shared", server_id, prompt)
            raise CannotAsk from None
        except Exception as error:
            logger.warning("[%s] the editor did not answer the %s (%s); nothing is shared", server_id, prompt, error)
            raise CannotAsk from error
        if item is None or item.title not in actions:
            # Not a warning, but the only trace of why a server waits or shares nothing.
            self._server.log_to_editor(
                types.MessageType.Info,
                f"[{server_id}] the {prompt} was dismissed; nothing is shared and it is not asked again this "
                f"session ({afterwards})",
            )
            return None
        return item.title

    def tell_command(
        self,
        connection: ServerConnection,
        questions: Sequence[Question],
        trust_required: bool,
        batch: Sequence[ServerConnection],
    ) -> None:
        """Tell the user, once per server and kind of question, the terminal command that decides (also for an editor
        whose ``hostBridge/askConsent`` failed)."""
        key = (connection.id, trust_required)
        if key in self._told:
            return
        self._told.add(key)
        name = server_name(connection.config.ref())
        if trust_required:
            handles = [server_handle(c.config.identity) for c in (connection, *batch)]
            names = ", ".join(server_name(c.config.ref()) for c in (connection, *batch))
            command = decide_command("trust", handles, [], self._storage_dir)
            text = (
                f"{PRODUCT}: this editor could not ask whether to trust the MCP server(s) {names}, defined by a "
                f"workspace file; they are not started. To trust and start them, run in a terminal: {command}"
            )
        else:
            paths = [question.path for question in questions]
            command = decide_command("allow", [server_handle(connection.config.identity)], paths, self._storage_dir)
            folders = ", ".join(visible_path(path) for path in paths)
            text = (
                f"{PRODUCT}: this editor could not ask whether to share {folders} with the MCP server {name}; "
                f"nothing is shared. To share, run in a terminal: {command}"
            )
        try:
            self._server.show_to_user(types.MessageType.Warning, text)
        except Exception:
            logger.warning("%s", text)
        self._server.log_to_editor(types.MessageType.Info, f"[{connection.id}] {text}")
