"""Consent prompts and ``hostBridge/setConsent``, one module per concern.

- ``feature``: :class:`ConsentFeature`, when to ask (by the core's rule, :mod:`host_bridge.asking`), applying the
  answers, ``hostBridge/setConsent``;
- ``editor_prompt``: the question as ``hostBridge/askConsent`` (editors that declared ``consentUi``);
- ``message_prompts``: the question as standard ``window/showMessageRequest`` (every other editor);
- ``texts``: the action titles and how folders are named in those messages;
- ``refusals``: sandbox refusals turned into questions.

No answer, an error, a time-out or a folder missing from the answer means *not allowed*. Every prompt names the
product and says exactly what runs (:mod:`host_bridge.hub.describe`).
"""

from host_bridge.hosts.lsp.features.consent.feature import ConsentFeature

__all__ = ["ConsentFeature"]
