"""The editor-facing sidecar: a pygls language server speaking LSP plus ``hostBridge/*`` over stdio.

A thin adapter: every decision is made by the core (:mod:`host_bridge.hub`, :mod:`host_bridge.consent`,
:mod:`host_bridge.roots`, :mod:`host_bridge.workspace`); this package translates messages and owns tasks. The shell
(``server``, ``lifecycle``, ``feature``, ``messages``, the framing) answers ``initialize`` with pygls and the message
table alone; ``features`` and the core are loaded after ``initialized`` through ``deferred`` (docs/architecture.md,
"lsp — the editor channel").
"""
