"""Sandbox refusals turned into questions: a refused path inside a candidate folder asks about sharing that folder
(the question names the refusal); outside every candidate, whether the server may read that folder. A start that
failed while the sandbox confined the server is explained once, with the actions that exist."""

from __future__ import annotations

from collections.abc import Sequence

import anyio.to_thread

from host_bridge.consent.policy import Decision, DecisionNotSaved
from host_bridge.core import Core
from host_bridge.hosts.lsp.features.consent.message_prompts import CannotAsk, MessagePrompts
from host_bridge.hosts.lsp.features.consent.texts import NOT_NOW
from host_bridge.hub.connection import ServerConnection
from host_bridge.hub.describe import PRODUCT, server_name
from host_bridge.sandbox.diagnosis import StartDiagnosis
from host_bridge.sandbox.refusals import Refusal
from host_bridge.text import visible
from host_bridge.uris import UriError, is_within, parse_file_uri
from host_bridge.workspace.models import Candidate


class RefusalNotes:
    """The refusal each server's next folder question is about, named in that question once."""

    def __init__(self) -> None:
        self._refusals: dict[str, Refusal] = {}

    def remember(self, server_id: str, refusal: Refusal) -> None:
        """The next folder question to ``server_id`` is about ``refusal``."""
        self._refusals[server_id] = refusal

    def reason(self, server_id: str) -> str | None:
        """The sentence naming the refusal this question is about, once (then forgotten)."""
        refusal = self._refusals.pop(server_id, None)
        if refusal is None:
            return None
        return f"The sandbox refused the server {visible(refusal.path)}, which is in a folder not shared with it."


def candidate_holding(candidates: Sequence[Candidate], path: str) -> tuple[Candidate, str] | None:
    """The innermost candidate folder containing ``path``, with its canonical path."""
    best: tuple[Candidate, str] | None = None
    for candidate in candidates:
        try:
            folder = parse_file_uri(candidate.uri)
        except UriError:
            continue
        if is_within(path, folder) and (best is None or len(folder) > len(best[1])):
            best = (candidate, folder)
    return best


async def ask_read_only(core: Core, prompts: MessagePrompts, connection: ServerConnection, refusal: Refusal) -> str:
    """Ask whether the server may read a folder outside every candidate (a runtime path its sandbox refused); a
    warning for the user when the answer could not be saved, else an empty string."""
    allow = f"Let it read {refusal.folder}"
    try:
        title = await prompts.show(
            connection.id,
            "sandbox question",
            f"{PRODUCT}: the sandbox refused the MCP server {server_name(connection.config.ref())} "
            f"{visible(refusal.path)}, outside the folders shared with it. Let it read {visible(refusal.folder)} "
            "(read-only, not shared as a folder)? It is restarted to take this in.",
            [NOT_NOW, allow],
            "hostBridge/setConsent with decision readOnly allows it later",
        )
    except CannotAsk:
        return ""
    if title != allow:
        return ""
    try:
        await anyio.to_thread.run_sync(core.policy.set, connection.config.identity, refusal.folder, Decision.LET_READ)
    except DecisionNotSaved as error:
        return f"[{connection.id}] {error}"
    return ""


def refused_text(connection: ServerConnection, refusal: Refusal, path: str) -> str:
    """What the user is told when the refused path lies in a folder they chose not to share."""
    return (
        f"{PRODUCT}: the sandbox refused the MCP server {server_name(connection.config.ref())} "
        f"{visible(refusal.path)}: {visible(path)} is not shared with it. “MCP: Manage Shared Folders” shares it."
    )


async def ask_about_failed_start(
    core: Core, prompts: MessagePrompts, connection: ServerConnection, diagnosis: StartDiagnosis
) -> str:
    """Say that the sandbox may be why the server failed to start, with its actions (let it read a package folder,
    share a workspace folder, turn its sandbox off for this session); a warning for the user when an answer could not
    be saved, else an empty string. Nothing is widened without the user's click."""
    titles = [action.title for action in diagnosis.actions]
    name = server_name(connection.config.ref())
    title = await prompts.show(
        connection.id,
        "sandbox start-up notice",
        f"{PRODUCT}: the MCP server {name} did not start. {visible(diagnosis.sentence)}",
        [visible(t) for t in titles] + ["Not now"],
        "“MCP: Show Server Status” shows the same actions",
    )
    chosen = next((a for a in diagnosis.actions if visible(a.title) == title), None)
    if chosen is None:
        return ""
    identity = connection.config.identity
    if chosen.kind == "sandboxOff":
        core.hub.restart(connection.id, sandbox="off")
        return ""
    assert chosen.path is not None
    decision = Decision.LET_READ if chosen.kind == "letRead" else Decision.ALLOW
    try:
        await anyio.to_thread.run_sync(core.policy.set, identity, chosen.path, decision)
    except DecisionNotSaved as error:
        return f"[{connection.id}] {error}"
    return ""
