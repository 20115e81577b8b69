"""Consent and trust asked with ``hostBridge/askConsent``, for editors that declared
``experimental.hostBridge.consentUi`` (the VS Code extension): one request per question, answered per folder. No
answer, an error, a time-out or a malformed answer means *not allowed*; each is logged."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from host_bridge.asking import Question
from host_bridge.hosts.lsp import messages
from host_bridge.hosts.lsp.features.consent.message_prompts import CannotAsk
from host_bridge.hosts.lsp.protocol import AskConsentParams, AskConsentResult
from host_bridge.hub.connection import ServerConnection
from host_bridge.roots import VisibleThrough

if TYPE_CHECKING:
    from host_bridge.hosts.lsp.server import HostBridgeServer

logger = logging.getLogger(__name__)


async def ask_editor(
    server: HostBridgeServer,
    connection: ServerConnection,
    questions: Sequence[Question],
    trust_required: bool,
    batch: Sequence[ServerConnection],
    visible: tuple[VisibleThrough, ...],
    reason: str | None,
) -> AskConsentResult | None:
    """The editor's answer about trusting ``connection`` (and ``batch``) and sharing ``questions``, or ``None`` when
    it is malformed; raises :class:`CannotAsk` when the editor answered with an error or not in time."""
    params = AskConsentParams(
        server=connection.config.ref(),
        roots=tuple(q.candidate for q in questions),
        trust_required=trust_required,
        visible_through=visible,
        batch=tuple(c.config.ref() for c in batch),
        reason=reason,
    )
    try:
        raw: Any = await server.request_editor(messages.ASK_CONSENT, params, server.options.consent_timeout)
    except TimeoutError as error:
        logger.warning("[%s] the consent prompt timed out; nothing is shared", connection.id)
        raise CannotAsk("no answer in time") from error
    except Exception as error:
        logger.warning(
            "[%s] the editor did not answer the consent prompt (%s); nothing is shared", connection.id, error
        )
        raise CannotAsk(str(error)) from error
    try:
        return AskConsentResult.model_validate(raw)
    except ValidationError as error:
        logger.warning("[%s] ignoring a malformed consent answer: %s", connection.id, error)
        return None
